"""Power-average pooling (``lp_pool1d/2d/3d``), composed of average or max pooling."""
from __future__ import annotations

import math

import hookgrad
from .conv import _tuple

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d"]


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nd):
    F = hookgrad.nn.functional
    max_pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd - 1]
    avg_pool = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[nd - 1]
    if norm_type == math.inf:
        return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    # the window sum (the average times the window size), its sign kept, then the 1/p power
    window = math.prod(_tuple(kernel_size, nd))
    return (out.sign() * out.abs().relu()).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)
