"""Elementwise ops: each forward (NumPy) beside its backward (hookgrad ops, so it is differentiable)."""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor, wrap
from ..autograd.graph import Node
from ._base import (GRAD, NONE_EDGE, as_tensor_arg, data_of, edge, float_dtype_for, is_number,
                    record, result_np_dtype, sum_to_shape)
from ._base import quiet_fp

_err = quiet_fp  # NumPy reports no inf/nan arithmetic (nor does torch)


# ---- binary arithmetic ----------------------------------------------------------------------
def _binary_inputs(a, b):
    """(a, b, numpy result dtype): ``a`` is a Tensor, ``b`` a Tensor or a Python number."""
    if not isinstance(a, Tensor):
        a = as_tensor_arg(a)
    if not isinstance(b, Tensor) and not is_number(b):
        b = as_tensor_arg(b)
    elif isinstance(b, np.generic):
        b = b.item()
    return a, b, result_np_dtype(a, b)


def _np_binary(np_fn, a, b, dt, scale=1, float32_scalar=False):
    """``np_fn(a, b * scale)`` in dtype ``dt``; broadcasting failures become torch's RuntimeError.
    ``float32_scalar``: with bfloat16 operands a Python number enters as float32, unrounded (torch's
    mul and div; its add, sub and pow round the number to bfloat16 first)."""
    if float32_scalar and not isinstance(b, Tensor) and _dtype.is_bfloat16_np(dt):
        bd = np.float32(b)
    else:
        bd = data_of(b, dt)
    if scale != 1:
        bd = bd * scale
    try:
        with _err():  # torch never warns about inf/nan arithmetic
            return np_fn(data_of(a, dt), bd)
    except ValueError:
        raise RuntimeError(_broadcast_message(a, b)) from None


def _broadcast_message(a, b):
    sa = tuple(a.shape) if isinstance(a, Tensor) else ()
    sb = tuple(b.shape) if isinstance(b, Tensor) else ()
    n = max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    for i in range(n - 1, -1, -1):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            return (f"The size of tensor a ({pa[i]}) must match the size of tensor b ({pb[i]}) at non-singleton "
                    f"dimension {i}")
    return f"shapes {list(sa)} and {list(sb)} are not broadcastable"


def _finish(out_data, np_dtype):
    if out_data.dtype != np_dtype:
        out_data = out_data.astype(np_dtype)
    return wrap(out_data)


def _b_edge(b):
    return edge(b) if isinstance(b, Tensor) else NONE_EDGE


def _needs(a, b):
    return GRAD.enabled and (a._requires_grad or (isinstance(b, Tensor) and b._requires_grad))


class AddBackward0(Node):
    __slots__ = ("alpha", "a_shape", "b_shape", "a_dtype", "b_dtype")
    sign = 1

    def apply(self, grads):
        g = grads[0]
        ga = gb = None
        if self.next_functions[0][0] is not None:
            ga = _cast(sum_to_shape(g, self.a_shape), self.a_dtype)
        if self.next_functions[1][0] is not None:
            scale = self.sign * self.alpha
            gb = g if scale == 1 else -g if scale == -1 else g * scale
            gb = _cast(sum_to_shape(gb, self.b_shape), self.b_dtype)
        return ga, gb


class SubBackward0(AddBackward0):
    __slots__ = ()
    sign = -1


def _cast(g, np_dtype):
    if g is None or g._data.dtype == np_dtype:
        return g
    return g.to(_dtype.from_numpy_dtype(np_dtype))


def _shape_dtype(b):
    if isinstance(b, Tensor):
        return b._data.shape, b._data.dtype
    return (), None


def _add_or_sub(a, b, alpha, out, np_fn, node_cls):
    a, b, dt = _binary_inputs(a, b)
    if node_cls is SubBackward0 and dt.kind == "b":
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    result = _finish(_np_binary(np_fn, a, b, dt, alpha), dt)
    if _needs(a, b):
        node = node_cls((edge(a), _b_edge(b)))
        node.alpha = alpha
        node.a_shape, node.a_dtype = a._data.shape, a._data.dtype
        node.b_shape, node.b_dtype = _shape_dtype(b)
        record(node, result)
    return _maybe_out(result, out)


def add(a, b, *, alpha=1, out=None):
    return _add_or_sub(a, b, alpha, out, np.add, AddBackward0)


def sub(a, b, *, alpha=1, out=None):
    return _add_or_sub(a, b, alpha, out, np.subtract, SubBackward0)


class RsubBackward1(Node):
    __slots__ = ("alpha",)

    def apply(self, grads):
        return (grads[0] * (-self.alpha),)


def rsub(a, b, *, alpha=1):
    """``b - alpha * a``."""
    if isinstance(b, Tensor):
        return sub(b, a, alpha=alpha)
    a, b, dt = _binary_inputs(a, b)
    result = _finish(np.subtract(data_of(b, dt), data_of(a, dt) * alpha), dt)
    if _needs(a, None):
        node = RsubBackward1((edge(a),))
        node.alpha = alpha
        record(node, result)
    return result


class MulBackward0(Node):
    __slots__ = ("a_shape", "b_shape", "a_dtype", "b_dtype", "scalar")

    def apply(self, grads):
        g = grads[0]
        saved = self.saved()
        a, b = saved if self.scalar is None else (saved[0], self.scalar)
        ga = gb = None
        if self.next_functions[0][0] is not None:
            ga = _cast(sum_to_shape(g * b, self.a_shape), self.a_dtype)
        if self.next_functions[1][0] is not None:
            gb = _cast(sum_to_shape(g * a, self.b_shape), self.b_dtype)
        return ga, gb


def mul(a, b, *, out=None):
    a, b, dt = _binary_inputs(a, b)
    result = _finish(_np_binary(np.multiply, a, b, dt, float32_scalar=True), dt)
    if _needs(a, b):
        node = MulBackward0((edge(a), _b_edge(b)))
        node.a_shape, node.a_dtype = a._data.shape, a._data.dtype
        node.b_shape, node.b_dtype = _shape_dtype(b)
        if isinstance(b, Tensor):
            node.scalar = None
            # each side's gradient needs only the other side
            node.save(a if b._requires_grad else None, b if a._requires_grad else None)
        else:
            node.scalar = b
            node.save(None)
        record(node, result)
    return _maybe_out(result, out)


class DivBackward0(Node):
    __slots__ = ("a_shape", "b_shape", "a_dtype", "b_dtype", "scalar")

    def apply(self, grads):
        g = grads[0]
        saved = self.saved()
        a, b = saved if self.scalar is None else (saved[0], self.scalar)
        ga = gb = None
        if self.next_functions[0][0] is not None:
            ga = _cast(sum_to_shape(g / b, self.a_shape), self.a_dtype)
        if self.next_functions[1][0] is not None:
            gb = _cast(sum_to_shape(-g * a / (b * b), self.b_shape), self.b_dtype)
        return ga, gb


def _div_dtype(a, b):
    dt = result_np_dtype(a, b)
    return dt if dt.kind in "fc" or _dtype.is_floating_np(dt) else _dtype.get_default_dtype().np


def div(a, b, *, rounding_mode=None, out=None):
    a, b, _ = _binary_inputs(a, b)
    if rounding_mode is not None:
        return _rounded_div(a, b, rounding_mode)
    dt = _div_dtype(a, b)
    with _err():
        result = _finish(_np_binary(np.true_divide, a, b, dt, float32_scalar=True), dt)
    if _needs(a, b):
        node = DivBackward0((edge(a), _b_edge(b)))
        node.a_shape, node.a_dtype = a._data.shape, a._data.dtype
        node.b_shape, node.b_dtype = _shape_dtype(b)
        if isinstance(b, Tensor):
            node.scalar = None
            node.save(a if b._requires_grad else None, b)
        else:
            node.scalar = b
            node.save(None)
        record(node, result)
    return _maybe_out(result, out)


def _rounded_div(a, b, mode):
    dt = result_np_dtype(a, b)
    with _err():
        if mode == "floor":
            data = np.floor_divide(data_of(a, dt), data_of(b, dt)) if dt.kind in "iu" else np.floor(
                np.true_divide(data_of(a, dt), data_of(b, dt)))
        elif mode == "trunc":
            q = np.true_divide(data_of(a, dt), data_of(b, dt))
            data = np.trunc(q)
        else:
            raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{mode}'")
    result = _finish(np.asarray(data), dt)
    if _needs(a, b):
        node = _ZeroGradBackward("DivBackward1", (edge(a), _b_edge(b)), (a, b))
        record(node, result)
    return result


def rdiv(a, b):
    """``b / a`` for a number ``b``: torch records it as ``reciprocal(a) * b``."""
    return mul(reciprocal(a), b)


def true_divide(a, b):
    return div(a, b)


def floor_divide(a, b):
    return div(a, b, rounding_mode="floor")


class _ZeroGradBackward(Node):
    """Ops whose gradient is zero almost everywhere (rounding, sign, remainder's divisor, ...)."""

    __slots__ = ("_name", "shapes")

    def __init__(self, name, edges, inputs):
        super().__init__(edges)
        self._name = name
        self.shapes = [(t._data.shape, t._data.dtype) if isinstance(t, Tensor) else None for t in inputs]

    def name(self):
        return self._name

    def apply(self, grads):
        return tuple(wrap(np.zeros(s[0], dtype=s[1])) if s is not None and e[0] is not None else None
                     for s, e in zip(self.shapes, self.next_functions))


class PowBackward0(Node):
    __slots__ = ("exponent",)

    def apply(self, grads):
        (x,) = self.saved()
        e = self.exponent
        if e == 0:
            return (grads[0] * 0,)
        return (grads[0] * e * x.pow(e - 1),)


class PowBackward1(Node):
    __slots__ = ("a_shape", "b_shape")

    def apply(self, grads):
        a, b, result = self.saved()
        g = grads[0]
        ga = gb = None
        if self.next_functions[0][0] is not None:
            ga = sum_to_shape(g * b * a.pow(b - 1), self.a_shape)
        if self.next_functions[1][0] is not None:
            # d(a^b)/db = a^b * log(a), taken as 0 where a == 0 and b >= 0
            la = a.log()
            gb = g * result * la
            gb = gb.masked_fill((a == 0) & (b >= 0), 0.0)
            gb = sum_to_shape(gb, self.b_shape)
        return ga, gb


class PowBackward2(Node):
    __slots__ = ("base",)

    def apply(self, grads):
        (result,) = self.saved()
        with _err():
            log_base = float(np.log(self.base)) if self.base >= 0 else float("nan")
        return (grads[0] * result * log_base,)


def pow(a, b):
    if is_number(a) and isinstance(b, Tensor):
        dt = result_np_dtype(b, a)
        with _err():
            result = _finish(np.power(data_of(a, dt), data_of(b, dt)), dt)
        if GRAD.enabled and b._requires_grad:
            node = PowBackward2((edge(b),))
            node.base = a
            record(node, result)
            node.save(output=result)
        return result
    a, b, dt = _binary_inputs(a, b)
    if isinstance(b, Tensor):
        with _err():
            result = _finish(np.power(data_of(a, dt), data_of(b, dt)), dt)
        if _needs(a, b):
            node = PowBackward1((edge(a), edge(b)))
            node.a_shape, node.b_shape = a._data.shape, b._data.shape
            record(node, result)
            node.save(a, b, output=result)
        return result
    if dt.kind in "iu" and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    with _err():
        ad = data_of(a, dt)
        result = _finish(ad * ad if b == 2 else np.power(ad, data_of(b, dt)), dt)
    if _needs(a, None):
        node = PowBackward0((edge(a),))
        node.exponent = b
        node.save(a)
        record(node, result)
    return result


def float_power(a, b):
    a = as_tensor_arg(a).double()
    return pow(a, b.double() if isinstance(b, Tensor) else b)


# ---- unary ops ------------------------------------------------------------------------------
def _unary(x, np_fn, node_cls, save_input=False, save_output=False, floating=True):
    if not isinstance(x, Tensor):
        x = as_tensor_arg(x)
    data = x._data
    if floating and data.dtype.kind not in "fc":
        data = data.astype(float_dtype_for(x))
    with _err():
        result = wrap(_dtype.narrow_to(np_fn(data), x._data.dtype))
    if GRAD.enabled and x._requires_grad:
        node = node_cls((edge(x),))
        record(node, result)
        if save_input or save_output:
            node.save(*((x,) if save_input else ()), output=result if save_output else None)
    return result


def _define_unary(name, np_fn, backward, save_input=False, save_output=False, floating=True, doc=""):
    """Declare a unary op from its NumPy forward and its backward ``(grad, *saved) -> grad``."""
    node_cls = type(name, (Node,), {"__slots__": (), "apply": lambda self, grads: (
        backward(grads[0], *self.saved()),)})

    def op(x):
        return _unary(x, np_fn, node_cls, save_input, save_output, floating)

    op.__doc__ = doc
    op.node_cls = node_cls
    return op


neg = _define_unary("NegBackward0", np.negative, lambda g: -g, floating=False)
exp = _define_unary("ExpBackward0", np.exp, lambda g, r: g * r, save_output=True)
exp2 = _define_unary("Exp2Backward0", np.exp2, lambda g, r: g * r * float(np.log(2.0)), save_output=True)
log = _define_unary("LogBackward0", np.log, lambda g, x: g / x, save_input=True)
log2 = _define_unary("Log2Backward0", np.log2, lambda g, x: g / (x * float(np.log(2.0))), save_input=True)
log10 = _define_unary("Log10Backward0", np.log10, lambda g, x: g / (x * float(np.log(10.0))), save_input=True)
log1p = _define_unary("Log1PBackward0", np.log1p, lambda g, x: g / (x + 1), save_input=True)
expm1 = _define_unary("Expm1Backward0", np.expm1, lambda g, r: g * (r + 1), save_output=True)
sqrt = _define_unary("SqrtBackward0", np.sqrt, lambda g, r: g / (r * 2), save_output=True)
rsqrt = _define_unary("RsqrtBackward0", lambda d: 1 / np.sqrt(d), lambda g, r: g * r.pow(3) * -0.5, save_output=True)
abs = _define_unary("AbsBackward0", np.abs, lambda g, x: g * x.sign(), save_input=True, floating=False)
sin = _define_unary("SinBackward0", np.sin, lambda g, x: g * x.cos(), save_input=True)
cos = _define_unary("CosBackward0", np.cos, lambda g, x: -(g * x.sin()), save_input=True)
tan = _define_unary("TanBackward0", np.tan, lambda g, r: g * (r * r + 1), save_output=True)
tanh = _define_unary("TanhBackward0", np.tanh, lambda g, r: g * (1 - r * r), save_output=True)
sinh = _define_unary("SinhBackward0", np.sinh, lambda g, x: g * x.cosh(), save_input=True)
cosh = _define_unary("CoshBackward0", np.cosh, lambda g, x: g * x.sinh(), save_input=True)
asin = _define_unary("AsinBackward0", np.arcsin, lambda g, x: g * (1 - x * x).rsqrt(), save_input=True)
acos = _define_unary("AcosBackward0", np.arccos, lambda g, x: -(g * (1 - x * x).rsqrt()), save_input=True)
atan = _define_unary("AtanBackward0", np.arctan, lambda g, x: g / (x * x + 1), save_input=True)
reciprocal = _define_unary("ReciprocalBackward0", np.reciprocal, lambda g, r: -(g * r * r), save_output=True)


def _sigmoid_np(d):
    # exp of a negative argument only: no overflow warnings for large |x|
    out = np.empty_like(d)
    pos = d >= 0
    np.divide(1, 1 + np.exp(-d, where=pos, out=np.zeros_like(d)), where=pos, out=out)
    ed = np.exp(d, where=~pos, out=np.zeros_like(d))
    np.divide(ed, 1 + ed, where=~pos, out=out)
    return out


sigmoid = _define_unary("SigmoidBackward0", _sigmoid_np, lambda g, r: g * (r * (1 - r)), save_output=True)


def _relu_np(d):
    if d.dtype.kind == "b":
        return d.copy()
    if d.dtype.kind == "f":
        # np.clip with scalar bounds of the array's own type takes NumPy's vectorized clip loop:
        # 115 us on a 64x16x28x28 float32 batch, against 185 us for np.maximum with an array of
        # zeros (and 400 us against the scalar 0); like torch it keeps NaN and the sign of -0.0
        return np.clip(d, d.dtype.type(0), d.dtype.type(np.inf))
    return np.maximum(d, np.zeros_like(d))


_SAME_SIZE_INT = {2: np.int16, 4: np.int32, 8: np.int64}


def _masked(g, keep):
    """``g`` where ``keep``, else +0.0, exactly as torch's threshold_backward: the bits of ``g`` ANDed
    with all-ones or all-zeros. Multiplying by the mask would turn an inf or NaN gradient at a
    dropped position into NaN, and a negative one into -0.0; this costs one more integer pass."""
    ints = _SAME_SIZE_INT[g.dtype.itemsize]
    bits = keep.view(np.uint8).astype(ints)
    np.negative(bits, out=bits)  # 1 -> all ones
    np.bitwise_and(np.ascontiguousarray(g).view(ints), bits, out=bits)
    return bits.view(g.dtype)


class ReluBackward0(Node):
    __slots__ = ()

    def apply(self, grads):
        (r,) = self.saved()
        g = grads[0]
        gd, rd = g._data, r._data
        if GRAD.enabled or gd.dtype != rd.dtype or gd.dtype.kind != "f":  # create_graph: a recorded product
            return (g * (r > 0),)
        return (wrap(_masked(gd, rd > 0)),)


def relu(x):
    return _unary(x, _relu_np, ReluBackward0, save_output=True, floating=False)


def _zero_grad_unary(name, np_fn, floating=False):
    class _Node(Node):
        __slots__ = ("shape", "dtype")

        def apply(self, grads):
            return (wrap(np.zeros(self.shape, dtype=self.dtype)),)

    _Node.__name__ = _Node.__qualname__ = name

    def op(x):
        if not isinstance(x, Tensor):
            x = as_tensor_arg(x)
        data = x._data
        if floating and data.dtype.kind not in "fc":
            data = data.astype(float_dtype_for(x))
        result = wrap(_dtype.narrow_to(np_fn(data), x._data.dtype))
        if GRAD.enabled and x._requires_grad:
            node = _Node((edge(x),))
            node.shape, node.dtype = x._data.shape, x._data.dtype
            record(node, result)
        return result
    return op


sign = _zero_grad_unary("SignBackward0", lambda d: np.sign(d) if d.dtype.kind != "b" else d.copy())
_isfloat = _dtype.is_floating_np
floor = _zero_grad_unary("FloorBackward0", lambda d: np.floor(d) if _isfloat(d.dtype) else d.copy())
ceil = _zero_grad_unary("CeilBackward0", lambda d: np.ceil(d) if _isfloat(d.dtype) else d.copy())
trunc = _zero_grad_unary("TruncBackward0", lambda d: np.trunc(d) if _isfloat(d.dtype) else d.copy())
frac = _define_unary("FracBackward0", lambda d: d - np.trunc(d), lambda g: g)


def round(x, *, decimals=0):
    op = _zero_grad_unary("RoundBackward0" if decimals == 0 else "RoundBackward1",
                          lambda d: _dtype.narrow_to(np.round(_dtype.widen(d), decimals), d.dtype)
                          if _isfloat(d.dtype) else d.copy())
    return op(x)


def square(x):
    return pow(x, 2)


# ---- clamp, maximum/minimum, where, lerp -------------------------------------------------------
class ClampBackward1(Node):
    __slots__ = ("lo", "hi")

    def apply(self, grads):
        (x,) = self.saved()
        mask = None
        if self.lo is not None:
            mask = x >= self.lo
        if self.hi is not None:
            m = x <= self.hi
            mask = m if mask is None else mask & m
        return (grads[0] * mask,)


class ClampBackward0(Node):
    __slots__ = ()

    def apply(self, grads):
        x, lo, hi = self.saved()
        g = grads[0]
        gx = gl = gh = None
        lo_mask = (x >= lo) if lo is not None else None
        hi_mask = (x <= hi) if hi is not None else None
        if self.next_functions[0][0] is not None:
            mask = lo_mask if hi_mask is None else hi_mask if lo_mask is None else lo_mask & hi_mask
            gx = sum_to_shape(g * mask, x._data.shape)
        if lo is not None and self.next_functions[1][0] is not None:
            m = ~lo_mask if hi_mask is None else (~lo_mask) & (lo <= hi)
            gl = sum_to_shape(g * m, lo._data.shape)
        if hi is not None and self.next_functions[2][0] is not None:
            gh = sum_to_shape(g * (~hi_mask), hi._data.shape)
        return gx, gl, gh


def clamp(x, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        lo = as_tensor_arg(min, x) if min is not None else None
        hi = as_tensor_arg(max, x) if max is not None else None
        data = x._data
        if lo is not None:
            data = np.maximum(data, lo._data.astype(data.dtype, copy=False))
        if hi is not None:
            data = np.minimum(data, hi._data.astype(data.dtype, copy=False))
        result = wrap(np.asarray(data, dtype=x._data.dtype))
        if GRAD.enabled and (x._requires_grad or (lo is not None and lo._requires_grad)
                             or (hi is not None and hi._requires_grad)):
            node = ClampBackward0((edge(x), edge(lo), edge(hi)))
            node.save(x, lo, hi)
            record(node, result)
        return result
    dt = x._data.dtype
    if dt.kind in "iu" and (isinstance(min, float) or isinstance(max, float)):
        dt = _dtype.get_default_dtype().np
    data = x._data.astype(dt, copy=False)
    with _err():
        out = np.clip(data, min, max) if min is None or max is None or min <= max else np.full_like(data, max)
    result = wrap(np.asarray(out, dtype=dt))
    if GRAD.enabled and x._requires_grad:
        node = ClampBackward1((edge(x),))
        node.lo, node.hi = min, max
        node.save(x)
        record(node, result)
    return result


clip = clamp


def clamp_min(x, min):
    return clamp(x, min=min)


def clamp_max(x, max):
    return clamp(x, max=max)


class MaximumBackward0(Node):
    __slots__ = ("pick",)

    def apply(self, grads):
        a, b = self.saved()
        g = grads[0]
        if self.pick == "max":
            wa = (a > b) + (a == b) * 0.5
        else:
            wa = (a < b) + (a == b) * 0.5
        wa = wa.to(g.dtype)
        ga = sum_to_shape(g * wa, a._data.shape) if self.next_functions[0][0] is not None else None
        gb = sum_to_shape(g * (1 - wa), b._data.shape) if self.next_functions[1][0] is not None else None
        return ga, gb


class MinimumBackward0(MaximumBackward0):
    __slots__ = ()


def _extremum(a, b, np_fn, node_cls, pick):
    a = as_tensor_arg(a)
    b = as_tensor_arg(b, a)
    dt = result_np_dtype(a, b)
    result = _finish(np_fn(data_of(a, dt), data_of(b, dt)), dt)
    if _needs(a, b):
        node = node_cls((edge(a), edge(b)))
        node.pick = pick
        node.save(a, b)
        record(node, result)
    return result


def maximum(a, b):
    return _extremum(a, b, np.maximum, MaximumBackward0, "max")


def minimum(a, b):
    return _extremum(a, b, np.minimum, MinimumBackward0, "min")


fmax, fmin = maximum, minimum


class WhereBackward0(Node):
    __slots__ = ("a_shape", "b_shape")

    def apply(self, grads):
        (cond,) = self.saved()
        g = grads[0]
        zero = g * 0
        ga = sum_to_shape(g.where(cond, zero), self.a_shape) if self.next_functions[0][0] is not None else None
        gb = sum_to_shape(zero.where(cond, g), self.b_shape) if self.next_functions[1][0] is not None else None
        return ga, gb


def where(condition, input=None, other=None):
    condition = as_tensor_arg(condition)
    if input is None and other is None:
        return tuple(wrap(i) for i in np.nonzero(condition._data))
    a = as_tensor_arg(input) if not is_number(input) else input
    b = as_tensor_arg(other) if not is_number(other) else other
    if not isinstance(a, Tensor):
        a = as_tensor_arg(a, b if isinstance(b, Tensor) else None)
    if not isinstance(b, Tensor):
        b = as_tensor_arg(b, a)
    dt = result_np_dtype(a, b)
    cond = condition._data.astype(bool, copy=False)
    result = wrap(np.where(cond, data_of(a, dt), data_of(b, dt)))
    if _needs(a, b):
        node = WhereBackward0((edge(a), edge(b)))
        node.a_shape, node.b_shape = a._data.shape, b._data.shape
        node.save(wrap(cond))
        record(node, result)
    return result


class LerpBackward0(Node):
    __slots__ = ("weight",)

    def apply(self, grads):
        g = grads[0]
        start, end = self.saved()
        w = self.weight
        ga = sum_to_shape(g * (1 - w), start._data.shape) if self.next_functions[0][0] is not None else None
        gb = sum_to_shape(g * w, end._data.shape) if self.next_functions[1][0] is not None else None
        return ga, gb


class LerpBackward1(Node):
    __slots__ = ()

    def apply(self, grads):
        g = grads[0]
        start, end, w = self.saved()
        ga = sum_to_shape(g * (1 - w), start._data.shape) if self.next_functions[0][0] is not None else None
        gb = sum_to_shape(g * w, end._data.shape) if self.next_functions[1][0] is not None else None
        gw = sum_to_shape(g * (end - start), w._data.shape) if self.next_functions[2][0] is not None else None
        return ga, gb, gw


def lerp(start, end, weight):
    start, end = as_tensor_arg(start), as_tensor_arg(end)
    if isinstance(weight, Tensor):
        result = wrap(start._data + weight._data * (end._data - start._data))
        if GRAD.enabled and (start._requires_grad or end._requires_grad or weight._requires_grad):
            node = LerpBackward1((edge(start), edge(end), edge(weight)))
            node.save(start, end, weight)
            record(node, result)
        return result
    s, e = _dtype.widen(start._data), _dtype.widen(end._data)  # bfloat16: float32 math, one rounding
    result = wrap((s + weight * (e - s)).astype(start._data.dtype, copy=False))
    if _needs(start, end):
        node = LerpBackward0((edge(start), edge(end)))
        node.weight = weight
        node.save(start, end)
        record(node, result)
    return result


class NanToNumBackward0(Node):
    __slots__ = ()

    def apply(self, grads):
        (x,) = self.saved()
        return (grads[0] * x.isfinite(),)


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    data = x._data
    if _dtype.is_bfloat16_np(data.dtype):  # NumPy sees no float in bfloat16: work in float32 (exact)
        top = _dtype.finfo(_dtype.bfloat16).max
        posinf, neginf = (top if posinf is None else posinf), (-top if neginf is None else neginf)
        result = wrap(np.nan_to_num(data.astype(np.float32), nan=nan, posinf=posinf, neginf=neginf).astype(data.dtype))
    else:
        result = wrap(np.nan_to_num(data, nan=nan, posinf=posinf, neginf=neginf))
    if GRAD.enabled and x._requires_grad:
        node = NanToNumBackward0((edge(x),))
        node.save(x)
        record(node, result)
    return result


class Atan2Backward0(Node):
    __slots__ = ()

    def apply(self, grads):
        a, b = self.saved()
        g = grads[0]
        denom = a * a + b * b
        ga = sum_to_shape(g * b / denom, a._data.shape) if self.next_functions[0][0] is not None else None
        gb = sum_to_shape(-g * a / denom, b._data.shape) if self.next_functions[1][0] is not None else None
        return ga, gb


def atan2(a, b):
    a, b = as_tensor_arg(a), as_tensor_arg(b)
    result = wrap(np.arctan2(a._data, b._data))
    if _needs(a, b):
        node = Atan2Backward0((edge(a), edge(b)))
        node.save(a, b)
        record(node, result)
    return result


class RemainderBackward0(Node):
    __slots__ = ()

    def apply(self, grads):
        return (grads[0],)


def remainder(a, b):
    a, b, dt = _binary_inputs(a, b)
    with _err():
        result = _finish(np.mod(data_of(a, dt), data_of(b, dt)), dt)
    if _needs(a, None):
        node = RemainderBackward0((edge(a),))
        record(node, result)
    return result


def fmod(a, b):
    a, b, dt = _binary_inputs(a, b)
    with _err():
        result = _finish(np.fmod(data_of(a, dt), data_of(b, dt)), dt)
    if _needs(a, None):
        node = RemainderBackward0((edge(a),))
        record(node, result)
    return result


# ---- comparisons and logic (no gradient) -------------------------------------------------------
def _compare(np_fn):
    def op(a, b):
        if not isinstance(a, Tensor):
            a = as_tensor_arg(a)
        if not isinstance(b, Tensor) and not is_number(b):
            b = as_tensor_arg(b)
        dt = result_np_dtype(a, b)
        with _err():
            return wrap(np.asarray(_np_binary(np_fn, a, b, dt)))
    return op


eq = _compare(np.equal)
ne = _compare(np.not_equal)
lt = _compare(np.less)
le = _compare(np.less_equal)
gt = _compare(np.greater)
ge = _compare(np.greater_equal)
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def _logical(np_fn):
    def op(a, b):
        a, b = as_tensor_arg(a), as_tensor_arg(b)
        return wrap(np_fn(a._data, b._data))
    return op


logical_and = _logical(np.logical_and)
logical_or = _logical(np.logical_or)
logical_xor = _logical(np.logical_xor)


def logical_not(a):
    return wrap(np.logical_not(as_tensor_arg(a)._data))


def _bitwise(np_fn, name):
    def op(a, b):
        a = as_tensor_arg(a)
        if not isinstance(b, Tensor):
            b = as_tensor_arg(b, a)
        if _dtype.is_floating_np(a._data.dtype) or _dtype.is_floating_np(b._data.dtype):
            raise RuntimeError(f"\"{name}_cpu\" not implemented for 'Float'")
        dt = result_np_dtype(a, b)
        return wrap(np_fn(data_of(a, dt), data_of(b, dt)))
    return op


bitwise_and = _bitwise(np.bitwise_and, "bitwise_and")
bitwise_or = _bitwise(np.bitwise_or, "bitwise_or")
bitwise_xor = _bitwise(np.bitwise_xor, "bitwise_xor")


def bitwise_not(a):
    if _dtype.is_floating_np(a._data.dtype):
        raise RuntimeError("\"bitwise_not_cpu\" not implemented for 'Float'")
    return wrap(np.invert(a._data))


def isnan(x):
    return wrap(np.isnan(x._data) if _dtype.is_inexact_np(x._data.dtype) else np.zeros(x._data.shape, bool))


def isinf(x):
    return wrap(np.isinf(x._data) if _dtype.is_inexact_np(x._data.dtype) else np.zeros(x._data.shape, bool))


def isfinite(x):
    return wrap(np.isfinite(x._data) if _dtype.is_inexact_np(x._data.dtype) else np.ones(x._data.shape, bool))


def isposinf(x):
    return wrap(np.isposinf(x._data))


def isneginf(x):
    return wrap(np.isneginf(x._data))


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = as_tensor_arg(a), as_tensor_arg(b, a)
    return wrap(np.isclose(a._data, b._data, rtol=rtol, atol=atol, equal_nan=equal_nan))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return bool(isclose(a, b, rtol, atol, equal_nan)._data.all())


def equal(a, b) -> bool:
    return a._data.shape == b._data.shape and bool(np.array_equal(a._data, b._data))


def _maybe_out(result, out):
    if out is None:
        return result
    out._data = result._data
    return out
