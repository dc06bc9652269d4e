"""``torch.utils._python_dispatch``: dispatch modes, on top of hookgrad's op hooks.

torch calls a mode's ``__torch_dispatch__(func, types, args, kwargs)`` for every ATen operator an op
runs, and what it returns is the operator's result. hookgrad has no ATen dispatcher; its op hooks
see each op the program calls (``linear``, ``relu``, ``max_pool2d``), after it ran. A
``TorchDispatchMode`` here is called once per ATen operator torch's decomposition of that op would
run, named as torch names it (``linear`` -> ``aten.t`` then ``aten.addmm``; ``flatten`` ->
``aten.view``; ``F.max_pool2d`` -> ``aten.max_pool2d_with_indices``; an op without a known
decomposition under its own name), innermost mode first:

* ``func(*args, **kwargs)`` with the arguments the mode was given returns the op's result (computed
  once, not again); with other arguments it runs hookgrad's implementation of that operator.
* What the mode returns for the op's last operator replaces the op's result (same shape and dtype,
  as for an op hook's return).

What a mode does not see: factories (``torch.zeros``, ``randn``), the ops inside a custom
``autograd.Function``'s forward, and the backward's operators (a backward pass run while a mode is
active warns once per mode).
"""
from __future__ import annotations

import contextlib
import warnings

from .. import ops as _ops
from .._C import _DisableTorchDispatch
from .._tensor import Tensor

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
        _HOOK[0] = register_op_hook(forward=_dispatch_op, backward=_backward_ran)


def _pop_mode(mode) -> None:
    if mode in _STACK:
        # the innermost occurrence: modes leave in the reverse order of entering
        del _STACK[len(_STACK) - 1 - _STACK[::-1].index(mode)]
    if not _STACK and _HOOK[0] is not None:
        _HOOK[0].remove()
        _HOOK[0] = None


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


class _DispatchedOp(_ops.OpOverload):
    """The ``func`` a mode receives: called with the arguments it was given, it returns the result the
    op computed (``result`` a thunk); with others, it runs the operator."""

    def __init__(self, packet, overload: str, args, kwargs, result):
        super().__init__(packet, overload)
        self._given = (args, kwargs)
        self._result = result

    @property
    def _overloadpacket(self):
        return self.overloadpacket

    def __call__(self, *args, **kwargs):
        given_args, given_kwargs = self._given
        same = (len(args) == len(given_args) and all(a is b for a, b in zip(args, given_args))
                and kwargs.keys() == given_kwargs.keys() and all(kwargs[k] is given_kwargs[k] for k in kwargs))
        if _STACK:       # the next mode out sees it first
            return _call_mode(self, args, kwargs)
        if same:
            return self._result()
        return self._op(*args, **kwargs)


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
    if name in ("add", "sub", "mul", "div") and len(args) > 1:
        # a Python number operand is wrapped into a tensor by torch's bindings: still .Tensor
        return "Tensor_mode" if name == "div" and kwargs.get("rounding_mode") is not None else "Tensor"
    if name in ("max", "min") and len(args) > 1 and not isinstance(args[1], Tensor):
        return "dim"
    if name in ("mean", "sum") and len(args) > 1:
        return "dim_IntList"
    return "default"


class _Prev:
    """An argument that is the result of an earlier step (as the mode returned it)."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


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
            rows, n = -1, own.shape[-1]
            return [("view", (x, [rows, x.shape[-1]]), {}, lambda: x.reshape(rows, x.shape[-1])),
                    ("t", (w,), {}, w.t),
                    ("addmm", (bias, _Prev(0), _Prev(1)), {}, lambda: own.reshape(rows, n)),
                    ("view", (_Prev(2), list(own.shape)), {}, lambda: own)]
        if x.dim() == 2:
            return [("t", (w,), {}, w.t), ("mm", (x, _Prev(0)), {}, lambda: own)]
        return [("t", (w,), {}, w.t), ("matmul", (x, _Prev(0)), {}, lambda: own)]
    if name == "batch_norm":   # torch allocates an empty reserve buffer first
        import hookgrad
        empty_kwargs = {"dtype": hookgrad.uint8}
        return [("empty", ([0],), empty_kwargs, lambda: hookgrad.empty(0, dtype=hookgrad.uint8)),
                ("native_batch_norm", args, kwargs, lambda: own)]
    if name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        return [("convolution", args, kwargs, lambda: own)]
    aten_name = _RENAMED.get(name, name)
    if callable(aten_name):
        aten_name = aten_name(args, kwargs)
    return [(aten_name, args, kwargs, lambda: own)]


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
    if not _STACK or _DisableTorchDispatch.active():
        return None
    if str(op) == "dropout" and not (op.args[2] if len(op.args) > 2 else op.kwargs.get("training", True)):
        return None      # torch's dropout in eval mode runs no operator
    steps = _steps(op, outputs)
    results: list = []
    for name, args, kwargs, thunk in steps:
        args = tuple(results[a.index] if isinstance(a, _Prev) else a for a in args)
        func = _DispatchedOp(_packet(name), _overload_name(name, args, kwargs), args, kwargs, thunk)
        results.append(_call_mode(func, args, kwargs))
    result = results[-1]
    own = outputs[0] if len(outputs) == 1 else tuple(outputs)
    if result is own or result is None:
        return None
    if isinstance(result, Tensor) and len(outputs) == 1:
        return result
    if isinstance(result, (tuple, list)) and len(result) == len(outputs):
        return tuple(result)
    raise RuntimeError(f"TorchDispatchMode.__torch_dispatch__ returned {type(result).__name__} for "
                       f"aten.{steps[-1][0]}, whose result is {len(outputs)} tensor(s)")


def _backward_ran(node, grad_inputs, grad_outputs):
    if _DisableTorchDispatch.active():
        return
    for mode in _STACK:
        if not mode._warned_backward:
            mode._warned_backward = True
            warnings.warn(f"{type(mode).__name__}: hookgrad's dispatch modes see the forward ops only; the "
                          "ATen operators of the backward pass are not dispatched to them", UserWarning, stacklevel=2)
