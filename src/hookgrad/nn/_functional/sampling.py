"""Spatial sampling (``affine_grid``, ``grid_sample``) and ``gumbel_softmax``, composed of
differentiable tensor ops: gradients reach the input and the sampling grid (through the
unnormalized coordinates, the padding rule and the interpolation weights), as in torch."""
from __future__ import annotations

import warnings

import numpy as np

import hookgrad
from ..._ops.linalg import bmm as _bmm
from ..._tensor import wrap

__all__ = ["affine_grid", "grid_sample", "gumbel_softmax"]

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


# ---- gumbel softmax ---------------------------------------------------------------------------------
def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """Softmax of ``(logits + Gumbel noise) / tau``; ``hard``: the one-hot argmax in the forward, the
    soft sample's gradient in the backward."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", UserWarning, stacklevel=2)
    gumbels = -hookgrad.empty_like(logits).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = hookgrad.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ---- affine grid ------------------------------------------------------------------------------------
def _base_coords(steps, align_corners, dtype):
    if steps <= 1:
        return np.zeros(steps, dtype=dtype)
    coords = np.linspace(-1, 1, steps, dtype=np.float64)
    if not align_corners:
        coords = coords * (steps - 1) / steps
    return coords.astype(dtype)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of a batch of affine maps: (N, H, W, 2) for a 4-D size, (N, D, H, W, 3) for 5-D."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: theta batch size {theta.shape[0]} does not match size[0] {size[0]}")
    dt = theta._ndarray.dtype
    axes = [_base_coords(s, align_corners, dt) for s in spatial]  # (D,) H, W
    mesh = np.meshgrid(*axes, indexing="ij")
    # the last coordinate is x (width), then y (height), then z (depth), then the constant 1
    base = np.stack(list(mesh[::-1]) + [np.ones_like(mesh[0])], axis=-1)
    n = size[0]
    points = wrap(np.ascontiguousarray(np.broadcast_to(base.reshape(1, -1, base.shape[-1]),
                                                        (n, base[..., 0].size, base.shape[-1]))))
    grid = _bmm(points, theta.transpose(1, 2))  # the op itself: torch's affine_grid is one kernel
    return grid.reshape(n, *spatial, len(spatial))


# ---- grid sample --------------------------------------------------------------------------------------
def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, twice_low, twice_high):
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    dist = (coord - low).abs()
    extra = dist.fmod(span)
    flips = (dist / span).floor()
    even = flips.fmod(2) == 0
    return hookgrad.where(even, extra + low, span - extra + low)


def _source_coords(coord, size, padding_mode, align_corners):
    ix = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        ix = ix.clamp(0, size - 1)
    elif padding_mode == "reflection":
        ix = _reflect(ix, 0, 2 * (size - 1)) if align_corners else _reflect(ix, -1, 2 * size - 1)
        ix = ix.clamp(0, size - 1)
    return ix


def _gather(flat_input, positions, sizes, out_shape):
    """``input`` at integer ``positions`` (one tensor per spatial dim, each shaped like the grid
    without its last dim), zero where any coordinate lies outside."""
    inside = np.ones(positions[0].shape, dtype=bool)
    flat_index = np.zeros(positions[0].shape, dtype=np.int64)
    for pos, size in zip(positions, sizes):
        inside &= (pos >= 0) & (pos < size)
        flat_index = flat_index * size + np.clip(pos, 0, size - 1)
    n, c = flat_input.shape[:2]
    index = wrap(np.ascontiguousarray(np.broadcast_to(flat_index.reshape(n, 1, -1), (n, c, flat_index[0].size))))
    values = flat_input.gather(2, index).reshape(n, c, *out_shape)
    mask = wrap(inside.reshape(n, 1, *out_shape).astype(flat_input._ndarray.dtype))
    return values * mask


_CUBIC_A = -0.75  # torch's cubic convolution coefficient


def _cubic_weights(t):
    """The four cubic-convolution weights of the taps at -1, 0, 1, 2 around a fraction ``t``."""
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _tap_positions(pos, size, padding_mode, align_corners):
    """Integer tap positions after torch's padding rule (applied to the taps, in floating point)."""
    p = pos.astype(np.float64)
    if padding_mode == "border":
        p = np.clip(p, 0, size - 1)
    elif padding_mode == "reflection":
        low, high = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        if low == high:
            p = np.zeros_like(p)
        else:
            half_low, span = low / 2, (high - low) / 2
            dist = np.abs(p - half_low)
            extra = np.fmod(dist, span)
            flips = np.floor(dist / span)
            p = np.where(np.fmod(flips, 2) == 0, extra + half_low, span - extra + half_low)
        p = np.clip(p, 0, size - 1)
    return np.trunc(p).astype(np.int64)


def _bicubic(flat, grid, sizes, out_shape, padding_mode, align_corners):
    h, w = sizes
    ix = _unnormalize(grid[..., 0], w, align_corners)
    iy = _unnormalize(grid[..., 1], h, align_corners)
    x0, y0 = np.floor(ix._ndarray).astype(np.int64), np.floor(iy._ndarray).astype(np.int64)
    wx = _cubic_weights(ix - wrap(x0.astype(ix._ndarray.dtype)))
    wy = _cubic_weights(iy - wrap(y0.astype(iy._ndarray.dtype)))
    out = None
    for i in range(4):
        rows = _tap_positions(y0 - 1 + i, h, padding_mode, align_corners)
        row = None
        for j in range(4):
            cols = _tap_positions(x0 - 1 + j, w, padding_mode, align_corners)
            term = _gather(flat, [rows, cols], sizes, out_shape) * wx[j].unsqueeze(1)
            row = term if row is None else row + term
        term = row * wy[i].unsqueeze(1)
        out = term if out is None else out + term
    return out


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """``input`` sampled at the normalized ``grid`` locations (x, y[, z] in [-1, 1])."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, UserWarning, stacklevel=2)
        align_corners = False
    nd = input.dim() - 2
    if nd not in (2, 3) or grid.dim() != input.dim():
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    if mode == "bicubic" and nd != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    sizes = tuple(input.shape[2:])  # (D,) H, W
    out_shape = tuple(grid.shape[1:-1])
    flat = input.flatten(2)
    if mode == "bicubic":
        return _bicubic(flat, grid, sizes, out_shape, padding_mode, align_corners)
    # grid's last dim is x (width) first: coordinate k samples spatial dim nd - 1 - k
    coords = [_source_coords(grid[..., nd - 1 - d], sizes[d], padding_mode, align_corners) for d in range(nd)]
    if mode == "nearest":
        positions = [np.round(c._ndarray).astype(np.int64) for c in coords]  # half to even, as torch's nearbyint
        values = _gather(flat, positions, sizes, out_shape)
        # the grid gets torch's zero gradient: joined through the branch of a where that is never taken
        taken = wrap(np.ones((1,) * values.dim(), dtype=bool))
        return hookgrad.where(taken, values, sum(c for c in coords).unsqueeze(1))
    lows = [np.floor(c._ndarray).astype(np.int64) for c in coords]
    fracs = [c - wrap(low.astype(c._ndarray.dtype)) for c, low in zip(coords, lows)]
    out = None
    for corner in range(2 ** nd):
        offsets = [(corner >> (nd - 1 - d)) & 1 for d in range(nd)]
        weight = None
        for d in range(nd):
            w = fracs[d] if offsets[d] else 1 - fracs[d]
            weight = w if weight is None else weight * w
        values = _gather(flat, [low + off for low, off in zip(lows, offsets)], sizes, out_shape)
        term = values * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out
