"""Op hooks: a hook on every differentiable op, in forward (when it records its graph node) and in
backward (when the engine runs a node).

The forward dispatch point is where an op records its node (``_ops._declare.record_op``,
``_ops._base.record``, ``autograd.Function.apply``, and ``_ops.views.apply_inplace`` for in-place
ops); the backward one is the engine's, after a node's own post-hooks. Both test an empty
registry and do nothing else while no op hook is registered. While a forward op hook is
registered, every module call is counted (``Module.__call__`` is swapped for a counting one), so
that ``context().module`` names the module running the op.
"""
from __future__ import annotations

import re

import numpy as np

from ..autograd import _hook_context as _state
from ..autograd import engine as _engine
from ..autograd import grad_mode
from ..autograd import graph as _graph
from .._tensor import Tensor
from ..utils.hooks import RemovableHandle
from ._context import count_every_call

__all__ = ["OpName", "register_op_hook"]

_forward_hooks = _graph._op_forward_hooks    # handle id -> (hook, op names or None)
_backward_hooks = _graph._op_backward_hooks  # handle id -> (hook, op names or None)
_dispatch = _graph._op_dispatch
_GRAD = grad_mode.STATE


class OpName(str):
    """The name of an op as an op hook sees it: torch's short (aten-style) name, such as ``mm``,
    ``addmm``, ``relu``, ``convolution``, ``add_`` for in-place ops, or a custom Function's class
    name; ``node`` is the graph node the op made and ``inplace`` whether it wrote into its input."""

    __slots__ = ("node", "inplace")


_names: dict = {}


def op_name(node_cls) -> str:
    """torch's short op name for a node class: ``MmBackward0`` -> ``mm``,
    ``MaxPool2DWithIndicesBackward0`` -> ``max_pool2d_with_indices``."""
    name = _names.get(node_cls)
    if name is None:
        base = re.sub(r"Backwards?\d*$", "", node_cls.__name__) or node_cls.__name__
        base = re.sub(r"(\d)D", r"\1d", base)
        name = _names[node_cls] = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", base).lower()
    return name


def _selected(registry, name):
    return [hook for hook, ops in tuple(registry.values()) if ops is None or name in ops]


# what ops recorded while an in-place op ran (reported when it is, except the one it stands for)
_held: list = []
# a forward op hook is running: what it computes is not reported
_in_hook = [False]


def _op_recorded(node, inputs, outputs, name=None, inplace=False):
    """An op recorded ``node`` for ``outputs``: run the forward op hooks that want it."""
    if _in_hook[0]:
        return
    if _dispatch[2]:  # inside an in-place op, which runs its out-of-place form: hold until it is done
        _held.append((node, inputs, outputs, name, inplace))
        return
    if _held:
        held = _held[:]
        _held.clear()
        if inplace:  # the in-place op's own node is reported as the in-place op, its helpers as themselves
            for entry in held:
                if entry[0] is not node:
                    _report(*entry)
        # else: left by an in-place op that failed; nothing of it is reported
    _report(node, inputs, outputs, name, inplace)


def _report(node, inputs, outputs, name, inplace):
    if name is None:
        name = op_name(type(node)) + ("_" if inplace else "")
    hooks = _selected(_forward_hooks, name)
    if not hooks:
        return
    op = OpName(name)
    op.node, op.inplace = node, inplace
    outputs = tuple(outputs)
    calls = _state.CALLS
    module, index = calls[-1] if calls else (None, None)
    pass_id = _state.current_pass_id()
    recompute = _state.RECOMPUTING[0] > 0
    phase = "backward" if pass_id is not None and not recompute else "forward"
    _state.ACTIVE.append(_state.HookContext(phase, pass_id, module, index, recompute, "op_forward_hook"))
    # what a hook computes is not recorded and fires no op hook
    _in_hook[0] = True
    grad_enabled = _GRAD.enabled
    _GRAD.enabled = False
    try:
        for hook in hooks:
            result = hook(op, inputs, outputs)
            if result is not None:
                _replace_outputs(op, hook, outputs, result)
    finally:
        _GRAD.enabled = grad_enabled
        _in_hook[0] = False
        _state.ACTIVE.pop()


def _hook_name(hook) -> str:
    return getattr(hook, "__name__", type(hook).__name__)


def _replace_outputs(op, hook, outputs, result) -> None:
    """A forward op hook returned ``result``: it replaces the values of ``outputs``, checked first
    (same number, shapes and dtypes), so that a bad one changes nothing."""
    where = f"op hook '{_hook_name(hook)}' on op '{op}'"
    if isinstance(result, Tensor):
        new = (result,)
    elif isinstance(result, (tuple, list)):
        new = tuple(result)
    else:
        raise TypeError(f"{where} returned {type(result).__name__}: expected None, a Tensor or a tuple of Tensors")
    if len(new) != len(outputs):
        raise RuntimeError(f"{where} returned {len(new)} outputs, but the op has {len(outputs)}")
    for i, (old, value) in enumerate(zip(outputs, new)):
        if value is None or value is old:
            continue
        if not isinstance(value, Tensor):
            raise TypeError(f"{where} returned {type(value).__name__} for output {i}: expected a Tensor or None")
        if value._data.shape != old._data.shape or value._data.dtype != old._data.dtype:
            raise RuntimeError(f"{where} has changed the size or type of output {i} (was {old.type()} "
                               f"{list(old.shape)}, got {value.type()} {list(value.shape)}): a replacement must "
                               "keep every output's shape and dtype")
        if not op.inplace and old._base is not None:
            raise RuntimeError(f"{where} cannot replace output {i}: it is a view of the op's input (view ops "
                               "share storage with their input); replace the values downstream instead")
    saved = op.node._saved or ()
    for old, value in zip(outputs, new):
        if value is None or value is old:
            continue
        if op.inplace:
            np.copyto(old._data, value._data)
            continue
        before, after = old._data, np.array(value._data, copy=True)
        old._data = after
        for entry in saved:  # what the node saved of its output is the replaced value too
            if entry is not None and entry.is_output and entry.tensor is before:
                entry.tensor = after


def _op_ran(node, grad_inputs, grad_outputs):
    """The engine ran ``node``: run the backward op hooks that want it (like node post-hooks:
    a returned tuple replaces ``grad_inputs``)."""
    hooks = _selected(_backward_hooks, op_name(type(node)))
    if not hooks:
        return grad_inputs
    grad_outputs = tuple(grad_outputs)
    _state.ACTIVE.append(_state.HookContext("backward", _state.current_pass_id(), None, None,
                                            _state.RECOMPUTING[0] > 0, "op_backward_hook"))
    try:
        for hook in hooks:
            result = hook(node, tuple(grad_inputs), grad_outputs)
            if result is not None:
                _engine._check_tuple_result(hook, result, len(grad_inputs))
                grad_inputs = [new if new is None or new is old else _engine._check_node_hook_result(hook, old, new)
                               for old, new in zip(grad_inputs, result)]
    finally:
        _state.ACTIVE.pop()
    return grad_inputs


_dispatch[0] = _op_recorded
_dispatch[1] = _op_ran


class _OpHookHandle(RemovableHandle):
    """Removes an op hook; with the last forward op hook gone, module calls stop being counted."""

    def remove(self) -> None:
        super().remove()
        count_every_call(bool(_forward_hooks))

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.remove()


def _op_names(ops):
    if ops is None:
        return None
    if isinstance(ops, str):
        return frozenset((ops,))
    try:
        names = frozenset(ops)
    except TypeError:
        raise TypeError(f"register_op_hook: ops must be an op name or a collection of op names, but got "
                        f"{type(ops).__name__}") from None
    wrong = [n for n in names if not isinstance(n, str)]
    if wrong:
        raise TypeError(f"register_op_hook: ops must hold op names (str), but got {wrong[0]!r}")
    return names


def register_op_hook(forward=None, backward=None, ops=None) -> RemovableHandle:
    """Hook every differentiable op.

    ``forward(op, inputs, outputs)`` runs after each op that records a graph node (grad mode on
    and an input requiring grad), wherever it runs: in modules, functional calls, custom
    ``autograd.Function`` s (``op`` is the class name), in-place ops (``add_``, reported once, after
    the write). ``op`` is an :class:`OpName` (a ``str`` with torch's short name, ``op.node`` the
    node); ``inputs`` are the op's differentiable operands; ``outputs`` a tuple of its tensor
    outputs. A non-None return replaces the outputs' values (a Tensor or a tuple, one per output,
    None keeping one; same shapes and dtypes, else RuntimeError). The hook runs under no_grad, and
    the ops it runs fire no op hook. ``hookgrad.hooks.context().module`` is the innermost module
    running the op. Ops that record no node (under no_grad, or on tensors that need no grad) are
    not reported.

    ``backward(node, grad_inputs, grad_outputs)`` runs after every node the engine runs, after the
    node's own post-hooks, like a post-hook on every node (a returned tuple replaces grad_inputs).

    ``ops``: a name or a collection of names; only those ops (and nodes) are reported. Returns a
    handle whose ``remove()`` unregisters both hooks; it is also a context manager.
    """
    if forward is None and backward is None:
        raise TypeError("register_op_hook: give a forward= hook, a backward= hook or both")
    for role, fn in (("forward", forward), ("backward", backward)):
        if fn is not None and not callable(fn):
            raise TypeError(f"register_op_hook: the {role} hook must be callable, but got {type(fn).__name__} ({fn!r})")
    names = _op_names(ops)
    handle = _OpHookHandle(_forward_hooks, extra_dict=_backward_hooks)
    if forward is not None:
        _forward_hooks[handle.id] = (forward, names)
        count_every_call(True)
    if backward is not None:
        _backward_hooks[handle.id] = (backward, names)
    return handle
