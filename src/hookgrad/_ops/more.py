"""More of torch's everyday ops: in-place function forms, pointwise ops, shape and indexing ops, and a few
constants. Ops that torch composes from others are composed here from hookgrad ops (their gradients
come from those ops); ops with a node of their own in torch have it beside them."""
from __future__ import annotations

import builtins
import itertools
import math
import threading

import numpy as np

from .. import _dtype, return_types
from .._tensor import FACTORY_REFUSES_GRAD, Tensor, wrap
from ..autograd._warn_once import warn_once
from ..autograd import grad_mode
from ..autograd.graph import Node, saved_dim
from .indexing import _ReduceIntoBackward
from . import creation, decompositions, pointwise, reduce, shape, views
from ._base import GRAD, as_tensor_arg, float_dtype_for, quiet_fp, refuse_complex, result_np_dtype, sum_to_shape
from . import _dtype_rules as _rules
from ._declare import formula_node, inplace_function, module_all, node_class, op, record_op, unary

pi, e, inf, nan = math.pi, math.e, math.inf, math.nan


# ---- torch.X_: the in-place function forms of Tensor.X_ ------------------------------------------
for _name in ("abs_", "acos_", "arccos_", "asin_", "arcsin_", "atan_", "arctan_", "acosh_", "arccosh_", "asinh_",
              "arcsinh_", "atanh_", "arctanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_",
              "cosh_", "deg2rad_", "rad2deg_", "exp_", "exp2_", "expm1_", "fix_", "floor_", "frac_", "gcd_", "lcm_",
              "ldexp_", "log_", "log10_", "log1p_", "log2_", "nan_to_num_", "neg_", "negative_", "reciprocal_",
              "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinh_", "sqrt_", "square_", "tan_", "tanh_",
              "trunc_", "index_put_", "as_strided_", "zero_", "fill_", "resize_as_", "conj_physical_"):
    inplace_function(_name)


@op(method=False)
def fill(input, value):
    """torch.fill: a new tensor like ``input`` filled with ``value`` (a number or a 0-d tensor)."""
    return input.clone().fill_(value)


# ---- unary pointwise --------------------------------------------------------------------------
acosh = unary("acosh", np.arccosh, lambda g, x: g * (x * x - 1).rsqrt(), node="AcoshBackward0", saves="self",
              aliases=("arccosh",), inplace=True)
asinh = unary("asinh", np.arcsinh, lambda g, x: g * (x * x + 1).rsqrt(), node="AsinhBackward0", saves="self",
              aliases=("arcsinh",), inplace=True)
atanh = unary("atanh", np.arctanh, lambda g, x: g / (1 - x * x), node="AtanhBackward0", saves="self",
              aliases=("arctanh",), inplace=True)
deg2rad = unary("deg2rad", np.deg2rad, lambda g: g * (math.pi / 180), node="Deg2RadBackward0", inplace=True,
                saves_self=False, on_complex=(RuntimeError, "deg2rad is not supported for complex tensors."))
rad2deg = unary("rad2deg", np.rad2deg, lambda g: g * (180 / math.pi), node="Rad2DegBackward0", inplace=True,
                saves_self=False, on_complex=(RuntimeError, "rad2deg is not supported for complex tensors."))


@op(inplace=True, saves_self=False)
def fix(x):
    return pointwise.trunc(x)


@op()
def positive(x):
    if x._ndarray.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return x


@op()
def signbit(x):
    x = as_tensor_arg(x)
    d = x._ndarray
    return wrap(np.signbit(d) if d.dtype.kind != "b" else np.zeros(d.shape, bool))


# ---- binary pointwise -------------------------------------------------------------------------
def _float_operands(a, b, name):
    """Two tensors (torch takes no number here) in their promoted dtype, floating for integer inputs."""
    for pos, (arg, argname) in enumerate(((a, "input"), (b, "other"))):
        if not isinstance(arg, Tensor):
            raise TypeError(f"{name}(): argument '{argname}' (position {pos + 1}) must be Tensor, not "
                            f"{type(arg).__name__}")
    dt = result_np_dtype(a, b)
    _rules.refuse_lowprec(dt, f"{name}_cpu")
    if name in _NO_INTEGER_KERNEL:
        _rules.refuse_kernel(np.empty(0, dt), _rules.INTEGRAL, f"{name}_cpu")
    if _dtype.is_bfloat16_np(dt):
        dt = np.dtype(np.float32)  # float32 math; the caller rounds the result back (_rounded_back)
    elif dt.kind not in "fc":
        dt = _dtype.get_default_dtype().np
    return a._ndarray.astype(dt, copy=False), b._ndarray.astype(dt, copy=False)


# float-only kernels in torch (integer and bool inputs are refused, not promoted)
_NO_INTEGER_KERNEL = {"hypot", "logaddexp", "logaddexp2"}


def _rounded_back(out, a, b):
    """A result computed in float32 for bfloat16 operands, rounded to bfloat16 once."""
    return _dtype.narrow_to(out, result_np_dtype(a, b))


def _broadcast_or_raise(fn, ad, bd):
    try:
        with quiet_fp():
            return fn(ad, bd)
    except ValueError:
        raise RuntimeError(pointwise._broadcast_message(wrap(ad), wrap(bd))) from None


def _grads(node, a_shape, b_shape, ga, gb):
    return (sum_to_shape(ga, a_shape) if node._should_compute_output(0) else None,
            sum_to_shape(gb, b_shape) if node._should_compute_output(1) else None)


class HypotBackward0(Node):
    __slots__ = ()
    saved_names = ("other", "self", "result")

    def apply(self, grads):
        b, a, r = self.saved()
        g = grads[0] / r
        return _grads(self, a._ndarray.shape, b._ndarray.shape, g * a, g * b)


@op(inplace=True)
def hypot(a, b):
    ad, bd = _float_operands(a, b, "hypot")
    result = wrap(_rounded_back(_broadcast_or_raise(np.hypot, ad, bd), a, b))
    if GRAD.enabled and (a._requires_grad or b._requires_grad):
        record_op(HypotBackward0, (a, b), result).save(b, a, output=result)
    return result


class LogaddexpBackward0(Node):
    __slots__ = ()
    saved_names = ("other", "self")
    scale = 1.0

    def apply(self, grads):
        b, a = self.saved()
        # d/da log(e^a + e^b) = sigmoid(a - b) (in base 2: the same of (a - b) ln 2)
        wa = ((a - b) * self.scale).sigmoid()
        return _grads(self, a._ndarray.shape, b._ndarray.shape, grads[0] * wa, grads[0] * (1 - wa))


class Logaddexp2Backward0(LogaddexpBackward0):
    __slots__ = ()
    scale = math.log(2.0)


def _logaddexp(a, b, np_fn, node_cls, name):
    ad, bd = _float_operands(a, b, name)
    result = wrap(_rounded_back(_broadcast_or_raise(np_fn, ad, bd), a, b))
    if GRAD.enabled and (a._requires_grad or b._requires_grad):
        record_op(node_cls, (a, b), result).save(b, a)
    return result


@op()
def logaddexp(a, b):
    return _logaddexp(a, b, np.logaddexp, LogaddexpBackward0, "logaddexp")


@op()
def logaddexp2(a, b):
    return _logaddexp(a, b, np.logaddexp2, Logaddexp2Backward0, "logaddexp2")


class CopysignBackward0(Node):
    __slots__ = ("b_shape",)
    saved_names = ("self", "result")

    def apply(self, grads):
        a, r = self.saved()
        # d|a|/da with the sign of the result; zero where a is zero (as torch)
        ratio = (r / a).masked_fill(a == 0, 0.0)
        ga = sum_to_shape(grads[0] * ratio, a._ndarray.shape) if self._should_compute_output(0) else None
        gb = sum_to_shape(grads[0] * 0, self.b_shape) if self._should_compute_output(1) else None
        return ga, gb


CopysignBackward1 = formula_node("CopysignBackward1", ("self", "result"),
                                 lambda g, a, r: g * (r / a).masked_fill(a == 0, 0.0))


@op(inplace=True)
def copysign(a, b):
    a = as_tensor_arg(a)
    _rules.refuse_lowprec(a._ndarray, "copysign_cpu")
    if isinstance(b, Tensor):
        ad, bd = _float_operands(a, b, "copysign")
    else:
        dt = result_np_dtype(a, b)
        if _dtype.is_bfloat16_np(dt):
            dt = np.dtype(np.float32)
        elif dt.kind not in "fc":
            dt = _dtype.get_default_dtype().np
        ad, bd = a._ndarray.astype(dt, copy=False), np.asanyarray(b, dtype=dt)
    result = wrap(_rounded_back(_broadcast_or_raise(np.copysign, ad, bd), a, b))
    if GRAD.enabled and (a._requires_grad or (isinstance(b, Tensor) and b._requires_grad)):
        if isinstance(b, Tensor):
            node = record_op(CopysignBackward0, (a, b), result)
            node.b_shape = b._ndarray.shape
        else:
            node = record_op(CopysignBackward1, (a,), result)
        node.save(a, output=result)
    return result


class FmaxBackward0(Node):
    __slots__ = ()
    saved_names = ("other", "self")
    pick_self = staticmethod(lambda a, b: (a >= b) | b.isnan())

    def apply(self, grads):
        b, a = self.saved()
        take_a = self.pick_self(a, b)
        g = grads[0]
        return _grads(self, a._ndarray.shape, b._ndarray.shape, g.masked_fill(~take_a, 0.0), g.masked_fill(take_a, 0.0))


class FminBackward0(FmaxBackward0):
    __slots__ = ()
    pick_self = staticmethod(lambda a, b: (a <= b) | b.isnan())


def _nan_ignoring(a, b, np_fn, node_cls, name):
    a = as_tensor_arg(a)
    b = as_tensor_arg(b, a)
    dt = result_np_dtype(a, b)
    _rules.refuse_lowprec(dt, f"{name}_cpu")
    result = wrap(_broadcast_or_raise(np_fn, a._ndarray.astype(dt, copy=False), b._ndarray.astype(dt, copy=False)))
    if GRAD.enabled and (a._requires_grad or b._requires_grad):
        record_op(node_cls, (a, b), result).save(b, a)
    return result


@op()
def fmax(a, b):
    refuse_complex("fmax not implemented for complex tensors.", a, b, error=RuntimeError)
    """Elementwise maximum that ignores NaN: NaN only where both are NaN."""
    return _nan_ignoring(a, b, np.fmax, FmaxBackward0, "fmax")


@op()
def fmin(a, b):
    refuse_complex("fmin not implemented for complex tensors.", a, b, error=RuntimeError)
    return _nan_ignoring(a, b, np.fmin, FminBackward0, "fmin")


@op(inplace=True)
def ldexp(x, other):
    """``x * 2 ** other``, in floating point."""
    x = as_tensor_arg(x)
    other = as_tensor_arg(other)
    if not _dtype.is_inexact_np(x._ndarray.dtype):
        x = x.to(_dtype.get_default_dtype())
    return x * pointwise.pow(2.0, other)


@op()
def frexp(x):
    x = as_tensor_arg(x)
    if x._ndarray.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    mantissa, exponent = np.frexp(x._ndarray)
    return FrexpResult(wrap(mantissa), wrap(exponent.astype(np.int32)))


FrexpResult = return_types.make("frexp", ("mantissa", "exponent"))


def _same_dtype_no_grad(a, b, name, np_fn, kinds, message):
    a, b = as_tensor_arg(a), as_tensor_arg(b)
    if a._ndarray.dtype.kind not in kinds or b._ndarray.dtype.kind not in kinds:
        raise message(a, b)
    dt = result_np_dtype(a, b)
    return wrap(np.asanyarray(_broadcast_or_raise(np_fn, a._ndarray.astype(dt, copy=False), b._ndarray.astype(dt, copy=False))))


def _not_implemented_for(name):
    def message(a, b):
        bad = a if a._ndarray.dtype.kind in "fcb" else b
        return NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                   f"'{_dtype.scalar_type_name(bad._ndarray.dtype)}'")
    return message


@op(inplace=True)
def gcd(a, b):
    return _same_dtype_no_grad(a, b, "gcd", np.gcd, "iu", _not_implemented_for("gcd"))


@op(inplace=True)
def lcm(a, b):
    return _same_dtype_no_grad(a, b, "lcm", np.lcm, "iu", _not_implemented_for("lcm"))


@op(inplace=True)
def heaviside(x, values):
    refuse_complex("heaviside is not yet implemented for complex tensors.", x, values, error=RuntimeError)
    x, values = as_tensor_arg(x), as_tensor_arg(values)
    if x._ndarray.dtype != values._ndarray.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    pointwise.check_broadcast(x, values)
    d, v = x._ndarray, values._ndarray
    out = np.where(d == 0, v, (d > 0).astype(d.dtype)) if d.dtype.kind != "b" else np.where(d, True, v)
    return wrap(np.asanyarray(np.broadcast_to(out, np.broadcast_shapes(d.shape, v.shape)), dtype=d.dtype).copy())


@op(inplace=True)
def nextafter(x, other):
    x, other = as_tensor_arg(x), as_tensor_arg(other)
    dt = result_np_dtype(x, other)
    return wrap(np.asanyarray(_broadcast_or_raise(np.nextafter, x._ndarray.astype(dt, copy=False),
                                               other._ndarray.astype(dt, copy=False))))


def _shift(a, b, name, left):
    a = as_tensor_arg(a)
    b = as_tensor_arg(b, a)
    dt = result_np_dtype(a, b)
    if dt.kind not in "iub":   # torch names the promoted type (ComplexFloat for ``t << 1j``)
        raise NotImplementedError(f"\"{'lshift' if left else 'rshift'}_cpu\" not implemented for "
                                  f"'{_dtype.scalar_type_name(dt)}'")
    if dt == np.bool_:
        raise NotImplementedError(f"\"{'lshift' if left else 'rshift'}_cpu\" not implemented for 'Bool'")
    ad, bd = a._ndarray.astype(dt, copy=False), b._ndarray.astype(dt, copy=False)
    bits = dt.itemsize * 8
    too_far = (bd >= bits) | (bd < 0)  # C shifts this far are undefined; torch gives 0 (or the sign)
    safe = np.where(too_far, 0, bd).astype(dt)
    with quiet_fp():
        if left:
            out = np.where(too_far, 0, _broadcast_or_raise(np.left_shift, ad, safe))
        else:
            out = np.where(too_far, np.where(ad < 0, -1, 0) if dt.kind == "i" else 0,
                           _broadcast_or_raise(np.right_shift, ad, safe))
    return wrap(np.asanyarray(out, dtype=dt))


def _legacy_name(np_dtype):
    name = str(_dtype.from_numpy_dtype(np_dtype)).split(".")[-1]
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}.get(name, name)


@op(inplace=True)
def bitwise_left_shift(a, b):
    return _shift(a, b, "bitwise_left_shift", True)


@op(inplace=True)
def bitwise_right_shift(a, b):
    return _shift(a, b, "bitwise_right_shift", False)


# ---- integration, cross product, norms -----------------------------------------------------------
def _trapezoid_steps(y, x, dx, dim, name):
    if x is not None and dx is not None:
        raise RuntimeError(f"{name}: only one of x and dx may be given")
    n = y.shape[dim]
    inner = views.narrow(y, dim, 1, n - 1) + views.narrow(y, dim, 0, n - 1)
    if x is None:
        return inner * ((1.0 if dx is None else dx) / 2)
    if x.dim() == 1:
        widths = x[1:] - x[:-1]
        shape_ = [1] * y.dim()
        shape_[dim] = n - 1
        widths = widths.reshape(shape_)
    else:
        widths = views.narrow(x, dim, 1, n - 1) - views.narrow(x, dim, 0, n - 1)
    return inner * widths / 2


@op(method=False, aliases=("trapz",))
def trapezoid(y, x=None, *, dx=None, dim=-1):
    if x is not None and not isinstance(x, Tensor):
        raise TypeError(f"trapezoid() received an invalid combination of arguments: x must be a Tensor (the spacing "
                        f"is the keyword dx)")
    if y._ndarray.dtype.kind == "b":
        raise RuntimeError("trapezoid: received a bool input for `y`, but bool is not supported")
    dim = dim % y.dim() if y.dim() else 0
    if y.shape[dim] == 0:
        return reduce.sum(y, dim)
    return reduce.sum(_trapezoid_steps(y, x, dx, dim, "trapezoid"), dim)


@op(method=False)
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    if x is not None and not isinstance(x, Tensor):
        raise TypeError(f"cumulative_trapezoid() received an invalid combination of arguments: x must be a Tensor (the spacing "
                        f"is the keyword dx)")
    dim = dim % y.dim() if y.dim() else 0
    if y.shape[dim] == 0:
        return y.clone()
    return reduce.cumsum(_trapezoid_steps(y, x, dx, dim, "cumulative_trapezoid"), dim)


@op()
def cross(a, b, dim=None):
    _rules.refuse_kernel(a._ndarray, _rules.BOOL, "cross")
    if a.dim() != b.dim():
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if a._ndarray.dtype != b._ndarray.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(a._ndarray.dtype)} but found "
                           f"{_dtype.scalar_type_name(b._ndarray.dtype)}")
    if dim is None:
        warn_once("cross", "Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the "
                  "dim explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                  "with that of linalg.cross in a future release.", stacklevel=2)
        pointwise.check_broadcast(a, b)
        both = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
        sizes = [i for i, s in enumerate(both) if s == 3]
        if not sizes:
            raise RuntimeError("no dimension of size 3 in input")
        dim = sizes[0]
    if a.shape[dim] != 3 or b.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {a.shape[dim]} and "
                           f"{b.shape[dim]}")
    return decompositions.cross_product(a, b, dim % a.dim(), dim)


@op(inplace=True)
def renorm(x, p, dim, maxnorm):
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to that norm."""
    if x.dim() < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {x.dim()} dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    dim = dim % x.dim()
    others = tuple(i for i in range(x.dim()) if i != dim)
    norms = reduce.vector_norm(x, p, dim=others, keepdim=True) if others else x.abs()
    factor = pointwise.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return x * factor.to(x.dtype)


@op()
def dist(a, b, p=2):
    result = _unrecorded(lambda: reduce.vector_norm(a - b, p))
    if GRAD.enabled and (a._requires_grad or b._requires_grad):
        node = record_op(DistBackward0, (a, b), result)
        node.p = p
        node.save(b, a, output=result)
    return result


class DistBackward0(Node):
    """The norm's gradient at ``self - other``, to each input (summed over its broadcast dimensions)."""
    __slots__ = ("p",)
    saved_names = ("other", "self", "result")   # in torch's packing order
    saved_values = {"p": lambda n: n.p}

    def apply(self, grads):
        other, x, result = self.saved()
        wants_other = self._should_compute_output(1)
        if self.p == 0:   # torch's norm gradient for p = 0 is undefined, which other's negation refuses
            if wants_other:
                raise RuntimeError("Expected a proper Tensor but got None (or an undefined Tensor in C++) for "
                                   "argument #0 'self'")
            return None, None
        grad = reduce.vector_norm_grad(x - other, grads[0], result, self.p, None, False)
        ga = sum_to_shape(grad, x._ndarray.shape) if self._should_compute_output(0) else None
        gb = sum_to_shape(-grad, other._ndarray.shape) if wants_other else None
        return ga, gb


@op(method=False)
def pdist(x, p=2):
    if x.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {x.dim()}D")
    _rules.refuse_kernel(x._ndarray, _rules.HALF, "pdist")
    n = x.shape[0]
    rows, cols = np.triu_indices(n, 1)
    if len(rows) == 0:
        return wrap(np.zeros(0, dtype=x._ndarray.dtype)) + x.sum() * 0
    diff = x[wrap(rows.astype(np.int64))] - x[wrap(cols.astype(np.int64))]
    return reduce.vector_norm(diff, p, dim=1)


_CDIST_MODES = (None, "use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def _cdist_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Every row of ``a`` minus every row of ``b``, batch dims broadcast: (..., r1, r2, c)."""
    return a[..., :, None, :] - b[..., None, :, :]


def _cdist_np(a: np.ndarray, b: np.ndarray, p: float) -> np.ndarray:
    diff = np.abs(_cdist_pairs(a, b))
    if p == 0:
        return (diff != 0).sum(-1).astype(a.dtype)
    if p == 1:
        return diff.sum(-1)
    if p == 2:
        return np.sqrt((diff * diff).sum(-1))
    if math.isinf(p):
        return diff.max(-1) if diff.shape[-1] else np.zeros(diff.shape[:-1], a.dtype)
    return (diff ** p).sum(-1) ** (1.0 / p)


class CdistBackward0(Node):
    __slots__ = ("p",)
    saved_names = ("x1", "x2", "result")
    saved_values = {"p": lambda n: n.p}

    def apply(self, grads):
        x1, x2, result = self.saved()
        g, p = grads[0], self.p
        a, b, dist = x1._ndarray, x2._ndarray, result._ndarray
        diff = _cdist_pairs(a, b)
        with quiet_fp():
            if p == 0:
                weight = np.zeros_like(diff)
            elif p == 1:
                weight = np.sign(diff)
            elif p == 2:
                weight = np.where(dist[..., None] == 0, 0, diff / dist[..., None])
            elif math.isinf(p):
                weight = np.sign(diff) * (np.abs(diff) == dist[..., None])
            else:
                weight = np.sign(diff) * np.abs(diff) ** (p - 1) / dist[..., None] ** (p - 1)
                weight = np.where((dist[..., None] == 0) | (diff == 0), 0, weight)
        weighted = weight * g._ndarray[..., None]
        ga = sum_to_shape(wrap(weighted.sum(-2).astype(a.dtype, copy=False)), a.shape)
        gb = sum_to_shape(wrap(-weighted.sum(-3).astype(b.dtype, copy=False)), b.shape)
        if GRAD.enabled and (g._requires_grad or x1._requires_grad or x2._requires_grad):
            ga, gb = wrap(ga._ndarray), wrap(gb._ndarray)
            record_op(CdistBackwardBackward0, (g, x1, x2), ga, gb)
        return ga, gb


class CdistBackwardBackward0(Node):
    """A cdist gradient computed under create_graph: torch has no derivative for it."""
    __slots__ = ()
    _num_outputs = 2

    def apply(self, grads):
        raise NotImplementedError("the derivative for '_cdist_backward' is not implemented.")


class EuclideanDistBackward0(Node):
    __slots__ = ()
    saved_names = ("x1", "x2", "result")

    def apply(self, grads):
        x1, x2, result = self.saved()
        ratio = (grads[0] / result).masked_fill(result == 0, 0)  # 0: a subgradient where the distance is 0
        return (x1 * ratio.sum(-1, keepdim=True) - ratio.matmul(x2),
                x2 * ratio.sum(-2).unsqueeze(-1) - ratio.mT.matmul(x1))


def _euclidean_dist(x1, x2):
    """Distances by one product, as torch's ``_euclidean_dist``: [-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T,
    clamped at 0 before the square root."""
    a, b = x1._ndarray, x2._ndarray
    ones_a, ones_b = np.ones(a.shape[:-1] + (1,), a.dtype), np.ones(b.shape[:-1] + (1,), b.dtype)
    left = np.concatenate([a * -2, (a * a).sum(-1, keepdims=True), ones_a], -1)
    right = np.concatenate([b, ones_b, (b * b).sum(-1, keepdims=True)], -1)
    with quiet_fp():
        result = wrap(np.sqrt(np.maximum(left @ np.swapaxes(right, -1, -2), 0)).astype(a.dtype, copy=False))
    if GRAD.enabled and (x1._requires_grad or x2._requires_grad):
        node = record_op(EuclideanDistBackward0, (x1, x2), result)
        node.save(x1, x2, output=result)
    return result


@op(method=False)
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between every row of ``x1`` and every row of ``x2`` (batch dims broadcast).
    As torch: for p = 2 with more than 25 rows on a side (or ``compute_mode="use_mm_for_euclid_dist"``) the
    distances come from one matrix product (faster, less exact near 0), otherwise from the differences."""
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    for name, t in (("X1", x1), ("X2", x2)):
        if t.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {_rules.scalar_type_name(t._ndarray.dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if x1._ndarray.dtype != x2._ndarray.dtype:
        raise RuntimeError(f"expected scalar type {_rules.scalar_type_name(x1._ndarray.dtype)} but found {_rules.scalar_type_name(x2._ndarray.dtype)}")
    p = float(p)
    r1, r2 = x1.shape[-2], x2.shape[-2]
    use_mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist"
                         or (compute_mode in (None, "use_mm_for_euclid_dist_if_necessary") and (r1 > 25 or r2 > 25)))
    batch = tuple(np.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2])))
    out_shape = batch + (r1, r2)
    if use_mm:
        if x1.dim() == 2 and x2.dim() == 2:
            return _euclidean_dist(x1, x2).view(out_shape)
        count = int(np.prod(batch))
        a = x1.expand(batch + tuple(x1.shape[-2:])).contiguous().view(count, r1, x1.shape[-1])
        b = x2.expand(batch + tuple(x2.shape[-2:])).contiguous().view(count, r2, x2.shape[-1])
        return _euclidean_dist(a, b).view(out_shape)
    _rules.refuse_kernel(x1._ndarray, _rules.HALF, "cdist")  # the product form above takes half floats
    with quiet_fp():
        result = wrap(_cdist_np(x1._ndarray, x2._ndarray, p).astype(x1._ndarray.dtype, copy=False).reshape(out_shape))
    if GRAD.enabled and (x1._requires_grad or x2._requires_grad):
        node = record_op(CdistBackward0, (x1, x2), result)
        node.p = p
        node.save(x1, x2, output=result)
    return result


# ---- shape ------------------------------------------------------------------------------------
def _each_or_sequence(tensors, one):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(one(t) for t in tensors[0])
    if len(tensors) == 1:
        return one(tensors[0])
    return tuple(one(t) for t in tensors)


@op(method=False)
def atleast_1d(*tensors):
    return _each_or_sequence(tensors, lambda t: t.reshape(1) if t.dim() == 0 else t)


@op(method=False)
def atleast_2d(*tensors):
    def two(t):
        return t.reshape(1, 1) if t.dim() == 0 else t.unsqueeze(0) if t.dim() == 1 else t
    return _each_or_sequence(tensors, two)


@op(method=False)
def atleast_3d(*tensors):
    def three(t):
        if t.dim() == 0:
            return t.reshape(1, 1, 1)
        if t.dim() == 1:
            return t.unsqueeze(0).unsqueeze(-1)
        return t.unsqueeze(-1) if t.dim() == 2 else t
    return _each_or_sequence(tensors, three)


@op(method=False)
def dstack(tensors):
    return shape.cat(list(atleast_3d(list(tensors))), 2)


@op(method=False)
def row_stack(tensors):
    return shape.vstack(tensors)


def _split_along(x, sections, dim, name, need_dims):
    if x.dim() < need_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {need_dims} dimension, but got a tensor "
                           f"with {x.dim()} dimensions!")
    if isinstance(sections, int) and not isinstance(sections, bool):
        size = x.shape[dim]
        if sections == 0 or size % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {size} is not divisible by the split_size {sections}!")
    return views.tensor_split(x, sections, dim)


@op()
def hsplit(x, indices_or_sections):
    return _split_along(x, indices_or_sections, 1 if x.dim() > 1 else 0, "hsplit", 1)


@op()
def vsplit(x, indices_or_sections):
    return _split_along(x, indices_or_sections, 0, "vsplit", 2)


@op()
def dsplit(x, indices_or_sections):
    return _split_along(x, indices_or_sections, 2, "dsplit", 3)


@op()
def ravel(x):
    return views.reshape(x, -1)


@op()
def rot90(x, k=1, dims=(0, 1)):
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {x.dim()}")
    d0, d1 = dims[0] % x.dim(), dims[1] % x.dim()
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    k %= 4
    if k == 1:
        return x.flip(d1).transpose(d0, d1)
    if k == 2:
        return x.flip(d0, d1)
    if k == 3:
        return x.flip(d0).transpose(d0, d1)
    return x.clone()


def _check_split_sizes(x, split_sizes, dim):
    if sum(split_sizes) != x.shape[dim]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {x.shape[dim]} (input tensor's "
                           f"size at dimension {dim}), but got split_sizes={list(split_sizes)}")


@op()
def split_with_sizes(x, split_sizes, dim=0):
    _check_split_sizes(x, split_sizes, dim)
    return views.split(x, list(split_sizes), dim)


# the unsafe forms: the same pieces, sharing memory with the input but not views of it to autograd
@op()
def unsafe_split_with_sizes(x, split_sizes, dim=0):
    _check_split_sizes(x, split_sizes, dim)
    return views.unsafe_split_pieces(x, list(split_sizes), dim)


@op()
def unsafe_split(x, split_size, dim=0):
    if not isinstance(split_size, int):
        raise TypeError(f"unsafe_split(): argument 'split_size' (position 2) must be int, not {type(split_size).__name__}")
    return views.unsafe_split_pieces(x, split_size, dim)


@op()
def unsafe_chunk(x, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    size = x.shape[dim]
    return views.unsafe_split_pieces(x, -(-size // chunks) if size else 1, dim)


# the `*_copy` forms of views: the same values in storage of their own
def _contiguous_copy(t):
    copy = t.clone()
    return copy if copy.is_contiguous() else copy.contiguous()


def _copy_of(view_fn, name):
    def fn(input, *args, **kwargs):
        out = view_fn(input, *args, **kwargs)
        if isinstance(out, (tuple, list)):
            return type(out)(_contiguous_copy(t) for t in out)
        return _contiguous_copy(out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}: like the view op, into new storage."
    return op(name, method=False)(fn)


def _slice(x, dim=0, start=None, end=None, step=1):
    index = [builtins.slice(None)] * x.dim()
    index[dim] = builtins.slice(start, end, step)
    return x[tuple(index)]


for _name, _view in (("view_copy", lambda x, *s, **k: x.view(*s, **k)), ("permute_copy", views.permute),
                     ("expand_copy", lambda x, *s, **k: x.expand(*s)), ("t_copy", views.t),
                     ("transpose_copy", views.transpose), ("unsqueeze_copy", views.unsqueeze),
                     ("squeeze_copy", lambda x, *a: views.squeeze(x, *a)), ("diagonal_copy", views.diagonal),
                     ("select_copy", views.select), ("slice_copy", _slice), ("alias_copy", lambda x: x[...]),
                     ("unbind_copy", views.unbind), ("split_copy", views.split),
                     ("split_with_sizes_copy", split_with_sizes), ("as_strided_copy", views.as_strided)):
    _copy_of(_view, _name)


@op()
def narrow_copy(x, dim, start, length):
    return views.narrow(x, dim, start, length).clone()


@op(method=False)
def detach_copy(x):
    return x.detach().clone()


# ---- in-place shape changes: unsqueeze_, squeeze_, t_, transpose_ ----------------------------------
# the in-place shape changes' nodes: the out-of-place ops' gradients and saved values, under torch's
# in-place names
UnsqueezeBackward1 = node_class("UnsqueezeBackward1", views.UnsqueezeBackward0)
SqueezeBackward3 = node_class("SqueezeBackward3", views.SqueezeBackward0)
SqueezeBackward4 = node_class("SqueezeBackward4", views.SqueezeBackward1)
SqueezeBackward5 = node_class("SqueezeBackward5", views.SqueezeBackward2)
TransposeBackward1 = node_class("TransposeBackward1", views.TransposeBackward0)
TBackward1 = node_class("TBackward1", views.TBackward0)


def _reshape_in_place(x, new_data, node_cls, **attrs):
    """``x`` takes the new geometry ``new_data`` (a NumPy view of its own memory); a grad-requiring
    ``x`` gets ``node_cls`` as its grad_fn, in front of its old history."""
    views.check_inplace(x)
    if GRAD.enabled and x._requires_grad:
        if x._base_value is not None:
            raise RuntimeError("hookgrad: an in-place shape change of a view that requires grad is not supported; "
                               "use the out-of-place op")
        node = record_op(node_cls, (x,), wrap(new_data))
        for k, v in attrs.items():
            setattr(node, k, v)
        x._ndarray = new_data
        x._after_inplace(node)
    else:
        x._ndarray = new_data
    x._version_counter[0] += 1
    return x


@op("unsqueeze_", function=False)
def unsqueeze_(self, dim):
    new = views.unsqueeze(self.detach(), dim)._ndarray
    return _reshape_in_place(self, new, UnsqueezeBackward1, dim=dim % new.ndim, dim_arg=dim)


@op("squeeze_", function=False)
def squeeze_(self, dim=None):
    new = views.squeeze(self.detach(), dim)._ndarray if dim is not None else views.squeeze(self.detach())._ndarray
    node_cls = SqueezeBackward3 if dim is None else SqueezeBackward4 if isinstance(dim, int) else SqueezeBackward5
    return _reshape_in_place(self, new, node_cls, in_shape=self._ndarray.shape, dim_arg=dim)


@op("transpose_", function=False, aliases=("swapaxes_", "swapdims_"))
def transpose_(self, dim0, dim1):
    new = views.transpose(self.detach(), dim0, dim1)._ndarray
    return _reshape_in_place(self, new, TransposeBackward1, d0=dim0 % max(self.dim(), 1),
                             d1=dim1 % max(self.dim(), 1), dims_arg=(dim0, dim1))


@op("t_", function=False)
def t_(self):
    if self.dim() > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
    new = views.t(self.detach())._ndarray
    return _reshape_in_place(self, new, TBackward1)


@op(function=False)
def sum_to_size(x, *size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    try:
        target = np.broadcast_shapes(size, tuple(x.shape))
    except ValueError:
        target = None
    if target != tuple(x.shape):
        raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                           f"{{{', '.join(map(str, x.shape))}}}.")
    lead = x.dim() - len(size)
    dims = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(size) if s == 1 and x.shape[i + lead] != 1)
    out = reduce.sum(x, dims, keepdim=True) if dims else x
    return views.reshape(out, size) if tuple(out.shape) != size else out


@op(method=False)
def unravel_index(indices, shape):
    indices = as_tensor_arg(indices)
    if indices._ndarray.dtype.kind not in "iu":
        raise TypeError("expected 'indices' to be integer dtype, but got " + str(_dtype.from_numpy_dtype(
            indices._ndarray.dtype)))
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    flat = indices._ndarray.astype(np.int64)
    coords = []
    for size in reversed(shape):  # floor division and modulo, as torch (out-of-range indices wrap)
        coords.append(flat % size if size else flat * 0)
        flat = flat // size if size else flat * 0
    return tuple(wrap(np.asanyarray(c, dtype=np.int64)) for c in reversed(coords))


@op(method=False)
def constant_pad_nd(x, pad, value=0):
    from ..nn import functional
    return functional.pad(x, tuple(pad), mode="constant", value=value)


@op("float_power_", function=False)
def float_power_(self, exponent):
    if self._ndarray.dtype != np.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {_legacy_name(self._ndarray.dtype)} but the operation's result requires "
                           f"dtype Double")
    return views.apply_inplace(self, pointwise.float_power, exponent)


@op(method=False)
def detach(x):
    return x.detach()


@op("detach_", method=False)
def _detach_function(x):
    return x.detach_()


# ---- numerical gradient ------------------------------------------------------------------------
def _gradient_along(f, d, step, edge_order):
    n = f.shape[d]

    def part(start, length):
        return views.narrow(f, d, start, length)

    def along(t):  # a 1-D tensor of per-position factors, broadcast along dimension d
        shape_ = [1] * f.dim()
        shape_[d] = t.shape[0]
        return t.reshape(shape_)

    if isinstance(step, Tensor):  # coordinates
        x = step.to(f.dtype) if f.dtype != step.dtype and f._ndarray.dtype.kind == "f" else step
        dx = x[1:] - x[:-1]
        dx1, dx2 = dx[:-1], dx[1:]
        a = along(-dx2 / (dx1 * (dx1 + dx2)))
        b = along((dx2 - dx1) / (dx1 * dx2))
        c = along(dx1 / (dx2 * (dx1 + dx2)))
        interior = a * part(0, n - 2) + b * part(1, n - 2) + c * part(2, n - 2)
        if edge_order == 1:
            first = (part(1, 1) - part(0, 1)) / dx[0]
            last = (part(n - 1, 1) - part(n - 2, 1)) / dx[-1]
        else:
            h1, h2 = dx[0], dx[1]
            first = (-(2 * h1 + h2) / (h1 * (h1 + h2)) * part(0, 1) + (h1 + h2) / (h1 * h2) * part(1, 1)
                     - h1 / (h2 * (h1 + h2)) * part(2, 1))
            h1, h2 = dx[-1], dx[-2]
            last = (h1 / (h2 * (h1 + h2)) * part(n - 3, 1) - (h2 + h1) / (h2 * h1) * part(n - 2, 1)
                    + (2 * h1 + h2) / (h1 * (h2 + h1)) * part(n - 1, 1))
    else:
        interior = (part(2, n - 2) - part(0, n - 2)) / (2 * step)
        if edge_order == 1:
            first = (part(1, 1) - part(0, 1)) / step
            last = (part(n - 1, 1) - part(n - 2, 1)) / step
        else:
            first = (part(0, 1) * -1.5 + part(1, 1) * 2 - part(2, 1) * 0.5) / step
            last = (part(n - 1, 1) * 1.5 - part(n - 2, 1) * 2 + part(n - 3, 1) * 0.5) / step
    return shape.cat([first, interior, last], d)


@op(method=False)
def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Central differences inside, one-sided differences (first or second order) at the ends, per dimension."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(range(input.dim())) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    dims = [d % input.dim() for d in dims]
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    if isinstance(spacing, (list, tuple)):
        steps = list(spacing)
        if len(steps) == 1 and len(dims) > 1:
            steps = steps * len(dims)
        if len(steps) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                               f"arguments to have the same length, but got a spacing argument of length {len(steps)} "
                               f"and a dim argument of length {len(dims)}.")
    else:
        steps = [spacing] * len(dims)
    f = input if input._ndarray.dtype.kind in "fc" else input.to(_dtype.get_default_dtype())
    for s in steps:
        if isinstance(s, Tensor) and s.dim() != 1:
            raise RuntimeError(f"torch.gradient expected each element of spacing to have one dimension, but got an "
                               f"element with {s.dim()} dimensions!")
    return tuple(_gradient_along(f, d, s, edge_order) for d, s in zip(dims, steps))


@op(function=True)
def nonzero_static(x, *, size, fill_value=-1):
    found = np.argwhere(x._ndarray)
    out = np.full((size, x.dim()), fill_value, dtype=np.int64)
    k = builtins.min(size, len(found))
    out[:k] = found[:k]
    return wrap(out)


# ---- scatter into a copy: select/slice/diagonal/as_strided_scatter -------------------------------
def _scatter_into(x, src, view_of, name):
    out = x.clone()
    target = view_of(out)
    if tuple(target.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(target.shape)}")
    target.copy_(src)
    return out


@op()
def select_scatter(x, src, dim, index):
    return _scatter_into(x, src, lambda t: views.select(t, dim, index), "select_scatter")


@op()
def slice_scatter(x, src, dim=0, start=None, end=None, step=1):
    return _scatter_into(x, src, lambda t: _slice(t, dim, start, end, step), "slice_scatter")


@op()
def diagonal_scatter(x, src, offset=0, dim1=0, dim2=1):
    return _scatter_into(x, src, lambda t: views.diagonal(t, offset, dim1, dim2), "diagonal_scatter")


@op()
def as_strided_scatter(x, src, size, stride, storage_offset=None):
    return _scatter_into(x, src, lambda t: views.as_strided(t, size, stride, storage_offset), "as_strided_scatter")


# ---- indexing ---------------------------------------------------------------------------------
def _check_long_index(index, name):
    if not isinstance(index, Tensor) or index._ndarray.dtype != np.int64:
        found = _dtype.scalar_type_name(index._ndarray.dtype) if isinstance(index, Tensor) else type(index).__name__
        raise RuntimeError(f"{name}(): Expected a long tensor for index, but got {found}")


def _same_dtype_as_self(x, source, message):
    """torch's refusal of a source whose dtype is not self's (``message`` takes ``{self}``, ``{source}``)."""
    if source._ndarray.dtype != x._ndarray.dtype:
        raise RuntimeError(message.format(self=_dtype.scalar_type_name(x._ndarray.dtype),
                                          source=_dtype.scalar_type_name(source._ndarray.dtype)))


@op()
def take(x, index):
    _check_long_index(index, "take")
    _rules.refuse_lowprec(x._ndarray, "take_cpu")
    n = x.numel()
    flat = index._ndarray
    bad = (flat >= n) | (flat < -n)
    if bad.any():
        raise IndexError(f"out of range: tried to access index {int(flat[bad].flat[0])} on a tensor of {n} elements.")
    result = _unrecorded(lambda: x.reshape(-1)[index])
    if GRAD.enabled and x._requires_grad:
        record_op(TakeBackward0, (x,), result).save(index, x)
    return result


class TakeBackward0(Node):
    __slots__ = ()
    saved_names = ("index", "self")   # torch keeps self (for its shape)

    def apply(self, grads):
        index, x = self.saved()
        return (wrap(np.zeros_like(x._ndarray, dtype=grads[0]._ndarray.dtype)).put(index, grads[0], True),)


@op(inplace=True)
def put(x, index, source, accumulate=False):
    _check_long_index(index, "put_")
    _rules.refuse_lowprec(x._ndarray, "take_put_cpu")
    _same_dtype_as_self(x, source, "put_(): self and source expected to have the same dtype, but got "
                                   "self.dtype = {self} and source.dtype = {source}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = x.numel()
    bad = (index._ndarray >= n) | (index._ndarray < -n)
    if bad.any():
        raise IndexError(f"out of range: tried to access index {int(index._ndarray[bad].flat[0])} on a tensor of {n} "
                         f"elements.")
    result = _unrecorded(lambda: x.reshape(-1).index_put((index.reshape(-1),), source.reshape(-1).to(x.dtype),
                                                         accumulate).reshape(x.shape))
    if GRAD.enabled and (x._requires_grad or source._requires_grad):
        node = record_op(PutBackward0, (x, source), result)
        node.accumulate = accumulate
        node.save(index, source)
    return result


class PutBackward0(Node):
    __slots__ = ("accumulate",)
    saved_names = ("index", "source")
    saved_values = {"accumulate": lambda n: n.accumulate}

    def apply(self, grads):
        index, source = self.saved()
        g = grads[0]
        gx = gs = None
        if self._should_compute_output(0):
            gx = g if self.accumulate else g.put(index, wrap(np.zeros_like(source._ndarray)), False)
        if self._should_compute_output(1):
            gs = g.take(index).reshape_as(source)
        return gx, gs


def _dim_index(x, dim, index):
    return (builtins.slice(None),) * (dim % builtins.max(x.dim(), 1)) + (index,)


@op(inplace=True)
def index_copy(x, dim, index, source):
    _check_long_index(index, "index_copy_")
    _rules.refuse_float8(x._ndarray, "index_copy_cpu")
    _same_dtype_as_self(x, source, "index_copy_(): self and source expected to have the same dtype, but got "
                                   "(self) {self} and (source) {source}")
    if x.dim() == 0:
        result = _unrecorded(lambda: source.clone().reshape(()))
    else:
        result = _unrecorded(lambda: x.index_put(_dim_index(x, dim, index), source.to(x.dtype)))
    if GRAD.enabled and (x._requires_grad or source._requires_grad):
        node = record_op(IndexCopyBackward0, (x, source), result)
        node.dim, node.dim_arg = dim % builtins.max(x.dim(), 1), dim
        node.save(index, source)
    return result


class IndexCopyBackward0(Node):
    """The copied slices pass their gradient to the source, the others to self."""
    __slots__ = ("dim", "dim_arg")
    saved_names = ("index", "source")   # torch keeps the source too (for its shape)
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg), "source_dim": lambda n: n.saved()[1].dim()}

    def apply(self, grads):
        index, source = self.saved()
        g, d = grads[0], self.dim
        gx = g.index_fill(d, index, 0) if self._should_compute_output(0) else None
        gs = None
        if self._should_compute_output(1):
            gs = g.index_select(d, index).expand_as(source) if source.dim() > 0 else \
                g.index_select(d, index.squeeze(0))
        return gx, gs


@op(inplace=True)
def index_fill(x, dim, index, value):
    if not isinstance(index, Tensor) or index._ndarray.dtype != np.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    _rules.refuse_float8(x._ndarray, "index_fill_cpu")
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.dim()} dimension(s).")
    value_t = value if isinstance(value, Tensor) else None
    if value_t is None:
        value = wrap(np.asanyarray(_dtype.checked_scalar(value, x._ndarray.dtype), dtype=x._ndarray.dtype))
    if x.dim() == 0:
        result = _unrecorded(lambda: value.to(x.dtype).clone())
    else:
        result = _unrecorded(lambda: x.index_put(_dim_index(x, dim, index), value.to(x.dtype)))
    if GRAD.enabled and (x._requires_grad or (value_t is not None and value_t._requires_grad)):
        node = record_op(IndexFillBackward1, (x, value_t), result) if value_t is not None else \
            record_op(IndexFillBackward0, (x,), result)
        node.dim, node.dim_arg = dim % builtins.max(x.dim(), 1), dim
        node.save(index)
    return result


def _unrecorded(compute) -> Tensor:
    """The values of ``compute()``, a forward composed of other ops, as a fresh tensor with no graph:
    the caller records the op's own node on it."""
    enabled, GRAD.enabled = GRAD.enabled, False
    try:
        return wrap(compute()._ndarray)
    finally:
        GRAD.enabled = enabled


class _IndexFillNode(Node):
    __slots__ = ("dim", "dim_arg")
    saved_names = ("index",)
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg)}


class IndexFillBackward0(_IndexFillNode):
    """index_fill with a number: the filled slices pass no gradient on."""
    __slots__ = ()

    def apply(self, grads):
        (index,) = self.saved()
        return (grads[0].index_fill(self.dim, index, 0),)


class IndexFillBackward1(_IndexFillNode):
    """index_fill with a 0-d tensor: the value's gradient sums those of the slices it filled (each once)."""
    __slots__ = ()

    def apply(self, grads):
        (index,) = self.saved()
        g = grads[0]
        gx = g.index_fill(self.dim, index, 0) if self._should_compute_output(0) else None
        gv = g.index_select(self.dim, index.unique()).sum() if self._should_compute_output(1) else None
        return gx, gv


views.WRITES_ONE_VALUE.add(index_fill)


@op(inplace=True)
def index_reduce(x, dim, index, source, reduce, *, include_self=True):
    """Each slice of ``source`` along ``dim`` reduced (prod, mean, amax, amin) into ``x``'s slice ``index[i]``."""
    if not isinstance(index, Tensor) or index._ndarray.dtype not in (np.int64, np.int32):
        found = _dtype.scalar_type_name(index._ndarray.dtype) if isinstance(index, Tensor) else type(index).__name__
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: {found}")
    _same_dtype_as_self(x, source, "index_reduce_(): self ({self}) and source ({source}) must have the same scalar "
                                   "type")
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    scalar = x.dim() == 0
    d = 0 if scalar else dim % x.dim()
    values = _unrecorded(lambda: _index_reduced(x.reshape(1), 0, index, source.reshape(1), reduce, include_self)
                         if scalar else _index_reduced(x, d, index, source, reduce, include_self))
    result = wrap(values._ndarray.reshape(x._ndarray.shape))
    if GRAD.enabled and (x._requires_grad or source._requires_grad):
        node = record_op(IndexReduceBackward0, (x, source), result)
        node.dim, node.dim_arg, node.reduce, node.include_self = d, dim, reduce, include_self
        node.save(index, x, source, output=result)
    return result


class IndexReduceBackward0(_ReduceIntoBackward):
    __slots__ = ()
    saved_names = ("index", "self", "source", "result")
    two_zeros_message = ("index_reduce(): Double backward is unsupported for source when >1 zeros in source are "
                         "scattered to the same position in self")
    pick_method, spread_method, reduce_method, clear_method = "index_select", "index_add", "index_reduce", "index_fill"


def _index_reduced(x, dim, index, source, reduce, include_self):
    """index_reduce's values, composed of plain ops: each target slice reduced with its sources."""
    positions = index._ndarray.reshape(-1) % builtins.max(x.shape[dim], 1)
    targets = np.unique(positions)
    if targets.size == 0:
        return x.clone()
    pieces = []
    for target in targets.tolist():
        picked = source.index_select(dim, wrap(np.flatnonzero(positions == target).astype(np.int64)))
        mine = views.select(x, dim, target)
        if reduce == "prod":
            piece = picked.prod(dim) * mine if include_self else picked.prod(dim)
        elif reduce == "mean":
            total = picked.sum(dim) + mine if include_self else picked.sum(dim)
            piece = total / (picked.shape[dim] + (1 if include_self else 0))
        else:
            piece = picked.amax(dim) if reduce == "amax" else picked.amin(dim)
            if include_self:
                piece = (pointwise.maximum if reduce == "amax" else pointwise.minimum)(piece, mine)
        pieces.append(piece.to(x.dtype))
    return x.index_copy(dim, wrap(targets.astype(np.int64)), shape.stack(pieces, dim))


@op(inplace=True)
def masked_scatter(x, mask, source):
    if mask._ndarray.dtype != np.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{_dtype.scalar_type_name(mask._ndarray.dtype)}")
    _same_dtype_as_self(x, source, "masked_scatter: expected self and source to have same dtypes but got{self} and "
                                   "{source}")
    full = views.expand(mask, *x.shape) if tuple(mask.shape) != tuple(x.shape) else mask
    n = int(full._ndarray.sum())
    if source.numel() < n:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    result = _unrecorded(lambda: x.index_put((full,), source.reshape(-1)[:n].to(x.dtype)))
    if GRAD.enabled and (x._requires_grad or source._requires_grad):
        node = record_op(MaskedScatterBackward0, (x, source), result)
        node.source_shape = source._ndarray.shape
        node.save(mask)
    return result


class MaskedScatterBackward0(Node):
    """self's gradient where the mask is off; the source's, its first elements (in order) where it is on."""
    __slots__ = ("source_shape",)
    saved_names = ("mask",)
    saved_values = {"source_sym_sizes": lambda n: n.source_shape}

    def apply(self, grads):
        (mask,) = self.saved()
        g = grads[0]
        gx = g.masked_fill(mask, 0) if self._should_compute_output(0) else None
        gs = None
        if self._should_compute_output(1):
            picked = g.masked_select(mask)
            missing = math.prod(self.source_shape) - picked.numel()
            if missing > 0:
                picked = shape.cat([picked, wrap(np.zeros(missing, dtype=g._ndarray.dtype))], 0)
            gs = picked.view(self.source_shape)
        return gx, gs


@op()
def diagflat(x, offset=0):
    return creation.diag(x.reshape(-1), offset)


@op(method=False)
def block_diag(*tensors):
    blocks = []
    for t in tensors:
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {len(blocks)} "
                               f"has {t.dim()} dimensions")
        blocks.append(t.reshape(1, -1) if t.dim() < 2 else t)
    if not blocks:
        return wrap(np.zeros((1, 0), dtype=_dtype.get_default_dtype().np))
    hd = _dtype.from_numpy_dtype(blocks[0]._ndarray.dtype)
    for b in blocks[1:]:
        hd = _dtype.promote_types(hd, _dtype.from_numpy_dtype(b._ndarray.dtype))
    dt = hd.np
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        r, c = b.shape
        row = shape.cat([wrap(np.zeros((r, left), dt)), b.to(hd), wrap(np.zeros((r, width - left - c), dt))], 1)
        rows.append(row)
        left += c
    return shape.cat(rows, 0)


@op(method=False)
def cartesian_prod(*tensors):
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = creation.meshgrid(*tensors, indexing="ij")
    return shape.stack([g.reshape(-1) for g in grids], 1)


@op(method=False)
def combinations(x, r=2, with_replacement=False):
    if x.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(x.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return wrap(np.zeros(0, dtype=x._ndarray.dtype))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    combos = list(pick(range(x.shape[0]), r))
    if not combos:
        return wrap(np.zeros((0, r), dtype=x._ndarray.dtype)) + x.sum() * 0 if x._requires_grad else wrap(
            np.zeros((0, r), dtype=x._ndarray.dtype))
    return x[wrap(np.array(combos, dtype=np.int64))]


@op(method=False)
def vander(x, N=None, increasing=False):
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if x._ndarray.dtype.kind == "b" or x._ndarray.dtype.kind in "iu":
        x = x.to(_dtype.int64)
    if n == 0:
        return wrap(np.zeros((x.shape[0], 0), dtype=x._ndarray.dtype))
    ones = wrap(np.ones(x.shape[0], dtype=x._ndarray.dtype))
    columns = [ones]
    for _ in range(1, n):
        columns.append(columns[-1] * x)
    if not increasing:
        columns.reverse()
    return shape.stack(columns, 1)


# ---- predicates and tensor facts -------------------------------------------------------------
@op()
def is_nonzero(x) -> bool:
    n = x.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(x._ndarray.reshape(()).item() != 0)


@op()
def is_same_size(x, other) -> bool:
    return tuple(x.shape) == tuple(other.shape)


@op()
def is_signed(x) -> bool:
    return x.dtype.is_signed


@op(method=False)
def scalar_tensor(s, *, dtype=None, device=None, layout=None, pin_memory=False, requires_grad=False):
    dt = (dtype or _dtype.get_default_dtype()).np
    out = wrap(np.asanyarray(s, dtype=dt))
    return out._set_requires_grad(requires_grad, FACTORY_REFUSES_GRAD) if requires_grad else out


def _strided_zeros(size, stride, np_dtype):
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    extent = 1 + sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    buffer = np.zeros(builtins.max(extent, 0), dtype=np_dtype)
    item = buffer.itemsize
    return np.lib.stride_tricks.as_strided(buffer, size, tuple(st * item for st in stride), writeable=True)


@op(method=False)
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    out = wrap(_strided_zeros(size, stride, (dtype or _dtype.get_default_dtype()).np))
    return out._set_requires_grad(requires_grad, FACTORY_REFUSES_GRAD) if requires_grad else out


@op(function=False)
def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                      pin_memory=False):
    return empty_strided(size, stride, dtype=dtype or _dtype.from_numpy_dtype(self._ndarray.dtype),
                         requires_grad=requires_grad)


@op("as_strided_", function=False)
def as_strided_(self, size, stride, storage_offset=None):
    """``self`` becomes the strided view of its own storage (a tensor outside autograd's graph)."""
    if GRAD.enabled and self._requires_grad:
        raise RuntimeError("hookgrad: as_strided_ on a tensor that requires grad is not supported; use as_strided")
    view = views.as_strided(self, size, stride, storage_offset)
    self._ndarray = view._ndarray
    return self


@op("apply_", function=False)
def apply_(self, callable):
    """Replace each element by ``callable(element)`` (a Python function, as torch on the CPU)."""
    views.check_inplace(self)
    d = self._ndarray
    kind = float if d.dtype.kind == "f" else bool if d.dtype.kind == "b" else int
    values = np.array([callable(kind(v)) for v in d.reshape(-1).tolist()], dtype=d.dtype).reshape(d.shape)
    return views.apply_inplace(self, lambda t: wrap(values))


@op("map_", function=False)
def map_(self, other, callable):
    """``self[i] = callable(self[i], other[i])`` with ``other`` broadcast to ``self``."""
    views.check_inplace(self)
    d = self._ndarray
    o = np.broadcast_to(as_tensor_arg(other)._ndarray, d.shape)
    kind = float if d.dtype.kind == "f" else bool if d.dtype.kind == "b" else int
    values = np.array([callable(kind(a), kind(b)) for a, b in zip(d.reshape(-1).tolist(), o.reshape(-1).tolist())],
                      dtype=d.dtype).reshape(d.shape)
    return views.apply_inplace(self, lambda t: wrap(values))


def _resize_view(self, shape_, n):
    """A view resized as torch does: contiguous strides over its storage from its offset, reading the
    storage in memory order (a non-contiguous view sees its elements reordered); the storage is shared
    with the base, which sees writes through the resized view."""
    from .._legacy import _address, _root_array
    data = self._ndarray
    if tuple(data.shape) == shape_:  # the same size: strides kept, nothing moves
        return self
    root = _root_array(data)
    offset = (_address(data) - _address(root)) // data.itemsize if data.size else 0
    if root.dtype != data.dtype or not root.flags.c_contiguous or offset + n > root.size:
        # (torch would grow the shared storage: the base's NumPy array cannot grow under it)
        raise RuntimeError("hookgrad resizes a view only within its storage (same dtype, no growth)")
    self._ndarray = root.reshape(-1)[offset:offset + n].reshape(shape_)
    self._version_counter[0] += 1
    return self


def _resize(self, shape_):
    if self._requires_grad and not GRAD.inference:  # inference_mode switches autograd's check off, as in torch
        raise RuntimeError("cannot resize variables that require grad")
    shape_ = tuple(int(s) for s in shape_)
    if shape_ == self._ndarray.shape:  # nothing changes: as in torch, the version stays
        return self
    n = int(np.prod(shape_)) if shape_ else 1
    if self._base_value is not None:
        return _resize_view(self, shape_, n)
    flat = self._ndarray.reshape(-1)
    data = np.zeros(n, dtype=flat.dtype)
    data[:builtins.min(n, flat.size)] = flat[:n]
    self._ndarray = data.reshape(shape_)
    self._version_counter[0] += 1
    return self


@op("resize_", function=False)
def resize_(self, *sizes, memory_format=None):
    """Torch's semantics on a tensor that is not a view: the elements kept in order, new ones zero."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    return _resize(self, sizes)


@op("resize_as_", function=False)
def _resize_as_method(self, the_template, memory_format=None):
    return _resize(self, tuple(the_template.shape))


@op("fill_diagonal_", function=False)
def fill_diagonal_(self, fill_value, wrap=False):
    """Write ``fill_value`` on the main diagonal (all dimensions equal beyond 2-D; ``wrap`` restarts it
    every ``columns + 1`` rows of a tall matrix)."""
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.dim() > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    n = builtins.min(self.shape)
    if self.dim() == 2 and wrap and self.shape[0] > self.shape[1] + 1:
        flat = np.arange(0, self.shape[0] * self.shape[1], self.shape[1] + 1)
        rows, cols = np.divmod(flat, self.shape[1])
        index = (wrap_index(rows), wrap_index(cols))
    else:
        index = tuple(wrap_index(np.arange(n)) for _ in range(self.dim()))
    value = fill_value if isinstance(fill_value, Tensor) else as_tensor_arg(np.asanyarray(fill_value, dtype=self._ndarray.dtype))
    return self.index_put_(index, value.to(self.dtype))


def wrap_index(a):
    return wrap(np.asanyarray(a, dtype=np.int64))


@op("map2_", function=False)
def map2_(self, x, y, callable):
    """``self[i] = callable(self[i], x[i], y[i])`` with ``x`` and ``y`` broadcast to ``self``."""
    views.check_inplace(self)
    d = self._ndarray
    kind = float if d.dtype.kind == "f" else bool if d.dtype.kind == "b" else int
    xs = np.broadcast_to(as_tensor_arg(x)._ndarray, d.shape).reshape(-1).tolist()
    ys = np.broadcast_to(as_tensor_arg(y)._ndarray, d.shape).reshape(-1).tolist()
    values = np.array([callable(kind(a), kind(b), kind(c)) for a, b, c in zip(d.reshape(-1).tolist(), xs, ys)],
                      dtype=d.dtype).reshape(d.shape)
    return views.apply_inplace(self, lambda t: wrap(values))


@op(function=False)
def to_dense(x, dtype=None, *, masked_grad=None):
    """hookgrad tensors are dense: the tensor itself (or a copy in ``dtype``)."""
    return x if dtype is None else x.to(dtype)


@op(function=False)
def dim_order(x, *, ambiguity_check=False):
    strides = x.stride()
    return tuple(sorted(range(x.dim()), key=lambda i: -strides[i]))


@op()
def is_inference(x) -> bool:
    return grad_mode.is_inference_tensor(x)


@op(method=False)
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """A tensor of shape ``size`` whose memory holds its dimensions in the order ``physical_layout``."""
    size = tuple(int(s) for s in size)
    order = tuple(int(d) for d in physical_layout)
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; "
                           f"i.e. len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}")
    physical = np.zeros(tuple(size[d] for d in order), dtype=(dtype or _dtype.get_default_dtype()).np)
    out = wrap(physical.transpose(np.argsort(order)))
    return out._set_requires_grad(requires_grad, FACTORY_REFUSES_GRAD) if requires_grad else out


# ---- small things: names, the default device ----------------------------------------------------
@op(method=False)
def typename(obj) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__qualname__
    if not hasattr(obj, "__qualname__") and not hasattr(obj, "__name__"):
        module = type(obj).__module__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


# the DeviceContext set_default_device entered (per thread, as torch keeps it)
_DEFAULT_DEVICE = threading.local()


@op(method=False)
def get_default_device():
    """The device factories use: the innermost ``with device(...)``, else set_default_device's, else the CPU."""
    from .. import device
    from ..overrides import _get_current_function_mode_stack
    from ..utils._device import DeviceContext
    contexts = [mode for mode in _get_current_function_mode_stack() if isinstance(mode, DeviceContext)]
    context = contexts[-1] if contexts else getattr(_DEFAULT_DEVICE, "context", None)
    if context is None:
        return device("cpu")
    if context.device.index is not None:
        return context.device
    from .. import tensor   # the dispatched factory, which the context fills in
    return tensor([]).device   # the device an empty tensor gets there (torch's error for CUDA)


@op(method=False)
def set_default_device(device):
    """Make ``device`` the factories' default, as ``with device(...)`` does for a block; factories then
    raise for a device hookgrad lacks (CUDA: torch's AssertionError), as torch's CPU-only build does."""
    context = getattr(_DEFAULT_DEVICE, "context", None)
    if context is not None:
        context.__exit__(None, None, None)
    context = None
    if device is not None and str(device) != "cpu":   # the plain CPU is the default already: no mode to pay for
        from ..utils._device import DeviceContext
        context = DeviceContext(device)
        context.__enter__()
    _DEFAULT_DEVICE.context = context


__all__ = module_all(globals()) + ["pi", "e", "inf", "nan"]
