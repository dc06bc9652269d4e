"""The ``__torch_function__`` switches and queries of ``torch._C``.

hookgrad's own functions never dispatch on ``__torch_function__`` (a Tensor subclass gets plain tensors
back, as with torch's ``_disabled_torch_function_impl``); what these track is the state that code
calling ``torch.overrides.handle_torch_function`` itself consults: ``DisableTorchFunctionSubclass``
turns subclass overrides off, ``DisableTorchFunction`` turns all of them off, ``_EnableTorchFunction``
turns them back on, each for a ``with`` block in the current thread.
"""
from __future__ import annotations

import threading

ENABLED, SUBCLASSES_DISABLED, ALL_DISABLED = "enabled", "subclasses disabled", "all disabled"
_local = threading.local()


def state() -> str:
    return getattr(_local, "state", ENABLED)


class StateSwitch:
    """Sets the torch-function state for a ``with`` block and restores the previous one after."""

    target = ENABLED

    def __enter__(self):
        self._previous = state()
        # disabling only subclasses leaves an "all disabled" state as it is, as in torch
        if not (self.target == SUBCLASSES_DISABLED and self._previous == ALL_DISABLED):
            _local.state = self.target
        return self

    def __exit__(self, *exc_info):
        _local.state = self._previous
        return False


class _EnableTorchFunction(StateSwitch):
    """``with torch._C._EnableTorchFunction():`` overrides count again inside the block."""

    target = ENABLED


def _is_torch_function_enabled() -> bool:
    return state() == ENABLED


def _is_torch_function_all_disabled() -> bool:
    return state() == ALL_DISABLED


def _is_torch_function_mode_enabled() -> bool:
    return False  # hookgrad has no torch-function modes (TorchFunctionMode refuses to be entered)


def _len_torch_function_stack() -> int:
    return 0


def _get_function_stack_at(index):
    raise RuntimeError("Tried to get stack at idx that's too big")


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """Use as a Tensor subclass's ``__torch_function__`` to opt out of the protocol: ``func`` runs on the
    arguments as given, and results are plain tensors."""
    from .._torch_extras import DisableTorchFunctionSubclass
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


def _has_torch_function(args) -> bool:
    from ..overrides import has_torch_function
    return has_torch_function(args)


def _has_torch_function_unary(arg) -> bool:
    from ..overrides import has_torch_function
    return has_torch_function((arg,))


def _has_torch_function_variadic(*args) -> bool:
    from ..overrides import has_torch_function
    return has_torch_function(args)
