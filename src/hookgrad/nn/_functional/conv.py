"""Convolutions on NumPy: im2col through ``as_strided`` windows and one batched matmul per call.

Three ops make the convolution family, and each one's backward is written with the other two, so
that gradients of any order exist (double backward for gradient penalties):

* ``convolution(x, w, b)``: the forward convolution (grad_fn ``ConvolutionBackward0``);
* ``conv_transpose(x, w, b)``: its adjoint in ``x`` (the transposed convolution, also recorded as
  ``ConvolutionBackward0``, as torch does), which is also the input gradient of a convolution;
* ``conv_weight(x, g)``: the weight gradient of a convolution, bilinear in ``x`` and ``g``.

Everything is 2-D inside; 1-D convolutions are viewed as 2-D ones of height 1 (a free reshape).
Geometry is carried in a small ``_Geom`` record: stride, padding as (top, bottom, left, right),
dilation and groups.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ... import _threads as _blas
from ... import _dtype
from ..._dtype import narrow_to, widen
from ..._meta import MetaArray, meta_array
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node
from ..._ops._base import GRAD, edge, ones_vector
from ..._ops.linalg import _C_TYPE_NAMES
from ..._ops._declare import node_class, outputs_of, record_op


class _Geom:
    __slots__ = ("stride", "pad", "dil", "groups", "nd")

    def __init__(self, stride, pad, dil, groups, nd):
        self.stride, self.pad, self.dil, self.groups, self.nd = stride, pad, dil, groups, nd


# ---- NumPy kernels (4-D arrays) ---------------------------------------------------------------
def _padded(x, pad):
    """``x`` with zero padding (top, bottom, left, right) around its last two dims (no copy when none)."""
    pt, pb, pl, pr = pad
    if not (pt or pb or pl or pr):
        return x
    n, c, h, w = x.shape
    out = np.zeros((n, c, h + pt + pb, w + pl + pr), dtype=x.dtype)
    out[:, :, pt:pt + h, pl:pl + w] = x
    return out


def _out_size(size, k, s, d, p0, p1):
    return (size + p0 + p1 - d * (k - 1) - 1) // s + 1


def windows(xp, kh, kw, sh, sw, dh, dw, ho, wo):
    """A read-only (N, C, kh, kw, Ho, Wo) view of every kernel window of the padded ``xp``."""
    n, c = xp.shape[:2]
    if xp.__class__ is MetaArray:
        return meta_array((n, c, kh, kw, ho, wo), xp.dtype)
    s0, s1, s2, s3 = xp.strides
    return as_strided(xp, (n, c, kh, kw, ho, wo), (s0, s1, s2 * dh, s3 * dw, s2 * sh, s3 * sw), writeable=False)


# ---- column buffers: two memory layouts -------------------------------------------------------
# A convolution is a matmul of the weight, as a (G, Og, K) matrix, with the "columns": every input
# window unrolled, K = kh*kw*Cg rows per group (kernel offset outermost, so that the rows of one
# offset form one block). The columns live in one of two layouts:
#   batch-major   (N, G, kh, kw, Cg, L): one small matmul per sample, which OpenBLAS runs with its
#                 small-matrix kernel on one thread; no transposes. Best for narrow layers.
#   channel-major (G, kh, kw, Cg, N, L): one large matmul for the whole batch, which OpenBLAS spreads
#                 over every core, at the price of transposing the output and the incoming gradient.
#                 On the benchmark's 16->32 channel 3x3 layer (batch 64, 14x14) forward + both
#                 gradients take 5.8 ms instead of 9.3 ms; on a 1->16 layer it is 3x slower.
# L = Ho*Wo. ``_batch_major`` picks one from the layer's shape, the same way for all three kernels.

def _batch_major(w_shape, groups) -> bool:
    o, cg, kh, kw = w_shape
    return groups * cg * kh * kw < 64 or o < 32


def _weight_matrix(w, groups):
    """(O, Cg, kh, kw) -> (G, Og, kh*kw*Cg), the row order of the columns (a small copy)."""
    o, cg, kh, kw = w.shape
    return w.reshape(groups, o // groups, cg, kh * kw).transpose(0, 1, 3, 2).reshape(groups, o // groups, -1)


def _weight_from_matrix(m, w_shape):
    o, cg, kh, kw = w_shape
    return np.ascontiguousarray(m.reshape(o, kh * kw, cg).transpose(0, 2, 1)).reshape(w_shape)


class _Cols:
    """Unrolled windows of one input, in either layout; ``shape`` is (N, C, kh, kw, Ho, Wo)."""

    __slots__ = ("data", "batch_major", "shape", "groups")

    def __init__(self, data, batch_major, shape, groups):
        self.data, self.batch_major, self.shape, self.groups = data, batch_major, shape, groups

    @staticmethod
    def dims(shape, batch_major, groups):
        n, c, kh, kw, ho, wo = shape
        cg = c // groups
        return (n, groups, kh, kw, cg, ho * wo) if batch_major else (groups, kh, kw, cg, n, ho * wo)

    @staticmethod
    def empty(shape, dtype, batch_major, groups):
        return _Cols(np.empty(_Cols.dims(shape, batch_major, groups), dtype), batch_major, shape, groups)

    @staticmethod
    def from_matrix(m, batch_major, shape, groups):
        """Wrap a matmul result laid out as ``matrix()`` returns it."""
        return _Cols(m.reshape(_Cols.dims(shape, batch_major, groups)), batch_major, shape, groups)

    def matrix(self):
        """The matmul operand: (N, G, K, L) or (G, K, N*L)."""
        n, c, kh, kw, ho, wo = self.shape
        k = (c // self.groups) * kh * kw
        if self.batch_major:
            return self.data.reshape(n, self.groups, k, ho * wo)
        return self.data.reshape(self.groups, k, n * ho * wo)

    def offset_planes(self, i, j):
        """The windows of kernel offset (i, j) as (blocks, planes, L), each block contiguous.

        Batch-major: one block per (sample, group), whose planes are its channels, as in the input.
        Channel-major: one block per group, whose planes run over (channel, sample).
        """
        n, c, kh, kw, ho, wo = self.shape
        if self.batch_major:
            return self.data[:, :, i, j].reshape(n * self.groups, c // self.groups, ho * wo)
        return self.data[:, i, j].reshape(self.groups, (c // self.groups) * n, ho * wo)

    def image_planes(self, a):
        """An (N, C, H, W) image arranged as ``offset_planes`` arranges windows (a copy if channel-major)."""
        n, c, h, w = a.shape
        if self.batch_major:
            return a.reshape(n * self.groups, c // self.groups, h * w)
        return np.ascontiguousarray(a.reshape(n, c, h * w).transpose(1, 0, 2)).reshape(self.groups, -1, h * w)

    def image_from_planes(self, planes):
        """Inverse of ``image_planes``: back to a contiguous (N, C, H, W) array."""
        n, c, _, _, ho, wo = self.shape
        if self.batch_major:
            return planes.reshape(n, c, ho, wo)
        return np.ascontiguousarray(planes.reshape(c, n, ho * wo).transpose(1, 0, 2)).reshape(n, c, ho, wo)

    def windows7(self):
        """A (N, G, Cg, kh, kw, Ho, Wo) view of the buffer, whichever its layout."""
        n, c, kh, kw, ho, wo = self.shape
        g, cg = self.groups, c // self.groups
        if self.batch_major:
            return self.data.reshape(n, g, kh, kw, cg, ho, wo).transpose(0, 1, 4, 2, 3, 5, 6)
        return self.data.reshape(g, kh, kw, cg, n, ho, wo).transpose(4, 0, 3, 1, 2, 5, 6)


def _same_size_shifts(in_hw, kh, kw, geom, ho, wo):
    """Per kernel offset (i, j, s, cj) when the output has the input's size at stride 1, else None.

    Then the windows of one kernel offset are the input shifted by ``s`` elements in row-major
    order, and all of them are copied by one long slice per contiguous block (2-4x faster than
    copying short rows). Elements that a shift carried across a row edge (``cj`` columns on one
    side) or across a plane edge (``s`` elements at one end) are zeroed afterwards.
    """
    h, w = in_hw
    (sh, sw), (dh, dw) = geom.stride, geom.dil
    if sh != 1 or sw != 1 or (ho, wo) != (h, w):
        return None
    pt, pl = geom.pad[0], geom.pad[2]
    return [(i, j, (i * dh - pt) * w + (j * dw - pl), j * dw - pl) for i in range(kh) for j in range(kw)]


def _zero_outside(planes, s, cj, w):
    """Zero what a shift by ``s`` (``cj`` columns) carried in from outside each (rows x ``w``) plane."""
    length = planes.shape[-1]
    if s < 0:
        planes[..., :min(-s, length)] = 0
    elif s > 0:
        planes[..., max(length - s, 0):] = 0
    rows = planes.reshape(planes.shape[:-1] + (length // w, w))
    if cj < 0:
        rows[..., :-cj] = 0
    elif cj > 0:
        rows[..., max(w - cj, 0):] = 0


def _shift_span(s, total):
    """(lo, hi): the destination range of a shift by ``s`` within a block of ``total`` elements
    (empty when the shift is longer than the block: ``hi`` never falls below ``lo``, which would
    make ``hi + s`` a negative index counting from the end)."""
    lo = max(0, -s)
    return lo, max(lo, total - max(0, s))


def _im2col(x, kh, kw, geom, batch_major, out_hw=None):
    """Unroll every window of ``x`` (N, C, H, W) into a ``_Cols`` buffer."""
    (sh, sw), (dh, dw), groups = geom.stride, geom.dil, geom.groups
    pt, pb, pl, pr = geom.pad
    n, c, h, w = x.shape
    ho, wo = out_hw or (_out_size(h, kh, sh, dh, pt, pb), _out_size(w, kw, sw, dw, pl, pr))
    shape = (n, c, kh, kw, ho, wo)
    if batch_major and kh == kw == 1 and (sh, sw) == (1, 1) and not any(geom.pad) and (ho, wo) == (h, w):
        return _Cols.from_matrix(x, True, shape, groups)  # a 1x1 convolution needs no copy
    cols = _Cols.empty(shape, x.dtype, batch_major, groups)
    shifts = _same_size_shifts((h, w), kh, kw, geom, ho, wo)
    if shifts is None:
        win = windows(_padded(x, geom.pad), kh, kw, sh, sw, dh, dw, ho, wo)
        np.copyto(cols.windows7(), win.reshape(n, groups, c // groups, kh, kw, ho, wo))
        return cols
    src = cols.image_planes(x)
    flat_src = src.reshape(src.shape[0], -1)
    for i, j, s, cj in shifts:
        dst = cols.offset_planes(i, j)
        flat = dst.reshape(dst.shape[0], -1)
        lo, hi = _shift_span(s, flat.shape[1])
        flat[:, lo:hi] = flat_src[:, lo + s:hi + s]
        _zero_outside(dst, s, cj, w)  # also covers the block ends that the slice left unwritten
    return cols


def col2im(cols, in_shape, geom):
    """Adjoint of ``_im2col``: add every window of ``cols`` back into an image of ``in_shape``.

    Overwrites ``cols`` on the same-size path (what its shifts carry across edges is zeroed first).
    """
    n, c, kh, kw, ho, wo = cols.shape
    (sh, sw), (dh, dw), groups = geom.stride, geom.dil, cols.groups
    pt, pb, pl, pr = geom.pad
    _, _, h, w = in_shape
    shifts = _same_size_shifts((h, w), kh, kw, geom, ho, wo)
    if shifts is not None:
        out = np.zeros(cols.offset_planes(0, 0).shape, dtype=cols.data.dtype)
        flat_out = out.reshape(out.shape[0], -1)
        for i, j, s, cj in shifts:
            src = cols.offset_planes(i, j)
            _zero_outside(src, s, cj, w)
            flat = src.reshape(src.shape[0], -1)
            lo, hi = _shift_span(s, flat.shape[1])
            flat_out[:, lo + s:hi + s] += flat[:, lo:hi]
        return cols.image_from_planes(out)
    hp, wp = h + pt + pb, w + pl + pr
    out = np.zeros((n, groups, c // groups, hp, wp), dtype=cols.data.dtype)
    hspan, wspan = sh * (ho - 1) + 1, sw * (wo - 1) + 1
    win = cols.windows7()
    for i in range(kh):
        for j in range(kw):
            out[..., i * dh:i * dh + hspan:sh, j * dw:j * dw + wspan:sw] += win[:, :, :, i, j]
    out = out.reshape(n, c, hp, wp)
    if pt or pb or pl or pr:
        out = out[:, :, pt:pt + h, pl:pl + w]
    return np.ascontiguousarray(out)


def _channel_major(a, groups):
    """(N, O, Ho, Wo) -> a contiguous (G, Og, N*L) copy, the channel-major matmul operand."""
    n, o = a.shape[:2]
    return np.ascontiguousarray(a.reshape(n, o, -1).transpose(1, 0, 2)).reshape(groups, o // groups, -1)


# ---- the three kernels ---------------------------------------------------------------------------
def conv_forward_np(x, w, geom, bias=None):
    """(out (N, O, Ho, Wo), cols) for 4-D x and w, ``bias`` (O,) added; ``cols`` serves the weight gradient."""
    o, cg, kh, kw = w.shape
    g = geom.groups
    n = x.shape[0]
    cols = _im2col(x, kh, kw, geom, _batch_major(w.shape, g))
    ho, wo = cols.shape[4:]
    prod = _blas.matmul(_weight_matrix(w, g), cols.matrix())
    if cols.batch_major:
        out = prod.reshape(n, o, ho, wo)
        if bias is not None:
            out += bias.reshape(1, o, 1, 1)
        return out, cols
    by_sample = prod.reshape(o, n, ho, wo).transpose(1, 0, 2, 3)
    if bias is None:
        return np.ascontiguousarray(by_sample), cols
    out = np.empty((n, o, ho, wo), dtype=prod.dtype)
    np.add(by_sample, bias.reshape(1, o, 1, 1), out=out)  # the transpose and the bias in one pass
    return out, cols


def conv_input_grad_np(gout, w, in_shape, geom):
    """The transposed convolution: gradient of a convolution's input, (N, C, H, W) = ``in_shape``."""
    n, o, ho, wo = gout.shape
    _, cg, kh, kw = w.shape
    g = geom.groups
    batch_major = _batch_major(w.shape, g)
    wt = _weight_matrix(w, g).transpose(0, 2, 1)
    go = gout.reshape(n, g, o // g, ho * wo) if batch_major else _channel_major(gout, g)
    cols = _Cols.from_matrix(_blas.matmul(wt, go), batch_major, (n, g * cg, kh, kw, ho, wo), g)
    return col2im(cols, in_shape, geom)


def conv_weight_grad_np(x, gout, w_shape, geom, cached=None):
    """Gradient of a convolution's weight: gout @ cols^T, summed over the batch."""
    o, cg, kh, kw = w_shape
    g = geom.groups
    n, _, ho, wo = gout.shape
    if cached is not None and cached.shape[4:] == (ho, wo):
        cols = cached
    else:
        cols = _im2col(x, kh, kw, geom, _batch_major(w_shape, g), (ho, wo))
    mat = cols.matrix()
    if not cols.batch_major:
        # (cols @ gout^T)^T: OpenBLAS splits this orientation over its threads better (0.9 vs 1.2 ms)
        gw = _blas.matmul(mat, _channel_major(gout, g).transpose(0, 2, 1)).transpose(0, 2, 1)
    elif n * g == 1:
        gw = _blas.matmul(gout.reshape(o, ho * wo), mat[0, 0].T)
    else:
        gw = _blas.matmul(gout.reshape(n, g, o // g, ho * wo), mat.transpose(0, 1, 3, 2)).sum(0)
    return _weight_from_matrix(gw, w_shape)


# ---- shape helpers --------------------------------------------------------------------------
def _as4d(a, nd):
    """View a 3-D (1-d conv) array as 4-D with height 1."""
    return a if nd == 2 else a.reshape(a.shape[0], a.shape[1], 1, a.shape[2])


def _from4d(a, nd):
    return a if nd == 2 else a.reshape(a.shape[0], a.shape[1], a.shape[3])


def _bias_add(out, b):
    if b is not None:
        out += b._ndarray.reshape((1, -1) + (1,) * (out.ndim - 2))
    return out


def _bias_grad(g):
    d = g._ndarray
    if GRAD.enabled or d.dtype.kind != "f" or d.dtype == np.float16:
        # create_graph: a recorded, differentiable sum; half precision: sum's float32 accumulation
        return g.sum((0,) + tuple(range(2, d.ndim)))
    # each (sample, channel) plane summed by a matmul with ones: 3x faster than reducing over (0, 2, 3)
    planes = d.reshape(d.shape[0], d.shape[1], -1)
    return wrap((planes @ ones_vector(planes.shape[2], d.dtype)).sum(0))


# ---- recorded ops ---------------------------------------------------------------------------
def _conv_padding(node):
    pad = node.geom.pad  # (top, bottom, left, right); a 1-d convolution's is (0, 0, left, right)
    return (pad[2],) if node.geom.nd == 1 else (pad[0], pad[2])


def _conv_output_padding(node):
    """What a transposed convolution added at the far end: its output beyond the windows' reach."""
    nd = node.geom.nd
    if not node.transposed:
        return (0,) * nd
    stride, dil, pad = node.geom.stride[-nd:], node.geom.dil[-nd:], _conv_padding(node)
    return tuple(int(o - ((i - 1) * s - 2 * p + d * (k - 1) + 1)) for o, i, s, p, d, k in zip(
        node.out_shape[2:], node.x_shape[2:], stride, pad, dil, node.w_shape[2:]))


class ConvolutionBackward0(Node):
    __slots__ = ("geom", "cols", "transposed", "x_shape", "w_shape", "bias_shape", "out_shape", "bias_dtype")
    saved_names = ("input", "weight")
    saved_values = {
        "stride": lambda n: tuple(int(s) for s in n.geom.stride[-n.geom.nd:]),
        "padding": _conv_padding,
        "dilation": lambda n: tuple(int(d) for d in n.geom.dil[-n.geom.nd:]),
        "transposed": lambda n: n.transposed,
        "output_padding": _conv_output_padding,
        "groups": lambda n: n.geom.groups,
        # the bias's sizes, (0,) without one
        "bias_sym_sizes_opt": lambda n: n.bias_shape,
    }

    def apply(self, grads):
        g = grads[0]
        x, w = self.saved()
        if GRAD.enabled:
            # create_graph: torch's backward is one op, differentiated by one ConvolutionBackwardBackward0
            # node over (grad_output, input, weight); the gradients themselves are computed unrecorded
            GRAD.enabled = False
            try:
                results = self._gradients(g, x, w)
            finally:
                GRAD.enabled = True
            return _record_double_backward(self, g, x, w, results)
        return self._gradients(g, x, w)

    def _gradients(self, g, x, w):
        geom = self.geom
        gx = gw = gb = None
        if not self.transposed:
            if self._should_compute_output(0):
                gx = conv_transpose(g, w, None, geom, self.x_shape)
            if self._should_compute_output(1):
                cols = self.cols
                fresh = cols is not None and cols[1] is x._ndarray and cols[2] == x._version_counter[0]
                gw = conv_weight(x, g, self.w_shape, geom, cols[0] if fresh else None)
        else:
            if self._should_compute_output(0):
                gx = convolution(g, w, None, geom)
                if gx._ndarray.shape != self.x_shape:  # output_padding >= stride (allowed when < dilation)
                    gx = gx[tuple(slice(0, s) for s in self.x_shape)]
            if self._should_compute_output(1):
                gw = conv_weight(g, x, self.w_shape, geom)
        self.cols = None
        if self._should_compute_output(2):
            gb = _bias_grad(g)
            if gb._ndarray.dtype != self.bias_dtype:  # a transposed convolution's bias may differ from the input
                gb = gb.to(wrap(np.empty(0, self.bias_dtype)).dtype)
        return gx, gw, gb


def _meta_conv_forward(x, w, geom, bias=None):
    """``conv_forward_np`` for meta operands: the output's shape and dtype, nothing computed."""
    (sh, sw), (dh, dw) = geom.stride, geom.dil
    pt, pb, pl, pr = geom.pad
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    shape = (n, o, _out_size(h, kh, sh, dh, pt, pb), _out_size(wd, kw, sw, dw, pl, pr))
    return meta_array(shape, np.result_type(x.dtype, w.dtype)), None


def convolution(x: Tensor, w: Tensor, b, geom: _Geom) -> Tensor:
    nd = geom.nd
    # bfloat16 operands: float32 products and sums, the result rounded once (see _dtype.narrow_to)
    kernel = conv_forward_np if x._ndarray.__class__ is not MetaArray and w._ndarray.__class__ is not MetaArray \
        else _meta_conv_forward
    out, cols = kernel(_as4d(widen(x._ndarray), nd), _as4d(widen(w._ndarray), nd), geom,
                       None if b is None else b._ndarray)
    result = wrap(narrow_to(_from4d(out, nd), x._ndarray.dtype))
    if GRAD.enabled and (x._requires_grad or w._requires_grad or (b is not None and b._requires_grad)):
        node = record_op(ConvolutionBackward0, (x, w, b), result)
        node.geom, node.transposed = geom, False
        node.x_shape, node.w_shape = x._ndarray.shape, w._ndarray.shape
        node.bias_shape = (0,) if b is None else b._ndarray.shape
        node.bias_dtype = None if b is None else b._ndarray.dtype
        # the im2col columns serve the weight gradient again; keep them only if it will be wanted, with
        # the input's array and version: pack hooks (which skip the version check) may hand back
        # another tensor, or this one changed in place, and then the columns are stale
        node.cols = (cols, x._ndarray, x._version_counter[0]) if w._requires_grad else None
        node.save(x, w)  # torch packs both, whichever gradients are wanted
    return result


def conv_transpose(x: Tensor, w: Tensor, b, geom: _Geom, out_shape) -> Tensor:
    """Adjoint of ``convolution`` in its input: maps (N, O, ...) to ``out_shape`` (N, C, ...)."""
    nd = geom.nd
    shape4 = out_shape if nd == 2 else (out_shape[0], out_shape[1], 1, out_shape[2])
    if x._ndarray.__class__ is MetaArray or w._ndarray.__class__ is MetaArray:
        out = meta_array(out_shape, np.result_type(widen(x._ndarray).dtype, widen(w._ndarray).dtype))
    else:
        out = conv_input_grad_np(_as4d(widen(x._ndarray), nd), _as4d(widen(w._ndarray), nd), shape4, geom)
        out = np.ascontiguousarray(_from4d(out, nd))
    result = wrap(narrow_to(_bias_add(out, b), x._ndarray.dtype))
    if GRAD.enabled and (x._requires_grad or w._requires_grad or (b is not None and b._requires_grad)):
        node = record_op(ConvolutionBackward0, (x, w, b), result)
        node.geom, node.transposed, node.cols = geom, True, None
        node.x_shape, node.w_shape, node.out_shape = x._ndarray.shape, w._ndarray.shape, out_shape
        node.bias_shape = (0,) if b is None else b._ndarray.shape
        node.bias_dtype = None if b is None else b._ndarray.dtype
        node.save(x, w)  # torch packs both, whichever gradients are wanted
    return result


class _WeightGradient(Node):
    """Backward of the weight-gradient op (third order and transposed convolutions): it is bilinear
    in (x, gout)."""

    __slots__ = ("geom", "x_shape")

    def apply(self, grads):
        gw = grads[0]
        x, gout = self.saved()
        gx = conv_transpose(gout, gw, None, self.geom, self.x_shape) if self._should_compute_output(0) else None
        gg = convolution(x, gw, None, self.geom) if self._should_compute_output(1) else None
        return gx, gg


_WeightGradientNode = node_class("ConvolutionBackwardBackward0", _WeightGradient)


class ConvolutionBackwardBackward0(Node):
    """torch's derivative of a convolution's backward: one node over (grad_output, input, weight)
    whose results are the input, weight and bias gradients; its own backward composes the
    convolution ops (so a third order records them)."""

    __slots__ = ("geom", "transposed", "x_shape", "w_shape", "out_shape", "full_x_shape")
    _num_outputs = 3
    saved_names = ("grad_output", "input", "weight")
    saved_values = {k: v for k, v in ConvolutionBackward0.saved_values.items() if k != "bias_sym_sizes_opt"}

    def apply(self, grads):
        ggx, ggw, ggb = (list(grads) + [None] * 3)[:3]
        g, x, w = self.saved()
        if self.transposed:
            return self._apply_transposed(g, x, w, ggx, ggw, ggb)
        geom = self.geom
        gg = gx = gw = None
        if self._should_compute_output(0):
            terms = []
            if ggx is not None:
                terms.append(convolution(ggx, w, None, geom))
            if ggw is not None:
                terms.append(convolution(x, ggw, None, geom))
            if ggb is not None:
                terms.append(ggb.reshape((1, -1) + (1,) * (g._ndarray.ndim - 2)).expand_as(g))
            for t in terms:
                gg = t if gg is None else gg + t
        if self._should_compute_output(1) and ggw is not None:
            gx = conv_transpose(g, ggw, None, geom, self.x_shape)
        if self._should_compute_output(2) and ggx is not None:
            gw = conv_weight(ggx, g, self.w_shape, geom)
        return gg, gx, gw

    def _apply_transposed(self, g, x, w, ggx, ggw, ggb):
        """The same for a transposed convolution, whose input gradient is a convolution of the
        incoming gradient (cut to the input's size where output_padding reached past the windows)."""
        geom = self.geom
        if ggx is not None and tuple(ggx._ndarray.shape) != self.full_x_shape:
            from .pooling import pad
            extra = [f - s for f, s in zip(self.full_x_shape[2:], ggx._ndarray.shape[2:])]
            ggx = pad(ggx, tuple(v for e in reversed(extra) for v in (0, e)))
        gg = gx = gw = None
        if self._should_compute_output(0):
            terms = []
            if ggx is not None:
                terms.append(conv_transpose(ggx, w, None, geom, g._ndarray.shape))
            if ggw is not None:
                terms.append(conv_transpose(x, ggw, None, geom, g._ndarray.shape))
            if ggb is not None:
                terms.append(ggb.reshape((1, -1) + (1,) * (g._ndarray.ndim - 2)).expand_as(g))
            for t in terms:
                gg = t if gg is None else gg + t
        if self._should_compute_output(1) and ggw is not None:
            gx = convolution(g, ggw, None, geom)
            if gx._ndarray.shape != self.x_shape:
                gx = gx[tuple(slice(0, s) for s in self.x_shape)]
        if self._should_compute_output(2) and ggx is not None:
            gw = conv_weight(g, ggx, self.w_shape, geom)
        return gg, gx, gw


def _full_input_shape(first):
    """A transposed convolution's input gradient before the cut: the size of a convolution over the
    output (output_padding may add rows no window reaches)."""
    geom, out_shape, w_shape = first.geom, first.out_shape, first.w_shape
    if geom.nd == 1:
        spatial = (_out_size(out_shape[2], w_shape[2], geom.stride[1], geom.dil[1], geom.pad[2], geom.pad[3]),)
    else:
        spatial = tuple(_out_size(out_shape[2 + i], w_shape[2 + i], geom.stride[i], geom.dil[i], geom.pad[2 * i],
                                  geom.pad[2 * i + 1]) for i in range(2))
    return tuple(first.x_shape[:2]) + spatial


def _record_double_backward(first, g, x, w, results):
    """``results`` (input, weight, bias gradients) made the outputs of torch's double-backward node
    when any of its inputs requires grad."""
    if not (g._requires_grad or x._requires_grad or w._requires_grad):
        return results
    node = ConvolutionBackwardBackward0((edge(g), edge(x), edge(w)))
    node.geom, node.transposed = first.geom, first.transposed
    node.x_shape, node.w_shape = first.x_shape, first.w_shape
    if first.transposed:
        node.out_shape, node.full_x_shape = first.out_shape, _full_input_shape(first)
    node.save(g, x, w)
    return outputs_of(node, results)


def conv_weight(x: Tensor, gout: Tensor, w_shape, geom: _Geom, cols=None) -> Tensor:
    nd = geom.nd
    w4 = w_shape if nd == 2 else (w_shape[0], w_shape[1], 1, w_shape[2])
    if x._ndarray.__class__ is MetaArray or gout._ndarray.__class__ is MetaArray:
        gw = meta_array(w4, widen(gout._ndarray).dtype)
    else:
        gw = conv_weight_grad_np(_as4d(widen(x._ndarray), nd), _as4d(widen(gout._ndarray), nd), w4, geom, cols)
    result = wrap(gw.reshape(w_shape).astype(gout._ndarray.dtype, copy=False))
    if GRAD.enabled and (x._requires_grad or gout._requires_grad):
        node = record_op(_WeightGradientNode, (x, gout), result)
        node.geom, node.x_shape = geom, x._ndarray.shape
        node.save(x, gout)
    return result


# ---- argument handling shared by conv1d/conv2d/conv_transpose ----------------------------------
def _tuple(v, n, name="value"):
    if isinstance(v, (tuple, list)):
        if len(v) == 1 and n > 1:
            return tuple(int(v[0]) for _ in range(n))
        return tuple(int(a) for a in v)
    return (int(v),) * n


def _fmt(t):
    return " x ".join(str(int(v)) for v in t)


def _check_input(x, w, nd, name, groups, transposed=False, bias=None, stride=1, padding=0, dilation=1,
                 output_padding=0):
    """torch's argument errors for a convolution, in the order torch raises them (the dtype of the weight
    is checked later, by ``_check_dtypes``, and dilation 0 by ``_check_dilation``)."""
    if x._ndarray.ndim != nd + 2 and x._ndarray.ndim != nd + 1:
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, but got input "
                           f"of size: {list(x._ndarray.shape)}")
    if not transposed and bias is not None and bias._ndarray.dtype != x._ndarray.dtype:
        raise RuntimeError(f"Input type ({_c_type_name(x)}) and bias type ({_c_type_name(bias)}) should be the same")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    params = {"stride": stride, "padding": padding, "dilation": dilation}
    if transposed:
        params["output_padding"] = output_padding
    for key, value in params.items():
        if isinstance(value, (tuple, list)) and len(value) not in (1, nd):
            raise RuntimeError(f"expected {key} to be a single integer value or a list of {nd} values to match the "
                               f"convolution dimensions, but got {key}={list(value)}")
    if not isinstance(padding, str) and any(p < 0 for p in _tuple(padding, nd)):
        raise RuntimeError("negative padding is not supported")
    if transposed and any(p < 0 for p in _tuple(output_padding, nd)):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in _tuple(stride, nd)):
        raise RuntimeError("non-positive stride is not supported")
    if any(d < 0 for d in _tuple(dilation, nd)):
        raise RuntimeError("dilation should be greater than zero")
    if w._ndarray.ndim != nd + 2:
        raise RuntimeError("weight should have at least three dimensions" if nd == 1 else
                           f"Expected {nd + 2}-dimensional weight for {nd + 2}-dimensional input "
                           f"{list(x._ndarray.shape)}, but got {w._ndarray.ndim}-dimensional weight of size "
                           f"{list(w._ndarray.shape)} instead")
    c = x._ndarray.shape[-nd - 1]
    want = w._ndarray.shape[0] if transposed else w._ndarray.shape[1] * groups
    if c != want:
        head = "Given transposed=1, weight of size" if transposed else f"Given groups={groups}, weight of size"
        shown = ((1,) if x._ndarray.ndim == nd + 1 else ()) + x._ndarray.shape   # torch reports the batched shape
        raise RuntimeError(f"{head} {list(w._ndarray.shape)}, expected input{list(shown)} to have {want} "
                           f"channels, but got {c} channels instead")
    out_channels = w._ndarray.shape[1] * groups if transposed else w._ndarray.shape[0]
    if bias is not None and bias._ndarray.shape != (out_channels,):
        head = "Given transposed=1, weight" if transposed else "Given weight"
        raise RuntimeError(f"{head} of size {list(w._ndarray.shape)}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {list(bias._ndarray.shape)} instead")


def _check_dilation(dilation, nd, transposed):
    """Dilation 0, in the words of torch's CPU kernels (1-d convolutions run as 2-d ones)."""
    dilation = _tuple(dilation, nd)
    if all(d > 0 for d in dilation):
        return
    if nd == 1:
        dilation = (1,) + dilation
    if not transposed:
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    names = ("dilation_depth", "dilation_height", "dilation_width")[-len(dilation):]
    raise RuntimeError("dilation should be greater than zero, but got "
                       + ", ".join(f"{n}: {d}" for n, d in zip(names, dilation)))


def _check_dtypes(x, w):
    """torch's CPU error for a weight whose dtype is not the input's. (A convolution's bias must have the
    input's dtype, see ``_check_input``; a transposed convolution's need not: its result takes the input's.)"""
    if x._ndarray.dtype == w._ndarray.dtype:
        return
    if x.dtype is _dtype.bfloat16:  # torch tries its oneDNN path for bfloat16 inputs first
        raise RuntimeError(f"Input type (CPUBFloat16Type) and weight type ({w.type()}) should be the same or input "
                           "should be a MKLDNN tensor and weight is a dense tensor")
    raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(x._ndarray.dtype)} but found "
                       f"{_dtype.scalar_type_name(w._ndarray.dtype)}")


def _c_type_name(t):
    return _C_TYPE_NAMES.get(t._ndarray.dtype.name, t._ndarray.dtype.name)


def padding_pairs(padding, kernel, dilation, stride, nd):
    """(before, after) per spatial dim for ``padding``: an int, a tuple, ``"valid"`` or ``"same"``
    (the odd amount goes after, as torch puts it), with torch's errors for a bad string."""
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * nd
        if padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            return [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for k, d in zip(kernel, dilation)]
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    return [(p, p) for p in _tuple(padding, nd)]


def check_kernel_fits(padded_sizes, kernel, dilation):
    """torch's RuntimeError when the dilated kernel reaches past the padded input."""
    reach = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(n < r for n, r in zip(padded_sizes, reach)):
        raise RuntimeError(f"Calculated padded input size per channel: ({_fmt(tuple(padded_sizes))}). Kernel size: "
                           f"({_fmt(reach)}). Kernel size can't be greater than actual input size")


def check_conv_arguments(x, weight, bias, stride, padding, dilation, groups, nd, name):
    """A forward convolution's argument checks, in torch's order (the dtypes are checked later)."""
    if not isinstance(x, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({type(x).__name__}, {type(weight).__name__})")
    _check_input(x, weight, nd, name, groups, bias=bias, stride=stride, padding=padding, dilation=dilation)
    _check_dilation(dilation, nd, transposed=False)


def conv_nd(x, weight, bias, stride, padding, dilation, groups, nd, name):
    check_conv_arguments(x, weight, bias, stride, padding, dilation, groups, nd, name)
    unbatched = x._ndarray.ndim == nd + 1
    if unbatched:
        x = x.unsqueeze(0)
    ks = weight._ndarray.shape[2:]
    stride, dilation = _tuple(stride, nd), _tuple(dilation, nd)
    pairs = padding_pairs(padding, ks, dilation, stride, nd)
    if nd == 1:
        geom = _Geom((1, stride[0]), (0, 0) + pairs[0], (1, dilation[0]), groups, 1)
        sizes = (x._ndarray.shape[2] + sum(pairs[0]),)
    else:
        geom = _Geom(stride, pairs[0] + pairs[1], dilation, groups, 2)
        sizes = (x._ndarray.shape[2] + sum(pairs[0]), x._ndarray.shape[3] + sum(pairs[1]))
    check_kernel_fits(sizes, ks, dilation)
    _check_dtypes(x, weight)
    out = convolution(x, weight, bias, geom)
    return out.squeeze(0) if unbatched else laid_out_as_torch(out, x, weight)


def laid_out_as_torch(out: Tensor, x: Tensor, weight: Tensor) -> Tensor:
    """A convolution's fresh result, channels-last in memory where torch's is: when the input or the
    weight is channels-last (and not also row-major). Only the strides change: same values, no op."""
    from ... import _memory_format
    name = {4: _memory_format.CHANNELS_LAST, 5: _memory_format.CHANNELS_LAST_3D}.get(out._ndarray.ndim)
    if name is None:
        return out
    for t in (x, weight):
        data = t._ndarray
        if data.ndim == out._ndarray.ndim and not data.flags.c_contiguous and _memory_format.is_contiguous(data, name):
            if not _memory_format.is_contiguous(out._ndarray, name):
                out._ndarray = _memory_format.copy(out._ndarray, name)
            break
    return out


def transposed_geometry(ins, ks, stride, padding, output_padding, dilation, nd, name):
    """A transposed convolution's arguments as ``nd``-tuples, checked as torch checks them, and its
    output sizes: ``(stride, padding, output_padding, dilation, outs)``."""
    if isinstance(padding, str):
        raise RuntimeError(f"{name}: padding must be an int or a tuple of ints")
    stride, padding = _tuple(stride, nd), _tuple(padding, nd)
    output_padding, dilation = _tuple(output_padding, nd), _tuple(dilation, nd)
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= s and op >= d:
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                               f"output_padding: {_fmt(output_padding).replace(' x ', ', ')}, stride: "
                               f"{_fmt(stride).replace(' x ', ', ')}, dilation: {_fmt(dilation).replace(' x ', ', ')}")
    outs = tuple((i - 1) * s - 2 * p + d * (k - 1) + op + 1
                 for i, s, p, d, k, op in zip(ins, stride, padding, dilation, ks, output_padding))
    if any(o <= 0 for o in outs):
        raise RuntimeError(f"Given input size per channel: ({_fmt(tuple(ins))}). Calculated output size per "
                           f"channel: ({_fmt(outs)}). Output size is too small")
    return stride, padding, output_padding, dilation, outs


def conv_transpose_nd(x, weight, bias, stride, padding, output_padding, groups, dilation, nd, name):
    _check_input(x, weight, nd, name, groups, transposed=True, bias=bias, stride=stride, padding=padding,
                 dilation=dilation, output_padding=output_padding)
    _check_dilation(dilation, nd, transposed=True)
    c_out = weight._ndarray.shape[1] * groups
    unbatched = x._ndarray.ndim == nd + 1
    if unbatched:
        x = x.unsqueeze(0)
    stride, padding, output_padding, dilation, outs = transposed_geometry(
        x._ndarray.shape[2:], weight._ndarray.shape[2:], stride, padding, output_padding, dilation, nd, name)
    _check_dtypes(x, weight)
    # the adjoint of a convolution of an input of size ``outs``; output_padding adds rows at the end that
    # the convolution's windows never reach, which the padding on that side accounts for
    if nd == 1:
        geom = _Geom((1, stride[0]), (0, 0, padding[0], padding[0]), (1, dilation[0]), groups, 1)
    else:
        geom = _Geom(stride, (padding[0], padding[0], padding[1], padding[1]), dilation, groups, 2)
    # a convolution over ``outs`` must give exactly ``ins`` outputs: check, and pad the far side if needed
    out = conv_transpose(x, weight, bias, geom, (x._ndarray.shape[0], c_out) + outs)
    return out.squeeze(0) if unbatched else out
