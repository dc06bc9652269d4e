"""The multivariate normal distribution, parameterized by a covariance matrix, a precision matrix
or a lower-triangular scale factor."""
from __future__ import annotations

import math

import hookgrad
from . import constraints
from .distribution import Distribution, _CentredAtLoc
from .utils import _diagonal, _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat, bvec):
    """Matrix-vector products over broadcast batch dimensions."""
    return hookgrad.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """Squared Mahalanobis distance ``x^T (L L^T)^-1 x`` for a batch of lower factors ``L``."""
    n = bx.size(-1)
    batch = hookgrad.broadcast_shapes(tuple(bx.shape[:-1]), tuple(bL.shape[:-2]))
    L = bL.expand(tuple(batch) + (n, n))
    x = bx.expand(tuple(batch) + (n,)).unsqueeze(-1)
    solved = hookgrad.linalg.solve_triangular(L, x, upper=False).squeeze(-1)
    return solved.pow(2).sum(-1)  # shape: the broadcast of x's and L's batch shapes


def _precision_to_scale_tril(P):
    """A lower factor ``L`` with ``L L^T = P^-1``, found without inverting ``P`` explicitly."""
    flipped = hookgrad.linalg.cholesky(hookgrad.flip(P, (-2, -1)))
    L_inv = hookgrad.flip(flipped, (-2, -1)).transpose(-2, -1)
    identity = hookgrad.eye(P.shape[-1], dtype=P.dtype)
    return hookgrad.linalg.solve_triangular(L_inv, identity, upper=False)


def _lower_factor(scale_tril, covariance_matrix, precision_matrix):
    """The lower Cholesky factor of the covariance, from whichever of the three was given."""
    if scale_tril is not None:
        return scale_tril
    if covariance_matrix is not None:
        return hookgrad.linalg.cholesky(covariance_matrix)
    return _precision_to_scale_tril(precision_matrix)


class _FromScaleTril:
    """For a distribution that keeps its (batch of) matrices as their lower Cholesky factor
    ``_unbroadcasted_scale_tril``: ``scale_tril`` and ``covariance_matrix`` are computed from it when
    first asked for, expanded to ``_matrix_shape()``. Listed before the distribution base class."""

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return hookgrad.matmul(L, L.mT).expand(self._matrix_shape())


class MultivariateNormal(_CentredAtLoc, _FromScaleTril, Distribution):
    """Multivariate normal with mean ``loc`` and a covariance, precision or scale_tril matrix."""
    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        for name, matrix in (("scale_tril matrix", scale_tril), ("covariance_matrix", covariance_matrix),
                             ("precision_matrix", precision_matrix)):
            if matrix is not None:
                if matrix.dim() < 2:
                    raise ValueError(f"{name} must be at least two-dimensional, with optional leading batch "
                                     "dimensions")
                batch_shape = hookgrad.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
                setattr(self, name.split(" ")[0], matrix.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        self._unbroadcasted_scale_tril = _lower_factor(scale_tril, covariance_matrix, precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = hookgrad.Size(batch_shape)
        matrix_shape = tuple(batch_shape + self.event_shape + self.event_shape)
        new.loc = self.loc.expand(tuple(batch_shape + self.event_shape))
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        self._expand_held_onto(new, ("covariance_matrix", "scale_tril", "precision_matrix"), matrix_shape)
        return self._finish_expanded(new, batch_shape)

    def _matrix_shape(self):
        return tuple(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        return hookgrad.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(tuple(self._batch_shape + self._event_shape))

    def rsample(self, sample_shape=hookgrad.Size()):
        eps = _standard_normal(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self):
        return _diagonal(self._unbroadcasted_scale_tril).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        mahalanobis = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + mahalanobis) - self._half_log_det()

    def entropy(self):
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return H if len(self._batch_shape) == 0 else H.expand(tuple(self._batch_shape))
