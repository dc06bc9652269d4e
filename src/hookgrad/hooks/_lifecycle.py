"""The backward pass's lifecycle: hooks at its start and end, and callbacks queued for its end.

The registries and their dispatch live in the engine (``hookgrad.autograd.engine``), which runs
them; this module is their public face.
"""
from __future__ import annotations

from ..autograd import engine as _engine
from ..autograd.engine import BackwardPassInfo
from ..utils.hooks import RemovableHandle, note_registration

__all__ = ["BackwardPassInfo", "register_backward_start_hook", "register_backward_end_hook",
           "call_at_backward_end"]


def _check_hook(fn, register: str) -> None:
    if not callable(fn):
        raise TypeError(f"{register}: the hook must be callable, but got {type(fn).__name__} ({fn!r})")


def _registered(registry: dict, fn, register: str) -> RemovableHandle:
    """Adds the hook ``fn`` to ``registry`` (after checking it, for the function named ``register``)."""
    _check_hook(fn, register)
    handle = RemovableHandle(registry)
    registry[handle.id] = fn
    note_registration(registry, handle.id)
    return handle


def register_backward_start_hook(fn) -> RemovableHandle:
    """Call ``fn(info)`` at the start of every backward pass (``backward()``, ``autograd.grad``),
    before any node runs; ``info`` is a :class:`BackwardPassInfo`. Returns a handle."""
    return _registered(_engine._backward_start_hooks, fn, "register_backward_start_hook")


def register_backward_end_hook(fn) -> RemovableHandle:
    """Call ``fn(info)`` at the end of every backward pass: after its last node, its last
    post-accumulate-grad hook and the callbacks queued with :func:`call_at_backward_end`. It also
    runs when the pass raises, with the exception in ``info.error`` (which then propagates)."""
    return _registered(_engine._backward_end_hooks, fn, "register_backward_end_hook")


def call_at_backward_end(fn) -> None:
    """From inside a hook (or anything else that runs during a backward pass), queue ``fn()`` to run
    once the current pass has executed its last node, before its backward-end hooks. Callbacks run
    in the order queued and may queue more; a pass that raises runs none of them. Outside a
    backward pass this raises RuntimeError."""
    if not callable(fn):
        raise TypeError(f"call_at_backward_end: expected a callable, but got {type(fn).__name__} ({fn!r})")
    if _engine.current_task() is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass. "
                           "(call_at_backward_end was called outside a backward pass: call it from a hook "
                           "that runs during backward)")
    _engine.queue_final_callback(fn)
