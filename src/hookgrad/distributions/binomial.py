"""The binomial distribution: successes in ``total_count`` independent trials."""
from __future__ import annotations

import math

import numpy as np

import hookgrad
from .distribution import Distribution

__all__ = ["Binomial"]


class Binomial(Distribution):
    arg_constraints = {"total_count": "nonnegative_integer", "probs": "unit_interval", "logits": "real"}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        param = probs if probs is not None else logits
        if not isinstance(total_count, hookgrad.Tensor):
            total_count = hookgrad.tensor(float(total_count), dtype=param.dtype)
        total_count, param = hookgrad.broadcast_tensors(total_count.to(param.dtype), param)
        self.total_count = total_count
        if probs is not None:
            self.probs = param
            eps = hookgrad.finfo(param.dtype).eps
            clamped = param.clamp(min=eps, max=1 - eps)
            self.logits = clamped.log() - (-clamped).log1p()
        else:
            self.logits = param
            self.probs = param.sigmoid()
        super().__init__(param.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        counts = np.broadcast_to(self.total_count.detach().numpy(), shape)
        probs = np.broadcast_to(self.probs.detach().numpy(), shape)
        seed = int(hookgrad.randint(0, 2 ** 31 - 1, (1,)).item())  # draws follow hookgrad's generator
        draws = np.random.default_rng(seed).binomial(counts.astype(np.int64), probs)
        return hookgrad.tensor(draws.astype(probs.dtype))

    def log_prob(self, value):
        n, logits = self.total_count, self.logits
        # log C(n, k) + k*logit - n*log(1 + exp(logit)), with a stable softplus
        log_norm = n * (logits.clamp(min=0) + (-logits.abs()).exp().log1p())
        lgamma = hookgrad.special.gammaln if hasattr(hookgrad, "special") else None
        if lgamma is None:
            comb = hookgrad.tensor(np.vectorize(lambda a, b: math.lgamma(a + 1) - math.lgamma(b + 1)
                                                - math.lgamma(a - b + 1))(n.detach().numpy(),
                                                                          np.asarray(value.detach().numpy())),
                                   dtype=logits.dtype)
        else:
            comb = lgamma(n + 1) - lgamma(value + 1) - lgamma(n - value + 1)
        return comb + value * logits - log_norm

    def entropy(self):
        total = int(self.total_count.max())
        if not bool((self.total_count == total).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        support = self.enumerate_support(False)
        log_prob = self.log_prob(support)
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True):
        total = int(self.total_count.max())
        values = hookgrad.arange(1 + total, dtype=self.probs.dtype).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values
