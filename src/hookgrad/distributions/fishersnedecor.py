"""The Fisher-Snedecor (F) distribution: a ratio of scaled chi-squared draws."""
from __future__ import annotations

import math

import hookgrad
from . import constraints
from ._where import fill, safe
from .distribution import Distribution
from .gamma import Gamma
from .utils import _batch_shape_of, broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """Fisher-Snedecor (F) distribution with degrees of freedom ``df1`` and ``df2``."""
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(_batch_shape_of((df1, df2), self.df1), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(FisherSnedecor, batch_shape, _instance, ("df1", "df2"))
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self):
        defined = self.df2 > 2
        df2 = safe(defined, self.df2, 3.0)
        return fill(defined, df2 / (df2 - 2), math.nan)

    @property
    def mode(self):
        defined = self.df1 > 2
        df1 = safe(defined, self.df1, 3.0)
        return fill(defined, (df1 - 2) / df1 * self.df2 / (self.df2 + 2), math.nan)

    @property
    def variance(self):
        # as in torch, df2 <= 4 becomes NaN before the formula, so df1's gradient is NaN there too
        df2 = fill(self.df2 > 4, self.df2, math.nan)
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=hookgrad.Size(())):
        shape = tuple(self._extended_shape(sample_shape))
        x1 = self._gamma1.rsample(sample_shape).view(shape)
        x2 = self._gamma2.rsample(sample_shape).view(shape)
        tiny = hookgrad.finfo(x2.dtype).tiny
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        half1, half2 = self.df1 * 0.5, self.df2 * 0.5
        ratio = self.df1 / self.df2
        log_beta_inv = (half1 + half2).lgamma() - half1.lgamma() - half2.lgamma()
        return (log_beta_inv + half1 * ratio.log() + (half1 - 1) * value.log()
                - (half1 + half2) * (ratio * value).log1p())
