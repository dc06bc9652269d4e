"""Padding layers: constant (and zero), reflection, replication and circular, for 1, 2 and 3 dims."""
from __future__ import annotations

from .. import functional as F
from .module import Module
from .utils import _ntuple

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]


class _PadNd(Module):
    """``padding`` is (left, right[, top, bottom[, front, back]]): an int pads every side alike."""

    __constants__ = ["padding"]
    _dims = 1
    _mode = "constant"

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _ntuple(2 * self._dims)(padding)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    __constants__ = ["padding", "value"]

    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    _dims = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd, ConstantPad1d):
    """``ConstantPad1d`` with the value 0 (a subclass of it, as in torch)."""


class ZeroPad2d(_ZeroPadNd, ConstantPad2d):
    """``ConstantPad2d`` with the value 0 (a subclass of it, as in torch)."""


class ZeroPad3d(_ZeroPadNd, ConstantPad3d):
    """``ConstantPad3d`` with the value 0 (a subclass of it, as in torch)."""


class _ReflectionPadNd(_PadNd):
    _mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    _dims = 1


class ReflectionPad2d(_ReflectionPadNd):
    _dims = 2


class ReflectionPad3d(_ReflectionPadNd):
    _dims = 3


class _ReplicationPadNd(_PadNd):
    _mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    _dims = 1


class ReplicationPad2d(_ReplicationPadNd):
    _dims = 2


class ReplicationPad3d(_ReplicationPadNd):
    _dims = 3


class _CircularPadNd(_PadNd):
    _mode = "circular"


class CircularPad1d(_CircularPadNd):
    _dims = 1


class CircularPad2d(_CircularPadNd):
    _dims = 2


class CircularPad3d(_CircularPadNd):
    _dims = 3
