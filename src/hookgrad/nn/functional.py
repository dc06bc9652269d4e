"""``hookgrad.nn.functional``: torch.nn.functional on NumPy.

The heavy kernels live in ``nn/_functional/`` (conv, pooling and padding, normalization,
activations, losses); this module holds the small functions and the public names.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .._tensor import Tensor, wrap
from .._ops import linalg, views
from ._functional import activation as _act
from ._functional import conv as _conv
from ._functional import pooling as _pool
from ._functional.linear_ops import linear_map, linear_map_nodes, saved_arg
from ..autograd.graph import saved_dim

# args: weight's number of rows, padding_idx, scale_grad_by_freq, sparse; the indices are saved
EmbeddingBackward0 = linear_map_nodes(
    "EmbeddingBackward0", "EmbeddingBackwardBackward0", saved_names=("indices",),
    saved_values={"weight_sym_argsize_0": saved_arg(0), "padding_idx": lambda n: saved_dim(n.args[1]),
                  "scale_grad_by_freq": saved_arg(2), "sparse": saved_arg(3)})
EmbeddingBackward0.uses_saved_indices = True

# re-exports
from ._functional.activation import (dropout, elu, gelu, hardtanh, leaky_relu, log_softmax, relu, relu6, sigmoid,
                                     silu, softmax, softplus, tanh)
from ._functional.loss import (binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, huber_loss,
                               kl_div, l1_loss, mse_loss, nll_loss, smooth_l1_loss)
from ._functional.norm import batch_norm, group_norm, layer_norm
from ._functional.pooling import (adaptive_avg_pool1d, adaptive_avg_pool2d, avg_pool1d, avg_pool2d, max_pool1d,
                                  max_pool2d, pad)

__all__ = [
    "linear", "bilinear", "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d",
    "max_pool1d_with_indices", "max_pool2d_with_indices", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "dropout", "batch_norm", "layer_norm", "group_norm", "embedding", "softmax",
    "log_softmax", "one_hot", "pad", "normalize", "scaled_dot_product_attention", "relu", "relu_", "leaky_relu",
    "elu", "gelu", "silu", "sigmoid", "tanh", "softplus", "hardtanh", "relu6", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "logsigmoid", "softsign",
    "tanhshrink", "mish", "hardsigmoid", "hardswish", "softmin",
]


# ---- linear layers ---------------------------------------------------------------------------
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``, recorded as torch records it (AddmmBackward0 for 2-D input)."""
    nd = input._ndarray.ndim
    if bias is None:
        return linalg.matmul(input, weight.t())
    if nd == 2:
        return linalg.addmm(bias, input, weight.t())
    if nd == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are 0D and 2D")
    if not input._ndarray.flags.c_contiguous:  # torch flattens only a contiguous input; else matmul, then add_
        return linalg.matmul(input, weight.t()).add_(bias)
    lead = input._ndarray.shape[:-1]
    out = linalg.addmm(bias, input.reshape(-1, input._ndarray.shape[-1]), weight.t())
    return out.view(lead + (out._ndarray.shape[-1],))


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y_o = x1 @ W_o @ x2 + b_o`` over the last dims (batch dims must agree)."""
    a, b = input1._ndarray.shape, input2._ndarray.shape
    if a[:-1] != b[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {list(a[:-1])} and "
                           f"{list(b[:-1])}")
    if a[-1] != weight._ndarray.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {a[-1]} but expected "
                           f"{weight._ndarray.shape[1]}")
    if b[-1] != weight._ndarray.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {b[-1]} but expected "
                           f"{weight._ndarray.shape[2]}")
    if bias is not None and bias._ndarray.shape[-1] != weight._ndarray.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias._ndarray.shape[-1]} but "
                           f"expected {weight._ndarray.shape[0]}")
    from ._functional.linear_ops import bilinear_product
    # torch's _trilinear over (N, in1) and (N, in2) views: one TrilinearBackward0
    out = bilinear_product(input1.reshape(-1, a[-1]), weight, input2.reshape(-1, b[-1]))
    out = out.reshape(a[:-1] + (weight._ndarray.shape[0],))
    return out + bias if bias is not None else out


# ---- convolutions ----------------------------------------------------------------------------
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    return _conv.conv_nd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    return _conv.conv_nd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv.conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                                   "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv.conv_transpose_nd(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                                   "conv_transpose2d")


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _pool.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _pool.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# ---- embedding and friends -------------------------------------------------------------------
def _embedding_fwd(w, idx, pad_row):
    if pad_row is None:
        return w[idx]
    w = w.copy()
    w[pad_row] = 0
    return w[idx]


def _embedding_adj(g, idx, num, pad_row, counts):
    d = g.shape[-1]
    flat = idx.reshape(-1)
    gg = g.reshape(-1, d)
    if counts is not None:
        gg = gg / counts[flat][:, None]
    out = np.zeros((num, d), dtype=g.dtype)
    np.add.at(out, flat, gg)
    if pad_row is not None:
        out[pad_row] = 0
    return out


def embedding(input: Tensor, weight: Tensor, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False) -> Tensor:
    idx = input._ndarray
    if idx.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding)")
    num = weight._ndarray.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < num, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -num, "Padding_idx must be within num_embeddings"
            padding_idx = num + padding_idx
    if idx.size and (idx.min() < 0 or idx.max() >= num):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _embedding_renorm(weight, idx, max_norm, norm_type)
    counts = None
    if scale_grad_by_freq:
        counts = np.bincount(idx.reshape(-1), minlength=num).astype(weight._ndarray.dtype)
    fwd = functools.partial(_embedding_fwd, idx=idx, pad_row=padding_idx)
    adj = functools.partial(_embedding_adj, idx=idx, num=num, pad_row=padding_idx, counts=counts)
    out = linear_map(weight, fwd, adj, EmbeddingBackward0, value=weight._ndarray[idx],
                     args=(num, -1 if padding_idx is None else padding_idx, scale_grad_by_freq, sparse))
    if out._grad_fn_value is not None:
        out._grad_fn_value.save(input)
    return out


def _embedding_renorm(weight, idx, max_norm, norm_type):
    """Rescale, in place and outside autograd, the looked-up rows whose norm exceeds ``max_norm``."""
    rows = np.unique(idx.reshape(-1))
    w = weight._ndarray
    sub = w[rows]
    norms = np.linalg.norm(sub, ord=norm_type, axis=1)
    big = norms > max_norm
    if big.any():
        scale = (max_norm / (norms[big] + 1e-7)).astype(w.dtype)
        w[rows[big]] = sub[big] * scale[:, None]
        weight._bump_version()


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    d = tensor._ndarray
    if d.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if d.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(d.max()) + 1
    if d.size and d.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if d.size and d.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = np.zeros(d.shape + (num_classes,), dtype=np.int64)
    np.put_along_axis(out, d[..., None], 1, -1)
    return wrap(out)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None) -> Tensor:
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    result = input / denom
    if out is not None:
        out._ndarray = result._ndarray
        return out
    return result


# ---- attention ------------------------------------------------------------------------------
from ._functional.attention import scaled_dot_product_attention  # noqa: E402


# ---- small aliases ---------------------------------------------------------------------------
def relu_(input: Tensor) -> Tensor:
    return input.relu_()


def _refuse_integral(input, kernel):
    """torch has no integer or bool kernel for these activations (its NotImplementedError)."""
    from .._ops import _dtype_rules
    _dtype_rules.refuse_kernel(input._ndarray, _dtype_rules.INTEGRAL, kernel)


def logsigmoid(input: Tensor) -> Tensor:
    return _act.logsigmoid(input)


def softsign(input: Tensor) -> Tensor:
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    return input - input.tanh()


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    return _act.mish(input, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    return _act.hardsigmoid(input, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    return _act.hardswish(input, inplace)


def softmin(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _act._softmax_dim("softmin", input.dim(), _stacklevel)
    return _act.softmax(-input, dim, _stacklevel, dtype)


# ---- layers composed of recorded ops (N-d convolution and pooling, resampling, more norms) ----------
from ._functional.convnd import conv3d, conv_transpose3d, fold, unfold  # noqa: E402
from ._functional.im2col import fold, unfold  # noqa: E402,F811  (Im2Col/Col2ImBackward0)
from ._functional.poolnd import (adaptive_avg_pool3d, adaptive_max_pool1d, adaptive_max_pool1d_with_indices,  # noqa: E402
                                 adaptive_max_pool2d, adaptive_max_pool2d_with_indices, adaptive_max_pool3d,
                                 adaptive_max_pool3d_with_indices, avg_pool3d, max_pool3d, max_pool3d_with_indices,
                                 max_unpool1d, max_unpool2d, max_unpool3d)
from ._functional.composed import (alpha_dropout, celu, channel_shuffle, cosine_similarity, dropout1d,  # noqa: E402
                                   dropout2d, dropout3d, embedding_bag, feature_alpha_dropout, glu, hardshrink,
                                   instance_norm, interpolate, local_response_norm, native_channel_shuffle,
                                   pairwise_distance, pixel_shuffle, pixel_unshuffle, prelu, rms_norm, rrelu, selu,
                                   softshrink, threshold, upsample, upsample_bilinear, upsample_nearest)

__all__ += [
    "conv3d", "conv_transpose3d", "fold", "unfold", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "avg_pool3d", "max_pool3d", "max_pool3d_with_indices",
    "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "alpha_dropout", "celu", "channel_shuffle", "cosine_similarity", "dropout1d", "dropout2d", "dropout3d",
    "embedding_bag", "feature_alpha_dropout", "glu", "hardshrink", "instance_norm", "interpolate",
    "local_response_norm", "native_channel_shuffle", "pairwise_distance", "pixel_shuffle", "pixel_unshuffle",
    "prelu", "rms_norm", "rrelu", "selu", "softshrink", "threshold", "upsample", "upsample_bilinear",
    "upsample_nearest",
]

from ._functional.loss_more import (cosine_embedding_loss, gaussian_nll_loss, hinge_embedding_loss,  # noqa: E402
                                    margin_ranking_loss, multi_margin_loss, multilabel_margin_loss,
                                    multilabel_soft_margin_loss, poisson_nll_loss, soft_margin_loss,
                                    triplet_margin_loss, triplet_margin_with_distance_loss)
from ._functional.torch_level import (celu_, elu_, hardtanh_, leaky_relu_, rrelu_, selu_,  # noqa: E402
                                      threshold_)
from ._functional.ctc import ctc_loss  # noqa: E402
from ._functional.linear_ce import linear_cross_entropy  # noqa: E402
from ._functional.helpers import (BroadcastingList1, BroadcastingList2, BroadcastingList3,  # noqa: E402
                                  assert_int_or_pair, boolean_dispatch, handle_torch_function, has_torch_function,
                                  has_torch_function_unary, has_torch_function_variadic)
from ._functional.sampling import affine_grid, grid_sample, gumbel_softmax  # noqa: E402
from .modules.attention import multi_head_attention_forward  # noqa: E402
from ._functional.fractional import (fractional_max_pool2d, fractional_max_pool2d_with_indices,  # noqa: E402
                                     fractional_max_pool3d, fractional_max_pool3d_with_indices)
from ._functional.pool_more import lp_pool1d, lp_pool2d, lp_pool3d  # noqa: E402
from .. import pdist  # noqa: E402 - torch.nn.functional.pdist is torch.pdist


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution of a (time, batch, channel) input with a (kernel, in, out) weight."""
    out = _conv.conv_nd(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad, 1, 1, 1, "conv_tbc")
    return out.permute(2, 0, 1)


__all__ += [
    "cosine_embedding_loss", "gaussian_nll_loss", "hinge_embedding_loss", "margin_ranking_loss", "multi_margin_loss",
    "multilabel_margin_loss", "multilabel_soft_margin_loss", "poisson_nll_loss", "soft_margin_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss", "celu_", "elu_", "hardtanh_", "leaky_relu_",
    "rrelu_", "selu_", "threshold_", "pdist", "conv_tbc", "lp_pool1d", "lp_pool2d", "lp_pool3d",
    "ctc_loss", "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices", "affine_grid", "grid_sample", "gumbel_softmax",
    "multi_head_attention_forward", "BroadcastingList1", "BroadcastingList2", "BroadcastingList3",
    "assert_int_or_pair", "boolean_dispatch", "handle_torch_function", "has_torch_function", "has_torch_function_unary",
    "has_torch_function_variadic", "linear_cross_entropy",
]
from .._ops.scaled_mm import (ScalingType, SwizzleType, grouped_mm, scaled_grouped_mm,  # noqa: E402
                              scaled_mm)

__all__ += ["ScalingType", "SwizzleType", "grouped_mm", "scaled_grouped_mm", "scaled_mm"]

# torch's TypeError for a non-tensor where a function takes a tensor (see hookgrad/_argcheck.py)
from .._argcheck import FUNCTIONAL_VIA_METHOD as _VIA_METHOD, guard_namespace as _guard_namespace  # noqa: E402

# torch writes nn.functional in Python: only its built-ins take NumPy's axis=/keepdims=
_guard_namespace(globals(), __all__, _VIA_METHOD, numpy_names=("cosine_similarity", "pairwise_distance"))

import sys as _sys  # noqa: E402

from ._functional import torch_level as _torch_level  # noqa: E402

from .._C import _torch_function as _tf, _torch_function_tables as _tf_tables  # noqa: E402

# every function here consults __torch_function__ overrides and function modes (before torch.* shares them)
_tf.install_namespace(globals(), [_n for _n in list(globals()) if not _n.startswith("_")],
                      _tf_tables.FUNCTIONAL_PYTHON_LEVEL, _tf_tables.FUNCTIONAL_NEVER, _tf_tables.FUNCTIONAL_LEFT_OUT)
_torch_level.bind_functional(_sys.modules[__name__])  # torch.conv2d is F.conv2d, ...
