"""``hookgrad.special``: torch.special's functions (error functions, gamma family, Bessel functions,
orthogonal polynomials, ...). The kernels and gradients live in ``_ops/special.py``; the names torch
shares with ``torch.*`` are the same functions."""
from ._ops import reduce as _reduce
from ._tensor import Tensor  # torch.special.Tensor is torch.Tensor
from ._ops.pointwise import exp2, expm1, log1p, round, sigmoid as expit
from ._ops.special import (airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1, chebyshev_polynomial_t,
                           chebyshev_polynomial_u, chebyshev_polynomial_v, chebyshev_polynomial_w, digamma, entr,
                           erf, erfc, erfcx, erfinv, hermite_polynomial_h, hermite_polynomial_he, i0, i0e, i1, i1e,
                           igamma as gammainc, igammac as gammaincc, laguerre_polynomial_l, legendre_polynomial_p,
                           lgamma as gammaln, log_ndtr, logit, modified_bessel_i0, modified_bessel_i1,
                           modified_bessel_k0, modified_bessel_k1, mvlgamma, ndtr, ndtri, polygamma,
                           scaled_modified_bessel_k0, scaled_modified_bessel_k1, shifted_chebyshev_polynomial_t,
                           shifted_chebyshev_polynomial_u, shifted_chebyshev_polynomial_v,
                           shifted_chebyshev_polynomial_w, sinc, spherical_bessel_j0, xlog1py, xlogy, zeta)

psi = digamma


def _with_out(fn, name: str):
    """``fn(input, other)`` taking torch's ``out=`` (these binary functions check their operands themselves,
    so they are not guarded with the others below)."""
    def binary(input, other, *, out=None):
        if out is None:
            return fn(input, other)
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            raise TypeError(f"special_{name}() received an invalid combination of arguments - got "
                            f"({type(input).__name__}, {type(other).__name__}, out=Tensor)")
        from ._out import call_with_out
        return call_with_out(fn, name, (input, other), {"out": out})
    binary.__name__ = binary.__qualname__ = name
    return binary


xlogy, xlog1py, zeta = _with_out(xlogy, "xlogy"), _with_out(xlog1py, "xlog1py"), _with_out(zeta, "zeta")


def multigammaln(input, p, *, out=None):
    """log of the multivariate gamma function of dimension ``p`` (torch.mvlgamma)."""
    if out is None:
        return mvlgamma(input, p)
    from ._out import call_with_out
    return call_with_out(mvlgamma, "multigammaln", (input, p), {"out": out})


def softmax(input, dim, *, dtype=None):
    return _reduce.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return _reduce.log_softmax(input, dim, dtype=dtype)


def logsumexp(input, dim, keepdim=False):
    return _reduce.logsumexp(input, dim, keepdim)


__all__ = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
           "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf",
           "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln",
           "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l",
           "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "sinc", "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta"]

from . import _argcheck  # noqa: E402

# torch's TypeError for a non-tensor argument, as for the torch.* functions (see _argcheck); the
# binary functions and the polynomials take a number for either operand and check for themselves
_argcheck.guard_namespace(globals(), [n for n in __all__ if not n.endswith(("_polynomial_t", "_polynomial_u",
                                      "_polynomial_v", "_polynomial_w", "_polynomial_h", "_polynomial_he",
                                      "_polynomial_l", "_polynomial_p")) and n not in ("xlogy", "xlog1py", "zeta")])

# torch.special's functions are built-ins: they take NumPy's axis=/keepdims= for dim=/keepdim=
_argcheck.accept_numpy_names(globals(), __all__)

from ._C import _torch_function as _tf  # noqa: E402

_tf.install_namespace(globals(), __all__)  # each function consults __torch_function__ overrides and modes
