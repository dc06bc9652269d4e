"""``torch.utils._mode_utils``: ``no_dispatch()`` hides the ops run inside it from dispatch modes."""
from __future__ import annotations

__all__ = ["no_dispatch", "all_same_mode"]


def no_dispatch():
    """A context in which dispatch modes see none of the ops that run (``torch._C._DisableTorchDispatch``)."""
    from .._C import _DisableTorchDispatch
    return _DisableTorchDispatch()


def all_same_mode(modes) -> bool:
    """Whether every mode in ``modes`` equals the first."""
    return all(mode == modes[0] for mode in modes)
