"""Relaxed (Concrete / Gumbel-softmax) Bernoulli distributions: a temperature-controlled continuous
stand-in for Bernoulli draws, with reparameterized samples."""
from __future__ import annotations

import hookgrad
from . import constraints
from .distribution import Distribution, _GivenProbsOrLogits
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import _attribute_of, _binary_logits_and_probs, _set_probs_or_logits, broadcast_all, clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(_GivenProbsOrLogits, Distribution):
    """The logit of a relaxed Bernoulli draw (on the real line)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        self._param, shape = _set_probs_or_logits(self, probs, logits)
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_probs_or_logits(LogitRelaxedBernoulli, batch_shape, _instance)
        new.temperature = self.temperature
        return new

    logits, probs = _binary_logits_and_probs()

    def rsample(self, sample_shape=hookgrad.Size()):
        shape = tuple(self._extended_shape(sample_shape))
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(hookgrad.rand(shape, dtype=probs.dtype))
        # logistic noise plus the logit, sharpened by the temperature
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class _RelaxedByTransform:
    """For a relaxed distribution made by transforming a relaxed base (``base_dist``): temperature,
    logits and probs are the base's. Listed before ``TransformedDistribution``."""

    temperature = _attribute_of("base_dist", "temperature")
    logits = _attribute_of("base_dist", "logits")
    probs = _attribute_of("base_dist", "probs")


class RelaxedBernoulli(_RelaxedByTransform, TransformedDistribution):
    """Relaxed (concrete) Bernoulli on (0, 1) at temperature ``temperature``: reparameterisable."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_family(RelaxedBernoulli, batch_shape, _instance)
