"""The binomial distribution: successes in ``total_count`` independent trials."""
from __future__ import annotations

import hookgrad
from . import constraints
from ._sampling import binomial
from .distribution import Distribution, _GivenProbsOrLogits
from .utils import _binary_logits_and_probs, _set_count_and_probs_or_logits

__all__ = ["Binomial"]


def _positive_part(x):
    # max(x, 0) with gradient 1/2 at 0, as torch's binomial normalizer has it
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(_GivenProbsOrLogits, Distribution):
    """Number of successes in ``total_count`` Bernoulli trials of probability ``probs`` (or ``logits``)."""
    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        self._param = _set_count_and_probs_or_logits(self, total_count, probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_probs_or_logits(Binomial, batch_shape, _instance, ("total_count",))

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    logits, probs = _binary_logits_and_probs()

    def sample(self, sample_shape=hookgrad.Size()):
        shape = tuple(self._extended_shape(sample_shape))
        with hookgrad.no_grad():
            return binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        log_choose = (n + 1).lgamma() - (value + 1).lgamma() - (n - value + 1).lgamma()
        # n * log(1 + exp(logits)), written stably
        log_norm = n * _positive_part(logits) + n * (-logits.abs()).exp().log1p()
        return value * logits + log_choose - log_norm

    def _homogeneous_count(self, what):
        total = int(self.total_count.max())
        if not bool(self.total_count.min() == total):
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total = self._homogeneous_count("enumerate_support")
        values = hookgrad.arange(1 + total, dtype=self._param.dtype).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values
