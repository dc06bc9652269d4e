"""The half-Cauchy distribution: |X| for X ~ Cauchy(0, scale)."""
from __future__ import annotations

import math

import hookgrad
from ._half import _HalfDistribution
from .cauchy import Cauchy

__all__ = ["HalfCauchy"]


class HalfCauchy(_HalfDistribution):
    """Absolute value of a Cauchy variable centred at zero with the given ``scale``."""
    _symmetric_family = Cauchy

    @property
    def mean(self):
        return hookgrad.full(tuple(self._extended_shape()), math.inf, dtype=self.scale.dtype)

    @property
    def variance(self):
        return self.base_dist.variance

    def _value_tensor(self, value):
        # log_prob takes a plain number here (in the scale's dtype), as torch's HalfCauchy does
        return hookgrad.as_tensor(value, dtype=self.base_dist.scale.dtype)
