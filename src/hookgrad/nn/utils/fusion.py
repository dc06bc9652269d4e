"""``torch.nn.utils.fusion``: fold an eval-mode batch norm into the convolution or linear layer
before it, so that one layer computes what the two did (``y = bn(conv(x))``)."""
from __future__ import annotations

import copy

import hookgrad

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _parameter(value, requires_grad: bool):
    from ..parameter import Parameter
    return Parameter(value, requires_grad)


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of ``conv`` whose weight and bias include ``bn`` (both must be in eval mode);
    ``transpose`` for a transposed convolution (output channels on the weight's dim 1)."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose: bool = False):
    """The fused ``(weight, bias)`` Parameters: each output channel's weights scaled by
    ``bn_w / sqrt(bn_rv + eps)`` and the bias moved by the running mean and ``bn_b``."""
    weight_dtype = conv_w.dtype
    bias_dtype = conv_b.dtype if conv_b is not None else weight_dtype
    conv_b = hookgrad.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = hookgrad.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = hookgrad.zeros_like(bn_rm) if bn_b is None else bn_b
    inv_std = hookgrad.rsqrt(bn_rv + bn_eps)
    channel_axis = [1, -1] if transpose else [-1, 1]
    shape = channel_axis + [1] * (len(conv_w.shape) - 2)
    fused_w = (conv_w * (bn_w * inv_std).reshape(shape)).to(dtype=weight_dtype)
    fused_b = ((conv_b - bn_rm) * inv_std * bn_w + bn_b).to(dtype=bias_dtype)
    return _parameter(fused_w, conv_w.requires_grad), _parameter(fused_b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` whose weight and bias include ``bn`` (both in eval mode)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(linear)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
                             f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    weight_dtype = linear_w.dtype
    bias_dtype = linear_b.dtype if linear_b is not None else weight_dtype
    linear_b = hookgrad.zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * hookgrad.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * scale.unsqueeze(-1).to(dtype=weight_dtype)
    fused_b = ((linear_b - bn_rm) * scale + bn_b).to(dtype=bias_dtype)
    return _parameter(fused_w, linear_w.requires_grad), _parameter(fused_b, linear_b.requires_grad)
