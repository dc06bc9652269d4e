"""The geometric distribution: failures before the first success."""
from __future__ import annotations

import hookgrad
from hookgrad.nn.functional import binary_cross_entropy_with_logits
from . import constraints
from .distribution import Distribution
from .utils import _binary_logits_and_probs, _set_probs_or_logits, broadcast_all

__all__ = ["Geometric"]


class Geometric(Distribution):
    """Number of failures before the first success in Bernoulli trials of probability ``probs``."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        _, shape = _set_probs_or_logits(self, probs, logits)
        super().__init__(shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            positive = self.probs > 0
            if not bool(positive.all()):
                value = self.probs
                raise ValueError(f"Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) "
                                 f"of distribution {self!r} to be positive but found invalid values:\n"
                                 f"{value.detach()[~positive]}")

    def expand(self, batch_shape, _instance=None):
        return self._expanded(Geometric, batch_shape, _instance, ("probs", "logits"))

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return hookgrad.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    logits, probs = _binary_logits_and_probs()

    def sample(self, sample_shape=hookgrad.Size()):
        tiny = hookgrad.finfo(self.probs.dtype).tiny
        with hookgrad.no_grad():
            u = hookgrad.empty(tuple(self._extended_shape(sample_shape)), dtype=self.probs.dtype).uniform_(tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # probs == 1 puts all mass on 0: 0 * log(0) must count as 0 there
        probs = hookgrad.where((probs == 1) & (value == 0), hookgrad.zeros_like(probs), probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
