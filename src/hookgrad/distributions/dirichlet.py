"""The Dirichlet distribution over the probability simplex."""
from __future__ import annotations

import hookgrad
from . import constraints
from ._sampling import dirichlet
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution over the probability simplex with the given ``concentration`` vector."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Dirichlet, batch_shape, _instance, ("concentration",), param_event_dims=1)

    def rsample(self, sample_shape=()):
        # normalized gamma draws; the gamma draws' implicit gradient makes this reparameterized
        return dirichlet(self.concentration.expand(tuple(self._extended_shape(sample_shape))))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return hookgrad.xlogy(c - 1.0, value).sum(-1) + c.sum(-1).lgamma() - c.lgamma().sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        shifted = (self.concentration - 1).clamp(min=0.0)
        # every concentration below one: the density peaks at a vertex, and the interior formula is
        # 0/0 there; dividing by 1 instead keeps NaN out of the gradient
        all_below = (self.concentration < 1).all(dim=-1, keepdim=True)
        total = shifted.sum(-1, True)
        mode = shifted / hookgrad.where(all_below, hookgrad.ones_like(total), total)
        # torch takes the argmax of the 0/0 (NaN) row, which is its first entry
        vertex = hookgrad.nn.functional.one_hot(hookgrad.zeros_like(mode[..., 0], dtype=hookgrad.long),
                                                shifted.shape[-1]).to(mode.dtype)
        return hookgrad.where(all_below, vertex, mode)

    @property
    def variance(self):
        total = self.concentration.sum(-1, True)
        return self.concentration * (total - self.concentration) / (total.pow(2) * (total + 1))

    def entropy(self):
        c = self.concentration
        k = c.size(-1)
        total = c.sum(-1)
        return c.lgamma().sum(-1) - total.lgamma() - (k - total) * total.digamma() - ((c - 1.0) * c.digamma()).sum(-1)

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - x.sum(-1).lgamma()
