"""The categorical distribution over ``{0, ..., K-1}``, given probabilities or logits."""
from __future__ import annotations

import numpy as np

import hookgrad
from .distribution import Distribution

__all__ = ["Categorical"]


class Categorical(Distribution):
    arg_constraints = {"probs": "simplex", "logits": "real_vector"}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            self.logits = self.probs.clamp(min=hookgrad.finfo(probs.dtype).tiny).log()
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            self.probs = self.logits.softmax(-1)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size(-1)
        super().__init__(self._param.shape[:-1], validate_args=validate_args)

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return hookgrad.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return hookgrad.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    def sample(self, sample_shape=()):
        sample_shape = tuple(sample_shape)
        count = int(np.prod(sample_shape)) if sample_shape else 1
        flat = self.probs.detach().reshape(-1, self._num_events)
        draws = hookgrad.multinomial(flat, count, True).T  # count x batch
        return draws.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        value = value.long().unsqueeze(-1)
        value, log_pmf = hookgrad.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        min_real = hookgrad.finfo(self.logits.dtype).min
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True):
        values = hookgrad.arange(self._num_events, dtype=hookgrad.long)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values
