"""Relaxed one-hot categorical distributions (Concrete / Gumbel-softmax), in log space and on the
simplex."""
from __future__ import annotations

import hookgrad
from . import constraints
from .categorical import Categorical, _OnCategorical
from .distribution import Distribution
from .relaxed_bernoulli import _RelaxedByTransform
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(_OnCategorical, Distribution):
    """The log of a relaxed one-hot categorical draw."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(ExpRelaxedCategorical, batch_shape, _instance, ("_categorical",))
        new.temperature = self.temperature
        return new

    def rsample(self, sample_shape=hookgrad.Size()):
        u = clamp_probs(hookgrad.rand(tuple(self._extended_shape(sample_shape)), dtype=self.logits.dtype))
        gumbels = -(-u.log()).log()
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_scale = hookgrad.full_like(self.temperature, float(k)).lgamma() - self.temperature.log().mul(-(k - 1))
        score = logits - value.mul(self.temperature)
        return (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1) + log_scale


class RelaxedOneHotCategorical(_RelaxedByTransform, TransformedDistribution):
    """Relaxed one-hot categorical (Gumbel-softmax) on the simplex at temperature ``temperature``."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded_family(RelaxedOneHotCategorical, batch_shape, _instance)
