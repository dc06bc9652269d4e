"""The generalized Pareto distribution (location, scale, shape ``concentration``)."""
from __future__ import annotations

import math

import hookgrad
from . import constraints
from ._where import fill, safe
from .distribution import Distribution
from .utils import _batch_shape_of, broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """Generalized Pareto distribution with location ``loc``, ``scale`` and shape ``concentration``."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(_batch_shape_of((loc, scale, concentration), self.loc), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(GeneralizedPareto, batch_shape, _instance, ("loc", "scale", "concentration"))

    def _shape_near_zero(self):
        """Where the shape is (close to) zero the exponential limit applies; elsewhere a safe shape."""
        c = self.concentration
        at_zero = hookgrad.isclose(c, hookgrad.zeros_like(c))
        return at_zero, hookgrad.where(at_zero, hookgrad.ones_like(c), c)

    def rsample(self, sample_shape=hookgrad.Size()):
        return self.icdf(hookgrad.rand(tuple(self._extended_shape(sample_shape)), dtype=self.loc.dtype))

    def _z(self, x):
        return (x - self.loc) / self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        at_zero, c = self._shape_near_zero()
        y = 1 / c + hookgrad.ones_like(z)
        general = hookgrad.where(y == 0, y, y * (c * z).log1p())
        return -self.scale.log() - hookgrad.where(at_zero, z, general)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        at_zero, c = self._shape_near_zero()
        return hookgrad.where(at_zero, -z, -(c * z).log1p() / c)

    def log_cdf(self, value):
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value):
        return self.log_cdf(value).exp()

    def icdf(self, value):
        at_zero, c = self._shape_near_zero()
        log_u = (-value).log1p()
        return hookgrad.where(at_zero, self.loc - self.scale * log_u, self.loc + self.scale / c * (-c * log_u).expm1())

    @property
    def mean(self):
        finite = self.concentration < 1
        return fill(finite, self.loc + self.scale / (1 - safe(finite, self.concentration, 0.5)), math.nan)

    @property
    def variance(self):
        finite = self.concentration < 0.5
        c = safe(finite, self.concentration, 0.25)
        return fill(finite, self.scale ** 2 / ((1 - c) ** 2 * (1 - 2 * c)), math.nan)

    def entropy(self):
        return (self.scale.log() + self.concentration + 1).broadcast_to(tuple(self._batch_shape))

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = hookgrad.where(self.concentration < 0, lower - self.scale / self.concentration,
                               hookgrad.full_like(lower, math.inf))
        return constraints.interval(lower, upper)
