"""The Cauchy (Lorentz) distribution."""
from __future__ import annotations

import math

import hookgrad
from . import constraints
from .distribution import Distribution, _LocScaleParameters

__all__ = ["Cauchy"]


class Cauchy(_LocScaleParameters, Distribution):
    """Cauchy (Lorentz) distribution with location ``loc`` and half-width ``scale``."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return hookgrad.full(tuple(self._extended_shape()), float("nan"), dtype=self.loc.dtype)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return hookgrad.full(tuple(self._extended_shape()), float("inf"), dtype=self.loc.dtype)

    def rsample(self, sample_shape=hookgrad.Size()):
        eps = hookgrad.empty(tuple(self._extended_shape(sample_shape)), dtype=self.loc.dtype).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value):
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
