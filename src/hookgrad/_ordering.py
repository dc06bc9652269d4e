"""Sorting and column stacking, composed of recorded ops: ``sort`` picks values with ``gather`` (so
gradients flow to the chosen positions); ``argsort`` returns indices only."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ._dtype import is_floating_np, widen
from ._tensor import Tensor

__all__ = ["sort", "argsort", "msort", "column_stack"]

_sort_result = namedtuple("sort", ["values", "indices"])


def _order(input: Tensor, dim: int, descending: bool) -> np.ndarray:
    data = widen(input.detach()._data)  # bfloat16 sorts by its exact float32 values
    if data.ndim == 0:
        return np.zeros((), dtype=np.int64)
    if descending:
        # negate, and send NaN (which torch treats as the largest value) to the front
        key = np.where(np.isnan(data), -np.inf, -data) if is_floating_np(data.dtype) else (
            ~data if data.dtype.kind == "b" else -data.astype(np.int64) if data.dtype.kind == "u" else -data)
        if is_floating_np(data.dtype):
            nan_first = np.isnan(data)
            order = np.argsort(key, axis=dim, kind="stable")
            # among -inf keys, NaNs must come before real -inf values (i.e. real +inf inputs come after NaN)
            if nan_first.any():
                taken = np.take_along_axis(nan_first, order, dim)
                order = np.take_along_axis(order, np.argsort(~taken, axis=dim, kind="stable"), dim)
            return order.astype(np.int64)
        return np.argsort(key, axis=dim, kind="stable").astype(np.int64)
    return np.argsort(data, axis=dim, kind="stable").astype(np.int64)


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """Indices that sort ``input`` along ``dim`` (ties keep their order)."""
    import hookgrad
    return hookgrad.tensor(_order(input, dim, descending), dtype=hookgrad.int64)


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False, *, out=None):
    """(values, indices) of ``input`` sorted along ``dim``; values are differentiable."""
    indices = argsort(input, dim, descending)
    values = input.gather(dim, indices) if input.dim() else input.clone()
    return _sort_result(values, indices)


def msort(input: Tensor) -> Tensor:
    return sort(input, 0).values


def column_stack(tensors) -> Tensor:
    """Stack 0-d/1-d tensors as columns and concatenate 2-d+ tensors along dim 1."""
    import hookgrad
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    columns = [t.reshape(-1, 1) if t.dim() <= 1 else t for t in tensors]
    return hookgrad.hstack(columns)
