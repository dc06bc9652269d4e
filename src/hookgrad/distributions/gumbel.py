"""The Gumbel (type-I extreme value) distribution, as a transformed uniform."""
from __future__ import annotations

import math
import numbers

import hookgrad
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Gumbel"]


class Gumbel(TransformedDistribution):
    """Gumbel (type-I extreme value) distribution with location ``loc`` and ``scale``."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = hookgrad.finfo(self.loc.dtype)
        if isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number):
            base = Uniform(finfo.tiny, 1 - finfo.eps, validate_args=validate_args)
        else:
            base = Uniform(hookgrad.full_like(self.loc, finfo.tiny), hookgrad.full_like(self.loc, 1 - finfo.eps),
                           validate_args=validate_args)
        # x = loc - scale * log(-log(u))
        steps = [ExpTransform().inv, AffineTransform(loc=0, scale=-hookgrad.ones_like(self.scale)),
                 ExpTransform().inv, AffineTransform(loc=loc, scale=-self.scale)]
        super().__init__(base, steps, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_family(Gumbel, batch_shape, _instance, ("loc", "scale"))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return y - y.exp() - self.scale.log()

    @property
    def mean(self):
        return self.loc + self.scale * euler_constant

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return math.pi / math.sqrt(6) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + euler_constant)
