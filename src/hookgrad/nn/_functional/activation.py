"""Activations: NumPy forwards, backward nodes named like torch's, backwards in hookgrad ops.

Each backward is written with hookgrad Tensor ops on the saved input, so ``create_graph=True``
differentiates it again; masks that do not depend smoothly on the input are plain constants.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..._dtype import is_inexact_np, narrow_to, widen
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node
from ..._ops import pointwise, reduce, views
from ..._ops._base import GRAD, edge, record
from ..._ops._base import quiet_fp

_err = quiet_fp  # NumPy reports no inf/nan arithmetic (nor does torch)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _unary(x, data, node_cls, attrs=(), save=True):
    result = wrap(narrow_to(data, x._data.dtype))
    if GRAD.enabled and x._requires_grad:
        node = node_cls((edge(x),))
        for k, v in attrs:
            setattr(node, k, v)
        if save:
            node.save(x)
        record(node, result)
    return result


def _maybe_inplace(x, fn, inplace, *args):
    if inplace:
        return views.apply_inplace(x, fn, *args)
    return fn(x, *args)


def _const(mask, like):
    return wrap(mask.astype(like._data.dtype, copy=False))


# ---- relu family -----------------------------------------------------------------------------
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu_() if inplace else pointwise.relu(input)


class LeakyReluBackward0(Node):
    __slots__ = ("slope",)

    def apply(self, grads):
        (x,) = self.saved()
        return (grads[0] * _const(np.where(x._data > 0, 1.0, self.slope), x),)


def _leaky_relu(x, negative_slope):
    d = widen(x._data)  # bfloat16: float32 math, rounded once in _unary
    return _unary(x, np.where(d > 0, d, d * d.dtype.type(negative_slope)), LeakyReluBackward0,
                  (("slope", negative_slope),))


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    return _maybe_inplace(input, _leaky_relu, inplace, negative_slope)


class HardtanhBackward0(Node):
    __slots__ = ("lo", "hi")

    def apply(self, grads):
        (x,) = self.saved()
        d = x._data
        return (grads[0] * _const((d > self.lo) & (d < self.hi), x),)


def _hardtanh(x, min_val, max_val):
    return _unary(x, np.clip(x._data, min_val, max_val).astype(x._data.dtype, copy=False), HardtanhBackward0,
                  (("lo", min_val), ("hi", max_val)))


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _maybe_inplace(input, _hardtanh, inplace, min_val, max_val)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


class EluBackward0(Node):
    __slots__ = ("alpha",)

    def apply(self, grads):
        (x,) = self.saved()
        pos = wrap(x._data > 0)
        neg_part = x.clamp(max=0).exp() * self.alpha
        return (grads[0] * pointwise.where(pos, 1.0, neg_part),)


def _elu(x, alpha):
    d = widen(x._data)  # bfloat16: float32 math, rounded once in _unary
    with _err():
        out = np.where(d > 0, d, alpha * np.expm1(np.minimum(d, 0))).astype(d.dtype, copy=False)
    return _unary(x, out, EluBackward0, (("alpha", alpha),))


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return _maybe_inplace(input, _elu, inplace, alpha)


# ---- smooth activations ----------------------------------------------------------------------
def _erf_np(a):
    if a.dtype == np.float64:
        return np.frompyfunc(math.erf, 1, 1)(a).astype(np.float64)
    # float32 and below: a rational approximation good to ~1.2e-7 relative (float32's own precision)
    z = np.abs(a.astype(np.float64))
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (
            -0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(poly)
    return (np.sign(a) * (1.0 - erfc)).astype(a.dtype)


class NormalCdfBackward(Node):
    """Backward of the standard normal CDF (used inside GELU's own backward)."""

    __slots__ = ()

    def name(self):
        return "ErfBackward0"

    def apply(self, grads):
        (x,) = self.saved()
        return (grads[0] * ((x * x) * -0.5).exp() * _INV_SQRT_2PI,)


def _normal_cdf(x: Tensor) -> Tensor:
    d = widen(x._data)  # bfloat16: float32 math, rounded once in _unary
    return _unary(x, 0.5 * (1.0 + _erf_np(d / d.dtype.type(math.sqrt(2.0)))), NormalCdfBackward)


class GeluBackward0(Node):
    __slots__ = ("approximate",)

    def apply(self, grads):
        (x,) = self.saved()
        g = grads[0]
        if self.approximate == "tanh":
            inner = (x + x * x * x * 0.044715) * _SQRT_2_PI
            t = inner.tanh()
            dinner = (x * x * (3 * 0.044715) + 1) * _SQRT_2_PI
            return (g * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * dinner),)
        cdf = _normal_cdf(x) if GRAD.enabled else wrap(narrow_to(0.5 * (1.0 + _erf_np(widen(x._data) / np.float32(
            math.sqrt(2.0)))), x._data.dtype))
        pdf = ((x * x) * -0.5).exp() * _INV_SQRT_2PI
        return (g * (cdf + x * pdf),)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh.")
    d = widen(input._data)  # bfloat16: float32 math, rounded once in _unary
    with _err():
        if approximate == "tanh":
            out = 0.5 * d * (1 + np.tanh(_SQRT_2_PI * (d + 0.044715 * d * d * d)))
        else:
            out = 0.5 * d * (1.0 + _erf_np(d / d.dtype.type(math.sqrt(2.0))))
    return _unary(input, out.astype(d.dtype, copy=False), GeluBackward0, (("approximate", approximate),))


class SiluBackward0(Node):
    __slots__ = ()

    def apply(self, grads):
        (x,) = self.saved()
        s = x.sigmoid()
        return (grads[0] * (s * (x * (1 - s) + 1)),)


def _silu(x):
    d = widen(x._data)  # bfloat16: float32 math, rounded once in _unary
    return _unary(x, d * pointwise._sigmoid_np(d), SiluBackward0)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return _maybe_inplace(input, _silu, inplace)


class SoftplusBackward0(Node):
    __slots__ = ("beta", "threshold")

    def apply(self, grads):
        (x,) = self.saved()
        linear = wrap(x._data * self.beta > self.threshold)
        return (grads[0] * pointwise.where(linear, 1.0, (x * self.beta).sigmoid()),)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    d = widen(input._data)  # bfloat16: float32 math, rounded once in _unary
    bx = d * d.dtype.type(beta)
    with _err():
        soft = (np.logaddexp(0, bx) / beta).astype(d.dtype, copy=False)
    out = np.where(bx > threshold, d, soft)
    return _unary(input, out, SoftplusBackward0, (("beta", beta), ("threshold", threshold)))


def sigmoid(input: Tensor) -> Tensor:
    return pointwise.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    return pointwise.tanh(input)


# ---- softmax ---------------------------------------------------------------------------------
def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  f"as an argument.", UserWarning, stacklevel=stacklevel + 1)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim("softmax", input._data.ndim, _stacklevel)
    if not is_inexact_np(input._data.dtype) and dtype is None:
        name = {"int64": "Long", "int32": "Int", "bool": "Bool"}.get(input._data.dtype.name, "Long")
        raise NotImplementedError(f"\"softmax_lastdim_kernel_impl\" not implemented for '{name}'")
    if dtype is not None:
        input = input.to(dtype)  # cast first (ToCopyBackward0), so the gradient comes back in the input's dtype
    return reduce.softmax(input, dim)


def log_softmax(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim("log_softmax", input._data.ndim, _stacklevel)
    if not is_inexact_np(input._data.dtype) and dtype is None:
        name = {"int64": "Long", "int32": "Int", "bool": "Bool"}.get(input._data.dtype.name, "Long")
        raise NotImplementedError(f"\"log_softmax_lastdim_kernel_impl\" not implemented for '{name}'")
    if dtype is not None:
        input = input.to(dtype)
    return reduce.log_softmax(input, dim)


# ---- dropout ---------------------------------------------------------------------------------
def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    from ..._ops.creation import _rng
    d = input._data
    if p == 1.0:
        scale = np.zeros(d.shape, dtype=d.dtype)
    else:
        keep = _rng(None).random(d.shape, dtype=np.float64 if d.dtype != np.float32 else np.float32) >= p
        scale = keep.astype(d.dtype) * d.dtype.type(1.0 / (1.0 - p))
    mask = wrap(scale)
    if inplace:
        return input.mul_(mask)
    return pointwise.mul(input, mask)
