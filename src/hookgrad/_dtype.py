"""dtypes, the default dtype, and PyTorch's type-promotion rules on top of NumPy dtypes."""
from __future__ import annotations

import builtins as _builtins
import operator as _operator
import sys as _sys

import numpy as np

_py_float, _py_int, _py_bool = _builtins.float, _builtins.int, _builtins.bool

__all__ = ["dtype", "Size", "float16", "half", "float32", "float", "float64", "double", "int8", "int16",
           "short", "int32", "int", "int64", "long", "uint8", "bool", "complex64", "complex128",
           "cfloat", "cdouble", "complex32", "chalf",
           "get_default_dtype", "set_default_dtype", "promote_types", "result_type", "to_dtype", "finfo", "iinfo",
           "bfloat16"]
__all__ += ["uint16", "uint32", "uint64"]


def shown_name() -> str:
    """The package name that dtypes and sizes print with: ``torch`` while hookgrad stands in for
    torch (under ``hookgrad run``, ``sys.modules["torch"]`` is hookgrad), so that a script prints and
    parses what it would under torch; ``hookgrad`` otherwise."""
    ours = _sys.modules.get("hookgrad")
    return "torch" if ours is not None and _sys.modules.get("torch") is ours else "hookgrad"


class dtype:
    """A tensor element type; wraps a NumPy dtype and prints as ``hookgrad.float32`` (``torch.float32``
    under ``hookgrad run``)."""

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "is_signed", "itemsize", "_category")

    def __init__(self, name: str, np_dtype, kind=None, itemsize=None):
        self.name = name
        if np_dtype is not None:
            self.np = np.dtype(np_dtype)
            kind, itemsize = self.np.kind, self.np.itemsize
        self.is_floating_point = kind == "f"
        self.is_complex = kind == "c"
        self.is_signed = kind in "fic"
        self.itemsize = itemsize
        # bool < integer < floating < complex: the categories of type promotion
        self._category = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}[kind]

    def __repr__(self):
        return f"{shown_name()}.{self.name}"

    def __reduce__(self):
        return (to_dtype, (self.name,))

    def to_real(self):
        return {"complex64": float32, "complex128": float64, "complex32": float16}.get(self.name, self)

    def to_complex(self):
        """The complex type whose parts have this type's precision (float64 -> complex128); complex
        types are their own; integer and bool types give complex64, as torch's ``to_complex`` does."""
        if self.is_complex:
            return self
        return {"float64": complex128, "float16": complex32}.get(self.name, complex64)


class _Complex32(dtype):
    """complex32 (chalf): two float16 parts. NumPy has no such type, so the dtype exists (it prints,
    compares and promotes as torch's) but no tensor can hold it."""

    __slots__ = ()

    @property
    def np(self):
        raise TypeError("hookgrad has no complex32 (chalf) tensors: NumPy has no complex type with float16 "
                        "parts; use complex64 (torch.cfloat) instead")


class _BFloat16(dtype):
    """bfloat16: float32's top 16 bits. NumPy has no such type; the optional ``ml_dtypes`` package
    provides it, loaded on first use so that the dtype object exists (and compares) without it."""

    __slots__ = ()

    @property
    def np(self):
        return bfloat16_np()


_bf16_np = []


def bfloat16_np() -> np.dtype:
    """ml_dtypes' bfloat16 NumPy dtype; a clear error naming the optional extra when it is missing."""
    if not _bf16_np:
        try:
            import ml_dtypes
        except ImportError:
            raise ModuleNotFoundError(
                "bfloat16 tensors need the ml_dtypes package (NumPy has no bfloat16): "
                "pip install hookgrad[bfloat16]  (or: pip install ml_dtypes)") from None
        _bf16_np.append(np.dtype(ml_dtypes.bfloat16))
        _BY_NP[_bf16_np[0]] = bfloat16
    return _bf16_np[0]


def is_bfloat16_np(np_dtype) -> _py_bool:
    return np_dtype.kind == "V" and np_dtype.name == "bfloat16"


def compute_dtype(np_dtype) -> np.dtype:
    """The NumPy dtype an op computes in for operands of ``np_dtype``: float32 for bfloat16 (as torch
    does: float32 internal math, one rounding of the result back to bfloat16), ``np_dtype`` otherwise."""
    return np.dtype(np.float32) if is_bfloat16_np(np_dtype) else np_dtype


def is_floating_np(np_dtype) -> _py_bool:
    """Whether a NumPy dtype is one of hookgrad's floating types (bfloat16's NumPy kind is "V")."""
    return np_dtype.kind == "f" or is_bfloat16_np(np_dtype)


float16 = half = dtype("float16", np.float16)
bfloat16 = _BFloat16("bfloat16", None, kind="f", itemsize=2)
float32 = float = dtype("float32", np.float32)
float64 = double = dtype("float64", np.float64)
int8 = dtype("int8", np.int8)
int16 = short = dtype("int16", np.int16)
int32 = int = dtype("int32", np.int32)
int64 = long = dtype("int64", np.int64)
uint8 = dtype("uint8", np.uint8)
bool = dtype("bool", np.bool_)
complex64 = dtype("complex64", np.complex64)
complex128 = cdouble = dtype("complex128", np.complex128)
cfloat = complex64
complex32 = chalf = _Complex32("complex32", None, kind="c", itemsize=4)
# the wide unsigned types: torch stores and converts them but promotes them with no other type
uint16 = dtype("uint16", np.uint16)
uint32 = dtype("uint32", np.uint32)
uint64 = dtype("uint64", np.uint64)
_WIDE_UNSIGNED = (uint16, uint32, uint64)

_ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool, complex64, complex128) + _WIDE_UNSIGNED
_BY_NP = {d.np: d for d in _ALL}
_BY_NAME = {d.name: d for d in _ALL}
_BY_NAME["bfloat16"] = bfloat16
_BY_NAME["complex32"] = complex32
_BY_NAME.update(half=float16, float=float32, double=float64, short=int16, int=int32, long=int64,
                cfloat=complex64, cdouble=complex128, chalf=complex32)

_default = [float32]


def get_default_dtype() -> dtype:
    return _default[0]


def set_default_dtype(d) -> None:
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default[0] = d


def from_numpy_dtype(np_dtype) -> dtype:
    np_dtype = np.dtype(np_dtype)
    try:
        return _BY_NP[np_dtype]
    except KeyError:
        if is_bfloat16_np(np_dtype):
            return bfloat16
        raise TypeError(f"can't convert np.ndarray of type numpy.{np_dtype.type.__name__}. The only supported types "
                        "are: float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, "
                        "uint32, uint16, uint8, and bool.") from None


def to_dtype(d) -> dtype:
    """Accept a hookgrad dtype, its name, a NumPy dtype, a Python type, or a torch dtype."""
    if isinstance(d, dtype):
        return d
    if isinstance(d, str):
        key = d.rsplit(".", 1)[-1]
        if key in _BY_NAME:
            return _BY_NAME[key]
        raise TypeError(f"unknown dtype {d!r}")
    if d is _py_float:   # torch reads Python's float as float64 (not the default dtype)
        return float64
    if d is _py_int:
        return int64
    if d is _py_bool:
        return bool
    if type(d).__module__ == "torch":  # a torch.dtype passed by code that mixes the two
        return to_dtype(str(d))
    return from_numpy_dtype(d)


def promote_types(a, b) -> dtype:
    """The smallest dtype both ``a`` and ``b`` convert to without losing category (torch's table)."""
    a, b = to_dtype(a), to_dtype(b)
    if a is b:
        return a
    if (a in _WIDE_UNSIGNED or b in _WIDE_UNSIGNED) and a._category == b._category:
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                           f"{scalar_type_name(a.np)} and {scalar_type_name(b.np)}")
    if (a in _WIDE_UNSIGNED and b is bool) or (b in _WIDE_UNSIGNED and a is bool):
        raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                           f"{scalar_type_name(a.np)} and {scalar_type_name(b.np)}")
    if a.is_complex or b.is_complex:
        # a complex type with parts as precise as the finer of the two operands' (float64 with
        # complex64 is complex128)
        return promote_types(a.to_real(), b.to_real()).to_complex()
    if a._category != b._category:
        # across categories the higher one wins outright: float32 with int64 is float32
        return a if a._category > b._category else b
    if (a is uint8 and b is int8) or (a is int8 and b is uint8):
        return int16
    if a is bfloat16 or b is bfloat16:
        # with float16 neither holds the other (range vs precision): float32, as torch; wider floats win
        other = b if a is bfloat16 else a
        return float32 if other is float16 else other
    return from_numpy_dtype(np.promote_types(a.np, b.np))


def scalar_dtype(x) -> dtype:
    """The dtype a bare Python number would get as a tensor."""
    if isinstance(x, _py_bool):
        return bool
    if isinstance(x, _py_int):
        return int64
    if isinstance(x, complex):
        return complex64 if get_default_dtype() is float32 else complex128
    return get_default_dtype()


def result_type(*operands) -> dtype:
    """torch's promotion: dimensioned tensors outrank 0-d tensors, which outrank Python scalars,
    unless a lower-priority operand belongs to a higher category (bool < int < float < complex)."""
    dims, zero_dims, scalars = [], [], []
    for x in operands:
        d = getattr(x, "dtype", None)
        if isinstance(d, dtype):
            (dims if x.ndim else zero_dims).append(d)
        elif isinstance(x, np.ndarray):
            (dims if x.ndim else zero_dims).append(from_numpy_dtype(x.dtype))
        else:
            scalars.append(scalar_dtype(x))
    result = None
    for group in (dims, zero_dims, scalars):
        if not group:
            continue
        best = group[0]
        for d in group[1:]:
            best = promote_types(best, d)
        if result is None:
            result = best
        elif best._category > result._category:
            if best.is_complex and result.is_floating_point:
                # a lower-priority complex operand keeps the floating operand's precision
                result = result.to_complex()
            elif group is scalars:
                # a Python scalar of a higher category lifts to that category's default type
                result = {1: int64, 2: get_default_dtype()}.get(best._category, get_default_dtype().to_complex())
            else:
                result = best
    return result


class finfo:
    """Machine limits of a floating dtype (``eps``, ``max``, ``min``, ``tiny``, ``resolution``)."""

    def __init__(self, d=None):
        d = to_dtype(d) if d is not None else get_default_dtype()
        if d is bfloat16:
            self._set_bfloat16()
            return
        info = np.finfo(d.np)
        self.dtype = d.name  # torch's finfo/iinfo name their dtype as a string
        self.bits = info.bits
        self.eps = _py_float(info.eps)
        self.max = _py_float(info.max)
        self.min = _py_float(info.min)
        self.tiny = self.smallest_normal = _py_float(info.tiny)
        self.resolution = 10.0 ** -info.precision  # a Python float, as torch's (NumPy's is of the dtype)


    def _set_bfloat16(self):
        # bfloat16: 8 exponent bits like float32, 7 stored mantissa bits (needs no ml_dtypes)
        self.dtype = "bfloat16"
        self.bits = 16
        self.eps = 2.0 ** -7
        self.max = (2.0 - 2.0 ** -7) * 2.0 ** 127
        self.min = -self.max
        self.tiny = self.smallest_normal = 2.0 ** -126
        self.resolution = 0.01

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype (``max``, ``min``, ``bits``)."""

    def __init__(self, d):
        d = to_dtype(d)
        info = np.iinfo(d.np)
        self.dtype = d.name
        self.bits = info.bits
        self.max = _py_int(info.max)
        self.min = _py_int(info.min)

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


class Size(tuple):
    """A tensor's shape: a tuple that prints as ``hookgrad.Size([2, 3])`` (``torch.Size([2, 3])`` under
    ``hookgrad run``, as dtypes do)."""

    def __new__(cls, sizes=()):
        try:
            return tuple.__new__(cls, map(_operator.index, sizes))
        except TypeError:
            for i, s in enumerate(sizes):
                if not hasattr(s, "__index__"):
                    raise TypeError(f"torch.Size() takes an iterable of 'int' (item {i} is '{type(s).__name__}')") \
                        from None
            raise

    def __mul__(self, times):
        return Size(tuple(self) * times)

    __rmul__ = __mul__

    def __repr__(self):
        return f"{shown_name()}.Size({list(self)})"

    def numel(self) -> _py_int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return Size(out) if isinstance(item, slice) else out

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))


def widen(data: np.ndarray) -> np.ndarray:
    """``data`` in its compute dtype (bfloat16 arrays as float32; others unchanged, no copy)."""
    return data.astype(np.float32) if is_bfloat16_np(data.dtype) else data


def narrow_to(out: np.ndarray, like: np.dtype) -> np.ndarray:
    """A result computed in float32 (or wider) for bfloat16 operands (``like``: their NumPy dtype),
    rounded back to bfloat16 once; any other result unchanged."""
    if like.kind == "V" and like.name == "bfloat16" and out.dtype.kind == "f":
        return out.astype(like)
    return out


def refuse_bfloat16_numpy(data: np.ndarray) -> None:
    """torch hands no bfloat16 array to NumPy (``.numpy()``, ``np.asarray``): the same TypeError here,
    although hookgrad's storage is an ml_dtypes array (reach it through ``.float().numpy()``)."""
    if is_bfloat16_np(data.dtype):
        raise TypeError("Got unsupported ScalarType BFloat16")


def is_inexact_np(np_dtype) -> _py_bool:
    """Floating or complex (what can carry a gradient), bfloat16 included."""
    return np_dtype.kind in "fc" or is_bfloat16_np(np_dtype)


# torch's C++ names of the scalar types, as its kernels' error messages spell them
_SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                      "complex64": "ComplexFloat", "complex128": "ComplexDouble", "int64": "Long", "int32": "Int",
                      "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
_SCALAR_TYPE_NAMES.update(uint16="UInt16", uint32="UInt32", uint64="UInt64")


def scalar_type_name(np_dtype) -> str:
    """torch's name of a scalar type in kernel errors ("Long", "Float", ...); NumPy's for any other."""
    name = np.dtype(np_dtype).name
    return _SCALAR_TYPE_NAMES.get(name, name)
