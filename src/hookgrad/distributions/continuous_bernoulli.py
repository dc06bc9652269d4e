"""The continuous Bernoulli distribution on [0, 1] (density proportional to p^x (1-p)^(1-x)).

Near p = 1/2 the closed forms divide 0 by 0, so inside ``lims`` they are replaced by Taylor
expansions, and the closed forms are evaluated at a stand-in probability there."""
from __future__ import annotations

import math

import hookgrad
from hookgrad.nn.functional import binary_cross_entropy_with_logits
from . import constraints
from .distribution import _GivenProbsOrLogits
from .exp_family import ExponentialFamily
from .utils import _batch_shape_of, _check_probs_or_logits, broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]

_where = hookgrad.where


class ContinuousBernoulli(_GivenProbsOrLogits, ExponentialFamily):
    """Continuous Bernoulli distribution on [0, 1], parameterised by ``probs`` or ``logits``."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        _check_probs_or_logits(probs, logits)
        given = probs if probs is not None else logits
        (param,) = broadcast_all(given)
        if probs is not None:
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(param).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = param = clamp_probs(param)
        else:
            self.logits = param
        self._param = param
        self._lims = lims
        super().__init__(_batch_shape_of((given,), param), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expanded_probs_or_logits(ContinuousBernoulli, batch_shape, _instance)
        new._lims = self._lims
        return new

    def _outside_unstable_region(self):
        return self.probs.le(self._lims[0]) | self.probs.gt(self._lims[1])

    def _cut_probs(self):
        return _where(self._outside_unstable_region(), self.probs, self._lims[0] * hookgrad.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """log C(p) with C(p) = 2 atanh(1 - 2p) / (1 - 2p)."""
        cut = self._cut_probs()
        below = _where(cut.le(0.5), cut, hookgrad.zeros_like(cut))
        above = _where(cut.ge(0.5), cut, hookgrad.ones_like(cut))
        log_norm = ((-cut).log1p() - cut.log()).abs().log() - _where(cut.le(0.5), (-2.0 * below).log1p(),
                                                                       (2.0 * above - 1.0).log())
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return _where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        closed = cut / (2.0 * cut - 1.0) + 1.0 / ((-cut).log1p() - cut.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return _where(self._outside_unstable_region(), closed, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        cut = self._cut_probs()
        closed = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + 1.0 / ((-cut).log1p() - cut.log()).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return _where(self._outside_unstable_region(), closed, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def sample(self, sample_shape=hookgrad.Size()):
        u = hookgrad.rand(tuple(self._extended_shape(sample_shape)), dtype=self.probs.dtype)
        with hookgrad.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=hookgrad.Size()):
        return self.icdf(hookgrad.rand(tuple(self._extended_shape(sample_shape)), dtype=self.probs.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        closed = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        inside = _where(self._outside_unstable_region(), closed, value)
        return _where(value.le(0.0), hookgrad.zeros_like(value),
                      _where(value.ge(1.0), hookgrad.ones_like(value), inside))

    def icdf(self, value):
        cut = self._cut_probs()
        closed = (((-cut + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p()) / (cut.log() - (-cut).log1p()))
        return _where(self._outside_unstable_region(), closed, value)

    def entropy(self):
        log_q = (-self.probs).log1p()
        log_p = self.probs.log()
        return self.mean * (log_q - log_p) - self._cont_bern_log_norm() - log_q

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        outside = x.le(self._lims[0] - 0.5) | x.gt(self._lims[1] - 0.5)
        cut = _where(outside, x, (self._lims[0] - 0.5) * hookgrad.ones_like(x))
        log_norm = cut.expm1().abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return _where(outside, log_norm, taylor)
