"""The normal (Gaussian) distribution."""
from __future__ import annotations

import math
import numbers

import hookgrad
from .distribution import Distribution

__all__ = ["Normal"]


class Normal(Distribution):
    arg_constraints = {"loc": "real", "scale": "positive"}
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        if isinstance(loc, numbers.Number) and isinstance(scale, numbers.Number):
            shape = ()
            loc, scale = hookgrad.tensor(float(loc)), hookgrad.tensor(float(scale))
        else:
            loc = loc if isinstance(loc, hookgrad.Tensor) else hookgrad.tensor(loc, dtype=scale.dtype)
            scale = scale if isinstance(scale, hookgrad.Tensor) else hookgrad.tensor(scale, dtype=loc.dtype)
            loc, scale = hookgrad.broadcast_tensors(loc, scale)
            shape = loc.shape
        if (validate_args if validate_args is not None else self._validate_args) and not bool((scale > 0).all()):
            raise ValueError(f"Expected parameter scale of distribution {type(self).__name__} to satisfy the "
                             f"constraint GreaterThan(lower_bound=0.0), but found invalid values:\n{scale}")
        self.loc, self.scale = loc, scale
        super().__init__(shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = hookgrad.randn(*shape, dtype=self.loc.dtype) if len(shape) else hookgrad.randn((), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def sample(self, sample_shape=()):
        with hookgrad.no_grad():
            return self.rsample(sample_shape)

    def log_prob(self, value):
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        return 0.5 * (1 + hookgrad.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * hookgrad.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()
