"""Dropout."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    __constants__ = ["p", "inplace"]

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zeroes elements with probability ``p`` in training mode and scales the rest by 1/(1-p)."""

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class _ChannelDropoutNd(_DropoutNd):
    def forward(self, input):
        # F's function looked up at each call, so that a patched F.dropout2d is used
        return getattr(F, f"dropout{self._dims}d")(input, self.p, self.training, self.inplace)


class Dropout1d(_ChannelDropoutNd):
    """Zeroes whole channels of (N, C, L) or (C, L) inputs."""

    _dims = 1


class Dropout2d(_ChannelDropoutNd):
    """Zeroes whole channels of (N, C, H, W) or (C, H, W) inputs."""

    _dims = 2


class Dropout3d(_ChannelDropoutNd):
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) inputs."""

    _dims = 3


class AlphaDropout(_DropoutNd):
    """Dropout that keeps the mean and variance of self-normalizing (SELU) activations."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)
