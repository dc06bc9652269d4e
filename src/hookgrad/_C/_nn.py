"""``torch._C._nn``: the ATen entry points behind ``torch.nn.functional``, with ATen's signatures.

Where torch's ``F.X`` is this very function (``F.gelu is torch._C._nn.gelu``) the name answers with
hookgrad's ``F.X``. The others take ATen's arguments and call hookgrad's functional op: losses take
``reduction`` as torch's integer enum (0 none, 1 mean, 2 sum; left out it is 0 here, as in torch's Python
binding, although the ATen schema says 1), pools take ``stride=[]`` for "the kernel
size", padding functions are named by mode. Names that are not here (the mkldnn and depthwise kernels,
``upsample_*``, ``fractional_max_pool*``, ``rrelu_with_noise``, ``max_unpool*``, torch's ``_test_*``
helpers) are missing and say so.
"""
from __future__ import annotations


# F's functions that torch's torch.nn.functional takes from torch._C._nn unchanged
_SAME_AS_FUNCTIONAL = ("linear", "gelu", "softplus", "softshrink", "one_hot", "avg_pool2d", "avg_pool3d",
                       "scaled_dot_product_attention", "elu_", "hardtanh_", "leaky_relu_")
_REDUCTIONS = ("none", "mean", "sum")


def _F():
    from ..nn import functional
    return functional


def __getattr__(name):
    if name in _SAME_AS_FUNCTIONAL:
        return getattr(_F(), name)
    raise AttributeError(f"module 'torch._C._nn' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | set(_SAME_AS_FUNCTIONAL))


def _reduction(value) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"reduction must be an int (torch's Reduction enum), not {type(value).__name__}")
    if not 0 <= value < len(_REDUCTIONS):
        raise RuntimeError(f"{value} is not a valid value for reduction")
    return _REDUCTIONS[value]


def _unary(name, functional_name=None):
    def op(self, *args, **kwargs):
        return getattr(_F(), functional_name or name)(self, *args, **kwargs)
    op.__name__ = op.__qualname__ = name
    return op


# ---- activations ---------------------------------------------------------------------------------
hardsigmoid = _unary("hardsigmoid")
hardswish = _unary("hardswish")
relu6 = _unary("relu6")
silu = _unary("silu")
mish = _unary("mish")
log_sigmoid = _unary("log_sigmoid", "logsigmoid")


def hardtanh(self, min_val=-1, max_val=1):
    return _F().hardtanh(self, min_val, max_val)


def leaky_relu(self, negative_slope=0.01):
    return _F().leaky_relu(self, negative_slope)


def glu(self, dim=-1):
    return _F().glu(self, dim)


def elu(self, alpha=1, scale=1, input_scale=1):
    """ATen's elu: ``scale * (x if x > 0 else alpha * (exp(input_scale * x) - 1))``."""
    import hookgrad
    if scale == 1 and input_scale == 1:
        return _F().elu(self, alpha)
    negative = alpha * (hookgrad.exp(self * input_scale) - 1)
    return scale * hookgrad.where(self > 0, self, negative)


# ---- losses (reduction: torch's integer enum) --------------------------------------------------------
def mse_loss(self, target, reduction=0):
    return _F().mse_loss(self, target, reduction=_reduction(reduction))


def l1_loss(self, target, reduction=0):
    return _F().l1_loss(self, target, reduction=_reduction(reduction))


def smooth_l1_loss(self, target, reduction=0, beta=1.0):
    return _F().smooth_l1_loss(self, target, reduction=_reduction(reduction), beta=beta)


def huber_loss(self, target, reduction=0, delta=1.0):
    return _F().huber_loss(self, target, reduction=_reduction(reduction), delta=delta)


def soft_margin_loss(self, target, reduction=0):
    return _F().soft_margin_loss(self, target, reduction=_reduction(reduction))


def binary_cross_entropy(self, target, weight=None, reduction=0):
    return _F().binary_cross_entropy(self, target, weight=weight, reduction=_reduction(reduction))


def nll_loss(self, target, weight=None, reduction=0, ignore_index=-100):
    return _F().nll_loss(self, target, weight=weight, reduction=_reduction(reduction), ignore_index=ignore_index)


nll_loss_nd = nll_loss
nll_loss2d = nll_loss


def cross_entropy_loss(self, target, weight=None, reduction=0, ignore_index=-100, label_smoothing=0.0):
    return _F().cross_entropy(self, target, weight=weight, reduction=_reduction(reduction),
                              ignore_index=ignore_index, label_smoothing=label_smoothing)


def multi_margin_loss(self, target, p=1, margin=1, weight=None, reduction=0):
    return _F().multi_margin_loss(self, target, p=p, margin=margin, weight=weight, reduction=_reduction(reduction))


def multilabel_margin_loss(self, target, reduction=0):
    return _F().multilabel_margin_loss(self, target, reduction=_reduction(reduction))


# ---- pooling, padding, folding -----------------------------------------------------------------------
def adaptive_avg_pool2d(self, output_size):
    return _F().adaptive_avg_pool2d(self, output_size)


def adaptive_avg_pool3d(self, output_size):
    return _F().adaptive_avg_pool3d(self, output_size)


def adaptive_max_pool2d(self, output_size):
    return _F().adaptive_max_pool2d(self, output_size, return_indices=True)


def adaptive_max_pool3d(self, output_size):
    return _F().adaptive_max_pool3d(self, output_size, return_indices=True)


def _pool_with_indices(functional_name):
    def pool(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        # ATen's empty stride means "the kernel size"
        return getattr(_F(), functional_name)(self, kernel_size, stride=list(stride) or None, padding=padding,
                                              dilation=dilation, ceil_mode=ceil_mode, return_indices=True)
    pool.__name__ = pool.__qualname__ = functional_name + "_with_indices"
    return pool


max_pool2d_with_indices = _pool_with_indices("max_pool2d")
max_pool3d_with_indices = _pool_with_indices("max_pool3d")


def pad(self, pad, mode="constant", value=None):  # noqa: A002 - ATen's argument name
    return _F().pad(self, pad, mode=mode, value=value)


def _mode_pad(mode, name):
    def padder(self, padding):
        return _F().pad(self, list(padding), mode=mode)
    padder.__name__ = padder.__qualname__ = name
    return padder


reflection_pad1d = _mode_pad("reflect", "reflection_pad1d")
reflection_pad2d = _mode_pad("reflect", "reflection_pad2d")
reflection_pad3d = _mode_pad("reflect", "reflection_pad3d")
replication_pad1d = _mode_pad("replicate", "replication_pad1d")
replication_pad2d = _mode_pad("replicate", "replication_pad2d")
replication_pad3d = _mode_pad("replicate", "replication_pad3d")
_pad_circular = _mode_pad("circular", "_pad_circular")


def im2col(self, kernel_size, dilation, padding, stride):
    return _F().unfold(self, kernel_size, dilation=dilation, padding=padding, stride=stride)


def col2im(self, output_size, kernel_size, dilation, padding, stride):
    return _F().fold(self, output_size, kernel_size, dilation=dilation, padding=padding, stride=stride)


# ---- convolutions (ATen's slow reference kernels: the same result as the public op) --------------------
def thnn_conv2d(self, weight, kernel_size, bias=None, stride=1, padding=0):
    return _F().conv2d(self, weight, bias, stride, padding)


def slow_conv3d(self, weight, kernel_size, bias=None, stride=1, padding=0):
    return _F().conv3d(self, weight, bias, stride, padding)


def slow_conv_dilated2d(self, weight, kernel_size, bias=None, stride=1, padding=0, dilation=1):
    return _F().conv2d(self, weight, bias, stride, padding, dilation)


def slow_conv_dilated3d(self, weight, kernel_size, bias=None, stride=1, padding=0, dilation=1):
    return _F().conv3d(self, weight, bias, stride, padding, dilation)


def slow_conv_transpose2d(self, weight, kernel_size, bias=None, stride=1, padding=0, output_padding=0, dilation=1):
    return _F().conv_transpose2d(self, weight, bias, stride, padding, output_padding, 1, dilation)


def slow_conv_transpose3d(self, weight, kernel_size, bias=None, stride=1, padding=0, output_padding=0, dilation=1):
    return _F().conv_transpose3d(self, weight, bias, stride, padding, output_padding, 1, dilation)


# ---- helpers -------------------------------------------------------------------------------------------
def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    from ..nn.utils.rnn import pad_sequence as pad_sequences
    return pad_sequences(sequences, batch_first=batch_first, padding_value=padding_value, padding_side=padding_side)


def flatten_dense_tensors(tensors):
    """The tensors' values end to end in one 1-D tensor."""
    import hookgrad
    return hookgrad.cat([t.reshape(-1) for t in tensors]) if len(tensors) else hookgrad.empty(0)


def unflatten_dense_tensors(flat, tensors):
    """``flat`` cut back into views shaped like ``tensors``."""
    views, offset = [], 0
    for t in tensors:
        count = t.numel()
        views.append(flat.narrow(0, offset, count).view_as(t))
        offset += count
    return tuple(views)


def _parse_to(*args, **kwargs):
    """``Tensor.to``'s arguments as (device, dtype, non_blocking, memory_format)."""
    from ..nn.modules.module import _parse_to as parse
    return parse(*args, **kwargs)


