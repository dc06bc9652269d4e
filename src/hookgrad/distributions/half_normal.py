"""The half-normal distribution: |X| for X ~ Normal(0, scale)."""
from __future__ import annotations

import math

from ._half import _HalfDistribution
from .normal import Normal

__all__ = ["HalfNormal"]


class HalfNormal(_HalfDistribution):
    """Absolute value of a Normal variable with mean zero and the given ``scale``."""
    _symmetric_family = Normal

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)
