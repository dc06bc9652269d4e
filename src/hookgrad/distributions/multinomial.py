"""The multinomial distribution: category counts of ``total_count`` categorical draws."""
from __future__ import annotations

import math

import hookgrad
from . import constraints
from .binomial import Binomial
from .categorical import Categorical, _OnCategorical
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(_OnCategorical, Distribution):
    """Counts of ``total_count`` draws over categories of probabilities ``probs`` (or ``logits``)."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded(Multinomial, batch_shape, _instance, ("_categorical",))
        new.total_count = self.total_count
        new._binomial = self._binomial.expand(new.batch_shape + self.event_shape)
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=hookgrad.Size()):
        sample_shape = hookgrad.Size(sample_shape)
        draws = self._categorical.sample(hookgrad.Size((self.total_count,)) + sample_shape)
        draws = draws.permute(*range(1, draws.dim()), 0)  # trials last
        counts = hookgrad.zeros(tuple(self._extended_shape(sample_shape)), dtype=draws.dtype)
        counts = counts.scatter_add(-1, draws, hookgrad.ones_like(draws))
        return counts.type_as(self.probs)

    def entropy(self):
        n = hookgrad.tensor(self.total_count)
        first = n * self._categorical.entropy() - (n + 1).lgamma()
        counts = self._binomial.enumerate_support(expand=False)[1:]
        weights = self._binomial.log_prob(counts).exp() * (counts + 1).lgamma()
        return first + weights.sum([0, -1])

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # 0 * log(0) counts as 0 where a category has zero probability and zero count
        logits = hookgrad.where((value == 0) & (logits == -math.inf), hookgrad.zeros_like(logits), logits)
        return (value.sum(-1) + 1).lgamma() - (value + 1).lgamma().sum(-1) + (logits * value).sum(-1)
