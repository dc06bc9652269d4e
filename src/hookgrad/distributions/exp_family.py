"""Exponential families: entropy and KL divergence from the log normalizer by automatic
differentiation (Bregman divergence of the log normalizer)."""
from __future__ import annotations

import hookgrad
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Densities ``p(x; t) = exp(<t, T(x)> - F(t) + k(x))``; subclasses give the natural parameters
    ``t``, the log normalizer ``F`` and the carrier measure ``k``."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        # H = F(t) - <t, grad F(t)> - E[k(x)]
        result = -self._mean_carrier_measure
        params = [p.detach().requires_grad_() for p in self._natural_params]
        with hookgrad.enable_grad():
            log_norm = self._log_normalizer(*params)
            grads = hookgrad.autograd.grad(log_norm.sum(), params, create_graph=True)
        result = result + log_norm
        for param, grad in zip(params, grads):
            result = result - (param * grad).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
