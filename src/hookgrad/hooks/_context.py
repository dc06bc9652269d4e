"""``hookgrad.hooks.context()``: where the hook that is running now runs.

Cost: nothing at all until ``hookgrad.hooks`` is loaded. Then each module hook, optimizer step hook
and ``hookgrad.hooks`` hook is called with a context pushed around it, and a module call that runs
hooks is counted (its ``call_index``); a module call without hooks stays ``forward`` behind one
test. Calls of modules without hooks are counted only while an op hook is registered (op hooks
need to know the module around every op): then ``Module.__call__`` is replaced by a counting one.

A module's ``call_index`` counts its calls since the outermost module call running now began
(the "current forward"). That outermost call is found by walking the Python stack, only when a
hooked call starts with no other hooked call running (or read off the counting ``__call__``); its
frame keeps the forward's counts, which go with it.
"""
from __future__ import annotations

import sys

from ..autograd import _hook_context as _state
from ..autograd import engine as _engine
from ..autograd._hook_context import HookContext
from ..nn.modules import module as _module_mod

__all__ = ["HookContext", "context"]

_Module = _module_mod.Module
_plain_call = _Module.__dict__["__call__"]
# the code of every frame that is a module call, for finding the outermost one on the stack
_CALL_CODES = {_Module._wrapped_call_impl.__code__, _Module._call_impl.__code__,
               _Module._call_through_call_impl.__code__}


class _Forward:
    """The calls per module counted in the forward running now (None between forwards)."""

    __slots__ = ("counts",)

    def __init__(self):
        self.counts = None


_forward = _Forward()
# every module call is counted (set while an op hook is registered)
_counting_all = [False]
# the key under which the outermost module call's frame keeps its forward's counts
_COUNTS_KEY = "__hookgrad_call_counts__"


def _forward_counts(frame) -> dict:
    """The call counts of the forward that ``frame`` runs in: kept by its outermost module call's
    frame, so that they live exactly as long as that call (and hold nothing after it)."""
    root = None
    codes = _CALL_CODES
    while frame is not None:
        if frame.f_code in codes:
            root = frame
        frame = frame.f_back
    if root is None:
        return {}
    local_vars = root.f_locals
    counts = local_vars.get(_COUNTS_KEY)
    if counts is None:
        counts = local_vars[_COUNTS_KEY] = {}
    return counts


def _next_index(counts, module) -> int:
    index = counts.get(module, 0)
    counts[module] = index + 1
    return index


def _counted_call(module, call_with_hooks, forward_call, args, kwargs):
    """A hooked module call while hookgrad.hooks is loaded: count it, run it with its index known."""
    calls = _state.CALLS
    if _counting_all[0] and calls and calls[-1][0] is module:  # the counting __call__ did it
        return call_with_hooks(forward_call, args, kwargs, True)
    if not calls:  # the first hooked call running: which forward is it in?
        _forward.counts = _forward_counts(sys._getframe(1))
    calls.append((module, _next_index(_forward.counts, module)))
    try:
        return call_with_hooks(forward_call, args, kwargs, True)
    finally:
        calls.pop()
        if not calls:
            _forward.counts = None


def _counting_call(self, *args, **kwargs):
    """``Module.__call__`` while every call is counted: push the call, with its index."""
    calls = _state.CALLS
    if not calls:
        _forward.counts = {}
    calls.append((self, _next_index(_forward.counts, self)))
    try:
        return _plain_call(self, *args, **kwargs)
    finally:
        calls.pop()
        if not calls:
            _forward.counts = None


_CALL_CODES.add(_counting_call.__code__)


def count_every_call(on: bool) -> None:
    """Count every module call (op hooks need the module around each op) or only hooked ones."""
    if on == _counting_all[0]:
        return
    _counting_all[0] = on
    _Module.__call__ = _counting_call if on else _plain_call


def context():
    """Inside a hook: a :class:`HookContext` saying where it runs.

    ``phase``: ``"forward"`` (module forward pre-/forward hooks, op forward hooks), ``"backward"``
    (module backward hooks, tensor, node and post-accumulate-grad hooks, op backward hooks, backward
    start/end hooks, module post-backward hooks), ``"optimizer_step"``, ``"state_dict"`` (state_dict
    and load_state_dict hooks) or ``"registration"`` (parameter/buffer/module registration hooks);
    ``id``: the backward pass's id (the one its ``BackwardPassInfo`` has), None outside a pass;
    ``module``: the module whose hook runs (for an op hook, the innermost module running the op);
    ``call_index``: which call of ``module`` in the current forward this is (0 for the first), and
    in backward which forward call the gradient belongs to; ``recompute``: True while
    ``hookgrad.utils.checkpoint`` recomputes a forward; ``kind``: the hook's kind.

    Outside hooks it returns None; during a backward pass anything that runs (a custom Function's
    backward, too) gets ``phase="backward"`` and the pass's id.
    """
    active = _state.ACTIVE
    if active:
        return active[-1]
    task = _engine.current_task()
    if task is not None:
        return HookContext("backward", task.id, None, None, _state.RECOMPUTING[0] > 0, None)
    return None


_state.counted_call = _counted_call
_state.ON[0] = True
