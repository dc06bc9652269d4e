"""torch.* functions of the breadth pass: ``hash_tensor``, ``segment_reduce``, ``histogramdd``,
``from_file`` and the low-rank / iterative linear algebra of ``torch._lowrank`` and ``torch._lobpcg``
(``svd_lowrank``, ``pca_lowrank``, ``lobpcg``), the latter composed of differentiable hookgrad ops.
"""
from __future__ import annotations

import builtins
from collections import namedtuple

import numpy as np

from .. import _dtype
from .._tensor import Tensor, wrap
from ..autograd.graph import Node
from . import _dtype_rules as _rules
from ._base import GRAD, as_tensor_arg
from ._declare import module_all, op, record_op

# ---- hash_tensor ---------------------------------------------------------------------------------
_XOR = np.bitwise_xor


def _bits64(data: np.ndarray) -> np.ndarray:
    """Each element widened to its 64-bit float or integer type, then read as uint64 bits."""
    if data.dtype.kind == "b":
        return data.astype(np.uint64)
    if _dtype.is_floating_np(data.dtype):
        return _dtype.widen(data).astype(np.float64).view(np.uint64)
    if data.dtype.kind == "u":
        return data.astype(np.uint64)
    return data.astype(np.int64).view(np.uint64)


@op()
def hash_tensor(input, dim=None, *, keepdim=False, mode=0):
    """The xor of the 64-bit patterns of the elements (over ``dim``, or all), as a uint64 tensor."""
    x = as_tensor_arg(input)
    if mode != 0:
        raise RuntimeError(f"hash_tensor only supports mode=0 (xor_reduction), got {mode}")
    bits = _bits64(np.ascontiguousarray(x._ndarray))
    axes = None if dim is None or dim == () or dim == [] else tuple(
        d % max(bits.ndim, 1) for d in ((dim,) if isinstance(dim, int) else dim))
    if bits.size == 0:
        shape = () if axes is None else tuple(1 if i in axes else s for i, s in enumerate(bits.shape)
                                              if keepdim or i not in axes)
        return wrap(np.zeros(shape, dtype=np.uint64))
    out = _XOR.reduce(bits, axis=axes, keepdims=keepdim) if axes is not None else _XOR.reduce(bits.reshape(-1))
    if axes is None and keepdim:
        out = np.reshape(out, (1,) * bits.ndim)
    return wrap(np.asanyarray(out, dtype=np.uint64))


# ---- segment_reduce ---------------------------------------------------------------------------------
_SEGMENT_REDUCTIONS = {"sum": "sum", "mean": "mean", "max": "max", "amax": "max", "min": "min", "amin": "min",
                       "prod": "prod"}


class SegmentReduceBackward0(Node):
    """Backward of ``segment_reduce`` (NumPy; torch has no double backward for it either)."""

    __slots__ = ("kind", "segments", "axis", "initial", "data_shape")

    def apply(self, grads):
        grad = grads[0]._ndarray
        data, result = self.saved()
        x = np.moveaxis(data._ndarray, self.axis, -1)
        r = np.moveaxis(result._ndarray, self.axis, -1)
        g = np.moveaxis(grad, self.axis, -1)
        out = np.zeros_like(x)
        for lead, bounds in self.segments:
            for seg, (lo, hi) in enumerate(bounds):
                if hi == lo:
                    continue
                members = x[lead + (Ellipsis, slice(lo, hi))]
                gs = g[lead + (Ellipsis, seg)][..., None]
                if self.kind == "sum":
                    part = np.broadcast_to(gs, members.shape)
                elif self.kind == "mean":
                    part = np.broadcast_to(gs / (hi - lo), members.shape)
                elif self.kind in ("max", "min"):
                    rs = r[lead + (Ellipsis, seg)][..., None]
                    hit = members == rs
                    part = np.where(hit, gs / np.maximum(hit.sum(-1, keepdims=True), 1), 0)
                else:  # prod: the product of the others (and of the initial value)
                    part = gs * _product_of_others(members, self.initial)
                out[lead + (Ellipsis, slice(lo, hi))] = part
        return (wrap(np.ascontiguousarray(np.moveaxis(out, -1, self.axis))),)


def _product_of_others(members, initial):
    n = members.shape[-1]
    ones = np.ones(members.shape[:-1] + (1,), dtype=members.dtype)
    before = np.cumprod(np.concatenate([ones, members[..., :-1]], -1), -1)
    after = np.flip(np.cumprod(np.concatenate([ones, np.flip(members[..., 1:], -1)], -1), -1), -1)
    scale = 1 if initial is None else initial
    return (before * after * scale)[..., :n]


def _segment_bounds(lengths: np.ndarray):
    ends = np.cumsum(lengths, -1)
    return list(zip((ends - lengths).tolist(), ends.tolist()))


@op(method=False)
def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """Reduce consecutive segments of ``data`` along ``axis`` (their sizes given by ``lengths`` or
    ``offsets``) with sum, mean, max/amax, min/amin or prod; empty segments give ``initial`` or the
    reduction's identity (NaN for mean)."""
    if reduce not in _SEGMENT_REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    kind = _SEGMENT_REDUCTIONS[reduce]
    data = as_tensor_arg(data)
    if not _dtype.is_inexact_np(data._ndarray.dtype):
        _rules.refuse_kernel(data._ndarray, _rules.INTEGRAL, "_segment_reduce_cpu")
    if lengths is not None:
        sizes = np.asanyarray(as_tensor_arg(lengths)._ndarray, dtype=np.int64)
    elif offsets is not None:
        bounds = np.asanyarray(as_tensor_arg(offsets)._ndarray, dtype=np.int64)
        sizes = np.diff(bounds, axis=-1)
    else:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    axis = axis % data._ndarray.ndim
    if axis != sizes.ndim - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of lengths but got {axis}.")
    if (sizes < 0).any():
        raise RuntimeError("lengths contains negative value!")
    if not unsafe and (sizes.sum(-1) != data._ndarray.shape[axis]).any():
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                           "data.size(lengths.dim()-1) when !unsafe.")
    # the reduced axis moved last: (lead..., rest..., axis), where lengths is (lead..., segments)
    x = np.moveaxis(_dtype.widen(data._ndarray), axis, -1)
    lead_shape = sizes.shape[:-1]
    n_segments = sizes.shape[-1]
    out = np.empty(x.shape[:-1] + (n_segments,), dtype=x.dtype)
    segments = []
    identity = {"sum": 0.0, "mean": np.nan, "max": -np.inf, "min": np.inf, "prod": 1.0}[kind]
    for lead in np.ndindex(*lead_shape) if lead_shape else [()]:
        bounds = _segment_bounds(sizes[lead])
        segments.append((lead, bounds))
        for seg, (lo, hi) in enumerate(bounds):
            members = x[lead + (Ellipsis, slice(lo, hi))]
            if hi == lo:
                value = identity if initial is None else initial
                out[lead + (Ellipsis, seg)] = value
                continue
            if kind == "sum":
                value = members.sum(-1) + (0 if initial is None else initial)
            elif kind == "mean":
                value = (members.sum(-1) + (0 if initial is None else initial)) / (hi - lo)
            elif kind == "max":
                value = members.max(-1) if initial is None else np.maximum(members.max(-1), initial)
            elif kind == "min":
                value = members.min(-1) if initial is None else np.minimum(members.min(-1), initial)
            else:
                value = members.prod(-1) * (1 if initial is None else initial)
            out[lead + (Ellipsis, seg)] = value
    result = wrap(_dtype.narrow_to(np.ascontiguousarray(np.moveaxis(out, -1, axis)), data._ndarray.dtype))
    if GRAD.enabled and data._requires_grad:
        node = record_op(SegmentReduceBackward0, (data,), result)
        node.kind, node.segments, node.axis, node.initial = kind, segments, axis, initial
        node.save(data, output=result)
    return result


# ---- histogramdd ---------------------------------------------------------------------------------------
_histogramdd_result = namedtuple("histogramdd", ["hist", "bin_edges"])


@op(method=False)
def histogramdd(input, bins, *, range=None, weight=None, density=False, out=None):
    """A D-dimensional histogram of the points in the last dimension of ``input`` (``bins``: one
    count for every dimension, a count per dimension, or the edges per dimension)."""
    x = as_tensor_arg(input)
    if not _dtype.is_floating_np(x._ndarray.dtype):
        _rules.refuse_kernel(x._ndarray, _rules.INTEGRAL, "histogramdd")
    points = x._ndarray.reshape(-1, x._ndarray.shape[-1])
    dims = points.shape[-1]
    if isinstance(bins, int):
        np_bins = [bins] * dims
    else:
        np_bins = [np.asanyarray(b._ndarray) if isinstance(b, Tensor) else b for b in bins]
    np_range = None if range is None else [(range[2 * i], range[2 * i + 1]) for i in builtins.range(dims)]
    w = None if weight is None else as_tensor_arg(weight)._ndarray.reshape(-1)
    hist, edges = np.histogramdd(points, bins=np_bins, range=np_range, weights=w, density=density)
    dt = x._ndarray.dtype
    return _histogramdd_result(wrap(hist.astype(dt)), tuple(wrap(np.asanyarray(e).astype(dt)) for e in edges))


@op(method=False)
def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=False):
    """A 1-D tensor of ``size`` elements read from ``filename`` through a memory map: with ``shared``
    changes reach the file; otherwise they stay private to this tensor."""
    import os
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
    nbytes = size * dt.itemsize
    if shared:
        if not os.path.exists(filename) or os.path.getsize(filename) < nbytes:
            with open(filename, "ab") as fh:  # torch grows a shared file to the size asked
                fh.truncate(nbytes)
    elif os.path.getsize(filename) < nbytes:
        raise RuntimeError(f"unable to mmap {nbytes} bytes from file <{filename}>: Cannot allocate memory (12)")
    if size == 0:
        return wrap(np.zeros(0, dtype=dt.np))
    mapped = np.memmap(filename, dtype=dt.np, mode="r+" if shared else "c", shape=(size,))
    return wrap(mapped)


# ---- low-rank decompositions (torch._lowrank) -----------------------------------------------------------
def _hookgrad():
    import hookgrad
    return hookgrad


def _approximate_basis(a, q, niter, m=None):
    """An orthonormal basis of (approximately) the range of ``a - m``: a randomized range finder
    with ``niter`` power iterations (Halko, Martinsson and Tropp, 2011, algorithm 4.4)."""
    hg = _hookgrad()
    n = a.shape[-1]
    r = hg.randn(*a.shape[:-2], n, q, dtype=a.dtype)
    centered = a if m is None else a - m
    basis = hg.linalg.qr(centered @ r).Q
    for _ in builtins.range(niter):
        basis = hg.linalg.qr(centered.mT @ basis).Q
        basis = hg.linalg.qr(centered @ basis).Q
    return basis


@op(method=False)
def svd_lowrank(A, q=6, niter=2, M=None):
    """``(U, S, V)`` of a rank-``q`` approximation of ``A - M`` by a randomized SVD."""
    hg = _hookgrad()
    a = as_tensor_arg(A)
    q = 6 if q is None else q
    rows, cols = a.shape[-2], a.shape[-1]
    if M is not None:
        M = as_tensor_arg(M).broadcast_to(a.shape)
    if rows < cols:  # find the range of the transpose, the smaller one
        basis = _approximate_basis(a.mT, q, niter, None if M is None else M.mT)
        u, s, vh = hg.linalg.svd((a if M is None else a - M) @ basis, full_matrices=False)
        return u, s, basis @ vh.mT
    basis = _approximate_basis(a, q, niter, M)
    b = basis.mT @ (a if M is None else a - M)
    u, s, vh = hg.linalg.svd(b, full_matrices=False)
    return basis @ u, s, vh.mT


@op(method=False)
def pca_lowrank(A, q=None, center=True, niter=2):
    """``(U, S, V)`` of the principal components of ``A`` (its rows are the observations)."""
    a = as_tensor_arg(A)
    rows, cols = a.shape[-2], a.shape[-1]
    q = min(6, rows, cols) if q is None else q
    if not 0 <= q <= min(rows, cols):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(rows, cols)}")
    if niter < 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(a, q, niter=niter)
    return svd_lowrank(a - a.mean(-2, keepdim=True), q, niter=niter)


@op(method=False)
def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
           tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """The ``k`` largest (or smallest) eigenpairs of the symmetric generalized problem ``A x = l B x``.

    torch iterates LOBPCG until its residuals fall under ``tol``; hookgrad solves the problem directly
    (Cholesky reduction and a dense symmetric eigensolver), which gives the eigenpairs LOBPCG converges
    to, with gradients through ``A`` and ``B`` as torch's. ``X``, ``iK``, ``niter``, ``tol``, ``method``,
    ``tracker`` and the ortho parameters are checked and otherwise have nothing to tune.
    """
    hg = _hookgrad()
    a = as_tensor_arg(A)
    if a.shape[-2] != a.shape[-1]:
        raise AssertionError(f"A must be square, got shape {a.shape}")
    if B is not None and tuple(B.shape) != tuple(a.shape):
        raise AssertionError(f"A and B must have same shape, got {a.shape} vs {B.shape}")
    size = a.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if size < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={size}) is smaller than "
                         f"3 x the number of requested eigenpairs (={n})")
    if method not in (None, "ortho", "basic"):
        raise ValueError(f"LOBPCG method must be 'basic' or 'ortho', got {method!r}")
    largest = True if largest is None else largest
    if not _dtype.is_inexact_np(a._ndarray.dtype) or a.dtype.name == "bfloat16":
        # torch multiplies A with a float32 starting basis
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_C_TYPE_NAMES.get(a.dtype.name, a.dtype.name)} "
                           "!= float")
    if a.dtype.name in _rules.HALF:
        if tol is None:
            raise KeyError(a.dtype)  # torch looks the default tolerance up for float32/float64 only
        _rules.refuse_kernel(a._ndarray, _rules.HALF, "cholesky_cpu")
    if B is not None and GRAD.enabled and (a.requires_grad or B.requires_grad):
        # torch's backward has no formula for B != I: the same refusal when it runs
        return _lobpcg_no_backward().apply(a, B, k, largest)
    return _lobpcg_direct(a, B, k, largest)


def _lobpcg_direct(a, B, k, largest):
    hg = _hookgrad()
    a_sym = (a + a.mT) / 2
    if B is None:
        values, vectors = hg.linalg.eigh(a_sym)
    else:
        lower = hg.linalg.cholesky((B + B.mT) / 2)
        reduced = hg.linalg.solve_triangular(lower, hg.linalg.solve_triangular(lower, a_sym, upper=False).mT,
                                             upper=False)
        values, w = hg.linalg.eigh((reduced + reduced.mT) / 2)
        vectors = hg.linalg.solve_triangular(lower.mT, w, upper=True)
    if largest:
        values, vectors = values.flip(-1), vectors.flip(-1)
    return values[..., :k], vectors[..., :k]


_LOBPCG_FUNCTION = []
# the C++ type names in torch's matmul dtype error
_C_TYPE_NAMES = {"bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                 "uint8": "unsigned char", "bool": "bool"}


def _lobpcg_no_backward():
    if not _LOBPCG_FUNCTION:
        from ..autograd import Function
        from ..autograd.grad_mode import no_grad

        class LOBPCGAutogradFunction(Function):
            @staticmethod
            def forward(ctx, a, b, k, largest):
                with no_grad():
                    return _lobpcg_direct(a, b, k, largest)

            @staticmethod
            def backward(ctx, *grads):
                raise ValueError("lobpcg.backward does not support backward with B != I yet.")

        _LOBPCG_FUNCTION.append(LOBPCGAutogradFunction)
    return _LOBPCG_FUNCTION[0]




# ---- slice_inverse -------------------------------------------------------------------------------------------
class SliceInverseBackward0(Node):
    """The slice's part of the gradient goes to ``input``, the rest to ``src``."""

    __slots__ = ("dim", "start", "end", "step")

    def apply(self, grads):
        g = grads[0]
        index = (slice(None),) * self.dim + (slice(self.start, self.end, self.step),)
        to_input = g[index] if self._should_compute_output(0) else None
        to_src = None
        if self._should_compute_output(1):
            end = g.shape[self.dim] if self.end is None else self.end
            to_src = g.slice_scatter(g[index] * 0, self.dim, self.start, end, self.step)
        return to_input, to_src


@op()
def slice_inverse(input, src, dim=0, start=None, end=None, step=1):
    """The view that ``input`` is the ``[start:end:step]`` slice (along ``dim``) of: ``src``'s sizes and
    strides over ``input``'s memory (torch's inverse of ``slice`` for views of a common base)."""
    from .views import make_view
    x, src = as_tensor_arg(input), as_tensor_arg(src)
    item = x._ndarray.itemsize
    dim = dim % max(src._ndarray.ndim, 1)
    start = 0 if start is None else (start + src.shape[dim] if start < 0 else start)
    strides = [s // src._ndarray.itemsize for s in src._ndarray.strides]
    base = x._ndarray if x._base_value is None else x._base_value._ndarray
    here = (x._ndarray.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // item
    offset = here - start * strides[dim]
    extent = 1 + sum((n - 1) * s for n, s in zip(src.shape, strides)) if all(src.shape) else 0
    if offset < 0 or offset + extent > base.size:
        raise RuntimeError(f"setStorage: sizes {list(src.shape)}, strides {strides}, storage offset {max(offset, 0)}, "
                           f"and itemsize {item} requiring a storage size of {(max(offset, 0) + extent) * item} are "
                           f"out of bounds for storage of size {base.size * item}")
    flat = np.lib.stride_tricks.as_strided(base.reshape(-1) if base.flags.c_contiguous else base.ravel(),
                                           (base.size,), (item,))
    data = np.lib.stride_tricks.as_strided(flat[offset:], tuple(src.shape), tuple(s * item for s in strides),
                                           writeable=True)
    out = make_view(x, data)
    if GRAD.enabled and (x._requires_grad or src._requires_grad):
        node = record_op(SliceInverseBackward0, (x, src), out)
        node.dim, node.start, node.end, node.step = dim, start, end, step
    return out


__all__ = module_all(globals())
