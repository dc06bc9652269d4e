"""``torch.testing._internal.common_methods_invocations``: the helpers of it that hook and autograd
tests import. torch's operator database (``op_db``) is not carried here."""
from __future__ import annotations

import hookgrad

__all__ = ["mask_not_all_zeros"]


def mask_not_all_zeros(shape):
    """A random boolean mask of ``shape`` with at least one True element."""
    if len(shape) == 0:
        raise AssertionError("mask_not_all_zeros needs a shape with at least one dimension")
    while True:
        mask = hookgrad.randn(shape).gt(0)
        if bool(mask.any()):
            return mask
