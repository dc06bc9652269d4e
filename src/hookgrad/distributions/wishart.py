"""The Wishart distribution over positive-definite matrices (Bartlett decomposition sampling)."""
from __future__ import annotations

import math
import numbers
import warnings

import hookgrad
from . import constraints
from ._where import fill
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .multivariate_normal import _FromScaleTril, _lower_factor
from .utils import _diag_embed, _diagonal, lazy_property

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p):
    """Derivative of the log multivariate gamma function of dimension ``p``."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    shifts = hookgrad.arange(p, dtype=x.dtype).div(2).expand(tuple(x.shape) + (-1,))
    return (x.unsqueeze(-1) - shifts).digamma().sum(-1)


def _clamp_above_eps(x):
    return x.clamp(min=hookgrad.finfo(x.dtype).eps)


class Wishart(_FromScaleTril, ExponentialFamily):
    """Wishart distribution over positive-definite matrices with degrees of freedom ``df``."""
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, numbers.Number):
            batch_shape = hookgrad.Size(param.shape[:-2])
            self.df = hookgrad.tensor(df, dtype=param.dtype)
        else:
            batch_shape = hookgrad.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape))
            self.df = df.expand(tuple(batch_shape))
        event_shape = param.shape[-2:]
        if bool(self.df.le(event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {event_shape[-1] - 1}.")
        name = ("scale_tril" if scale_tril is not None else
                "covariance_matrix" if covariance_matrix is not None else "precision_matrix")
        setattr(self, name, param.expand(tuple(batch_shape) + (-1, -1)))
        if bool(self.df.lt(event_shape[-1]).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for "
                          "ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        self._unbroadcasted_scale_tril = _lower_factor(scale_tril, covariance_matrix, precision_matrix)
        self._dist_chi2 = self._bartlett_chi2(self.df, batch_shape)

    def _bartlett_chi2(self, df, batch_shape):
        p = self._event_shape[-1]
        steps = hookgrad.arange(p, dtype=self._unbroadcasted_scale_tril.dtype).expand(tuple(batch_shape) + (-1,))
        return Chi2(df=df.unsqueeze(-1) - steps)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = hookgrad.Size(batch_shape)
        cov_shape = tuple(batch_shape + self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(tuple(batch_shape))
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        self._expand_held_onto(new, ("covariance_matrix", "scale_tril", "precision_matrix"), cov_shape)
        new._event_shape = self._event_shape
        new._dist_chi2 = new._bartlett_chi2(new.df, batch_shape)
        return self._finish_expanded(new, batch_shape)

    def _matrix_shape(self):
        return tuple(self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        identity = hookgrad.eye(self._event_shape[-1], dtype=self._unbroadcasted_scale_tril.dtype)
        return hookgrad.cholesky_solve(identity, self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    def _df_as_matrix(self, values):
        return values.view(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_as_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        return self._df_as_matrix(fill(factor > 0, factor, math.nan)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag = _diagonal(V)
        return self._df_as_matrix(self.df) * (V.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=hookgrad.Size()):
        p = self._event_shape[-1]
        diagonal = _clamp_above_eps(self._dist_chi2.rsample(sample_shape).sqrt())
        rows, cols = hookgrad.tril_indices(p, p, offset=-1)
        below = hookgrad.randn(tuple(sample_shape) + tuple(self._batch_shape) + (p * (p - 1) // 2,),
                               dtype=diagonal.dtype)
        flat = hookgrad.zeros(tuple(below.shape[:-1]) + (p * p,), dtype=diagonal.dtype)
        index = (rows * p + cols).expand(tuple(below.shape))
        noise = flat.scatter(-1, index, below).reshape(tuple(below.shape[:-1]) + (p, p)) + _diag_embed(diagonal)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=hookgrad.Size(), max_try_correction=None):
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = hookgrad.Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        # torch 2.13 starts from the support check itself (True for a valid sample), so it warns and
        # redraws whenever some sample is valid; done the same way, the draws stay torch's
        flagged = self.support.check(sample)
        if self._batch_shape:
            flagged = flagged.amax(self._batch_dims)
        if bool(flagged.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                fresh = self._bartlett_sampling(flagged[flagged].shape)
                sample[flagged] = fresh
                still = ~self.support.check(fresh)
                if self._batch_shape:
                    still = still.amax(self._batch_dims)
                flagged[flagged.clone()] = still
                if not bool(flagged.any()):
                    break
        return sample

    def _log_det_scale_half(self):
        return _diagonal(self._unbroadcasted_scale_tril).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        trace = _diagonal(hookgrad.cholesky_solve(value, self._unbroadcasted_scale_tril)).sum(dim=-1)
        return (-nu * (p * _LOG_2 / 2 + self._log_det_scale_half()) - hookgrad.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * hookgrad.linalg.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        return ((p + 1) * (p * _LOG_2 / 2 + self._log_det_scale_half()) + hookgrad.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self):
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-hookgrad.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + hookgrad.mvlgamma(y + (p + 1) / 2, p=p))
