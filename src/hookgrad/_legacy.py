"""torch's legacy and introspection surface: the typed tensor classes (``FloatTensor`` and
friends), ``Tensor.type``, ``set_default_tensor_type``, ``autograd.Variable`` and storages.

In torch ``FloatTensor`` is not a subclass of ``Tensor``: it is a class whose metaclass answers
``isinstance(x, FloatTensor)`` with "x is a CPU tensor of dtype float32" and whose call builds a
plain ``Tensor`` of that dtype. ``Variable`` is the same trick for every tensor. Both are
reproduced here with metaclasses.

Storages: a tensor's storage is the NumPy buffer at the root of its array's ``.base`` chain, so a
tensor and all its views (and ``detach()``/``.data`` aliases) report one storage, with the same
``data_ptr()``, and ``storage_offset()`` counts elements from its start.
"""
from __future__ import annotations

import builtins
import sys
import warnings
import weakref

import numpy as np

from . import _dtype
from ._meta import MetaArray
from ._dtype import Size
from ._tensor import _LEGACY_TYPE_NAMES, Tensor, _to_array, wrap

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
           "ByteTensor", "BoolTensor", "set_default_tensor_type", "Variable", "UntypedStorage", "TypedStorage"]


# ---------------------------------------------------------------------------------------------
# Typed tensor classes
# ---------------------------------------------------------------------------------------------
class tensortype(type):
    """Metaclass of the legacy typed tensor classes (torch's ``torch.tensortype``)."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj._ndarray.dtype == cls.dtype.np

    def __call__(cls, *args, device=None, **kwargs):
        return _construct(cls, args, device, kwargs)

    def __repr__(cls):
        return f"<class '{cls.__module__}.{cls.__qualname__}'>"  # torch.FloatTensor under `hookgrad run`


def _type_error_combination(args, kwargs):
    got = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
    return TypeError(f"new() received an invalid combination of arguments - got ({got}), but expected one of: "
                     "(*, device), (Storage storage), (Tensor other), (tuple of ints size, *, device), "
                     "(object data, *, device)")


def _is_int(x) -> bool:
    return isinstance(x, (builtins.int, np.integer)) and not isinstance(x, (builtins.bool, np.bool_))


def _construct(cls, args, device, kwargs) -> Tensor:
    if kwargs:
        raise _type_error_combination(args, kwargs)
    if device is not None and str(device) != "cpu":
        raise RuntimeError(f"legacy constructor expects device type: cpu but device type: {device} was passed")
    np_dtype = cls.dtype.np
    if not args:
        return wrap(np.empty(0, dtype=np_dtype))
    if len(args) == 1:
        (arg,) = args
        if isinstance(arg, Tensor):
            if arg._ndarray.dtype != np_dtype:
                raise TypeError(f"expected {cls.dtype} (got {arg.dtype})")
            return arg.view(arg.shape)  # an alias of ``arg``, as torch's legacy constructor returns
        if isinstance(arg, UntypedStorage):
            return wrap(arg._bytes.view(np_dtype))
        if isinstance(arg, TypedStorage):
            return wrap(arg._elements().view(np_dtype))
        if isinstance(arg, Size) or _is_int(arg):
            return wrap(np.zeros(tuple(arg) if isinstance(arg, Size) else (builtins.int(arg),), dtype=np_dtype))
        if isinstance(arg, str):
            raise TypeError(f"new(): invalid data type '{type(arg).__name__}'")
        if isinstance(arg, (builtins.float, builtins.complex, builtins.bool, np.generic)):
            raise TypeError(f"new(): data must be a sequence (got {type(arg).__name__})")
        try:
            data = np.asarray(_to_array(arg))
        except (TypeError, ValueError) as exc:
            raise TypeError(f"new(): could not convert the data to a tensor: {exc}") from None
        if data.dtype.kind not in "biufc":
            raise TypeError(f"new(): invalid data type '{type(arg).__name__}'")
        if not isinstance(arg, np.ndarray) and np_dtype.kind in "iu" and data.size and data.dtype.kind in "iuf":
            # Python numbers are range-checked (NumPy arrays are cast as they are, as in torch)
            info = np.iinfo(np_dtype)
            if np.trunc(data.min()) < info.min or np.trunc(data.max()) > info.max:
                raise RuntimeError(f"value cannot be converted to type {cls.dtype.name} without overflow")
        return wrap(data.astype(np_dtype))
    for pos, a in enumerate(args):
        if not _is_int(a):
            raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {pos + 1} with error "
                            f"\"type must be tuple of ints,but got {type(a).__name__}\"")
    return wrap(np.zeros(tuple(builtins.int(a) for a in args), dtype=np_dtype))


def _make_type(name: str, dtype) -> tensortype:
    return tensortype(name, (), {"dtype": dtype, "is_cuda": False, "is_sparse": False, "__module__": "hookgrad",
                                 "__doc__": f"Legacy constructor of {dtype} CPU tensors; isinstance checks "
                                            f"the dtype."})


FloatTensor = _make_type("FloatTensor", _dtype.float32)
DoubleTensor = _make_type("DoubleTensor", _dtype.float64)
HalfTensor = _make_type("HalfTensor", _dtype.float16)
LongTensor = _make_type("LongTensor", _dtype.int64)
IntTensor = _make_type("IntTensor", _dtype.int32)
ShortTensor = _make_type("ShortTensor", _dtype.int16)
CharTensor = _make_type("CharTensor", _dtype.int8)
ByteTensor = _make_type("ByteTensor", _dtype.uint8)
BoolTensor = _make_type("BoolTensor", _dtype.bool)

_TYPES = (FloatTensor, DoubleTensor, HalfTensor, LongTensor, IntTensor, ShortTensor, CharTensor, ByteTensor,
          BoolTensor)
# ``x.type()`` strings, by NumPy dtype name; complex ones have no class, as in torch
TYPE_NAMES = _LEGACY_TYPE_NAMES
_DTYPE_BY_TYPE_NAME = {}
for _np_name, _type_name in TYPE_NAMES.items():
    _DTYPE_BY_TYPE_NAME[_type_name] = _dtype.to_dtype(_np_name)
    _DTYPE_BY_TYPE_NAME["hookgrad." + _type_name[len("torch."):]] = _dtype.to_dtype(_np_name)


def type_name(t: Tensor) -> str:
    return TYPE_NAMES.get(t._ndarray.dtype.name, "torch.Tensor")


def _dtype_of_type(spec):
    """The dtype a ``Tensor.type`` argument names: a type string, a typed class, or a dtype."""
    if isinstance(spec, str):
        if spec in _DTYPE_BY_TYPE_NAME:
            return _DTYPE_BY_TYPE_NAME[spec]
        if spec.startswith("torch.cuda."):
            raise RuntimeError("hookgrad runs on the CPU only: CUDA is not available")
        raise ValueError(f"invalid type: {spec!r}")
    if isinstance(spec, tensortype):
        return spec.dtype
    if isinstance(spec, _dtype.dtype):
        return spec
    if type(spec).__module__ == "torch":
        return _dtype.to_dtype(spec)
    raise TypeError(f"type(): argument 'dtype' must be torch.dtype or str, not {type(spec).__name__}")


def tensor_type(self: Tensor, dtype=None, non_blocking=False, **kwargs):
    """``x.type()`` is the legacy type string; ``x.type(T)`` converts to T (a dtype, a typed class or
    its name) and returns ``x`` itself when it already has that type."""
    if dtype is None:
        if kwargs:
            raise TypeError(f"type() got an unexpected keyword argument '{next(iter(kwargs))}'")
        return type_name(self)
    target = _dtype_of_type(dtype)
    if target.np == self._ndarray.dtype:
        return self
    return self.to(target)


_default_type_warned = [False]


def set_default_tensor_type(t) -> None:
    """Deprecated in torch (it warns once): set the default floating dtype from a typed class or its name."""
    if not _default_type_warned[0]:
        _default_type_warned[0] = True
        warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                      "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                      UserWarning, stacklevel=2)
    if isinstance(t, str):
        if t not in _DTYPE_BY_TYPE_NAME:
            raise AttributeError(f"module 'torch' has no attribute '{t.rsplit('.', 1)[-1]}'")
        dtype = _DTYPE_BY_TYPE_NAME[t]
    elif isinstance(t, tensortype):
        dtype = t.dtype
    else:
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _dtype.set_default_dtype(dtype)


# ---------------------------------------------------------------------------------------------
# autograd.Variable
# ---------------------------------------------------------------------------------------------
class _VariableMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor)


class _ExecutionEngine:
    """``Variable._execution_engine``: the engine object distributed training code reaches for to
    queue a callback at the end of the running backward pass."""

    @staticmethod
    def queue_callback(callback) -> None:
        from .autograd import engine
        engine.queue_final_callback(callback)

    @staticmethod
    def is_checkpoint_valid() -> bool:
        from .autograd import engine
        return engine.is_checkpoint_valid()

    @staticmethod
    def run_backward(tensors, grad_tensors, keep_graph, create_graph, inputs=(), allow_unreachable=True,
                     accumulate_grad=True):
        from . import autograd
        from ._C._torch_function import _skip_one_hop_torch_function
        # the engine's entry consults no __torch_function__ (a mode active here stays active in the hooks)
        if accumulate_grad:
            _skip_one_hop_torch_function(autograd.backward, (), (tensors, grad_tensors),
                                         {"retain_graph": keep_graph, "create_graph": create_graph,
                                          "inputs": inputs or None})
            return ()
        return _skip_one_hop_torch_function(autograd.grad, (), (tensors, inputs, grad_tensors),
                                            {"retain_graph": keep_graph, "create_graph": create_graph,
                                             "allow_unused": allow_unreachable})


class Variable(metaclass=_VariableMeta):
    """The pre-0.4 wrapper. ``Variable(t)`` is a new leaf sharing ``t``'s memory (requiring grad if
    asked); every tensor is an instance of ``Variable``."""

    _execution_engine = _ExecutionEngine()

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            return wrap(np.empty(0, dtype=_dtype.get_default_dtype().np))
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out


# ---------------------------------------------------------------------------------------------
# Storages
# ---------------------------------------------------------------------------------------------
def _root_array(arr: np.ndarray) -> np.ndarray:
    """The array at the root of ``arr``'s chain of views (through as_strided's wrapper objects too)."""
    while True:
        base = arr.base
        if isinstance(base, np.ndarray):
            arr = base
            continue
        inner = getattr(base, "base", None)  # np.lib.stride_tricks wraps its source in a DummyArray
        if isinstance(inner, np.ndarray):
            arr = inner
            continue
        return arr


def _byte_view(root: np.ndarray) -> np.ndarray:
    if root.flags.c_contiguous:
        return root.reshape(-1).view(np.uint8)
    if root.flags.f_contiguous:
        return root.T.reshape(-1).view(np.uint8)
    # a root that is not contiguous (a strided buffer from outside): its bytes, read-only copy
    return np.ascontiguousarray(root).reshape(-1).view(np.uint8)


def _address(arr: np.ndarray) -> int:
    return arr.__array_interface__["data"][0]


class _Plain:
    pass


# sys.getsizeof of torch's storage objects is their bytes plus 64 (untyped) or 56 (typed); getsizeof adds
# to __sizeof__ the header this interpreter puts before objects like these
_HEADER = sys.getsizeof(_Plain()) - _Plain().__sizeof__()
_UNTYPED_STORAGE_OBJECT_SIZE = 64 - _HEADER
_TYPED_STORAGE_OBJECT_SIZE = 56 - _HEADER

_storages: "weakref.WeakValueDictionary[int, UntypedStorage]" = weakref.WeakValueDictionary()


class UntypedStorage:
    """The bytes behind one or more tensors. One object per buffer while it is referenced, so
    ``a.untyped_storage() is a[1:].untyped_storage()`` as in torch."""

    def __init__(self, root=0):
        if not isinstance(root, np.ndarray):  # torch.UntypedStorage(nbytes) or (a sequence of byte values)
            root = (np.zeros(root, dtype=np.uint8) if isinstance(root, builtins.int)
                    else np.array(list(root), dtype=np.uint8))
        self._root = root
        self._bytes = _byte_view(root)

    def __sizeof__(self):  # torch's: the object plus its bytes (torchinfo's "Input size" sums these)
        return _UNTYPED_STORAGE_OBJECT_SIZE + self.nbytes()

    @classmethod
    def _of(cls, arr: np.ndarray) -> "UntypedStorage":
        root = _root_array(arr)
        found = _storages.get(id(root))
        if found is None or found._root is not root:
            found = cls(root)
            _storages[id(root)] = found
        return found

    @classmethod
    def from_file(cls, filename, shared: bool = False, nbytes: int = 0) -> "UntypedStorage":
        """The bytes of a file, mapped into memory: changes reach the file when ``shared``, and
        stay private to this process otherwise (copy-on-write), as torch's mapping does."""
        import os
        size = nbytes or os.path.getsize(filename)
        if size == 0:
            return cls(np.empty(0, dtype=np.uint8))
        return cls(np.memmap(filename, dtype=np.uint8, mode="r+" if shared else "c", shape=(size,)))

    device = property(lambda self: _cpu())
    dtype = _dtype.uint8

    def data_ptr(self) -> int:
        return _address(self._root) if self._root.size else 0

    def nbytes(self) -> int:
        return self._bytes.size

    size = nbytes

    def __len__(self) -> int:
        return self._bytes.size

    def element_size(self) -> int:
        return 1

    def __getitem__(self, index):
        value = self._bytes[index]
        return builtins.int(value) if np.ndim(value) == 0 else UntypedStorage(value.copy())

    def __setitem__(self, index, value) -> None:
        self._bytes[index] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self):
        return self._bytes.tolist()

    def is_shared(self) -> bool:
        return False

    def is_pinned(self, device="cuda") -> bool:
        return False

    is_cuda = False
    is_sparse = False

    def type(self, dtype=None, non_blocking=False):
        return "torch.UntypedStorage"

    def cpu(self):
        return self

    def untyped(self):
        return self

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self.tolist())
        return f"{body}\n[torch.storage.UntypedStorage(device=cpu) of size {len(self)}]".lstrip("\n")


class TypedStorage:
    """A storage seen as elements of one dtype (what ``Tensor.storage()`` returns)."""

    is_cuda = False
    is_sparse = False

    def __init__(self, untyped: UntypedStorage, dtype):
        self._untyped_storage = untyped
        self.dtype = dtype

    def __sizeof__(self):
        return _TYPED_STORAGE_OBJECT_SIZE + self.nbytes()

    device = property(lambda self: _cpu())

    def _elements(self) -> np.ndarray:
        usable = len(self._untyped_storage._bytes) // self.dtype.itemsize * self.dtype.itemsize
        return self._untyped_storage._bytes[:usable].view(self.dtype.np)

    def untyped(self) -> UntypedStorage:
        return self._untyped_storage

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    def nbytes(self) -> int:
        return self._untyped_storage.nbytes()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def size(self) -> int:
        return self.nbytes() // self.dtype.itemsize

    __len__ = size

    def __getitem__(self, index):
        value = self._elements()[index]
        return value.item() if np.ndim(value) == 0 else TypedStorage(UntypedStorage(value.copy()), self.dtype)

    def __setitem__(self, index, value) -> None:
        self._elements()[index] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self):
        return self._elements().tolist()

    def is_shared(self) -> bool:
        return False

    def is_pinned(self, device="cuda") -> bool:
        return False

    def type(self, dtype=None, non_blocking=False):
        return TYPE_NAMES.get(self.dtype.name, "torch.Tensor").replace("Tensor", "Storage")

    def cpu(self):
        return self

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self.tolist())
        return f"{body}\n[torch.storage.TypedStorage(dtype={self.dtype}, device=cpu) of size {len(self)}]".lstrip(
            "\n")


def _cpu():
    from ._device import CPU
    return CPU


_typed_storage_warned = [False]


def untyped_storage(self: Tensor) -> UntypedStorage:
    return UntypedStorage._of(self._ndarray)


def storage(self: Tensor) -> TypedStorage:
    if not _typed_storage_warned[0]:
        _typed_storage_warned[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be "
                      "the only storage class. This should only matter to you if you are using storages "
                      "directly.  To access UntypedStorage directly, use tensor.untyped_storage() instead of "
                      "tensor.storage()", UserWarning, stacklevel=2)
    return _typed_storage(self)


def _typed_storage(self: Tensor) -> TypedStorage:
    # torch's internal spelling of storage(), without the deprecation warning
    return TypedStorage(UntypedStorage._of(self._ndarray), self.dtype)


def storage_offset(self: Tensor) -> int:
    data = self._ndarray
    return (_address(data) - _address(_root_array(data))) // data.itemsize


def data_ptr(self: Tensor) -> int:
    if self._ndarray.__class__ is MetaArray:   # no storage: a meta tensor, a wrapper subclass instance
        return 0
    return _address(self._ndarray) if self._ndarray.size else 0


def is_storage(obj) -> bool:
    return isinstance(obj, (UntypedStorage, TypedStorage))


_TYPE_BY_NP = {t.dtype.np: t for t in _TYPES}


def tensor_new(self: Tensor, *args, device=None, **kwargs) -> Tensor:
    """``x.new(...)``: the legacy constructor of ``x``'s type (sizes, data, or a tensor of that type)."""
    cls = _TYPE_BY_NP.get(self._ndarray.dtype)
    if cls is None:  # complex: no legacy class, same rules
        cls = tensortype(type_name(self)[len("torch."):], (), {"dtype": self.dtype})
    return _construct(cls, args, device, kwargs)


# The storage and type methods of Tensor live here, beside the classes they return.
Tensor.new = tensor_new
Tensor.type = tensor_type
Tensor.storage = storage
Tensor.untyped_storage = untyped_storage
Tensor._typed_storage = _typed_storage
Tensor.storage_offset = storage_offset
Tensor.data_ptr = data_ptr


def _attach_dlpack():
    from .utils.dlpack import tensor_dlpack, tensor_dlpack_device
    Tensor.__dlpack__ = tensor_dlpack
    Tensor.__dlpack_device__ = tensor_dlpack_device


_attach_dlpack()
