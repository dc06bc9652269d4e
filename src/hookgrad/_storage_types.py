"""torch's legacy typed storage classes (``FloatStorage``, ``LongStorage``, ... and ``Storage``, which is
``FloatStorage``), ``StorageBase`` and ``Tensor.storage_type``.

As in torch, calling one of these classes makes a ``TypedStorage`` of the class's dtype, and
``isinstance(s, FloatStorage)`` asks whether ``s`` is a TypedStorage of float32 (so ``x.storage()`` of
a float tensor is a ``FloatStorage``).
"""
from __future__ import annotations

import builtins
from collections.abc import Sequence

import numpy as np

from . import _dtype
from ._legacy import TypedStorage, UntypedStorage
from ._tensor import Tensor

__all__ = ["StorageBase", "Storage", "FloatStorage", "DoubleStorage", "HalfStorage", "BFloat16Storage",
           "LongStorage", "IntStorage", "ShortStorage", "CharStorage", "ByteStorage", "BoolStorage",
           "BFloat16Tensor", "ComplexFloatStorage", "ComplexDoubleStorage"]


class _StorageBaseMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, UntypedStorage)


class StorageBase(metaclass=_StorageBaseMeta):
    """torch._C.StorageBase: the class of untyped storages (``isinstance`` answers for ``UntypedStorage``)."""

    def __new__(cls, *args, **kwargs):
        raise TypeError("cannot create 'torch._C.StorageBase' instances")


class _TypedStorageClass(type):
    """Metaclass of the legacy storage classes: calling one builds a TypedStorage of its dtype."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, TypedStorage) and obj.dtype is cls.dtype

    def __call__(cls, *args, wrap_storage=None, **kwargs):
        dt = cls.dtype
        if kwargs:
            raise TypeError(f"{cls!r}.__new__ received an invalid combination of arguments")
        if wrap_storage is not None:
            if args or not isinstance(wrap_storage, UntypedStorage):
                raise TypeError(f"{cls!r}.__new__ received an invalid combination of arguments")
            return TypedStorage(wrap_storage, dt)
        if not args:
            return TypedStorage(UntypedStorage(np.zeros(0, dtype=dt.np)), dt)
        if len(args) != 1:
            raise TypeError(f"{cls!r}.__new__ received an invalid combination of arguments. Expected one of:\n"
                            " * no arguments\n * (int size)\n * (Sequence data)\n * (*, UntypedStorage wrap_storage)")
        arg = args[0]
        if isinstance(arg, builtins.int) and not isinstance(arg, builtins.bool):
            if arg < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {arg}: [{arg}]")
            # torch leaves the memory uninitialized; zeros are one valid content
            return TypedStorage(UntypedStorage(np.zeros(arg, dtype=dt.np)), dt)
        if isinstance(arg, str):
            raise TypeError("new(): invalid data type 'str'")
        if isinstance(arg, (Sequence, np.ndarray)) and not isinstance(arg, Tensor):
            values = np.asarray(arg)
            if values.dtype.kind not in ("biufc" if dt.is_complex else "biuf"):
                raise TypeError(f"new(): invalid data type '{type(arg).__name__}'")
            return TypedStorage(UntypedStorage(values.astype(dt.np).reshape(-1)), dt)
        raise TypeError(f"{cls!r}.__new__ received an invalid combination of arguments. Expected one of:\n"
                        " * no arguments\n * (int size)\n * (Sequence data)\n * (*, UntypedStorage wrap_storage)\n"
                        f"Argument type not recognized: {type(arg)}")

    def __repr__(cls):
        return f"<class '{_dtype.shown_name()}.{cls.__name__}'>"


def _from_buffer(cls, buffer, byte_order="native", count=-1, offset=0):
    """A storage holding a copy of ``buffer``'s bytes read as ``cls.dtype`` in ``byte_order``
    ("native", "little" or "big")."""
    if byte_order not in ("native", "little", "big"):
        raise ValueError(f"Expected byte_order to be one of 'native', 'little', 'big' but got '{byte_order}'")
    np_dtype = np.dtype(cls.dtype.np)
    if byte_order != "native" and np_dtype.itemsize > 1:
        np_dtype = np_dtype.newbyteorder("<" if byte_order == "little" else ">")
    raw = np.frombuffer(buffer, dtype=np.uint8)[offset:]
    usable = len(raw) // np_dtype.itemsize if count < 0 else count
    values = raw[:usable * np_dtype.itemsize].view(np_dtype).astype(cls.dtype.np)
    return TypedStorage(UntypedStorage(values), cls.dtype)


def _storage_class(name: str, dt) -> type:
    return _TypedStorageClass(name, (), {"dtype": dt, "is_cuda": False, "is_sparse": False,
                                         "from_buffer": classmethod(_from_buffer), "__module__": "hookgrad",
                                         "__doc__": f"Legacy constructor of {dt} storages; isinstance checks the "
                                                    "dtype."})


FloatStorage = _storage_class("FloatStorage", _dtype.float32)
DoubleStorage = _storage_class("DoubleStorage", _dtype.float64)
HalfStorage = _storage_class("HalfStorage", _dtype.float16)
BFloat16Storage = _storage_class("BFloat16Storage", _dtype.bfloat16)
LongStorage = _storage_class("LongStorage", _dtype.int64)
IntStorage = _storage_class("IntStorage", _dtype.int32)
ShortStorage = _storage_class("ShortStorage", _dtype.int16)
CharStorage = _storage_class("CharStorage", _dtype.int8)
ByteStorage = _storage_class("ByteStorage", _dtype.uint8)
BoolStorage = _storage_class("BoolStorage", _dtype.bool)
ComplexFloatStorage = _storage_class("ComplexFloatStorage", _dtype.complex64)
ComplexDoubleStorage = _storage_class("ComplexDoubleStorage", _dtype.complex128)
Storage = FloatStorage  # as in torch

_BY_DTYPE = {c.dtype.name: c for c in (FloatStorage, DoubleStorage, HalfStorage, BFloat16Storage, LongStorage,
                                       IntStorage, ShortStorage, CharStorage, ByteStorage, BoolStorage,
                                       ComplexFloatStorage, ComplexDoubleStorage)}


def storage_type(self: Tensor):
    """The legacy storage class of this tensor's dtype (``FloatStorage`` for float32)."""
    found = _BY_DTYPE.get(self.dtype.name)
    if found is None:
        raise RuntimeError(f"no legacy storage class for {self.dtype}")
    return found


def _bfloat16_tensor():
    from ._legacy import _make_type
    return _make_type("BFloat16Tensor", _dtype.bfloat16)


BFloat16Tensor = _bfloat16_tensor()
Tensor.storage_type = storage_type
