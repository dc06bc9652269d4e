"""``torch.cpu.amp``: deprecated spellings of ``torch.amp.autocast('cpu', ...)`` and
``torch.amp.GradScaler('cpu', ...)``; each warns (FutureWarning) as torch does."""
from __future__ import annotations

from ..amp._deprecated import DeprecatedAutocast, DeprecatedGradScaler

__all__ = ["GradScaler", "autocast"]


class autocast(DeprecatedAutocast):
    _deprecated_device = "cpu"


class GradScaler(DeprecatedGradScaler):
    _deprecated_device = "cpu"
