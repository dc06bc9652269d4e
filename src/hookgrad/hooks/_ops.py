"""Op hooks: a hook after every op the program calls (forward), and after every node the engine
runs (backward).

Forward: every op function (``hookgrad.X``, ``Tensor.X``, ``Tensor.X_``, ``nn.functional.X``, the
operators, ``autograd.Function.apply``, the recurrent modules' fused layers and cells) has two
variants of its code: its own, which runs while no forward op hook is registered, and a hooked
one, swapped into the same function object when the first forward op hook is registered and
swapped back out when the last one is removed. So the op path costs nothing at all without op hooks, and references to op
functions taken before registration (``from hookgrad import relu``) are hooked too. The hooked
variant calls the op's own code and reports the outermost op only: what an op runs inside (the
parts of a composite op, a custom Function's forward, an op hook) is not reported.

Backward: the engine's dispatch point, after a node's own post-hooks; it tests an empty registry
and does nothing else while no backward op hook is registered.

While a forward op hook is registered, every module call is counted (``Module.__call__`` is
swapped for a counting one), so that ``context().module`` names the module running the op.
"""
from __future__ import annotations

import inspect
import os
import re
import threading
import types

import numpy as np

from ..autograd import _dual
from ..autograd import _hook_context as _state
from ..autograd import engine as _engine
from ..autograd import grad_mode
from ..autograd import graph as _graph
from .._ops.creation import Generator, default_generator
from .._tensor import Tensor
from ..utils.hooks import RemovableHandle, note_registration
from ._context import count_every_call

__all__ = ["OpName", "register_op_hook"]

_forward_hooks = _graph._op_forward_hooks    # handle id -> (hook, op names or None)
_backward_hooks = _graph._op_backward_hooks  # handle id -> (hook, op names or None)
_dispatch = _graph._op_dispatch
_GRAD = grad_mode.STATE


class OpName(str):
    """The name of an op as an op hook sees it: the name of the torch function called (``linear``,
    ``conv2d``, ``add``, ``relu_`` for an in-place op, a custom Function's class name); ``node``
    is the graph node the op made (None when it recorded none) and ``inplace`` whether it wrote
    into its input; ``args`` and ``kwargs`` are the arguments of the call (a method's ``self``
    first), for hooks that need its non-tensor arguments (a convolution's stride)."""

    __slots__ = ("node", "inplace", "args", "kwargs", "_call")


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


_forward_selection: dict = {}  # op name -> its forward hooks, for the registry as _forward_state says
_forward_state = [None]


def _forward_hooks_for(name):
    """``_selected(_forward_hooks, name)``, kept while the registry is unchanged (handle ids only
    grow: its size and last id change with any registration or removal)."""
    registry = _forward_hooks
    state = (len(registry), next(reversed(registry), None))
    if state != _forward_state[0]:
        _forward_selection.clear()
        _forward_state[0] = state
    hooks = _forward_selection.get(name)
    if hooks is None:
        hooks = _forward_selection[name] = _selected(registry, name)
    return hooks


class _ThreadState(threading.local):
    busy = 0  # > 0 while an op or a forward op hook runs in this thread: what runs inside is not reported
    # the ``busy`` levels at which a custom Function's forward runs: the ops it calls directly are
    # reported to the hooks that look inside Functions
    function_levels: tuple = ()


# handle ids of the forward op hooks that see the ops inside custom Functions' forward and backward
_inside_functions: set = set()


def _inside_hooks(name):
    return [hook for key, (hook, ops) in tuple(_forward_hooks.items())
            if key in _inside_functions and (ops is None or name in ops)]


_thread = _ThreadState()


# ---- the hooked variant of an op function ----------------------------------------------------------
def _tensors_in(value) -> tuple:
    """The tensors of an op result (a Tensor, or a tuple/list such as ``max``'s (values, indices)
    or an LSTM's (output, (h, c)))."""
    if isinstance(value, Tensor):
        return (value,)
    if isinstance(value, (tuple, list)):
        found = []
        for v in value:
            if isinstance(v, Tensor):
                found.append(v)
            elif isinstance(v, (tuple, list)):
                found.extend(_tensors_in(v))
        return tuple(found)
    return ()


def _add_operands(value, found: list) -> None:
    if isinstance(value, Tensor):
        found.append(value)
    elif isinstance(value, (tuple, list)):  # cat([a, b]), einsum(eq, [a, b]), an LSTM's (h, c)
        found.extend(v for v in value if isinstance(v, Tensor))


def _operands(args, kwargs, positional, keyword_only) -> tuple:
    """The op's tensor operands in its signature's order (keywords where their parameter is)."""
    found: list = []
    for a in args:
        if isinstance(a, Tensor):
            found.append(a)
        elif isinstance(a, (tuple, list)):
            _add_operands(a, found)
    if kwargs:
        for name in positional[len(args):] + keyword_only:
            if name in kwargs:
                _add_operands(kwargs[name], found)
        for name, value in kwargs.items():
            if name not in positional and name not in keyword_only:
                _add_operands(value, found)
    return tuple(found)


def _is_inplace_name(name: str) -> bool:
    return name == "__setitem__" or (name.endswith("_") and not name.endswith("__"))


class _HookedOp:
    """What the hooked variant of an op function calls around ``impl`` (the op's own code):
    ``start`` before it (None: the call is not reported, ``impl`` just runs) and ``finish`` after.
    ``name_of(args)``: the name where it depends on the call (a custom Function's class);
    ``extra_inputs(args)``: operands the call does not pass (an RNN module's weights);
    ``writes_first``: the op returns nothing and writes into its first argument (``x[i] = v``)."""

    __slots__ = ("impl", "name", "name_of", "extra_inputs", "writes_first", "positional", "keyword_only",
                 "inplace_at", "indices_at", "thread")

    def __init__(self, impl, name, name_of=None, extra_inputs=None, writes_first=False):
        self.impl, self.name, self.name_of = impl, name, name_of
        self.extra_inputs, self.writes_first = extra_inputs, writes_first
        code = impl.__code__
        self.positional = code.co_varnames[:code.co_argcount]
        self.keyword_only = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
        params = self.positional + self.keyword_only
        # F.relu(x, inplace=True) is relu_; F.max_pool2d(x, 2, return_indices=True) max_pool2d_with_indices
        self.inplace_at = params.index("inplace") if "inplace" in params else None
        self.indices_at = params.index("return_indices") if "return_indices" in params else None
        self.thread = _thread

    def _flag(self, at, name, args, kwargs):
        return args[at] if at < len(args) else kwargs.get(name, False)

    def start(self, args, kwargs):
        """Before the op: None when it is not reported (inside an op or an op hook, the engine
        computing gradients without create_graph, or no hook for its name), else what ``finish``
        needs; the op then counts as running."""
        thread = self.thread
        inside = False
        if thread.busy or (not _GRAD.enabled and _engine.current_task() is not None):
            # not an op of the program's own; inside a custom Function it is, for some hooks
            inside = _inside_functions and (
                (thread.function_levels and thread.busy == thread.function_levels[-1])
                or (not thread.busy and _state.FUNCTION_BACKWARD[0] > 0))
            if not inside:
                return None
        op = self.name if self.name_of is None else self.name_of(args)
        if op is None:  # a call that is no op of its own: what it runs is reported
            return None
        inplace = _is_inplace_name(op)
        if self.inplace_at is not None and not inplace and self._flag(self.inplace_at, "inplace", args, kwargs):
            op, inplace = op + "_", True
        if self.indices_at is not None and self._flag(self.indices_at, "return_indices", args, kwargs):
            op += "_with_indices"
        hooks = _inside_hooks(op) if inside else _forward_hooks_for(op)
        if not hooks:
            return None
        inputs = _operands(args, kwargs, self.positional, self.keyword_only)
        if self.extra_inputs is not None:
            inputs += tuple(self.extra_inputs(args))
        before = [t.grad_fn for t in inputs]
        as_it_ran = _state_before_op(args, kwargs, inplace) if _dual.has_tangents() else None
        thread.busy += 1
        function = self.name_of is _function_name and bool(_inside_functions)
        if function:
            thread.function_levels += (thread.busy,)
        return hooks, op, inplace, inputs, before, kwargs, as_it_ran, function

    def finish(self, call, args, result):
        """After the op (also when it raised: ``result`` is then not used); returns ``result``."""
        self.thread.busy -= 1
        hooks, op, inplace, inputs, before, kwargs, as_it_ran, function = call
        if function:
            self.thread.function_levels = self.thread.function_levels[:-1]
        outputs = (args[0],) if self.writes_first else _tensors_in(result)
        if outputs:
            if self.name_of is not None and not inplace:  # a custom Function that marked an input dirty
                inplace = any(o is i for o in outputs for i in inputs)
            substitute = _report(hooks, op, inplace, inputs, before, outputs, args, kwargs, (self.impl, as_it_ran))
            if substitute is not None:
                return substitute.value
        return result


def _abandon(self, call):
    """The op raised: it no longer runs."""
    self.thread.busy -= 1
    if call[-1]:
        self.thread.function_levels = self.thread.function_levels[:-1]


_HookedOp.abandon = _abandon


def _state_before_op(args, kwargs, inplace):
    """What forward-mode AD needs to run an op again as it ran (see autograd/forward_ad.py): the
    value an in-place op overwrites, and the state of each random generator it may draw from."""
    overwritten = args[0]._ndarray.copy() if inplace and args and isinstance(args[0], Tensor) else None
    generators = [default_generator] + [g for g in list(args) + list(kwargs.values()) if isinstance(g, Generator)]
    return overwritten, [(g, g.get_state()) for g in generators]


_templates: dict = {}


def _template(free: int):
    """The code of the hooked variant, for a function with ``free`` closure cells (a code object
    must match the closure it replaces; the cells stay and are not used). It runs the op's own
    code between the ``_HookedOp``'s ``start`` and ``finish``, one frame above it (a warning an op
    raises with a fixed stacklevel points one frame lower while an op hook is registered)."""
    code = _templates.get(free)
    if code is None:
        cells = [f"cell{i}" for i in range(free)]
        lines = ["def enclosing():"] + [f"    {c} = None" for c in cells]
        lines.append("    def hooked(*args, _hooked_op=None, **kwargs):")
        if cells:
            lines.append("        if False: " + ", ".join(cells))
        lines += ["        call = _hooked_op.start(args, kwargs)",
                  "        if call is None:",
                  "            return _hooked_op.impl(*args, **kwargs)",
                  "        result = None",
                  "        try:",
                  "            result = _hooked_op.impl(*args, **kwargs)",
                  "        except BaseException:",
                  "            _hooked_op.abandon(call)",
                  "            raise",
                  "        return _hooked_op.finish(call, args, result)",
                  "    return hooked"]
        namespace: dict = {}
        # a file name inside the package that no file has: code that tells hookgrad's frames from
        # the program's by their file counts it as hookgrad's
        exec(compile("\n".join(lines), os.path.join(os.path.dirname(os.path.dirname(__file__)), "<op hook>"),
                     "exec"), namespace)
        code = _templates[free] = namespace["enclosing"]().__code__
    return code


class _OpFunction:
    """One op function and its two variants."""

    __slots__ = ("fn", "code", "kwdefaults", "hooked_kwdefaults")

    def __init__(self, fn, name, **how):
        self.fn = fn
        self.code, self.kwdefaults = fn.__code__, fn.__kwdefaults__
        impl = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        impl.__kwdefaults__ = fn.__kwdefaults__
        impl.__qualname__ = fn.__qualname__
        self.hooked_kwdefaults = {"_hooked_op": _HookedOp(impl, name, **how)}

    @property
    def name(self) -> str:
        return self.hooked_kwdefaults["_hooked_op"].name

    def hook(self):
        fn = self.fn
        fn.__code__ = _template(len(self.code.co_freevars))
        fn.__kwdefaults__ = self.hooked_kwdefaults

    def unhook(self):
        fn = self.fn
        fn.__code__, fn.__kwdefaults__ = self.code, self.kwdefaults


def _unwrapped(fn):
    while True:
        if hasattr(fn, "__wrapped__"):  # torch's argument checks in front of the op
            fn = fn.__wrapped__
        elif hasattr(fn, "__wrapped_op__"):  # an out= front (torch.linalg's)
            fn = fn.__wrapped_op__
        else:
            return fn


def _function_name(args):
    """A custom Function is reported by its class name; checkpointing's Function is none of the
    program's ops: the ops of the forward it runs are reported instead."""
    cls = args[0]
    return None if cls.__module__ in ("hookgrad.utils.checkpoint", "torch.utils.checkpoint") else cls.__name__


def _cell_weights(args):
    cell = args[0]
    return [w for w in (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh) if w is not None]


# a generator's or coroutine's code cannot be swapped for a plain function's
_SUSPENDING = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
# the functions among the factories that compute from their tensor operands
_CREATION_OPS = frozenset(("diag", "diag_embed", "meshgrid", "bernoulli", "multinomial", "normal"))
# where torch's function is named otherwise than its nn.functional name
_TORCH_SPELLING = {"logsigmoid": "log_sigmoid"}


def _op_functions() -> list:
    """Every op function, once, with the name its op is reported under (the first name found:
    an alias such as ``subtract`` reports its op's own name, ``sub``)."""
    import hookgrad

    from .. import linalg, special
    from .._ops import _declare
    from ..autograd.function import Function
    from ..nn import functional
    from ..nn._functional import torch_level
    from ..nn.modules import rnn

    found: dict = {}

    def add(fn, name, **how):
        fn = _unwrapped(fn)
        if isinstance(fn, types.FunctionType) and fn not in found and not fn.__code__.co_flags & _SUSPENDING:
            found[fn] = _OpFunction(fn, _TORCH_SPELLING.get(name, name), **how)

    for decl in _declare.declared():
        name = (decl.functions or decl.methods or (decl.fn.__name__,))[0]
        if decl.module.endswith(".creation") and name not in _CREATION_OPS:  # factories: nothing to observe
            continue
        if name.endswith("_window") or name in ("fftfreq", "rfftfreq"):  # factories too
            continue
        if decl.module.endswith("._ops.fft") and name not in ("stft", "istft"):
            name = "fft_" + name  # torch.fft.rfft is torch._C._fft.fft_rfft
        add(decl.fn, name)
        for method in decl.inplace:
            add(Tensor.__dict__[method], decl.inplace[0])
    for name in ("__getitem__", "detach", "detach_"):
        add(Tensor.__dict__[name], name)
    add(Tensor.__dict__["__setitem__"], "__setitem__", writes_first=True)
    add(Tensor.__dict__["__rtruediv__"], "div")  # number / tensor: one op, not reciprocal and mul
    for name in ("broadcast_tensors", "cdist", "cosine_similarity"):  # written in hookgrad/__init__.py
        add(getattr(hookgrad, name), name)
    for name in torch_level.TORCH_NAMES:  # torch.conv2d, torch.layer_norm, torch.native_group_norm, ...
        add(getattr(torch_level, name), name)
    for namespace, prefix in ((functional, ""), (linalg, "linalg_"), (special, "special_")):
        for name in namespace.__all__:
            fn = _unwrapped(getattr(namespace, name))
            if getattr(fn, "__module__", "").startswith(("hookgrad._ops.", "hookgrad.nn.", namespace.__name__)):
                add(fn, prefix + name)
    add(Function.__dict__["apply"].__func__, "apply", name_of=_function_name)
    # torch's recurrent modules call one op (lstm, gru, rnn_tanh, lstm_cell, ...) for what hookgrad's
    # compute in their own code
    for run in (rnn.RNNBase._run_layers, rnn.RNNBase._forward_packed):
        add(run, "rnn", name_of=lambda args: args[0].mode.lower(), extra_inputs=lambda args: args[0]._flat_weights)
    add(rnn.LSTMCell.forward, "lstm_cell", extra_inputs=_cell_weights)
    add(rnn.GRUCell.forward, "gru_cell", extra_inputs=_cell_weights)
    add(rnn.RNNCell.forward, "rnn_cell", extra_inputs=_cell_weights,
        name_of=lambda args: f"rnn_{args[0].nonlinearity}_cell")
    return list(found.values())


_op_functions_cache: list = []
_hooked = [False]


def _all_op_functions() -> list:
    if not _op_functions_cache:
        _op_functions_cache.extend(_op_functions())
    return _op_functions_cache


def reported_name(fn):
    """The name a forward op hook sees for a call of ``fn`` (a public op function, a Tensor
    method), or None when calls of ``fn`` are not reported as an op of their own."""
    fn = _unwrapped(fn)
    for entry in _all_op_functions():
        if entry.fn is fn:
            return entry.name
    return None


def _hook_op_functions(on: bool) -> None:
    """Swap the hooked variant of every op function in (``on``) or out."""
    if on == _hooked[0]:
        return
    for entry in _all_op_functions():
        entry.hook() if on else entry.unhook()
    _hooked[0] = on


# ---- reporting ----------------------------------------------------------------------------------
class Substitute:
    """What a forward op hook of the machinery (a wrapper subclass's ``__torch_dispatch__``) returns
    to have the op return ``value`` itself, instead of its own result with replaced values."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _report(hooks, name, inplace, inputs, before, outputs, args, kwargs, call):
    """Run the forward op hooks for an op that returned ``outputs`` when called with ``args`` and
    ``kwargs``; ``call`` is the op's own code and what forward AD needs to run it again (or None).
    Returns the ``Substitute`` a hook returned, if any."""
    op = OpName(name)
    op.inplace = inplace
    op.args, op.kwargs = args, kwargs
    op._call = call + (_GRAD.enabled,)
    op.node = None
    for o in outputs:
        node = o.grad_fn
        if node is not None and node not in before:  # made by this op (Nodes compare by identity)
            op.node = node
            break
    calls = _state.CALLS
    module, index = calls[-1] if calls else (None, None)
    task = _engine.current_task()
    pass_id = None if task is None else task.id
    recompute = _state.RECOMPUTING[0] > 0
    phase = "backward" if pass_id is not None and not recompute else "forward"
    _state.ACTIVE.append(_state.HookContext(phase, pass_id, module, index, recompute, "op_forward_hook"))
    # what a hook computes is not recorded and fires no op hook
    _thread.busy += 1
    grad_enabled = _GRAD.enabled
    _GRAD.enabled = False
    substitute = None
    try:
        for hook in hooks:
            result = hook(op, inputs, outputs)
            if result.__class__ is Substitute:
                substitute = result
            elif result is not None:
                _replace_outputs(op, hook, inputs, outputs, result)
    finally:
        _GRAD.enabled = grad_enabled
        _thread.busy -= 1
        _state.ACTIVE.pop()
    return substitute


def _hook_name(hook) -> str:
    return getattr(hook, "__name__", type(hook).__name__)


def _replace_outputs(op, hook, inputs, outputs, result) -> None:
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
        if value._ndarray.shape != old._ndarray.shape or value._ndarray.dtype != old._ndarray.dtype:
            raise RuntimeError(f"{where} has changed the size or type of output {i} (was {old.type()} "
                               f"{list(old.shape)}, got {value.type()} {list(value.shape)}): a replacement must "
                               "keep every output's shape and dtype")
        if not op.inplace and (old._base_value is not None or any(old is t for t in inputs)):
            raise RuntimeError(f"{where} cannot replace output {i}: it is a view of the op's input (view ops "
                               "share storage with their input, and this op returned its input or a view of it); "
                               "replace the values downstream instead")
    saved = op.node._saved or () if op.node is not None else ()
    for old, value in zip(outputs, new):
        if value is None or value is old:
            continue
        if op.inplace:
            np.copyto(old._ndarray, value._ndarray)
            continue
        before, after = old._ndarray, np.array(value._ndarray, copy=True)
        old._ndarray = after
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


_dispatch[1] = _op_ran


def _forward_hooks_changed() -> None:
    on = bool(_forward_hooks)
    _hook_op_functions(on)
    count_every_call(on)


class _OpHookHandle(RemovableHandle):
    """Removes an op hook; with the last forward op hook gone, op functions run their own code
    again and module calls stop being counted."""

    def remove(self) -> None:
        super().remove()
        _inside_functions.discard(self.id)
        _forward_hooks_changed()

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


def register_op_hook(forward=None, backward=None, ops=None, *, inside_functions=False) -> RemovableHandle:
    """Hook every op.

    ``forward(op, inputs, outputs)`` runs after every op the program calls that returns tensors,
    whether or not it records a graph node (under ``no_grad`` too): ``hookgrad.X``, Tensor methods
    and operators, ``nn.functional`` (so the ops of modules), custom ``autograd.Function`` s
    (``op`` is the class name) and in-place ops (``add_``, ``relu_`` for ``F.relu(x, inplace=True)``,
    reported once, after the write). ``op`` is an :class:`OpName`: a ``str``, the name of the torch
    function called (``linear``, ``conv2d``, ``add``; an alias reports its op's name: ``subtract``
    is ``sub``), with ``op.node`` the graph node the op made (None when it made none) and
    ``op.inplace``. Only the outermost op is reported: the ops a composite op (``linear``,
    ``cross_entropy``) or a custom Function runs inside are not. ``inputs`` are the op's tensor
    operands in the order of its parameters (tensors in a list argument, as ``cat``'s, included);
    ``outputs`` a tuple of the tensors it returned. A non-None return replaces the outputs' values
    (a Tensor or a tuple, one per output, None keeping one; same shapes and dtypes, else
    RuntimeError; an output that is a view of an input, or the input itself, cannot be replaced
    except by an in-place op). The hook runs under no_grad, and the ops it runs fire no op hook.
    ``hookgrad.hooks.context().module`` is the innermost module running the op. The ops the engine
    runs to compute gradients are reported only when they build a graph (``create_graph=True``).

    ``backward(node, grad_inputs, grad_outputs)`` runs after every node the engine runs, after the
    node's own post-hooks, like a post-hook on every node (a returned tuple replaces grad_inputs);
    its names are the nodes' (``addmm`` for the node ``linear`` made, ``mm``, ``relu``).

    ``ops``: a name or a collection of names; only those ops (and nodes) are reported.
    ``inside_functions=True``: the forward hook also sees the ops a custom ``autograd.Function``'s
    forward and backward call (as torch's dispatch modes do), besides the Function itself. Returns a
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
        if inside_functions:
            _inside_functions.add(handle.id)
        _forward_hooks_changed()
    if backward is not None:
        _backward_hooks[handle.id] = (backward, names)
    # one site per handle: the forward registry's entry carries it when there is one
    note_registration(_forward_hooks if forward is not None else _backward_hooks, handle.id)
    return handle
