"""``torch.nn.grad``: the gradients of a convolution with respect to its input and its weight,
as standalone functions (used to write custom convolution Functions).

Each runs the convolution once on a stand-in of the right shape and asks autograd for the
vector-Jacobian product with ``grad_output``: the gradient the convolution's own backward gives.
"""
from __future__ import annotations

from .. import autograd
from .._ops.creation import zeros
from .._tensor import Tensor

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _conv(dims: int):
    from . import functional as F
    return {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dims]


def _input_grad(dims, input_size, weight: Tensor, grad_output: Tensor, stride, padding, dilation, groups):
    probe = zeros(tuple(input_size), dtype=grad_output.dtype).requires_grad_(True)
    with autograd.grad_mode.enable_grad():
        out = _conv(dims)(probe, weight.detach(), None, stride, padding, dilation, groups)
        if tuple(out.shape) != tuple(grad_output.shape):
            raise RuntimeError(f"conv{dims}d_input: grad_output has shape {tuple(grad_output.shape)}, but the "
                               f"convolution of an input of size {tuple(input_size)} gives {tuple(out.shape)}")
        (grad,) = autograd.grad(out, probe, grad_output)
    return grad


def _weight_grad(dims, input: Tensor, weight_size, grad_output: Tensor, stride, padding, dilation, groups):
    probe = zeros(tuple(weight_size), dtype=grad_output.dtype).requires_grad_(True)
    with autograd.grad_mode.enable_grad():
        out = _conv(dims)(input.detach(), probe, None, stride, padding, dilation, groups)
        if tuple(out.shape) != tuple(grad_output.shape):
            raise RuntimeError(f"conv{dims}d_weight: grad_output has shape {tuple(grad_output.shape)}, but the "
                               f"convolution with a weight of size {tuple(weight_size)} gives {tuple(out.shape)}")
        (grad,) = autograd.grad(out, probe, grad_output)
    return grad


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _input_grad(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _weight_grad(3, input, weight_size, grad_output, stride, padding, dilation, groups)
