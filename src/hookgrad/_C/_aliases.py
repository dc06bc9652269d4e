"""The op namespaces of ``torch._C`` whose functions torch re-exports under public names
(``torch._C._fft.fft_rfft`` is ``torch.fft.rfft``): each name answers with hookgrad's function of that
public name, so the two stay the same object as in torch. Names hookgrad lacks stay missing."""
from __future__ import annotations

import importlib

from ._tables import PUBLIC_ALIASES


def lookup(namespace: str, public_module: str, name: str):
    """hookgrad's function that torch's ``torch._C.<namespace>.<name>`` is; AttributeError if none."""
    public = PUBLIC_ALIASES[namespace].get(name)
    if public is not None:
        module = importlib.import_module(public_module)
        try:
            value = getattr(module, public)
        except AttributeError:
            pass
        else:
            if callable(value):
                return value
    from .._run import missing_message
    raise AttributeError(missing_message(f"torch._C.{namespace}.{name}"))


def present(namespace: str, public_module: str) -> list:
    names = []
    for name in PUBLIC_ALIASES[namespace]:
        try:
            lookup(namespace, public_module, name)
        except AttributeError:
            continue
        names.append(name)
    return names


def module_hooks(namespace: str, public_module: str):
    """``__getattr__`` and ``__dir__`` for a module standing for ``torch._C.<namespace>``."""
    def __getattr__(name):
        return lookup(namespace, public_module, name)

    def __dir__():
        return present(namespace, public_module)
    return __getattr__, __dir__
