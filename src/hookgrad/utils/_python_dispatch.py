"""``torch.utils._python_dispatch``: dispatch modes, on top of hookgrad's op hooks.

torch calls a mode's ``__torch_dispatch__(func, types, args, kwargs)`` for every ATen operator an op
runs, and what it returns is the operator's result. hookgrad has no ATen dispatcher; its op hooks
see each op the program calls (``linear``, ``conv2d``, ``x[i]``), after it ran. A
``TorchDispatchMode`` here is called once per ATen operator torch's decomposition of that op runs,
named as torch names it and with the arguments torch's dispatcher passes (laid out by the
operator's parameters, see ``_aten_calls``): ``linear`` -> ``t``, ``addmm``; ``conv2d`` -> one
``convolution`` with nine arguments; ``matmul`` by torch's folding rule; ``cross_entropy`` ->
``_log_softmax``, ``nll_loss_forward``; indexing -> ``select``/``slice``/``index``; self-attention ->
its projections, views and attention kernel. An op without a known decomposition is dispatched
under its own name. The ``func`` a mode receives is the object ``torch.ops.aten.<op>.<overload>``
names (one per overload, with torch's schema and tags), so tables keyed by operators find it.
Innermost mode first:

* ``func(*args, **kwargs)`` with the arguments the mode was given returns the result hookgrad
  computed (not computed again); with other arguments (a mode changed an earlier operator's
  result) it runs hookgrad's implementation of that operator.
* What the mode returns for the op's last operator replaces the op's result (same shape and dtype,
  as for an op hook's return).

The ops a custom ``autograd.Function``'s forward and backward run are dispatched as they run (the
op hook looks inside Functions). In a backward pass the modes see the ATen operators of torch's
formulas for the nodes listed in ``_BACKWARD_STEPS`` (the fused kernels of convolution, pooling,
norms, nll_loss, softmax; linear's addmm and t; the views; a leaf's accumulation), with the
arguments torch's formula passes (more in ``_dispatch_backward``); a node of another kind, or one
whose saved tensors went through saved-tensor hooks (a checkpointed region's), is not dispatched
and warns once per mode.
The ``torch.*`` factories (``torch.zeros``, ``torch.tensor`` as ``lift_fresh``, ...) are seen when
called through the ``torch`` namespace while a mode is active, and so is the ``ones_like`` (with
``preserve_format``) that makes the implicit gradient of ``loss.backward()``, as torch's. What a mode
does not see: the factories hookgrad calls inside its own ops.
"""
from __future__ import annotations

import contextlib
import inspect
import sys
import warnings
import weakref

from .. import ops as _ops
from . import _aten_calls
from .flop_counter import _is_custom_function
from .._C import _DisableTorchDispatch
from .._tensor import Tensor
from ..nn._functional import attention as _attention

__all__ = ["TorchDispatchMode", "is_traceable_wrapper_subclass", "transform_subclass"]

_STACK: list = []          # the active modes, innermost last
_HOOK = [None]             # the op hook that feeds them, registered while any is active


class TorchDispatchMode:
    """Subclass and define ``__torch_dispatch__(self, func, types, args=(), kwargs=None)``; entered,
    it sees the ATen operators of every op run inside (see the module docstring)."""

    supports_higher_order_operators = False

    def __init__(self, _dispatch_key=None):
        if _dispatch_key is not None:
            raise NotImplementedError("hookgrad's dispatch modes run for every op: they take no _dispatch_key")
        self._warned_backward = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, *exc):
        _pop_mode(self)
        return False

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs).__enter__()

    @classmethod
    def is_infra_mode(cls) -> bool:
        return False


def _push_mode(mode) -> None:
    if not hasattr(mode, "_warned_backward"):   # a subclass whose __init__ skipped ours
        mode._warned_backward = False
    _STACK.append(mode)
    if _HOOK[0] is None:
        from ..hooks import register_op_hook
        _HOOK[0] = register_op_hook(forward=_dispatch_op, backward=_backward_ran, inside_functions=True)
        _swap_factories(True)


def _pop_mode(mode) -> None:
    if mode in _STACK:
        # the innermost occurrence: modes leave in the reverse order of entering
        del _STACK[len(_STACK) - 1 - _STACK[::-1].index(mode)]
    if not _STACK and _HOOK[0] is not None and not _LIVE_WRAPPERS[0]:
        _HOOK[0].remove()
        _HOOK[0] = None
        _swap_factories(False)


# Tensor subclasses with a __torch_dispatch__ that wrapper instances were made of (``_make_wrapper_subclass``):
# while such instances live, the op hook is registered, and an op with one among its operands hands its
# ATen operators to that class's __torch_dispatch__ (as a mode's, but for these operands only)
_SUBCLASSES: set = set()
_LIVE_WRAPPERS = [0]


class _WrapperMark:
    """Kept in a wrapper instance's ``__dict__`` (which moves with ``swap_tensors``, as the instance's
    class does): counts the live wrapper instances, so that the op hook goes when the last one does."""

    __slots__ = ()

    def __init__(self):
        _LIVE_WRAPPERS[0] += 1

    def __copy__(self):
        return _WrapperMark()

    def __deepcopy__(self, memo):
        return _WrapperMark()

    def __reduce__(self):
        return (_WrapperMark, ())

    def __del__(self):
        _LIVE_WRAPPERS[0] -= 1
        if not _LIVE_WRAPPERS[0] and not _STACK and _HOOK[0] is not None:
            _HOOK[0].remove()
            _HOOK[0] = None


def note_dispatch_subclass(instance) -> None:
    """``instance`` (of a class with a __torch_dispatch__) was made by ``_make_wrapper_subclass``."""
    _SUBCLASSES.add(type(instance))
    instance.__dict__["_dispatch_mark"] = _WrapperMark()
    if _HOOK[0] is None:
        from ..hooks import register_op_hook
        _HOOK[0] = register_op_hook(forward=_dispatch_op, backward=_backward_ran, inside_functions=True)


def _dispatch_subclass_among(values):
    """The class whose __torch_dispatch__ an ATen call with these arguments goes to (None: none)."""
    for value in values:
        if isinstance(value, (list, tuple)):
            found = _dispatch_subclass_among(value)
            if found is not None:
                return found
        elif type(value) in _SUBCLASSES:
            return type(value)
    return None


def _call_subclass(func, args, kwargs):
    owner = _dispatch_subclass_among(tuple(args) + tuple(kwargs.values()))
    if owner is None:    # a step of the op that none of the subclass's instances takes part in
        return func(*args, **kwargs)
    types = tuple(dict.fromkeys(t for t in map(type, args) if t in _SUBCLASSES))
    return owner.__torch_dispatch__(func, types, args, kwargs)


def dispatched_item(t):
    """``t.item()`` of a wrapper subclass instance: torch hands ``aten._local_scalar_dense`` to its
    __torch_dispatch__ (the subclass reads the value of the tensor it wraps)."""
    packet = _OWN_PACKETS.get("_local_scalar_dense")
    if packet is None:
        packet = _OWN_PACKETS["_local_scalar_dense"] = _ops.OpOverloadPacket(
            "aten", "_local_scalar_dense", lambda self: self.item(), overloads=("default",))
    return _call_subclass(packet.default, (t,), {})


def is_traceable_wrapper_subclass(t) -> bool:
    return False


def transform_subclass(t, callback, outer_size=None, outer_stride=None):
    raise NotImplementedError("hookgrad has no tensor wrapper subclasses")


def _get_current_dispatch_mode():
    return _STACK[-1] if _STACK else None


def _get_current_dispatch_mode_stack() -> list:
    return list(_STACK)


def _len_torch_dispatch_stack() -> int:
    return len(_STACK)


@contextlib.contextmanager
def _disable_current_modes():
    """No mode sees the ops run inside; yields the modes that were active."""
    saved = list(_STACK)
    _STACK.clear()
    try:
        yield saved
    finally:
        _STACK[:] = saved


@contextlib.contextmanager
def _pop_mode_temporarily():
    mode = _STACK.pop()
    try:
        yield mode
    finally:
        _STACK.append(mode)


# ---- the ATen operators of an op ------------------------------------------------------------------
_OWN_PACKETS: dict = {}


def _packet(name: str):
    """``torch.ops.aten.<name>``; for a name hookgrad's operator table lacks, a packet of that name
    kept here (not added to ``torch.ops.aten``: torch may have no such operator), which calls with
    other arguments than the op's cannot run."""
    packet = _OWN_PACKETS.get(name)
    if packet is not None:
        return packet
    try:
        return getattr(_ops.aten, name)
    except AttributeError:
        packet = _OWN_PACKETS[name] = _ops.OpOverloadPacket("aten", name, _unavailable(name),
                                                            overloads=("default",))
        return packet


def _unavailable(name):
    def run(*args, **kwargs):
        raise NotImplementedError(f"torch.ops.aten.{name}: hookgrad has no implementation of this ATen operator "
                                  "to call with other arguments than the op's own")
    return run


class _Pending:
    """An operator a mode is deciding: called with the arguments the mode was given, it gives the
    result the op computed (``result`` a thunk, None where the arguments are not the op's own);
    with others, or for another operator, the operator runs. The next mode out sees it first."""

    __slots__ = ("func", "args", "kwargs", "result", "returned")

    def __init__(self, func, args, kwargs, result):
        self.func, self.args, self.kwargs, self.result = func, args, kwargs, result
        self.returned = _NOTHING   # what a call gave back from ``result``

    def call(self, func, args, kwargs):
        if func is not self.func:
            return func._op(*args, **kwargs)
        if _STACK:
            return _call_mode(func, args, kwargs)
        given_args, given_kwargs = self.args, self.kwargs
        same = (len(args) == len(given_args) and all(a is b for a, b in zip(args, given_args))
                and kwargs.keys() == given_kwargs.keys() and all(kwargs[k] is given_kwargs[k] for k in kwargs))
        if same and self.result is not None:
            value = self.returned = self.result()
            return value
        return func._op(*args, **kwargs)


def _dispatch(packet_name: str, overload: str, args, kwargs, result, call=None):
    """Hand ``torch.ops.aten.<packet_name>.<overload>`` to the modes: ``(what they returned, what a
    call inside gave back from ``result``)``. ``call`` hands it on: the modes by default, a wrapper
    subclass's ``__torch_dispatch__`` where no mode is active."""
    func = _overload(packet_name, overload, args, kwargs)
    pending = _Pending(func, args, kwargs, result)
    _ops._PENDING.append(pending)
    try:
        returned = (call or _call_mode)(func, args, kwargs)
    finally:
        _ops._PENDING.remove(pending)
    return returned, pending.returned


def _overload(packet_name: str, overload: str, args=(), kwargs=None):
    """The overload object; where the name given is not one of the operator's, the first of torch's
    overloads whose schema takes the arguments (``mul_`` of a tensor: ``mul_.Tensor``)."""
    packet = _packet(packet_name)
    if overload in packet._overload_names:
        return getattr(packet, overload)
    for candidate in packet._overload_names:
        if _takes(getattr(packet, candidate)._schema, args, kwargs or {}):
            return getattr(packet, candidate)
    raise RuntimeError(f"hookgrad dispatched aten.{packet_name} with arguments none of torch's overloads takes")


def _takes(schema, args, kwargs) -> bool:
    """Whether a schema's parameters take ``args`` and ``kwargs`` (by kind: tensor, number, list)."""
    if not hasattr(schema, "arguments") or any(a.is_out for a in schema.arguments):
        return False
    positional = [a for a in schema.arguments if not a.kwarg_only]
    if len(args) > len(positional):
        return False
    by_name = {a.name: a for a in schema.arguments}
    if any(name not in by_name for name in kwargs):
        return False
    for argument, value in zip(positional, args):
        if not _fits_type(str(argument.type), value):
            return False
    for argument in schema.arguments[len(args):]:
        if argument.name in kwargs:
            if not _fits_type(str(argument.type), kwargs[argument.name]):
                return False
        elif not argument.has_default_value() and not str(argument.type).startswith("Optional["):
            return False
    return True


def _fits_type(type_name: str, value) -> bool:
    if type_name.startswith("Optional["):
        return value is None or _fits_type(type_name[len("Optional["):-1], value)
    if type_name == "Tensor":
        return isinstance(value, Tensor)
    if type_name.startswith("List["):
        return isinstance(value, (list, tuple))
    if isinstance(value, Tensor):
        return False
    if type_name == "int":
        return isinstance(value, int)
    if type_name == "float":
        return isinstance(value, (int, float))
    if type_name == "bool":
        return isinstance(value, bool)
    if type_name == "number":
        return isinstance(value, (int, float, complex))
    if type_name == "str":
        return isinstance(value, str)
    return True


def _call_mode(func, args, kwargs):
    mode = _STACK.pop()
    try:
        types = ()
        return mode.__torch_dispatch__(func, types, args, kwargs)
    finally:
        _STACK.append(mode)


def _overload_name(name: str, args, kwargs=None) -> str:
    kwargs = kwargs or {}
    if name == "empty":
        return "memory_format"
    if name in ("add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_") and len(args) > 1:
        # a Python number operand is wrapped into a tensor by torch's bindings: still .Tensor
        return "Tensor_mode" if name.startswith("div") and kwargs.get("rounding_mode") is not None else "Tensor"
    if name in ("max", "min") and len(args) > 1 and not isinstance(args[1], Tensor):
        return "dim"
    if name in ("mean", "sum") and len(args) > 1:
        return "dim_IntList"
    if name == "pow" and len(args) > 1:
        if not isinstance(args[0], Tensor):
            return "Scalar"
        return "Tensor_Tensor" if isinstance(args[1], Tensor) else "Tensor_Scalar"
    return "default"


def _resolved(arg, results):
    if isinstance(arg, _Prev):
        result = results[arg.index]
        return result if arg.item is None else result[arg.item]
    if isinstance(arg, list) and any(isinstance(a, _Prev) for a in arg):
        return [_resolved(a, results) for a in arg]
    return arg


_NOTHING = object()


def _prevs_in(args):
    for a in args:
        if isinstance(a, _Prev):
            yield a
        elif isinstance(a, list):
            yield from (p for p in a if isinstance(p, _Prev))


# a last step that runs no operator: the op's result gathered from earlier steps' results
_GATHER = "the op's result"


class _Prev:
    """An argument that is the result of an earlier step (as the mode returned it), or one element
    of it (``item``) where that step returns several tensors."""

    __slots__ = ("index", "item")

    def __init__(self, index: int, item=None):
        self.index, self.item = index, item


def _steps(op, outputs):
    """``(aten name, args, kwargs, result thunk)`` per ATen operator torch would run for ``op``; an
    intermediate's thunk gives its value from the op's own result or a view (nothing is computed
    twice); the last step's result is the op's."""
    name = str(op)
    args, kwargs = tuple(op.args), dict(op.kwargs)
    own = outputs[0] if len(outputs) == 1 else tuple(outputs)
    if name == "linear":
        x = args[0] if args else kwargs["input"]
        w = args[1] if len(args) > 1 else kwargs["weight"]
        bias = args[2] if len(args) > 2 else kwargs.get("bias")
        if x.dim() == 2 and bias is not None:
            return [("t", (w,), {}, w.t), ("addmm", (bias, x, _Prev(0)), {}, lambda: own)]
        if bias is not None and x.is_contiguous() and x.dim() != 2:
            rows, n = x.numel() // x.shape[-1], own.shape[-1]
            return [("view", (x, [rows, x.shape[-1]]), {}, lambda: x.reshape(rows, x.shape[-1])),
                    ("t", (w,), {}, w.t),
                    ("addmm", (bias, _Prev(0), _Prev(1)), {}, lambda: own.reshape(rows, n)),
                    ("view", (_Prev(2), list(own.shape)), {}, lambda: own)]
        if x.dim() == 2:
            return [("t", (w,), {}, w.t), ("mm", (x, _Prev(0)), {}, lambda: own)]
        # no bias: x @ w.t() by matmul's rule, on the t step's result
        transposed = w.t()
        product = _matmul_of(x, transposed, own)
        if product is None:
            return [("t", (w,), {}, w.t), ("matmul", (x, _Prev(0)), {}, lambda: own)]
        return [("t", (w,), {}, lambda: transposed, "default")] + _after_first(product, transposed)
    if name == "batch_norm":   # torch allocates an empty reserve buffer first
        import hookgrad
        values = _aten_values(op, "batch_norm")
        x = values.get("self", values.get("input"))
        empty_kwargs = {"dtype": hookgrad.uint8, "layout": hookgrad.strided, "device": hookgrad.device("cpu")}
        norm_args = (x, values.get("weight"), values.get("bias"), values.get("running_mean"),
                     values.get("running_var"), bool(values.get("training", False)),
                     float(values.get("momentum", 0.1)), float(values.get("eps", 1e-5)))
        return [("empty", ([0],), empty_kwargs, lambda: hookgrad.empty(0, dtype=hookgrad.uint8), "memory_format"),
                ("native_batch_norm", norm_args, {},
                 lambda: (own,) + _batch_norm_statistics(x.detach(), norm_args[5], norm_args[7]), "default")]
    if name == "contiguous":
        if args[0].is_contiguous():
            return []
        import hookgrad
        return [("clone", (args[0],), {"memory_format": hookgrad.contiguous_format}, lambda: own, "default")]
    if name in _CONVERSIONS:
        x = args[0]
        if own is x or own.dtype == x.dtype:
            return []
        return [("_to_copy", (x,), {"dtype": own.dtype}, lambda: own, "default")]
    aten_name = _RENAMED.get(name, name)
    if callable(aten_name):
        aten_name = aten_name(args, kwargs)
    converter = _CONVERTERS.get(name) or _CONVERTERS.get(aten_name)
    if converter is not None:
        steps = converter(op, _aten_values(op, aten_name), own)
        if steps is not None:
            return steps
    laid_out = _aten_calls.lay_out(aten_name, _aten_values(op, aten_name))
    if laid_out is not None:
        overload, aten_args, aten_kwargs = laid_out
        return [(aten_name, aten_args, aten_kwargs, lambda: own, overload)]
    return [(aten_name, args, kwargs, lambda: own)]


_SIGNATURES: dict = {}
# hookgrad's parameters that change no ATen argument when left at these values
_NOT_ATEN = {"inplace": False, "out": None, "_stacklevel": None, "return_indices": False}
# hookgrad's flags that are part of the op's name (relu_, max_pool2d_with_indices), not arguments
_IN_THE_NAME = ("_stacklevel", "return_indices", "inplace")


def _aten_values(op, aten_name):
    """The op's arguments as ATen's ``aten_name`` names its parameters: by name where hookgrad's
    parameter has ATen's name, else by position (hookgrad's first parameter is ATen's ``self``);
    ``*sizes`` as one list."""
    impl = op._call[0]
    signature = _SIGNATURES.get(impl)
    if signature is None:
        signature = _SIGNATURES[impl] = inspect.signature(impl)
    try:
        bound = signature.bind(*op.args, **op.kwargs)
    except TypeError:
        return {}
    signatures = _aten_calls.TABLE.get(aten_name)
    aten_params = [p.name for p in signatures[0].params if not p.keyword_only] if signatures else []
    known = {p.name for s in signatures or () for p in s.params}
    values = {}
    position = 0
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            value = list(value[0]) if len(value) == 1 and isinstance(value[0], (list, tuple)) else list(value)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            values.update(value)
            continue
        if name in _NOT_ATEN and (value is None or value is False or name in _IN_THE_NAME):
            position += 1
            continue
        if name not in known and kind is not inspect.Parameter.KEYWORD_ONLY:
            if position < len(aten_params):
                name = aten_params[position]
            elif position == 0:
                name = "self"
        values[name] = value
        position += 1
    return {k: v for k, v in values.items() if v is not None}


_CONVERSIONS = frozenset(("to", "float", "double", "half", "bfloat16", "int", "long", "bool", "short", "char",
                          "byte", "type", "type_as"))


def _batch_norm_statistics(x, training, eps):
    """The mean and inverse standard deviation per channel that torch's batch norm kernel returns
    beside its result (in training; empty tensors in evaluation, as torch's CPU kernel)."""
    import hookgrad
    if not training:
        return hookgrad.empty(0, dtype=x.dtype), hookgrad.empty(0, dtype=x.dtype)
    dims = [0] + list(range(2, x.dim()))
    mean = x.mean(dims)
    invstd = hookgrad.rsqrt(x.var(dims, unbiased=False) + eps)
    return mean, invstd


def _pool_name(kind):
    def name(args, kwargs):
        return f"{kind}_with_indices"
    return name


def _adaptive_avg(args, kwargs):
    size = args[1] if len(args) > 1 else kwargs.get("output_size")
    sizes = size if isinstance(size, (tuple, list)) else (size,)
    return "mean" if all(s == 1 for s in sizes) else "_adaptive_avg_pool2d"


def _interpolate(args, kwargs):
    x = args[0]
    mode = args[3] if len(args) > 3 else kwargs.get("mode", "nearest")
    if mode == "area":
        return "_adaptive_avg_pool2d" if x.dim() == 4 else "interpolate"
    if mode == "nearest-exact":
        return f"_upsample_nearest_exact{x.dim() - 2}d"
    return f"upsample_{mode}{x.dim() - 2}d"


_CONVERTERS: dict = {}

# hookgrad's op names -> the ATen operator torch's decomposition runs (the common ops; the others
# are dispatched under their own name)
_RENAMED = {
    "flatten": "view", "reshape": "view", "softmax": "_softmax", "log_softmax": "_log_softmax",
    "relu6": "hardtanh", "__getitem__": "select", "contiguous": "clone", "layer_norm": "native_layer_norm",
    "group_norm": "native_group_norm", "pad": "constant_pad_nd",
    "max_pool2d": _pool_name("max_pool2d"), "max_pool1d": "max_pool1d", "max_pool3d": _pool_name("max_pool3d"),
    "max_pool2d_with_indices": "max_pool2d_with_indices", "adaptive_avg_pool2d": _adaptive_avg,
    "matmul": lambda args, kwargs: "mm" if len(args) > 1 and args[0].dim() == 2 and getattr(args[1], "dim", lambda: 0)() == 2
    else "matmul",
    "dropout": "clone", "interpolate": _interpolate,
}


def _dispatch_op(op, inputs, outputs):
    """The op hook: run the active modes over the ATen operators of ``op``."""
    if _DisableTorchDispatch.active():
        return None
    call = _call_mode
    if not _STACK:
        if not _LIVE_WRAPPERS[0] or _dispatch_subclass_among(inputs) is None:
            return None
        call = _call_subclass
    if _is_custom_function(op):
        return None      # torch's modes see the operators its forward runs (reported on their own)
    if str(op) == "dropout" and not (op.args[2] if len(op.args) > 2 else op.kwargs.get("training", True)):
        return None      # torch's dropout in eval mode runs no operator
    steps = _steps(op, outputs)
    if not steps:
        return None
    results: list = []
    replaced: set = set()    # steps whose result a mode changed: the steps using it run for real
    for index, (name, args, kwargs, thunk, *overload) in enumerate(steps):
        uses_replaced = any(p.index in replaced for p in _prevs_in(tuple(args) + tuple(kwargs.values())))
        args = tuple(_resolved(a, results) for a in args)
        if any(isinstance(v, _Prev) for v in kwargs.values()):
            kwargs = {k: _resolved(v, results) for k, v in kwargs.items()}
        if name == _GATHER:
            results.append(args if len(args) > 1 else args[0])
            if uses_replaced:
                replaced.add(index)
            continue
        overload = overload[0] if overload else _overload_name(name, args, kwargs)
        result, returned = _dispatch(name, overload, args, kwargs, None if uses_replaced else thunk, call)
        if uses_replaced or result is not returned:
            replaced.add(index)
        results.append(result)
    result = results[-1]
    if call is _call_subclass:   # the subclass's results are the op's results, as they are
        from ..hooks._ops import Substitute
        return Substitute(result)
    # torch detaches each result its node saves for the backward (relu's, sigmoid's, std's)
    for index in ([] if isinstance(steps, _DetachingSteps) else _saved_outputs(op, outputs)):
        value = result[index] if isinstance(result, (tuple, list)) else result
        output = outputs[index]
        _dispatch("detach", "default", (value,), {}, output.detach, call)
    own = outputs[0] if len(outputs) == 1 else tuple(outputs)
    if result is own or result is None:
        return None
    if isinstance(result, Tensor) and len(outputs) == 1:
        return result
    if isinstance(result, (tuple, list)) and len(result) >= len(outputs):
        # an ATen operator returning more than the op (batch norm's statistics, a loss's total weight)
        kept = tuple(result[:len(outputs)])
        return None if all(a is b for a, b in zip(kept, outputs)) else (kept[0] if len(kept) == 1 else kept)
    raise RuntimeError(f"TorchDispatchMode.__torch_dispatch__ returned {type(result).__name__} for "
                       f"aten.{steps[-1][0]}, whose result is {len(outputs)} tensor(s)")


def _saved_outputs(op, outputs) -> list:
    """The indices of the outputs that the op's node saved."""
    node = getattr(op, "node", None)
    saved = getattr(node, "_saved", None)
    if not saved:
        return []
    # (group norm's statistics, saved as its node's outputs 1 and 2, are no outputs of the op: not detached;
    # an output handed to a pack hook is not detached either: torch's saving detaches only what it keeps itself)
    arrays = [entry.tensor for entry in saved if entry is not None and getattr(entry, "is_output", False)
              and entry.output_nr < len(outputs) and entry.tensor is not None]
    if not arrays:
        return []
    found = [i for i, o in enumerate(outputs) if any(o._ndarray is a for a in arrays)]
    return found or [0]


def _saves_its_output(op) -> bool:
    node = getattr(op, "node", None)
    saved = getattr(node, "_saved", None)
    return bool(saved) and any(entry is not None and getattr(entry, "is_output", False) for entry in saved)


# ---- factories ------------------------------------------------------------------------------------
# the torch.* factories a mode sees (as aten.<name>.default), swapped in while a mode is active
_FACTORIES = ("zeros", "ones", "empty", "full", "rand", "randn", "randint", "randperm", "arange", "linspace",
              "eye", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "tensor")
_ORIGINAL_FACTORIES: dict = {}


def _dispatching_factory(name, factory):
    def factory_seen_by_modes(*args, **kwargs):
        result = factory(*args, **kwargs)
        if not _STACK or _DisableTorchDispatch.active():
            return result
        if name == "tensor":   # torch makes the tensor outside the dispatcher, then lifts it in
            import numpy as np
            import hookgrad
            returned, _ = _dispatch("lift_fresh", "default", (result,), {}, lambda: result)
            lifted = returned if isinstance(returned, Tensor) else result
            if args and isinstance(args[0], np.ndarray):   # then a NumPy array's tensor is copied
                options = {"dtype": result.dtype, "device": hookgrad.device("cpu")}
                returned, _ = _dispatch("_to_copy", "default", (lifted,), options, lambda: lifted)
                lifted = returned if isinstance(returned, Tensor) else lifted
            return lifted
        overload, args, kwargs = _factory_call(name, args, kwargs)
        returned, _ = _dispatch(name, overload, args, kwargs, lambda: result)
        return returned if isinstance(returned, Tensor) else result
    factory_seen_by_modes.__wrapped__ = factory
    for attribute in ("__name__", "__qualname__", "__module__", "__doc__"):
        setattr(factory_seen_by_modes, attribute, getattr(factory, attribute, None))
    return factory_seen_by_modes


def _factory_call(name, args, kwargs):
    """``(overload, args, kwargs)`` of a factory as torch's dispatcher passes them: the size as one
    list, the options as keywords (``device`` and ``pin_memory`` always, the others when given)."""
    import hookgrad
    options = {k: kwargs[k] for k in ("dtype", "layout") if kwargs.get(k) is not None}
    if name.endswith("_like"):
        if kwargs.get("device") is not None:
            options["device"] = hookgrad.device(kwargs["device"])
        options["pin_memory"] = False
        if kwargs.get("memory_format") is not None:
            options["memory_format"] = kwargs["memory_format"]
        return "default", tuple(args), options
    options["device"] = hookgrad.device(kwargs.get("device") or "cpu")
    options["pin_memory"] = bool(kwargs.get("pin_memory", False))
    overload = "default"
    if name in ("zeros", "ones", "empty", "rand", "randn", "full"):
        fill = ()
        if name == "full":
            fill, args = (args[1] if len(args) > 1 else kwargs.get("fill_value"),), args[:1]
        size = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple)) else args
        args = ([int(n) for n in kwargs.get("size", size)],) + fill
        overload = "memory_format" if name == "empty" else "default"
    elif name == "eye":
        overload = "m" if len(args) > 1 else "default"
    elif name == "arange":
        overload = {1: "default", 2: "start", 3: "start_step"}.get(len(args), "default")
    elif name == "randint":
        size = [int(n) for n in args[-1]] if args and isinstance(args[-1], (list, tuple)) else kwargs.get("size")
        args = tuple(args[:-1]) + ((list(size),) if size is not None else ())
        overload = "low" if len(args) == 3 else "default"
    return overload, tuple(args), options


def _swap_factories(on: bool) -> None:
    import hookgrad
    if on and not _ORIGINAL_FACTORIES:
        for name in _FACTORIES:
            factory = getattr(hookgrad, name, None)
            if factory is not None:
                _ORIGINAL_FACTORIES[name] = factory
                setattr(hookgrad, name, _dispatching_factory(name, factory))
    elif not on:
        for name, factory in _ORIGINAL_FACTORIES.items():
            setattr(hookgrad, name, factory)
        _ORIGINAL_FACTORIES.clear()


def _backward_ran(node, grad_inputs, grad_outputs):
    """The op backward hook: run the active modes over the ATen operators torch's formula for
    ``node`` runs (a node without a known formula is announced by a warning, once per mode). What a
    mode returns for the operator that makes an input's gradient replaces that gradient."""
    if not _STACK or _DisableTorchDispatch.active():
        return None
    plan = _BACKWARD_STEPS.get(type(node).__name__)
    if plan is None and hasattr(node, "_forward_cls"):
        return None     # a custom Function's backward: the ops it runs are dispatched as they run
    if plan is not None and _saved_through_hooks(node):
        # reading them again would run the unpack hooks (checkpoint's recomputation) a second time
        _warn_undispatched(node, "its saved tensors are held by saved-tensor hooks")
        return None
    if plan is None:
        _warn_undispatched(node, "hookgrad dispatches the backward operators of the common nodes only")
        return None
    grad = grad_outputs[0] if grad_outputs else None
    if grad is None:
        return None
    import hookgrad
    with hookgrad.no_grad():
        steps = plan(node, grad, grad_inputs)
        results: list = []
        replaced = list(grad_inputs)
        changed = False
        for name, overload, args, thunk, grad_index, *kwargs in steps:
            args = tuple(_resolved(a, results) for a in args)
            kwargs = kwargs[0] if kwargs else {}
            result, _ = _dispatch(name, overload, args, kwargs, thunk)
            results.append(result)
            # a kernel computing several gradients gives them in the order ``grad_index`` names
            pairs = zip(grad_index, result) if isinstance(grad_index, tuple) and isinstance(result, (tuple, list)) \
                else ((grad_index, result),)
            for index, value in pairs:
                if index is not None and isinstance(value, Tensor) and value is not replaced[index]:
                    replaced[index] = value
                    changed = True
                if index is not None and isinstance(value, Tensor):
                    if len(_made_by) > 512:     # gradients of inputs that are no leaves: gone by now
                        for key in [k for k, (ref, _) in _made_by.items() if ref() is None]:
                            del _made_by[key]
                    _made_by[id(value)] = (weakref.ref(value), name)
        release = getattr(steps, "release", None)
        if release is not None:
            release()
    return tuple(replaced) if changed else None


def _warn_undispatched(node, why):
    for mode in _STACK:
        if not mode._warned_backward:
            mode._warned_backward = True
            warnings.warn(f"{type(mode).__name__}: {why}; {type(node).__name__}'s are not dispatched to modes",
                          UserWarning, stacklevel=3)


def _saved_through_hooks(node) -> bool:
    """Whether the node's saved tensors went through pack hooks (reading them runs the unpack hook)."""
    saved = getattr(node, "_saved", None)
    return bool(saved) and any(entry is not None and getattr(entry, "tensor", True) is None for entry in saved)


def _saved(node, name):
    return getattr(node, "_saved_" + name)


def _needs(grad_inputs, index) -> bool:
    return index < len(grad_inputs) and grad_inputs[index] is not None


def _addmm_steps(node, grad, grad_inputs):
    """torch's addmm backward: mat1's gradient ``grad @ mat2.t()``; mat2's ``mat1.t() @ grad``, or
    ``(grad.t() @ mat1).t()`` for a mat2 laid out transposed (a Linear's ``weight.t()``); the bias's
    ``grad.sum(0, keepdim=True)`` viewed as the bias."""
    steps = []
    mat1, mat2 = _saved(node, "mat1"), _saved(node, "mat2")
    if _needs(grad_inputs, 1):
        steps += [("t", "default", (mat2,), lambda: mat2.t(), None),
                  ("mm", "default", (grad, _Prev(len(steps))), lambda: grad_inputs[1], 1)]
    if _needs(grad_inputs, 2):
        steps += _mat2_steps(node, grad, mat1, grad_inputs, 2, len(steps))
    if _needs(grad_inputs, 0):
        first = len(steps)
        bias_grad = grad_inputs[0]
        steps += [("sum", "dim_IntList", (grad, [0], True), lambda: bias_grad.reshape(1, -1), None),
                  ("view", "default", (_Prev(first), list(bias_grad.shape)), lambda: bias_grad, 0)]
    return steps


def _mat2_steps(node, grad, mat1, grad_inputs, index, first):
    """The second matrix's gradient: ``mat1.t() @ grad``, or ``(grad.t() @ mat1).t()`` when that
    matrix is laid out transposed (a Linear's ``weight.t()``), as torch's mm_mat2_backward."""
    strides, sizes = tuple(_saved(node, "mat2_sym_strides")), tuple(_saved(node, "mat2_sym_sizes"))
    if len(strides) == 2 and strides[0] == 1 and sizes[0] > 1:
        return [("t", "default", (grad,), lambda: grad.t(), None),
                ("mm", "default", (_Prev(first), mat1), lambda: grad_inputs[index].t(), None),
                ("t", "default", (_Prev(first + 1),), lambda: grad_inputs[index], index)]
    return [("t", "default", (mat1,), lambda: mat1.t(), None),
            ("mm", "default", (_Prev(first), grad), lambda: grad_inputs[index], index)]


def _mm_steps(node, grad, grad_inputs):
    steps = []
    mat1, mat2 = _saved(node, "self"), _saved(node, "mat2")
    if _needs(grad_inputs, 0):
        steps += [("t", "default", (mat2,), lambda: mat2.t(), None),
                  ("mm", "default", (grad, _Prev(0)), lambda: grad_inputs[0], 0)]
    if _needs(grad_inputs, 1):
        steps += _mat2_steps(node, grad, mat1, grad_inputs, 1, len(steps))
    return steps


def _pow_steps(node, grad, grad_inputs):
    exponent, x = _saved(node, "exponent"), _saved(node, "self")
    if exponent == 0:
        return [("zeros_like", "default", (x,), lambda: grad_inputs[0], 0)]
    return [("pow", "Tensor_Scalar", (x, exponent - 1), lambda: x.pow(exponent - 1), None),
            ("mul", "Scalar", (_Prev(0), exponent), lambda: x.pow(exponent - 1) * exponent, None),
            ("mul", "Tensor", (grad, _Prev(1)), lambda: grad_inputs[0], 0)]


def _mean_steps(node, grad, grad_inputs):
    sizes, numel = list(_saved(node, "self_sym_sizes")), _saved(node, "self_sym_numel")
    return [("expand", "default", (grad, sizes), lambda: grad.expand(sizes), None),
            ("div", "Scalar", (_Prev(0), numel), lambda: grad_inputs[0], 0)]


def _sum_steps(node, grad, grad_inputs):
    sizes = list(_saved(node, "self_sym_sizes"))
    return [("expand", "default", (grad, sizes), lambda: grad_inputs[0], 0)]


def _relu_steps(node, grad, grad_inputs):
    result = _saved(node, "result")
    return [("detach", "default", (result,), lambda: result, None),   # unpacking the saved result
            ("threshold_backward", "default", (grad, _Prev(0), 0), lambda: grad_inputs[0], 0)]


def _mse_steps(node, grad, grad_inputs):
    x, target, reduction = _saved(node, "self"), _saved(node, "target"), _saved(node, "reduction")
    return [("mse_loss_backward", "default", (grad, x, target, reduction), lambda: grad_inputs[0], 0)]


def _t_steps(node, grad, grad_inputs):
    return [("t", "default", (grad,), lambda: grad_inputs[0], 0)]


def _accumulate_steps(node, grad, grad_inputs):
    """A leaf's first gradient is taken as it is (torch detaches it) when nothing else holds that
    tensor and it is laid out as the leaf; else copied into a fresh tensor laid out as the leaf
    (``new_empty_strided``, ``copy_``); a later one is added in place."""
    import numpy as np
    variable = node.variable
    current = variable.grad
    if current is None:
        return []
    taken = current._ndarray is grad._ndarray
    first = taken or (current.shape == grad.shape and np.array_equal(current._ndarray, grad._ndarray))
    if not first:
        return [("add_", "Tensor", (current, grad), lambda: current, None)]
    made = _made_by.pop(id(grad), None)
    made_by_view = made is not None and made[0]() is grad and made[1] in _VIEW_OPERATORS
    # torch's gradient is laid out as its last operator makes it: a view keeps its strides, the
    # others give a fresh dense tensor (hookgrad's may be a broadcast view where torch's is not)
    laid_out = _laid_out_as(grad, variable) if made_by_view or made is None else True
    if taken or (sys.getrefcount(grad) <= _FRESH_GRADIENT_REFS and laid_out):
        return [("detach", "default", (grad,), lambda: current, None)]
    import hookgrad
    strides = [int(s) for s in current.stride()]
    options = {"dtype": grad.dtype, "layout": hookgrad.strided, "device": hookgrad.device("cpu")}
    return [("new_empty_strided", "default", (grad, list(grad.shape), strides), lambda: current, None, options),
            ("copy_", "default", (_Prev(0), grad), lambda: current, None)]


# the operator that made each gradient a backward plan gave (weakly held, looked up by the leaf's
# accumulation), and the operators whose result is a view of their input
_made_by: dict = {}
_VIEW_OPERATORS = frozenset(("expand", "t", "transpose", "permute", "view", "select", "slice", "squeeze",
                             "unsqueeze", "alias", "diagonal", "as_strided", "unfold", "_unsafe_view"))


# the references to a gradient that only the engine holds, counted from inside the step planning:
# the engine's buffer, the hook's grad_outputs, the two frames' locals and getrefcount's argument
_FRESH_GRADIENT_REFS = 6


def _laid_out_as(grad, variable) -> bool:
    """torch's layout contract for adopting a gradient: strided as the (dense) leaf, else contiguous."""
    from .._memory_format import is_dense
    if is_dense(variable._ndarray):
        return all(g == v for g, v, n in zip(grad.stride(), variable.stride(), variable.shape) if n > 1)
    return grad.is_contiguous()


# torch's formulas for the common nodes, as the ATen operators they run (name, overload, args,
# result, which input's gradient it is); the others are announced, not dispatched
_BACKWARD_STEPS = {"AddmmBackward0": _addmm_steps, "MmBackward0": _mm_steps, "PowBackward0": _pow_steps,
                   "MeanBackward0": _mean_steps, "SumBackward0": _sum_steps, "ReluBackward0": _relu_steps,
                   "MseLossBackward0": _mse_steps, "TBackward0": _t_steps, "AccumulateGrad": _accumulate_steps}


# ---- composite ops, as the ATen operators torch's decomposition runs ----------------------------
_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _spread(value, count):
    return [int(value)] * count if isinstance(value, int) else [int(v) for v in value]


def _conv_steps(op, values, own):
    """conv{1,2,3}d and conv_transpose{1,2,3}d: one ``aten.convolution`` with all nine arguments; an
    unbatched input is unsqueezed first and the result squeezed."""
    name = str(op)
    transposed = name.startswith("conv_transpose")
    x, weight = values.get("input", values.get("self")), values.get("weight")
    if not isinstance(x, Tensor) or not isinstance(weight, Tensor):
        return None
    dims = weight.dim() - 2
    padding = values.get("padding", 0)
    dilation = _spread(values.get("dilation", 1), dims)
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        else:
            total = [d * (k - 1) for d, k in zip(dilation, weight.shape[2:])]
            if any(t % 2 for t in total):
                return None      # torch pads the input first: not described here
            padding = [t // 2 for t in total]
    args = [x, weight, values.get("bias"), _spread(values.get("stride", 1), dims), _spread(padding, dims),
            dilation, transposed, _spread(values.get("output_padding", 0), dims), int(values.get("groups", 1))]
    if x.dim() == dims + 2:
        return [("convolution", tuple(args), {}, lambda: own, "default")]
    batched = lambda: x.unsqueeze(0)
    return [("unsqueeze", (x, 0), {}, batched, "default"),
            ("convolution", (_Prev(0),) + tuple(args[1:]), {}, lambda: own.unsqueeze(0), "default"),
            ("squeeze", (_Prev(1), 0), {}, lambda: own, "dim")]


def _softmax_steps(op, values, own):
    name = "_log_softmax" if str(op) == "log_softmax" else "_softmax"
    x, dim = values.get("self"), values.get("dim")
    if dim is None or values.get("dtype") is not None:
        return None
    return [(name, (x, dim, False), {}, lambda: own, "default")]


def _layer_norm_steps(op, values, own):
    x = values.get("self", values.get("input"))
    args = (x, list(values["normalized_shape"]), values.get("weight"), values.get("bias"),
            float(values.get("eps", 1e-5)))
    return [("native_layer_norm", args, {}, lambda: own, "default")]


def _group_norm_steps(op, values, own):
    x = values.get("self", values.get("input"))
    n, c = x.shape[0], x.shape[1]
    spatial = 1
    for size in x.shape[2:]:
        spatial *= size
    args = (x, values.get("weight"), values.get("bias"), n, c, spatial, values["num_groups"],
            float(values.get("eps", 1e-5)))
    node = getattr(op, "node", None)
    if node is None or not hasattr(node, "_saved_result1"):
        return [("native_group_norm", args, {}, lambda: own, "default")]
    # the kernel also returns the groups' mean and inverse deviation; the node saves them (detached)
    mean, rstd = lambda: _saved(node, "result1"), lambda: _saved(node, "result2")
    return [("native_group_norm", args, {}, lambda: (own, mean(), rstd()), "default"),
            ("detach", (_Prev(0, 1),), {}, mean, "default"),
            ("detach", (_Prev(0, 2),), {}, rstd, "default"),
            (_GATHER, (_Prev(0, 0),), {}, None, None)]


def _view_of_result(op, values, own):
    """flatten, reshape, unflatten: ``aten.view`` to the result's shape when the input can be viewed
    so; else torch copies first (``clone`` then ``_unsafe_view``)."""
    x = values.get("self")
    if not isinstance(x, Tensor):
        return None
    shape = list(own.shape)
    if str(op) == "flatten" and x.dim() == own.dim() and x.dim() <= 1:
        return [("alias" if x.dim() == 1 else "view", (x,) if x.dim() == 1 else (x, shape), {}, lambda: own, "default")]
    if own._base_value is not None or own is x or own.data_ptr() == x.data_ptr():
        if str(op) == "reshape":   # torch views with the shape as given (-1 included)
            given = _given(op).get("shape", ())
            shape = list(given[0] if len(given) == 1 and isinstance(given[0], (list, tuple)) else given)
        return [("view", (x, shape), {}, lambda: own, "default")]
    import hookgrad
    return [("clone", (x,), {"memory_format": hookgrad.contiguous_format}, lambda: x.contiguous(), "default"),
            ("_unsafe_view", (_Prev(0), shape), {}, lambda: own, "default")]


def _norm_steps(op, values, own):
    x = values.get("self")
    p = values.get("p", 2)
    if isinstance(p, str) or not isinstance(x, Tensor):
        return None
    dim = values.get("dim")
    laid_out = _aten_calls.lay_out("linalg_vector_norm", {"self": x, "ord": p, "dim": dim,
                                                         "keepdim": values.get("keepdim", False)})
    overload, args, kwargs = laid_out
    return [("linalg_vector_norm", args, kwargs, lambda: own, overload)]


def _dropout_steps(op, values, own):
    """Training-mode dropout: a mask drawn into an empty tensor, scaled, multiplied in."""
    x = values.get("self")
    p = float(values.get("p", 0.5))
    if p == 0.0:
        return []        # torch's dropout runs no operator then
    if not isinstance(x, Tensor) or p == 1.0 or op.inplace:
        return None
    import hookgrad
    keep = 1 - p

    kept = lambda: (own != 0).to(x.dtype)   # where x is 0 the draw is unknown: 0 then
    return [("empty_like", (x,), {}, lambda: hookgrad.empty_like(x), "default"),
            ("bernoulli_", (_Prev(0), keep), {}, kept, "float"),
            ("div_", (_Prev(1), keep), {}, lambda: kept() / keep, "Scalar"),
            ("mul", (x, _Prev(2)), {}, lambda: own, "Tensor")]


def _loss_steps(op, values, own):
    """The losses with a ``reduction``: ATen takes it as torch's enum (none 0, mean 1, sum 2)."""
    name = str(op)
    values = dict(values)
    reduction = values.get("reduction", "mean")
    values.pop("size_average", None)
    values.pop("reduce", None)
    if not isinstance(reduction, str):
        return None
    values["reduction"] = _REDUCTIONS[reduction]
    if name == "smooth_l1_loss" and values.get("beta", 1.0) == 0:
        return None
    laid_out = _aten_calls.lay_out(name, values)
    if laid_out is None:
        return None
    overload, args, kwargs = laid_out
    return [(name, args, kwargs, lambda: own, overload)]


def _cross_entropy_steps(op, values, own):
    """Class indices, no label smoothing: ``_log_softmax`` over the class dim, then ``nll_loss_forward``
    (``nll_loss2d_forward`` for a 4-D input)."""
    x, target = values.get("self"), values.get("target")
    reduction = values.get("reduction", "mean")
    if values.get("label_smoothing", 0.0) and isinstance(x, Tensor) and isinstance(target, Tensor) \
            and not target.dtype.is_floating_point and x.dim() == 2 and reduction in _REDUCTIONS \
            and values.get("size_average") is None and values.get("reduce") is None:
        return _smoothed_cross_entropy_steps(x, target, values, own)
    if not isinstance(x, Tensor) or not isinstance(target, Tensor) or target.dtype.is_floating_point \
            or values.get("label_smoothing", 0.0) or values.get("size_average") is not None \
            or values.get("reduce") is not None or x.dim() not in (1, 2, 4):
        return None
    import hookgrad
    dim = 0 if x.dim() == 1 else 1
    log_probs = lambda: hookgrad.log_softmax(x, dim)
    nll = "nll_loss2d_forward" if x.dim() == 4 else "nll_loss_forward"
    weight_sum = lambda: (own, hookgrad.tensor(0.0, dtype=own.dtype))
    return [("_log_softmax", (x, dim, False), {}, log_probs, "default"),
            ("detach", (_Prev(0),), {}, log_probs, "default"),
            (nll, (_Prev(0), target, values.get("weight"), _REDUCTIONS[reduction], values.get("ignore_index", -100)),
             {}, weight_sum, "default")]


def _smoothed_cross_entropy_steps(x, target, values, own):
    """Class indices with label smoothing (a batch of rows): torch's ``_log_softmax`` and
    ``nll_loss_forward``, then the smoothing term (the negated sum of the log-probabilities, weighted
    per class when a weight is given, zero where the target is ignored) reduced as asked, and
    ``(1 - smoothing) * nll + term * smoothing / classes``."""
    import hookgrad
    from ..nn import functional as F
    weight, ignore_index = values.get("weight"), values.get("ignore_index", -100)
    reduction, smoothing = values.get("reduction", "mean"), float(values["label_smoothing"])
    classes = x.shape[1]
    cache: dict = {}

    def value(key):
        if not cache:
            log_probs = F.log_softmax(x, 1)
            nll = F.nll_loss(log_probs, target, weight, reduction=reduction, ignore_index=ignore_index)
            ignored = target == ignore_index
            weights = None if weight is None else weight.gather(0, target.masked_fill(ignored, 0)).masked_fill(
                ignored, 0)
            total = weights.sum() if weights is not None else (~ignored).sum().to(x.dtype)
            weighted = log_probs if weight is None else log_probs * weight.view(1, classes)
            term = (-weighted.sum(1)).masked_fill(ignored, 0.0)
            reduced = {"mean": term.sum() / total if weights is not None else term.sum() / (~ignored).sum(),
                       "sum": term.sum(), "none": term}[reduction]
            cache.update(log_probs=log_probs, nll=(nll, total), weighted=weighted, summed=weighted.sum(1),
                         negated=-weighted.sum(1), ignored=ignored, term=term, reduced=reduced,
                         kept=~ignored, count=(~ignored).sum(), weights=weights,
                         safe_target=target.masked_fill(ignored, 0))
        return cache[key]

    steps: list = []

    def step(name, args, key, overload="default", thunk=None):
        steps.append((name, args, {}, thunk or (lambda: value(key)), overload))
        return _Prev(len(steps) - 1)
    log_probs = step("_log_softmax", (x, 1, False), "log_probs")
    step("detach", (log_probs,), "log_probs")
    nll = step("nll_loss_forward", (log_probs, target, weight, _REDUCTIONS[reduction], ignore_index), "nll")
    summand = log_probs
    if weight is not None:
        row = step("view", (weight, [1, classes]), None, thunk=lambda: weight.view(1, classes))
        summand = step("mul", (log_probs, row), "weighted", "Tensor")
    summed = step("sum", (summand, [1]), "summed", "dim_IntList")
    term = step("neg", (summed,), "negated")
    ignored = step("eq", (target, ignore_index), "ignored", "Scalar")
    term = step("masked_fill_", (term, ignored, 0.0), "term", "Scalar")
    reduced = term
    if reduction == "mean" and weight is None:
        kept = step("bitwise_not", (ignored,), "kept")
        count = step("sum", (kept,), "count")
        reduced = step("div", (step("sum", (term,), None, thunk=lambda: value("term").sum()), count), "reduced",
                       "Tensor")
    elif reduction == "mean":
        safe = step("masked_fill", (target, ignored, 0), "safe_target", "Scalar")
        picked = step("gather", (weight, 0, safe), None, thunk=lambda: weight.gather(0, value("safe_target")))
        picked = step("masked_fill_", (picked, ignored, 0), "weights", "Scalar")
        total = step("sum", (picked,), None, thunk=lambda: value("weights").sum())
        reduced = step("div", (step("sum", (term,), None, thunk=lambda: value("term").sum()), total), "reduced",
                       "Tensor")
    elif reduction == "sum":
        reduced = step("sum", (term,), "reduced")
    smoothed = step("mul", (reduced, smoothing / classes), None, "Scalar",
                    thunk=lambda: value("reduced") * (smoothing / classes))
    kept_nll = step("mul", (_Prev(nll.index, 0), 1 - smoothing), None, "Scalar",
                    thunk=lambda: value("nll")[0] * (1 - smoothing))
    step("add", (kept_nll, smoothed), None, "Tensor", thunk=lambda: own)
    return steps


for _name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
    _CONVERTERS[_name] = _conv_steps
_CONVERTERS.update({"_softmax": _softmax_steps, "_log_softmax": _softmax_steps, "native_layer_norm": _layer_norm_steps,
                    "native_group_norm": _group_norm_steps,
                    "flatten": _view_of_result, "reshape": _view_of_result, "unflatten": _view_of_result,
                    "norm": _norm_steps, "dropout": _dropout_steps,
                    "cross_entropy": _cross_entropy_steps})


def _l1_loss_steps(op, values, own):
    """torch computes l1_loss in ATen operators: ``sub``, ``abs``, then the reduction."""
    x, target = values.get("self"), values.get("target")
    reduction = values.get("reduction", "mean")
    if not isinstance(x, Tensor) or not isinstance(target, Tensor) or x.shape != target.shape \
            or reduction not in _REDUCTIONS:
        return None
    steps = [("sub", (x, target), {}, lambda: x - target, "Tensor"),
             ("abs", (_Prev(0),), {}, lambda: (x - target).abs(), "default")]
    if reduction == "none":
        steps[-1] = steps[-1][:3] + (lambda: own, "default")
        return steps
    return steps + [(reduction, (_Prev(1),), {}, lambda: own, "default")]


_LAST = 9223372036854775807   # torch's slice end for an open end


def _getitem_steps(op, values, own):
    """``x[index]`` as torch's indexing runs it: ``select`` for an int, ``slice`` for a slice (a full
    one inside a tuple is skipped), ``unsqueeze`` for None, ``alias`` for ``...``, then one
    ``index.Tensor`` for the tensor (and list) indices, a list first made a tensor (``lift_fresh``)."""
    import hookgrad
    x, index = op.args[0], op.args[1]
    if index is Ellipsis:
        return [("alias", (x,), {}, lambda: own, "default")]
    single = not isinstance(index, tuple)
    items = [index] if single else list(index)
    if any(isinstance(i, bool) or not isinstance(i, (int, slice, Tensor, list, type(None), type(Ellipsis)))
           for i in items) or sum(i is Ellipsis for i in items) > 1:
        return None
    consumed = sum(i.dim() if isinstance(i, Tensor) and i.dtype == hookgrad.bool else
                   0 if i is None or i is Ellipsis else 1 for i in items)
    expanded = []
    for i in items:
        expanded.extend([slice(None)] * (x.dim() - consumed) if i is Ellipsis else [i])
    steps: list = []
    basic: list = []          # the index applied so far (ints, slices, None): its result is a view of x
    advanced: list = []       # per dim of the result so far: None or the tensor indexing it
    dim = 0

    def current():
        return _Prev(len(steps) - 1) if steps else x

    def view_of(prefix):
        return lambda: x[tuple(prefix)]
    for i in expanded:
        if isinstance(i, int):
            steps.append(("select", (current(), dim, i), {}, view_of(basic + [i]), "int"))
            basic.append(i)
        elif i is None:
            steps.append(("unsqueeze", (current(), dim), {}, view_of(basic + [None]), "default"))
            basic.append(None)
            advanced.append(None)
            dim += 1
        elif isinstance(i, slice):
            full = i.start in (None, 0) and i.stop is None and i.step in (None, 1)
            if not full or single:
                start = 0 if i.start is None else i.start
                stop = _LAST if i.stop is None else i.stop
                step = 1 if i.step is None else i.step
                args = (current(), dim, start, stop) + ((step,) if step != 1 else ())
                steps.append(("slice", args, {}, view_of(basic + [i]), "Tensor"))
            basic.append(i)
            advanced.append(None)
            dim += 1
        else:
            if isinstance(i, list):
                made = hookgrad.tensor(i)
                steps_before = len(steps)
                steps.append(("lift_fresh", (made,), {}, lambda made=made: made, "default"))
                i = _Prev(steps_before)
                width = 1
            else:
                width = i.dim() if i.dtype == hookgrad.bool else 1
            advanced.append(i)
            basic.extend([slice(None)] * width)
            dim += width
    if not any(a is not None for a in advanced):
        if not steps:
            return [("alias", (x,), {}, lambda: own, "default")]
        steps[-1] = steps[-1][:3] + (lambda: own, steps[-1][4])
        return steps
    while advanced and advanced[-1] is None:
        advanced.pop()
    # the tensor indices apply to the view the others made
    source = [s for s in steps if s[0] != "lift_fresh"]
    target = _Prev(steps.index(source[-1])) if source else x
    steps.append(("index", (target, advanced), {}, lambda: own, "Tensor"))
    return steps


_CONVERTERS["__getitem__"] = _getitem_steps


def _can_view(x, shape) -> bool:
    try:
        x.view(shape)
    except RuntimeError:
        return False
    return True


def _reshape_steps(source, x, shape, steps):
    """``reshape`` of ``x`` (an earlier step's result ``source``) as the ATen operators it runs: a
    ``view`` when it can be one, else ``clone`` then ``_unsafe_view``."""
    import hookgrad
    if _can_view(x, shape):
        steps.append(("view", (source, list(shape)), {}, lambda: x.view(shape), "default"))
    else:
        steps.append(("clone", (source,), {"memory_format": hookgrad.contiguous_format}, lambda: x.contiguous(),
                      "default"))
        steps.append(("_unsafe_view", (_Prev(len(steps) - 1), list(shape)), {}, lambda: x.reshape(shape), "default"))
    return _Prev(len(steps) - 1)


def _matmul_steps(op, values, own):
    """``matmul`` as torch's rule runs it: ``dot``, ``mv``, ``mm``; a vector on the left unsqueezed
    into ``mm``; a batch on the left of a matrix or vector folded into one ``mm``/``mv``; two batches
    broadcast (``expand``), reshaped and multiplied by ``bmm``. Others: not described (None)."""
    a, b = op.args[0], op.args[1] if len(op.args) > 1 else values.get("other")
    return _matmul_of(a, b, own)


def _matmul_of(a, b, own):
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        return None
    da, db = a.dim(), b.dim()
    if da == 1 and db == 1:
        return [("dot", (a, b), {}, lambda: own, "default")]
    if da == 2 and db == 1:
        return [("mv", (a, b), {}, lambda: own, "default")]
    if da == 2 and db == 2:
        return [("mm", (a, b), {}, lambda: own, "default")]
    if da == 1 and db == 2:
        return [("unsqueeze", (a, 0), {}, lambda: a.unsqueeze(0), "default"),
                ("mm", (_Prev(0), b), {}, lambda: own.unsqueeze(0), "default"),
                ("squeeze", (_Prev(1), 0), {}, lambda: own, "dim")]
    steps: list = []
    if da >= 3 and db in (1, 2):
        rows = 1
        for size in a.shape[:-1]:
            rows *= size
        folded = _reshape_steps(a, a, [rows, a.shape[-1]], steps)
        flat = own.reshape(rows, -1) if db == 2 else own.reshape(rows)
        steps.append(("mm" if db == 2 else "mv", (folded, b), {}, lambda: flat, "default"))
        steps.append(("_unsafe_view", (_Prev(len(steps) - 1), list(own.shape)), {}, lambda: own, "default"))
        return steps
    if da >= 3 and db >= 3:
        batch = list(own.shape[:-2])
        count = 1
        for size in batch:
            count *= size
        operands = []
        for x in (a, b):
            expanded_shape = batch + list(x.shape[-2:])
            steps.append(("expand", (x, expanded_shape), {}, lambda x=x, s=expanded_shape: x.expand(s), "default"))
            expanded = x.expand(expanded_shape)
            operands.append(_reshape_steps(_Prev(len(steps) - 1), expanded, [count] + list(x.shape[-2:]), steps))
        flat = own.reshape([count] + list(own.shape[-2:]))
        steps.append(("bmm", tuple(operands), {}, lambda: flat, "default"))
        steps.append(("_unsafe_view", (_Prev(len(steps) - 1), list(own.shape)), {}, lambda: own, "default"))
        return steps
    return None


_CONVERTERS["matmul"] = _matmul_steps


def _embedding_steps(op, values, own):
    """F.embedding(input, weight): ATen's ``embedding`` takes the weight first."""
    given = _given(op)
    indices, weight = given.get("input"), given.get("weight")
    values = given
    if not isinstance(indices, Tensor) or not isinstance(weight, Tensor) or values.get("max_norm") is not None:
        return None
    padding_idx = values.get("padding_idx")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += weight.shape[0]
    laid_out = _aten_calls.lay_out("embedding", {
        "weight": weight, "indices": indices, "padding_idx": -1 if padding_idx is None else padding_idx,
        "scale_grad_by_freq": bool(values.get("scale_grad_by_freq", False)), "sparse": bool(values.get("sparse", False))})
    overload, args, kwargs = laid_out
    return [("embedding", args, kwargs, lambda: own, overload)]


_CONVERTERS["embedding"] = _embedding_steps
_CONVERTERS["l1_loss"] = _l1_loss_steps
for _name in ("mse_loss", "huber_loss", "smooth_l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
              ):
    _CONVERTERS[_name] = _loss_steps


def _given(op) -> dict:
    """The op's arguments by hookgrad's parameter names, the defaults filled in."""
    impl = op._call[0]
    signature = _SIGNATURES.get(impl)
    if signature is None:
        signature = _SIGNATURES[impl] = inspect.signature(impl)
    bound = signature.bind(*op.args, **op.kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _one(name, args, kwargs, own, overload="default"):
    return [(name, tuple(args), kwargs, lambda: own, overload)]


def _variance_steps(op, values, own):
    """var, std, var_mean, std_mean: ATen's ``.correction`` overload; a dim makes torch pass the
    correction (1 unless given), ``unbiased`` becomes a correction of 1 or 0."""
    given = _given(op)
    x, dim = given.get("x", given.get("input")), given.get("dim")
    if not isinstance(x, Tensor):
        return None
    correction, unbiased = given.get("correction"), given.get("unbiased")
    if correction is None and unbiased is not None:
        correction = 1 if unbiased else 0
    elif correction is None and dim is not None:
        correction = 1
    kwargs = {}
    if correction is not None:
        kwargs["correction"] = correction
    if given.get("keepdim"):
        kwargs["keepdim"] = True
    args = (x,) if dim is None else (x, _spread(dim, 1))
    return _one(str(op), args, kwargs, own, "correction")


def _defaults_filled(op, values, own):
    """Functions whose torch Python code passes every argument on to ATen (``F.hardtanh`` passes
    ``-1.0`` and ``1.0``, ``F.elu`` its alpha): their defaults reach the mode."""
    given = _given(op)
    name = str(op)
    base = name.rstrip("_")
    x = given.get("input", given.get("x"))
    if base == "hardtanh":
        args = (x, given["min_val"], given["max_val"])
    elif base == "relu6":
        return _one("hardtanh_" if name.endswith("_") else "hardtanh", (x, 0, 6), {}, own)
    elif base == "elu":
        args = (x, given["alpha"])
    elif base == "selu":
        args = (x, 1.6732632423543772, 1.0507009873554805)
        return _one("elu_" if name.endswith("_") else "elu", args, {}, own)
    else:
        return None
    return _one(name, args, {}, own)


def _pad_steps(op, values, own):
    given = _given(op)
    x, pad, mode = given.get("input", given.get("x")), list(given.get("pad")), given.get("mode", "constant")
    if mode == "constant":
        value = given.get("value")
        return _one("constant_pad_nd", (x, pad, 0.0 if value is None else value), {}, own)
    if mode in ("reflect", "replicate"):
        kind = "reflection" if mode == "reflect" else "replication"
        return _one(f"{kind}_pad{len(pad) // 2}d", (x, pad), {}, own)
    return None


def _pool1d_steps(op, values, own):
    """1-d pools run as their 2-d kernel over an unsqueezed height of 1, then squeezed."""
    given = _given(op)
    name = str(op)
    x = given.get("input", given.get("x"))
    if not isinstance(x, Tensor):
        return None

    def one_row(value):
        return [1, value] if isinstance(value, int) else [1] + [int(v) for v in value]
    if name.startswith("adaptive_avg"):
        kernel, args = "_adaptive_avg_pool2d", (one_row(given["output_size"]),)
        values_of = lambda: own.unsqueeze(-2)
    elif name.startswith("max_pool1d"):
        kernel_size = given["kernel_size"]
        stride = given.get("stride")
        stride = kernel_size if stride in (None, [], ()) else stride
        args = (one_row(kernel_size), one_row(stride), [0] + one_row(given.get("padding", 0))[1:],
                one_row(given.get("dilation", 1)), bool(given.get("ceil_mode", False)))
        kernel = "max_pool2d_with_indices"
        with_indices = _with_indices(op, own)
        values_of = lambda: tuple(o.unsqueeze(-2) for o in with_indices())
    elif name.startswith("avg_pool1d"):
        kernel_size = given["kernel_size"]
        stride = given.get("stride")
        stride = kernel_size if stride in (None, [], ()) else stride
        args = (one_row(kernel_size), one_row(stride), [0] + one_row(given.get("padding", 0))[1:],
                bool(given.get("ceil_mode", False)), bool(given.get("count_include_pad", True)))
        kernel = "avg_pool2d"
        values_of = lambda: own.unsqueeze(-2)
    else:
        return None
    laid_out = _aten_calls.lay_out(kernel, dict(zip([p.name for p in _aten_calls.TABLE[kernel][0].params],
                                                    (x.unsqueeze(-2),) + args)))
    overload, kernel_args, kernel_kwargs = laid_out
    steps = [("unsqueeze", (x, -2), {}, lambda: x.unsqueeze(-2), "default"),
             (kernel, (_Prev(0),) + kernel_args[1:], kernel_kwargs, values_of, overload)]
    if kernel != "max_pool2d_with_indices":
        steps.append(("squeeze", (_Prev(1), -2), {}, lambda: own, "dim"))
        return steps
    # both of the kernel's results are squeezed; the op's are the squeezed ones it returns
    steps.append(("squeeze", (_Prev(1, 0), -2), {}, lambda: with_indices()[0], "dim"))
    steps.append(("squeeze", (_Prev(1, 1), -2), {}, lambda: with_indices()[1], "dim"))
    return steps + [(_GATHER, (_Prev(2), _Prev(3)), {}, None, None)] if isinstance(own, tuple) else \
        steps + [(_GATHER, (_Prev(2),), {}, None, None)]


def _with_indices(op, own):
    """A thunk for a max pool's (values, indices): the op's own when it returned both, else the
    indices computed once more (only when a mode asks for them)."""
    if isinstance(own, tuple):
        return lambda: own
    from ..nn import functional as F
    given = _given(op)
    given.pop("return_indices", None)
    name = str(op).removesuffix("_with_indices")
    return lambda: (own, getattr(F, name)(*given.values(), return_indices=True)[1])


def _adaptive_avg_pool2d_steps(op, values, own):
    given = _given(op)
    x, size = given.get("input", given.get("x")), given.get("output_size")
    sizes = [size, size] if isinstance(size, int) else list(size)
    if any(s is None for s in sizes):
        sizes = [x.shape[-2 + i] if s is None else s for i, s in enumerate(sizes)]
    if sizes == [1, 1]:
        return _one("mean", (x, [-1, -2], True), {}, own, "dim")
    return _one("_adaptive_avg_pool2d", (x, sizes), {}, own)


def _narrow_steps(op, values, own):
    given = _given(op)
    x, dim, start, length = given["x"], given["dim"], given["start"], given["length"]
    if isinstance(start, Tensor):
        return None
    begin = start + x.shape[dim] if start < 0 else start
    return _one("slice", (x, dim, begin, begin + length), {}, own, "Tensor")


def _sort_steps(op, values, own):
    given = _given(op)
    x = given["x"]
    dim, descending, stable = given.get("dim", -1), given.get("descending", False), given.get("stable")
    if stable is None:
        args = (x,) + ((dim, descending) if descending else (dim,) if dim != -1 else ())
        return _one("sort", args, {}, own)
    kwargs = {"stable": stable}
    if dim != -1:
        kwargs["dim"] = dim
    if descending:
        kwargs["descending"] = True
    return _one("sort", (x,), kwargs, own, "stable")


def _squeeze_steps(op, values, own):
    given = _given(op)
    x, dim = given["x"], given.get("dim")
    if dim is None:
        return _one("squeeze", (x,), {}, own)
    if isinstance(dim, (tuple, list)):
        return _one("squeeze", (x, [int(d) for d in dim]), {}, own, "dims")
    return _one("squeeze", (x, dim), {}, own, "dim")


def _round_steps(op, values, own):
    decimals = _given(op).get("decimals", 0)
    x = op.args[0]
    if decimals:
        return _one("round", (x,), {"decimals": decimals}, own, "decimals")
    return _one("round", (x,), {}, own)


_CONVERTERS.update({"square": lambda op, values, own: _one("pow", (op.args[0], 2), {}, own, "Tensor_Scalar"),
                    "fix": lambda op, values, own: _one("trunc", (op.args[0],), {}, own),
                    "narrow": _narrow_steps, "sort": _sort_steps, "squeeze": _squeeze_steps, "round": _round_steps,
                    "pad": _pad_steps, "adaptive_avg_pool2d": _adaptive_avg_pool2d_steps})
for _name in ("var", "std", "var_mean", "std_mean"):
    _CONVERTERS[_name] = _variance_steps
for _name in ("hardtanh", "hardtanh_", "relu6", "relu6_", "elu", "elu_", "selu", "selu_"):
    _CONVERTERS[_name] = _defaults_filled
for _name in ("max_pool1d", "max_pool1d_with_indices", "avg_pool1d", "adaptive_avg_pool1d"):
    _CONVERTERS[_name] = _pool1d_steps


def _attention_steps(op, values, own):
    """``multi_head_attention_forward`` for self-attention (one tensor as query, key and value) with a
    packed input projection and biases, no masks, no dropout: torch's Python code as the ATen operators
    it runs (the projection's ``addmm``, the heads' views, then the flash kernel when no weights are
    asked for, else the math path's ``bmm``/``_softmax``/``bmm`` and the heads' mean). Others: None."""
    import math

    import hookgrad
    from ..nn import functional as F
    given = _given(op)
    x = given["query"]
    if not (x is given["key"] is given["value"]) or x.dim() != 3 or given["use_separate_proj_weight"] \
            or given["in_proj_bias"] is None or given["out_proj_bias"] is None or given["bias_k"] is not None \
            or given["add_zero_attn"] or given["key_padding_mask"] is not None or given["attn_mask"] is not None \
            or given["is_causal"] or (given["training"] and given["dropout_p"] > 0) \
            or given["static_k"] is not None or given["static_v"] is not None:
        return None
    length, batch, embed = x.shape
    heads = given["num_heads"]
    head_dim = embed // heads
    w_in, b_in, w_out, b_out = (given["in_proj_weight"], given["in_proj_bias"], given["out_proj_weight"],
                                given["out_proj_bias"])
    need_weights = given["need_weights"]
    flash = not need_weights
    if flash:
        probe = x.detach().view(length, batch, heads, head_dim).permute(1, 2, 0, 3)
        if not _attention._use_flash(probe, probe, probe, None, 0.0, False):
            return None
    grad = op._call[-1] and any(t is not None and t.requires_grad for t in (x, w_in, b_in, w_out, b_out))
    cache: dict = {}

    def value_of(key):
        """The intermediates, computed once when a mode asks for one."""
        if not cache:
            with hookgrad.no_grad():
                packed = F.linear(x, w_in, b_in)
                q, k, v = packed.unflatten(-1, (3, embed)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
                heads_of = [t.view(length, batch * heads, head_dim).transpose(0, 1) for t in (q, k, v)]
                cache.update(packed=packed, qkv=(q, k, v), heads=heads_of)
                if flash:
                    four = [t.view(batch, heads, length, head_dim) for t in heads_of]
                    cache["four"] = four
                    out = F.scaled_dot_product_attention(*four)
                    cache["attention"] = (out, hookgrad.logsumexp(
                        four[0] @ four[1].transpose(-2, -1) / math.sqrt(head_dim), -1))
                    cache["merged"] = out.permute(2, 0, 1, 3).reshape(length * batch, embed)
                else:
                    scaled = heads_of[0] * (1 / math.sqrt(head_dim))
                    scores = scaled @ heads_of[1].transpose(-2, -1)
                    weights = scores.softmax(-1)
                    mixed = weights @ heads_of[2]
                    cache.update(scaled=scaled, scores=scores, weights=weights, mixed=mixed,
                                 merged=mixed.transpose(0, 1).reshape(length * batch, embed))
        return cache[key]

    steps: list = []

    def step(name, args, thunk, overload="default", kwargs=None):
        steps.append((name, args, kwargs or {}, thunk, overload))
        return _Prev(len(steps) - 1)
    flat = step("view", (x, [length * batch, embed]), lambda: x.reshape(length * batch, embed))
    w_in_t = step("t", (w_in,), lambda: w_in.t())
    packed = step("addmm", (b_in, flat, w_in_t), lambda: value_of("packed").reshape(length * batch, 3 * embed))
    packed = step("view", (packed, [length, batch, 3 * embed]), lambda: value_of("packed"))
    split = step("view", (packed, [length, batch, 3, embed]), lambda: value_of("packed").view(length, batch, 3, embed))
    split = step("unsqueeze", (split, 0), lambda: value_of("packed").view(length, batch, 3, embed).unsqueeze(0))
    split = step("transpose", (split, 0, -2), lambda: value_of("packed").view(length, batch, 3, embed).unsqueeze(0)
                 .transpose(0, -2), "int")
    split = step("squeeze", (split, -2), lambda: hookgrad.stack(value_of("qkv")), "dim")
    split = step("clone", (split,), lambda: hookgrad.stack(value_of("qkv")), kwargs={
        "memory_format": hookgrad.contiguous_format})
    selected = [step("select", (split, 0, i), lambda i=i: value_of("qkv")[i], "int") for i in range(3)]
    per_head = []
    for i, s in enumerate(selected):
        viewed = step("view", (s, [length, batch * heads, head_dim]),
                      lambda i=i: value_of("qkv")[i].view(length, batch * heads, head_dim))
        per_head.append(step("transpose", (viewed, 0, 1), lambda i=i: value_of("heads")[i], "int"))
    if flash:
        four = [step("view", (h, [batch, heads, length, head_dim]), lambda i=i: value_of("four")[i])
                for i, h in enumerate(per_head)]
        attended = step("_scaled_dot_product_flash_attention_for_cpu", tuple(four), lambda: value_of("attention"))
        if grad:
            step("detach", (_Prev(attended.index, 0),), lambda: value_of("attention")[0])
        merged = step("permute", (_Prev(attended.index, 0), [2, 0, 1, 3]),
                      lambda: value_of("attention")[0].permute(2, 0, 1, 3))
        merged = step("view", (merged, [length * batch, embed]), lambda: value_of("merged"))
    else:
        scaled = step("mul", (per_head[0], 1 / math.sqrt(head_dim)), lambda: value_of("scaled"), "Tensor")
        keys_t = step("transpose", (per_head[1], -2, -1), lambda: value_of("heads")[1].transpose(-2, -1), "int")
        scores = step("bmm", (scaled, keys_t), lambda: value_of("scores"))
        weights = step("_softmax", (scores, -1, False), lambda: value_of("weights"))
        if grad:
            step("detach", (weights,), lambda: value_of("weights"))
        mixed = step("bmm", (weights, per_head[2]), lambda: value_of("mixed"))
        mixed = step("transpose", (mixed, 0, 1), lambda: value_of("mixed").transpose(0, 1), "int")
        mixed = step("clone", (mixed,), lambda: value_of("mixed").transpose(0, 1).contiguous(),
                     kwargs={"memory_format": hookgrad.contiguous_format})
        merged = step("_unsafe_view", (mixed, [length * batch, embed]), lambda: value_of("merged"))
    outputs = own if isinstance(own, tuple) else (own,)
    w_out_t = step("t", (w_out,), lambda: w_out.t())
    projected = step("addmm", (b_out, merged, w_out_t), lambda: outputs[0].reshape(length * batch, embed))
    result = step("view", (projected, [length, batch, embed]), lambda: outputs[0])
    if not need_weights:
        return steps
    per_batch = step("view", (weights, [batch, heads, length, length]),
                     lambda: value_of("weights").view(batch, heads, length, length))
    if given["average_attn_weights"]:
        averaged = step("mean", (per_batch, [1]), lambda: outputs[1], "dim")
    else:
        averaged = per_batch
    steps.append((_GATHER, (result, averaged), {}, None, None))
    return steps


_CONVERTERS["multi_head_attention_forward"] = _attention_steps


def _schema_laid_out(name, overload, values):
    """``(args, kwargs)`` for ATen's ``name.overload`` as torch's dispatcher passes ``values`` (by
    parameter name): positional up to the last one differing from its default, the keyword-only
    ones when they differ from theirs."""
    schema = getattr(_packet(name), overload)._schema
    positional = [a for a in schema.arguments if not a.kwarg_only]
    args = [values.get(a.name, a.default_value) for a in positional]
    while args and len(args) > len([a for a in positional if not a.has_default_value()]) \
            and args[-1] == positional[len(args) - 1].default_value:
        args.pop()
    kwargs = {a.name: values[a.name] for a in schema.arguments
              if a.kwarg_only and a.name in values and values[a.name] is not None
              and not (a.has_default_value() and values[a.name] == a.default_value)}
    return tuple(args), kwargs


def _sdpa_steps(op, values, own):
    """``scaled_dot_product_attention``: a boolean mask made additive first (``where`` of 0 and
    -inf); then torch's fused CPU kernel where it takes the call, else the math composition: the
    query and the transposed key each scaled by the root of the scale, ``bmm`` (a causal mask made
    by ``ones``/``tril`` after the query's scaling), the mask added, ``_safe_softmax``, ``bmm`` with
    the value. Dropout and grouped heads: not described (None)."""
    import math

    import hookgrad
    from ..nn import functional as F
    given = _given(op)
    q, k, v, mask = given["query"], given["key"], given["value"], given.get("attn_mask")
    is_causal, scale, dropout_p = bool(given.get("is_causal")), given.get("scale"), float(given.get("dropout_p", 0.0))
    if given.get("enable_gqa") or dropout_p > 0 or not all(isinstance(t, Tensor) for t in (q, k, v)) \
            or q.dim() not in (3, 4) or q.dim() != k.dim() or k.dim() != v.dim() \
            or q.shape[:-2] != k.shape[:-2] or k.shape[:-2] != v.shape[:-2] or (is_causal and mask is not None):
        return None
    steps: list = []

    def step(name, args, thunk, overload="default", kwargs=None):
        steps.append((name, tuple(args), kwargs or {}, thunk, overload))
        return _Prev(len(steps) - 1)

    def value_of(ref):
        return steps[ref.index][3]() if isinstance(ref, _Prev) else ref
    options = {"dtype": q.dtype, "device": hookgrad.device("cpu")}
    additive = None

    def made_additive(boolean, boolean_value):
        negative = step("scalar_tensor", (-math.inf,), lambda: hookgrad.tensor(-math.inf, dtype=q.dtype),
                        kwargs=dict(options))
        zero = step("scalar_tensor", (0.0,), lambda: hookgrad.tensor(0.0, dtype=q.dtype),
                    kwargs=dict(options, layout=hookgrad.strided))
        return step("where", (boolean, zero, negative), lambda: hookgrad.where(
            boolean_value(), hookgrad.tensor(0.0, dtype=q.dtype), hookgrad.tensor(-math.inf, dtype=q.dtype)), "self")
    if isinstance(mask, Tensor) and mask.dtype == hookgrad.bool:
        additive = made_additive(mask, lambda: mask)
    elif isinstance(mask, Tensor):
        additive = mask
    elif mask is not None:
        return None
    def additive_value():
        return value_of(additive) if isinstance(additive, _Prev) else mask
    factor = scale if scale is not None else 1.0 / math.sqrt(q.shape[-1])
    if _attention._use_flash(q, k, v, mask, dropout_p, False):
        laid = {"query": q, "key": k, "value": v, "dropout_p": 0.0, "is_causal": is_causal, "scale": scale,
                "attn_mask": additive}
        args, kwargs = _schema_laid_out("_scaled_dot_product_flash_attention_for_cpu", "default", laid)
        def logsumexp():     # the kernel's second result (not the op's): made only when asked
            scores = (q @ k.transpose(-2, -1)) * factor
            if is_causal:
                scores = scores.masked_fill(~hookgrad.ones(q.shape[-2], k.shape[-2], dtype=hookgrad.bool).tril(),
                                            -math.inf)
            return hookgrad.logsumexp(scores if additive is None else scores + additive_value(), -1)
        kernel = step("_scaled_dot_product_flash_attention_for_cpu", args, lambda: (own, logsumexp()),
                      kwargs=kwargs)
        steps.append((_GATHER, (_Prev(kernel.index, 0),), {}, None, None))
        return steps
    root = math.sqrt(abs(factor))
    query_factor = -root if factor < 0 else root
    cache: dict = {}

    def value(key):
        if not cache:
            scaled_q = q * query_factor
            scaled_kt = k.transpose(-2, -1) * root
            scores = scaled_q @ scaled_kt
            rows, cols = q.shape[-2], k.shape[-2]
            causal = hookgrad.ones(rows, cols, dtype=hookgrad.bool).tril() if is_causal else None
            if is_causal:
                bias = hookgrad.where(causal, hookgrad.tensor(0.0, dtype=q.dtype), hookgrad.tensor(-math.inf, dtype=q.dtype))
            else:
                bias = additive_value() if additive is not None else None
            masked = scores if bias is None else scores + bias
            weights = F.softmax(masked, -1)
            weights = weights.masked_fill(hookgrad.isnan(weights), 0.0)
            cache.update(q=scaled_q, kt=k.transpose(-2, -1), scaled_kt=scaled_kt, scores=scores, causal=causal,
                         masked=masked, weights=weights)
        return cache[key]
    scaled_q = step("mul", (q, query_factor), lambda: value("q"), "Scalar")
    if is_causal:
        rows, cols = q.shape[-2], k.shape[-2]
        ones = step("ones", ([rows, cols],), lambda: hookgrad.ones(rows, cols, dtype=hookgrad.bool),
                    kwargs={"dtype": hookgrad.bool, "layout": hookgrad.strided, "device": hookgrad.device("cpu")})
        lower = step("tril", (ones,), lambda: hookgrad.ones(rows, cols, dtype=hookgrad.bool).tril())
        additive = made_additive(lower, lambda: hookgrad.ones(rows, cols, dtype=hookgrad.bool).tril())
    key_t = step("transpose", (k, -2, -1), lambda: value("kt"), "int")
    scaled_kt = step("mul", (key_t, root), lambda: value("scaled_kt"), "Scalar")
    scores = _batched_product(step, value_of, scaled_q, q.shape, scaled_kt,
                              tuple(k.shape[:-2]) + (k.shape[-1], k.shape[-2]), lambda: value("scores"))
    if additive is not None:
        scores = step("add", (scores, additive), lambda: value("masked"), "Tensor")
    weights = step("_safe_softmax", (scores, -1), lambda: value("weights"))
    if op._call[-1] and any(t.requires_grad for t in (q, k, v)):
        step("detach", (weights,), lambda: value("weights"))
    _batched_product(step, value_of, weights, tuple(q.shape[:-1]) + (k.shape[-2],), v, v.shape, lambda: own)
    return steps


def _batched_product(step, value_of, a, a_shape, b, b_shape, result):
    """``matmul`` of two operands with the same batch dims, as torch runs it: each expanded to its own
    shape and viewed as one batch of matrices, ``bmm``, then ``_unsafe_view`` to the batched result."""
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    batch = a_shape[:-2]
    count = 1
    for size in batch:
        count *= size
    flats = []
    for operand, shape in ((a, a_shape), (b, b_shape)):
        expanded = step("expand", (operand, list(shape)), lambda o=operand, s=shape: value_of(o).expand(s))
        flats.append(step("view", (expanded, [count] + list(shape[-2:])),
                          lambda o=operand, s=shape: value_of(o).reshape([count] + list(s[-2:]))))
    out_shape = list(batch) + [a_shape[-2], b_shape[-1]]
    product = step("bmm", tuple(flats), lambda: result().reshape([count] + out_shape[-2:]))
    return step("_unsafe_view", (product, out_shape), result)


_CONVERTERS["scaled_dot_product_attention"] = _sdpa_steps


class _DetachingSteps(list):
    """Steps that include the detaching of the outputs the node saves (torch detaches before a
    later check), so the op's saved outputs are not detached again after them."""


def _lu_of(a):
    import hookgrad
    lu, pivots = hookgrad.linalg.lu_factor(a.detach())
    return lu, pivots.to(hookgrad.int32)


def _linalg_steps(op, values, own):
    """inv, det, slogdet, solve: torch's ``linalg_inv_ex``, ``_linalg_det``, ``_linalg_slogdet``,
    ``_linalg_solve_ex`` kernels (with their LU factors, pivots and error codes), the saved result
    detached, then ``_linalg_check_errors`` where torch checks the code."""
    import hookgrad
    name = str(op)
    given = _given(op)
    a = op.args[0] if op.args else given.get("A", given.get("a"))
    if not isinstance(a, Tensor) or a.dim() != 2 or a.dtype.is_complex:
        return None
    saving = getattr(op, "node", None) is not None
    info = lambda: hookgrad.zeros((), dtype=hookgrad.int32)
    steps = _DetachingSteps()
    if name == "inverse":
        steps.append(("linalg_inv_ex", (a,), {}, lambda: (own, info()), "default"))
        if saving:
            steps.append(("detach", (_Prev(0, 0),), {}, lambda: own, "default"))
        steps.append(("_linalg_check_errors", (_Prev(0, 1), "linalg.inv"), {"is_matrix": True}, lambda: None,
                      "default"))
    elif name == "det":
        steps.append(("_linalg_det", (a,), {}, lambda: (own,) + _lu_of(a), "default"))
        if saving:
            steps.append(("detach", (_Prev(0, 0),), {}, lambda: own, "default"))
    elif name in ("slogdet", "linalg_slogdet"):
        steps.append(("_linalg_slogdet", (a,), {}, lambda: tuple(own) + _lu_of(a), "default"))
        if saving:
            steps.append(("detach", (_Prev(0, 0),), {}, lambda: own[0], "default"))
        steps.append((_GATHER, (_Prev(0, 0), _Prev(0, 1)), {}, None, None))
        return steps
    elif name == "linalg_solve":
        b = op.args[1] if len(op.args) > 1 else given.get("B", given.get("b"))
        if not isinstance(b, Tensor) or given.get("left") is False or b.dim() not in (1, 2):
            return None
        steps.append(("_linalg_solve_ex", (a, b), {}, lambda: (own,) + _lu_of(a) + (info(),), "default"))
        if saving:
            steps.append(("detach", (_Prev(0, 0),), {}, lambda: own, "default"))
        steps.append(("_linalg_check_errors", (_Prev(0, 3), "torch.linalg.solve"), {"is_matrix": True},
                      lambda: None, "default"))
    else:
        return None
    steps.append((_GATHER, (_Prev(0, 0),), {}, None, None))
    return steps


for _name in ("inverse", "det", "slogdet", "linalg_slogdet", "linalg_solve"):
    _CONVERTERS[_name] = _linalg_steps


def _tensordot_steps(op, values, own):
    """``tensordot`` (and ``inner``, a tensordot over both last dims) as torch's composition: a
    contracted dim of size 1 against a larger one summed away first, each operand permuted (free
    dims, then contracted) and reshaped to a matrix, ``mm``, then viewed to the free dims (two
    vectors: ``dot``)."""
    import hookgrad
    name = str(op)
    a, b = op.args[0], op.args[1] if len(op.args) > 1 else None
    if not isinstance(a, Tensor) or not isinstance(b, Tensor) or a.dtype != b.dtype:
        return None
    if name == "inner":
        if a.dim() == 0 or b.dim() == 0:
            return None
        dims_a, dims_b = [-1], [-1]
    else:
        dims = _given(op).get("dims", 2)
        if isinstance(dims, Tensor):
            return None
        if isinstance(dims, int):
            dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
        elif isinstance(dims, (list, tuple)) and len(dims) == 2:
            dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
        else:
            return None
    if len(dims_a) != len(dims_b):
        return None
    if a.dim() == 1 and b.dim() == 1 and len(dims_a) == 1:
        return [("permute", (a, dims_a), {}, lambda: a, "default"),
                ("permute", (b, dims_b), {}, lambda: b, "default"),
                ("dot", (_Prev(0), _Prev(1)), {}, lambda: own, "default"),
                ("view", (_Prev(2), []), {}, lambda: own, "default")]
    steps: list = []
    left, right, left_value, right_value = a, b, a, b
    for da, db in zip(dims_a, dims_b):
        if b.shape[db] == 1:
            summed = left_value.sum(da, keepdim=True)
            steps.append(("sum", (left, [da], True), {"dtype": a.dtype}, lambda v=summed: v, "dim_IntList"))
            left, left_value = _Prev(len(steps) - 1), summed
        elif a.shape[da] == 1:
            summed = right_value.sum(db, keepdim=True)
            steps.append(("sum", (right, [db], True), {"dtype": b.dtype}, lambda v=summed: v, "dim_IntList"))
            right, right_value = _Prev(len(steps) - 1), summed
    contracted_a = [d % a.dim() for d in dims_a]
    contracted_b = [d % b.dim() for d in dims_b]
    free_a = [d for d in range(a.dim()) if d not in contracted_a]
    free_b = [d for d in range(b.dim()) if d not in contracted_b]
    inner_size = 1
    for d in contracted_b:
        inner_size *= right_value.shape[d]
    rows = 1
    for d in free_a:
        rows *= a.shape[d]
    cols = 1
    for d in free_b:
        cols *= b.shape[d]
    perm_a, perm_b = free_a + dims_a, dims_b + free_b
    permuted_a = left_value.permute([d % a.dim() for d in perm_a])
    steps.append(("permute", (left, perm_a), {}, lambda: permuted_a, "default"))
    matrix_a = _reshape_steps(_Prev(len(steps) - 1), permuted_a, [rows, inner_size], steps)
    permuted_b = right_value.permute([d % b.dim() for d in perm_b])
    steps.append(("permute", (right, perm_b), {}, lambda: permuted_b, "default"))
    matrix_b = _reshape_steps(_Prev(len(steps) - 1), permuted_b, [inner_size, cols], steps)
    steps.append(("mm", (matrix_a, matrix_b), {}, lambda: own.reshape(rows, cols), "default"))
    steps.append(("view", (_Prev(len(steps) - 1), list(own.shape)), {}, lambda: own, "default"))
    return steps


def _outer_steps(op, values, own):
    """``outer``: the first vector viewed as a column, times the second."""
    a, b = op.args[0], op.args[1] if len(op.args) > 1 else None
    if not isinstance(a, Tensor) or not isinstance(b, Tensor) or a.dim() != 1 or b.dim() != 1:
        return None
    return [("view", (a, [a.shape[0], 1]), {}, lambda: a.view(a.shape[0], 1), "default"),
            ("mul", (_Prev(0), b), {}, lambda: own, "Tensor")]


_CONVERTERS.update({"tensordot": _tensordot_steps, "inner": _tensordot_steps, "outer": _outer_steps,
                    "ger": _outer_steps})


def _normalize_steps(op, values, own):
    """``F.normalize``: the norm over the dim (kept), detached where its node saves it, clamped below
    by eps, expanded to the input, and the input divided by it."""
    given = _given(op)
    x, p, dim, eps = given["input"], given["p"], given["dim"], given["eps"]
    if not isinstance(x, Tensor) or given.get("out") is not None or not isinstance(dim, int) or x.dim() == 0:
        return None
    norm = lambda: x.norm(p, dim, keepdim=True)
    clamped = lambda: norm().clamp_min(eps)
    steps = [("linalg_vector_norm", (x, p, [dim], True), {}, norm, "default")]
    if op._call[-1] and x.requires_grad:
        steps.append(("detach", (_Prev(0),), {}, norm, "default"))
    steps.append(("clamp_min", (_Prev(0), eps), {}, clamped, "default"))
    steps.append(("expand", (_Prev(len(steps) - 1), list(x.shape)), {}, lambda: clamped().expand_as(x), "default"))
    steps.append(("div", (x, _Prev(len(steps) - 1)), {}, lambda: own, "Tensor"))
    return steps


def _bilinear_steps(op, values, own):
    """``F.bilinear``: both inputs viewed as rows of features, ``_trilinear`` with the weight, the
    result viewed to the batch shape, the bias added."""
    import hookgrad
    given = _given(op)
    x1, x2, weight, bias = given["input1"], given["input2"], given["weight"], given.get("bias")
    if not all(isinstance(t, Tensor) for t in (x1, x2, weight)) or x1.dim() < 1 or weight.dim() != 3 \
            or x1.shape[:-1] != x2.shape[:-1]:
        return None
    rows = lambda: (x1.reshape(-1, x1.shape[-1]), x2.reshape(-1, x2.shape[-1]))
    flat = lambda: hookgrad.einsum("bi,oij,bj->bo", rows()[0], weight, rows()[1])
    batch = list(x1.shape[:-1]) + [weight.shape[0]]
    steps = [("view", (x1, [-1, x1.shape[-1]]), {}, lambda: rows()[0], "default"),
             ("view", (x2, [-1, x2.shape[-1]]), {}, lambda: rows()[1], "default"),
             ("_trilinear", (_Prev(0), weight, _Prev(1), [1, 3], [0], [1, 2], [2, 3]), {}, flat, "default")]
    if bias is None:
        steps.append(("view", (_Prev(2), batch), {}, lambda: own, "default"))
        return steps
    steps.append(("view", (_Prev(2), batch), {}, lambda: flat().reshape(batch), "default"))
    steps.append(("add", (_Prev(3), bias), {}, lambda: own, "Tensor"))
    return steps


_CONVERTERS.update({"normalize": _normalize_steps, "bilinear": _bilinear_steps})


# ---- backward: the nodes whose formula is one fused ATen kernel ----------------------------------
def _as_list(value):
    return [int(v) for v in value] if isinstance(value, tuple) else value


def _kernel_plan(kernel, saved_names, grads=(0,), mask=False, unpacks_result=False):
    """A node whose backward torch computes with one ATen kernel ``kernel(grad, *saved)``: the saved
    values as the node holds them (tuples as lists), an output mask of the gradients needed, and the
    kernel's results as the gradients of the inputs ``grads`` names. A node that saved its own
    result first unpacks it (``detach``)."""
    def plan(node, grad, grad_inputs):
        steps = []
        args = [grad]
        for name in saved_names:
            if name == "result" and unpacks_result:
                result = _saved(node, "result")
                steps.append(("detach", "default", (result,), lambda: result, None))
                args.append(_Prev(0))
            else:
                args.append(_signed(_as_list(_saved(node, name))))
        if mask:
            args.append([_needs(grad_inputs, i) for i in range(len(grads))])
        if len(grads) == 1:
            steps.append((kernel, "default", tuple(args), lambda: grad_inputs[grads[0]], grads[0]))
        else:
            steps.append((kernel, "default", tuple(args), lambda: tuple(
                grad_inputs[i] if _needs(grad_inputs, i) else None for i in grads), grads))
        return steps
    return plan


def _convolution_backward_steps(node, grad, grad_inputs):
    bias_sizes = _saved(node, "bias_sym_sizes_opt")
    args = (grad, _saved(node, "input"), _saved(node, "weight"), [0] if bias_sizes is None else _as_list(bias_sizes),
            _as_list(_saved(node, "stride")), _as_list(_saved(node, "padding")), _as_list(_saved(node, "dilation")),
            bool(_saved(node, "transposed")), _as_list(_saved(node, "output_padding")), int(_saved(node, "groups")),
            [_needs(grad_inputs, i) for i in range(3)])
    return [("convolution_backward", "default", args,
             lambda: tuple(grad_inputs[i] if _needs(grad_inputs, i) else None for i in range(3)), (0, 1, 2))]


def _softmax_backward_plan(kernel):
    def plan(node, grad, grad_inputs):
        result = _saved(node, "result")
        return [("detach", "default", (result,), lambda: result, None),
                (kernel, "default", (grad, _Prev(0), _saved(node, "dim"), result.dtype), lambda: grad_inputs[0], 0)]
    return plan


def _elu_backward_steps(node, grad, grad_inputs):
    args = (grad, _saved(node, "alpha"), _saved(node, "scale"), _saved(node, "input_scale"), False,
            _saved(node, "self"))
    return [("elu_backward", "default", args, lambda: grad_inputs[0], 0)]


def _gelu_backward_steps(node, grad, grad_inputs):
    approximate = _saved(node, "approximate")
    kwargs_free_args = (grad, _saved(node, "self"))
    if approximate != "none":
        return [("gelu_backward", "default", kwargs_free_args, lambda: grad_inputs[0], 0, {"approximate": approximate})]
    return [("gelu_backward", "default", kwargs_free_args, lambda: grad_inputs[0], 0)]


_BACKWARD_STEPS.update({
    "ConvolutionBackward0": _convolution_backward_steps,
    "MaxPool2DWithIndicesBackward0": _kernel_plan(
        "max_pool2d_with_indices_backward", ("self", "kernel_size", "stride", "padding", "dilation", "ceil_mode",
                                             "result1")),
    "AvgPool2DBackward0": _kernel_plan(
        "avg_pool2d_backward", ("self", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
                                "divisor_override")),
    "NativeLayerNormBackward0": _kernel_plan(
        "native_layer_norm_backward", ("input", "normalized_shape", "result1", "result2", "weight", "bias"),
        grads=(0, 1, 2), mask=True),
    "NativeBatchNormBackward0": _kernel_plan(
        "native_batch_norm_backward", ("input", "weight", "running_mean", "running_var", "result1", "result2",
                                       "training", "eps"), grads=(0, 1, 2), mask=True),
    "NllLossBackward0": _kernel_plan(
        "nll_loss_backward", ("self", "target", "weight", "reduction", "ignore_index", "total_weight")),
    "LogSoftmaxBackward0": _softmax_backward_plan("_log_softmax_backward_data"),
    "SoftmaxBackward0": _softmax_backward_plan("_softmax_backward_data"),
    "TanhBackward0": _kernel_plan("tanh_backward", ("result",), unpacks_result=True),
    "SigmoidBackward0": _kernel_plan("sigmoid_backward", ("result",), unpacks_result=True),
    "EluBackward0": _elu_backward_steps,
    "GeluBackward0": _gelu_backward_steps,
})


def _signed(value):
    """A saved int64 the node reports as torch does, unsigned (nll_loss's ignore_index=-100)."""
    return value - (1 << 64) if isinstance(value, int) and value >= 1 << 63 else value


def _view_backward_steps(node, grad, grad_inputs):
    return [("view", "default", (grad, list(_saved(node, "self_sym_sizes"))), lambda: grad_inputs[0], 0)]


def _permute_backward_steps(node, grad, grad_inputs):
    dims = [_signed(d) % len(_saved(node, "dims")) for d in _saved(node, "dims")]
    inverse = [dims.index(i) for i in range(len(dims))]
    return [("permute", "default", (grad, inverse), lambda: grad_inputs[0], 0)]


def _transpose_backward_steps(node, grad, grad_inputs):
    return [("transpose", "int", (grad, _saved(node, "dim0"), _saved(node, "dim1")), lambda: grad_inputs[0], 0)]


def _unsqueeze_backward_steps(node, grad, grad_inputs):
    return [("squeeze", "dim", (grad, _saved(node, "dim")), lambda: grad_inputs[0], 0)]


_BACKWARD_STEPS.update({"ViewBackward0": _view_backward_steps, "PermuteBackward0": _permute_backward_steps,
                        "TransposeBackward0": _transpose_backward_steps,
                        "UnsqueezeBackward0": _unsqueeze_backward_steps})


def _mul_backward_steps(node, grad, grad_inputs):
    steps = []
    x, other = _saved(node, "self"), _saved(node, "other")
    if _needs(grad_inputs, 0):
        steps.append(("mul", "Tensor", (grad, other), lambda: grad_inputs[0], 0))
    if _needs(grad_inputs, 1):
        steps.append(("mul", "Tensor", (grad, x), lambda: grad_inputs[1], 1))
    return steps


def _exp_backward_steps(node, grad, grad_inputs):
    result = _saved(node, "result")
    return [("detach", "default", (result,), lambda: result, None),
            ("mul", "Tensor", (grad, _Prev(0)), lambda: grad_inputs[0], 0)]


_BACKWARD_STEPS.update({"MulBackward0": _mul_backward_steps, "ExpBackward0": _exp_backward_steps,
                        "NegBackward0": lambda node, grad, grad_inputs: [
                            ("neg", "default", (grad,), lambda: grad_inputs[0], 0)]})


def _chunk_steps(op, values, own):
    """chunk(n) is torch's ``split`` by the chunk size; split by a list is ``split_with_sizes``."""
    import math
    given = _given(op)
    x = given.get("x", given.get("input"))
    if not isinstance(x, Tensor):
        return None
    dim = given.get("dim", 0)
    if str(op) == "chunk":
        size = math.ceil(x.shape[dim] / given["chunks"])
        return _one("split", (x, size) + ((dim,) if dim != 0 else ()), {}, own, "Tensor")
    sizes = given.get("split_size_or_sections", given.get("split_size"))
    if isinstance(sizes, (list, tuple)):
        return _one("split_with_sizes", (x, [int(n) for n in sizes]) + ((dim,) if dim != 0 else ()), {}, own)
    return _one("split", (x, sizes) + ((dim,) if dim != 0 else ()), {}, own, "Tensor")


_CONVERTERS.update({"chunk": _chunk_steps, "split": _chunk_steps})


def _after_first(steps, operand):
    """``steps`` placed after one step whose result is ``operand``: their earlier-step references
    move by one, and ``operand`` becomes a reference to that step."""
    def moved(arg):
        if isinstance(arg, _Prev):
            return _Prev(arg.index + 1, arg.item)
        if arg is operand:
            return _Prev(0)
        if isinstance(arg, list):
            return [moved(a) for a in arg]
        return arg
    return [(name, tuple(moved(a) for a in args)) + tuple(rest) for name, args, *rest in steps]


_LINEAR_MODES = ("linear", "bilinear", "bicubic", "trilinear")


def _interpolate_steps(op, values, own):
    """interpolate's upsample kernels: the output size, align_corners for the linear modes, the scale
    factors when they were given (and not recomputed); area mode is a pooling (laid out elsewhere)."""
    given = _given(op)
    x, mode = given.get("input"), given.get("mode", "nearest")
    if not isinstance(x, Tensor) or not isinstance(own, Tensor) or mode == "area":
        return None
    nd = x.dim() - 2
    args = [x, [int(n) for n in own.shape[2:]]]
    if mode in _LINEAR_MODES:
        args.append(bool(given.get("align_corners") or False))
    scale = given.get("scale_factor")
    if scale is not None and not given.get("recompute_scale_factor"):
        args += [float(f) for f in (scale if isinstance(scale, (tuple, list)) else [scale] * nd)]
    name = f"_upsample_nearest_exact{nd}d" if mode == "nearest-exact" else f"upsample_{mode}{nd}d"
    return _one(name, args, {}, own)


_CONVERTERS["interpolate"] = _interpolate_steps


def _upsample_backward_plan(kernel, align_corners):
    """An upsample node's backward kernel: (grad, output size, input size[, align_corners], the
    scales the node saved, trailing unset ones left out as torch's calls leave them)."""
    def plan(node, grad, grad_inputs):
        args = [grad, list(_saved(node, "output_size")), list(_saved(node, "self_sym_sizes"))]
        if align_corners:
            args.append(bool(_saved(node, "align_corners")))
        names = sorted(a for a in dir(node) if a.startswith("_saved_scales"))
        args += [getattr(node, a) for a in names]
        while args and args[-1] is None:
            args.pop()
        return [(kernel, "default", tuple(args), lambda: grad_inputs[0], 0)]
    return plan


for _mode, _kernel_base in (("Nearest", "upsample_nearest"), ("NearestExact", "_upsample_nearest_exact"),
                            ("Linear", "upsample_linear"), ("Bilinear", "upsample_bilinear"),
                            ("Trilinear", "upsample_trilinear"), ("Bicubic", "upsample_bicubic")):
    for _nd in (1, 2, 3):
        _BACKWARD_STEPS[f"Upsample{_mode}{_nd}DBackward0"] = _upsample_backward_plan(
            f"{_kernel_base}{_nd}d_backward", _mode not in ("Nearest", "NearestExact"))


def _group_norm_backward_steps(node, grad, grad_inputs):
    """native_group_norm_backward on the saved mean and rstd, each unpacked (detached) first, as the
    node's own outputs are."""
    mean, rstd = _saved(node, "result1"), _saved(node, "result2")
    args = (grad, _saved(node, "input"), _Prev(0), _Prev(1), _saved(node, "weight"), _saved(node, "N"),
            _saved(node, "C"), _saved(node, "HxW"), _saved(node, "group"), [_needs(grad_inputs, i) for i in range(3)])
    return [("detach", "default", (mean,), lambda: mean, None), ("detach", "default", (rstd,), lambda: rstd, None),
            ("native_group_norm_backward", "default", args,
             lambda: tuple(grad_inputs[i] if _needs(grad_inputs, i) else None for i in range(3)), (0, 1, 2))]


_BACKWARD_STEPS["NativeGroupNormBackward0"] = _group_norm_backward_steps


def _trilinear_backward_steps(node, grad, grad_inputs):
    """torch's _trilinear_backward: each operand's gradient one _trilinear with the gradient in that
    operand's place and its expand list in the sum list's."""
    operands = [_saved(node, n) for n in ("i1", "i2", "i3")]
    expands = [list(_saved(node, n)) for n in ("expand1", "expand2", "expand3")]
    sumdim = list(_saved(node, "sumdim"))
    steps = []
    for i in range(3):
        if _needs(grad_inputs, i):
            args = [grad if j == i else operands[j] for j in range(3)] + \
                   [sumdim if j == i else expands[j] for j in range(3)] + [expands[i]]
            steps.append(("_trilinear", "default", tuple(args), lambda i=i: grad_inputs[i], i))
    return steps


_BACKWARD_STEPS["TrilinearBackward0"] = _trilinear_backward_steps


def _im2col_backward_steps(node, grad, grad_inputs):
    size = [_saved(node, "self_sym_argsize_minus_2"), _saved(node, "self_sym_argsize_minus_1")]
    args = (grad, size) + tuple(_as_list(_saved(node, n)) for n in ("kernel_size", "dilation", "padding", "stride"))
    return [("col2im", "default", args, lambda: grad_inputs[0], 0)]


def _multi_margin_backward_steps(node, grad, grad_inputs):
    args = [grad] + [_saved(node, n) for n in ("self", "target", "p", "margin", "weight", "reduction")]
    if args[-1] == 1:   # the default reduction (mean) is left out, as torch's call leaves it
        args.pop()
    return [("multi_margin_loss_backward", "default", tuple(args), lambda: grad_inputs[0], 0)]


def _col2im_backward_steps(node, grad, grad_inputs):
    args = (grad,) + tuple(_as_list(_saved(node, n)) for n in ("kernel_size", "dilation", "padding", "stride"))
    return [("im2col", "default", args, lambda: grad_inputs[0], 0)]


_BACKWARD_STEPS.update({
    "GluBackward0": _kernel_plan("glu_backward", ("self", "dim")),
    "SoftMarginLossBackward0": _kernel_plan("soft_margin_loss_backward", ("self", "target", "reduction")),
    "MultiMarginLossBackward0": _multi_margin_backward_steps,
    "Im2ColBackward0": _im2col_backward_steps, "Col2ImBackward0": _col2im_backward_steps,
})


def _pair(value):
    return [int(v) for v in value] if isinstance(value, (tuple, list)) else [int(value)] * 2


def _im2col_steps(op, values, own):
    """F.unfold and F.fold: im2col / col2im with every window argument as a pair."""
    given = _given(op)
    x = given.get("input")
    if not isinstance(x, Tensor) or "kernel_size" not in given:   # Tensor.unfold(dimension, size, step)
        return None
    window = [_pair(given.get(n, d)) for n, d in (("kernel_size", 1), ("dilation", 1), ("padding", 0), ("stride", 1))]
    if str(op) == "unfold":
        return _one("im2col", [x] + window, {}, own)
    return _one("col2im", [x, _pair(given["output_size"])] + window, {}, own)


def _multi_margin_steps(op, values, own):
    given = _given(op)
    x, target = given.get("input"), given.get("target")
    if not isinstance(x, Tensor) or given.get("weight") is not None or given.get("reduction", "mean") != "mean":
        return None
    return _one("multi_margin_loss", (x, target, given.get("p", 1), float(given.get("margin", 1.0))), {}, own)


_CONVERTERS.update({"fold": _im2col_steps, "unfold": _im2col_steps, "multi_margin_loss": _multi_margin_steps})


def _prelu_steps(op, values, own):
    """prelu: the weight viewed as (1, C, 1, ...) for an input of two or more dims, then _prelu_kernel."""
    given = _given(op)
    x, weight = given.get("input"), given.get("weight")
    if not isinstance(x, Tensor) or not isinstance(weight, Tensor):
        return None
    if x.dim() < 2:
        return _one("_prelu_kernel", (x, weight), {}, own)
    shape = [1, weight.numel()] + [1] * (x.dim() - 2)
    return [("view", (weight, shape), {}, lambda: weight.reshape(shape), "default"),
            ("_prelu_kernel", (x, _Prev(0)), {}, lambda: own, "default")]


_CONVERTERS["prelu"] = _prelu_steps


def _prelu_kernel_backward_steps(node, grad, grad_inputs):
    """_prelu_kernel_backward gives the weight's gradient in the input's shape; the sum to the
    (viewed) weight's shape follows."""
    x, weight = _saved(node, "self"), _saved(node, "weight")
    full = lambda: grad.where(x <= 0, grad * 0) * x     # the weight's gradient before the sum
    steps = [("_prelu_kernel_backward", "default", (grad, x, weight), lambda: (grad_inputs[0], full()), (0, None))]
    dims = [d for d in range(x.dim()) if weight.shape[d] == 1 and x.shape[d] != 1]
    if dims and _needs(grad_inputs, 1):
        steps.append(("sum", "dim_IntList", (_Prev(0, 1), dims, True), lambda: grad_inputs[1], 1))
    return steps


_BACKWARD_STEPS["PreluKernelBackward0"] = _prelu_kernel_backward_steps


def _rrelu_steps(op, values, own):
    """rrelu: its noise buffer made by empty_like, then rrelu_with_noise (training passed when set)."""
    import hookgrad
    given = _given(op)
    x, node = given.get("input"), getattr(op, "node", None)
    if not isinstance(x, Tensor) or given.get("inplace") or node is None:
        return None
    noise = _saved(node, "noise")
    args = [x, _Prev(0), given.get("lower", 1.0 / 8), given.get("upper", 1.0 / 3), bool(given.get("training"))]
    while len(args) > 2 and args[-1] == (1.0 / 8, 1.0 / 3, False)[len(args) - 3]:
        args.pop()  # torch's call leaves out the trailing arguments at their defaults
    return [("empty_like", (x,), {"memory_format": hookgrad.contiguous_format}, lambda: noise, "default"),
            ("rrelu_with_noise", tuple(args), {}, lambda: own, "default")]


def _rrelu_backward_steps(node, grad, grad_inputs):
    args = (grad,) + tuple(_saved(node, n) for n in ("self", "noise", "lower", "upper", "training")) + (False,)
    return [("rrelu_with_noise_backward", "default", args, lambda: grad_inputs[0], 0)]


_CONVERTERS["rrelu"] = _rrelu_steps
_BACKWARD_STEPS["RreluWithNoiseBackward0"] = _rrelu_backward_steps


def _clamp_backward_steps(node, grad, grad_inputs):
    """torch's clamp_backward by number bounds: ``where(self >= min [and self <= max], grad, 0)``, the
    zero made first as a 0-d tensor of the gradient's dtype."""
    import hookgrad
    x = _saved(node, "self")
    lo = getattr(node, "_saved_min", None) if type(node).__name__ != "ClampMaxBackward0" else None
    hi = getattr(node, "_saved_max", None) if type(node).__name__ != "ClampMinBackward0" else None
    options = {"dtype": grad.dtype, "layout": hookgrad.strided, "device": hookgrad.device("cpu")}
    zero = lambda: hookgrad.scalar_tensor(0.0, dtype=grad.dtype)
    steps = [("scalar_tensor", "default", (0.0,), zero, None, options)]
    if lo is not None:
        steps.append(("ge", "Scalar", (x, lo), lambda: x >= lo, None))
    if hi is not None:
        steps.append(("le", "Scalar", (x, hi), lambda: x <= hi, None))
    if lo is not None and hi is not None:
        steps.append(("logical_and_", "default", (_Prev(1), _Prev(2)), lambda: (x >= lo) & (x <= hi), None))
    steps.append(("where", "self", (_Prev(len(steps) - 1), grad, _Prev(0)), lambda: grad_inputs[0], 0))
    return steps


_BACKWARD_STEPS.update({
    "HardshrinkBackward0": _kernel_plan("hardshrink_backward", ("self", "lambd")),
    "SoftshrinkBackward0": _kernel_plan("softshrink_backward", ("self", "lambd")),
    "ClampBackward1": _clamp_backward_steps, "ClampMinBackward0": _clamp_backward_steps,
    "ClampMaxBackward0": _clamp_backward_steps,
})


from . import _dispatch_backward  # noqa: E402,F401 - more nodes' formulas, registered into _BACKWARD_STEPS
