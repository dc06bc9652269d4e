"""The deprecated per-device spellings ``torch.<device>.amp.autocast(...)`` and
``torch.<device>.amp.GradScaler(...)``: each warns (FutureWarning, with torch's text) and then
behaves as ``torch.amp.X('<device>', ...)``."""
from __future__ import annotations

import warnings

from . import autocast_mode, grad_scaler

__all__ = ["deprecated_device_amp"]


def deprecated_device_amp(device: str, module: str):
    """``(autocast, GradScaler)`` for ``torch.<device>.amp``, named as classes of ``module``."""

    class autocast(autocast_mode.autocast):
        def __init__(self, enabled=True, dtype=None, cache_enabled=True):
            warnings.warn(f"`torch.{device}.amp.autocast(args...)` is deprecated. Please use "
                          f"`torch.amp.autocast('{device}', args...)` instead.", FutureWarning, stacklevel=2)
            super().__init__(device, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class GradScaler(grad_scaler.GradScaler):
        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                     enabled=True) -> None:
            warnings.warn(f"`torch.{device}.amp.GradScaler(args...)` is deprecated. Please use "
                          f"`torch.amp.GradScaler('{device}', args...)` instead.", FutureWarning, stacklevel=2)
            super().__init__(device, init_scale, growth_factor, backoff_factor, growth_interval, enabled)

    for cls in (autocast, GradScaler):
        cls.__module__ = module
        cls.__qualname__ = cls.__name__
        cls.__init__.__qualname__ = f"{cls.__name__}.__init__"
    return autocast, GradScaler
