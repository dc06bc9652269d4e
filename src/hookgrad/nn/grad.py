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


def _conv_grad(dims, wrt: str, input, weight, grad_output: Tensor, stride, padding, dilation, groups):
    """The gradient of conv{dims}d with respect to ``wrt`` ("input" or "weight"), whose size stands in
    its place: a zero probe of that size takes its place in one convolution, and autograd does the rest."""
    size = input if wrt == "input" else weight
    probe = zeros(tuple(size), dtype=grad_output.dtype).requires_grad_(True)
    operands = (probe, weight.detach()) if wrt == "input" else (input.detach(), probe)
    with autograd.grad_mode.enable_grad():
        out = _conv(dims)(*operands, None, stride, padding, dilation, groups)
        if tuple(out.shape) != tuple(grad_output.shape):
            of_size = "of an input" if wrt == "input" else "with a weight"
            raise RuntimeError(f"conv{dims}d_{wrt}: grad_output has shape {tuple(grad_output.shape)}, but the "
                               f"convolution {of_size} of size {tuple(size)} gives {tuple(out.shape)}")
        (grad,) = autograd.grad(out, probe, grad_output)
    return grad


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _conv_grad(1, "input", input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _conv_grad(1, "weight", input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _conv_grad(2, "input", input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _conv_grad(2, "weight", input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _conv_grad(3, "input", input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    return _conv_grad(3, "weight", input, weight_size, grad_output, stride, padding, dilation, groups)
