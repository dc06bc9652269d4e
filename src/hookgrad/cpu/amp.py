"""``torch.cpu.amp``: deprecated spellings of ``torch.amp.autocast('cpu', ...)`` and
``torch.amp.GradScaler('cpu', ...)``; each warns (FutureWarning) as torch does."""
from __future__ import annotations

from ..amp._deprecated import deprecated_device_amp

__all__ = ["GradScaler", "autocast"]

autocast, GradScaler = deprecated_device_amp("cpu", __name__)
