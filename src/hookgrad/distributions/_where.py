"""Masked results without NaN gradients: the masked-out branch is computed on a harmless stand-in
value, so that its backward cannot produce ``0 * inf``."""
from __future__ import annotations

import hookgrad


def safe(mask, value, stand_in):
    """``value`` where ``mask`` holds, ``stand_in`` elsewhere (both broadcast)."""
    return hookgrad.where(mask, value, hookgrad.full_like(value, stand_in))


def fill(mask, value, constant):
    """``value`` with ``constant`` written where ``mask`` is false."""
    return hookgrad.where(mask, value, hookgrad.full_like(value, constant))
