"""Pooling for any number of spatial dims (3-D max/avg pooling, adaptive max pooling, 3-D adaptive
average pooling), computed by differentiable tensor ops and recorded as torch's one node per call.

Windows are gathered as strided views (one per kernel offset, see ``convnd.window_views``) and
reduced; adaptive pooling is separable, so it reduces one spatial dim at a time over torch's windows
``[floor(i*n/m), ceil((i+1)*n/m))``.
"""
from __future__ import annotations

import math

import numpy as np

import hookgrad
from ..._ops._base import GRAD
from ..._ops._declare import node_class, record_op
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node
from .conv import _tuple
from .convnd import _pad_spatial, window_views

__all__ = ["max_pool3d", "max_pool3d_with_indices", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices", "max_pool_nd", "avg_pool_nd",
           "adaptive_pool_nd", "max_unpool1d", "max_unpool2d", "max_unpool3d", "max_unpool_nd"]


def _pooled_size(n, k, s, p, d, ceil_mode):
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1  # the last window must start inside the input or the left padding
    return out


def _check_pool(x, nd, kernel, stride, padding, dilation, name):
    if x.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor for input, but got: "
                           f"{list(x.shape)}")
    for k, p in zip(kernel, padding):
        if p * 2 > k:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation=1")
    if any(s <= 0 for s in stride):
        raise RuntimeError("stride should be greater than zero")


def _as_batch(x, nd):
    unbatched = x.dim() == nd + 1
    return (x.unsqueeze(0) if unbatched else x), unbatched


def max_pool_nd(x: Tensor, kernel_size, stride, padding, dilation, ceil_mode, nd, name, return_indices=False):
    kernel = _tuple(kernel_size, nd)
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and not stride) else _tuple(stride, nd)
    padding, dilation = _tuple(padding, nd), _tuple(dilation, nd)
    _check_pool(x, nd, kernel, stride, padding, dilation, name)
    x, unbatched = _as_batch(x, nd)
    sizes = tuple(x.shape[2:])
    outs = [_pooled_size(n, k, s, p, d, ceil_mode) for n, k, s, p, d in zip(sizes, kernel, stride, padding, dilation)]
    # pad with -inf on the left and as far right as the last window reaches
    pairs = [(p, max(0, (o - 1) * s + d * (k - 1) + 1 - n - p))
             for n, k, s, p, d, o in zip(sizes, kernel, stride, padding, dilation, outs)]
    padded = _pad_spatial(x, pairs, value=-math.inf)
    windows = window_views(padded, kernel, stride, dilation, outs)      # N, C, K, *out
    values, which = windows.max(2)
    out = values.squeeze(0) if unbatched else values
    if not return_indices:
        return out
    # flat index into the input's spatial dims of the chosen tap, as torch reports it
    taps = np.array(np.unravel_index(np.arange(math.prod(kernel)), kernel))  # nd x K
    chosen = which.numpy()
    flat = np.zeros(chosen.shape, dtype=np.int64)
    for axis in range(nd):
        grid = np.arange(outs[axis]).reshape([-1 if a == axis else 1 for a in range(nd)]) * stride[axis]
        position = grid + taps[axis][chosen] * dilation[axis] - padding[axis]
        flat = flat * sizes[axis] + position
    indices = hookgrad.tensor(flat, dtype=hookgrad.int64)
    return out, (indices.squeeze(0) if unbatched else indices)


def avg_pool_nd(x: Tensor, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd, name):
    kernel = _tuple(kernel_size, nd)
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and not stride) else _tuple(stride, nd)
    padding = _tuple(padding, nd)
    ones = (1,) * nd
    _check_pool(x, nd, kernel, stride, padding, ones, name)
    x, unbatched = _as_batch(x, nd)
    sizes = tuple(x.shape[2:])
    outs = [_pooled_size(n, k, s, p, 1, ceil_mode) for n, k, s, p in zip(sizes, kernel, stride, padding)]
    pairs = [(p, max(0, (o - 1) * s + k - n - p)) for n, k, s, p, o in zip(sizes, kernel, stride, padding, outs)]
    windows = window_views(_pad_spatial(x, pairs), kernel, stride, ones, outs)
    total = windows.sum(2)
    if divisor_override:
        out = total / divisor_override
    else:
        # per output position: taps inside the input (count_include_pad=False) or inside input+padding,
        # windows clipped at the padded edge either way (as torch counts them)
        counts = np.ones((), dtype=np.float64)
        for n, k, s, p, o in zip(sizes, kernel, stride, padding, outs):
            start = np.arange(o) * s - p
            end = np.minimum(start + k, n + p)
            if not count_include_pad:
                start, end = np.maximum(start, 0), np.minimum(end, n)
            counts = np.multiply.outer(counts, (end - start).astype(np.float64))
        out = total / hookgrad.tensor(counts, dtype=x.dtype)
    return out.squeeze(0) if unbatched else out


def _adaptive_windows(n: int, m: int):
    return [(i * n // m, -(-(i + 1) * n // m)) for i in range(m)]


def adaptive_pool_nd(x: Tensor, output_size, nd: int, reduce: str, name: str):
    if x.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(x.shape)}")
    sizes = tuple(x.shape[-nd:])
    if isinstance(output_size, (list, tuple)):
        output_size = tuple(n if o is None else int(o) for o, n in zip(output_size, sizes))
    else:
        output_size = (int(output_size),) * nd
    out = x
    for axis, (n, m) in enumerate(zip(sizes, output_size)):
        dim = x.dim() - nd + axis
        parts = []
        for start, end in _adaptive_windows(n, m):
            piece = out.narrow(dim, start, end - start)
            parts.append(piece.mean(dim) if reduce == "mean" else piece.amax(dim))
        out = hookgrad.stack(parts, dim)
    return out


def _adaptive_max_indices(x: Tensor, out: Tensor, nd: int):
    """Flat spatial index of the first maximum in each adaptive window (torch's ``indices``)."""
    data = x.detach()._ndarray  # (not .numpy(): bfloat16 tensors refuse it, as in torch)
    sizes, outs = data.shape[-nd:], out.shape[-nd:]
    lead = data.shape[:-nd]
    windows = [_adaptive_windows(n, m) for n, m in zip(sizes, outs)]
    flat = np.zeros(lead + tuple(outs), dtype=np.int64)
    for cell in np.ndindex(*outs):
        bounds = [windows[a][i] for a, i in enumerate(cell)]
        block = data[(Ellipsis, *[slice(s, e) for s, e in bounds])]
        arg = block.reshape(lead + (-1,)).argmax(-1)
        local = np.unravel_index(arg, [e - s for s, e in bounds])
        index = np.zeros(lead, dtype=np.int64)
        for a in range(nd):
            index = index * sizes[a] + local[a] + bounds[a][0]
        flat[(Ellipsis, *cell)] = index
    return hookgrad.tensor(flat, dtype=hookgrad.int64)


# ---- torch's one node per pooling call -------------------------------------------------------------
class _MaxIndicesNode(Node):
    """Backward of a max pooling: the gradient added at the saved flat spatial indices of the maxima
    (in hookgrad ops, so that under create_graph it is differentiable in the incoming gradient; the
    gradient is piecewise constant in the input)."""

    __slots__ = ("nd",)
    saved_names = ("self", "result1")

    def apply(self, grads):
        x, indices = self.saved()
        g = grads[0]
        shape = tuple(x.shape)
        lead = shape[:-self.nd]
        flat = hookgrad.zeros(*lead, math.prod(shape[-self.nd:]), dtype=g.dtype)
        return (flat.scatter_add(-1, indices.reshape(*lead, -1), g.reshape(*lead, -1)).reshape(shape),)


def _window_values():
    return {"kernel_size": lambda n: n.kernel_size, "stride": lambda n: n.stride, "padding": lambda n: n.padding,
            "ceil_mode": lambda n: n.ceil_mode}


class MaxPool3DWithIndicesBackward0(_MaxIndicesNode):
    __slots__ = ("kernel_size", "stride", "padding", "dilation", "ceil_mode")
    saved_values = {**_window_values(), "dilation": lambda n: n.dilation}


AdaptiveMaxPool2DBackward0 = node_class("AdaptiveMaxPool2DBackward0", _MaxIndicesNode, __module__=__name__)
AdaptiveMaxPool3DBackward0 = node_class("AdaptiveMaxPool3DBackward0", _MaxIndicesNode, __module__=__name__)


class _LinearPoolNode(Node):
    """Backward of an average pooling, a linear map: its adjoint at the incoming gradient, taken by
    differentiating the composed pooling (``pool``) rebuilt on a detached copy of the saved input.
    Under create_graph the gradient's graph is that composition's backward, not torch's node."""

    __slots__ = ("pool",)
    saved_names = ("self",)

    def apply(self, grads):
        (x,) = self.saved()
        create_graph = GRAD.enabled
        with hookgrad.enable_grad():
            z = x.detach().requires_grad_()
            (gx,) = hookgrad.autograd.grad(self.pool(z), z, grads[0], create_graph=create_graph)
        return (gx,)

    def release_variables(self):
        super().release_variables()
        self.pool = None


class AvgPool3DBackward0(_LinearPoolNode):
    __slots__ = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")
    saved_values = {**_window_values(), "count_include_pad": lambda n: n.count_include_pad,
                    "divisor_override": lambda n: n.divisor_override}


AdaptiveAvgPool3DBackward0 = node_class("AdaptiveAvgPool3DBackward0", _LinearPoolNode, __module__=__name__)


def _as_one_node(x, compute, node_cls, **attrs):
    """``compute()`` (a tensor, or (values, indices)) run without recording, its values made the output
    of one ``node_cls`` node over ``x`` that keeps ``x`` (and the indices)."""
    with hookgrad.no_grad():
        out = compute()
    values, indices = out if isinstance(out, tuple) else (out, None)
    result = wrap(values._ndarray)
    if GRAD.enabled and x._requires_grad:
        node = record_op(node_cls, (x,), result)
        for k, v in attrs.items():
            setattr(node, k, v)
        node.save(x) if indices is None else node.save(x, indices)
    return result, indices


def _stride_as_given(stride, nd):
    return () if stride is None or (isinstance(stride, (list, tuple)) and not stride) else _tuple(stride, nd)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    out, indices = _as_one_node(
        input, lambda: max_pool_nd(input, kernel_size, stride, padding, dilation, ceil_mode, 3, "max_pool3d", True),
        MaxPool3DWithIndicesBackward0, nd=3, kernel_size=_tuple(kernel_size, 3), stride=_stride_as_given(stride, 3),
        padding=_tuple(padding, 3), dilation=_tuple(dilation, 3), ceil_mode=ceil_mode)
    return (out, indices) if return_indices else out


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=True):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    def pool(x):
        return avg_pool_nd(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3,
                           "avg_pool3d")
    return _as_one_node(input, lambda: pool(input), AvgPool3DBackward0, pool=pool, kernel_size=_tuple(kernel_size, 3),
                        stride=_stride_as_given(stride, 3), padding=_tuple(padding, 3), ceil_mode=ceil_mode,
                        count_include_pad=count_include_pad, divisor_override=divisor_override)[0]


def adaptive_avg_pool3d(input, output_size):
    def pool(x):
        return adaptive_pool_nd(x, output_size, 3, "mean", "adaptive_avg_pool3d")
    return _as_one_node(input, lambda: pool(input), AdaptiveAvgPool3DBackward0, pool=pool)[0]


def _adaptive_max(x, output_size, return_indices, nd):
    if nd == 1:  # torch records adaptive_max_pool1d as a 2-D one between an unsqueeze and a squeeze
        if x.dim() not in (2, 3):
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.dim()}-dimensional tensor for argument #1 "
                               "'self' (while checking arguments for adaptive_max_pool1d)")
        if isinstance(output_size, (list, tuple)):
            if len(output_size) != 1:
                raise RuntimeError(f"adaptive_max_pool1d() argument 'output_size' should contain one int (got "
                                   f"{len(output_size)})")
            output_size = output_size[0]
        if output_size is None:
            raise TypeError("adaptive_max_pool1d(): argument 'output_size' (position 2) must be tuple of ints, but "
                            "found element of type NoneType at pos 0")
        out, indices = _adaptive_max(x.unsqueeze(-2), (1, output_size), True, 2)
        out, indices = out.squeeze(-2), indices.squeeze(-2)
        return (out, indices) if return_indices else out
    node_cls = AdaptiveMaxPool2DBackward0 if nd == 2 else AdaptiveMaxPool3DBackward0

    def compute():
        out = adaptive_pool_nd(x, output_size, nd, "max", f"adaptive_max_pool{nd}d")
        return out, _adaptive_max_indices(x, out, nd)
    out, indices = _as_one_node(x, compute, node_cls, nd=nd)
    return (out, indices) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 1)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 2)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 3)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    return _adaptive_max(input, output_size, True, 1)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return _adaptive_max(input, output_size, True, 2)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    return _adaptive_max(input, output_size, True, 3)


def _unpool_size(input, kernel, stride, padding, output_size, nd):
    sizes = tuple(input.shape[-nd:])
    default = [(n - 1) * s - 2 * p + k for n, k, s, p in zip(sizes, kernel, stride, padding)]
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == nd + 2:
        output_size = output_size[-nd:]
    if len(output_size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                         f"length of '{len(output_size)}'")
    for d, (want, base, s) in enumerate(zip(output_size, default, stride)):
        if not base - s < want < base + s:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {base - s} and '
                             f'{base + s})')
    return output_size


def max_unpool_nd(input: Tensor, indices: Tensor, kernel_size, stride, padding, output_size, nd: int) -> Tensor:
    """Put each value back at the flat spatial index max pooling recorded for it; zeros elsewhere."""
    kernel = _tuple(kernel_size, nd)
    stride = kernel if stride is None else _tuple(stride, nd)
    padding = _tuple(padding, nd)
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d Tensor, but got a "
                           f"tensor with {input.dim()} dimensions.")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    out_sizes = _unpool_size(input, kernel, stride, padding, output_size, nd)
    lead = tuple(input.shape[:-nd])
    places = math.prod(out_sizes)
    flat_index = indices.reshape(*lead, -1)
    if flat_index.numel() and (int(flat_index.min()) < 0 or int(flat_index.max()) >= places):
        raise RuntimeError(f"Found an invalid max index: {int(flat_index.max())} (output volumes are of size "
                           f"{'x'.join(str(s) for s in out_sizes)}")
    out = hookgrad.zeros(*lead, places, dtype=input.dtype)
    out = out.scatter(len(lead), flat_index, input.reshape(*lead, -1))
    return out.reshape(*lead, *out_sizes)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return max_unpool_nd(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return max_unpool_nd(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return max_unpool_nd(input, indices, kernel_size, stride, padding, output_size, 3)
