"""``torch.utils._mode_utils``: ``no_dispatch()`` hides the ops run inside it from dispatch modes."""
from __future__ import annotations

from .._C import _DisableTorchDispatch as no_dispatch

__all__ = ["no_dispatch", "all_same_mode"]


def all_same_mode(modes) -> bool:
    """Whether every mode in ``modes`` equals the first."""
    return all(mode == modes[0] for mode in modes)
