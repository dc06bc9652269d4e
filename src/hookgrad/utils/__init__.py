"""Utilities: hook handles (hooks), data loading (data), DLPack exchange (dlpack).

``hooks`` is the bottom layer and loads with the package; ``data`` and ``dlpack`` sit near the top
(they use tensors and ops) and load on first access, so that importing ``hooks`` pulls in nothing
above it.
"""
import importlib as _importlib

from . import hooks  # noqa: F401

_LATE_SUBMODULES = ("data", "dlpack", "checkpoint")
_LATE_SUBMODULES += ("_pytree", "weak", "_contextlib", "collect_env", "benchmark", "model_zoo")
_LATE_SUBMODULES += ("flop_counter", "module_tracker", "_python_dispatch")
_LATE_SUBMODULES += ("_mode_utils",)


def __getattr__(name):
    if name == "swap_tensors":
        from ._swap import swap_tensors
        return swap_tensors
    if name in _LATE_SUBMODULES:
        return _importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
