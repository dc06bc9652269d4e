"""The categorical distribution with one-hot encoded draws, and its straight-through variant."""
from __future__ import annotations

import hookgrad
from hookgrad.nn.functional import one_hot
from . import constraints
from .categorical import Categorical, _OnCategorical
from .distribution import Distribution
from .utils import _attribute_of

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


class OneHotCategorical(_OnCategorical, Distribution):
    """Categorical distribution whose samples are one-hot vectors."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(OneHotCategorical, batch_shape, _instance, ("_categorical",))

    _param = _attribute_of("_categorical", "_param")
    mean = _attribute_of("_categorical", "probs")

    @property
    def mode(self):
        probs = self._categorical.probs
        return one_hot(probs.argmax(dim=-1), num_classes=probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self):
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape=hookgrad.Size()):
        indices = self._categorical.sample(hookgrad.Size(sample_shape))
        return one_hot(indices, self._categorical._num_events).to(self._categorical.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = hookgrad.eye(n, dtype=self._param.dtype).view((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + tuple(self.batch_shape) + (n,)) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """One-hot draws whose gradient is that of the probabilities (straight-through estimator)."""

    has_rsample = True

    def rsample(self, sample_shape=hookgrad.Size()):
        draws = self.sample(sample_shape)
        probs = self._categorical.probs
        return draws + (probs - probs.detach())
