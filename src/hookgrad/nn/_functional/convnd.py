"""Convolution and its relatives for any number of spatial dims (3-D included), composed of
differentiable tensor ops.

A convolution gathers one strided view of the (padded) input per kernel offset, stacks them as
"columns" and multiplies them with the weight in one batched matmul; the transposed convolution is
the convolution of the stride-dilated input with the flipped, channel-swapped kernel. Because every
step is an ordinary recorded op, first and higher derivatives come from the engine. The 1-D and 2-D
layers keep their dedicated kernels in ``conv.py``; ``unfold``/``fold`` reuse those (a convolution
with an identity kernel is exactly im2col).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

import hookgrad
from ... import _dtype
from ..._ops._base import GRAD
from ..._ops._declare import record_op
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node
from .conv import _check_dilation, _check_dtypes, _check_input, _tuple, check_kernel_fits, padding_pairs, transposed_geometry
from .conv import check_conv_arguments

__all__ = ["conv3d", "conv_transpose3d", "convolution_nd", "conv_transpose_nd_generic", "unfold", "fold",
           "window_views"]


def _pad_spatial(x: Tensor, pairs, value=0.0) -> Tensor:
    """Pad (or, for negative amounts, crop) the trailing ``len(pairs)`` dims of ``x``."""
    nd = len(pairs)
    pads = []  # F.pad's order: the last dim first
    for i, (before, after) in enumerate(pairs):
        dim = x.dim() - nd + i
        if before < 0:
            x = x.narrow(dim, -before, x.size(dim) + before)
        if after < 0:
            x = x.narrow(dim, 0, x.size(dim) + after)
        pads[:0] = [max(before, 0), max(after, 0)]
    if any(pads):
        # one pad for all dims: one copy of the input (and of its gradient), not one per padded dim
        x = hookgrad.nn.functional.pad(x, pads, value=value)
    return x


def _gather_windows_np(data, kernel, stride, dilation, out_sizes, channels_last):
    nd, taps = len(kernel), math.prod(kernel)
    if channels_last:
        # (N, *out, *K, C) read from a channels-last copy of the input: the innermost run of every
        # window (its last kernel dim with the channels, at stride and dilation 1) lies together
        source = np.ascontiguousarray(np.moveaxis(data, 1, -1))
        spatial = source.strides[1:-1]
        shape = (data.shape[0],) + tuple(out_sizes) + tuple(kernel) + (data.shape[1],)
        strides = ((source.strides[0],) + tuple(st * s for st, s in zip(spatial, stride))
                   + tuple(st * d for st, d in zip(spatial, dilation)) + (source.strides[-1],))
        view = np.lib.stride_tricks.as_strided(source, shape, strides, writeable=False)
        return np.ascontiguousarray(view).reshape(shape[:1 + nd] + (taps, data.shape[1]))
    spatial = data.strides[2:]
    shape = data.shape[:2] + tuple(kernel) + tuple(out_sizes)
    strides = (data.strides[:2] + tuple(st * d for st, d in zip(spatial, dilation))
               + tuple(st * s for st, s in zip(spatial, stride)))
    view = np.lib.stride_tricks.as_strided(data, shape, strides, writeable=False)
    return np.ascontiguousarray(view).reshape(data.shape[:2] + (taps,) + tuple(out_sizes))


def _scatter_windows_np(cols, in_shape, kernel, stride, dilation, out_sizes, channels_last):
    """The adjoint of the gather: every window's values added back where they were read from."""
    if channels_last and all(s == 1 for s in stride):
        return _scatter_unit_stride(cols, in_shape, kernel, dilation, out_sizes)
    if channels_last:
        # (N, *out, K, C) -> (N, K, C, *out) first: the adds then run along whole output rows
        # (adding into channels-last planes with runs of C values was five times slower)
        cols = np.ascontiguousarray(np.moveaxis(cols, (-2, -1), (1, 2)))
    out = np.zeros(in_shape, dtype=cols.dtype)
    for tap, offset in enumerate(itertools.product(*[range(k) for k in kernel])):
        index = [slice(None), slice(None)]
        for o, s, d, n in zip(offset, stride, dilation, out_sizes):
            index.append(slice(o * d, o * d + s * (n - 1) + 1, s))
        out[tuple(index)] += cols[:, tap] if channels_last else cols[:, :, tap]
    return out


def _scatter_unit_stride(cols, in_shape, kernel, dilation, out_sizes):
    """The scatter of (N, *out, K, C) columns at stride 1, one flat add per kernel offset.

    The columns are first laid on a grid with the input's row pitches (N, K, C, out_0, *S[1:]), so
    that every kernel offset is a constant shift of the flattened spatial index: one add of a long
    contiguous run per offset, where adding box by box ran NumPy's inner loop over rows of
    ``out[-1]`` values only. The grid's unused margin is zeros."""
    batch, channels, sizes = in_shape[0], in_shape[1], tuple(in_shape[2:])
    nd, taps = len(kernel), math.prod(kernel)
    pitches = [math.prod(sizes[i + 1:]) for i in range(nd)]
    grid = np.zeros((batch, taps, channels, out_sizes[0]) + sizes[1:], dtype=cols.dtype)
    moved = np.moveaxis(cols, (-2, -1), (1, 2))                        # N, K, C, *out (a view)
    grid[(Ellipsis,) + tuple(slice(0, n) for n in out_sizes[1:])] = moved
    flat_grid = grid.reshape(batch, taps, channels, out_sizes[0] * pitches[0])
    span = sum((n - 1) * p for n, p in zip(out_sizes, pitches)) + 1   # last used position + 1
    out = np.zeros(in_shape, dtype=cols.dtype)
    flat_out = out.reshape(batch, channels, math.prod(sizes))
    for tap, offset in enumerate(itertools.product(*[range(k) for k in kernel])):
        shift = sum(o * d * p for o, d, p in zip(offset, dilation, pitches))
        flat_out[:, :, shift:shift + span] += flat_grid[:, tap, :, :span]
    return out


class _WindowOp(Node):
    """Shared geometry of the window gather and its adjoint, each the other's backward."""

    __slots__ = ("in_shape", "kernel", "stride", "dilation", "out_sizes", "channels_last")

    def _geometry(self):
        return self.in_shape, self.kernel, self.stride, self.dilation, self.out_sizes, self.channels_last


class WindowGatherBackward(_WindowOp):
    def apply(self, grads):
        g = grads[0]
        return (None if g is None else _scatter_windows(g, *self._geometry()),)


class WindowScatterBackward(_WindowOp):
    def apply(self, grads):
        g = grads[0]
        return (None if g is None else _gather_windows(g, *self._geometry()[1:]),)


def _record_window_op(node_cls, source: Tensor, result: Tensor, *geometry):
    if GRAD.enabled and source._requires_grad:
        node = record_op(node_cls, (source,), result)
        (node.in_shape, node.kernel, node.stride, node.dilation, node.out_sizes,
         node.channels_last) = geometry
    return result


def _gather_windows(x: Tensor, kernel, stride, dilation, out_sizes, channels_last) -> Tensor:
    cols = wrap(_gather_windows_np(x._ndarray, kernel, stride, dilation, out_sizes, channels_last))
    return _record_window_op(WindowGatherBackward, x, cols, x._ndarray.shape, kernel, stride, dilation, out_sizes,
                             channels_last)


def _scatter_windows(cols: Tensor, in_shape, kernel, stride, dilation, out_sizes, channels_last) -> Tensor:
    out = wrap(_scatter_windows_np(cols._ndarray, in_shape, kernel, stride, dilation, out_sizes, channels_last))
    return _record_window_op(WindowScatterBackward, cols, out, in_shape, kernel, stride, dilation, out_sizes,
                             channels_last)


def window_views(x: Tensor, kernel, stride, dilation, out_sizes, channels_last: bool = False) -> Tensor:
    """One window of the spatial dims of ``x`` (N, C, *S) per kernel offset: (N, C, K, *out), or
    with ``channels_last`` (N, *out, K, C), the rows a convolution multiplies with its weight.

    One strided copy, recorded as a single op whose backward adds the windows back (a loop over the
    kernel offsets in NumPy); the two are each other's backward, so higher derivatives exist."""
    kernel, stride, dilation = tuple(kernel), tuple(stride), tuple(dilation)
    return _gather_windows(x, kernel, stride, dilation, tuple(out_sizes), channels_last)


# ---- stride-1 convolution on the flattened grid --------------------------------------------------
# At stride 1 every kernel offset is a constant shift of the flattened spatial index of the input.
# The columns are then taken on the input's own grid: columns[n, c, tap, q] = x_flat[n, c, q + shift],
# one contiguous copy per offset, for the positions q of the first ``out_0`` rows of the grid. Places
# whose trailing coordinates run past the output's (the grid's margin) are dropped. Their columns
# hold input values and meet zero gradients in the weight's gradient: exact zeros while the input
# and weight are finite, so non-finite operands take the general path (0 * inf would be NaN).
class _ShiftOp(Node):
    """Shared geometry of the shifted gather and its adjoint, each the other's backward."""

    __slots__ = ("in_shape", "shifts", "out_sizes")


class ShiftedGatherBackward(_ShiftOp):
    def apply(self, grads):
        g = grads[0]
        return (None if g is None else _shifted_scatter(g, self.in_shape, self.shifts, self.out_sizes),)


class ShiftedScatterBackward(_ShiftOp):
    def apply(self, grads):
        g = grads[0]
        return (None if g is None else _shifted_gather(g, self.in_shape, self.shifts, self.out_sizes),)


def _record_shift_op(node_cls, source: Tensor, result: Tensor, in_shape, shifts, out_sizes) -> Tensor:
    if GRAD.enabled and source._requires_grad:
        node = record_op(node_cls, (source,), result)
        node.in_shape, node.shifts, node.out_sizes = in_shape, shifts, out_sizes
    return result


def _shifted_gather(x: Tensor, in_shape, shifts, out_sizes) -> Tensor:
    """x (N, C, *S) -> (N, C * K, length): row (c, tap) is x_flat[n, c, shift[tap]:][:length],
    ``length`` the first ``out_sizes[0]`` rows of the grid."""
    data = x._ndarray.reshape(in_shape)
    length = out_sizes[0] * math.prod(in_shape[3:])
    batch, channels = data.shape[:2]
    flat = data.reshape(batch, channels, math.prod(in_shape[2:]))
    reach = max(shifts) + length
    if reach > flat.shape[-1]:  # the last offsets read past the end: zeros there
        flat = np.concatenate([flat, np.zeros((batch, channels, reach - flat.shape[-1]), dtype=data.dtype)], -1)
    cols = np.empty((batch, channels, len(shifts), length), dtype=data.dtype)
    for tap, shift in enumerate(shifts):
        cols[:, :, tap] = flat[:, :, shift:shift + length]
    result = wrap(cols.reshape(batch, channels * len(shifts), length))
    return _record_shift_op(ShiftedGatherBackward, x, result, in_shape, shifts, out_sizes)


def _shifted_scatter(cols: Tensor, in_shape, shifts, out_sizes) -> Tensor:
    """The adjoint of ``_shifted_gather``: each row added back at its shift."""
    data = cols._ndarray
    batch, channels = in_shape[:2]
    size = math.prod(in_shape[2:])
    length = out_sizes[0] * math.prod(in_shape[3:])
    taps = data.reshape(batch, channels, len(shifts), length)
    flat = np.zeros((batch, channels, max(size, max(shifts) + length)), dtype=data.dtype)
    for tap, shift in enumerate(shifts):
        flat[:, :, shift:shift + length] += taps[:, :, tap]
    result = wrap(np.ascontiguousarray(flat[:, :, :size]).reshape(in_shape))
    return _record_shift_op(ShiftedScatterBackward, cols, result, in_shape, shifts, out_sizes)


def _convolution_unit_stride(x: Tensor, weight: Tensor, dilation, out_sizes) -> Tensor:
    """One group, stride 1: (O, C*K) @ (N, C*K, grid places), then the output's places kept."""
    sizes = tuple(x.shape[2:])
    kernel = tuple(weight.shape[2:])
    pitches = [math.prod(sizes[i + 1:]) for i in range(len(sizes))]
    shifts = tuple(sum(o * d * p for o, d, p in zip(offset, dilation, pitches))
                   for offset in itertools.product(*[range(k) for k in kernel]))
    cols = _shifted_gather(x, tuple(x.shape), shifts, tuple(out_sizes))   # N, C*K, out_0 * pitch_0
    out = weight.reshape(weight.shape[0], -1).matmul(cols)                   # N, O, out_0 * pitch_0
    out = out.reshape(x.shape[0], weight.shape[0], out_sizes[0], *sizes[1:])
    if tuple(out_sizes[1:]) != sizes[1:]:
        out = out[(slice(None), slice(None), slice(None)) + tuple(slice(0, n) for n in out_sizes[1:])]
    return out


def _out_sizes(sizes, kernel, stride, dilation):
    return [(n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(sizes, kernel, stride, dilation)]


def convolution_nd(x: Tensor, weight: Tensor, bias, stride, padding, dilation, groups: int) -> Tensor:
    """Batched N-d convolution: x (N, C, *S), weight (O, C/groups, *K)."""
    nd = weight.dim() - 2
    kernel = tuple(weight.shape[2:])
    stride, dilation = _tuple(stride, nd), _tuple(dilation, nd)
    x = _pad_spatial(x, padding_pairs(padding, kernel, dilation, stride, nd))
    sizes = tuple(x.shape[2:])
    check_kernel_fits(sizes, kernel, dilation)
    out_sizes = _out_sizes(sizes, kernel, stride, dilation)
    batch, channels = x.shape[0], x.shape[1]
    out_channels = weight.shape[0]
    group_in, group_out = channels // groups, out_channels // groups
    if (groups == 1 and all(st == 1 for st in stride) and np.isfinite(x._ndarray).all()
            and np.isfinite(weight._ndarray).all()):
        out = _convolution_unit_stride(x, weight, dilation, out_sizes)
        if bias is not None:
            return out + bias.reshape(1, out_channels, *([1] * nd))
        return out.contiguous()
    taps = math.prod(kernel)
    places = math.prod(out_sizes)
    cols = window_views(x, kernel, stride, dilation, out_sizes, channels_last=True)  # N, *out, K, C
    cols = cols.reshape(batch * places, taps, groups, group_in).permute(2, 0, 1, 3)
    cols = cols.reshape(groups, batch * places, taps * group_in)            # G, N*L, K*C/G
    w = weight.reshape(groups, group_out, group_in, taps).permute(0, 3, 2, 1)
    w = w.reshape(groups, taps * group_in, group_out)                        # G, K*C/G, O/G
    out = cols.matmul(w)                                                     # G, N*L, O/G
    out = out.permute(1, 0, 2).reshape(batch, *out_sizes, out_channels)
    out = out.movedim(-1, 1).contiguous()
    if bias is not None:
        out = out + bias.reshape(1, out_channels, *([1] * nd))
    return out


def _dilate(x: Tensor, stride) -> Tensor:
    """Insert ``s - 1`` zeros between neighbours along each spatial dim."""
    nd = len(stride)
    for i, s in enumerate(stride):
        if s == 1:
            continue
        dim = x.dim() - nd + i
        n = x.size(dim)
        spread = x.unsqueeze(dim + 1)
        zeros = hookgrad.zeros(*spread.shape[:dim + 1], s - 1, *spread.shape[dim + 2:], dtype=x.dtype)
        spread = hookgrad.cat([spread, zeros], dim + 1)
        x = spread.reshape(*x.shape[:dim], n * s, *x.shape[dim + 1:]).narrow(dim, 0, (n - 1) * s + 1)
    return x


def conv_transpose_nd_generic(x: Tensor, weight: Tensor, bias, stride, padding, output_padding, groups: int,
                              dilation) -> Tensor:
    """Batched N-d transposed convolution: x (N, C_in, *S), weight (C_in, C_out/groups, *K)."""
    nd = weight.dim() - 2
    kernel = tuple(weight.shape[2:])
    c_in, group_out = weight.shape[0], weight.shape[1]
    flipped = weight.reshape(groups, c_in // groups, group_out, *kernel).transpose(1, 2)
    flipped = flipped.reshape(groups * group_out, c_in // groups, *kernel).flip(list(range(2, 2 + nd)))
    spread = _dilate(x, stride)
    pairs = [(d * (k - 1) - p, d * (k - 1) - p + op)
             for k, d, p, op in zip(kernel, dilation, padding, output_padding)]
    spread = _pad_spatial(spread, pairs)
    return convolution_nd(spread, flipped, bias, 1, 0, dilation, groups)


def _conv_entry(x, weight, bias, stride, padding, dilation, groups, nd, name):
    check_conv_arguments(x, weight, bias, stride, padding, dilation, groups, nd, name)
    _check_dtypes(x, weight)
    from .conv_nd_kernels import convolution_nd_entry, laid_out_as_torch_3d  # it reuses this module's window kernels
    unbatched = x.dim() == nd + 1
    out = convolution_nd_entry(x.unsqueeze(0) if unbatched else x, weight, bias, stride, padding, dilation, groups)
    return out.squeeze(0) if unbatched else laid_out_as_torch_3d(out, x, weight)


def _conv_transpose_entry(x, weight, bias, stride, padding, output_padding, groups, dilation, nd, name):
    from .conv_nd_kernels import as_given, conv_transpose_nd_op, laid_out_as_torch_3d  # it reuses this module's kernels
    given = (as_given(stride, nd), as_given(padding, nd), as_given(dilation, nd), as_given(output_padding, nd))
    _check_input(x, weight, nd, name, groups, transposed=True, bias=bias, stride=stride, padding=padding,
                 dilation=dilation, output_padding=output_padding)
    _check_dilation(dilation, nd, transposed=True)
    stride, padding, output_padding, dilation, outs = transposed_geometry(
        tuple(x.shape[-nd:]), tuple(weight.shape[2:]), stride, padding, output_padding, dilation, nd, name)
    _check_dtypes(x, weight)
    if bias is not None and bias.dtype != x.dtype:  # torch's 3-d kernel, unlike its 1-d and 2-d ones, refuses it
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(x._ndarray.dtype)} but found "
                           f"{_dtype.scalar_type_name(bias._ndarray.dtype)}")
    unbatched = x.dim() == nd + 1
    out = conv_transpose_nd_op(x.unsqueeze(0) if unbatched else x, weight, bias, stride, padding, output_padding,
                               groups, dilation, outs, given)
    return out.squeeze(0) if unbatched else laid_out_as_torch_3d(out, x, weight)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv_entry(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose_entry(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                                 "conv_transpose3d")


def _identity_kernel(kernel, dtype) -> Tensor:
    taps = math.prod(kernel)
    return hookgrad.eye(taps, dtype=dtype).reshape(taps, 1, *kernel)


def check_unfold_rank(input: Tensor) -> None:
    """torch's errors for an ``unfold`` input that is neither 3-D nor 4-D."""
    if input.dim() < 3:
        # torch reads the channel dim before checking the rank
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.dim()}, {input.dim() - 1}], "
                         f"but got {input.dim()})")
    if input.dim() > 4:
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """im2col: (N, C, H, W) -> (N, C*kh*kw, L), the sliding blocks as columns."""
    check_unfold_rank(input)
    unbatched = input.dim() == 3
    x = input.unsqueeze(0) if unbatched else input
    kernel = _tuple(kernel_size, 2)
    batch, channels = x.shape[0], x.shape[1]
    blocks = hookgrad.nn.functional.conv2d(x.reshape(batch * channels, 1, *x.shape[2:]),
                                           _identity_kernel(kernel, x.dtype), None, _tuple(stride, 2),
                                           _tuple(padding, 2), _tuple(dilation, 2))
    out = blocks.reshape(batch, channels * math.prod(kernel), -1)
    return out.squeeze(0) if unbatched else out


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """col2im, the adjoint of ``unfold``: overlapping blocks are summed into (N, C, *output_size)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
                           f"non-zero dimensions for input, but got: {list(input.shape)}")
    unbatched = input.dim() == 2
    cols = input.unsqueeze(0) if unbatched else input
    kernel, output_size = _tuple(kernel_size, 2), _tuple(output_size, 2)
    stride, padding, dilation = _tuple(stride, 2), _tuple(padding, 2), _tuple(dilation, 2)
    taps = math.prod(kernel)
    if cols.shape[1] % taps:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                           f"but got input.size(1)={cols.shape[1]} and kernel_size={kernel}")
    blocks = _out_sizes([o + 2 * p for o, p in zip(output_size, padding)], kernel, stride, dilation)
    if math.prod(blocks) != cols.shape[2]:
        raise RuntimeError(f"Given output_size={output_size}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, stride={stride}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {blocks[0]} * {blocks[1]} = {math.prod(blocks)}, "
                           f"but got input.size(2)={cols.shape[2]}.")
    batch, channels = cols.shape[0], cols.shape[1] // taps
    planes = cols.reshape(batch * channels, taps, *blocks)
    natural = [(b - 1) * s - 2 * p + d * (k - 1) + 1
               for b, s, p, d, k in zip(blocks, stride, padding, dilation, kernel)]
    extra = tuple(o - n for o, n in zip(output_size, natural))
    out = conv_transpose_nd_generic(planes, _identity_kernel(kernel, cols.dtype), None, stride, padding, extra, 1,
                                    dilation)
    out = out.reshape(batch, channels, *output_size)
    return out.squeeze(0) if unbatched else out
