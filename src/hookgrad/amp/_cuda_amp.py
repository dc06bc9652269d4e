"""``torch.cuda.amp``: the deprecated spellings ``torch.cuda.amp.autocast(...)`` and
``torch.cuda.amp.GradScaler(...)``; each warns (FutureWarning) as torch does and then behaves
as ``torch.amp.X('cuda', ...)`` on a machine without CUDA (disabled, with torch's warning)."""
from __future__ import annotations

import sys
import warnings

from . import autocast_mode, grad_scaler

__all__ = ["GradScaler", "autocast"]


class autocast(autocast_mode.autocast):
    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(grad_scaler.GradScaler):
    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True) -> None:
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


# importable as hookgrad.cuda.amp (and so as torch.cuda.amp under ``hookgrad run``)
sys.modules.setdefault("hookgrad.cuda.amp", sys.modules[__name__])
