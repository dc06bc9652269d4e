"""The state behind ``hookgrad.hooks.context()``, kept low so that every dispatch point can reach it.

Nothing here runs unless ``hookgrad.hooks`` is loaded (it sets ``ON[0]``): the dispatch points of
module hooks, optimizer step hooks and ``hookgrad.hooks``' own hooks test that one flag and only
then push a :class:`HookContext` for the hook they are about to call.
"""
from __future__ import annotations

__all__ = ["HookContext", "ON", "ACTIVE", "CALLS", "RECOMPUTING", "run_hook", "current_pass_id"]

# hookgrad.hooks is loaded: dispatch points push what they run
ON: list = [False]
# the contexts of the hooks running now, innermost last
ACTIVE: list = []
# (module, call_index) of the module calls counted now, innermost last (see hookgrad.hooks._context)
CALLS: list = []
# > 0 while the engine runs a custom autograd.Function's backward (op hooks that look inside
# Functions see the ops it runs)
FUNCTION_BACKWARD = [0]
# checkpoint recomputations in progress (hookgrad.utils.checkpoint counts them)
RECOMPUTING: list = [0]
# set by hookgrad.hooks: counted_call(module, call_with_hooks, forward_call, args, kwargs)
counted_call = None

_engine = None


def current_pass_id():
    """The id of the backward pass running now, or None."""
    global _engine
    if _engine is None:
        from . import engine as _engine_module
        _engine = _engine_module
    task = _engine.current_task()
    return None if task is None else task.id


class HookContext:
    """Where a hook runs: ``phase`` (``"forward"``, ``"backward"``, ``"optimizer_step"``,
    ``"state_dict"``, ``"registration"``), ``id`` (the backward pass's id, None outside one),
    ``module`` and ``call_index`` (which call of that module in the current forward; None where
    unknown), ``recompute`` (True while activation checkpointing recomputes a forward) and ``kind``
    (the kind of the hook running, torch's name such as ``forward_hook``, or ``op_hook``)."""

    __slots__ = ("phase", "id", "module", "call_index", "recompute", "kind")

    def __init__(self, phase, id, module=None, call_index=None, recompute=False, kind=None):
        self.phase = phase
        self.id = id
        self.module = module
        self.call_index = call_index
        self.recompute = recompute
        self.kind = kind

    def __repr__(self):
        module = None if self.module is None else type(self.module).__name__
        return (f"HookContext(phase={self.phase!r}, id={self.id}, module={module}, call_index={self.call_index}, "
                f"recompute={self.recompute}, kind={self.kind!r})")


def run_hook(phase, kind, module, call_index, call, *args):
    """``call(*args)`` with a context for it on ``ACTIVE``."""
    ACTIVE.append(HookContext(phase, current_pass_id(), module, call_index, RECOMPUTING[0] > 0, kind))
    try:
        return call(*args)
    finally:
        ACTIVE.pop()
