"""Module post-backward hooks: ``fn(module)`` once a backward pass is done with a module's parameters.

The engine tells this module about every AccumulateGrad node it runs (after the node's
post-accumulate-grad hooks); at the first one of a pass, each hooked module's parameters are
matched with the nodes the pass will run, and a module's hook fires when the last of them has run.
"""
from __future__ import annotations

import weakref

from ..autograd import _hook_context as _state
from ..autograd import engine as _engine
from ..autograd import graph as _graph
from ..nn.modules.module import Module
from ..utils.hooks import RemovableHandle

__all__ = ["register_module_post_backward_hook"]

_hooks = _graph._module_post_backward_hooks


class _PassState:
    """One pass's progress: the AccumulateGrad nodes run so far, and per hook what it waits for."""

    __slots__ = ("done", "waiting", "sizes", "__weakref__")

    def __init__(self):
        self.done = set()
        self.sizes = {}  # handle id -> how many nodes it waited for (orders hooks done together)
        self.waiting = {}  # handle id -> the nodes still to run (empty: fired, or nothing to wait for)


_passes: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
# handle id -> the pass it was registered during (whose earlier nodes it did not see)
_registered_during: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


def _nodes_this_pass_runs(task, module) -> set:
    """The AccumulateGrad nodes of ``module``'s parameters (its submodules' too) that ``task`` runs."""
    deps, roots = task.reachable
    exec_info = task.exec_info
    nodes = set()
    for param in module.parameters():
        if not param.requires_grad:
            continue
        ref = param._accumulator
        node = ref() if ref is not None else None
        if node is None or (node not in deps and node not in roots):
            continue
        if exec_info is not None and not exec_info.get(node, False):
            continue  # backward(inputs=...) leaves it out (autograd.grad runs no AccumulateGrad at all)
        nodes.add(node)
    return nodes


def _after_accumulate(node) -> None:
    task = _engine.current_task()
    if task is None:  # an AccumulateGrad called directly, outside a pass
        return
    state = _passes.get(task)
    if state is None:
        state = _passes[task] = _PassState()
    ready = []
    for handle_id, (module_ref, fn) in tuple(_hooks.items()):
        waiting = state.waiting.get(handle_id)
        if waiting is None:
            module = module_ref()
            if module is None:
                continue
            if _registered_during.get(handle_id) is task:
                waiting = set()  # registered during this pass: from the next one on
            else:
                waiting = _nodes_this_pass_runs(task, module)
            state.waiting[handle_id] = waiting
            state.sizes[handle_id] = len(waiting)
        if node in waiting:
            waiting.discard(node)
            if not waiting:
                ready.append((state.sizes[handle_id], handle_id, module_ref, fn))
    state.done.add(node)
    # done at the same moment: a submodule (fewer parameters) before the module holding it
    ready.sort(key=lambda entry: entry[0])
    for _, handle_id, module_ref, fn in ready:
        module = module_ref()
        if module is not None and handle_id in _hooks:
            _call(fn, module)


def _call(fn, module) -> None:
    if _state.ON[0]:
        _state.run_hook("backward", "module_post_backward_hook", module, None, fn, module)
    else:
        fn(module)


_graph._after_accumulate[0] = _after_accumulate


def register_module_post_backward_hook(module, fn) -> RemovableHandle:
    """Call ``fn(module)`` once per backward pass, when every parameter of ``module`` (and of its
    submodules) that receives a gradient in the pass has it in ``.grad`` and its
    post-accumulate-grad hooks have run.

    A module called several times in one forward fires once, after the last of its gradients; a
    pass that reaches none of its parameters does not fire it, nor does the pass running when it
is registered (from a hook): it fires from the next pass on. ``backward(inputs=...)`` waits only
    for the parameters among ``inputs``; ``autograd.grad`` accumulates nothing, so it never fires.
    Frozen parameters (``requires_grad=False``) are not waited for. The hook's return value is
    ignored. Returns a handle whose ``remove()`` unregisters it (also a context manager).
    """
    if not isinstance(module, Module):
        raise TypeError("register_module_post_backward_hook: expected a hookgrad.nn.Module, but got "
                        f"{type(module).__module__}.{type(module).__qualname__}")
    if not callable(fn):
        raise TypeError(f"register_module_post_backward_hook: the hook for module {type(module).__name__} must be "
                        f"callable, but got {type(fn).__name__} ({fn!r})")
    handle = RemovableHandle(_hooks)
    _hooks[handle.id] = (weakref.ref(module), fn)
    task = _engine.current_task()
    if task is not None:
        _registered_during[handle.id] = task
    return handle
