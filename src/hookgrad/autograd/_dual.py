"""Which tensors carry a tangent (forward-mode AD, ``hookgrad.autograd.forward_ad``) at the one
dual level there can be.

The tangents live here, apart from the tensors, so that leaving the level drops them all at once
and so that low layers (printing) can ask for a tensor's tangent without importing the op
machinery that computes them.
"""
from __future__ import annotations

import contextlib
import re
import weakref

__all__ = ["LEVEL", "tangent_of", "set_tangent", "drop_all", "products_through"]

LEVEL = [-1]              # the current dual level: -1 outside ``dual_level``, else 0
FWD_GRAD_ENABLED = [True]  # torch._C._set_fwd_grad_enabled: off, ops give their results no tangent
_TANGENTS: dict = {}      # id(tensor) -> (weak reference to the tensor, its tangent)


def tangent_of(tensor):
    """``tensor``'s tangent at the current level, or None."""
    if not _TANGENTS:
        return None
    entry = _TANGENTS.get(id(tensor))
    if entry is None or entry[0]() is not tensor:  # an id reused by a newer object
        return None
    return entry[1]


def set_tangent(tensor, tangent) -> None:
    key = id(tensor)

    def forget(ref, key=key):  # the tensor was collected: so is its tangent
        entry = _TANGENTS.get(key)
        if entry is not None and entry[0] is ref:
            del _TANGENTS[key]

    _TANGENTS[key] = (weakref.ref(tensor, forget), tangent)


def has_tangents() -> bool:
    return bool(_TANGENTS)


def drop_all() -> None:
    _TANGENTS.clear()


_NO_BACKWARD_DERIVATIVE = re.compile(r"derivative for aten::(\w+?)_backward is not implemented")


@contextlib.contextmanager
def products_through():
    """Around the second reverse pass of a forward-mode product: an op whose backward has no
    derivative (torch's fused CPU attention) has no forward derivative either, and torch says so
    with its NotImplementedError for forward AD."""
    try:
        yield
    except RuntimeError as error:
        found = _NO_BACKWARD_DERIVATIVE.fullmatch(str(error))
        if found is None:
            raise
        raise NotImplementedError(
            f"Trying to use forward AD with {found.group(1)} that does not support it because it has not been "
            "implemented yet.\nPlease file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/new?"
            "template=feature-request.yml so that we can prioritize its implementation or submit a PR adding the "
            "implementation to derivatives.yaml") from None
