"""The categorical distribution over ``{0, ..., K-1}``, given probabilities or logits."""
from __future__ import annotations

import math

import hookgrad
from . import constraints
from .distribution import Distribution, _GivenProbsOrLogits
from .utils import _attribute_of, _check_probs_or_logits, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


class Categorical(_GivenProbsOrLogits, Distribution):
    """``probs`` need not sum to one (they are normalized); ``logits`` are normalized to
    log-probabilities. The last dimension indexes the categories."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _check_probs_or_logits(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else hookgrad.Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_probs_or_logits(Categorical, batch_shape, _instance, param_event_dims=1)
        new._num_events = self._num_events
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def mean(self):
        return hookgrad.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        return hookgrad.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape=hookgrad.Size()):
        sample_shape = hookgrad.Size(sample_shape)
        flat = self.probs.detach().reshape(-1, self._num_events)
        draws = hookgrad.multinomial(flat, sample_shape.numel(), True).T
        return draws.reshape(tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = hookgrad.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=hookgrad.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = hookgrad.arange(self._num_events, dtype=hookgrad.long).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class _OnCategorical:
    """For a distribution built on a ``Categorical`` it holds as ``_categorical``: the parameters
    are that one's. Listed before the distribution base class."""

    def _new(self, *args, **kwargs):
        return self._categorical._new(*args, **kwargs)

    param_shape = _attribute_of("_categorical", "param_shape")
    logits = _attribute_of("_categorical", "logits")
    probs = _attribute_of("_categorical", "probs")
