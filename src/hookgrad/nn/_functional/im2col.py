"""``unfold`` (im2col) and ``fold`` (col2im) recorded as torch's one node each, Im2ColBackward0 and
Col2ImBackward0: each one's gradient is the other op (so under create_graph the pair alternates, as
in torch). Inputs the NumPy kernels cannot take get the errors of the convolution-based forms in
``convnd``."""
from __future__ import annotations

import numpy as np

import hookgrad
from ..._ops._base import GRAD
from ..._ops._declare import record_op
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node
from . import convnd
from .conv import _tuple


def _tap_slices(kernel, dilation, stride, blocks):
    """Per kernel tap (row-major), the slices of the padded plane that tap reads for every block."""
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            rows = slice(i * dilation[0], i * dilation[0] + stride[0] * (blocks[0] - 1) + 1, stride[0])
            cols = slice(j * dilation[1], j * dilation[1] + stride[1] * (blocks[1] - 1) + 1, stride[1])
            yield rows, cols


def _blocks(size, kernel, dilation, padding, stride):
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, d, p, s in zip(size, kernel, dilation, padding, stride))


def col2im_np(cols, size, kernel, dilation, padding, stride):
    """(N, C*kh*kw, L) -> (N, C, *size): every block's taps added back where they were read."""
    n = cols.shape[0]
    taps = kernel[0] * kernel[1]
    blocks = _blocks(size, kernel, dilation, padding, stride)
    channels = cols.shape[1] // taps
    parts = cols.reshape(n, channels, taps, *blocks)
    out = np.zeros((n, channels, size[0] + 2 * padding[0], size[1] + 2 * padding[1]), dtype=cols.dtype)
    for t, (rows, columns) in enumerate(_tap_slices(kernel, dilation, stride, blocks)):
        out[:, :, rows, columns] += parts[:, :, t]
    return np.ascontiguousarray(out[:, :, padding[0]:padding[0] + size[0], padding[1]:padding[1] + size[1]])


def im2col_np(data, kernel, dilation, padding, stride):
    """(N, C, H, W) -> (N, C*kh*kw, L)."""
    n, channels, h, w = data.shape
    blocks = _blocks((h, w), kernel, dilation, padding, stride)
    padded = np.pad(data, ((0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])))
    taps = [padded[:, :, rows, columns] for rows, columns in _tap_slices(kernel, dilation, stride, blocks)]
    return np.stack(taps, 2).reshape(n, channels * len(taps), blocks[0] * blocks[1])


class _WindowNode(Node):
    __slots__ = ("kernel_size", "dilation", "padding", "stride")
    _WINDOW = {"kernel_size": lambda n: n.kernel_size, "dilation": lambda n: n.dilation,
               "padding": lambda n: n.padding, "stride": lambda n: n.stride}


class Im2ColBackward0(_WindowNode):
    __slots__ = ("size",)
    saved_values = {**_WindowNode._WINDOW, "self_sym_argsize_minus_1": lambda n: n.size[1],
                    "self_sym_argsize_minus_2": lambda n: n.size[0]}

    def apply(self, grads):
        return (_col2im(grads[0], self.size, self.kernel_size, self.dilation, self.padding, self.stride),)


class Col2ImBackward0(_WindowNode):
    __slots__ = ()
    saved_values = dict(_WindowNode._WINDOW)

    def apply(self, grads):
        return (_im2col(grads[0], self.kernel_size, self.dilation, self.padding, self.stride),)


def _batched(fn, x, batch_rank):
    data = x._ndarray
    unbatched = data.ndim == batch_rank - 1
    out = fn(data[None] if unbatched else data)
    return out[0] if unbatched else out


def _record(node_cls, x, out, **attrs):
    result = wrap(out)
    if GRAD.enabled and x._requires_grad:
        node = record_op(node_cls, (x,), result)
        for k, v in attrs.items():
            setattr(node, k, v)
    return result


def _col2im(cols, size, kernel, dilation, padding, stride):
    out = _batched(lambda d: col2im_np(d, size, kernel, dilation, padding, stride), cols, 3)
    return _record(Col2ImBackward0, cols, out, kernel_size=kernel, dilation=dilation, padding=padding, stride=stride)


def _im2col(x, kernel, dilation, padding, stride):
    out = _batched(lambda d: im2col_np(d, kernel, dilation, padding, stride), x, 4)
    return _record(Im2ColBackward0, x, out, size=tuple(x.shape[-2:]), kernel_size=kernel, dilation=dilation,
                   padding=padding, stride=stride)


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """im2col: (N, C, H, W) -> (N, C*kh*kw, L), the sliding blocks as columns."""
    convnd.check_unfold_rank(input)
    kernel, dilation, padding, stride = (_tuple(v, 2) for v in (kernel_size, dilation, padding, stride))
    if any(b <= 0 for b in _blocks(tuple(input.shape[-2:]), kernel, dilation, padding, stride)):
        with hookgrad.no_grad():
            convnd.unfold(input, kernel, dilation, padding, stride)  # torch's error for windows that do not fit
    return _im2col(input, kernel, dilation, padding, stride)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """col2im, the adjoint of ``unfold``: overlapping blocks are summed into (N, C, *output_size)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
                           f"non-zero dimensions for input, but got: {list(input.shape)}")
    size, kernel = _tuple(output_size, 2), _tuple(kernel_size, 2)
    dilation, padding, stride = _tuple(dilation, 2), _tuple(padding, 2), _tuple(stride, 2)
    taps = kernel[0] * kernel[1]
    blocks = _blocks(size, kernel, dilation, padding, stride)
    if input.shape[-2] % taps or blocks[0] * blocks[1] != input.shape[-1] or min(blocks) <= 0:
        with hookgrad.no_grad():
            convnd.fold(input, size, kernel, dilation, padding, stride)  # raises torch's error
    return _col2im(input, size, kernel, dilation, padding, stride)
