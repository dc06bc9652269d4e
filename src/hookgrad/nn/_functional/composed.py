"""Layer functions composed of differentiable tensor ops: instance and RMS normalization, bags of
embeddings, resampling (interpolate, pixel and channel shuffles), distances, feature dropout, and the
activations that are short formulas. Their gradients come from the ops they are made of.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

import hookgrad
from ... import _dtype
from ..._ops._base import GRAD
from ..._ops._declare import no_derivative_node, node_class, record_op
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node
from ..._ops import _dtype_rules as _rules
from .conv import _tuple

__all__ = ["instance_norm", "rms_norm", "embedding_bag", "interpolate", "upsample", "upsample_nearest",
           "upsample_bilinear", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
           "pairwise_distance", "cosine_similarity", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout", "selu", "celu", "prelu", "rrelu", "glu", "threshold", "hardshrink",
           "softshrink", "local_response_norm"]


def _F():
    return hookgrad.nn.functional


def _in_place(fn, input, *args):
    """``fn(input, *args)`` written into ``input`` (the ``inplace=True`` form), recorded as torch does."""
    from ..._ops import views
    return views.apply_inplace(input, fn, *args)


# ---- normalization ---------------------------------------------------------------------------------
def instance_norm(input: Tensor, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Each (sample, channel) plane normalized on its own: a batch norm of a (1, N*C, ...) view.

    Running statistics (when given) move by the mean over the batch of the per-sample statistics.
    """
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher input for instance_norm (got {input.dim()}D input)")
    if use_input_stats:
        spatial = math.prod(input.shape[2:])
        if spatial <= 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                             f"{list(input.shape)}")
    batch, channels = input.shape[0], input.shape[1]
    folded = input.reshape(1, batch * channels, *input.shape[2:])
    mean_rep = running_mean.repeat(batch) if running_mean is not None else None
    var_rep = running_var.repeat(batch) if running_var is not None else None
    w = weight.repeat(batch) if weight is not None else None
    b = bias.repeat(batch) if bias is not None else None
    out = _F().batch_norm(folded, mean_rep, var_rep, w, b, use_input_stats, momentum, eps)
    if use_input_stats:
        with hookgrad.no_grad():
            if running_mean is not None:
                running_mean.copy_(mean_rep.reshape(batch, channels).mean(0))
            if running_var is not None:
                running_var.copy_(var_rep.reshape(batch, channels).mean(0))
    return out.reshape(input.shape)


def rms_norm(input: Tensor, normalized_shape, weight=None, eps=None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` dims."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    if tuple(input.shape[input.dim() - len(normalized_shape):]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in normalized_shape)}], but got input of size"
                           f"{list(input.shape)}")
    if eps is None:
        eps = hookgrad.finfo(input.dtype).eps
    dims = list(range(input.dim() - len(normalized_shape), input.dim()))
    # torch's composition (pow, then the product with the inverse root): its pack hooks see the same
    from .scalar_ops import add_scalar
    out = input * add_scalar(input.pow(2).mean(dims, keepdim=True), eps).rsqrt()
    return out * weight if weight is not None else out


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
    """Divide by ``(k + alpha/size * sum of squares over ``size`` neighbouring channels)^beta``."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    F = _F()
    # the channel-window mean as torch takes it: an average pooling over the padded squares
    square = input.mul(input)
    if input.dim() == 3:
        padded = F.pad(square.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        mean = F.avg_pool2d(padded, (size, 1), stride=1).squeeze(1)
    else:
        shape = input.shape
        padded = F.pad(square.view(shape[0], 1, shape[1], shape[2], -1), (0, 0, 0, 0, size // 2, (size - 1) // 2))
        mean = F.avg_pool3d(padded, (size, 1, 1), stride=1).squeeze(1).view(shape)
    return input / mean.mul(alpha).add(k).pow(beta)


# ---- embeddings ---------------------------------------------------------------------------------------
def embedding_bag(input: Tensor, weight: Tensor, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None) -> Tensor:
    """Sum, mean or max of the embeddings of each bag (rows of a 2-D input, or spans given by offsets)."""
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is not None, "
                         f"then it must have the same shape as the input ({list(input.shape)})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             "fixed length sequences.")
        rows, length = input.shape
        starts = list(range(0, rows * length, length))
        flat = input.reshape(-1)
        weights = per_sample_weights.reshape(-1) if per_sample_weights is not None else None
        ends = starts[1:] + [rows * length]
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        flat, weights = input, per_sample_weights
        starts = [int(v) for v in offsets.tolist()]
        if include_last_offset:
            ends = starts[1:]
            starts = starts[:-1]
        else:
            ends = starts[1:] + [flat.shape[0]]
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                  f"on GitHub.")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if scale_grad_by_freq:
        # torch's embedding_bag divides by counts that do not line up with the indices (see the tests):
        # neither the documented rule nor torch's numbers would be honest here
        raise NotImplementedError("hookgrad's embedding_bag does not scale gradients by frequency")
    if max_norm is not None:
        _F().embedding(flat, weight, None, max_norm, norm_type, False, sparse)  # renormalizes the rows in place
    # ATen's kernel (torch.embedding_bag), as torch's F.embedding_bag calls it
    from .recurrent import embedding_bag as _kernel
    if input.dim() == 1:
        bag_offsets, last_offset_given = offsets, include_last_offset
    else:
        bag_offsets, last_offset_given = hookgrad.tensor(starts, dtype=hookgrad.int64), False
    mode_number = {"sum": 0, "mean": 1, "max": 2}[mode]
    return _kernel(weight, flat, bag_offsets, scale_grad_by_freq, mode_number, sparse, weights, last_offset_given,
                   padding_idx)[0]


# ---- resampling -----------------------------------------------------------------------------------------
_LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3}


def _output_and_scales(input, size, scale_factor, nd, recompute):
    sizes = tuple(input.shape[2:])
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined" if size is not None else
                         "either size or scale_factor should be defined")
    if size is not None:
        out = _tuple(size, nd)
        if len(out) != nd:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(sizes)} and output size of {list(out)}. Please "
                             f"provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, "
                             f"o2, ...,oK) format.")
        return out, [None] * nd
    factors = [float(f) for f in scale_factor] if isinstance(scale_factor, (list, tuple)) else [float(scale_factor)] * nd
    out = tuple(int(math.floor(n * f)) for n, f in zip(sizes, factors))
    return out, ([None] * nd if recompute else factors)


def _source_positions(n_in, n_out, factor, align_corners, mode):
    dst = np.arange(n_out, dtype=np.float64)
    if mode in ("nearest", "nearest-exact"):
        scale = (1.0 / factor) if factor else n_in / n_out
        src = np.floor((dst + (0.5 if mode == "nearest-exact" else 0.0)) * scale).astype(np.int64)
        return np.minimum(src, n_in - 1)
    if align_corners:
        return dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    scale = (1.0 / factor) if factor else n_in / n_out
    return np.maximum((dst + 0.5) * scale - 0.5, 0.0)


class _Resampling:
    """A separable resampling along one axis: ``out[o] = x[low[o]] * (1 - w[o]) + x[high[o]] * w[o]``
    (``w`` None: nearest, ``out[o] = x[low[o]]``), both terms always evaluated, as torch's kernel
    does (an infinite neighbour with weight 0 gives NaN there too). The indices never decrease along
    the output, which the adjoint's passes over runs of equal indices rely on."""

    __slots__ = ("axis", "n_in", "low", "high", "weight", "_runs")

    def __init__(self, axis, n_in, low, high, weight):
        self.axis, self.n_in, self.low, self.high, self.weight = axis, n_in, low, high, weight
        self._runs = {}

    def apply(self, data):
        below = data.take(self.low, axis=self.axis)
        if self.weight is None:
            return below
        above = data.take(self.high, axis=self.axis)
        weight = self.weight.astype(data.dtype, copy=False)
        return below * (1 - weight) + above * weight

    def _add_back(self, out, g, index):
        """``out[index[o]] += g[o]`` along the axis, for a non-decreasing ``index``: in passes, the
        k-th member of every run of equal indices in pass k, so that no pass has a repeated target
        (an upsampling by r takes r passes; ``np.add.at`` was ten times slower). Where a pass's
        positions and targets both advance in steps of a constant size, it adds slices (views)."""
        key = id(index)
        if key not in self._runs:
            self._runs[key] = [_as_slices(positions, targets) for positions, targets in _passes(index)]
        where = [slice(None)] * out.ndim
        read = [slice(None)] * out.ndim
        for pieces in self._runs[key]:
            if isinstance(pieces, tuple):  # irregular: fancy indices
                positions, targets = pieces
                where[self.axis] = targets
                out[tuple(where)] += g.take(positions, axis=self.axis)
                continue
            for source, target in pieces:
                read[self.axis], where[self.axis] = source, target
                out[tuple(where)] += g[tuple(read)]

    def adjoint(self, g):
        shape = list(g.shape)
        shape[self.axis] = self.n_in
        out = np.zeros(shape, dtype=g.dtype)
        if self.weight is None:
            self._add_back(out, g, self.low)
            return out
        weight = self.weight.astype(g.dtype, copy=False)
        self._add_back(out, g * (1 - weight), self.low)
        self._add_back(out, g * weight, self.high)
        return out


class _CubicResampling(_Resampling):
    """Bicubic resampling along one axis: four taps per output position (indices clamped to the
    input, non-decreasing along the output), with torch's cubic convolution weights (A = -0.75)."""

    __slots__ = ("taps",)

    def __init__(self, axis, n_in, taps):
        super().__init__(axis, n_in, None, None, None)
        self.taps = taps  # [(index, weight shaped to broadcast along the axis)] * 4

    def apply(self, data):
        out = None
        for index, weight in self.taps:
            term = data.take(index, axis=self.axis) * weight.astype(data.dtype, copy=False)
            out = term if out is None else out + term
        return out

    def adjoint(self, g):
        shape = list(g.shape)
        shape[self.axis] = self.n_in
        out = np.zeros(shape, dtype=g.dtype)
        for index, weight in self.taps:
            self._add_back(out, g * weight.astype(g.dtype, copy=False), index)
        return out


_CUBIC_A = -0.75


def _cubic_taps(n_in, n_out, factor, align_corners, ndim, dim):
    """torch's bicubic source positions (not clamped below 0, unlike the linear modes') and weights."""
    dst = np.arange(n_out, dtype=np.float64)
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros(n_out)
    else:
        scale = (1.0 / factor) if factor else n_in / n_out
        src = (dst + 0.5) * scale - 0.5
    start = np.floor(src)
    t = src - start
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    shape = [1] * ndim
    shape[dim] = n_out
    start = start.astype(np.int64)
    return [(np.clip(start - 1 + k, 0, n_in - 1), w.reshape(shape)) for k, w in enumerate(weights)]


def _passes(index):
    """(positions, targets) of the k-th member of every run of equal values in ``index``, per k."""
    new_run = np.concatenate(([True], index[1:] != index[:-1]))
    starts = np.flatnonzero(new_run)
    rank = np.arange(len(index)) - starts[np.cumsum(new_run) - 1]
    return [(np.flatnonzero(rank == k), index[rank == k]) for k in range(int(rank.max()) + 1)]


def _as_slices(positions, targets, most=8):
    """``positions``/``targets`` as at most ``most`` pairs of slices with constant steps, or the
    arrays themselves where they are too irregular."""
    pieces, start, n = [], 0, len(positions)
    while start < n:
        end = start + 1
        if end < n:
            dp, dt = positions[end] - positions[start], targets[end] - targets[start]
            if dp > 0 and dt > 0:
                while (end + 1 < n and positions[end + 1] - positions[end] == dp
                       and targets[end + 1] - targets[end] == dt):
                    end += 1
                end += 1
            else:
                dp = dt = 1
        else:
            dp = dt = 1
        count = end - start
        pieces.append((slice(int(positions[start]), int(positions[start]) + dp * (count - 1) + 1, int(dp)),
                       slice(int(targets[start]), int(targets[start]) + dt * (count - 1) + 1, int(dt))))
        if len(pieces) > most:
            return positions, targets
        start = end
    return pieces


# ---- interpolate as one node per call, named and saving as torch's upsample_* nodes --------------------
_UPSAMPLE_NAMES = {"nearest": "Nearest", "nearest-exact": "NearestExact", "linear": "Linear", "bilinear": "Bilinear",
                   "trilinear": "Trilinear", "bicubic": "Bicubic"}
_SCALE_NAMES = {1: ("scales",), 2: ("scales_h", "scales_w"), 3: ("scales_d", "scales_h", "scales_w")}


class _UpsampleNode(Node):
    """Backward of one interpolate call: the adjoints of its per-axis resamplings, in reverse order.
    Under create_graph the gradient is one recorded op too (``adjoint_cls``), whose own gradient is
    the forward resampling again."""

    __slots__ = ("resamplings", "output_size", "scales", "align_corners", "in_shape")
    adjoint_cls = None

    def apply(self, grads):
        g = grads[0]
        if g is None:
            return (None,)
        return (_resampled(g, self.resamplings[::-1], True, self.adjoint_cls, self),)


class _UpsampleAdjointNode(Node):
    __slots__ = ("forward_node",)

    def apply(self, grads):
        g = grads[0]
        if g is None:
            return (None,)
        fwd = self.forward_node
        return (_resampled(g, fwd.resamplings, False, type(fwd), fwd),)


def _saved_values(nd, linear):
    values = {"output_size": lambda n: n.output_size, "self_sym_sizes": lambda n: n.in_shape}
    for i, name in enumerate(_SCALE_NAMES[nd]):
        values[name] = lambda n, i=i: n.scales[i]
    if linear:
        values["align_corners"] = lambda n: n.align_corners
    return values


def _upsample_classes():
    classes = {}
    for mode, title in _UPSAMPLE_NAMES.items():
        dims = {"linear": (1,), "bilinear": (2,), "trilinear": (3,), "bicubic": (2,)}.get(mode, (1, 2, 3))
        for nd in dims:
            name = f"Upsample{title}{nd}D"
            node = node_class(f"{name}Backward0", _UpsampleNode,
                              saved_values=_saved_values(nd, mode not in ("nearest", "nearest-exact")),
                              __module__=__name__)
            node.adjoint_cls = node_class(f"{name}BackwardBackward0", _UpsampleAdjointNode, __module__=__name__)
            classes[mode, nd] = node
    return classes


_UPSAMPLE_NODES = _upsample_classes()


def _resampled(x, resamplings, adjoint, node_cls, like=None):
    data = x._ndarray
    for r in resamplings:
        data = r.adjoint(data) if adjoint else r.apply(data)
    result = wrap(data)
    if GRAD.enabled and x._requires_grad:
        node = record_op(node_cls, (x,), result)
        if adjoint:
            node.forward_node = like
        else:
            for k in _UpsampleNode.__slots__:
                setattr(node, k, getattr(like, k))
    return result


def interpolate(input: Tensor, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False) -> Tensor:
    """Nearest, nearest-exact, (bi/tri)linear, bicubic and area resampling of the spatial dims
    (separable: one resampling per axis, recorded as one torch upsample node per call)."""
    nd = input.dim() - 2
    if nd < 1:
        raise ValueError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for the "
                         f"modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact "
                         f"(got {mode})")
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear "
                         "| bicubic | trilinear")
    dims_of_mode = {**_LINEAR_MODES, "bicubic": 2}
    if mode in dims_of_mode and dims_of_mode[mode] != nd:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {dims_of_mode[mode] + 2}D "
                                  f"input")
    if mode not in ("nearest", "nearest-exact", "area", *dims_of_mode):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) "
                                  f"for the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if antialias:
        raise NotImplementedError("hookgrad's interpolate has no antialias")
    kernel = f"upsample_{mode.replace('-', '_')}{nd}d_out_frame"
    _rules.refuse_lowprec(input._ndarray, kernel)
    # torch's nearest kernels take uint8 of the integer types, its interpolating ones none
    takes_uint8 = mode in ("nearest", "nearest-exact", "area", "bilinear", "bicubic")
    _rules.refuse_kernel(input._ndarray, _rules.INTEGRAL - {"uint8"} if takes_uint8 else _rules.INTEGRAL, kernel)
    out_sizes, factors = _output_and_scales(input, size, scale_factor, nd, recompute_scale_factor)
    if mode == "area":  # torch's adaptive average pooling (and its node)
        return getattr(_F(), f"adaptive_avg_pool{nd}d")(input, out_sizes)
    dtype = input._ndarray.dtype
    if dtype not in (np.float32, np.float64):
        if mode == "bicubic" and dtype.kind in "fV":
            # half types: computed in float32, rounded once (recorded as the casts around it)
            return interpolate(input.float(), size, scale_factor, mode, align_corners,
                               recompute_scale_factor).to(input.dtype)
        if dtype == np.uint8 and mode in ("bilinear", "bicubic"):
            # torch's uint8 kernels compute in fixed point; a float computation rounds differently
            raise NotImplementedError(f"hookgrad's interpolate has no uint8 kernel for mode {mode!r} (torch's rounds "
                                      f"in fixed point); convert the input to float first")
        return _interpolate_composed(input, out_sizes, factors, mode, align_corners, nd)
    resamplings = []
    # the last axis first, as torch's kernel nests its sums (it decides where NaNs from infinities go)
    for axis in reversed(range(nd)):
        dim = 2 + axis
        n_in = input.shape[dim]
        if mode == "bicubic":
            resamplings.append(_CubicResampling(dim, n_in, _cubic_taps(n_in, out_sizes[axis], factors[axis],
                                                                       bool(align_corners), input.dim(), dim)))
            continue
        src = _source_positions(n_in, out_sizes[axis], factors[axis], bool(align_corners), mode)
        if mode in ("nearest", "nearest-exact"):
            resamplings.append(_Resampling(dim, n_in, src, None, None))
            continue
        low = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        high = np.minimum(low + 1, n_in - 1)
        shape = [1] * input.dim()
        shape[dim] = len(src)
        # the fraction rounded to the input's dtype, as torch's kernel holds it
        resamplings.append(_Resampling(dim, n_in, low, high, (src - low).astype(dtype).reshape(shape)))
    node_cls = _UPSAMPLE_NODES[mode, nd]
    like = _UpsampleNode.__new__(node_cls)  # carries what the recorded node reports
    like.resamplings, like.output_size, like.in_shape = resamplings, tuple(out_sizes), tuple(input.shape)
    like.scales = tuple(factors)
    like.align_corners = bool(align_corners) if mode not in ("nearest", "nearest-exact") else None
    return _resampled(input, resamplings, False, node_cls, like)


def _interpolate_composed(input, out_sizes, factors, mode, align_corners, nd):
    """Other dtypes (half precision, integers): through the tensor ops, whose dtype rules they follow."""
    out = input
    for axis in range(nd):
        dim = 2 + axis
        n_in = input.shape[dim]
        src = _source_positions(n_in, out_sizes[axis], factors[axis], bool(align_corners), mode)
        if mode in ("nearest", "nearest-exact"):
            out = out.index_select(dim, hookgrad.tensor(src, dtype=hookgrad.int64))
            continue
        low = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        high = np.minimum(low + 1, n_in - 1)
        frac = src - low
        shape = [1] * input.dim()
        shape[dim] = len(src)
        weight_high = hookgrad.tensor(frac.reshape(shape), dtype=input.dtype)
        below = out.index_select(dim, hookgrad.tensor(low, dtype=hookgrad.int64))
        above = out.index_select(dim, hookgrad.tensor(high, dtype=hookgrad.int64))
        out = below + (above - below) * weight_high
    return out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _shuffle_pixels(data: np.ndarray, r: int) -> np.ndarray:
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r), a new contiguous array."""
    *lead, c, h, w = data.shape
    n = len(lead)
    x = data.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return np.ascontiguousarray(x).reshape(*lead, c // (r * r), h * r, w * r)


def _unshuffle_pixels(data: np.ndarray, r: int) -> np.ndarray:
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W), a new contiguous array."""
    *lead, c, h, w = data.shape
    n = len(lead)
    x = data.reshape(*lead, c, h // r, r, w // r, r)
    x = x.transpose(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return np.ascontiguousarray(x).reshape(*lead, c * r * r, h // r, w // r)


class PixelShuffleBackward0(Node):
    """Its gradient is pixel_unshuffle of the incoming one (recorded as such under create_graph)."""

    __slots__ = ("upscale_factor",)
    saved_values = {"upscale_factor": lambda n: n.upscale_factor}

    def apply(self, grads):
        return (pixel_unshuffle(grads[0], self.upscale_factor),)


class PixelUnshuffleBackward0(Node):
    __slots__ = ("downscale_factor",)
    saved_values = {"downscale_factor": lambda n: n.downscale_factor}

    def apply(self, grads):
        return (pixel_shuffle(grads[0], self.downscale_factor),)


def _rearranged(input, out, node_cls, attr, factor):
    result = wrap(out)
    if GRAD.enabled and input._requires_grad:
        setattr(record_op(node_cls, (input,), result), attr, factor)
    return result


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    c = input.shape[-3]
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    return _rearranged(input, _shuffle_pixels(input._ndarray, r), PixelShuffleBackward0, "upscale_factor",
                       upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W)."""
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    h, w = input.shape[-2:]
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} and input.size(-1)={w} with downscale_factor={r}")
    return _rearranged(input, _unshuffle_pixels(input._ndarray, r), PixelUnshuffleBackward0, "downscale_factor",
                       downscale_factor)


class ChannelShuffleBackward0(Node):
    __slots__ = ("groups",)
    saved_values = {"groups": lambda n: n.groups}

    def apply(self, grads):
        g = grads[0]
        return (channel_shuffle(g, g.shape[1] // self.groups),)  # k groups of g undo g groups of k


def _shuffled(input: Tensor, groups: int, name: str) -> Tensor:
    if input.dim() <= 2:
        raise RuntimeError(f"{name} expects input with > 2 dims, but got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    batch, c = input.shape[0], input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    data = input._ndarray
    rest = data.shape[2:]
    return wrap(np.ascontiguousarray(data.reshape(batch, groups, c // groups, *rest).swapaxes(1, 2)).reshape(data.shape))


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels of ``groups`` groups: (N, g*k, *) -> channel order k-major."""
    result = _shuffled(input, groups, "channel_shuffle")
    if GRAD.enabled and input._requires_grad:
        record_op(ChannelShuffleBackward0, (input,), result).groups = groups
    return result


_NativeChannelShuffleBackward = no_derivative_node("native_channel_shuffle")


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """channel_shuffle whose result has no derivative (torch's native kernel: backward raises)."""
    result = _shuffled(input, groups, "channel_shuffle")
    if GRAD.enabled and input._requires_grad:
        record_op(_NativeChannelShuffleBackward, (input,), result)
    return result


# ---- distances ------------------------------------------------------------------------------------------
def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` over the last dim."""
    from .scalar_ops import add_scalar, norm_scalar
    diff = add_scalar(x1 - x2, eps)  # torch's norm(x1 - x2 + eps, p, last dim): Scalar overloads
    return norm_scalar(diff, p, max(x1.dim(), x2.dim()) - 1, keepdim)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The sum along ``dim`` of ``x1 / max(||x1||, eps)`` times ``x2 / max(||x2||, eps)``, recorded as
    torch's ATen composition records it: inputs of different shapes expanded to their common one, each
    norm cloned and clamped without recording (the norm's node saved its result), two divisions."""
    common = hookgrad.result_type(x1, x2)
    if not (common.is_floating_point or common.is_complex):
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{_dtype.scalar_type_name(common.np)}")
    if tuple(x1.shape) != tuple(x2.shape):
        from ..._ops.pointwise import check_broadcast
        check_broadcast(x1, x2)   # the wording of torch's size inference
        shape = hookgrad.broadcast_shapes(x1.shape, x2.shape)
        x1, x2 = x1.expand(shape), x2.expand(shape)
    norm1 = hookgrad.linalg.vector_norm(x1, 2, dim=dim, keepdim=True).clone()
    norm2 = hookgrad.linalg.vector_norm(x2, 2, dim=dim, keepdim=True).clone()
    with hookgrad.no_grad():
        norm1.clamp_min_(eps)
        norm2.clamp_min_(eps)
    return ((x1 / norm1) * (x2 / norm2)).sum(dim)


# ---- dropout of whole feature maps ------------------------------------------------------------------------
def _feature_dropout(input: Tensor, p: float, training: bool, batched_dims: int, name: str) -> Tensor:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    batched = input.dim() == batched_dims
    channel_dims = 2 if batched else 1
    shape = list(input.shape[:channel_dims]) + [1] * (input.dim() - channel_dims)
    if p == 1.0:
        return input * hookgrad.zeros(*shape, dtype=input.dtype)
    noise = hookgrad.empty(*shape, dtype=input.dtype).bernoulli_(1 - p).div_(1 - p)
    return input * noise


def dropout1d(input, p=0.5, training=True, inplace=False):
    if inplace:
        return _in_place(dropout1d, input, p, training)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, "
                           "a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, 3, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    dims = input.dim()
    if dims not in (3, 4):
        warnings.warn(f"dropout2d: Received a {dims}-D input to dropout2d, which is deprecated and will result in an "
                      "error in a future release. To retain the behavior and silence this warning, please use dropout "
                      "instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 spatial "
                      "dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
                      stacklevel=2)
    if dims == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=2)
    # as torch's feature dropout: one draw per (first, second) index whatever the rank (a 3-D input is (N, C, L))
    if inplace:
        return _in_place(lambda x, p_, t_: _feature_dropout(x, p_, t_, dims, "dropout2d"), input, p, training)
    return _feature_dropout(input, p, training, dims, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    if inplace:
        return _in_place(dropout3d, input, p, training)
    return _feature_dropout(input, p, training, 5, "dropout3d")


def _alpha_dropout(input, p, training, mask_shape):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    # torch's arithmetic: noise ~ Bernoulli(1 - p), b = (noise - 1) * alpha * a + alpha * a * p, out = x * a * noise + b
    noise = hookgrad.empty(*mask_shape, dtype=input.dtype).bernoulli_(1 - p)
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    b = (noise - 1).mul_(alpha * a).add_(alpha * a * p)
    noise.mul_(a)
    return input * noise + b


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    if inplace:
        return _in_place(alpha_dropout, input, p, training)
    return _alpha_dropout(input, p, training, tuple(input.shape))


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    if inplace:
        return _in_place(feature_alpha_dropout, input, p, training)
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    return _alpha_dropout(input, p, training, shape)


# ---- activations ---------------------------------------------------------------------------------------
# recorded as torch's EluBackward0/1 and CeluBackward0/1
from .activation import celu, selu  # noqa: E402
from . import activation as _act  # noqa: E402


# torch.prelu and torch.hardshrink are these functions too (declared with the ops)
prelu = hookgrad.prelu


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Leaky ReLU with a random slope in [lower, upper] per element in training, their mean otherwise
    (recorded as torch's RreluWithNoiseBackward0/1)."""
    return _act.rrelu(input, lower, upper, training, inplace)


def rrelu_with_generator(input: Tensor, lower: float, upper: float, generator=None) -> Tensor:
    """Training-mode rrelu drawing from ``generator`` (or the default one)."""
    return _act.rrelu_with_noise(input, lower, upper, True, generator)


# one node each, as torch's (GluBackward0, ThresholdBackward0/1, HardshrinkBackward0, SoftshrinkBackward0)
glu = _act.glu
threshold = _act.threshold
hardshrink = hookgrad.hardshrink
softshrink = _act.softshrink


_threshold = threshold  # the function, where its parameter of the same name hides it
