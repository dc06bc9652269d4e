"""The LKJ distribution over Cholesky factors of correlation matrices (onion-method sampling)."""
from __future__ import annotations

import math

import hookgrad
from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import _diagonal, broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJ distribution over Cholesky factors of correlation matrices of size ``dim``, with ``concentration``."""
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # row i of the factor has squared off-diagonal norm ~ Beta(i/2, concentration + (dim - 2 - i)/2)
        marginal = self.concentration + 0.5 * (self.dim - 2)
        offset = hookgrad.arange(self.dim - 1, dtype=self.concentration.dtype)
        offset = hookgrad.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.size(), hookgrad.Size((dim, dim)), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = hookgrad.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        return self._finish_expanded(new, batch_shape)

    def sample(self, sample_shape=hookgrad.Size()):
        y = self._beta.sample(sample_shape).unsqueeze(-1)
        normal = hookgrad.randn(tuple(self._extended_shape(sample_shape)), dtype=y.dtype).tril(-1)
        norms = normal.norm(dim=-1, keepdim=True)
        # the first row has no off-diagonal part (its norm is 0); keep it at zero instead of 0/0
        direction = normal / hookgrad.where(norms > 0, norms, hookgrad.ones_like(norms))
        w = y.sqrt() * direction
        diagonal = (1 - (w ** 2).sum(dim=-1)).clamp(min=hookgrad.finfo(w.dtype).tiny).sqrt()
        return w + hookgrad.diag_embed(diagonal)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diagonal = _diagonal(value)[..., 1:]
        order = hookgrad.arange(2, self.dim + 1)
        powers = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (powers * diagonal.log()).sum(dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalizer = 0.5 * dm1 * math.log(math.pi) + hookgrad.mvlgamma(alpha - 0.5, dm1) - alpha.lgamma() * dm1
        return unnormalized - normalizer
