"""What the half-Cauchy and half-normal distributions share: |X| for X drawn from a family that is
symmetric about zero, with scale ``scale``."""
from __future__ import annotations

import math

import hookgrad
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform
from .utils import _attribute_of


class _HalfDistribution(TransformedDistribution):
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _symmetric_family = None  # the distribution class folded at zero, taking (loc, scale)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if _HalfDistribution in cls.__bases__:
            cls._family = cls  # what ``expand`` builds, and what a subclass with its own __init__ must redo it for

    def __init__(self, scale, validate_args=None):
        base = self._symmetric_family(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_family(self._family, batch_shape, _instance)

    scale = _attribute_of("base_dist", "scale")

    @property
    def mode(self):
        return hookgrad.zeros_like(self.scale)

    def _value_tensor(self, value):
        return value

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = self._value_tensor(value)
        # both halves of the symmetric density land on the non-negative half
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return hookgrad.where(value >= 0, log_prob, hookgrad.full_like(log_prob, -math.inf))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
