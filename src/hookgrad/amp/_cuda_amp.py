"""``torch.cuda.amp``: the deprecated spellings ``torch.cuda.amp.autocast(...)`` and
``torch.cuda.amp.GradScaler(...)``; each warns (FutureWarning) as torch does and then behaves
as ``torch.amp.X('cuda', ...)`` on a machine without CUDA (disabled, with torch's warning)."""
from __future__ import annotations

import sys

from ._deprecated import DeprecatedAutocast, DeprecatedGradScaler

__all__ = ["GradScaler", "autocast"]


class autocast(DeprecatedAutocast):
    _deprecated_device = "cuda"


class GradScaler(DeprecatedGradScaler):
    _deprecated_device = "cuda"


# importable as hookgrad.cuda.amp (and so as torch.cuda.amp under ``hookgrad run``)
sys.modules.setdefault("hookgrad.cuda.amp", sys.modules[__name__])
