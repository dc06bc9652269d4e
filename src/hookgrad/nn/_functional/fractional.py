"""Fractional max pooling (2-d and 3-d) with torch's window placement.

Given one sample ``u`` in [0, 1) per (batch, channel, spatial dim), torch starts window ``i`` of
``n_out`` at ``int((i + u) * alpha) - int(u * alpha)`` with ``alpha = (n_in - k) / (n_out - 1)``
computed in the input's floating dtype, and the last window at ``n_in - k``; the maximum of each
window is taken (the last NaN wins where there is one). The windows are placed here exactly so,
and the output is a gather of the input at the maxima: its gradient (and double backward) is the
gather's.
"""
from __future__ import annotations

import numpy as np

import hookgrad
from ..._tensor import wrap
from .conv import _tuple

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
           "fractional_max_pool3d_with_indices"]

_DIM_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _starts(sample, n_in, n_out, k, dtype):
    """Window starts of one spatial dim (torch's generate_intervals, in the input's dtype)."""
    starts = np.empty(n_out, dtype=np.int64)
    if n_out > 1:
        alpha = dtype.type(n_in - k) / dtype.type(n_out - 1)
        u = dtype.type(sample)
        i = np.arange(n_out - 1).astype(dtype)
        starts[:-1] = ((i + u) * alpha).astype(np.int64) - np.int64((u * alpha))
    if n_out > 0:
        starts[-1] = n_in - k
    return starts


def _plane_argmax(plane, starts, kernel):
    """Flat in-plane index of the maximum of each window of one (spatial...) plane."""
    nd = len(kernel)
    grids = []
    for d in range(nd):
        pos = starts[d][:, None] + np.arange(kernel[d])  # (n_out_d, k_d)
        shape = [1] * (2 * nd)
        shape[d], shape[nd + d] = pos.shape[0], pos.shape[1]
        grids.append(pos.reshape(shape))
    flat = np.ravel_multi_index(tuple(np.broadcast_arrays(*grids)), plane.shape)
    out_shape = flat.shape[:nd]
    flat = flat.reshape(out_shape + (-1,))
    values = plane.reshape(-1)[flat]
    best = np.argmax(values, axis=-1)
    nan = np.isnan(values)
    if nan.any():
        last_nan = values.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
        best = np.where(nan.any(-1), last_nan, best)
    return np.take_along_axis(flat, best[..., None], -1)[..., 0]


def _fractional(input, kernel_size, output_size, output_ratio, return_indices, samples, nd):
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if nd == 2 and len(output_ratio) > nd:  # torch's 2-d check: a bare float raises TypeError
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * nd
        output_size = [int(input.shape[-nd + d] * ratio[d]) for d in range(nd)]
    kernel = _tuple(kernel_size, nd)
    out = _tuple(output_size, nd)
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    n, c = x.shape[0], x.shape[1]
    spatial = tuple(x.shape[2:])
    if samples is None:
        samples = hookgrad.rand(n, c, nd, dtype=input.dtype)
    if samples.dim() != 3 or samples.shape[0] < n:
        raise RuntimeError("Expect _random_samples to be 3D tensor, and have the first dim at least as large as the "
                           "batch size")
    if samples.shape[1] != c:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {samples.shape[2]}.")
    for d in range(nd):
        if out[d] + kernel[d] - 1 > spatial[d]:
            dim = _DIM_NAMES[nd][d]
            raise RuntimeError(f"{name}(): pool {dim} {kernel[d]} too large relative to input {dim} {spatial[d]}")
    data = x._ndarray
    u = samples._ndarray
    dtype = data.dtype if data.dtype.kind == "f" else np.dtype(np.float32)
    indices = np.empty((n, c) + out, dtype=np.int64)
    # torch's samples are ordered last spatial dim first for 2-d (width, height), first dim first for 3-d
    order = (1, 0) if nd == 2 else (0, 1, 2)
    for b in range(n):
        for ch in range(c):
            starts = [_starts(u[b, ch, order[d]], spatial[d], out[d], kernel[d], dtype) for d in range(nd)]
            indices[b, ch] = _plane_argmax(data[b, ch], starts, kernel)
    idx = wrap(indices)
    result = x.flatten(2).gather(2, idx.flatten(2)).reshape(n, c, *out)
    if not batched:
        result, idx = result.squeeze(0), idx.squeeze(0)
    return (result, idx) if return_indices else result


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, True, _random_samples, 2)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 2)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, True, _random_samples, 3)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 3)
