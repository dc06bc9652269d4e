"""Gamma, Dirichlet, Poisson and binomial draws for the distributions, made by torch's CPU samplers on
hookgrad's generator (the same numbers as torch after the same seed). The gamma draw carries the
implicit reparameterization gradient d x / d alpha = -(dF/d alpha) / p(x) (F the gamma CDF)."""
from __future__ import annotations

import numpy as np
from scipy import special as sc

import hookgrad

__all__ = ["standard_gamma", "dirichlet", "poisson", "binomial"]


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
        result = _as_dtype(_gamma_draws(alpha), alpha)
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
    return _as_dtype(_gamma_draws(alpha), alpha)


def _gamma_draws(alpha):
    from .._ops import rng
    from .._ops.creation import default_generator
    return rng.standard_gamma(default_generator, np.ascontiguousarray(alpha.detach().numpy()))


class _Dirichlet(hookgrad.autograd.Function):
    @staticmethod
    def forward(ctx, concentration):
        from .._ops import rng
        from .._ops.creation import default_generator
        c = np.ascontiguousarray(concentration.detach().numpy())
        gammas, sample = rng.dirichlet(default_generator, c, with_gammas=True)
        ctx.gammas = gammas
        result = _as_dtype(sample, concentration)
        ctx.save_for_backward(concentration, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        # x = g / sum(g) with each g_j ~ Gamma(alpha_j): dL/dalpha_j = (dL/dx_j - sum_i dL/dx_i x_i) dg_j / sum(g)
        concentration, result = ctx.saved_tensors
        g = ctx.gammas
        x = result.detach().numpy().astype(np.float64)
        upstream = grad.detach().numpy().astype(np.float64)
        d_gamma = _gamma_draw_grad(concentration.detach().numpy().astype(np.float64), g)
        total = g.sum(-1, keepdims=True)
        grad_alpha = (upstream - (upstream * x).sum(-1, keepdims=True)) * d_gamma / total
        return _as_dtype(grad_alpha, concentration)


def dirichlet(concentration):
    """One Dirichlet draw per row of ``concentration`` (torch's ``_sample_dirichlet``), differentiable."""
    if concentration.requires_grad and hookgrad.is_grad_enabled():
        return _Dirichlet.apply(concentration)
    from .._ops import rng
    from .._ops.creation import default_generator
    return _as_dtype(rng.dirichlet(default_generator, np.ascontiguousarray(concentration.detach().numpy())),
                     concentration)


def poisson(rate):
    """One Poisson draw per element of ``rate`` (no gradient), in ``rate``'s dtype: ``torch.poisson``."""
    return hookgrad.poisson(rate.detach())


def binomial(count, probs):
    """One binomial draw per element of ``count``/``probs`` (broadcast, no gradient): ``torch.binomial``."""
    return hookgrad.binomial(count.detach().to(probs.dtype), probs.detach())
