"""N-d (3-D and up) convolution and transposed convolution as one recorded op each, torch's
``ConvolutionBackward0`` over (input, weight, bias), with NumPy kernels for the forward and for
each gradient.

A convolution multiplies the weight with "columns", every input window unrolled. Two column
layouts are used, as in the composed ops of ``convnd.py``:

* stride 1, one group, finite operands: every kernel offset is a constant shift of the flattened
  spatial index of the (padded) input, so the columns are taken on the input's own grid, one
  contiguous copy per offset, and the grid places past the output's trailing sizes are dropped
  afterwards. (Those places meet zero gradients in the weight gradient, which is exact only while
  the operands are finite: 0 * inf would be NaN.)
* otherwise: one strided window gather, channels last, (N, *out, K, C), and one batched matmul per
  group.

The transposed convolution is the adjoint in the input of a convolution whose input has the
transposed convolution's output size; so one set of three kernels (forward, input gradient, weight
gradient) serves both, with the roles of the operands swapped.

Double backward: when the backward runs with ``create_graph``, the gradients are computed with the
differentiable composed ops of ``convnd.py`` instead, so the second-order graph is theirs (views,
window gathers, matmuls), not torch's single ``ConvolutionBackwardBackward0`` node. Values are the
same.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

import hookgrad
from ... import _threads as _blas
from ..._dtype import narrow_to, scalar_type_name, widen
from ..._ops._base import GRAD
from ..._ops._declare import record_op
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node
from .conv import _tuple, check_kernel_fits, laid_out_as_torch, padding_pairs
from .convnd import _gather_windows_np, _scatter_windows_np

__all__ = ["convolution_nd_entry", "laid_out_as_torch_3d", "convolution_nd_op", "conv_transpose_nd_op",
           "ConvolutionBackward0"]


# ---- geometry ----------------------------------------------------------------------------------
class _Geometry:
    """A convolution's layout: symmetric ``padding`` per spatial dim, stride, dilation, groups."""

    __slots__ = ("stride", "padding", "dilation", "groups")

    def __init__(self, stride, padding, dilation, groups):
        self.stride, self.padding, self.dilation = tuple(stride), tuple(padding), tuple(dilation)
        self.groups = groups

    def unit_stride(self) -> bool:
        return all(s == 1 for s in self.stride)


def _pad_np(a, padding):
    if not any(padding):
        return a
    return np.pad(a, [(0, 0), (0, 0)] + [(p, p) for p in padding])


def _crop_np(a, padding):
    if not any(padding):
        return a
    return np.ascontiguousarray(a[(slice(None), slice(None)) + tuple(slice(p, a.shape[2 + i] - p)
                                                                      for i, p in enumerate(padding))])


def _shifts(padded_sizes, kernel, dilation):
    pitches = [math.prod(padded_sizes[i + 1:]) for i in range(len(padded_sizes))]
    return [sum(o * d * p for o, d, p in zip(offset, dilation, pitches))
            for offset in itertools.product(*[range(k) for k in kernel])]


def _grid_length(padded_sizes, out_sizes):
    """The grid places of the first ``out_sizes[0]`` rows of the padded input."""
    return out_sizes[0] * math.prod(padded_sizes[1:])


def _all_finite(*arrays):
    return all(np.isfinite(a).all() for a in arrays)


# ---- the stride-1 grid layout -------------------------------------------------------------------
def _grid_columns(xp, kernel, dilation, out_sizes):
    """(N, C * K, length): row (c, tap) is the flattened padded input from the tap's shift on."""
    batch, channels = xp.shape[:2]
    sizes = xp.shape[2:]
    shifts = _shifts(sizes, kernel, dilation)
    length = _grid_length(sizes, out_sizes)
    flat = xp.reshape(batch, channels, math.prod(sizes))
    reach = max(shifts) + length
    if reach > flat.shape[-1]:  # the last offsets read past the end: zeros there (dropped places only)
        flat = np.concatenate([flat, np.zeros((batch, channels, reach - flat.shape[-1]), flat.dtype)], -1)
    cols = np.empty((batch, channels, len(shifts), length), dtype=xp.dtype)
    for tap, shift in enumerate(shifts):
        cols[:, :, tap] = flat[:, :, shift:shift + length]
    return cols.reshape(batch, channels * len(shifts), length)


def _grid_from_output(g, padded_sizes):
    """An output-shaped (N, O, *out) array laid on the input's grid (N, O, length), zeros between."""
    out_sizes = g.shape[2:]
    if tuple(out_sizes[1:]) == tuple(padded_sizes[1:]):
        return g.reshape(g.shape[:2] + (math.prod(out_sizes),))
    grid = np.zeros(g.shape[:3] + tuple(padded_sizes[1:]), dtype=g.dtype)
    grid[(Ellipsis,) + tuple(slice(0, n) for n in out_sizes[1:])] = g
    return grid.reshape(g.shape[:2] + (out_sizes[0] * math.prod(padded_sizes[1:]),))


def _output_from_grid(grid, out_channels, padded_sizes, out_sizes):
    out = grid.reshape((grid.shape[0], out_channels, out_sizes[0]) + tuple(padded_sizes[1:]))
    if tuple(out_sizes[1:]) != tuple(padded_sizes[1:]):
        out = out[(slice(None), slice(None), slice(None)) + tuple(slice(0, n) for n in out_sizes[1:])]
    return np.ascontiguousarray(out)


def _scatter_grid_columns(cols, padded_shape, kernel, dilation, out_sizes):
    """The adjoint of ``_grid_columns``: each row added back at its shift."""
    batch, channels = padded_shape[:2]
    sizes = padded_shape[2:]
    shifts = _shifts(sizes, kernel, dilation)
    length = _grid_length(sizes, out_sizes)
    size = math.prod(sizes)
    taps = cols.reshape(batch, channels, len(shifts), length)
    flat = np.zeros((batch, channels, max(size, max(shifts) + length)), dtype=cols.dtype)
    for tap, shift in enumerate(shifts):
        flat[:, :, shift:shift + length] += taps[:, :, tap]
    return np.ascontiguousarray(flat[:, :, :size]).reshape(padded_shape)


# ---- the general layout: windows channels last, one matmul per group ------------------------------
def _group_columns(xp, kernel, stride, dilation, out_sizes, groups):
    """(G, N * L, K * Cg): every window of the padded input, tap-major within a group."""
    batch, channels = xp.shape[:2]
    taps, places = math.prod(kernel), math.prod(out_sizes)
    cols = _gather_windows_np(xp, kernel, stride, dilation, out_sizes, True)      # N, *out, K, C
    cols = cols.reshape(batch * places, taps, groups, channels // groups).transpose(2, 0, 1, 3)
    return np.ascontiguousarray(cols).reshape(groups, batch * places, taps * (channels // groups))


def _group_weight(w, groups):
    """(O, Cg, *K) -> (G, K * Cg, Og), the rows in the order of ``_group_columns``."""
    out_channels, group_in = w.shape[:2]
    taps = math.prod(w.shape[2:])
    m = w.reshape(groups, out_channels // groups, group_in, taps).transpose(0, 3, 2, 1)
    return m.reshape(groups, taps * group_in, out_channels // groups)


def _group_output(g, groups):
    """(N, O, *out) -> (G, N * L, Og)."""
    batch, out_channels = g.shape[:2]
    places = batch * math.prod(g.shape[2:])
    m = np.moveaxis(g, 1, -1).reshape(places, groups, out_channels // groups).transpose(1, 0, 2)
    return np.ascontiguousarray(m)


# ---- the three kernels ----------------------------------------------------------------------------
def conv_forward_np(x, w, geom, out_sizes, bias=None):
    """(N, O, *out_sizes) for an unpadded x (N, C, *S), w (O, C/groups, *K); ``out_sizes`` may stop
    short of what the windows reach. Returns (out, columns), the columns for the weight gradient."""
    kernel = w.shape[2:]
    out_channels = w.shape[0]
    xp = _pad_np(x, geom.padding)
    if geom.groups == 1 and geom.unit_stride() and _all_finite(xp, w):
        cols = _grid_columns(xp, kernel, geom.dilation, out_sizes)
        out = _output_from_grid(_blas.matmul(w.reshape(out_channels, -1), cols), out_channels, xp.shape[2:],
                                out_sizes)
        layout = "grid"
    else:
        cols = _group_columns(xp, kernel, geom.stride, geom.dilation, out_sizes, geom.groups)
        prod = _blas.matmul(cols, _group_weight(w, geom.groups))                  # G, N*L, Og
        out = prod.transpose(1, 0, 2).reshape((x.shape[0],) + tuple(out_sizes) + (out_channels,))
        out = np.ascontiguousarray(np.moveaxis(out, -1, 1))
        layout = "groups"
    if bias is not None:
        out += bias.reshape((1, -1) + (1,) * len(kernel))
    return out, (layout, cols)


def conv_input_grad_np(g, w, geom, in_shape):
    """The adjoint of ``conv_forward_np`` in x: g (N, O, *out) -> (N, C, *S) = ``in_shape``."""
    kernel = w.shape[2:]
    out_sizes = g.shape[2:]
    padded_shape = tuple(in_shape[:2]) + tuple(n + 2 * p for n, p in zip(in_shape[2:], geom.padding))
    if geom.groups == 1 and geom.unit_stride() and _all_finite(w):
        cols = _blas.matmul(w.reshape(w.shape[0], -1).T, _grid_from_output(g, padded_shape[2:]))  # N, C*K, length
        xp = _scatter_grid_columns(cols, padded_shape, kernel, geom.dilation, out_sizes)
    else:
        groups = geom.groups
        batch, channels = in_shape[:2]
        taps = math.prod(kernel)
        prod = _blas.matmul(_group_output(g, groups), _group_weight(w, groups).transpose(0, 2, 1))  # G, N*L, K*Cg
        prod = prod.reshape(groups, batch * math.prod(out_sizes), taps, channels // groups).transpose(1, 2, 0, 3)
        cols = prod.reshape((batch,) + tuple(out_sizes) + (taps, channels))
        xp = _scatter_windows_np(cols, padded_shape, kernel, geom.stride, geom.dilation, out_sizes, True)
    return _crop_np(xp, geom.padding)


def conv_weight_grad_np(x, g, geom, w_shape, columns=None):
    """The weight gradient of ``conv_forward_np``: the output gradient times the columns, summed
    over the batch. ``columns`` are the forward's, when still valid."""
    kernel = w_shape[2:]
    out_sizes = g.shape[2:]
    groups = geom.groups
    if geom.groups == 1 and geom.unit_stride() and _all_finite(x):
        if columns is None or columns[0] != "grid":
            columns = ("grid", _grid_columns(_pad_np(x, geom.padding), kernel, geom.dilation, out_sizes))
        padded_sizes = tuple(n + 2 * p for n, p in zip(x.shape[2:], geom.padding))
        grid = _grid_from_output(g, padded_sizes)                                # N, O, length
        gw = _blas.matmul(grid, columns[1].transpose(0, 2, 1)).sum(0)             # O, C*K
        return np.ascontiguousarray(gw).reshape(w_shape)
    if columns is None or columns[0] != "groups":
        columns = ("groups", _group_columns(_pad_np(x, geom.padding), kernel, geom.stride, geom.dilation, out_sizes,
                                            groups))
    gw = _blas.matmul(columns[1].transpose(0, 2, 1), _group_output(g, groups))    # G, K*Cg, Og
    out_channels, group_in = w_shape[:2]
    gw = gw.reshape(groups, math.prod(kernel), group_in, out_channels // groups).transpose(0, 3, 2, 1)
    return np.ascontiguousarray(gw).reshape(w_shape)


# ---- the recorded op --------------------------------------------------------------------------------
class ConvolutionBackward0(Node):
    """torch's node of an N-d convolution or transposed convolution over (input, weight, bias).

    Its backward computes only the gradients whose input has an edge. Under ``create_graph`` it
    computes them with the composed differentiable ops of ``convnd.py``: the values are torch's,
    the second-order graph is not (no ``ConvolutionBackwardBackward0`` node)."""

    # ``given``: stride, padding, dilation and output_padding as the caller wrote them (an int made
    # one per dim, a one-element list kept as it is), which is what torch's node shows
    __slots__ = ("geom", "transposed", "given", "x_shape", "w_shape", "bias_shape", "bias_dtype", "columns")
    saved_names = ("input", "weight")
    saved_values = {
        "stride": lambda n: n.given[0],
        "padding": lambda n: n.given[1],
        "dilation": lambda n: n.given[2],
        "transposed": lambda n: n.transposed,
        "output_padding": lambda n: n.given[3],
        "groups": lambda n: n.geom.groups,
        # the bias's sizes, (0,) without one
        "bias_sym_sizes_opt": lambda n: n.bias_shape,
    }

    def apply(self, grads):
        g = grads[0]
        x, w = self.saved()
        columns, self.columns = self.columns, None
        if GRAD.enabled:
            return self._composed_gradients(g, x, w)
        needs = [self._should_compute_output(i) for i in range(len(self.next_functions))]
        gd, xd, wd = widen(g._ndarray), widen(x._ndarray), widen(w._ndarray)
        if columns is not None and not (columns[1] is x._ndarray and columns[2] == x._version_counter[0]):
            columns = None   # a pack hook handed back another tensor, or the input changed in place
        gx = gw = gb = None
        if not self.transposed:
            if needs[0]:
                gx = conv_input_grad_np(gd, wd, self.geom, self.x_shape)
            if needs[1]:
                gw = conv_weight_grad_np(xd, gd, self.geom, self.w_shape, None if columns is None else columns[0])
        else:
            # the adjoint of a convolution over the output: its input gradient is that convolution of
            # g, its weight gradient the convolution's weight gradient with the roles of g and x swapped
            if needs[0]:
                gx, _ = conv_forward_np(gd, wd, self.geom, self.x_shape[2:])
            if needs[1]:
                gw = conv_weight_grad_np(gd, xd, self.geom, self.w_shape)
        if needs[2]:
            gb = gd.sum((0,) + tuple(range(2, gd.ndim)))
        return (None if gx is None else wrap(narrow_to(gx, x._ndarray.dtype)),
                None if gw is None else wrap(narrow_to(gw, w._ndarray.dtype)),
                None if gb is None else wrap(narrow_to(gb, self.bias_dtype)))

    def _composed_gradients(self, g, x, w):
        """create_graph: the same gradients written with differentiable ops."""
        from .convnd import conv_transpose_nd_generic, convolution_nd
        needs = [self._should_compute_output(i) for i in range(len(self.next_functions))]
        geom = self.geom
        nd = len(geom.stride)
        gx = gw = gb = None
        if not self.transposed:
            if needs[0]:
                gx = _composed_input_grad(g, w, geom, self.x_shape, conv_transpose_nd_generic)
            if needs[1]:
                gw = _composed_weight_grad(x, g, geom, self.w_shape, convolution_nd)
        else:
            if needs[0]:
                gx = convolution_nd(g, w, None, geom.stride, geom.padding, geom.dilation, geom.groups)
                if tuple(gx.shape) != tuple(self.x_shape):   # output_padding beyond the stride
                    gx = gx[tuple(slice(0, n) for n in self.x_shape)]
            if needs[1]:
                gw = _composed_weight_grad(g, x, geom, self.w_shape, convolution_nd)
        if needs[2]:
            gb = g.sum((0,) + tuple(range(2, 2 + nd)))
            if gb._ndarray.dtype != self.bias_dtype:
                gb = gb.to(wrap(np.empty(0, self.bias_dtype)).dtype)
        return gx, gw, gb


def _composed_input_grad(g, w, geom, x_shape, conv_transpose_nd_generic):
    natural = [(o - 1) * s - 2 * p + d * (k - 1) + 1 for o, s, p, d, k in zip(
        g.shape[2:], geom.stride, geom.padding, geom.dilation, w.shape[2:])]
    extra = [n - m for n, m in zip(x_shape[2:], natural)]   # input rows no window reached
    return conv_transpose_nd_generic(g, w, None, geom.stride, geom.padding, extra, geom.groups, geom.dilation)


def _composed_weight_grad(x, g, geom, w_shape, convolution_nd):
    """The weight gradient as a convolution of the input with the output gradient as kernel: batch
    and channels swap places, stride and dilation too; groups split the (group, sample) channels."""
    groups = geom.groups
    batch, channels = x.shape[0], x.shape[1]
    out_channels = g.shape[1]
    nd = len(geom.stride)
    xp = hookgrad.nn.functional.pad(x, [p for p in reversed(geom.padding) for _ in (0, 1)]) if any(geom.padding) else x
    spatial = tuple(xp.shape[2:])
    planes = xp.reshape(batch, groups, channels // groups, *spatial).permute(2, 1, 0, *range(3, 3 + nd))
    planes = planes.reshape(channels // groups, groups * batch, *spatial)
    kernel = g.reshape(batch, out_channels, *g.shape[2:]).transpose(0, 1)        # O, N, *out
    full = convolution_nd(planes, kernel, None, geom.dilation, 0, geom.stride, groups)  # Cg, O, *K'
    full = full[(slice(None), slice(None)) + tuple(slice(0, k) for k in w_shape[2:])]
    return full.transpose(0, 1).contiguous()


def _refuse_unsupported_dtype(x: Tensor, dilated: bool, transposed: bool) -> None:
    """torch's CPU kernels of 3-D convolutions have no loop for bool, nor, where dilated or
    transposed, for integers narrower than int64."""
    kind, name = x._ndarray.dtype.kind, x._ndarray.dtype.name
    if kind not in "biu" or name == "int64":
        return
    if transposed:
        kernel = "slow_conv_transpose3d_out_cpu"
    elif dilated:
        kernel = "slow_conv_dilated<>"
    elif kind == "b":
        kernel = "compute_columns3d"
    else:
        return
    raise NotImplementedError(f'"{kernel}" not implemented for \'{scalar_type_name(x._ndarray.dtype)}\'')


def as_given(value, nd):
    """An int argument made one per spatial dim; a list or tuple kept as written."""
    if isinstance(value, (tuple, list)):
        return tuple(int(v) for v in value)
    return (int(value),) * nd


def _record(out, x, w, b, geom, transposed, given, columns):
    result = wrap(narrow_to(out, x._ndarray.dtype))
    if GRAD.enabled and (x._requires_grad or w._requires_grad or (b is not None and b._requires_grad)):
        node = record_op(ConvolutionBackward0, (x, w, b), result)
        node.geom, node.transposed, node.given = geom, transposed, given
        node.x_shape, node.w_shape = tuple(x._ndarray.shape), tuple(w._ndarray.shape)
        node.bias_shape = (0,) if b is None else tuple(b._ndarray.shape)
        node.bias_dtype = None if b is None else b._ndarray.dtype
        # the forward's columns serve the weight gradient again: kept with the input's array and
        # version, to be used only while the saved input is still that array, unchanged
        node.columns = (columns, x._ndarray, x._version_counter[0]) if columns is not None else None
        node.save(x, w)  # torch packs both, whichever gradients are wanted
    return result


def convolution_nd_op(x: Tensor, w: Tensor, b, stride, padding, dilation, groups: int, given=None) -> Tensor:
    """A batched N-d convolution with symmetric ``padding``: x (N, C, *S), w (O, C/groups, *K).
    ``given``: the (stride, padding, dilation, output_padding) the node shows, by default these."""
    geom = _Geometry(stride, padding, dilation, groups)
    kernel = w._ndarray.shape[2:]
    out_sizes = tuple((n + 2 * p - d * (k - 1) - 1) // s + 1 for n, p, d, k, s in zip(
        x._ndarray.shape[2:], geom.padding, geom.dilation, kernel, geom.stride))
    out, columns = conv_forward_np(widen(x._ndarray), widen(w._ndarray), geom, out_sizes,
                                   None if b is None else widen(b._ndarray))
    keep = columns if w._requires_grad else None
    if given is None:
        given = (geom.stride, geom.padding, geom.dilation, (0,) * len(kernel))
    return _record(out, x, w, b, geom, False, given, keep)


def conv_transpose_nd_op(x: Tensor, w: Tensor, b, stride, padding, output_padding, groups: int, dilation,
                         out_sizes, given=None) -> Tensor:
    """A batched N-d transposed convolution: x (N, C_in, *S), w (C_in, C_out/groups, *K), to
    (N, C_out, *out_sizes). ``given`` as for ``convolution_nd_op``."""
    _refuse_unsupported_dtype(x, any(d != 1 for d in dilation), transposed=True)
    geom = _Geometry(stride, padding, dilation, groups)
    if given is None:
        given = (geom.stride, geom.padding, geom.dilation, tuple(output_padding))
    in_shape = (x._ndarray.shape[0], w._ndarray.shape[1] * groups) + tuple(out_sizes)
    out = conv_input_grad_np(widen(x._ndarray), widen(w._ndarray), geom, in_shape)
    if b is not None:
        out = out + widen(b._ndarray).astype(out.dtype, copy=False).reshape((1, -1) + (1,) * len(out_sizes))
    return _record(out, x, w, b, geom, True, given, None)


def convolution_nd_entry(x: Tensor, w: Tensor, b, stride, padding, dilation, groups: int) -> Tensor:
    """``convolution_nd_op`` for any ``padding`` (int, tuple, "valid", "same"). An odd "same" padding
    is made symmetric first by padding the input's far ends by the difference, as torch does (so
    the node's next function is that pad's node)."""
    nd = w.dim() - 2
    kernel = tuple(w.shape[2:])
    given_stride, given_dilation = as_given(stride, nd), as_given(dilation, nd)
    stride, dilation = _tuple(stride, nd), _tuple(dilation, nd)
    pairs = padding_pairs(padding, kernel, dilation, stride, nd)
    if padding == "valid":          # torch's convolution is then called with one 0 for both paddings
        given_padding, given_output_padding = (0,), (0,)
    else:
        given_padding = tuple(before for before, _ in pairs) if isinstance(padding, str) else as_given(padding, nd)
        given_output_padding = (0,) * nd
    check_kernel_fits([n + before + after for n, (before, after) in zip(x.shape[2:], pairs)], kernel, dilation)
    _refuse_unsupported_dtype(x, any(d != 1 for d in dilation), transposed=False)
    extra = [after - before for before, after in pairs]
    if any(extra):
        x = hookgrad.nn.functional.pad(x, [v for e in reversed(extra) for v in (0, e)])
    return convolution_nd_op(x, w, b, stride, [before for before, _ in pairs], dilation, groups,
                             (given_stride, given_padding, given_dilation, given_output_padding))


def laid_out_as_torch_3d(out: Tensor, x: Tensor, w: Tensor) -> Tensor:
    """A 3-D convolution's result is channels-last where torch's is: only for the dtypes its oneDNN
    kernels take (float32, bfloat16), when the input or weight is channels-last; its other kernels
    (float64, float16) return row-major results."""
    if x._ndarray.dtype.name not in ("float32", "bfloat16"):
        return out
    return laid_out_as_torch(out, x, w)
