"""Special functions (torch.special and their torch.* / Tensor forms): SciPy's kernels, torch's gradients.

scipy.special is imported on first use (it adds about 0.4 s to ``import hookgrad``). Integer and bool
inputs compute in the default float dtype, as torch's do. Where SciPy and torch answer differently
on an edge value (lgamma(-inf), zeta(s, inf), trigamma at the poles) torch's answer is taken.
"""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype
from .._dtype import narrow_to
from .._tensor import Tensor, wrap
from ..autograd.graph import Node
from . import pointwise
from ._base import GRAD, as_tensor_arg, edge, float_dtype_for, is_number, quiet_fp, record, result_np_dtype
from ._base import refuse_complex, sum_to_shape
from . import _dtype_rules as _rules
from ._declare import UnaryNode, module_all, node_class, op, record_op

_scipy_special = None


def _sc():
    global _scipy_special
    if _scipy_special is None:
        import scipy.special as _scipy_special
    return _scipy_special


def _kernel(name):
    """SciPy's ufunc ``name`` computed in the input's own dtype (float16 goes through float32)."""
    def run(d):
        fn = getattr(_sc(), name)
        src = d.astype(np.float32) if d.dtype == np.float16 else d
        return np.asanyarray(fn(src)).astype(d.dtype, copy=False)
    return run


def _float_data(x):
    d = x._ndarray
    return d if d.dtype.kind in "fc" else d.astype(float_dtype_for(x))


# ---- unary ops with a gradient --------------------------------------------------------------------
# torch's names of the kernels that refuse float8 inputs, where not "<name>_cpu"
_FLOAT8_KERNELS = {"erf": "erf_vml_cpu", "erfc": "erfc_vml_cpu", "erfinv": "erfinv_vml_cpu",
                   "lgamma": "lgamma_vml_cpu", "digamma": "digamma", "i0": "i0_vml_cpu"}


def _unary(name, forward, backward, *, node, saves=("self",), refuse=None, **decl):
    """An elementwise op from its NumPy ``forward`` and ``backward(grad, *saved)`` (hookgrad ops, so
    double backward works); ``saves`` names what the node keeps ("self" and/or "result")."""
    node_cls = node_class(node, UnaryNode, formula=staticmethod(backward), saved_names=tuple(saves))
    save_self, save_result = "self" in saves, "result" in saves
    complex_ok = name == "sinc"  # torch's only special function defined on complex numbers

    def fn(x):
        if not isinstance(x, Tensor):
            x = as_tensor_arg(x)
        if not complex_ok:
            refuse_complex(f'"{name}_vml_cpu" not implemented for \'{{dtype}}\'', x)
        if refuse is not None:
            _rules.refuse_kernel(x._ndarray, _rules.HALF, f"{name}_cpu")
        _rules.refuse_lowprec(x._ndarray, _FLOAT8_KERNELS.get(name, f"{name}_cpu"))
        with quiet_fp():
            # bfloat16: float32 math, one rounding back (as torch computes it)
            result = wrap(narrow_to(forward(_float_data(x)), x._ndarray.dtype))
        if GRAD.enabled and x._requires_grad:
            n = node_cls((edge(x),))
            record(n, result, inputs=(x,))
            if save_self and save_result:
                n.save(x, output=result)
            elif save_result:
                n.save(output=result)
            else:
                n.save(x)
        return result

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}: elementwise, recorded as {node}."
    fn.node_cls = node_cls
    fn.__module__ = __name__
    if decl.get("function", True) is False and not decl.get("method", True):
        return fn  # torch.special only: the namespace module imports it
    return op(name, **decl)(fn)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_SQRT1_2 = math.sqrt(0.5)

erf = _unary("erf", _kernel("erf"), lambda g, x: g * ((x * x).neg().exp() * _TWO_OVER_SQRT_PI),
             node="ErfBackward0", inplace=True)
erfc = _unary("erfc", _kernel("erfc"), lambda g, x: g * ((x * x).neg().exp() * -_TWO_OVER_SQRT_PI),
              node="ErfcBackward0", inplace=True)
erfinv = _unary("erfinv", _kernel("erfinv"), lambda g, x: g * (erfinv(x).pow(2).exp() * _SQRT_PI_OVER_2),
                node="ErfinvBackward0", inplace=True)
erfcx = _unary("erfcx", _kernel("erfcx"), lambda g, x, r: g * ((x * r) * 2 - _TWO_OVER_SQRT_PI),
               refuse=True, node="SpecialErfcxBackward0", saves=("self", "result"), function=False, method=False)


def _lgamma_np(d):
    out = _kernel("gammaln")(d)
    out[np.isneginf(d)] = np.inf  # SciPy answers -inf there; torch (and C's lgamma) +inf
    return out


_PSI_10 = 2.25175258906672110764  # digamma(10)
# the asymptotic series' coefficients, B_2k / 2k, highest power first
_DIGAMMA_SERIES = (8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
                   -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
                   8.33333333333333333333E-2)


def _digamma_np(d):
    """torch's digamma, vectorized in d's dtype: reflection for x < 0, recurrence up to 10, then
    the asymptotic series (SciPy's psi evaluates element by element, ten times slower)."""
    if d.dtype == np.float16:
        return _digamma_np(d.astype(np.float32)).astype(np.float16)
    t = d.dtype.type
    x = d.copy()
    neg = x < 0
    any_neg = bool(neg.any())
    if any_neg:
        frac = np.fmod(d[neg].astype(np.float64), 1.0)
        reflection = (math.pi / np.tan(math.pi * frac)).astype(d.dtype)  # in double, as torch
        x[neg] = t(1) - x[neg]
    result = np.zeros_like(x)
    for _ in range(10):  # x >= 1 after the reflection, or tiny and positive: at most ten steps
        low = x < t(10)
        if not low.any():
            break
        result = np.where(low, result - t(1) / x, result)
        x = np.where(low, x + t(1), x)
    z = t(1) / (x * x)
    poly = np.full_like(x, t(_DIGAMMA_SERIES[0]))
    for c in _DIGAMMA_SERIES[1:]:
        poly = poly * z + t(c)
    y = np.where(x < t(1e17), z * poly, t(0))
    out = result + np.log(x) - (t(0.5) / x) - y
    out = np.where(x == t(10), result + t(_PSI_10), out)
    if any_neg:
        out[neg] = out[neg] - reflection
        out[neg & (d == np.trunc(d))] = np.nan
    zero = d == 0
    if zero.any():
        out[zero] = np.copysign(np.inf, -d[zero])
    return out


lgamma = _unary("lgamma", _lgamma_np, lambda g, x: g * digamma(x), node="LgammaBackward0", inplace=True)
digamma = _unary("digamma", _digamma_np, lambda g, x: g * polygamma(1, x), node="DigammaBackward0",
                 inplace=True)


def _trigamma_np(d):
    """torch's trigamma (reflection below 1/2, six recurrence steps, asymptotic series), in d's dtype."""
    t = d.dtype.type
    x = d.copy()
    sign = np.ones_like(d)
    result = np.zeros_like(d)
    low = x < t(0.5)
    if low.any():
        s = np.sin(t(math.pi) * x[low])
        result[low] -= t(math.pi) * t(math.pi) / (s * s)
        sign[low] = t(-1)
        x[low] = t(1) - x[low]
    for _ in range(6):
        result += t(1) / (x * x)
        x += t(1)
    ixx = t(1) / (x * x)
    result += (t(1) + t(1) / (t(2) * x) + ixx * (t(1.0 / 6) - ixx * (t(1.0 / 30) - ixx * t(1.0 / 42)))) / x
    return sign * result


def _polygamma_np(n, d):
    if n == 0:
        return _digamma_np(d)
    if n == 1:
        return _trigamma_np(d.astype(np.float32) if d.dtype == np.float16 else d).astype(d.dtype, copy=False)
    # (-1)^(n+1) n! zeta(n+1, x), as torch computes it (NaN at +inf, where SciPy gives 0)
    sc = _sc()
    out = ((-1.0) ** (n + 1)) * math.exp(math.lgamma(n + 1.0)) * sc.zeta(n + 1.0, d)
    out = np.asanyarray(out)
    out[np.isposinf(d)] = np.nan
    return out.astype(d.dtype, copy=False)


class PolygammaBackward0(Node):
    __slots__ = ("n",)
    saved_names = ("self",)

    def apply(self, grads):
        (x,) = self.saved()
        return (grads[0] * polygamma(self.n + 1, x),)


class PolygammaBackward1(PolygammaBackward0):
    """torch's node for Tensor.polygamma_ (its in-place overload is a separate op)."""

    __slots__ = ()


def _polygamma(n, input, node_cls):
    x = input if isinstance(input, Tensor) else as_tensor_arg(input)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    with quiet_fp():
        result = wrap(narrow_to(_polygamma_np(int(n), _float_data(x)), x._ndarray.dtype))
    if GRAD.enabled and x._requires_grad:
        node = record_op(node_cls, (x,), result)
        node.n = int(n)
        node.save(x)
    return result


@op(method=False)
def polygamma(n, input):
    return _polygamma(n, input, PolygammaBackward0)


@op("polygamma", function=False)
def polygamma_method(self, n):
    """Tensor.polygamma(n): the order comes first in torch.polygamma but after self in the method."""
    return polygamma(n, self)


@op("polygamma_inplace_form", function=False, method=False, inplace="polygamma_")
def polygamma_inplace_form(self, n):
    return _polygamma(n, self, PolygammaBackward1)


class MvlgammaBackward0(Node):
    __slots__ = ("p",)
    saved_names = ("self",)

    def apply(self, grads):
        (x,) = self.saved()
        return (grads[0] * _mvdigamma(x, self.p),)


def _mvdigamma(x, p):
    total = digamma(x)
    for j in range(1, p):
        total = total + digamma(x - j / 2.0)
    return total


@op(inplace=True)
def mvlgamma(input, p):
    x = input if isinstance(input, Tensor) else as_tensor_arg(input)
    if x._ndarray.dtype.kind == "b":
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    d = _float_data(x)
    js = np.arange(p, dtype=d.dtype) / d.dtype.type(2)
    with quiet_fp():
        total = _lgamma_np(d[..., None] - js).sum(-1) + d.dtype.type(p * (p - 1) / 4.0 * math.log(math.pi))
    result = wrap(narrow_to(np.asanyarray(total, dtype=d.dtype), x._ndarray.dtype))
    if GRAD.enabled and x._requires_grad:
        node = record_op(MvlgammaBackward0, (x,), result)
        node.p = int(p)
        node.save(x)
    return result


i0 = _unary("i0", _kernel("i0"), lambda g, x: g * i1(x), node="I0Backward0", inplace=True)
i0e = _unary("i0e", _kernel("i0e"), lambda g, x, r: g * (i1e(x) - x.sgn() * r), node="SpecialI0EBackward0",
             saves=("self", "result"), function=False, method=False)


def _i1_backward(g, x, r):
    # the limit 1/2 wherever |x| > 0 fails: at 0, and at NaN as torch's
    away = x.abs() > 0
    safe = pointwise.where(away, x, 1.0)
    return g * pointwise.where(away, i0(x) - r / safe, 0.5)


def _i1e_backward(g, x, r):
    away = x.abs() > 0
    safe = pointwise.where(away, x, 1.0)
    return g * pointwise.where(away, i0e(x) - r * (x.sgn() + safe.reciprocal()), 0.5)


i1 = _unary("i1", _kernel("i1"), _i1_backward, node="SpecialI1Backward0", saves=("self", "result"),
            function=False, method=False)
i1e = _unary("i1e", _kernel("i1e"), _i1e_backward, node="SpecialI1EBackward0", saves=("self", "result"),
             function=False, method=False)

ndtri = _unary("ndtri", _kernel("ndtri"), lambda g, r: g * ((r * r * 0.5).exp() * _SQRT_2PI),
               refuse=True, node="SpecialNdtriBackward0", saves=("result",), function=False, method=False)
log_ndtr = _unary("log_ndtr", _kernel("log_ndtr"),
                  lambda g, x, r: g * ((r + x * x * 0.5).neg().exp() / _SQRT_2PI),
                  refuse=True, node="SpecialLogNdtrBackward0", saves=("self", "result"), function=False, method=False)


def ndtr(input):
    """The standard normal CDF: torch composes it as (1 + erf(x / sqrt 2)) * 0.5 (so does its graph)."""
    x = input if isinstance(input, Tensor) else as_tensor_arg(input)
    return (erf(x * _SQRT1_2) + 1) * 0.5


def _sinc_backward(g, x):
    # (cos(pi x) - sinc(x)) / x: finite for tiny x, where the textbook quotient's x * pi x underflows
    d = ((x * math.pi).cos() - x.sinc()) / x
    return g * pointwise.where(x == 0, 0.0, d)


sinc = _unary("sinc", np.sinc, _sinc_backward, node="SincBackward0", inplace=True)
entr = _unary("entr", _kernel("entr"), lambda g, x: g * (x.log() + 1).neg(), node="SpecialEntrBackward0",
              function=False, method=False)


# ---- logit ------------------------------------------------------------------------------------
class LogitBackward0(Node):
    __slots__ = ("eps",)
    saved_names = ("self",)
    saved_values = {"eps": lambda n: n.eps}

    def apply(self, grads):
        (x,) = self.saved()
        g = grads[0]
        d = g / (x * (1 - x))
        if self.eps is None:
            return (pointwise.where((x < 0) | (x > 1), float("nan"), d),)
        # inside the clamp's bounds only: a NaN is outside (0), as torch's
        return (pointwise.where((x >= self.eps) & (x <= 1 - self.eps), d, 0.0),)


@op(inplace=True)
def logit(input, eps=None):
    x = input if isinstance(input, Tensor) else as_tensor_arg(input)
    refuse_complex('"logit_cpu" not implemented for \'{dtype}\'', x)
    d = _float_data(x)
    z = d if eps is None else np.clip(d, d.dtype.type(eps), d.dtype.type(1 - eps))
    with quiet_fp():
        result = wrap(narrow_to(np.log(z / (d.dtype.type(1) - z)).astype(d.dtype, copy=False), x._ndarray.dtype))
    if GRAD.enabled and x._requires_grad:
        node = record_op(LogitBackward0, (x,), result)
        node.eps = None if eps is None else float(eps)
        node.save(x)
    return result


# ---- binary ops ---------------------------------------------------------------------------------
def _binary_operands(a, b):
    """(a, b, float NumPy dtype of the result): each side a Tensor or a Python number."""
    if is_number(a) and is_number(b):
        raise TypeError("expected at least one Tensor argument")
    if not isinstance(a, Tensor) and not is_number(a):
        a = as_tensor_arg(a)
    if not isinstance(b, Tensor) and not is_number(b):
        b = as_tensor_arg(b)
    dt = result_np_dtype(a, b) if isinstance(a, Tensor) else result_np_dtype(b, a)
    if dt.kind not in "fc":
        dt = _dtype.get_default_dtype().np
    return a, b, dt


def _operand(x, dt):
    return x._ndarray.astype(dt, copy=False) if isinstance(x, Tensor) else dt.type(x)


class _BinaryNode(Node):
    """Backward of an elementwise op of two operands; ``d_self``/``d_other(g, a, b)`` give the
    gradient for each (raising where torch has no formula). ``scalar_at``: which operand was a
    number (torch's ...Backward1 / ...Backward2 nodes), or None."""

    __slots__ = ("shapes", "dtypes", "scalar")
    scalar_at = None
    d_self = d_other = None

    def apply(self, grads):
        g = grads[0]
        operands = list(self.saved())
        if self.scalar_at is None:
            operands.reverse()  # saved as (other, self)
        positions = (0, 1) if self.scalar_at is None else (1 - self.scalar_at,)
        if g is None:  # (nodes with a missing derivative run without a gradient, to raise as torch does)
            for i, pos in enumerate(positions):
                d = self.d_self if pos == 0 else self.d_other
                if self._should_compute_output(i) and getattr(d, "missing", False):
                    d(None, None, None)
            return (None,) * len(self.next_functions)
        if self.scalar_at is not None:
            operands.insert(self.scalar_at, self.scalar)
        a, b = operands
        out = []
        for i, pos in enumerate(positions):
            if not self._should_compute_output(i):
                out.append(None)
                continue
            d = (self.d_self if pos == 0 else self.d_other)(g, a, b)
            d = sum_to_shape(d, self.shapes[pos])
            if d._ndarray.dtype != self.dtypes[pos]:
                d = d.to(_dtype.from_numpy_dtype(self.dtypes[pos]))
            out.append(d)
        return tuple(out)


def _binary_nodes(prefix, d_self, d_other, saved=("self", "other"), scalar_variants=True):
    """torch's nodes for a binary op: <prefix>0 (two tensors), 1 (self a number), 2 (other a number)."""
    attrs = {"d_self": staticmethod(d_self), "d_other": staticmethod(d_other),
             # torch raises a missing derivative even when no gradient reached the node
             "runs_without_grads": getattr(d_self, "missing", False) or getattr(d_other, "missing", False)}
    # torch's two-tensor nodes of these ops pack (and unpack) other before self
    nodes = [node_class(prefix + "0", _BinaryNode, saved_names=saved[::-1], **attrs)]
    if scalar_variants:
        nodes.append(node_class(prefix + "1", _BinaryNode, saved_names=(saved[1],), scalar_at=0, **attrs))
        nodes.append(node_class(prefix + "2", _BinaryNode, saved_names=(saved[0],), scalar_at=1, **attrs))
    return nodes


def _binary(a, b, kernel, nodes, name):
    for t in (a, b):
        if isinstance(t, Tensor):
            _rules.refuse_lowprec(t._ndarray, f"{name}_cpu")
    a, b, dt = _binary_operands(a, b)
    try:
        with quiet_fp():
            data = np.asanyarray(kernel(_operand(a, dt), _operand(b, dt), dt)).astype(dt, copy=False)
    except ValueError:
        raise RuntimeError(pointwise._broadcast_message(a, b)) from None
    # bfloat16 operands: float32 math, one rounding back
    result = wrap(narrow_to(data, result_np_dtype(a, b) if isinstance(a, Tensor) else result_np_dtype(b, a)))
    grad_a = isinstance(a, Tensor) and a._requires_grad
    grad_b = isinstance(b, Tensor) and b._requires_grad
    if GRAD.enabled and (grad_a or grad_b):
        if isinstance(a, Tensor) and isinstance(b, Tensor):
            node = record_op(nodes[0], (a, b), result)
            node.save(b, a)
        elif isinstance(b, Tensor):
            node = record_op(nodes[1], (b,), result)
            node.scalar = a
            node.save(b)
        else:
            node = record_op(nodes[2], (a,), result)
            node.scalar = b
            node.save(a)
        node.shapes = tuple(t._ndarray.shape if isinstance(t, Tensor) else () for t in (a, b))
        node.dtypes = tuple(t._ndarray.dtype if isinstance(t, Tensor) else dt for t in (a, b))
    return result


def _xlogy_np(a, b, dt):
    out = np.where(a == 0, dt.type(0), a * np.log(b))
    return np.where(np.isnan(b), b, out)


def _xlog1py_np(a, b, dt):
    out = np.where(a == 0, dt.type(0), a * np.log1p(b))
    return np.where(np.isnan(b), b, out)


def _zero_where_both(grad, first, second):
    """``grad`` set to 0 where both conditions hold (either may be a Python bool: a number operand)."""
    if not isinstance(first, Tensor) or not isinstance(second, Tensor):
        other = second if not isinstance(first, Tensor) else first
        both = first if not isinstance(first, Tensor) else second
        if not isinstance(other, Tensor):
            return grad * 0 if both and other else grad
        return grad.masked_fill(other, 0.0) if both else grad
    return grad.masked_fill(first & second, 0.0)


def _d_xlogy_self(g, a, b):
    # log(b), also where a == 0 (the function is a * log(b) there too); 0 only where a == 0 and b <= 0
    return _zero_where_both(xlogy(g, b), a == 0, b <= 0)


def _d_xlog1py_self(g, a, b):
    return _zero_where_both(xlog1py(g, b), a == 0, b <= -1)


_XLOGY = _binary_nodes("XlogyBackward", _d_xlogy_self, lambda g, a, b: g * a / b)
_XLOG1PY = _binary_nodes("SpecialXlog1PyBackward", _d_xlog1py_self, lambda g, a, b: g * a / (b + 1))


@op(inplace=True)
def xlogy(input, other):
    return _binary(input, other, _xlogy_np, _XLOGY, "xlogy")


def xlog1py(input, other):
    return _binary(input, other, _xlog1py_np, _XLOG1PY, "xlog1py")


def _zeta_np(s, q, dt):
    out = np.asanyarray(_sc().zeta(s, q))
    return np.where(np.isposinf(q) & ~np.isnan(s) & (s != 1), np.nan, out)  # torch: NaN at q = +inf


def _no_derivative(what):
    def fail(g, a, b):
        raise NotImplementedError(f"the derivative for '{what}' is not implemented.")
    fail.missing = True
    return fail


def _d_zeta_other(g, s, q):
    return g * (s * -1) * zeta(s + 1.0, q) if isinstance(s, Tensor) else g * (-s) * zeta(s + 1.0, q)


_ZETA = _binary_nodes("SpecialZetaBackward", _no_derivative("zeta"), _d_zeta_other)


def zeta(input, other):
    for operand in (input, other):
        if isinstance(operand, Tensor):
            _rules.refuse_kernel(operand._ndarray, _rules.HALF, "zeta_cpu")
    return _binary(input, other, _zeta_np, _ZETA, "zeta")


def _d_igamma_other(g, a, x):
    return g * ((a - 1) * x.log() - x - lgamma(a)).exp()


_IGAMMA = _binary_nodes("IgammaBackward", _no_derivative("igamma: input"), _d_igamma_other, scalar_variants=False)
_IGAMMAC = _binary_nodes("IgammacBackward", _no_derivative("igammac: input"),
                         lambda g, a, x: -_d_igamma_other(g, a, x), scalar_variants=False)


_TORCH_SCALAR_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                       "bool": "Bool"}


def _tensor_operands(name, a, b):
    for arg, what in ((a, "input"), (b, "other")):
        if not isinstance(arg, Tensor):
            raise TypeError(f"{name}(): argument '{what}' (position {1 if what == 'input' else 2}) must be "
                            f"Tensor, not {type(arg).__name__}")
    promoted = result_np_dtype(a, b)
    if promoted.kind not in "fc" and not _dtype.is_bfloat16_np(promoted):  # no integer kernel in torch
        kind = _TORCH_SCALAR_NAMES.get(promoted.name, promoted.name)
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{kind}\'')


def _igamma_np(lower):
    """The regularized incomplete gamma function with torch's answers at its edges, which it checks in
    this order (a NaN operand passes through them: igamma(nan, 0) is 0, as in torch)."""
    def kernel(a, x, dt):
        a, x = np.broadcast_arrays(a, x)
        out = np.asanyarray(_sc().gammainc(a, x) if lower else _sc().gammaincc(a, x), dtype=dt)
        out = np.array(out, copy=True)
        one, zero = (1.0, 0.0) if lower else (0.0, 1.0)
        done = np.zeros(out.shape, dtype=bool)
        for mask, value in (((x < 0) | (a < 0), np.nan), ((a == 0) & (x > 0), one), (a == 0, np.nan),
                            (x == 0, zero), (np.isinf(a) & np.isinf(x), np.nan), (np.isinf(a), zero),
                            (np.isinf(x), one)):
            m = mask & ~done
            out[m] = value
            done |= m
        return out
    return kernel


@op(inplace=True)
def igamma(input, other):
    _tensor_operands("igamma", input, other)
    return _binary(input, other, _igamma_np(True), _IGAMMA, "igamma")


@op(inplace=True)
def igammac(input, other):
    _tensor_operands("igammac", input, other)
    return _binary(input, other, _igamma_np(False), _IGAMMAC, "igammac")


# ---- functions torch does not differentiate: Bessel, Airy, orthogonal polynomials ----------------
def _no_grad_unary(name, kernel):
    def fn(input):
        x = input if isinstance(input, Tensor) else as_tensor_arg(input)
        with quiet_fp():
            return wrap(kernel(_float_data(x)))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.special.{name}: elementwise; torch defines no gradient for it."
    return fn


bessel_j0 = _no_grad_unary("bessel_j0", _kernel("j0"))
bessel_j1 = _no_grad_unary("bessel_j1", _kernel("j1"))
bessel_y0 = _no_grad_unary("bessel_y0", _kernel("y0"))
bessel_y1 = _no_grad_unary("bessel_y1", _kernel("y1"))
modified_bessel_i0 = _no_grad_unary("modified_bessel_i0", _kernel("i0"))
modified_bessel_i1 = _no_grad_unary("modified_bessel_i1", _kernel("i1"))
modified_bessel_k0 = _no_grad_unary("modified_bessel_k0", _kernel("k0"))
modified_bessel_k1 = _no_grad_unary("modified_bessel_k1", _kernel("k1"))
scaled_modified_bessel_k0 = _no_grad_unary("scaled_modified_bessel_k0", _kernel("k0e"))
scaled_modified_bessel_k1 = _no_grad_unary("scaled_modified_bessel_k1", _kernel("k1e"))


def _spherical_j0_np(d):
    out = np.asanyarray(_sc().spherical_jn(0, d.astype(np.float32) if d.dtype == np.float16 else d))
    return out.astype(d.dtype, copy=False)


spherical_bessel_j0 = _no_grad_unary("spherical_bessel_j0", _spherical_j0_np)
airy_ai = _no_grad_unary("airy_ai", lambda d: np.asanyarray(_sc().airy(d)[0]).astype(d.dtype, copy=False))


def _degree(n, dtype):
    """torch's int64 degree of each element of ``n`` (truncated; NaN/inf become -1, which yields 0)."""
    n = np.asanyarray(n)
    if n.dtype.kind in "fc":
        finite = np.isfinite(n)
        return np.where(finite, np.trunc(np.where(finite, n, -1)), -1).astype(np.int64)
    return n.astype(np.int64)


def _recurrence(out, todo, x, n, p, q, step, first_k, last_k):
    """Run ``r = step(k, p, q)`` for k = first_k .. last_k(n) where ``todo``, stopping at a NaN ``q``."""
    if not todo.any():
        return
    xs, ns, ps, qs = x[todo], n[todo], p[todo], q[todo]
    live = np.ones(xs.shape, dtype=bool)
    k = first_k
    top = int(last_k(ns).max())
    while k <= top:
        live &= (k <= last_k(ns)) & ~np.isnan(qs)
        if not live.any():
            break
        r = step(k, xs, ps, qs)
        ps = np.where(live, qs, ps)
        qs = np.where(live, r, qs)
        k += 1
    out[todo] = qs


def _libm(fn, a):
    """``fn`` rounded once to ``a``'s dtype (NumPy's float32 loops may be an ulp off C's acosf/cosf,
    and the closed forms multiply the angle by the degree)."""
    return fn(a.astype(np.float64)).astype(a.dtype) if a.dtype == np.float32 else fn(a)


def _chebyshev(kind, shifted):
    """torch's Chebyshev polynomials of the first to fourth kind (T, U, V, W), plain or shifted to [0, 1]."""
    limit = {"t": 6, "u": 8, "v": 8, "w": 8}[kind] if not shifted else {"t": 6, "u": 6, "v": 6, "w": 4}[kind]

    def kernel(x0, n):
        t = x0.dtype.type
        y = x0 + x0 - t(1) if shifted else x0
        nf = n.astype(x0.dtype)
        out = np.zeros_like(y)
        done = n < 0
        top = (x0 == t(1)) if shifted else (y == t(1))
        bottom = (x0 == t(0)) if shifted else (y == t(-1))
        even = n % 2 == 0
        odd_sign = np.where(even, t(1), t(-1))
        edge_top = {"t": np.ones_like(y), "u": nf + 1, "v": np.ones_like(y), "w": nf + nf + 1}[kind]
        edge_bottom = {"t": odd_sign, "u": odd_sign * (nf + 1), "v": odd_sign * (nf + nf + 1), "w": odd_sign}[kind]
        for mask, value in ((top, edge_top), (bottom, edge_bottom)):
            m = mask & ~done
            out[m] = value[m]
            done |= m
        closed = ~done & (n > limit) & (np.abs(y) < t(1))
        if closed.any():
            yc, nc = y[closed], nf[closed]
            th = _libm(np.arccos, yc)
            if kind == "t":
                val = _libm(np.cos, nc * th)
            elif kind == "u":
                s = np.sin(th)
                val = np.where(s != t(0), np.sin((nc + t(1)) * th) / np.where(s != 0, s, t(1)),
                               (nc + t(1)) * np.cos((nc + t(1)) * th) / yc)
            elif kind == "v":
                ok = np.sin(th / t(2)) != t(1)
                val = np.where(ok, np.cos((nc + t(0.5)) * th) / np.cos(th / t(2)), edge_bottom[closed])
            else:
                ok = np.cos(th / t(2)) != t(1)
                fallback = np.where(yc > t(0), nc + nc + t(1), odd_sign[closed])
                val = np.where(ok, np.sin((nc + t(0.5)) * th) / np.sin(th / t(2)), fallback)
            out[closed] = val
            done |= closed
        first = {"t": y, "u": y + y, "v": y + y - t(1), "w": y + y + t(1)}[kind]
        m = ~done & (n == 0)
        out[m] = t(1)
        done |= m
        m = ~done & (n == 1)
        out[m] = first[m]
        done |= m
        _recurrence(out, ~done, y, n, np.ones_like(y), first, lambda k, xs, p, q: (xs + xs) * q - p, 2,
                    lambda ns: ns)
        return out
    return kernel


def _hermite(physicists):
    def kernel(x, n):
        t = x.dtype.type
        limit = {np.dtype(np.float32): 128, np.dtype(np.float64): 512}.get(x.dtype, 1024)
        first = x + x if physicists else x.copy()
        out = np.zeros_like(x)
        done = n < 0
        for mask, value in ((n == 0, np.ones_like(x)), (n == 1, first), (n > limit, np.full_like(x, np.nan))):
            m = mask & ~done
            out[m] = value[m]
            done |= m
        if physicists:  # k runs 2, 4, ... below 2n: r = 2x q - k p
            step = lambda k, xs, p, q: (xs + xs) * q - t(2 * (k - 1)) * p  # noqa: E731
        else:
            step = lambda k, xs, p, q: xs * q - t(k - 1) * p  # noqa: E731
        todo = ~done
        if todo.any():
            xs, ns = x[todo], n[todo]
            p, q = np.ones_like(xs), first[todo]
            for k in range(2, int(ns.max()) + 1):
                live = k <= ns
                r = step(k, xs, p, q)
                p, q = np.where(live, q, p), np.where(live, r, q)
            out[todo] = q
        return out
    return kernel


def _laguerre(x, n):
    t = x.dtype.type
    out = np.zeros_like(x)
    done = n < 0
    first = t(1) - x
    for mask, value in ((np.abs(x) == t(0), np.ones_like(x)), (n == 0, np.ones_like(x)), (n == 1, first)):
        m = mask & ~done
        out[m] = value[m]
        done |= m
    _recurrence(out, ~done, x, n, np.ones_like(x), first,
                lambda k, xs, p, q: ((t(k + k) + (t(1) - xs)) * q - t(k) * p) / t(k + 1), 1, lambda ns: ns - 1)
    return out


def _legendre(x, n):
    t = x.dtype.type
    out = np.zeros_like(x)
    done = n < 0
    odd_sign = np.where(n % 2 == 0, t(1), t(-1))
    for mask, value in ((x == t(1), np.ones_like(x)), (x == t(-1), odd_sign), (n == 0, np.ones_like(x)),
                        (n == 1, x)):
        m = mask & ~done
        out[m] = value[m]
        done |= m
    _recurrence(out, ~done, x, n, np.ones_like(x), x,
                lambda k, xs, p, q: (t(k + k + 1) * xs * q - t(k) * p) / t(k + 1), 1, lambda ns: ns - 1)
    return out


def _polynomial(name, kernel):
    def fn(input, n, *, out=None):
        if not isinstance(input, Tensor) and not isinstance(n, Tensor):
            raise TypeError(f"{name}() expected a Tensor for input or n")
        x, _, dt = _binary_operands(input, n)
        xd = np.asanyarray(_operand(x, dt))
        nd = n._ndarray if isinstance(n, Tensor) else np.asanyarray(n)
        try:
            xd, nd = np.broadcast_arrays(xd, _degree(nd, dt))
        except ValueError:
            raise RuntimeError(pointwise._broadcast_message(x, n)) from None
        with quiet_fp():
            result = kernel(np.array(xd, dtype=dt).reshape(-1), np.array(nd).reshape(-1)).reshape(xd.shape)
        return wrap(result.astype(dt, copy=False))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.special.{name}(input, n): torch's recurrence, in the input's dtype; no gradient."
    return fn


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t", _chebyshev("t", False))
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u", _chebyshev("u", False))
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v", _chebyshev("v", False))
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w", _chebyshev("w", False))
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t", _chebyshev("t", True))
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u", _chebyshev("u", True))
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v", _chebyshev("v", True))
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w", _chebyshev("w", True))
hermite_polynomial_h = _polynomial("hermite_polynomial_h", _hermite(True))
hermite_polynomial_he = _polynomial("hermite_polynomial_he", _hermite(False))
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", _laguerre)
legendre_polynomial_p = _polynomial("legendre_polynomial_p", _legendre)

__all__ = module_all(globals())
