"""The deprecated per-device spellings ``torch.<device>.amp.autocast(...)`` and
``torch.<device>.amp.GradScaler(...)``: each warns (FutureWarning, with torch's text) and then
behaves as ``torch.amp.X('<device>', ...)``. A device's module subclasses both, naming its device."""
from __future__ import annotations

import warnings

from . import autocast_mode, grad_scaler

__all__ = ["DeprecatedAutocast", "DeprecatedGradScaler"]


def _warn_deprecated(device: str, name: str) -> None:
    warnings.warn(f"`torch.{device}.amp.{name}(args...)` is deprecated. Please use "
                  f"`torch.amp.{name}('{device}', args...)` instead.", FutureWarning, stacklevel=3)


class DeprecatedAutocast(autocast_mode.autocast):
    """``torch.amp.autocast`` on the subclass's ``_deprecated_device``, after the deprecation warning."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        _warn_deprecated(self._deprecated_device, "autocast")
        super().__init__(self._deprecated_device, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class DeprecatedGradScaler(grad_scaler.GradScaler):
    """``torch.amp.GradScaler`` on the subclass's ``_deprecated_device``, after the deprecation warning."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True) -> None:
        _warn_deprecated(self._deprecated_device, "GradScaler")
        super().__init__(self._deprecated_device, init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)
