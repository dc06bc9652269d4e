"""``torch.cuda.amp``: the deprecated spellings ``torch.cuda.amp.autocast(...)`` and
``torch.cuda.amp.GradScaler(...)``; each warns (FutureWarning) as torch does and then behaves
as ``torch.amp.X('cuda', ...)`` on a machine without CUDA (disabled, with torch's warning)."""
from __future__ import annotations

import sys

from ._deprecated import deprecated_device_amp

__all__ = ["GradScaler", "autocast"]

autocast, GradScaler = deprecated_device_amp("cuda", __name__)

# importable as hookgrad.cuda.amp (and so as torch.cuda.amp under ``hookgrad run``)
sys.modules.setdefault("hookgrad.cuda.amp", sys.modules[__name__])
