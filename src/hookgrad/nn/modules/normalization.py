"""LayerNorm and GroupNorm."""
from __future__ import annotations

import numbers

import hookgrad

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"]


class _AffineNorm(Module):
    """A norm layer with an optional learnable scale (``weight``) and shift (``bias``), reset to ones
    and zeros."""

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)


class LayerNorm(_AffineNorm):
    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        _init_over_trailing_dims(self, normalized_shape, eps, elementwise_affine, bias, dtype)
        self.reset_parameters()

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(_AffineNorm):
    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _register_affine(self, self.affine, num_channels, bias, dtype)
        self.reset_parameters()

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


def _register_affine(module, affine, shape, bias, dtype) -> None:
    """The learnable scale (``weight``) and shift (``bias``) of a norm layer, or None for each."""
    module.register_parameter("weight", Parameter(hookgrad.empty(shape, dtype=dtype)) if affine else None)
    module.register_parameter("bias", Parameter(hookgrad.empty(shape, dtype=dtype)) if affine and bias else None)


def _init_over_trailing_dims(module, normalized_shape, eps, elementwise_affine, bias, dtype) -> None:
    """The options of a norm over the trailing ``normalized_shape`` dims (LayerNorm, RMSNorm)."""
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (normalized_shape,)
    module.normalized_shape = tuple(normalized_shape)
    module.eps = eps
    module.elementwise_affine = elementwise_affine
    _register_affine(module, elementwise_affine, module.normalized_shape, bias, dtype)


class RMSNorm(_AffineNorm):
    """Divides by the root mean square over the trailing ``normalized_shape`` dims, then scales."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        _init_over_trailing_dims(self, normalized_shape, eps, elementwise_affine, False, dtype)
        self.reset_parameters()

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class _ResponseNorm(Module):
    """LocalResponseNorm's and CrossMapLRN2d's options: a window of ``size`` channels, and
    x / (k + alpha / size * (sum of squares in the window)) ** beta."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class LocalResponseNorm(_ResponseNorm):
    __constants__ = ["size", "alpha", "beta", "k"]

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)


# ---- CrossMapLRN2d: torch's legacy Function, forward recurrence and backward formula as torch has them ----
def _cross_map_lrn2d_function():
    import numpy as np
    from ...autograd.function import Function

    class CrossMapLRN2d(Function):
        @staticmethod
        def forward(ctx, input, size, alpha=1e-4, beta=0.75, k=1):
            if input.dim() != 4:
                raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
            x = input._ndarray
            channels = x.shape[1]
            square = x * x
            pre_pad = int((size - 1) / 2 + 1)
            scale = np.empty_like(x)
            scale[:, 0] = square[:, :min(pre_pad, channels)].sum(1)
            # torch's running window: the next map added, the one pre_pad back removed only past pre_pad
            for c in range(1, channels):
                scale[:, c] = scale[:, c - 1]
                if c < channels - pre_pad + 1:
                    scale[:, c] += square[:, c + pre_pad - 1]
                if c > pre_pad:
                    scale[:, c] -= square[:, c - pre_pad]
            scale = scale * (alpha / size) + k
            output = hookgrad.tensor(scale ** -beta * x)
            ctx.size, ctx.alpha, ctx.beta, ctx.k, ctx.scale = size, alpha, beta, k, scale
            ctx.save_for_backward(input, output)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            input, output = ctx.saved_tensors
            x, out, g, scale = input._ndarray, output._ndarray, grad_output._ndarray, ctx.scale
            size, channels = ctx.size, x.shape[1]
            ratio_scale = 2 * ctx.alpha * ctx.beta / size
            lead = int(size - (size - 1) / 2)
            if lead + channels > channels + size - 1:  # size 1: torch's narrow of the padded maps fails
                raise RuntimeError(f"start ({lead}) + length ({channels}) exceeds dimension size "
                                   f"({channels + size - 1}).")
            padded = np.zeros((x.shape[0], channels + size - 1) + x.shape[2:], dtype=x.dtype)
            padded[:, lead:lead + channels] = g * out / scale
            # window sums of `size` padded maps starting at each channel
            sums = np.cumsum(np.concatenate([np.zeros_like(padded[:, :1]), padded], 1), 1)
            window = sums[:, size:size + channels] - sums[:, :channels]
            grad_input = scale ** -ctx.beta * g - ratio_scale * x * window
            return hookgrad.tensor(grad_input), None, None, None, None

    return CrossMapLRN2d


_CROSS_MAP = []


class CrossMapLRN2d(_ResponseNorm):
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__(size, alpha, beta, k)

    def forward(self, input):
        if not _CROSS_MAP:
            _CROSS_MAP.append(_cross_map_lrn2d_function())
        return _CROSS_MAP[0].apply(input, self.size, self.alpha, self.beta, self.k)


__all__ += ["CrossMapLRN2d"]
