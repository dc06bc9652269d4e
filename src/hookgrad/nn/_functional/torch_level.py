"""The ``torch.*`` names of the nn kernels (``torch.conv2d``, ``torch.batch_norm``, ``torch.dropout``,
``torch.kl_div``, ...) and the in-place activations of ``nn.functional`` (``F.celu_``, ...).

Where torch's function is the very ``nn.functional`` one, the name is bound to the same object;
where torch's signature differs (the ATen argument order of the norms and ``embedding``, ``train``
for ``training``, losses taking the reduction as an int), a function here takes torch's arguments
and calls the one kernel. ``hookgrad.__getattr__`` reaches these on first use, so that
``import hookgrad`` does not load ``nn``.
"""
from __future__ import annotations

import warnings

from ..._nn_torch_names import NN_TORCH_NAMES, SAME_AS_FUNCTIONAL
from ..._ops import views
from ...autograd._warn_once import warn_once
from . import activation as _act
from . import composed as _composed
from . import loss as _loss
from . import loss_more as _loss_more
from . import norm as _norm
from . import pooling as _pool
from . import poolnd as _poolnd

# int reductions of the ATen losses (torch's Reduction enum)
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(value):
    """ATen's rule: 1 averages, 2 sums, any other value leaves the loss unreduced."""
    return _REDUCTIONS.get(value, "none")


# ---- the in-place activations of nn.functional (torch.celu_ is F.celu_, ...) ------------------
def celu_(input, alpha=1.0):
    return _act.celu(input, alpha, inplace=True)


def selu_(input):
    return _act.selu(input, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _act.rrelu(input, lower, upper, training, True, generator)


def threshold_(input, threshold, value):
    return _act.threshold(input, threshold, value, True)


def elu_(input, alpha=1):  # torch reports the int default on its node
    return _act.elu(input, alpha, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _act.hardtanh(input, min_val, max_val, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return _act.leaky_relu(input, negative_slope, inplace=True)


# ---- activations and dropout with torch's (ATen) signatures --------------------------------------
def celu(input, alpha=1.0):
    return _composed.celu(input, alpha)


def selu(input):
    return _composed.selu(input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    if training:
        return _composed.rrelu_with_generator(input, lower, upper, generator)
    return _composed.rrelu(input, lower, upper, training)


def threshold(input, threshold, value):
    return _composed.threshold(input, threshold, value)


def _check_p(p):
    if p < 0 or p > 1:  # RuntimeError from ATen (nn.functional raises ValueError)
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p, train):
    _check_p(p)
    return _act.dropout(input, p, train)


def dropout_(input, p, train):
    _check_p(p)
    return _act.dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    return _composed.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    return views.apply_inplace(input, _composed.alpha_dropout, p, train)


def feature_alpha_dropout(input, p, train):
    _feature_dims(input)
    return _composed.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    _feature_dims(input)
    return views.apply_inplace(input, _composed.feature_alpha_dropout, p, train)


def _feature_dims(input):
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")


def _feature_dropout(input, p, train):
    """Whole (sample, channel) slices dropped: the mask spans the first two dims."""
    _feature_dims(input)
    return _composed._feature_dropout(input, p, train, input.dim(), "feature_dropout")


def feature_dropout(input, p, train):
    return _feature_dropout(input, p, train)


def feature_dropout_(input, p, train):
    _feature_dims(input)
    return views.apply_inplace(input, _feature_dropout, p, train)


# ---- norms and embedding in ATen's argument order -------------------------------------------------
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return _norm.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    return _composed.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return _norm.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return _norm.group_norm(input, num_groups, weight, bias, eps)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    from .. import functional as F
    return F.embedding(indices, weight, None if padding_idx < 0 else padding_idx, None, 2.0, scale_grad_by_freq,
                       sparse)


# ---- the native (ATen) forms that also return their statistics -------------------------------------------
def _stats(input, dims, eps, keep):
    mean = input.mean(dims, keepdim=keep)
    rstd = (input.var(dims, correction=0, keepdim=keep) + eps).rsqrt()
    return mean, rstd


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    out = _norm.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        empty = input.new_empty(0)
        return out, empty, empty
    dims = (0,) + tuple(range(2, input.dim()))
    mean, rstd = _stats(input.detach(), dims, eps, False)  # torch's statistics outputs take no gradient
    return out, mean, rstd


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    out = _norm.layer_norm(input, normalized_shape, weight, bias, eps)
    dims = tuple(range(input.dim() - len(normalized_shape), input.dim()))
    mean, rstd = _stats(input.detach(), dims, eps, True)  # torch's statistics outputs take no gradient
    return out, mean, rstd


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    out = _norm.group_norm(input, group, weight, bias, eps)
    grouped = input.reshape(N, group, -1)
    mean, rstd = _stats(grouped, (2,), eps, False)
    return out, mean, rstd


def native_dropout(input, p, train):
    import hookgrad
    if train is False:
        return input.clone(), hookgrad.ones(input.shape, dtype=hookgrad.bool)
    if p < 0 or p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    keep = hookgrad.empty(*input.shape, dtype=input.dtype).bernoulli_(1.0 - p)
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    return input * keep * scale, keep.to(hookgrad.bool)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    from .. import functional as F
    nd = weight.dim() - 2
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Rows of ``input`` looked up by ``indices`` rescaled in place to norm at most ``max_norm``."""
    from .. import functional as F
    views.check_inplace(input)
    F._embedding_renorm(input, indices._ndarray, max_norm, norm_type)
    return input


# ---- spatial sampling with ATen's integer modes -----------------------------------------------------------
_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def affine_grid_generator(theta, size, align_corners):
    from .sampling import affine_grid
    return affine_grid(theta, size, align_corners)


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    from .sampling import grid_sample
    return grid_sample(input, grid, _INTERPOLATION[interpolation_mode], _PADDING[padding_mode], align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    if input.dim() != 4:
        raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    if input.dim() != 5:
        raise RuntimeError(f"grid_sampler(): expected 5D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


# ---- recurrent cells (one step): ATen's cell step, as the cell modules run it ---------------------------------
def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    from .recurrent import cell_step
    return cell_step("RNN_TANH", input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    from .recurrent import cell_step
    return cell_step("RNN_RELU", input, hx, w_ih, w_hh, b_ih, b_hh)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    from .recurrent import cell_step
    h, c = hx
    return cell_step("LSTM", input, (h, c), w_ih, w_hh, b_ih, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    from .recurrent import cell_step
    return cell_step("GRU", input, hx, w_ih, w_hh, b_ih, b_hh)


# ---- deprecated norms kept by torch for TorchScript ----------------------------------------------------------
def norm_except_dim(v, pow=2, dim=0):
    import hookgrad
    if dim == -1:
        return v.norm(pow)
    dims = tuple(d for d in range(v.dim()) if d != dim % v.dim())
    return hookgrad.linalg.vector_norm(v, pow, dims, keepdim=True)


def frobenius_norm(input, dim, keepdim=False):
    import hookgrad
    warn_once("frobenius_norm", "at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will "
              "be removed in a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead",
              stacklevel=3)
    return hookgrad.linalg.vector_norm(input, 2.0, dim, keepdim)


def nuclear_norm(input, dim=None, keepdim=False):
    import hookgrad
    warn_once("nuclear_norm", "at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be "
              "removed in a future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead",
              stacklevel=3)
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    if dim is None:
        dim = (-2, -1)
    return hookgrad.linalg.matrix_norm(input, "nuc", dim, keepdim)


# ---- pooling returning torch's results ----------------------------------------------------------
def _stride(stride):
    return None if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else stride


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _pool.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _pool.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _poolnd.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _pool.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode, True)


def adaptive_max_pool1d(input, output_size):
    return _poolnd.adaptive_max_pool1d(input, output_size, True)


# ---- losses with the reduction as torch's int -----------------------------------------------------
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    return _loss.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                                  pos_weight=pos_weight)


def kl_div(input, target, reduction=1, *, log_target=False):
    with warnings.catch_warnings():  # the ATen op does not warn about 'mean' (nn.functional does)
        warnings.simplefilter("ignore", UserWarning)
        return _loss.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return _loss_more.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return _loss_more.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return _loss_more.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction=1):
    return _loss_more.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                          reduction=_reduction(reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    from .ctc import ctc_loss as _ctc
    return _ctc(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction), zero_infinity)


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return _loss_more.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


# ---- names torch binds to the very nn.functional function ----------------------------------------
TORCH_NAMES = NN_TORCH_NAMES

# nn.functional's in-place activations (the first four are torch.* names too)
FUNCTIONAL_INPLACE = ("celu_", "selu_", "rrelu_", "threshold_", "elu_", "hardtanh_", "leaky_relu_")

__all__ = list(TORCH_NAMES)


def bind_functional(F) -> None:
    """Called by ``nn.functional`` once its names exist and are checked: the names torch shares
    with it become its objects, and the torch-signature functions here get torch's argument checks."""
    from ..._argcheck import guard_namespace
    namespace = globals()
    for name in SAME_AS_FUNCTIONAL + FUNCTIONAL_INPLACE:
        namespace[name] = getattr(F, name)
    guard_namespace(namespace, [n for n in TORCH_NAMES if n not in SAME_AS_FUNCTIONAL + FUNCTIONAL_INPLACE])
    from ..._C._torch_function import install_namespace
    install_namespace(namespace, [n for n in TORCH_NAMES if n not in SAME_AS_FUNCTIONAL + FUNCTIONAL_INPLACE])


from .recurrent import batch_norm_update_stats, embedding_bag, gru, lstm, rnn_relu, rnn_tanh  # noqa: E402,F401
