"""Ordering, searching and counting: sort, topk, kthvalue, median, mode, quantile, cummax/cummin,
logcumsumexp, diff, unfold, unique, bincount, histograms, searchsorted, isin, ...

Orders follow torch's CPU kernels: NaN sorts as the largest value; equal values come in input order
where torch's kernel is stable (``stable=True``, median, rows of at most 16) and where it is not (sort,
topk, kthvalue, mode) the kernel's own algorithm is replayed on the rows whose ties it decides, up to
``_REPLAY_LIMIT`` elements (beyond that: the stable choice). A value picked along a dim gets its gradient at
the index that was returned.
"""
from __future__ import annotations

import builtins
import math
from fractions import Fraction

import numpy as np

from .. import _dtype, return_types
from .._meta import MetaArray
from .._tensor import Tensor, _wrap_dim, wrap
from ..autograd.graph import Node
from ._base import GRAD, as_tensor_arg, quiet_fp, refuse_complex
from . import _dtype_rules as _rules
from ._declare import formula_node, module_all, node_class, op, record_op, underivable_node
from .reduce import evenly_distributed_grad
from ._stl_order import sort as std_sort
from ._stl_order import topk_row
from .views import make_view

def _return_type(name, fields=("values", "indices")):
    return return_types.make(name, fields)


_SCALAR_NAMES = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
                 "float16": "Half", "float32": "Float", "float64": "Double"}


def _not_implemented(kernel, data):
    """torch's error for a kernel that has no loop for this dtype."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{_SCALAR_NAMES.get(data.dtype.name, data.dtype.name)}\'')


def _indices(a) -> Tensor:
    return wrap(np.asanyarray(a, dtype=np.int64))


def _order(data: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable sorting indices along ``axis``; NaN counts as the largest value."""
    data = _dtype.widen(data)  # bfloat16 orders by its exact float32 values
    if data.dtype == np.bool_:
        data = data.view(np.uint8)
    if not descending:
        return np.argsort(data, axis=axis, kind="stable")
    # descending and stable: sort the reversed array ascending, then reverse back (ties keep order)
    n = data.shape[axis]
    rev = np.argsort(np.flip(data, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - rev, axis)


# tensors of at most this many elements have their ties replayed as torch's kernels decide them
_REPLAY_LIMIT = 1 << 13  # a replay costs ~20 us per element: bounded to keep big sorts fast


def _ascending_less(a, b) -> bool:
    return (a[0] == a[0] and b[0] != b[0]) or a[0] < b[0]


def _descending_less(a, b) -> bool:
    return (a[0] != a[0] and b[0] == b[0]) or a[0] > b[0]


def _torch_order(data: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """The order torch's default (unstable) CPU sort returns: std::sort on (value, index) pairs. It
    differs from the stable order only where equal values meet in a row of more than 16 (shorter
    rows are insertion-sorted, which is stable); only such rows are replayed."""
    data = _dtype.widen(data)  # bfloat16 orders by its exact float32 values
    order = _order(data, axis, descending)
    n = data.shape[axis]
    if n <= 16 or data.size > _REPLAY_LIMIT:
        return order
    ranked = np.moveaxis(np.take_along_axis(data, order, axis), axis, -1).reshape(-1, n)
    same = ranked[:, 1:] == ranked[:, :-1]
    if data.dtype.kind in "fV":
        same |= np.isnan(ranked[:, 1:]) & np.isnan(ranked[:, :-1])
    redo = np.flatnonzero(same.any(axis=1))
    if not len(redo):
        return order
    rows = np.moveaxis(data, axis, -1).reshape(-1, n)
    picked = np.moveaxis(order, axis, -1).reshape(-1, n).copy()
    less = _descending_less if descending else _ascending_less
    for r in redo:
        pairs = [(v, i) for i, v in enumerate(rows[r].tolist())]
        std_sort(pairs, 0, n, less)
        picked[r] = [i for _, i in pairs]
    return np.moveaxis(picked.reshape(np.moveaxis(order, axis, -1).shape), -1, axis)


# ---- gradients of value-selecting ops: the gradient goes where the returned index points -------
def _select_backward(g: Tensor, indices: Tensor, dim: int, in_shape, keepdim: bool) -> Tensor:
    if len(in_shape) == 0:
        return g.reshape(())
    if not keepdim:
        g = g.unsqueeze(dim)
        indices = indices.unsqueeze(dim)
    zeros = wrap(np.zeros(in_shape, dtype=g._ndarray.dtype))
    return zeros.scatter(dim, indices, g)


class _SelectNode(Node):
    __slots__ = ("dim", "in_shape", "keepdim")
    saved_names = ("indices",)

    def apply(self, grads):
        (indices,) = self.saved()
        return (_select_backward(grads[0], indices, self.dim, self.in_shape, self.keepdim),)


# torch's nodes of the value-selecting ops (SortBackward1: the overload with a ``stable`` argument)
SortBackward0 = node_class("SortBackward0", _SelectNode, __module__=__name__)
SortBackward1 = node_class("SortBackward1", _SelectNode, __module__=__name__)
TopkBackward0 = node_class("TopkBackward0", _SelectNode, __module__=__name__)
KthvalueBackward0 = node_class("KthvalueBackward0", _SelectNode, __module__=__name__)
MedianBackward1 = node_class("MedianBackward1", _SelectNode, __module__=__name__)
NanmedianBackward1 = node_class("NanmedianBackward1", _SelectNode, __module__=__name__)
ModeBackward0 = node_class("ModeBackward0", _SelectNode, __module__=__name__)


def _selected(node_cls, name, x, values, indices, dim, keepdim):
    vals, inds = wrap(values.copy(order="C")), _indices(indices)
    if GRAD.enabled and x._requires_grad:
        node = record_op(node_cls, (x,), vals)
        node.dim, node.in_shape, node.keepdim = dim, x._ndarray.shape, keepdim
        node.save(inds)
    return _return_type(name)(vals, inds)


def _dim_of(x, dim):
    return _wrap_dim(dim, x._ndarray.ndim)


# ---- sort / argsort / msort / topk -----------------------------------------------------------------
@op()
def sort(x, dim=-1, descending=False, stable=None):
    if x._ndarray.dtype in _rules.LOWPREC:  # float8, float4, complex32
        _rules.refuse_lowprec(x._ndarray, "sorting_kernel_method_name")
    refuse_complex(" Sort does not support complex dtypes on CPU", x, error=RuntimeError)
    # ``stable`` given (even False) selects torch's other overload (SortBackward1)
    node_cls = SortBackward0 if stable is None else SortBackward1
    d = _dim_of(x, dim)
    data = x._ndarray
    if data.ndim == 0:
        return _selected(node_cls, "sort", x, data.copy(), np.zeros((), np.int64), 0, True)
    order = _order(data, d, descending) if stable else _torch_order(data, d, descending)
    return _selected(node_cls, "sort", x, np.take_along_axis(data, order, d), order, d, True)


@op()
def argsort(x, dim=-1, descending=False, stable=False):
    refuse_complex(" Sort does not support complex dtypes on CPU", x, error=RuntimeError)
    d = _dim_of(x, dim)
    if x._ndarray.ndim == 0:
        return _indices(0)
    return _indices(_order(x._ndarray, d, descending) if stable else _torch_order(x._ndarray, d, descending))


@op()
def msort(x):
    return sort(x, 0).values


@op()
def topk(x, k, dim=-1, largest=True, sorted=True):
    if x._ndarray.dtype == _dtype.complex32.np:
        raise RuntimeError(" topk does not support complex dtypes on CPU")
    refuse_complex(" topk does not support complex dtypes on CPU", x, error=RuntimeError)
    _rules.refuse_lowprec(x._ndarray, "topk_cpu")
    data = x._ndarray
    d = _dim_of(x, dim)
    size = data.shape[d] if data.ndim else 1
    if data.dtype == np.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    if k < 0 or k > size:
        raise RuntimeError("selected index k out of range")
    if data.ndim == 0:
        return _selected(TopkBackward0, "topk", x, data.copy(), np.zeros((), np.int64), 0, True)
    full = _order(data, d, largest)
    order = np.take(full, np.arange(k), axis=d)
    if k and data.size and data.size <= _REPLAY_LIMIT and data.__class__ is not MetaArray:   # no ties without values
        order = _topk_as_torch(data, d, k, largest, sorted, full, order)
    return _selected(TopkBackward0, "topk", x, np.take_along_axis(data, order, d), order, d, True)


def _topk_as_torch(data, d, k, largest, sorted_, full, order):
    """Fix up the rows whose result depends on torch's selection algorithm: rows with ties among the
    first ``k + 1`` sorted values, and every row of an unsorted result (its order is the algorithm's)."""
    data = _dtype.widen(data)  # bfloat16 orders by its exact float32 values
    rows = np.moveaxis(data, d, -1).reshape(-1, data.shape[d])
    picked = np.moveaxis(order, d, -1).reshape(-1, k).copy()
    if sorted_ or k * 64 <= data.shape[d]:
        ranked = np.take_along_axis(rows, np.moveaxis(full, d, -1).reshape(rows.shape)[:, :k + 1], 1)
        same = ranked[:, 1:] == ranked[:, :-1]
        if data.dtype.kind in "fV":
            same |= np.isnan(ranked[:, 1:]) & np.isnan(ranked[:, :-1])
        redo = np.flatnonzero(same.any(axis=1))
    else:
        redo = range(rows.shape[0])
    for r in redo:
        picked[r] = [i for _, i in topk_row(rows[r].tolist(), k, largest, sorted_)]
    return np.moveaxis(picked.reshape(np.moveaxis(order, d, -1).shape), -1, d)


def _greater_or_nan(a, b) -> bool:
    return (a != a and b == b) or a > b


def _quickselect_index(row: list, k: int) -> int:
    """The index torch's kthvalue kernel returns for the k-th smallest (0-based) of ``row``: its
    median-of-three quickselect, replayed step for step (it decides which of equal values wins)."""
    vals, idx = list(row), list(range(len(row)))

    def swap(i, j):
        vals[i], vals[j] = vals[j], vals[i]
        idx[i], idx[j] = idx[j], idx[i]
    lo, hi = 0, len(vals) - 1
    while hi > lo:
        if hi == lo + 1:
            if _greater_or_nan(vals[lo], vals[hi]):
                swap(lo, hi)
            break
        swap(lo + (hi - lo) // 2, lo + 1)
        if _greater_or_nan(vals[lo + 1], vals[hi]):
            swap(lo + 1, hi)
        if _greater_or_nan(vals[lo], vals[hi]):
            swap(lo, hi)
        if _greater_or_nan(vals[lo + 1], vals[lo]):
            swap(lo + 1, lo)
        i, j, pivot = lo + 1, hi, vals[lo]
        while True:
            i += 1
            while _greater_or_nan(pivot, vals[i]):
                i += 1
            j -= 1
            while _greater_or_nan(vals[j], pivot):
                j -= 1
            if j < i:
                break
            swap(i, j)
        swap(lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1
    return idx[k]


def _kth(x, k, dim, keepdim, node_cls, name, torch_ties=False):
    """The k-th smallest (0-based ``k``) along ``dim``, as (values, indices). Equal values resolve to
    the first in input order, or with ``torch_ties`` to the one torch's quickselect lands on."""
    data = x._ndarray
    d = _dim_of(x, dim)
    if data.ndim == 0:
        return _selected(node_cls, name, x, data.copy(), np.zeros((), np.int64), 0, keepdim)
    order = np.take(_order(data, d, False), [k], axis=d)
    values = np.take_along_axis(data, order, d)
    if torch_ties and 0 < data.size <= _REPLAY_LIMIT:
        # only slices where the chosen value occurs more than once can differ from input order
        same = (data == values) | (np.isnan(values) & np.isnan(data)) if data.dtype.kind in "fV" else data == values
        tied = np.moveaxis((same.sum(axis=d, keepdims=True) > 1), d, -1).reshape(-1)
        if tied.any():
            rows = np.moveaxis(data, d, -1).reshape(-1, data.shape[d])
            picked = np.moveaxis(order, d, -1).reshape(-1).copy()
            for r in np.flatnonzero(tied):
                picked[r] = _quickselect_index(rows[r].tolist(), k)
            order = np.moveaxis(picked.reshape(np.moveaxis(order, d, -1).shape), -1, d)
            values = np.take_along_axis(data, order, d)
    if not keepdim:
        order, values = np.squeeze(order, d), np.squeeze(values, d)
    return _selected(node_cls, name, x, values, order, d, keepdim)


@op()
def kthvalue(x, k, dim=-1, keepdim=False):
    refuse_complex('"kthvalue_cpu" not implemented for \'{dtype}\'', x)
    _rules.refuse_lowprec(x._ndarray, "kthvalue_cpu")
    d = _dim_of(x, dim)
    size = x._ndarray.shape[d] if x._ndarray.ndim else 1
    if k < 1 or k > size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if x._ndarray.dtype == np.bool_:
        raise _not_implemented("kthvalue_cpu", x._ndarray)
    return _kth(x, k - 1, d, keepdim, KthvalueBackward0, "kthvalue", torch_ties=True)


def _value_less(a, b) -> bool:
    return a[0] < b[0]


# ---- median / nanmedian / mode -----------------------------------------------------------------
MedianBackward0 = formula_node("MedianBackward0", ("self", "result"), evenly_distributed_grad)
NanmedianBackward0 = formula_node("NanmedianBackward0", ("self", "result"), evenly_distributed_grad)


def _full_median(x, ignore_nan):
    flat = x._ndarray.reshape(-1)
    nan = np.isnan(flat) if flat.dtype.kind in "fV" else None
    if ignore_nan and nan is not None:
        flat = flat[~nan]
    if flat.size == 0 or (not ignore_nan and nan is not None and nan.any()):
        value = np.asanyarray(np.nan, dtype=x._ndarray.dtype)
    else:
        value = np.take(flat, _order(flat, 0, False)[(flat.size - 1) // 2])
    result = wrap(np.asanyarray(value, dtype=x._ndarray.dtype))
    if GRAD.enabled and x._requires_grad:
        node = record_op(NanmedianBackward0 if ignore_nan else MedianBackward0, (x,), result)
        node.save(x, output=result)
    return result


def _median_dim(x, dim, keepdim, ignore_nan):
    name = "nanmedian" if ignore_nan else "median"
    if x._ndarray.dtype == np.bool_:
        raise _not_implemented(f"{name}_out", x._ndarray)
    node_cls = NanmedianBackward1 if ignore_nan else MedianBackward1
    d = _dim_of(x, dim)
    data = x._ndarray
    if data.ndim and data.shape[d] == 0:
        if math.prod(data.shape[:d] + data.shape[d + 1:]):
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        shape = list(data.shape)
        shape[d] = 1
        empty = np.zeros(shape, data.dtype)
        empty = empty if keepdim else np.squeeze(empty, d)
        return _selected(node_cls, name, x, empty, np.zeros(empty.shape, np.int64), d, keepdim)
    if data.ndim == 0:
        return _selected(node_cls, name, x, data.copy(), np.zeros((), np.int64), 0, keepdim)
    if data.dtype.kind != "f":
        return _kth(x, (data.shape[d] - 1) // 2, d, keepdim, node_cls, name)
    # per slice, in sorted order (NaN last): median picks the first NaN where a slice has any,
    # nanmedian the lower median of the non-NaN values (the first NaN where all are NaN)
    order = _order(data, d, False)
    valid = (~np.isnan(data)).sum(axis=d, keepdims=True)
    if ignore_nan:
        pos = np.maximum(valid - 1, 0) // 2
    else:
        pos = np.where(valid < data.shape[d], valid, (data.shape[d] - 1) // 2)
    picked = np.take_along_axis(order, pos, d)
    values = np.take_along_axis(data, picked, d)
    if not keepdim:
        picked, values = np.squeeze(picked, d), np.squeeze(values, d)
    return _selected(node_cls, name, x, values, picked, d, keepdim)


def _median_op(x, dim, keepdim, ignore_nan):
    """median, or nanmedian (``ignore_nan``): of all elements, or along ``dim`` with indices."""
    name = "nanmedian" if ignore_nan else "median"
    refuse_complex(f'"{name}_cpu" not implemented for \'{{dtype}}\'', x)
    _rules.refuse_kernel(x._ndarray, _rules.BOOL, "median_cpu")
    _rules.refuse_lowprec(x._ndarray, "median_cpu" if dim is None else "median_out")
    if dim is None:
        return _full_median(x, ignore_nan)
    return _median_dim(x, dim, keepdim, ignore_nan)


@op()
def median(x, dim=None, keepdim=False):
    return _median_op(x, dim, keepdim, ignore_nan=False)


@op()
def nanmedian(x, dim=None, keepdim=False):
    return _median_op(x, dim, keepdim, ignore_nan=True)


@op()
def mode(x, dim=-1, keepdim=False):
    refuse_complex('"mode_cpu" not implemented for \'{dtype}\'', x)
    _rules.refuse_lowprec(x._ndarray, "mode_cpu")
    data = x._ndarray
    d = _dim_of(x, dim)
    if data.ndim == 0:
        return _selected(ModeBackward0, "mode", x, data.copy(), np.zeros((), np.int64), 0, keepdim)
    if data.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    moved = np.moveaxis(data, d, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    n = rows.shape[1]
    order = _order(rows, 1, False)
    ordered = np.take_along_axis(rows, order, 1)
    # runs of equal values in sorted order: each position's run start and end
    new = np.ones(rows.shape, dtype=bool)
    new[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    positions = np.broadcast_to(np.arange(n), rows.shape)
    start = np.maximum.accumulate(np.where(new, positions, 0), axis=1)
    ends = np.ones(rows.shape, dtype=bool)
    ends[:, :-1] = new[:, 1:]
    end = np.flip(np.minimum.accumulate(np.flip(np.where(ends, positions, n), 1), axis=1), 1)
    length = end - start + 1
    # the longest run wins, the smallest value among equally long ones (argmax takes the first)
    best = np.argmax(length, axis=1)
    best_start = start[np.arange(rows.shape[0]), best]
    values = ordered[np.arange(rows.shape[0]), best]
    # torch returns the index at the end of the run in its own (std::sort) order of the row: the last
    # occurrence up to 16 elements (insertion sort is stable), the replayed sort's choice beyond
    in_run = start == best_start[:, None]
    picked = np.where(in_run, order, -1).max(axis=1)
    if 16 < n and data.size <= _REPLAY_LIMIT:
        for r in np.flatnonzero(length[np.arange(rows.shape[0]), best] > 1):
            pairs = [(v, i) for i, v in enumerate(rows[r].tolist())]
            std_sort(pairs, 0, n, _value_less)
            picked[r] = pairs[end[r, best[r]]][1]
    shape = moved.shape[:-1]
    values, picked = values.reshape(shape), picked.reshape(shape)
    if keepdim:
        values, picked = np.expand_dims(values, d), np.expand_dims(picked, d)
    return _selected(ModeBackward0, "mode", x, values, picked, d, keepdim)


# ---- quantile ------------------------------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(x, q, dim, keepdim, interpolation, ignore_nan, name):
    if x._ndarray.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    scalar_q = not isinstance(q, Tensor)
    if scalar_q:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
        qs = np.asanyarray([q], dtype=x._ndarray.dtype)
    else:
        if q._ndarray.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q._ndarray.dtype != x._ndarray.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        if q._ndarray.size and not ((q._ndarray >= 0) & (q._ndarray <= 1)).all():
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
        scalar_q = q._ndarray.ndim == 0
        qs = q._ndarray.reshape(-1)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    if x._ndarray.size == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if dim is None:
        src, d = x.reshape(-1), 0
    else:
        d = _dim_of(x, dim)
        src = x if x._ndarray.ndim else x.reshape(1)
    ordered = sort(src, d).values  # NaN last
    n = ordered._ndarray.shape[d]
    # ranks per slice: over the non-NaN count (nanquantile) or n (a slice with NaN gives NaN)
    nan_count = np.isnan(src._ndarray).sum(axis=d, keepdims=True)
    count = (n - nan_count) if ignore_nan else np.full_like(nan_count, n)
    last = np.maximum(count - 1, 0).astype(np.float64)
    qshape = (-1,) + (1,) * src._ndarray.ndim
    ranks = qs.astype(np.float64).reshape(qshape) * last  # (len(q), ...slice shape with 1 at d)
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)  # half to even, as torch's round
    # a slice with NaN (quantile) or only NaN (nanquantile) reads its last sorted element, a NaN
    bad = nan_count > 0 if not ignore_nan else count == 0
    ranks = np.where(bad, n - 1, ranks)
    lo = np.floor(ranks).astype(np.int64)
    hi = np.minimum(lo + 1, np.where(bad, n - 1, last).astype(np.int64))
    weight = ranks - lo
    out_shape = list(src._ndarray.shape)
    out_shape[d] = 1
    full = (len(qs),) + tuple(out_shape)
    lo, hi = np.broadcast_to(lo, full), np.broadcast_to(hi, full)
    expanded = ordered.unsqueeze(0).expand(len(qs), *ordered._ndarray.shape)
    below = expanded.gather(d + 1, _indices(lo))
    above = expanded.gather(d + 1, _indices(hi))
    if interpolation == "midpoint":
        weight = np.where(weight > 0, 0.5, 0.0)
    w = wrap(np.broadcast_to(weight, full).astype(x._ndarray.dtype))
    result = below.lerp(above, w).squeeze((d + 1,))
    if keepdim:
        if dim is None:
            result = result.reshape((len(qs),) + (1,) * x._ndarray.ndim)
        elif x._ndarray.ndim:
            result = result.unsqueeze(d + 1)
    if scalar_q:
        result = result.squeeze(0)
    return result


@op()
def quantile(x, q, dim=None, keepdim=False, *, interpolation="linear"):
    return _quantile(x, q, dim, keepdim, interpolation, False, "quantile")


@op()
def nanquantile(x, q, dim=None, keepdim=False, *, interpolation="linear"):
    return _quantile(x, q, dim, keepdim, interpolation, True, "quantile")


# ---- cumulative max / min, logcumsumexp ------------------------------------------------------------
class CummaxBackward0(Node):
    __slots__ = ("dim",)
    saved_names = ("self", "indices")

    def apply(self, grads):
        x, indices = self.saved()
        if x._ndarray.ndim == 0:
            return (grads[0],)
        zeros = wrap(np.zeros(x._ndarray.shape, dtype=grads[0]._ndarray.dtype))
        return (zeros.scatter_add(self.dim, indices, grads[0]),)


class CumminBackward0(CummaxBackward0):
    __slots__ = ()


def _cumulative_extreme(x, dim, is_max):
    name = "cummax" if is_max else "cummin"
    data = x._ndarray
    d = _dim_of(x, dim)
    if data.ndim == 0:
        values, picked = data.copy(), np.zeros((), np.int64)
    else:
        # running extreme; its index moves on at ties, and at every NaN (NaN then stays the value)
        values = (np.maximum if is_max else np.minimum).accumulate(data, axis=d)
        take = data == values
        if data.dtype.kind in "fV":
            take |= np.isnan(data)
        shape = [1] * data.ndim
        shape[d] = data.shape[d]
        positions = np.arange(data.shape[d]).reshape(shape)
        picked = np.maximum.accumulate(np.where(take, positions, 0), axis=d) if data.size else \
            np.zeros(data.shape, np.int64)
    vals, inds = wrap(np.array(values, order="C")), _indices(np.array(picked, order="C"))
    if GRAD.enabled and x._requires_grad:
        node = record_op(CummaxBackward0 if is_max else CumminBackward0, (x,), vals)
        node.dim = d
        node.save(x, inds)
    return _return_type(name)(vals, inds)


@op()
def cummax(x, dim):
    refuse_complex('"cummax_cpu" not implemented for \'{dtype}\'', x)
    _rules.refuse_lowprec(x._ndarray, "cummax_cpu")
    return _cumulative_extreme(x, dim, True)


@op()
def cummin(x, dim):
    refuse_complex('"cummin_cpu" not implemented for \'{dtype}\'', x)
    _rules.refuse_lowprec(x._ndarray, "cummin_cpu")
    return _cumulative_extreme(x, dim, False)


def _reverse_logcumsumexp(a: np.ndarray, d: int) -> np.ndarray:
    return np.flip(np.logaddexp.accumulate(np.flip(a, d), axis=d), d)


class LogcumsumexpBackward0(Node):
    """grad_j = sum_{i >= j} g_i exp(x_j - r_i), with r the result."""

    __slots__ = ("dim",)
    saved_names = ("self", "result")

    def apply(self, grads):
        x, result = self.saved()
        g, d = grads[0], self.dim
        if x._ndarray.ndim == 0:
            return (g,)
        if not GRAD.enabled:
            # log space, positive and negative parts apart: no overflow for large inputs
            gd, xd, rd = g._ndarray, x._ndarray, result._ndarray
            with quiet_fp():
                pos = _reverse_logcumsumexp(np.where(gd > 0, np.log(np.abs(gd)), -np.inf) - rd, d)
                neg = _reverse_logcumsumexp(np.where(gd < 0, np.log(np.abs(gd)), -np.inf) - rd, d)
                out = np.exp(xd + pos) - np.exp(xd + neg)
            return (wrap(out.astype(gd.dtype, copy=False)),)
        # differentiable form over (i, j) pairs along the dim: exponents are <= 0 where i >= j
        n = x._ndarray.shape[d]
        xj = x.movedim(d, -1).unsqueeze(-2)         # [..., 1, j]
        ri = result.movedim(d, -1).unsqueeze(-1)    # [..., i, 1]
        gi = g.movedim(d, -1).unsqueeze(-1)
        upper = wrap(np.tril(np.ones((n, n), dtype=bool)))  # i >= j
        diff = (xj - ri).masked_fill(~upper, float("-inf"))
        return ((gi * diff.exp()).sum(-2).movedim(-1, d),)


@op()
def logcumsumexp(x, dim):
    data = _dtype.widen(x._ndarray)  # bfloat16: float32 math, one rounding back
    if data.dtype.kind not in "fc":
        raise _not_implemented("logcumsumexp_out_cpu", data)
    if data.dtype == np.float16:   # float32 accumulation, as for bfloat16
        data = data.astype(np.float32)
    d = _dim_of(x, dim)
    with quiet_fp():
        out = data.copy() if data.ndim == 0 else np.logaddexp.accumulate(data, axis=d)
    result = wrap(out if out.dtype == x._ndarray.dtype else out.astype(x._ndarray.dtype))
    if GRAD.enabled and x._requires_grad:
        node = record_op(LogcumsumexpBackward0, (x,), result)
        node.dim = d
        node.save(x, output=result)
    return result


# ---- diff / unfold ---------------------------------------------------------------------------------
@op()
def diff(x, n=1, dim=-1, prepend=None, append=None):
    if x._ndarray.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _dim_of(x, dim)
    parts = [t for t in (prepend, x, append) if t is not None]
    if builtins.any(t._ndarray.ndim != x._ndarray.ndim for t in parts):
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    out = x.clone() if len(parts) == 1 else _cat(parts, d)
    for _ in range(n):
        length = out._ndarray.shape[d]
        if length == 0:
            break
        later, earlier = out.narrow(d, 1, length - 1), out.narrow(d, 0, length - 1)
        out = later.logical_xor(earlier) if out._ndarray.dtype == np.bool_ else later - earlier
    return out


def _cat(parts, d):
    from .shape import cat
    return cat([as_tensor_arg(p) for p in parts], d)


class UnfoldBackward0(Node):
    __slots__ = ("in_shape", "dimension", "size", "step")

    def apply(self, grads):
        return (_unfold_backward(grads[0], self.in_shape, self.dimension, self.size, self.step),)


def _window_positions(count, size, step):
    return (np.arange(count)[:, None] * step + np.arange(size)[None, :]).reshape(-1)


def _unfold_backward(g: Tensor, in_shape, d, size, step):
    """Windows' gradients added back to the positions they were read from (differentiable)."""
    if len(in_shape) == 0:
        return g.reshape(())
    count = g._ndarray.shape[d]
    # [..., count (at d), ..., size] -> [..., count * size (at d), ...]
    g = g.movedim(-1, d + 1).flatten(d, d + 1)
    zeros = wrap(np.zeros(in_shape, dtype=g._ndarray.dtype))
    return zeros.index_add(d, _indices(_window_positions(count, size, step)), g)


@op(function=False)
def unfold(x, dimension, size, step):
    data = x._ndarray
    d = _wrap_dim(dimension, builtins.max(data.ndim, 1))
    length = data.shape[d] if data.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if data.ndim == 0:
        view = data.reshape(1)
    else:
        count = (length - size) // step + 1
        shape = data.shape[:d] + (count,) + data.shape[d + 1:] + (size,)
        strides = data.strides[:d] + (data.strides[d] * step,) + data.strides[d + 1:] + (data.strides[d],)
        view = np.lib.stride_tricks.as_strided(data, shape, strides, writeable=data.flags.writeable)
    return make_view(x, view, UnfoldBackward0, in_shape=data.shape, dimension=d, size=size, step=step)


# ---- unique ----------------------------------------------------------------------------------------
# torch's nodes of the unique operators: their values require grad, but have no derivative
UniqueBackward0 = underivable_node("UniqueBackward0", "_unique")
Unique2Backward0 = underivable_node("Unique2Backward0", "_unique2")
UniqueDimBackward0 = underivable_node("UniqueDimBackward0", "unique_dim")
UniqueConsecutiveBackward0 = underivable_node("UniqueConsecutiveBackward0", "unique_consecutive")


def _unique_result(x, node_cls, values, inverse, counts, return_inverse, return_counts):
    out = [wrap(values)]
    if GRAD.enabled and x._requires_grad:
        record_op(node_cls, (x,), out[0])
    if return_inverse:
        out.append(_indices(inverse))
    if return_counts:
        out.append(_indices(counts))
    return out[0] if len(out) == 1 else tuple(out)


def _unique_flat(x):
    refuse_complex('"unique" not implemented for \'{dtype}\'', x)
    data = x._ndarray
    flat = data.reshape(-1)
    if flat.dtype.kind in "fV":
        values, inverse, counts = np.unique(flat, return_inverse=True, return_counts=True, equal_nan=False)
    else:
        values, inverse, counts = np.unique(flat, return_inverse=True, return_counts=True)
    return values, inverse.reshape(data.shape), counts


@op(method=False)
def _unique(x, sorted=True, return_inverse=False):
    """torch's older operator behind ``unique``: always (values, inverse), the inverse empty unless asked."""
    values, inverse, _ = _unique_flat(x)
    return _unique_result(x, UniqueBackward0, values, inverse if return_inverse else np.zeros(0, np.int64), None,
                          True, False)


@op(method=False)
def _unique2(x, sorted=True, return_inverse=False, return_counts=False):
    """The operator ``unique`` without ``dim`` calls: always three results, those not asked for empty."""
    values, inverse, counts = _unique_flat(x)
    empty = np.zeros(0, np.int64)
    return _unique_result(x, Unique2Backward0, values, inverse if return_inverse else empty,
                          counts if return_counts else empty, True, True)


@op()
def unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    if dim is None:
        return _unique_result(x, Unique2Backward0, *_unique_flat(x), return_inverse, return_counts)
    refuse_complex('"unique" not implemented for \'{dtype}\'', x)
    data = x._ndarray
    d = _dim_of(x, dim)
    moved = np.moveaxis(data, d, 0)
    rows = moved.reshape(moved.shape[0], -1)
    # lexicographic order of the slices, then runs of equal slices
    order = np.lexsort(rows.T[::-1]) if rows.shape[1] else np.arange(rows.shape[0])
    ordered = rows[order]
    new = np.ones(len(order), dtype=bool)
    if len(order) > 1:
        new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    group = np.cumsum(new) - 1
    inverse = np.empty(len(order), np.int64)
    inverse[order] = group
    counts = np.bincount(group, minlength=int(new.sum())) if len(order) else np.zeros(0, np.int64)
    values = np.moveaxis(moved[order][new], 0, d)
    return _unique_result(x, UniqueDimBackward0, np.ascontiguousarray(values), inverse, counts, return_inverse,
                          return_counts)


@op()
def unique_consecutive(x, return_inverse=False, return_counts=False, dim=None):
    data = x._ndarray
    if data.__class__ is MetaArray:
        raise NotImplementedError("unique_consecutive: the result's shape depends on the values, which a meta "
                                  "tensor does not have")
    if dim is None:
        flat = data.reshape(-1)
        new = np.ones(flat.size, dtype=bool)
        new[1:] = flat[1:] != flat[:-1]
        group = np.cumsum(new) - 1
        counts = np.diff(np.append(np.flatnonzero(new), flat.size))
        return _unique_result(x, UniqueConsecutiveBackward0, flat[new], group.reshape(data.shape), counts,
                              return_inverse, return_counts)
    d = _dim_of(x, dim)
    moved = np.moveaxis(data, d, 0)
    rows = moved.reshape(moved.shape[0], -1)
    new = np.ones(rows.shape[0], dtype=bool)
    if rows.shape[0] > 1:
        new[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    group = np.cumsum(new) - 1
    counts = np.diff(np.append(np.flatnonzero(new), rows.shape[0]))
    values = np.ascontiguousarray(np.moveaxis(moved[new], 0, d))
    return _unique_result(x, UniqueConsecutiveBackward0, values, group, counts, return_inverse, return_counts)


# ---- counting and histograms -------------------------------------------------------------------
@op()
def bincount(x, weights=None, minlength=0):
    data = x._ndarray
    if data.dtype.kind not in "iu":
        raise _not_implemented("bincount_cpu", data)
    if data.ndim != 1 or (data.size and data.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is None:
        return _indices(np.bincount(data, minlength=minlength))
    w = weights._ndarray
    if w.shape != data.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    out_dtype = np.float32 if w.dtype == np.float32 else np.float64
    return wrap(np.bincount(data, weights=w.astype(np.float64), minlength=minlength).astype(out_dtype))


def _float_only(x, kernel):
    if x._ndarray.dtype.kind != "f":
        raise _not_implemented(kernel, x._ndarray)


def _range_of(data, lo, hi, histc):
    """The bins' range: the data's own when none is given; an empty range is widened (histc by 1 each
    side, histogram by 0.5)."""
    lo, hi = float(lo), float(hi)
    if lo == hi and data.size:
        lo, hi = float(data.min()), float(data.max())
    elif lo == hi and not histc:
        return 0.0, 1.0
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite" if histc else
                           f"torch.histogramdd: dimension 0's range [{lo:g}, {hi:g}] is not finite")
    if lo == hi:
        widen = 1.0 if histc else 0.5
        lo, hi = lo - widen, hi + widen
    return lo, hi


def _linspace(lo, hi, steps, dtype):
    """torch.linspace's bin edges, rounded as its kernel rounds them: ``start + step * i`` for the
    first half and ``end - step * (steps - 1 - i)`` for the rest, each a fused multiply-add (one
    rounding; exact rationals here)."""
    lo, hi = dtype.type(lo), dtype.type(hi)
    step = (hi - lo) / dtype.type(steps - 1) if steps > 1 else dtype.type(0)
    half = steps // 2
    start, end, exact_step = Fraction(float(lo)), Fraction(float(hi)), Fraction(float(step))
    values = [start + exact_step * i if i < half else end - exact_step * (steps - 1 - i) for i in range(steps)]
    return np.array([float(v) for v in values]).astype(dtype)


def _bin_positions(data, lo, hi, edges, search):
    """torch's histogram kernel: each element's bin (-1 outside [lo, hi] or NaN). Linear interpolation
    in the input's dtype (histc: ``edges`` None, ``search`` the bin count); histogram corrects it by a
    search of the neighbouring ``edges`` ("local") or searches all of them ("binary"). The last bin
    includes its right edge."""
    nbins = len(edges) - 1 if edges is not None else search
    inside = (data >= lo) & (data <= hi)
    with quiet_fp():
        scaled = (data - lo) * data.dtype.type(nbins) / (hi - lo)
    pos = np.clip(np.where(inside, scaled, 0), 0, nbins).astype(np.int64)
    if search == "binary":
        pos = np.searchsorted(edges, data, side="right") - 1
    elif search == "local":
        pos = _local_search(data, pos, edges)
    pos = np.where(pos >= nbins, nbins - 1, pos)
    return np.where(inside, pos, -1)


def _local_search(data, pos, edges):
    """upper_bound(edges[pos - 1 : pos + 2], value) - 1: the bin among the neighbours holding the value."""
    n_edges = len(edges)
    first = np.maximum(pos - 1, 0)
    stop = np.minimum(pos + 2, n_edges)
    result = stop.copy()
    found = np.zeros(data.shape, dtype=bool)
    for offset in range(3):
        j = first + offset
        hit = (j < stop) & ~found & (data < edges[np.minimum(j, n_edges - 1)])
        result = np.where(hit, j, result)
        found |= hit
    return result - 1


def _histogram_counts(data, pos, nbins, weights, dtype):
    keep = pos >= 0
    w = None if weights is None else weights[keep].astype(np.float64)
    return np.bincount(pos[keep], weights=w, minlength=nbins)[:nbins].astype(dtype)


@op()
def histc(x, bins=100, min=0, max=0):
    _float_only(x, "histogram_cpu")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    data = x._ndarray.reshape(-1)
    dt = data.dtype
    lo, hi = _range_of(data, min, max, True)
    pos = _bin_positions(data, dt.type(lo), dt.type(hi), None, bins)
    return wrap(_histogram_counts(data, pos, bins, None, dt))


@op()
def histogram(x, bins=100, *, range=None, weight=None, density=False):
    _float_only(x, "histogram_cpu")
    data = x._ndarray.reshape(-1)
    dt = data.dtype
    if isinstance(bins, Tensor):
        if bins._ndarray.ndim != 1:
            raise RuntimeError("torch.histogramdd: bins tensor should have one dimension, but got "
                               f"{bins._ndarray.ndim} dimensions in the bins tensor for dimension 0")
        edges = bins._ndarray.astype(dt)
        search = "binary"
    else:
        if bins <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
        if range is not None and range[0] > range[1]:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {range[0]:g} "
                               f"max {range[1]:g} for dimension 0")
        lo, hi = _range_of(data, *(range if range is not None else (0, 0)), False)
        edges = _linspace(lo, hi, bins + 1, dt)
        search = "local"
    nbins = len(edges) - 1
    w = None if weight is None else weight._ndarray.reshape(-1)
    pos = _bin_positions(data, edges[0], edges[-1], edges, search) if nbins > 0 else np.full(data.shape, -1)
    hist = _histogram_counts(data, pos, builtins.max(nbins, 0), w, dt)
    if density and nbins > 0:
        with quiet_fp():
            hist = (hist / (hist.sum() * np.diff(edges))).astype(dt)
    rt = _return_type("histogram", ("hist", "bin_edges"))
    return rt(wrap(hist), wrap(edges))


# ---- searching ------------------------------------------------------------------------------------
@op(method=False)
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of "
                               "left while right was True")
        right = side == "right"
    seq = sorted_sequence._ndarray
    scalar = not isinstance(input, Tensor)
    values = np.asanyarray(input) if scalar else input._ndarray
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter._ndarray, -1)
    how = "right" if right else "left"
    if scalar and seq.ndim > 1:
        raise RuntimeError("torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension "
                           f"is 1, but we got boundaries tensor dim({seq.ndim}) and input value's dim(0) numel(1)")
    if seq.ndim <= 1:
        out = np.searchsorted(seq, values, side=how)
    else:
        if scalar or seq.shape[:-1] != values.shape[:-1]:
            raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                               "dimensions of boundaries tensor and input value tensor must match, but we got "
                               f"boundaries tensor {list(seq.shape)} and input value tensor {list(values.shape)}")
        rows, vals = seq.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1])
        out = np.stack([np.searchsorted(r, v, side=how) for r, v in zip(rows, vals)]).reshape(values.shape) \
            if rows.shape[0] else np.zeros(values.shape, np.int64)
    return wrap(np.asanyarray(out, dtype=np.int32 if out_int32 else np.int64))


@op(method=False)
def bucketize(input, boundaries, *, out_int32=False, right=False):
    if boundaries._ndarray.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries._ndarray.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


@op(method=False)
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    a = elements._ndarray if isinstance(elements, Tensor) else np.asanyarray(elements)
    b = test_elements._ndarray if isinstance(test_elements, Tensor) else np.asanyarray(test_elements)
    return wrap(np.asanyarray(np.isin(a, b, invert=invert)))


@op(method=False)
def unravel_index(indices, shape):
    if not isinstance(indices, Tensor):
        indices = as_tensor_arg(indices)
    if indices._ndarray.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got torch.{indices._ndarray.dtype.name}")
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if builtins.any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(tuple(shape)))
    flat = indices._ndarray.astype(np.int64)
    out = []
    for size in reversed(shape):
        out.append(np.remainder(flat, size) if size else np.zeros_like(flat))
        flat = np.floor_divide(flat, size) if size else flat
    return tuple(_indices(o) for o in reversed(out))


__all__ = module_all(globals())
