"""The negative binomial distribution: successes before ``total_count`` failures."""
from __future__ import annotations

import hookgrad
from hookgrad.nn.functional import logsigmoid
from . import constraints
from ._sampling import poisson
from .distribution import Distribution, _GivenProbsOrLogits
from .gamma import Gamma
from .utils import _binary_logits_and_probs, _set_count_and_probs_or_logits, lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(_GivenProbsOrLogits, Distribution):
    """Number of successes before ``total_count`` failures, each trial succeeding with ``probs``."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        self._param = _set_count_and_probs_or_logits(self, total_count, probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_probs_or_logits(NegativeBinomial, batch_shape, _instance, ("total_count",))

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()

    logits, probs = _binary_logits_and_probs()

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=(-self.logits).exp(), validate_args=False)

    def sample(self, sample_shape=hookgrad.Size()):
        with hookgrad.no_grad():
            return poisson(self._gamma.sample(sample_shape=sample_shape))  # a gamma-Poisson mixture

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_unnormalized = n * logsigmoid(-self.logits) + value * logsigmoid(self.logits)
        log_normalization = -(n + value).lgamma() + (1.0 + value).lgamma() + n.lgamma()
        log_normalization = log_normalization.masked_fill(n + value == 0.0, 0.0)
        return log_unnormalized - log_normalization
