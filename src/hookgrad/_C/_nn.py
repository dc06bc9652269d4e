"""``torch._C._nn``: the ATen entry points behind ``torch.nn.functional``, with ATen's signatures.

Where torch's ``F.X`` is this very function (``F.gelu is torch._C._nn.gelu``) the name answers with
hookgrad's ``F.X``. The others take ATen's arguments and call hookgrad's functional op: losses take
``reduction`` as torch's integer enum (0 none, 1 mean, 2 sum; left out it is 0 here, as in torch's Python
binding, although the ATen schema says 1), pools take ``stride=[]`` for "the kernel
size", padding functions are named by mode. Names that are not here (the mkldnn kernels, ``gelu_``,
``rrelu_with_noise``, ``_upsample_lanczos2d_aa``, torch's ``_test_*`` helpers) are missing and say so.
"""
from __future__ import annotations


# F's functions that torch's torch.nn.functional takes from torch._C._nn unchanged
_SAME_AS_FUNCTIONAL = ("linear", "gelu", "softplus", "softshrink", "one_hot", "avg_pool2d", "avg_pool3d",
                       "scaled_dot_product_attention", "elu_", "hardtanh_", "leaky_relu_")
_REDUCTIONS = ("none", "mean", "sum")

# torch._C._nn names left out on purpose, with why (docs/api-coverage.md lists them)
LEFT_OUT = {
    "mkldnn_linear": "oneDNN kernels on oneDNN's own tensor layout; hookgrad does not use oneDNN",
    "mkldnn_reorder_conv2d_weight": "oneDNN weight layouts; hookgrad does not use oneDNN",
    "mkldnn_reorder_conv3d_weight": "oneDNN weight layouts; hookgrad does not use oneDNN",
    "gelu_": "an in-place gelu that torch.nn.functional itself never calls; hookgrad has no in-place gelu kernel",
    "rrelu_with_noise": "fills its noise argument from torch's random stream in place; F.rrelu is hookgrad's rrelu",
    "rrelu_with_noise_": "as rrelu_with_noise",
    "_upsample_lanczos2d_aa": "Lanczos resampling, which hookgrad's interpolate does not have",
    "_test_ambiguous_defaults": "a fixture of torch's own argument-parser tests",
    "_test_optional_filled_intlist": "a fixture of torch's own argument-parser tests",
    "_test_optional_floatlist": "a fixture of torch's own argument-parser tests",
    "_test_optional_intlist": "a fixture of torch's own argument-parser tests",
    "_test_string_default": "a fixture of torch's own argument-parser tests",
    "_test_warn_in_autograd": "a fixture of torch's own autograd tests",
}


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


def _inplace(functional_name):
    def op(self):
        return getattr(_F(), functional_name)(self, inplace=True)
    op.__name__ = op.__qualname__ = functional_name + "_"
    return op


def _with_inplace(name):
    """An activation torch._C._nn has in both forms: ``name`` and the in-place ``name_`` (F's inplace=True)."""
    return _unary(name), _inplace(name)


# ---- activations ---------------------------------------------------------------------------------
hardsigmoid, hardsigmoid_ = _with_inplace("hardsigmoid")
hardswish, hardswish_ = _with_inplace("hardswish")
relu6, relu6_ = _with_inplace("relu6")
silu, silu_ = _with_inplace("silu")
mish, mish_ = _with_inplace("mish")
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
    if mode != "constant" and value is not None:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
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


def _conv_depthwise(functional_name, name):
    def conv(self, weight, kernel_size, bias, stride, padding, dilation):
        # torch has this kernel for CUDA only; on the CPU it refuses (F.conv2d with groups is the CPU way)
        raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the 'CPU' backend: torch "
                                  f"has this kernel for CUDA only (use F.{functional_name} with groups)")
    conv.__name__ = conv.__qualname__ = name
    return conv


_conv_depthwise2d = _conv_depthwise("conv2d", "_conv_depthwise2d")
conv_depthwise3d = _conv_depthwise("conv3d", "conv_depthwise3d")


# ---- upsampling ----------------------------------------------------------------------------------------
def _upsample(name, mode, dims, takes_align_corners, antialias=False):
    """Both of ATen's overloads: ``(self, output_size, [align_corners,] scales...)`` and the ``.vec`` one,
    ``(input, output_size, [align_corners,] scale_factors)``, told apart as torch's binding does: a list (or
    None) of scale factors where the per-dimension scales would be."""
    def upsample(input, output_size, *args, **kwargs):  # noqa: A002 - ATen's argument name
        args = list(args)
        align_corners = None
        if takes_align_corners:
            if args:
                align_corners = args.pop(0)
            elif "align_corners" in kwargs:
                align_corners = kwargs.pop("align_corners")
            else:
                raise TypeError(f"{name}() missing required argument 'align_corners'")
        extra = {"align_corners": align_corners} if takes_align_corners else {}
        if antialias:
            extra["antialias"] = True
        interpolate = _F().interpolate
        if "scale_factors" in kwargs or (len(args) == 1 and not kwargs and
                                         (args[0] is None or isinstance(args[0], (list, tuple)))):
            scale_factors = kwargs.pop("scale_factors", None) if "scale_factors" in kwargs else args[0]
            if (output_size is None) == (scale_factors is None):
                raise RuntimeError("Must specify exactly one of output_size and scale_factors")
            if output_size is not None:
                return interpolate(input, size=list(output_size), mode=mode, **extra)
            return interpolate(input, scale_factor=list(scale_factors), mode=mode, **extra)
        scales = list(args) + [kwargs.pop(k) for k in list(kwargs) if k.startswith("scales")]
        if kwargs:
            raise TypeError(f"{name}() got unexpected keyword arguments {sorted(kwargs)}")
        output_size = list(output_size)
        if len(output_size) != dims:
            raise RuntimeError(f"It is expected output_size equals to {dims}, but got size {len(output_size)}")
        if all(s is None for s in scales):
            return interpolate(input, size=output_size, mode=mode, **extra)
        # explicit scales change where output pixels sample the input; interpolate uses them exactly when they
        # also give the requested size
        sizes = input.shape[-dims:]
        if len(scales) == dims and all(s is not None and int(n * s) == o
                                       for n, s, o in zip(sizes, scales, output_size)):
            return interpolate(input, scale_factor=scales, mode=mode, recompute_scale_factor=False, **extra)
        raise NotImplementedError(f"hookgrad's {name} takes explicit scales only when they give output_size")
    upsample.__name__ = upsample.__qualname__ = name
    return upsample


upsample_nearest1d = _upsample("upsample_nearest1d", "nearest", 1, False)
upsample_nearest2d = _upsample("upsample_nearest2d", "nearest", 2, False)
upsample_nearest3d = _upsample("upsample_nearest3d", "nearest", 3, False)
_upsample_nearest_exact1d = _upsample("_upsample_nearest_exact1d", "nearest-exact", 1, False)
_upsample_nearest_exact2d = _upsample("_upsample_nearest_exact2d", "nearest-exact", 2, False)
_upsample_nearest_exact3d = _upsample("_upsample_nearest_exact3d", "nearest-exact", 3, False)
upsample_linear1d = _upsample("upsample_linear1d", "linear", 1, True)
upsample_bilinear2d = _upsample("upsample_bilinear2d", "bilinear", 2, True)
upsample_bicubic2d = _upsample("upsample_bicubic2d", "bicubic", 2, True)
upsample_trilinear3d = _upsample("upsample_trilinear3d", "trilinear", 3, True)
_upsample_bilinear2d_aa = _upsample("_upsample_bilinear2d_aa", "bilinear", 2, True, antialias=True)
_upsample_bicubic2d_aa = _upsample("_upsample_bicubic2d_aa", "bicubic", 2, True, antialias=True)


# ---- unpooling, fractional pooling, padding by enum ---------------------------------------------------
def _unpool(name, dims):
    def unpool(self, indices, output_size, *shape_checks):
        """Scatter ``self`` to the flat positions ``indices`` of an ``output_size`` plane (ATen's stride and
        padding arguments for 3-D only serve checks)."""
        output_size = [int(n) for n in output_size]
        if len(output_size) != dims:
            raise RuntimeError(f"There should be exactly {dims} elements in output_size, but got {len(output_size)} "
                               f"elements.")
        if tuple(indices.shape) != tuple(self.shape):
            raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                               f"({tuple(self.shape)}) but got indices tensor with shape: {tuple(indices.shape)}")
        lead = tuple(self.shape[:-dims])
        plane = 1
        for n in output_size:
            plane *= n
        if indices.numel():
            low, high = int(indices.min()), int(indices.max())
            if low < 0 or high >= plane:
                raise RuntimeError(f"Found an invalid max index: {high if high >= plane else low} (output volumes "
                                   f"are of size {'x'.join(str(n) for n in output_size)}")
        flat = self.new_zeros(lead + (plane,))
        flat = flat.scatter(-1, indices.reshape(lead + (-1,)), self.reshape(lead + (-1,)))
        return flat.reshape(lead + tuple(output_size))
    unpool.__name__ = unpool.__qualname__ = name
    return unpool


max_unpool2d = _unpool("max_unpool2d", 2)
max_unpool3d = _unpool("max_unpool3d", 3)


def fractional_max_pool2d(self, kernel_size, output_size, random_samples):
    return _F().fractional_max_pool2d(self, kernel_size, output_size=output_size, return_indices=True,
                                      _random_samples=random_samples)


def fractional_max_pool3d(self, kernel_size, output_size, random_samples):
    return _F().fractional_max_pool3d(self, kernel_size, output_size=output_size, return_indices=True,
                                      _random_samples=random_samples)


_PAD_MODES = ("reflect", "replicate", "circular", "constant")  # ATen's padding_mode enum, in order


def _pad_enum(self, pad, mode, value=None):  # noqa: A002 - ATen's argument names
    if not 0 <= mode < len(_PAD_MODES):
        raise RuntimeError(f"Unrecognised padding mode {mode}")
    return globals()["pad"](self, list(pad), _PAD_MODES[mode], value)  # the argument named pad hides the function


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


