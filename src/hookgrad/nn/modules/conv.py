"""Conv1d, Conv2d, ConvTranspose1d and ConvTranspose2d."""
from __future__ import annotations

import math

import hookgrad

from .. import functional as F
from .. import init
from .._functional.conv import padding_pairs
from .linear import _add_weight_and_bias
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"]


def _ntuple(v, n):
    if isinstance(v, (tuple, list)):
        return tuple(v)
    return (v,) * n


class _ConvNd(Module):
    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding", "in_channels",
                     "out_channels", "kernel_size"]

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None) -> None:
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in modes:
            raise ValueError(f"padding_mode must be one of {modes}, but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad order: last dim first, (left, right) per dim
        pairs = padding_pairs(padding, kernel_size, dilation, stride, len(kernel_size))
        self._reversed_padding_repeated_twice = [amount for pair in reversed(pairs) for amount in pair]
        shape = ((in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups))
        _add_weight_and_bias(self, shape + tuple(kernel_size), out_channels, bias, dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class _ConvLayerNd(_ConvNd):
    """Conv1d, Conv2d and Conv3d: the options made ``_dims``-tuples, the convolution ``F.conv{_dims}d``."""

    _dims = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        dims = self._dims
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, dims), _ntuple(stride, dims),
                         padding if isinstance(padding, str) else _ntuple(padding, dims), _ntuple(dilation, dims),
                         False, (0,) * dims, groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        conv = getattr(F, f"conv{self._dims}d")  # looked up per call, so a patched F.conv2d is the one used
        if self.padding_mode != "zeros":
            return conv(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight, bias,
                        self.stride, (0,) * self._dims, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_ConvLayerNd):
    _dims = 1


class Conv2d(_ConvLayerNd):
    _dims = 2


class Conv3d(_ConvLayerNd):
    _dims = 3


class _ConvTransposeNd(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                         output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims, dilation=None):
        if output_size is None:
            return self.output_padding
        has_batch = input.dim() == num_spatial_dims + 2
        output_size = list(output_size)
        if len(output_size) == num_spatial_dims + 2:
            output_size = output_size[2:]
        elif len(output_size) == num_spatial_dims + 1 and not has_batch:
            output_size = output_size[1:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have "
                             f"{num_spatial_dims} or {num_spatial_dims + (2 if has_batch else 1)} elements "
                             f"(got {len(output_size)})")
        spatial = input.shape[-num_spatial_dims:]
        res = []
        for d in range(num_spatial_dims):
            dil = 1 if dilation is None else dilation[d]
            min_size = (spatial[d] - 1) * stride[d] - 2 * padding[d] + dil * (kernel_size[d] - 1) + 1
            max_size = min_size + stride[d] - 1
            if not min_size <= output_size[d] <= max_size:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from "
                                 f"{[min_size]} to {[max_size]} (for an input of {list(spatial)})")
            res.append(output_size[d] - min_size)
        return tuple(res)


class _ConvTransposeLayerNd(_ConvTransposeNd):
    """ConvTranspose1d, 2d and 3d: the options made ``_dims``-tuples, the convolution
    ``F.conv_transpose{_dims}d``."""

    _dims = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        dims = self._dims
        super().__init__(in_channels, out_channels, _ntuple(kernel_size, dims), _ntuple(stride, dims),
                         _ntuple(padding, dims), _ntuple(dilation, dims), True, _ntuple(output_padding, dims),
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size, self._dims,
                                  self.dilation)
        conv_transpose = getattr(F, f"conv_transpose{self._dims}d")
        return conv_transpose(input, self.weight, self.bias, self.stride, self.padding, op, self.groups,
                              self.dilation)


class ConvTranspose1d(_ConvTransposeLayerNd):
    _dims = 1


class ConvTranspose2d(_ConvTransposeLayerNd):
    _dims = 2


class ConvTranspose3d(_ConvTransposeLayerNd):
    _dims = 3


from .lazy import LazyModuleMixin  # noqa: E402 - the lazy variants build on the classes above
from ..parameter import UninitializedParameter  # noqa: E402


class _LazyConvXdMixin(LazyModuleMixin):
    """``in_channels`` comes from the first input; the weight (and bias) are materialized then."""

    def _lazy_setup(self, out_channels: int, bias: bool, dtype) -> None:
        self.weight = UninitializedParameter(dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)
        self._register_lazy_hooks()

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input) -> int:
        spatial = len(self.kernel_size)
        if input.dim() == spatial + 1:
            return input.shape[0]
        if input.dim() == spatial + 2:
            return input.shape[1]
        raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input to "
                           f"{type(self).__name__}, but got input of size: {list(input.shape)}")

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            shape = ((self.in_channels, self.out_channels // self.groups) if self.transposed
                     else (self.out_channels, self.in_channels // self.groups))
            with hookgrad.no_grad():
                self.weight.materialize(shape + tuple(self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
            self.reset_parameters()


class _LazyConvLayerNd(_LazyConvXdMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None) -> None:
        _ConvLayerNd.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        self._lazy_setup(out_channels, bias, dtype)


class _LazyConvTransposeLayerNd(_LazyConvXdMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None) -> None:
        _ConvTransposeLayerNd.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False,
                                       dilation, padding_mode)
        self._lazy_setup(out_channels, bias, dtype)


class LazyConv1d(_LazyConvLayerNd, Conv1d):
    cls_to_become = Conv1d


class LazyConv2d(_LazyConvLayerNd, Conv2d):
    cls_to_become = Conv2d


class LazyConv3d(_LazyConvLayerNd, Conv3d):
    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTransposeLayerNd, ConvTranspose1d):
    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTransposeLayerNd, ConvTranspose2d):
    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTransposeLayerNd, ConvTranspose3d):
    cls_to_become = ConvTranspose3d
