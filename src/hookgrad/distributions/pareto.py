"""The Pareto (type I) distribution: scale * exp(X) for X ~ Exponential(alpha)."""
from __future__ import annotations

import math

from . import constraints
from ._where import fill, safe
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .utils import broadcast_all

__all__ = ["Pareto"]


class Pareto(TransformedDistribution):
    """Pareto type-I distribution with minimum ``scale`` and tail index ``alpha``."""
    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        super().__init__(Exponential(self.alpha, validate_args=validate_args),
                         [ExpTransform(), AffineTransform(loc=0, scale=self.scale)], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_family(Pareto, batch_shape, _instance, ("scale", "alpha"))

    @property
    def mean(self):
        # infinite for alpha <= 1; the stand-in alpha keeps the gradient there 0 (not NaN)
        finite = self.alpha > 1
        a = safe(finite, self.alpha, 2.0)
        return fill(finite, a * self.scale / (a - 1), math.inf)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        finite = self.alpha > 2  # infinite for alpha <= 2
        a = safe(finite, self.alpha, 3.0)
        return fill(finite, self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2)), math.inf)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())
