"""Pooling (max, average, adaptive average) and padding, on strided NumPy windows.

Each op is linear in its input once the window choice is known (max pooling picks its indices in
the forward), so each is a ``linear_map`` with a NumPy forward and a NumPy adjoint.
"""
from __future__ import annotations

import functools

import numpy as np

from ..._dtype import is_floating_np, narrow_to, widen
from ..._tensor import Tensor, wrap
from .conv import _tuple, windows
from .linear_ops import linear_map, linear_map_nodes, saved_arg
from ..._ops._base import GRAD
from ...autograd.graph import SavedTensor, saved_tensor_hooks_active


# ---- geometry --------------------------------------------------------------------------------
# each op's node classes, with torch's names (the backward of the backward is the forward map again)
# (args: kernel_size, stride, padding, dilation or count_include_pad, ceil_mode, the _MaxGeom or divisor_override)
MaxPool2DWithIndicesBackward0 = linear_map_nodes(
    "MaxPool2DWithIndicesBackward0", "MaxPool2DWithIndicesBackwardBackward0", saves_input=True,
    saved_values={"kernel_size": saved_arg(0), "stride": saved_arg(1), "padding": saved_arg(2),
                  "dilation": saved_arg(3), "ceil_mode": saved_arg(4),
                  "result1": lambda n: wrap(n.args[5].flat_indices())})
# with a second saved tensor (the indices, see _max_pool_result) the backward scatters by them
MaxPool2DWithIndicesBackward0.adjoint_at_saved = staticmethod(lambda node, g, indices: _max_scatter_at(
    g, indices, node.args[5]))
AvgPool2DBackward0 = linear_map_nodes(
    "AvgPool2DBackward0", "AvgPool2DBackwardBackward0", saves_input=True,
    saved_values={"kernel_size": saved_arg(0), "stride": saved_arg(1), "padding": saved_arg(2),
                  "count_include_pad": saved_arg(3), "ceil_mode": saved_arg(4), "divisor_override": saved_arg(5)})
AdaptiveAvgPool2DBackward0 = linear_map_nodes("AdaptiveAvgPool2DBackward0", "AdaptiveAvgPool2DBackwardBackward0",
                                              saves_input=True)
ConstantPadNdBackward0 = linear_map_nodes("ConstantPadNdBackward0", "ConstantPadNdBackwardBackward0",
                                          saved_values={"pad": saved_arg(0)})


def _listed(v):
    return v if isinstance(v, (tuple, list)) else (v,)


def _pool_out(size, k, s, p, d, ceil_mode):
    """Output length of a pooling window sweep (torch's rule, ceil_mode included)."""
    num = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_args(name, x, kernel_size, stride, padding, dilation, nd=2):
    k = _tuple(kernel_size, nd)
    s = _tuple(stride, nd) if stride is not None and stride != [] and stride != () else k
    p = _tuple(padding, nd)
    d = _tuple(dilation, nd)
    for kk, pp, dd in zip(k, p, d):
        if pp * 2 > (dd * (kk - 1) + 1) if name == "max" else pp * 2 > kk:
            if name == "max":
                raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pp}, "
                                   f"kernel_size={kk} and dilation={dd}")
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pp}, "
                               f"kernel_size={kk} and dilation={dd}")
    return k, s, p, d


def _check_dims(x, nd, name):
    """torch's rank check of each pooling op, in that op's own words (they differ from op to op)."""
    shape = x._ndarray.shape
    ranks_ok = len(shape) in (nd + 1, nd + 2)
    if name in ("avg_pool1d", "adaptive_avg_pool1d") and not ranks_ok:
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {len(shape)}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for {name})")
    if name == "adaptive_avg_pool2d" and not ranks_ok:
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {list(shape)}")
    empty_inner = ranks_ok and any(n == 0 for n in shape[len(shape) - nd - 1:])
    if name == "max_pool2d" and not ranks_ok:
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    if not ranks_ok or (empty_inner and name in ("max_pool1d", "max_pool2d", "avg_pool2d")):
        prefix = "max_pool1d: " if name == "max_pool1d" else ""
        raise RuntimeError(f"{prefix}Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with optional 0 dim batch "
                           f"size for input, but got:{list(shape)}")


def _as4(a):
    """(batched 4-D array, was_unbatched)."""
    return (a[None], True) if a.ndim == 3 else (a, False)


# ---- max pooling -----------------------------------------------------------------------------
class _MaxGeom:
    """Where each output's window starts, and which kernel offset won.

    The winner is kept either as ``arg`` (the kernel offset, one byte per output) or, on the 2x2
    fast path, as ``pair``: two boolean masks (right column won in each row pair; bottom row won),
    from which ``arg`` is derived only if someone asks (indices, double backward).
    """

    __slots__ = ("kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw", "eb", "er", "ho", "wo", "shape", "_arg", "pair",
                 "_idx")

    @property
    def arg(self):
        if self._arg is None:
            col_right, row_bottom = self.pair
            top, bottom = col_right[..., 0::2, :], col_right[..., 1::2, :]
            right = top ^ (row_bottom & (top ^ bottom))  # the right-column flag of the winning row
            self._arg = (row_bottom.astype(np.uint8) << 1) | right
        return self._arg

    def flat_indices(self):
        """torch's indices: the winner's position in the (unpadded) input plane, row-major."""
        if self._idx is None:
            h, w = self.shape[-2:]
            ki, kj = np.divmod(self.arg.astype(np.int64), self.kw)
            rows = np.arange(self.ho).reshape(-1, 1) * self.sh - self.ph + ki * self.dh
            cols = np.arange(self.wo) * self.sw - self.pw + kj * self.dw
            self._idx = rows * w + cols
        return self._idx


def _padded_planes(a, g, fill):
    n, c, h, w = a.shape
    if not (g.ph or g.pw or g.eb or g.er):
        return a
    out = np.full((n, c, h + 2 * g.ph + g.eb, w + 2 * g.pw + g.er), fill, dtype=a.dtype)
    out[:, :, g.ph:g.ph + h, g.pw:g.pw + w] = a
    return out


def _max_gather(a, geom):
    """The values at the winning positions of ``a`` (the adjoint of ``_max_scatter``)."""
    a4 = a if a.ndim == 4 else a[None]
    idx = geom.flat_indices()
    idx4 = idx if idx.ndim == 4 else idx[None]
    n, c = a4.shape[:2]
    out = np.take_along_axis(a4.reshape(n, c, -1), idx4.reshape(n, c, -1), 2).reshape(idx4.shape)
    return out if a.ndim == 4 else out[0]


def _alternate_runs(a, width):
    """(even, odd): the alternating runs of ``width`` elements along the last axis of a C-contiguous
    array, each a contiguous copy of shape ``a.shape[:-1] + (a.shape[-1] // 2,)``.

    A run is copied as one opaque item; runs of one 4-byte element (little-endian) are cut out of
    8-byte words instead, by a truncating cast and a shift (2x faster than the item copy).
    """
    shape = a.shape[:-1] + (a.shape[-1] // 2,)
    if width == 1 and a.itemsize == 4 and np.little_endian:
        words = a.view(np.uint64)
        even = words.astype(np.uint32)
        odd = (words >> np.uint64(32)).astype(np.uint32)
    else:
        runs = a.reshape(-1, 2 * width).view(np.dtype((np.void, width * a.itemsize)))
        even, odd = np.ascontiguousarray(runs[:, 0]), np.ascontiguousarray(runs[:, 1])
    return even.view(a.dtype).reshape(shape), odd.view(a.dtype).reshape(shape)


def _max_pool_2x2(a, ho, wo, with_winner):
    """(best, (col_right, row_bottom) or None) for MaxPool2d(2) on a 4-D array; None when a NaN is involved.

    Two pairwise maxima (columns, then rows) instead of a window sweep: 3x faster than the general
    path on the benchmark CNN's layers. Ties go to the earlier element, as torch's scan does; a NaN
    (torch's rule is that the last NaN in a window wins) is left to the general path.
    """
    a = a[:, :, :2 * ho, :2 * wo]
    if a.flags.c_contiguous:
        # the same comparisons on contiguous halves: NumPy's loops over stride-2 views are 5x slower
        # than its vector loops, more than the copies that make the halves cost
        left, right = _alternate_runs(a, 1)
        pairs = np.maximum(left, right)
        top, bottom = _alternate_runs(pairs.reshape(pairs.shape[:2] + (ho, 2 * wo)), wo)
    else:
        left, right = a[..., 0::2], a[..., 1::2]
        pairs = np.maximum(left, right)
        top, bottom = pairs[:, :, 0::2], pairs[:, :, 1::2]
    best = np.maximum(top, bottom)
    if is_floating_np(a.dtype) and np.isnan(best.sum()):  # np.maximum carries any NaN into ``best``
        return None
    return best, ((right > left, bottom > top) if with_winner else None)


_SAME_SIZE_INT = {2: np.int16, 4: np.int32, 8: np.int64}


def _split_by(a, flags):
    """(a where not flags, a where flags) for a contiguous ``a``, each +0.0 elsewhere: ``a``'s bits
    ANDed with all-ones or all-zeros (a product with the mask would give -0.0, and NaN for inf)."""
    ints = _SAME_SIZE_INT[a.itemsize]
    mask = flags.view(np.uint8).astype(ints)
    np.negative(mask, out=mask)  # 1 -> all ones
    bits = a.view(ints)
    hit = np.bitwise_and(bits, mask, out=mask)
    return np.bitwise_xor(bits, hit).view(a.dtype), hit.view(a.dtype)


def _interleave_runs(even, odd, width, out):
    """Write ``even`` and ``odd`` (contiguous) as the alternating runs of ``width`` elements along
    the last axis of the C-contiguous ``out`` (the inverse of ``_alternate_runs``)."""
    item = np.dtype((np.void, width * out.itemsize))
    runs = out.reshape(-1, 2 * width).view(item)
    runs[:, 0] = even.reshape(-1, width).view(item)[:, 0]
    runs[:, 1] = odd.reshape(-1, width).view(item)[:, 0]


def _max_scatter_2x2(g4, geom, shape):
    """MaxPool2d(2)'s input gradient: each output's gradient at its window's winner and +0.0
    elsewhere, bit for bit as torch's scatter-add into zeros (which also turns a -0.0 gradient
    into +0.0). The values are moved by bit operations, so inf and NaN need no other path."""
    col_right, row_bottom = geom.pair
    n, c, h, w = shape
    ho, wo = geom.ho, geom.wo
    g = g4 + g4.dtype.type(0)  # -0.0 -> +0.0, and a private contiguous copy
    # (an unbatched input's flags lack the batch dimension)
    col_right, row_bottom = col_right.reshape(n, c, 2 * ho, wo), row_bottom.reshape(g.shape)
    top, bottom = _split_by(g, row_bottom)
    rows = np.empty((n, c, 2 * ho, wo), dtype=g.dtype)
    _interleave_runs(top, bottom, wo, rows)
    if (h, w) != (2 * ho, 2 * wo):  # an odd last row or column that no window covers
        out = np.zeros(shape, dtype=g.dtype)
        left, right = _split_by(rows, col_right)
        region = out[:, :, :2 * ho, :2 * wo]
        region[..., 0::2] = left
        region[..., 1::2] = right
        return out
    out = np.empty(shape, dtype=g.dtype)
    if g.itemsize == 4 and np.little_endian:
        # each (left, right) pair of the output as one 8-byte word: the gradient in the low half
        # (left), shifted to the high half (right) where the right column won
        words = out.view(np.uint64)
        np.copyto(words, rows.view(np.uint32))
        shift = col_right.view(np.uint8).astype(np.uint64)
        shift <<= np.uint64(5)
        np.left_shift(words, shift, out=words)
    else:
        left, right = _split_by(rows, col_right)
        _interleave_runs(left, right, 1, out)
    return out


def _max_scatter_exact(g4, geom):
    """The scatter as torch does it, by index: positions that win nothing get exactly +0.0 even when
    a gradient is inf or NaN (the fast paths multiply by masks, and inf * 0 is NaN). Slower; used
    only when a gradient is not finite."""
    idx = geom.flat_indices()
    idx4 = idx if idx.ndim == 4 else idx[None]
    n, c, h, w = geom.shape if len(geom.shape) == 4 else (1,) + geom.shape
    out = np.zeros((n * c, h * w), dtype=g4.dtype)
    np.add.at(out, (np.arange(n * c)[:, None], idx4.reshape(n * c, -1)), g4.reshape(n * c, -1))
    return out.reshape(n, c, h, w)


def _max_scatter(g, geom):
    """Send each output's gradient to its window's winner; one strided pass per kernel offset."""
    g4 = g if g.ndim == 4 else g[None]
    if geom.pair is not None:  # exact for every value
        out = _max_scatter_2x2(g4, geom, geom.shape if len(geom.shape) == 4 else (1,) + geom.shape)
        return out if g.ndim == 4 else out[0]
    if g.dtype.kind == "f" and not np.isfinite(g4.sum()):  # an inf or NaN somewhere (or an overflow)
        out = _max_scatter_exact(g4, geom)
        return out if g.ndim == 4 else out[0]
    arg = geom.arg if geom.arg.ndim == 4 else geom.arg[None]
    n, c, h, w = geom.shape if len(geom.shape) == 4 else (1,) + geom.shape
    padded = geom.ph or geom.pw or geom.eb or geom.er
    disjoint = geom.sh >= geom.dh * (geom.kh - 1) + 1 and geom.sw >= geom.dw * (geom.kw - 1) + 1
    # windows that tile the input exactly write every element once: no zero fill needed
    tiles = (disjoint and not padded and geom.dh == geom.dw == 1 and geom.sh == geom.kh and geom.sw == geom.kw
             and geom.ho * geom.kh == h and geom.wo * geom.kw == w)
    shape = (n, c, h + 2 * geom.ph + geom.eb, w + 2 * geom.pw + geom.er)
    out = np.empty(shape, dtype=g.dtype) if tiles else np.zeros(shape, dtype=g.dtype)
    hspan, wspan = geom.sh * (geom.ho - 1) + 1, geom.sw * (geom.wo - 1) + 1
    k = 0
    for i in range(geom.kh):
        for j in range(geom.kw):
            dst = out[:, :, i * geom.dh:i * geom.dh + hspan:geom.sh, j * geom.dw:j * geom.dw + wspan:geom.sw]
            hit = (arg == k).astype(g.dtype)  # a float mask multiplies faster than a bool one
            if disjoint:
                np.multiply(g4, hit, out=dst)
            else:
                dst += g4 * hit
            k += 1
    if padded:
        out = np.ascontiguousarray(out[:, :, geom.ph:geom.ph + h, geom.pw:geom.pw + w])
    return out if g.ndim == 4 else out[0]


def max_pool2d_with_indices(x: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            need_indices=True):
    _check_dims(x, 2, "max_pool2d")
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _pool_args("max", x, kernel_size, stride, padding, dilation)
    data, unbatched = _as4(x._ndarray)
    n, c, h, w = data.shape
    ho, wo = _pool_out(h, kh, sh, ph, dh, ceil_mode), _pool_out(w, kw, sw, pw, dw, ceil_mode)
    if ho <= 0 or wo <= 0:
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{ho}x{wo}). "
                           f"Output size is too small")
    g = _MaxGeom()
    g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.ho, g.wo = kh, kw, sh, sw, ph, pw, dh, dw, ho, wo
    g.eb = max(0, (ho - 1) * sh + dh * (kh - 1) + 1 - h - 2 * ph)
    g.er = max(0, (wo - 1) * sw + dw * (kw - 1) + 1 - w - 2 * pw)
    g.shape, g._idx, g._arg, g.pair = x._ndarray.shape, None, None, None
    wants_winner = need_indices or (GRAD.enabled and x._requires_grad)
    args = ((kh, kw), () if stride is None or len(_listed(stride)) == 0 else (sh, sw), (ph, pw), (dh, dw), ceil_mode)
    if (kh, kw, sh, sw, ph, pw, dh, dw) == (2, 2, 2, 2, 0, 0, 1, 1) and not ceil_mode:
        fast = _max_pool_2x2(data, ho, wo, wants_winner)
        if fast is not None:
            best, g.pair = fast
            if unbatched:
                best, g.pair = best[0], g.pair and (g.pair[0][0], g.pair[1][0])
            return _max_pool_result(x, best, g, need_indices, args)
    fill = -np.inf if is_floating_np(data.dtype) else np.iinfo(data.dtype).min
    win = windows(_padded_planes(data, g, fill), kh, kw, sh, sw, dh, dw, ho, wo)  # (N, C, kh, kw, Ho, Wo)
    # running maximum over the kernel offsets (kh*kw passes over output-sized arrays, no window copy),
    # then the first offset that attains it (masks and integer adds: no masked copies, which are slow)
    kk = kh * kw
    best = win[:, :, 0, 0].copy()
    for i in range(kh):
        for j in range(kw):
            if i or j:
                np.maximum(best, win[:, :, i, j], out=best)
    arg = np.zeros(best.shape, dtype=np.uint8 if kk < 256 else np.int64)
    if kk > 1 and wants_winner:
        taken = win[:, :, 0, 0] == best
        k = 0
        for i in range(kh):
            for j in range(kw):
                if k:
                    hit = win[:, :, i, j] == best
                    hit &= ~taken
                    taken |= hit
                    arg += hit.astype(arg.dtype) * arg.dtype.type(k) if k > 1 else hit
                k += 1
    if is_floating_np(data.dtype) and np.isnan(best.sum()):  # cheap gate: np.maximum carried a NaN into ``best``
        nan = np.isnan(win).any((2, 3))
        if nan.any():  # torch's rule: a NaN wins (the last one in its window)
            isn = np.isnan(win).transpose(0, 1, 4, 5, 2, 3).reshape(n, c, ho, wo, kh * kw)
            last = kh * kw - 1 - isn[..., ::-1].argmax(-1)
            arg = np.where(nan, last, arg).astype(arg.dtype)
            best = np.where(nan, np.nan, best).astype(best.dtype)
    if unbatched:
        best, arg = best[0], arg[0]
    g._arg = arg
    return _max_pool_result(x, best, g, need_indices, args)


def _max_pool_result(x, best, g, need_indices, args):
    fwd = functools.partial(_max_gather, geom=g)
    adj = functools.partial(_max_scatter, geom=g)
    out = linear_map(x, fwd, adj, MaxPool2DWithIndicesBackward0, value=best, args=args + (g,))
    indices = wrap(g.flat_indices()) if need_indices else None
    node = out._grad_fn_value
    if node is not None and (indices is not None or saved_tensor_hooks_active()):
        # torch's node keeps the indices as a saved tensor (packed after the input, version-checked,
        # unpacked for the backward); without pack hooks or a caller holding them, the window choice
        # kept in the geometry is the same thing and costs no index array
        if indices is None:
            indices = wrap(g.flat_indices())
        node._saved = node._saved + (SavedTensor(indices),)
        indices = indices if need_indices else None
    return out, indices


def _max_scatter_at(g, indices, geom):
    """The input gradient of a max pool whose indices were unpacked as ``indices``: the geometry's
    own scatter when they are its own choice, else a scatter by these indices (torch's kernel reads
    whatever the saved tensor holds)."""
    data = indices._ndarray
    if data.dtype != np.int64:
        raise RuntimeError(f"expected scalar type Long but found {indices.type().split('.')[-1].replace('Tensor', '')}")
    own = geom.flat_indices()
    if data is own or np.array_equal(data, own):
        return _max_scatter(g, geom=geom)
    other = _MaxGeom()
    for name in _MaxGeom.__slots__:
        setattr(other, name, getattr(geom, name))
    other._idx = data
    g4 = g if g.ndim == 4 else g[None]
    out = _max_scatter_exact(g4, other)
    return out if g.ndim == 4 else out[0]


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    out, idx = max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices)
    return (out, idx) if return_indices else out


def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    _check_dims(x, 1, "max_pool1d")
    k = _tuple(kernel_size, 1)[0]
    s = _tuple(stride, 1)[0] if stride is not None and stride != [] and stride != () else k
    out, idx = max_pool2d_with_indices(x.unsqueeze(-2), (1, k), (1, s), (0, _tuple(padding, 1)[0]),
                                       (1, _tuple(dilation, 1)[0]), ceil_mode, return_indices)
    out = out.squeeze(-2)
    if return_indices:
        idx = idx.squeeze(-2)
    return (out, idx) if return_indices else out


# ---- average pooling -------------------------------------------------------------------------
def _divisors(size, k, s, p, out, count_include_pad):
    """Per-output-position window length along one dim (torch's counting rule)."""
    start = np.arange(out) * s - p
    end = np.minimum(start + k, size + p)
    full = end - start
    start_c, end_c = np.maximum(start, 0), np.minimum(end, size)
    return full if count_include_pad else (end_c - start_c)


def _avg_fwd(a, geom):
    kh, kw, sh, sw, ph, pw, eb, er, ho, wo, div = geom
    n, c, h, w = a.shape
    if ph or pw or eb or er:
        xp = np.zeros((n, c, h + 2 * ph + eb, w + 2 * pw + er), dtype=a.dtype)
        xp[:, :, ph:ph + h, pw:pw + w] = a
    else:
        xp = a
    win = windows(xp, kh, kw, sh, sw, 1, 1, ho, wo)
    if kh * kw <= 16:
        out = win[:, :, 0, 0].copy()
        for i in range(kh):
            for j in range(kw):
                if i or j:
                    out += win[:, :, i, j]
    else:
        out = win.sum((2, 3))
    out /= div
    return out


def _avg_adj(g, geom, in_shape):
    kh, kw, sh, sw, ph, pw, eb, er, ho, wo, div = geom
    n, c, h, w = in_shape
    gd = g / div
    hp, wp = h + 2 * ph + eb, w + 2 * pw + er
    out = np.zeros((n, c, hp, wp), dtype=g.dtype)
    hspan, wspan = sh * (ho - 1) + 1, sw * (wo - 1) + 1
    for i in range(kh):
        for j in range(kw):
            out[:, :, i:i + hspan:sh, j:j + wspan:sw] += gd
    return np.ascontiguousarray(out[:, :, ph:ph + h, pw:pw + w])


def _batched(fn):
    """Lift a 4-D kernel to 3-D (unbatched) arrays."""
    def run(a, *args, **kwargs):
        if a.ndim == 3:
            return fn(a[None], *args, **kwargs)[0]
        return fn(a, *args, **kwargs)
    return run


_avg_fwd_b, _avg_adj_b = _batched(_avg_fwd), _batched(_avg_adj)


def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    _check_dims(x, 2, "avg_pool2d")
    (kh, kw), (sh, sw), (ph, pw), _ = _pool_args("avg", x, kernel_size, stride, padding, 1)
    h, w = x._ndarray.shape[-2:]
    ho, wo = _pool_out(h, kh, sh, ph, 1, ceil_mode), _pool_out(w, kw, sw, pw, 1, ceil_mode)
    if ho <= 0 or wo <= 0:
        c = x._ndarray.shape[-3]
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{ho}x{wo}). "
                           f"Output size is too small")
    eb = max(0, (ho - 1) * sh + kh - h - 2 * ph)
    er = max(0, (wo - 1) * sw + kw - w - 2 * pw)
    if divisor_override:
        div = np.asanyarray(divisor_override, dtype=x._ndarray.dtype)
    else:
        dv = np.outer(_divisors(h, kh, sh, ph, ho, count_include_pad), _divisors(w, kw, sw, pw, wo, count_include_pad))
        div = dv.astype(x._ndarray.dtype)
    geom = (kh, kw, sh, sw, ph, pw, eb, er, ho, wo, div)
    in_shape = x._ndarray.shape if x._ndarray.ndim == 4 else (1,) + x._ndarray.shape
    fwd = functools.partial(_avg_fwd_b, geom=geom)
    adj = functools.partial(_avg_adj_b, geom=geom, in_shape=in_shape)
    args = ((kh, kw), () if stride is None or len(_listed(stride)) == 0 else (sh, sw), (ph, pw), count_include_pad,
            ceil_mode, divisor_override)
    return linear_map(x, fwd, adj, AvgPool2DBackward0, args=args)


def avg_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    _check_dims(x, 1, "avg_pool1d")
    k = _tuple(kernel_size, 1)[0]
    s = _tuple(stride, 1)[0] if stride is not None and stride != [] and stride != () else k
    out = avg_pool2d(x.unsqueeze(-2), (1, k), (1, s), (0, _tuple(padding, 1)[0]), ceil_mode, count_include_pad)
    return out.squeeze(-2)


# ---- adaptive average pooling ----------------------------------------------------------------
def _adaptive_matrix(size, out, dtype):
    """(out, size) averaging matrix: row i averages [floor(i*size/out), ceil((i+1)*size/out))."""
    m = np.zeros((out, size), dtype=dtype)
    for i in range(out):
        a = (i * size) // out
        b = -((-(i + 1) * size) // out)
        m[i, a:b] = 1.0 / (b - a)
    return m


def _adaptive_fwd(a, mh, mwt):
    return np.matmul(np.matmul(mh, a), mwt)


def adaptive_avg_pool2d(x, output_size):
    _check_dims(x, 2, "adaptive_avg_pool2d")
    h, w = x._ndarray.shape[-2:]
    if isinstance(output_size, (tuple, list)):
        oh, ow = output_size
    else:
        oh = ow = output_size
    oh = h if oh is None else int(oh)
    ow = w if ow is None else int(ow)
    if oh == 1 and ow == 1:
        return x.mean((-2, -1), keepdim=True)
    dt = x._ndarray.dtype
    mh, mw = _adaptive_matrix(h, oh, dt), _adaptive_matrix(w, ow, dt)
    fwd = functools.partial(_adaptive_fwd, mh=mh, mwt=np.ascontiguousarray(mw.T))
    adj = functools.partial(_adaptive_fwd, mh=np.ascontiguousarray(mh.T), mwt=mw)
    return linear_map(x, fwd, adj, AdaptiveAvgPool2DBackward0)


def adaptive_avg_pool1d(x, output_size):
    _check_dims(x, 1, "adaptive_avg_pool1d")
    o = output_size[0] if isinstance(output_size, (tuple, list)) else output_size
    return adaptive_avg_pool2d(x.unsqueeze(-2), (1, o)).squeeze(-2)


# ---- padding ---------------------------------------------------------------------------------
def _pad_index(size, before, after, mode):
    """Source index for each output position along one dim (reflect / replicate / circular)."""
    pos = np.arange(-before, size + after)
    if mode == "replicate":
        return np.clip(pos, 0, size - 1)
    if mode == "circular":
        return np.mod(pos, size)
    # reflect (edge not repeated)
    period = 2 * (size - 1)
    if period == 0:
        return np.zeros_like(pos)
    r = np.mod(pos, period)
    return np.where(r < size, r, period - r)


def _index_pad_fwd(a, plan):
    for axis, idx, _ in plan:
        a = np.take(a, idx, axis=axis)
    return a


def _index_pad_adj(g, plan):
    for axis, idx, size in reversed(plan):
        m = np.zeros((size, idx.size), dtype=g.dtype)
        m[idx, np.arange(idx.size)] = 1
        g = np.moveaxis(np.tensordot(m, g, axes=([1], [axis])), 0, axis)
    return np.ascontiguousarray(g)


def _const_pad_fwd(a, pads, value):
    out_shape = tuple(s + b + e for s, (b, e) in zip(a.shape, pads))
    out = np.full(out_shape, value, dtype=a.dtype)
    src = tuple(slice(max(0, -b), s - max(0, -e)) for s, (b, e) in zip(a.shape, pads))
    dst = tuple(slice(max(0, b), max(0, b) + (sl.stop - sl.start)) for (b, e), sl in zip(pads, src))
    out[dst] = a[src]
    return out


def _const_pad_adj(g, pads, in_shape):
    neg = tuple((-b, -e) for b, e in pads)
    return _const_pad_fwd(g, neg, 0)


_MODE_NAMES = {"reflect": "Reflection", "replicate": "Replication", "circular": "Circular"}
# (circular padding has no node of its own: torch composes it of slices and copies, see _pad_circular)
_INDEX_PAD_NODES = {(mode, k): linear_map_nodes(f"{name}Pad{k}DBackward0", f"{name}Pad{k}DBackwardBackward0",
                                                saves_input=True, saved_values={"padding": saved_arg(0)})
                    for mode, name in _MODE_NAMES.items() if mode != "circular" for k in (1, 2, 3)}


def _pad_circular(x: Tensor, pairs) -> Tensor:
    """Circular padding as torch's ATen composition records it: the input's kept part (a slice per
    padded dim, full ones included) copied into a new tensor, then each padded dim's borders copied
    from the opposite side of that tensor, left before right, last dim first (corners written twice)."""
    nd = x._ndarray.ndim
    in_shape = list(x._ndarray.shape)
    out_shape = list(in_shape)
    for i, (b, e) in enumerate(pairs):
        out_shape[nd - 1 - i] += b + e
        if out_shape[nd - 1 - i] <= 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension.")
    out = x.new_empty(out_shape)
    out_part, in_part = out, x
    for i, (b, e) in enumerate(pairs):
        dim = nd - 1 - i
        out_part = out_part.narrow(dim, max(b, 0), out_shape[dim] - max(b, 0) - max(e, 0))
        in_part = in_part.narrow(dim, max(-b, 0), in_shape[dim] - max(-b, 0) - max(-e, 0))
    out_part.copy_(in_part)
    for i, (b, e) in enumerate(pairs):
        dim = nd - 1 - i
        if b > 0:
            out.narrow(dim, 0, b).copy_(out.narrow(dim, out_shape[dim] - b - max(e, 0), b))
        if e > 0:
            out.narrow(dim, out_shape[dim] - e, e).copy_(out.narrow(dim, max(b, 0), e))
    return out


def pad(x: Tensor, pad, mode="constant", value=None):
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    nd = x._ndarray.ndim
    if len(pad) // 2 > nd:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but "
                           f"got padding length {len(pad)} and input of dimension {nd}")
    pairs = [(pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]  # last dim first
    if mode == "constant":
        pads = [(0, 0)] * (nd - len(pairs)) + pairs[::-1]
        for s, (b, e) in zip(x._ndarray.shape, pads):
            if s + b + e < 0:
                raise RuntimeError(f"The input size {s}, plus negative padding {b} and {e} resulted in a negative "
                                   f"output size, which is invalid. Check dimension {pads.index((b, e))} of your input.")
        # the gradient's own backward pads with zeros: the fill value is a constant, not part of the linear map
        fwd = functools.partial(_const_pad_fwd, pads=pads, value=0)
        adj = functools.partial(_const_pad_adj, pads=pads, in_shape=x._ndarray.shape)
        filled = None
        if value:
            filled = narrow_to(_const_pad_fwd(widen(x._ndarray), pads, value), x._ndarray.dtype)
        return linear_map(x, fwd, adj, ConstantPadNdBackward0, value=filled, args=(pad,))
    if mode not in _MODE_NAMES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    k = len(pairs)
    if not (k in (1, 2, 3) and nd in (k + 1, k + 2)):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {nd}D input tensor.\n"
                                  "Supported combinations for non-constant padding:\n"
                                  "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                                  "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                                  "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    plan = []
    for i, (b, e) in enumerate(pairs):
        axis = nd - 1 - i
        size = x._ndarray.shape[axis]
        if mode == "reflect" and (b >= size or e >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({b}, {e}) at dimension {axis} of input {list(x._ndarray.shape)}")
        if mode == "circular" and (b > size or e > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        plan.append((axis, _pad_index(size, b, e, mode), size))
    if mode == "circular":
        return _pad_circular(x, pairs)
    fwd = functools.partial(_index_pad_fwd, plan=plan)
    adj = functools.partial(_index_pad_adj, plan=plan)
    return linear_map(x, fwd, adj, _INDEX_PAD_NODES[mode, k], args=(pad,))
