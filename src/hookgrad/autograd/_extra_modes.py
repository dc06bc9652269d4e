"""Two autograd switches that matter only where torch has accelerators or strided gradients.

``set_multithreading_enabled``: torch runs a backward pass on per-device worker threads when it is
on; on the CPU the pass runs on the calling thread either way, as hookgrad's always does, so the
switch is kept (per thread, like torch's) and changes nothing else.

``enforce_grad_layout_policy``: whether torch makes an accumulated ``.grad`` follow its parameter's
strides. hookgrad's accumulated gradients are always C-contiguous NumPy arrays, whatever the flag
says; it is kept (per thread) so that code which sets and reads it runs.

Both work as a call (set now), a context manager (restored after the block) and a decorator.
"""
from __future__ import annotations

import threading

from .grad_mode import run_inside

_flags = threading.local()


def _get(name: str) -> bool:
    return getattr(_flags, name, True)


def _set(name: str, value: bool) -> None:
    setattr(_flags, name, bool(value))


def is_multithreading_enabled() -> bool:
    """Whether multithreaded backward is on for this thread (the default)."""
    return _get("multithreading")


def is_grad_layout_enforcement_enabled() -> bool:
    return _get("grad_layout")


class _FlagSwitch:
    _flag = ""

    def __init__(self, mode: bool = True) -> None:
        self.prev = _get(self._flag)
        _set(self._flag, mode)
        self.mode = mode

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        _set(self._flag, self.prev)

    def clone(self):
        return self.__class__(self.mode)

    def __call__(self, fn):
        return run_inside(fn, self.clone)


class set_multithreading_enabled(_FlagSwitch):
    """Enable or disable multithreaded backward for this thread (no effect on a CPU pass)."""

    _flag = "multithreading"

    def __init__(self, mode: bool) -> None:
        super().__init__(mode)


class enforce_grad_layout_policy(_FlagSwitch):
    """Enforce (default) or relax the gradient layout contract for this thread (hookgrad's
    gradients are contiguous either way)."""

    _flag = "grad_layout"

    def __call__(self, fn):
        _set(self._flag, self.prev)  # as a decorator it applies around each call, not from now on
        return super().__call__(fn)
