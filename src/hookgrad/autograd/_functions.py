"""``torch.autograd._functions``: two legacy custom Functions torch still ships.

``Type.apply(x, dest_type)`` casts (``x.type(dest_type)``) with a backward that casts the gradient
back; ``Resize.apply(x, sizes)`` reshapes to ``sizes`` (same number of elements) with a backward
that reshapes the gradient back.
"""
from __future__ import annotations

import math
import warnings

from .function import Function

__all__ = ["Type", "Resize"]


class Type(Function):
    @staticmethod
    def forward(ctx, i, dest_type):
        warnings.warn("`torch.autograd._functions.Type` is deprecated as of PyTorch 2.1, please use "
                      "`torch.tensor.to(dtype=dtype)` instead.", FutureWarning, stacklevel=2)
        ctx.input_type = i.type()
        return i.type(dest_type)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.type(ctx.input_type), None


class Resize(Function):
    @staticmethod
    def forward(ctx, tensor, sizes):
        sizes = tuple(sizes)
        count = math.prod(sizes)
        if tensor.numel() != count:
            raise RuntimeError(
                f"requested resize to {'x'.join(map(str, sizes))} ({count} elements in total), but the given "
                f"tensor has a size of {'x'.join(map(str, tensor.size()))} ({tensor.numel()} elements). "
                "autograd's resize can only change the shape of a given tensor, while preserving the number "
                "of elements. ")
        ctx.input_sizes = tensor.size()
        return tensor.contiguous().view(*sizes)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.contiguous().view(ctx.input_sizes), None
