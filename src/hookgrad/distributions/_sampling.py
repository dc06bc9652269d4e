"""Draws that hookgrad has no op for (gamma, Poisson, binomial), made with NumPy's generator seeded
from hookgrad's, so that ``hookgrad.manual_seed`` makes them reproducible. The gamma draw carries
the implicit reparameterization gradient d x / d alpha = -(dF/d alpha) / p(x) (F the gamma CDF)."""
from __future__ import annotations

import numpy as np
from scipy import special as sc

import hookgrad

__all__ = ["numpy_generator", "standard_gamma", "poisson", "binomial"]


def numpy_generator():
    """A NumPy generator whose seed is drawn from hookgrad's default generator."""
    return np.random.default_rng(int(hookgrad.randint(0, 2 ** 62, ()).item()))


def _as_dtype(array, like):
    return hookgrad.from_numpy(np.ascontiguousarray(array)).to(like.dtype)


def _gamma_draw_grad(alpha, x):
    """d x / d alpha for x ~ Gamma(alpha, 1), by implicit differentiation of the CDF."""
    step = 1e-5 * np.maximum(alpha, 1e-3)
    d_cdf = (sc.gammainc(alpha + step, x) - sc.gammainc(np.maximum(alpha - step, 0.5 * alpha), x))
    d_cdf /= alpha + step - np.maximum(alpha - step, 0.5 * alpha)
    log_density = (alpha - 1) * np.log(x) - x - sc.gammaln(alpha)
    with np.errstate(over="ignore", invalid="ignore"):
        grad = -d_cdf * np.exp(-log_density)
    return np.nan_to_num(grad, nan=0.0, posinf=0.0, neginf=0.0)


class _StandardGamma(hookgrad.autograd.Function):
    @staticmethod
    def forward(ctx, alpha):
        a = alpha.detach().numpy().astype(np.float64)
        tiny = np.finfo(alpha.detach().numpy().dtype).tiny
        draws = np.maximum(numpy_generator().standard_gamma(a), tiny)
        result = _as_dtype(draws, alpha)
        ctx.save_for_backward(alpha, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        alpha, result = ctx.saved_tensors
        a = alpha.detach().numpy().astype(np.float64)
        x = result.detach().numpy().astype(np.float64)
        return grad * _as_dtype(_gamma_draw_grad(a, x), alpha)


def standard_gamma(alpha):
    """One Gamma(alpha, 1) draw per element of ``alpha``, differentiable in ``alpha``."""
    if alpha.requires_grad and hookgrad.is_grad_enabled():
        return _StandardGamma.apply(alpha)
    a = alpha.detach().numpy().astype(np.float64)
    tiny = np.finfo(alpha.detach().numpy().dtype).tiny
    return _as_dtype(np.maximum(numpy_generator().standard_gamma(a), tiny), alpha)


def poisson(rate):
    """One Poisson draw per element of ``rate`` (no gradient), in ``rate``'s dtype."""
    lam = rate.detach().numpy().astype(np.float64)
    return _as_dtype(numpy_generator().poisson(lam).astype(np.float64), rate)


def binomial(count, probs):
    """One binomial draw per element of ``count``/``probs`` (broadcast, no gradient)."""
    n, p = np.broadcast_arrays(count.detach().numpy().astype(np.float64), probs.detach().numpy().astype(np.float64))
    draws = numpy_generator().binomial(n.astype(np.int64), np.clip(p, 0.0, 1.0))
    return _as_dtype(draws.astype(np.float64), probs)
