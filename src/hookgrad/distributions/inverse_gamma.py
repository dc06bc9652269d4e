"""The inverse-gamma distribution: 1 / X for X ~ Gamma(concentration, rate)."""
from __future__ import annotations

import math

from . import constraints
from ._where import fill, safe
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform
from .utils import _attribute_of

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """Distribution of 1/X for X Gamma-distributed with shape ``concentration`` and ``rate``."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        super().__init__(base, PowerTransform(-base.rate.new_ones(())), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_family(InverseGamma, batch_shape, _instance)

    concentration = _attribute_of("base_dist", "concentration")
    rate = _attribute_of("base_dist", "rate")

    @property
    def mean(self):
        finite = self.concentration > 1
        return fill(finite, self.rate / (safe(finite, self.concentration, 2.0) - 1), math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        finite = self.concentration > 2
        c = safe(finite, self.concentration, 3.0)
        return fill(finite, self.rate.square() / ((c - 1).square() * (c - 2)), math.inf)

    def entropy(self):
        c = self.concentration
        return c + self.rate.log() + c.lgamma() - (1 + c) * c.digamma()
