"""Memory formats on NumPy arrays: a hookgrad tensor's array has real strides, so
``contiguous(memory_format=torch.channels_last)`` lays the channels out last in memory (the array
is a transposed view of an (N, H, W, C) block) and every op that keeps its input's layout (NumPy's
``order="K"``) keeps it, as torch's do.

The formats are compared by their names, so this module needs nothing of hookgrad's."""
from __future__ import annotations

import numpy as np

__all__ = ["CONTIGUOUS", "PRESERVE", "CHANNELS_LAST", "CHANNELS_LAST_3D", "empty", "copy", "like", "is_contiguous",
           "memory_order", "in_memory_order", "is_dense", "layout", "STRIDED"]

CONTIGUOUS = "torch.contiguous_format"
PRESERVE = "torch.preserve_format"
CHANNELS_LAST = "torch.channels_last"
CHANNELS_LAST_3D = "torch.channels_last_3d"


class layout(str):
    """``torch.layout``. Each layout is one object, as in torch (code tests ``t.layout is torch.strided``);
    its value is its torch name. hookgrad tensors are all strided: ``Tensor.layout`` is ``STRIDED``."""

    def __repr__(self):
        return str.__str__(self)


STRIDED = layout("torch.strided")
# dimension order in memory, outermost first: batch, spatial dimensions, then channels
_CHANNELS_LAST_ORDER = {CHANNELS_LAST: (4, (0, 2, 3, 1)), CHANNELS_LAST_3D: (5, (0, 2, 3, 4, 1))}


def _memory_order(memory_format, ndim: int):
    """The order in memory of the dimensions for ``memory_format`` (None: row-major)."""
    entry = _CHANNELS_LAST_ORDER.get(memory_format)
    if entry is None:
        if memory_format is not None and memory_format not in (CONTIGUOUS, PRESERVE):
            raise TypeError(f"memory_format must be a torch.memory_format, not {type(memory_format).__name__}")
        return None
    rank, order = entry
    if ndim != rank:
        name = memory_format.rsplit(".", 1)[-1]
        raise RuntimeError(f"required rank {rank} tensor to use {name} format")
    return order


def _from_memory(block: np.ndarray, order) -> np.ndarray:
    return block.transpose(np.argsort(order))


def empty(shape, dtype, memory_format=None) -> np.ndarray:
    """An uninitialised array of ``shape`` laid out in ``memory_format``."""
    shape = tuple(shape)
    order = _memory_order(memory_format, len(shape))
    if order is None:
        return np.empty(shape, dtype=dtype)
    return _from_memory(np.empty([shape[d] for d in order], dtype=dtype), order)


def copy(array: np.ndarray, memory_format=None) -> np.ndarray:
    """A copy of ``array`` in ``memory_format``; ``preserve_format`` (None) keeps a dense array's
    strides and makes an overlapping or expanded one row-major, as torch's ``clone`` does."""
    if array.__class__ is not np.ndarray:   # a meta tensor's array makes its own (valueless) copy
        return array.copy()
    if memory_format is None or memory_format == PRESERVE:
        return np.array(array, copy=True, order="C" if 0 in array.strides else "K")
    order = _memory_order(memory_format, array.ndim)
    if order is None:
        return np.array(array, copy=True, order="C")
    return _from_memory(np.ascontiguousarray(array.transpose(order)), order)


def like(array: np.ndarray, dtype, memory_format=None, fill=None) -> np.ndarray:
    """A new array shaped as ``array`` (filled with ``fill`` when given) in ``memory_format``;
    ``preserve_format`` (None) takes ``array``'s layout."""
    if memory_format is None or memory_format == PRESERVE:
        out = np.empty_like(array, dtype=dtype, order="C" if 0 in array.strides else "K")
    else:
        out = empty(array.shape, dtype, memory_format)
    if fill is not None:
        out[...] = fill
    return out


def is_contiguous(array: np.ndarray, memory_format=None) -> bool:
    """Whether ``array`` is laid out densely in ``memory_format`` (dimensions of size one may have
    any stride); a tensor of another rank is never channels-last."""
    entry = _CHANNELS_LAST_ORDER.get(memory_format)
    if entry is None:
        return array.flags.c_contiguous
    rank, order = entry
    return array.ndim == rank and array.transpose(order).flags.c_contiguous


def memory_order(array: np.ndarray, memory_format=None):
    """The order in memory of the dimensions of a new array laid out as ``memory_format`` asks
    (``preserve_format``: as ``array`` is, when it is dense); None for row-major."""
    if memory_format is None or memory_format == PRESERVE:
        if 0 in array.strides or array.ndim < 2:
            return None
        order = tuple(sorted(range(array.ndim), key=lambda d: -array.strides[d]))  # stable: ties keep order
        return None if order == tuple(range(array.ndim)) else order
    return _memory_order(memory_format, array.ndim)


def in_memory_order(block: np.ndarray, order) -> np.ndarray:
    """``block``, made in memory order (outermost dimension first), seen in logical order."""
    return block if order is None else _from_memory(block, order)


def is_dense(array: np.ndarray) -> bool:
    """Whether ``array``'s elements fill its memory without gaps or overlap, in some order of its
    dimensions (torch's "non-overlapping and dense")."""
    if array.flags.c_contiguous:
        return True
    if 0 in array.strides:
        return array.size <= 1
    order = sorted(range(array.ndim), key=lambda d: -abs(array.strides[d]))
    return array.transpose(order).flags.c_contiguous
