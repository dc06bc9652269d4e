"""Activations: NumPy forwards, backward nodes named like torch's, backwards in hookgrad ops.

Each backward is written with hookgrad Tensor ops on the saved input, so ``create_graph=True``
differentiates it again; masks that do not depend smoothly on the input are plain constants.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..._dtype import is_inexact_np, narrow_to, scalar_type_name, widen
from ..._meta import MetaArray, meta_like
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node, saved_dim as _saved_dim
from ..._ops import pointwise, reduce, views
from ..._ops._base import GRAD
from ..._ops._base import quiet_fp
from ..._ops import _dtype_rules as _rules
from ..._ops._declare import ZeroGradNode, backward_results, node_class, outputs_of, record_op

_err = quiet_fp  # NumPy reports no inf/nan arithmetic (nor does torch)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT1_2 = math.sqrt(0.5)


def _unary(x, data, node_cls, attrs=(), save=True):
    result = wrap(narrow_to(data, x._ndarray.dtype))
    if GRAD.enabled and x._requires_grad:
        node = record_op(node_cls, (x,), result)
        for k, v in attrs:
            setattr(node, k, v)
        if save:
            node.save(x)
    return result


def _maybe_inplace(x, fn, inplace, *args):
    if inplace:
        return views.apply_inplace(x, fn, *args)
    return fn(x, *args)


def _const(mask, like):
    return wrap(mask.astype(like._ndarray.dtype, copy=False))


# ---- relu family -----------------------------------------------------------------------------
# under create_graph, what a gradient that is constant in the saved input is recorded as (as in torch)
LeakyReluBackwardBackward0 = node_class("LeakyReluBackwardBackward0", ZeroGradNode)
HardtanhBackwardBackward0 = node_class("HardtanhBackwardBackward0", ZeroGradNode)

def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu_() if inplace else pointwise.relu(input)


class LeakyReluBackward0(Node):
    __slots__ = ("slope",)
    saved_names = ("self",)
    saved_values = {"negative_slope": lambda n: n.slope}

    def apply(self, grads):
        (x,) = self.saved()
        g = grads[0]
        return backward_results(LeakyReluBackwardBackward0, (g, x),
                                (g * _const(np.where(x._ndarray > 0, 1.0, self.slope), x),))


def _leaky_relu(x, negative_slope):
    d = widen(x._ndarray)  # bfloat16: float32 math, rounded once in _unary
    return _unary(x, np.where(d > 0, d, d * d.dtype.type(negative_slope)), LeakyReluBackward0,
                  (("slope", negative_slope),))


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    _rules.refuse_kernel(input._ndarray, _rules.INTEGRAL, "leaky_relu_cpu")
    return _maybe_inplace(input, _leaky_relu, inplace, negative_slope)


class HardtanhBackward0(Node):
    __slots__ = ("lo", "hi")
    saved_names = ("self",)
    saved_values = {"min_val": lambda n: n.lo, "max_val": lambda n: n.hi}

    def apply(self, grads):
        (x,) = self.saved()
        d = x._ndarray
        g = grads[0]
        return backward_results(HardtanhBackwardBackward0, (g, x), (g * _const((d > self.lo) & (d < self.hi), x),))


def _hardtanh(x, min_val, max_val):
    return _unary(x, np.clip(x._ndarray, min_val, max_val).astype(x._ndarray.dtype, copy=False), HardtanhBackward0,
                  (("lo", min_val), ("hi", max_val)))


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _maybe_inplace(input, _hardtanh, inplace, min_val, max_val)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0, 6, inplace)  # torch's node reports the ints


# ---- the ELU family: torch's elu(x, alpha, scale, input_scale); selu and celu are its instances --
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_NEGATIVE_SLOPE_INPLACE = ("In-place elu backward calculation is triggered with a negative slope which is not "
                           "supported. This is caused by calling in-place forward function with a negative slope, "
                           "please call out-of-place version instead.")


def _elu_compute(d):
    """The dtype elu's kernel computes in: float32 for the half types (rounded once at the end)."""
    return d.astype(np.float32) if d.dtype.kind in "fV" and d.dtype.itemsize < 4 else d


def _elu_backward_np(gd, sd, alpha, scale, input_scale, is_result):
    """torch's elu_backward kernel on arrays; ``sd`` is the input, or the result when ``is_result``."""
    typ = np.result_type(gd, sd).type
    negcoef, poscoef, negiptcoef = typ(alpha) * typ(scale), typ(scale), typ(input_scale)
    with _err():
        if is_result:
            neg = gd * negiptcoef * (sd + negcoef)
        else:
            neg = gd * negiptcoef * negcoef * np.exp(sd * negiptcoef)
        return np.where(sd <= 0, neg, gd * poscoef)


def elu_backward(grad_output, self_or_result, alpha, scale, input_scale, is_result):
    """The gradient of elu, recorded under create_graph as torch records it: one node over the
    incoming gradient and the saved input (or result)."""
    if is_result and alpha < 0:
        raise RuntimeError(_NEGATIVE_SLOPE_INPLACE)
    gd, sd = grad_output._ndarray, self_or_result._ndarray
    out = _elu_backward_np(_elu_compute(gd), _elu_compute(sd), alpha, scale, input_scale, is_result)
    result = wrap(out.astype(np.result_type(gd, sd), copy=False))
    if GRAD.enabled and (grad_output._requires_grad or self_or_result._requires_grad):
        node = record_op(EluBackwardBackward0, (grad_output, self_or_result), result)
        node.alpha, node.scale, node.input_scale, node.is_result = alpha, scale, input_scale, is_result
        node.save(grad_output, self_or_result)
    return result


class _EluParams(Node):
    __slots__ = ("alpha", "scale", "input_scale", "is_result")  # is_result: the double backward's only


class EluBackwardBackward0(_EluParams):
    __slots__ = ()
    saved_names = ("grad_output", "self_or_result")
    saved_values = {"alpha": lambda n: n.alpha, "scale": lambda n: n.scale, "input_scale": lambda n: n.input_scale,
                    "is_result": lambda n: n.is_result}

    def apply(self, grads):
        g, s = self.saved()
        gg = grads[0]
        if gg is None:
            return None, None
        args = (self.alpha, self.scale, self.input_scale, self.is_result)
        g_part = s_part = None
        if self._should_compute_output(0):
            g_part = elu_backward(gg, s, *args)
        if self._should_compute_output(1):
            # torch's elu_double_backward: the STRICT test s < 0 (the second derivative is 0 at 0)
            negative = _const(s._ndarray < 0, gg)
            if self.is_result:
                s_part = gg * g * self.input_scale * negative
            else:
                s_part = elu_backward(gg * g * self.input_scale, s, *args) * negative
        return g_part, s_part


class EluBackward0(_EluParams):
    __slots__ = ()
    saved_names = ("self",)
    saved_values = {"alpha": lambda n: n.alpha, "scale": lambda n: n.scale, "input_scale": lambda n: n.input_scale}

    def apply(self, grads):
        (x,) = self.saved()
        return (elu_backward(grads[0], x, self.alpha, self.scale, self.input_scale, False),)


class EluBackward1(EluBackward0):
    """The in-place form: it keeps the result, not the overwritten input."""
    __slots__ = ()
    saved_names = ("result",)

    def apply(self, grads):
        (r,) = self.saved()
        return (elu_backward(grads[0], r, self.alpha, self.scale, self.input_scale, True),)


def _celu_input_scale(alpha):
    # torch's CELU backward divides by alpha rounded to float32 (1.0 / alpha.toFloat()); its forward
    # by alpha itself
    return 1.0 / float(np.float32(alpha))


class CeluBackward0(_EluParams):
    __slots__ = ()
    saved_names = ("self",)
    saved_values = {"alpha": lambda n: n.alpha}

    def apply(self, grads):
        (x,) = self.saved()
        return (elu_backward(grads[0], x, self.alpha, 1, _celu_input_scale(self.alpha), False),)


class CeluBackward1(CeluBackward0):
    __slots__ = ()
    saved_names = ("result",)

    def apply(self, grads):
        (r,) = self.saved()
        return (elu_backward(grads[0], r, self.alpha, 1, _celu_input_scale(self.alpha), True),)


def _elu_forward(x, alpha, scale, input_scale, node_cls):
    """torch's elu kernel: x > 0 ? x * scale : expm1(x * input_scale) * (alpha * scale), in x's type
    (float32 math for the half types); ``node_cls`` keeps the input or (in-place forms) the result."""
    d = _elu_compute(x._ndarray)
    typ = d.dtype.type
    with _err():
        neg = np.expm1(np.minimum(d, 0) * typ(input_scale)) * (typ(alpha) * typ(scale))
        pos = d if scale == 1 else d * typ(scale)
        out = np.where(d > 0, pos, neg).astype(x._ndarray.dtype, copy=False)
    result = wrap(out)
    if GRAD.enabled and x._requires_grad:
        node = record_op(node_cls, (x,), result)
        node.alpha, node.scale, node.input_scale = alpha, scale, input_scale
        if node_cls.saved_names == ("result",):
            node.save(output=result)
        else:
            node.save(x)
    return result


_NOT_ELU_TYPES = _rules.INTEGRAL | frozenset(("complex64", "complex128"))


def _elu_family(input, inplace, alpha, scale, input_scale, out_of_place_node, inplace_node):
    _rules.refuse_kernel(input._ndarray, _NOT_ELU_TYPES, "elu_cpu")
    if inplace:
        return views.apply_inplace(input, _elu_forward, alpha, scale, input_scale, inplace_node, saves_self=False)
    return _elu_forward(input, alpha, scale, input_scale, out_of_place_node)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return _elu_family(input, inplace, alpha, 1, 1, EluBackward0, EluBackward1)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    return _elu_family(input, inplace, _SELU_ALPHA, _SELU_SCALE, 1, EluBackward0, EluBackward1)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    if alpha == 0:
        if inplace:
            views.check_inplace(input)  # torch refuses an in-place change of a leaf first
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _elu_family(input, inplace, alpha, 1, 1.0 / alpha, CeluBackward0, CeluBackward1)


# ---- smooth activations ----------------------------------------------------------------------
_erf_ufunc = None


def _erf_np(a):
    """erf of an array in its own floating dtype (SciPy's ufunc; float16 is computed in float32).

    scipy.special is imported on first use: it adds about 0.4 s to ``import hookgrad``.
    """
    global _erf_ufunc
    if _erf_ufunc is None:
        from scipy.special import erf as _erf_ufunc
    return _erf_ufunc(a).astype(a.dtype, copy=False)


# Phi(x) = 1 / (1 + exp(-x P(x^2))): x P(x^2) fits the logit of the normal CDF, an odd function,
# over |x| <= 5.5 (a Lawson-weighted Chebyshev fit of degree 8 in x^2 that levels the errors of
# Phi(x) and of x Phi(x), each over 1e-7 + 1e-6 times its value: at most 0.18 of that in float64).
# Past |x| = 5.5 the polynomial is held at x^2 = 30.25, so the logit keeps growing linearly: Phi
# stays 1.0 above (as float32 rounds it there) and falls toward 0 below, x Phi(x) under 2e-8 there.
_CDF_LOGIT_COEFFS = (1.5957710259359708, 0.07266246172338774, -6.214167426419053e-05, -0.00011145218504381172,
                     7.962823779952695e-06, -2.451897348973874e-07, 4.622504074893262e-10, 1.6506938077689137e-10,
                     -2.9776082153523155e-12)
_CDF_LOGIT_RANGE = 5.5


def _normal_cdf_f32(d):
    """Phi(x) for a float32 array, in 22 float32 NumPy passes over two private buffers.

    SciPy's erf evaluates element by element (about 20 ns each: 11 ms on a 1024x512 input); this
    runs vectorized in about a tenth of that. Error, in float32: Phi(x) and x Phi(x) each within
    0.31 and 0.38 of (1e-7 + 1e-6 times the value) of the exact ones (the former erfc formula:
    0.37 and 0.32), Phi below 1.8e-7 absolute. In the negative tail Phi(x) does not cancel (no
    1 + erf): x Phi(x) is within 8e-9 of its exact value at x = -5 (torch's float32 kernels are
    off by up to 6e-8 there).
    """
    f = np.float32
    shape = d.shape
    d = d.reshape(-1)  # 1-D, so that every step below is an array (0-d ones give scalars)
    with _err():  # inf and overflow are expected (x^2 of a huge x, exp far below zero)
        u = np.multiply(d, d)
        np.minimum(u, f(_CDF_LOGIT_RANGE * _CDF_LOGIT_RANGE), out=u)  # NaN stays NaN
        coeffs = _CDF_LOGIT_COEFFS
        p = u * f(-coeffs[-1])       # -P(u), so that multiplying by x gives -logit Phi(x)
        for c in coeffs[-2:0:-1]:
            p += f(-c)
            p *= u
        p += f(-coeffs[0])
        p *= d
        np.exp(p, out=p)             # inf for x far below zero: Phi is then 0
        p += f(1.0)
        np.divide(f(1.0), p, out=p)
    return p.reshape(shape)


def _normal_cdf_np(d):
    """0.5 * (1 + erf(x / sqrt 2)) in d's dtype (float64: SciPy's erf, in torch's order)."""
    if d.dtype == np.float32:
        return _normal_cdf_f32(d)
    c = _erf_np(d * d.dtype.type(_SQRT1_2))
    c += d.dtype.type(1.0)
    c *= d.dtype.type(0.5)
    return c


class GeluBackward0(Node):
    # cdf, cdf_of: Phi(x) from the forward and the array it was computed from (see _keep_cdf)
    __slots__ = ("approximate", "cdf", "cdf_of")
    saved_names = ("self",)
    saved_values = {"approximate": lambda n: n.approximate}

    def apply(self, grads):
        (x,) = self.saved()
        return (_gelu_backward(grads[0], x, self.approximate, self),)

    def _cdf_for(self, data, d):
        """Phi of the saved input: the forward's array when the saved input is still that array
        (the saved-tensor check has already refused one modified in place), else computed again."""
        cdf = self.cdf
        if cdf is not None and data is self.cdf_of:
            return cdf
        return _normal_cdf_np(d)


class GeluBackwardBackward0(Node):
    """torch's derivative of GELU's backward: one node over the incoming gradient and the input,
    saving both; the input's part is the incoming gradients times GELU's second derivative."""

    __slots__ = ("approximate",)
    saved_names = ("grad_output", "self")
    saved_values = {"approximate": lambda n: n.approximate}

    def apply(self, grads):
        gg = grads[0]
        g, x = self.saved()
        gg_out = _gelu_backward(gg, x, self.approximate) if self._should_compute_output(0) else None
        gx = (gg * g) * _gelu_second_derivative(x, self.approximate) if self._should_compute_output(1) else None
        return gg_out, gx


def _gelu_second_derivative(x, approximate):
    """GELU'' in hookgrad ops: (2 - x^2) pdf(x) exactly; for the tanh form, with u = k(x + c x^3),
    t = tanh(u) and s = 1 - t^2: s u' - x t s u'^2 + 3 k c x^2 s."""
    if approximate == "tanh":
        k, c = _SQRT_2_PI, 0.044715
        x_sq = x * x
        t = ((x + x_sq * x * c) * k).tanh()
        s = 1 - t * t
        du = (x_sq * (3 * c) + 1) * k
        return s * du - x * t * s * du * du + x_sq * s * (3 * k * c)
    x_sq = x * x
    pdf = (x_sq * -0.5).exp() * _INV_SQRT_2PI
    return pdf * 2 - x_sq * pdf


def _gelu_backward(g, x, approximate, cdf_source=None):
    """``g`` times GELU's slope at ``x``, one NumPy expression in torch's order of operations (Phi
    from the forward when ``cdf_source`` kept it); under create_graph recorded as torch records
    it, one GeluBackwardBackward0 node."""
    with _err():
        d = _gelu_compute_dtype(x._ndarray)
        if approximate == "tanh":
            dx = _gelu_tanh_grad_np(d)
        else:
            dx = np.multiply(d, d, out=np.empty_like(d))  # an array even when 0-d
            dx *= d.dtype.type(-0.5)
            np.exp(dx, out=dx)
            dx *= d.dtype.type(_INV_SQRT_2PI)
            dx *= d                          # x * pdf(x)
            dx += cdf_source._cdf_for(x._ndarray, d) if cdf_source is not None else _normal_cdf_np(d)
        dx *= g._ndarray
    out = wrap(dx.astype(x._ndarray.dtype, copy=False))
    if GRAD.enabled and (g._requires_grad or x._requires_grad):
        node = record_op(GeluBackwardBackward0, (g, x), out)
        node.approximate = approximate
        node.save(g, x)
    return out

    def release_variables(self):
        super().release_variables()
        self.cdf = self.cdf_of = None


def _keep_cdf(result, data, cdf):
    """Let GELU's backward reuse Phi(x) from the forward (one evaluation of erf instead of two).

    Not under saved-tensor hooks: those may exist to keep less in memory (offloading,
    compression), and the backward must then see only what the unpack hook returns."""
    node = result._grad_fn_value
    if node is None or type(node) is not GeluBackward0:
        return
    saved = node._saved
    if saved and saved[0] is not None and saved[0].unpack_hook is None:
        node.cdf, node.cdf_of = cdf, data
    else:
        node.cdf = node.cdf_of = None


def _gelu_compute_dtype(d):
    """float16 and bfloat16 are computed in float32 and rounded once at the end, as torch does."""
    return d.astype(np.float32) if d.dtype == np.float16 or d.dtype.kind == "V" else d


def _gelu_tanh_grad_np(d):
    f = d.dtype.type
    x_sq = d * d
    t = np.tanh(f(_SQRT_2_PI) * (d + f(0.044715) * x_sq * d))
    right = f(0.5) * d * (f(1.0) - t * t) * (f(_SQRT_2_PI) * (f(1.0) + f(3 * 0.044715) * x_sq))
    t += f(1.0)
    t *= f(0.5)
    t += right
    return t


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh.")
    _rules.refuse_kernel(input._ndarray, _rules.INTEGRAL, "GeluKernelImpl")
    d = input._ndarray
    if not is_inexact_np(d.dtype):
        raise NotImplementedError(f"\"GeluKernelImpl\" not implemented for '{scalar_type_name(d.dtype)}'")
    c = _gelu_compute_dtype(d)
    f = c.dtype.type
    with _err():
        if approximate == "tanh":
            out = np.tanh(f(_SQRT_2_PI) * (c + f(0.044715) * c * c * c))
            out += f(1.0)
            out *= c * f(0.5)
            return _unary(input, out.astype(d.dtype, copy=False), GeluBackward0,
                          (("approximate", approximate), ("cdf", None), ("cdf_of", None)))
        # x * Phi(x): the same rounding as (x * 0.5) * (1 + erf), halving being exact
        cdf = _normal_cdf_np(c)
        out = cdf * c
    result = _unary(input, out.astype(d.dtype, copy=False), GeluBackward0, (("approximate", approximate),))
    _keep_cdf(result, d, cdf)
    return result


class SiluBackward0(Node):
    __slots__ = ()
    saved_names = ("self",)

    def apply(self, grads):
        (x,) = self.saved()
        s = x.sigmoid()
        return (grads[0] * (s * (x * (1 - s) + 1)),)


def _silu(x):
    d = widen(x._ndarray)  # bfloat16: float32 math, rounded once in _unary
    return _unary(x, d * pointwise._sigmoid_np(d), SiluBackward0)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    _rules.refuse_kernel(input._ndarray, _rules.INTEGRAL, "silu_cpu")
    return _maybe_inplace(input, _silu, inplace)


class SoftplusBackward0(Node):
    __slots__ = ("beta", "threshold")
    saved_names = ("self",)
    saved_values = {"beta": lambda n: n.beta, "threshold": lambda n: n.threshold}

    def apply(self, grads):
        (x,) = self.saved()
        return (_softplus_backward(grads[0], x, self.beta, self.threshold),)


class SoftplusBackwardBackward0(Node):
    """torch's derivative of softplus's backward: one node over the incoming gradient and the input,
    saving both; the input's part is torch's softplus_double_backward in ops."""

    __slots__ = ("beta", "threshold")
    saved_names = ("grad_output", "self")
    saved_values = {"beta": lambda n: n.beta, "threshold": lambda n: n.threshold}

    def apply(self, grads):
        from .scalar_ops import mul_scalar  # (scalar_ops imports this module's importers)
        gg = grads[0]
        g, x = self.saved()
        gg_out = gx = None
        if self._should_compute_output(0):
            gg_out = _softplus_backward(gg, x, self.beta, self.threshold)
        if self._should_compute_output(1):
            scaled = mul_scalar(x, self.beta)
            curve = pointwise.sigmoid_backward(gg * g, scaled.sigmoid())
            gx = mul_scalar(curve * (scaled < self.threshold).type_as(curve), self.beta)
        return gg_out, gx


def _softplus_backward(g, x, beta, threshold):
    """``g`` times softplus's slope at ``x`` (1 past the threshold); under create_graph recorded as
    torch records it, one SoftplusBackwardBackward0 node."""
    bx = widen(x._ndarray) * beta
    with _err():
        slope = np.where(bx > threshold, 1.0, pointwise._sigmoid_np(bx))
        out = wrap(_in_dtype(widen(g._ndarray) * slope, g._ndarray.dtype))
    if GRAD.enabled and (g._requires_grad or x._requires_grad):
        node = record_op(SoftplusBackwardBackward0, (g, x), out)
        node.beta, node.threshold = beta, threshold
        node.save(g, x)
    return out


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    _rules.refuse_kernel(input._ndarray, _rules.INTEGRAL, "softplus_cpu")
    d = widen(input._ndarray)  # bfloat16: float32 math, rounded once in _unary
    bx = d * d.dtype.type(beta)
    with _err():
        soft = (np.logaddexp(0, bx) / beta).astype(d.dtype, copy=False)
    out = np.where(bx > threshold, d, soft)
    return _unary(input, out, SoftplusBackward0, (("beta", beta), ("threshold", threshold)))


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()  # the method, as torch's F.sigmoid calls it (what overrides see)


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


# ---- softmax ---------------------------------------------------------------------------------
def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  f"as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim("softmax", input._ndarray.ndim, _stacklevel)
    return reduce.softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _softmax_dim("log_softmax", input._ndarray.ndim, _stacklevel)
    return reduce.log_softmax(input, dim, dtype)


# ---- dropout ---------------------------------------------------------------------------------
def _dropout_noise(like: np.ndarray, keep_prob: float) -> np.ndarray:
    """torch's dropout noise: ``empty_like(input).bernoulli_(1 - p).div_(1 - p)`` (one double uniform per
    element, in the memory order of a tensor laid out like ``input``)."""
    from ..._ops import rng
    from ..._ops.creation import default_generator
    keep = rng.bernoulli_scalar(default_generator, like.size, keep_prob)
    order_like = like if rng.is_dense(like) else np.empty(like.shape)  # empty_like keeps a dense layout
    keep = rng.fill_in_memory_order(order_like, keep)
    return keep.astype(like.dtype) / like.dtype.type(keep_prob)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    d = input._ndarray
    if p == 1.0:
        scale = np.zeros(d.shape, dtype=d.dtype)
    elif d.__class__ is MetaArray:   # a meta mask: nothing drawn, as torch
        scale = meta_like(d)
    else:
        scale = _dropout_noise(d, 1.0 - p)
    mask = wrap(scale)
    if inplace:
        return input.mul_(mask)
    return pointwise.mul(input, mask)


# ---- activations with a node of their own (torch records one fused node for each) --------------
# Each node's plain backward computes the derivative in NumPy; under create_graph it is written in
# hookgrad ops on the saved tensors (differentiable again), where torch records its own
# *BackwardBackward0 node: the second-order graph differs from torch's, its values do not.
def _in_dtype(out, dtype):
    return narrow_to(out, dtype) if dtype.kind == "V" else out.astype(dtype, copy=False)


_COMPLEX = frozenset(("complex64", "complex128"))


def _refuse(input, kernel, integral=True):
    """torch's NotImplementedError for the types these kernels lack: complex, float8/complex32 and
    (``integral``) integers and bool."""
    _rules.refuse_kernel(input._ndarray, _rules.INTEGRAL | _COMPLEX if integral else _COMPLEX, kernel)
    _rules.refuse_lowprec(input._ndarray, kernel)


class _PointwiseActivationNode(Node):
    """Backward of an elementwise activation of one saved input: ``grad * derivative(x)``.
    Subclasses give ``derivative_np(array)`` and ``derivative(tensor)`` (hookgrad ops)."""

    __slots__ = ()
    saved_names = ("self",)

    def apply(self, grads):
        (x,) = self.saved()
        g = grads[0]
        if not GRAD.enabled:
            with _err():
                dx = self.derivative_np(widen(x._ndarray)) * widen(g._ndarray)
            return (wrap(_in_dtype(dx, g._ndarray.dtype)),)
        return (g * self.derivative(x),)


def _record_pointwise(x, out, node_cls, **params):
    result = wrap(_in_dtype(out, x._ndarray.dtype))
    if GRAD.enabled and x._requires_grad:
        node = record_op(node_cls, (x,), result)
        for k, v in params.items():
            setattr(node, k, v)
        node.save(x)
    return result


class ThresholdBackward0(_PointwiseActivationNode):
    __slots__ = ("threshold",)
    saved_values = {"threshold": lambda n: n.threshold}

    def derivative_np(self, d):
        return (~(d <= self.threshold)).astype(d.dtype)

    def derivative(self, x):
        return _const(~(x._ndarray <= self.threshold), x)  # NaN passes, as torch's x <= threshold ? 0 : grad


class ThresholdBackward1(ThresholdBackward0):
    """The in-place form: torch keeps a copy of the input from before the write."""

    __slots__ = ()


def _threshold(x, threshold, value, node_cls=ThresholdBackward0):
    _refuse(x, "threshold_cpu", integral=False)
    d = widen(x._ndarray)
    with _err():
        out = np.where(d <= threshold, np.asarray(value).astype(d.dtype), d)  # NaN passes through
    result = wrap(_in_dtype(out, x._ndarray.dtype))
    if GRAD.enabled and x._requires_grad:
        node = record_op(node_cls, (x,), result)
        node.threshold = threshold
        node.save(x)
    return result


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    if inplace:
        return views.apply_inplace(input, _threshold, threshold, value, ThresholdBackward1)
    return _threshold(input, threshold, value)


class _ShrinkNode(_PointwiseActivationNode):
    __slots__ = ("lambd",)
    saved_values = {"lambd": lambda n: n.lambd}

    def _passes(self, d):
        # a NaN gets no gradient, as torch's vectorized kernel (its scalar tail, the last len % 8
        # elements, passes it)
        return (d < -self.lambd) | (d > self.lambd)

    def derivative_np(self, d):
        return self._passes(d).astype(d.dtype)

    def derivative(self, x):
        return _const(self._passes(x._ndarray), x)


HardshrinkBackward0 = node_class("HardshrinkBackward0", _ShrinkNode)
SoftshrinkBackward0 = node_class("SoftshrinkBackward0", _ShrinkNode)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    _refuse(input, "hardshrink_cpu")
    d = widen(input._ndarray)
    inside = (d >= -lambd) & (d <= lambd)
    return _record_pointwise(input, np.where(inside, d.dtype.type(0), d), HardshrinkBackward0, lambd=lambd)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    _refuse(input, "softshrink_check")
    d = widen(input._ndarray)
    typ = d.dtype.type
    with _err():
        out = np.where(np.abs(d) <= lambd, typ(0), d - np.copysign(typ(lambd), d))  # NaN passes through
    return _record_pointwise(input, out, SoftshrinkBackward0, lambd=lambd)


class HardsigmoidBackward0(_PointwiseActivationNode):
    __slots__ = ()

    def derivative_np(self, d):
        return ((d > -3) & (d < 3)).astype(d.dtype) / d.dtype.type(6)

    def derivative(self, x):
        return wrap(self.derivative_np(x._ndarray))


def _relu6_of_shifted(d):
    """min(max(d + 3, 0), 6): hardsigmoid's and hardswish's shared piece, in d's dtype."""
    typ = d.dtype.type
    return np.minimum(np.maximum(d + typ(3), typ(0)), typ(6))


def _hardsigmoid(x):
    d = widen(x._ndarray)
    return _record_pointwise(x, _relu6_of_shifted(d) / d.dtype.type(6), HardsigmoidBackward0)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    _refuse(input, "hardsigmoid_cpu")
    return _maybe_inplace(input, _hardsigmoid, inplace)


class HardswishBackward0(_PointwiseActivationNode):
    __slots__ = ()

    def derivative_np(self, d):
        typ = d.dtype.type
        # torch's bounds: 0 at -3 and 1 at 3 (the outer pieces' slopes, not the middle one's)
        # and NaN at NaN (it falls to the middle piece)
        return np.where(d >= 3, typ(1), np.where(d <= -3, typ(0), d / typ(3) + typ(0.5)))

    def derivative(self, x):
        d = x._ndarray
        middle = _const(~((d <= -3) | (d >= 3)), x)
        return middle * (x / 3 + 0.5) + _const(d >= 3, x)


def _hardswish(x):
    d = widen(x._ndarray)
    return _record_pointwise(x, d * _relu6_of_shifted(d) / d.dtype.type(6), HardswishBackward0)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    _refuse(input, "hardswish_cpu")
    return _maybe_inplace(input, _hardswish, inplace)


class MishBackward0(_PointwiseActivationNode):
    __slots__ = ()

    def derivative_np(self, d):
        t = np.tanh(np.logaddexp(d.dtype.type(0), d))
        return t + d * pointwise._sigmoid_np(d) * (1 - t * t)

    def derivative(self, x):
        t = softplus(x).tanh()
        return t + x * x.sigmoid() * (1 - t * t)


def _mish(x):
    d = widen(x._ndarray)
    with _err():
        return _record_pointwise(x, d * np.tanh(np.logaddexp(d.dtype.type(0), d)), MishBackward0)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    _refuse(input, "mish_cpu")
    return _maybe_inplace(input, _mish, inplace)


class LogSigmoidBackward0(Node):
    """Keeps the input and torch's ``buffer``, exp(-|x|), from which its CPU kernel computes the
    gradient."""

    __slots__ = ()
    saved_names = ("self", "buffer")

    def apply(self, grads):
        x, z = self.saved()
        g = grads[0]
        if not GRAD.enabled:
            d, zd = widen(x._ndarray), widen(z._ndarray)
            with _err():
                negative = d < 0
                dx = (negative.astype(d.dtype) - np.where(negative, 1, -1).astype(d.dtype) * (zd / (1 + zd)))
                dx *= widen(g._ndarray)
            return (wrap(_in_dtype(dx, g._ndarray.dtype)),)
        return (g * (-x).sigmoid(),)


def logsigmoid(input: Tensor) -> Tensor:
    _refuse(input, "log_sigmoid_cpu")
    d = widen(input._ndarray)
    with _err():
        buffer = np.exp(-np.abs(d))
        out = np.minimum(d, d.dtype.type(0)) - np.log1p(buffer)
    dtype = input._ndarray.dtype
    result = wrap(_in_dtype(out, dtype))
    if GRAD.enabled and input._requires_grad:
        node = record_op(LogSigmoidBackward0, (input,), result)
        node.save(input, wrap(_in_dtype(buffer, dtype)))
    return result


class GluBackward0(Node):
    __slots__ = ("dim",)
    saved_names = ("self",)
    saved_values = {"dim": lambda n: _saved_dim(n.dim)}

    def apply(self, grads):
        (x,) = self.saved()
        g = grads[0]
        a, b = x.chunk(2, self.dim)
        if not GRAD.enabled:
            ad, bd, gd = widen(a._ndarray), widen(b._ndarray), widen(g._ndarray)
            with _err():
                s = pointwise._sigmoid_np(bd)
                ga = gd * s
                gb = ga * ad * (1 - s)
            return (wrap(_in_dtype(np.concatenate([ga, gb], self.dim), g._ndarray.dtype)),)
        s = b.sigmoid()
        ga = g * s
        from ..._ops import shape as _shape
        return (_shape.cat([ga, ga * a * (1 - s)], self.dim),)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.dim()} is size "
                           f"{input.shape[dim]}")
    _refuse(input, "glu_cpu")
    d = widen(input._ndarray)
    a, b = np.split(d, 2, axis=dim)
    with _err():
        out = a * pointwise._sigmoid_np(b)
    result = wrap(_in_dtype(out, input._ndarray.dtype))
    if GRAD.enabled and input._requires_grad:
        node = record_op(GluBackward0, (input,), result)
        node.dim = dim
        node.save(input)
    return result


class PreluKernelBackwardBackward0(Node):
    """torch's derivative of the prelu backward: one node over the incoming gradient, the input and
    the viewed weight. Output 1 (the weight's gradient) is input-shaped; the engine sums it to the
    weight's shape. torch's formulas here split at ``input >= 0`` (the forward at ``input > 0``)."""

    __slots__ = ()
    _num_outputs = 2
    saved_names = ("grad_output", "self", "weight")

    def apply(self, grads):
        ggx, ggw = (tuple(grads) + (None, None))[:2]
        g, x, w = self.saved()
        non_negative = wrap(x._ndarray >= 0)
        zero = wrap(np.zeros((), x._ndarray.dtype))
        out = [None, None, None]
        if self._should_compute_output(0) and (ggx is not None or ggw is not None):
            if ggx is None:
                out[0] = pointwise.where(non_negative, zero, ggw * x)
            else:
                negative_side = ggx * w + ggw * x if ggw is not None else ggx * w
                out[0] = pointwise.where(non_negative, ggx, negative_side)
        if self._should_compute_output(1):
            out[1] = pointwise.where(non_negative, zero, g * ggw) if ggw is not None else _zeros_like(x)
        if self._should_compute_output(2):
            gw = pointwise.where(non_negative, zero, g * ggx) if ggx is not None else _zeros_like(x)
            out[2] = gw.sum_to_size(*w.shape)
        return tuple(out)


def _zeros_like(t):
    return wrap(np.zeros_like(t._ndarray))


class PreluKernelBackward0(Node):
    """Inputs: the input and the weight viewed to broadcast against it (torch's ViewBackward0)."""

    __slots__ = ()
    saved_names = ("self", "weight")

    def apply(self, grads):
        x, w = self.saved()
        g = grads[0]
        positive = x._ndarray > 0
        gx = gw = None
        with _err():
            if self._should_compute_output(0):
                gx = wrap(np.where(positive, g._ndarray, g._ndarray * w._ndarray))
            if self._should_compute_output(1):
                gw = wrap(np.where(positive, 0, g._ndarray * x._ndarray).astype(g._ndarray.dtype, copy=False))
        if GRAD.enabled and any(t._requires_grad for t in (g, x, w)):
            # under create_graph torch records its backward as one op (one node over g, x and w)
            node = record_op(PreluKernelBackwardBackward0, (g, x, w))
            node.save(g, x, w)
            gx, gw = outputs_of(node, (gx, gw))
        if gw is not None:
            gw = gw.sum_to_size(*w.shape)
        return gx, gw


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    _refuse(input, "prelu_cpu")
    if weight.numel() != 1 and (input.dim() < 2 or weight.numel() != input.shape[1]):
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                           f"{weight.numel()} and channel size = {input.shape[1] if input.dim() > 1 else 1}.")
    if input.dim() >= 2:
        weight = weight.view(1, weight.numel(), *([1] * (input.dim() - 2)))
    d = widen(input._ndarray)
    with _err():
        out = np.where(d > 0, d, d * widen(weight._ndarray))
    result = wrap(_in_dtype(out, np.result_type(input._ndarray, weight._ndarray)))
    if GRAD.enabled and (input._requires_grad or weight._requires_grad):
        node = record_op(PreluKernelBackward0, (input, weight), result)
        node.save(input, weight)
    return result


class _RreluNode(Node):
    __slots__ = ("lower", "upper", "training")
    saved_values = {"lower": lambda n: n.lower, "upper": lambda n: n.upper, "training": lambda n: n.training}

    def _gradient(self, g, x, noise):
        if self.training and self.upper - self.lower > 1e-6:
            return (g * noise,)
        # torch's leaky_relu_backward at the mean slope
        slope = (self.lower + self.upper) / 2
        return (g * _const(np.where(x._ndarray > 0, 1.0, slope), g),)


class RreluWithNoiseBackward0(_RreluNode):
    __slots__ = ()
    saved_names = ("noise", "self")   # torch packs the noise first

    def apply(self, grads):
        noise, x = self.saved()
        return self._gradient(grads[0], x, noise)


class RreluWithNoiseBackward1(_RreluNode):
    """The in-place form: keeps the result where the out-of-place one keeps the input."""

    __slots__ = ()
    saved_names = ("noise", "result")

    def apply(self, grads):
        noise, r = self.saved()
        return self._gradient(grads[0], r, noise)


def rrelu_with_noise(input: Tensor, lower: float, upper: float, training: bool, generator=None,
                     node_cls=RreluWithNoiseBackward0) -> Tensor:
    """torch's rrelu_with_noise: in training a slope drawn uniformly in [lower, upper] (a double
    uniform per element <= 0, in order, from ``generator`` or the default one; 1 elsewhere) is the
    noise the node keeps; otherwise leaky ReLU at the mean slope."""
    _refuse(input, "leaky_relu_cpu")
    data = input._ndarray
    d = widen(data)
    if training:
        from ..._ops import rng
        from ..._ops.creation import _generator
        values = np.ascontiguousarray(d)
        negative = values <= 0
        noise = np.ones(values.shape, dtype=d.dtype)
        low, high = float(d.dtype.type(lower)), float(d.dtype.type(upper))  # torch rounds the bounds first
        draws = rng.uniform_unbounded(_generator(generator), int(negative.sum()), low, high)
        noise[negative] = draws.astype(d.dtype)
        with _err():
            out = d * noise
    else:
        # torch's noise is left uninitialized here; zeros keep it deterministic
        noise = np.zeros(d.shape, dtype=d.dtype)
        with _err():
            out = np.where(d > 0, d, d * d.dtype.type((lower + upper) / 2))
    result = wrap(_in_dtype(out, data.dtype))
    if GRAD.enabled and input._requires_grad:
        node = record_op(node_cls, (input,), result)
        node.lower, node.upper, node.training = lower, upper, training
        noise_t = wrap(_in_dtype(noise, data.dtype))
        if node_cls is RreluWithNoiseBackward1:
            node.save(noise_t, output=result)
        else:
            node.save(noise_t, input)
    return result


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False, generator=None) -> Tensor:
    if inplace:
        return views.apply_inplace(input, rrelu_with_noise, lower, upper, training, generator,
                                   RreluWithNoiseBackward1, saves_self=False)
    return rrelu_with_noise(input, lower, upper, training, generator)
