"""Utilities: hook handles (hooks), data loading (data).

``hooks`` is the bottom layer and loads with the package; ``data`` sits near the top (it uses
tensors and ops) and loads on first access, so that importing ``hooks`` pulls in nothing above it.
"""
import importlib as _importlib

from . import hooks  # noqa: F401


def __getattr__(name):
    if name == "data":
        return _importlib.import_module(".data", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
