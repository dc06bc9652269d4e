"""``torch.types``: the type aliases torch's signatures use (for annotations in user code)."""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import IO, Any, TypeAlias, Union

import builtins

from ._device import device as _device_type
from ._dtype import Size, dtype as _dtype_type
from ._tensor import Tensor
from ._legacy import UntypedStorage, TypedStorage

__all__ = ["Number", "Device", "FileLike", "Storage", "Size", "Tensor", "SymInt", "SymFloat", "SymBool",
           "IntLikeType", "FloatLikeType", "BoolLikeType", "py_sym_types", "PySymType"]


class SymInt(int):
    """A symbolic integer stands for a size a compiler traces; hookgrad's sizes are always concrete
    ints, so this type only serves ``isinstance`` checks and annotations."""


class SymFloat(float):
    """See ``SymInt``."""


class SymBool(int):
    """See ``SymInt``."""


_int, _float, _bool, _complex, _str, _bytes = builtins.int, builtins.float, builtins.bool, builtins.complex, \
    builtins.str, builtins.bytes
_dtype = _dtype_type
_device = _device_type
_size: TypeAlias = Union[Size, list[_int], tuple[_int, ...]]
_TensorOrTensors: TypeAlias = Union[Tensor, Sequence[Tensor]]
_TensorOrOptionalTensors: TypeAlias = Union[Tensor, Sequence[Union[Tensor, None]]]

IntLikeType: TypeAlias = Union[_int, SymInt]
FloatLikeType: TypeAlias = Union[_float, SymFloat]
BoolLikeType: TypeAlias = Union[_bool, SymBool]
py_sym_types = (SymInt, SymFloat, SymBool)
PySymType: TypeAlias = Union[SymInt, SymFloat, SymBool]

Number: TypeAlias = Union[_int, _float, _bool]
_Number = (_int, _float, _bool)
Device: TypeAlias = Union[_device, _str, _int, None]
FileLike: TypeAlias = Union[_str, os.PathLike[_str], IO[_bytes]]
Storage: TypeAlias = Union[UntypedStorage, TypedStorage]
_symsize: TypeAlias = Sequence[IntLikeType]
