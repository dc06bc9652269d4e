"""The Laplace (double exponential) distribution."""
from __future__ import annotations

import hookgrad
from . import constraints
from .distribution import Distribution, _CentredAtLoc, _LocScaleParameters

__all__ = ["Laplace"]


class Laplace(_CentredAtLoc, _LocScaleParameters, Distribution):
    """Laplace (double exponential) distribution with location ``loc`` and ``scale``."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return 2 ** 0.5 * self.scale

    def rsample(self, sample_shape=hookgrad.Size()):
        eps = hookgrad.finfo(self.loc.dtype).eps
        u = hookgrad.empty(tuple(self._extended_shape(sample_shape)), dtype=self.loc.dtype).uniform_(eps - 1, 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        return 0.5 - 0.5 * diff.sign() * (-diff.abs() / self.scale).expm1()

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self):
        return 1 + (2 * self.scale).log()
