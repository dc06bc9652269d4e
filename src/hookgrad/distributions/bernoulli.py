"""The Bernoulli distribution over {0, 1}."""
from __future__ import annotations

import hookgrad
from hookgrad.nn.functional import binary_cross_entropy_with_logits
from . import constraints
from .distribution import _GivenProbsOrLogits
from .exp_family import ExponentialFamily
from .utils import _binary_logits_and_probs, _set_probs_or_logits, broadcast_all

__all__ = ["Bernoulli"]


class Bernoulli(_GivenProbsOrLogits, ExponentialFamily):
    """Bernoulli distribution: 1 with probability ``probs`` (or ``sigmoid(logits)``), else 0."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._param, shape = _set_probs_or_logits(self, probs, logits)
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_probs_or_logits(Bernoulli, batch_shape, _instance)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        probs = self.probs
        return hookgrad.where(probs == 0.5, hookgrad.full_like(probs, float("nan")), (probs >= 0.5).to(probs.dtype))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    logits, probs = _binary_logits_and_probs()

    def sample(self, sample_shape=hookgrad.Size()):
        with hookgrad.no_grad():
            return hookgrad.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        values = hookgrad.arange(2, dtype=self._param.dtype).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values

    @property
    def _natural_params(self):
        return (hookgrad.logit(self.probs),)

    def _log_normalizer(self, x):
        return x.exp().log1p()
