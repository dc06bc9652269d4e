"""The Kumaraswamy distribution on [0, 1] (a beta-like law with a closed-form CDF)."""
from __future__ import annotations

import math

import hookgrad
from . import constraints
from ._where import fill
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _raw_moment(a, b, n):
    """E[X^n] = b * B(1 + n/a, b)."""
    shifted = 1 + n / a
    return b * (shifted.lgamma() + b.lgamma() - (shifted + b).lgamma()).exp()


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy distribution on (0, 1) with shapes ``concentration1`` and ``concentration0``."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(hookgrad.full_like(self.concentration0, 0), hookgrad.full_like(self.concentration0, 1),
                       validate_args=validate_args)
        # x = (1 - u ** (1/b)) ** (1/a)
        steps = [PowerTransform(exponent=self.concentration0.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
                 PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base, steps, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_family(Kumaraswamy, batch_shape, _instance, ("concentration1", "concentration0"))

    @property
    def mean(self):
        return _raw_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        return fill(~((b < 1) | (a < 1)), log_mode, math.nan).exp()

    @property
    def variance(self):
        return _raw_moment(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic = (b + 1).digamma() + euler_constant
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic - a.log() - b.log()
