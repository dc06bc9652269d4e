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
__all__ += ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
            "float4_e2m1fn_x2"]


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
        self.is_signed = kind in "fic" and name != "float8_e8m0fnu"  # e8m0: an exponent, no sign bit
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
    """complex32 (chalf): two float16 parts. NumPy has no such type: its tensors hold a structured
    NumPy type of two float16 fields (real, imag), torch's own memory layout, so that ``.real``,
    ``.imag`` and ``view_as_real`` are float16 views as in torch, and NumPy refuses any arithmetic on
    it outright. The few ops torch computes on complex32 (add, sub, mul, neg, abs, comparisons)
    compute in complex64 and round both parts to float16 once."""

    __slots__ = ()
    np = None  # set below, once the dtype exists


class _BFloat16(dtype):
    """bfloat16: float32's top 16 bits. NumPy has no such type; the optional ``ml_dtypes`` package
    provides it, loaded on first use so that the dtype object exists (and compares) without it."""

    __slots__ = ()

    @property
    def np(self):
        return bfloat16_np()


class _Float8(dtype):
    """A one-byte float of torch's (``float8_e4m3fn`` and friends), stored as ml_dtypes' type of the
    same name: loaded on first use, like bfloat16. torch computes almost nothing on these types (they
    are storage for scaled matmuls): conversions, copies, views and comparisons; other ops refuse
    them with torch's NotImplementedError."""

    __slots__ = ()

    @property
    def np(self):
        return ml_dtypes_np(self.name)


class _Float4x2(dtype):
    """float4_e2m1fn_x2: two 4-bit floats packed in one byte. torch stores and moves these bytes (views,
    copies, cat) and converts them to nothing; here they are a one-byte structured NumPy type, so that
    NumPy too refuses any arithmetic on them. Needs no extra package."""

    __slots__ = ()
    np = None  # set below, once the dtype exists


_ml_np: dict = {}


def ml_dtypes_np(name: str) -> np.dtype:
    """ml_dtypes' NumPy dtype ``name`` (bfloat16, float8_*); a clear error naming the optional extra
    when the package is missing."""
    found = _ml_np.get(name)
    if found is None:
        try:
            import ml_dtypes
        except ImportError:
            extra = "bfloat16" if name == "bfloat16" else "float8"
            raise ModuleNotFoundError(
                f"{name} tensors need the ml_dtypes package (NumPy has no {name}): "
                f"pip install hookgrad[{extra}]  (or: pip install ml_dtypes)") from None
        found = _ml_np[name] = np.dtype(getattr(ml_dtypes, name))
        _BY_NP[found] = _BY_NAME[name]
        if name in _FLOAT8_NAMES:
            _FLOAT8_NP.add(found)
            _LOWPREC_NP.add(found)
    return found


def bfloat16_np() -> np.dtype:
    """ml_dtypes' bfloat16 NumPy dtype; a clear error naming the optional extra when it is missing."""
    return ml_dtypes_np("bfloat16")


def is_bfloat16_np(np_dtype) -> _py_bool:
    return np_dtype.kind == "V" and np_dtype.name == "bfloat16"


def compute_dtype(np_dtype) -> np.dtype:
    """The NumPy dtype an op computes in for operands of ``np_dtype``: float32 for bfloat16 (as torch
    does: float32 internal math, one rounding of the result back to bfloat16), ``np_dtype`` otherwise."""
    return np.dtype(np.float32) if is_bfloat16_np(np_dtype) else np_dtype


def is_floating_np(np_dtype) -> _py_bool:
    """Whether a NumPy dtype is one of hookgrad's floating types (bfloat16's and float8's NumPy kind
    is "V")."""
    return np_dtype.kind == "f" or np_dtype.kind == "V" and (np_dtype.name in _BY_NAME
                                                             or np_dtype in _LOWPREC_NP and np_dtype != _C32_NP)


def is_complex_np(np_dtype) -> _py_bool:
    """Whether a NumPy dtype is one of hookgrad's complex types (complex32's is a structured type)."""
    return np_dtype.kind == "c" or np_dtype == _C32_NP


def complex32_as_complex64(data: np.ndarray) -> np.ndarray:
    """complex32 values (two float16 fields) as a complex64 array (exactly: a new array)."""
    out = np.empty(data.shape, np.complex64)
    out.real, out.imag = data["real"], data["imag"]
    return out


def to_complex32(values: np.ndarray) -> np.ndarray:
    """Any numbers as a complex32 array: each part rounded to float16 once (from complex64 values,
    as torch's conversion goes through float)."""
    with np.errstate(over="ignore", invalid="ignore"):
        wide = values.astype(np.float32).astype(np.complex64) if values.dtype in _FLOAT8_NP else \
            values.astype(np.complex64)
        out = np.empty(values.shape, _C32_NP)
        out["real"], out["imag"] = wide.real.astype(np.float16), wide.imag.astype(np.float16)
    return out


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
_Complex32.np = _C32_NP = np.dtype([("real", np.float16), ("imag", np.float16)])
# the wide unsigned types: torch stores and converts them but promotes them with no other type
uint16 = dtype("uint16", np.uint16)
uint32 = dtype("uint32", np.uint32)
uint64 = dtype("uint64", np.uint64)
_WIDE_UNSIGNED = (uint16, uint32, uint64)
# storage types of scaled matmuls: no promotion with any other type, almost no arithmetic
float8_e4m3fn = _Float8("float8_e4m3fn", None, kind="f", itemsize=1)
float8_e4m3fnuz = _Float8("float8_e4m3fnuz", None, kind="f", itemsize=1)
float8_e5m2 = _Float8("float8_e5m2", None, kind="f", itemsize=1)
float8_e5m2fnuz = _Float8("float8_e5m2fnuz", None, kind="f", itemsize=1)
float8_e8m0fnu = _Float8("float8_e8m0fnu", None, kind="f", itemsize=1)
float4_e2m1fn_x2 = _Float4x2("float4_e2m1fn_x2", None, kind="f", itemsize=1)
_Float4x2.np = np.dtype([("float4_e2m1fn_x2", np.uint8)])
_FLOAT8 = (float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu)
_UNPROMOTABLE = _FLOAT8 + (float4_e2m1fn_x2,)
_FLOAT8_NAMES = frozenset(d.name for d in _FLOAT8)
# the NumPy dtypes of those loaded so far (ml_dtypes gives float8_e5m2 the kind "f", the others "V":
# they are recognized by identity, not by kind)
_FLOAT8_NP: set = set()
# ... and every storage type torch computes (almost) nothing on: the ops' gates refuse these
_LOWPREC_NP: set = {float4_e2m1fn_x2.np, _C32_NP}

_ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool, complex64, complex128) + _WIDE_UNSIGNED
_BY_NP = {d.np: d for d in _ALL}
_BY_NAME = {d.name: d for d in _ALL}
_BY_NAME["bfloat16"] = bfloat16
_BY_NAME["complex32"] = complex32
_BY_NAME.update((d.name, d) for d in _UNPROMOTABLE)
_BY_NP[float4_e2m1fn_x2.np] = float4_e2m1fn_x2
_BY_NP[_C32_NP] = complex32
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
        if np_dtype.kind == "V" and np_dtype.name in _BY_NAME:  # an ml_dtypes type not yet looked up
            return _BY_NAME[np_dtype.name]
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


def can_cast(from_, to) -> _py_bool:
    """torch's casting rule: a cast may narrow within a category (int64 to uint8, float64 to float16) but
    not leave complex for a real type, floating for an integral one, or reach bool from another type."""
    a, b = to_dtype(from_), to_dtype(to)
    return a._category <= b._category


def promote_types(a, b) -> dtype:
    """The smallest dtype both ``a`` and ``b`` convert to without losing category (torch's table)."""
    a, b = to_dtype(a), to_dtype(b)
    if a is b:
        return a
    if a in _UNPROMOTABLE or b in _UNPROMOTABLE:
        raise RuntimeError("Promotion for Float8 Types is not supported, attempted to promote "
                           f"{scalar_type_name(a)} and {scalar_type_name(b)}")
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
    if isinstance(x, (_py_int, np.integer)):   # a NumPy integer is an integer Scalar to torch too
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
        if d.name in _FLOAT8_LIMITS:
            self._set_float8(d.name)
            return
        if d is float4_e2m1fn_x2:
            self.bits = 8  # the only limit torch gives for packed pairs; the others raise (__getattr__)
            return
        if not (d.is_floating_point or d.is_complex):
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        info = np.finfo(d.np)
        # torch's finfo/iinfo name their dtype as a string; a complex type's limits are its real part's
        self.dtype = np.dtype(info.dtype).name
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

    # what torch's finfo of float4_e2m1fn_x2 raises for each limit: the C++ limit it has no value for
    _FLOAT4_REFUSED = {"eps": "epsilon", "max": "max", "min": "lowest", "tiny": "min", "smallest_normal": "min",
                       "resolution": "digits10", "dtype": "dtype"}

    def __getattr__(self, name):
        if name in self._FLOAT4_REFUSED:
            raise NotImplementedError(f"\"{self._FLOAT4_REFUSED[name]}\" not implemented for 'Float4_e2m1fn_x2'")
        raise AttributeError(name)

    def _set_float8(self, name):
        eps, largest, smallest_normal = _FLOAT8_LIMITS[name]
        self.dtype = name
        self.bits = 8
        self.eps, self.max = eps, largest
        # e8m0 has no sign: its min is its smallest value, as torch reports it
        self.min = smallest_normal if name == "float8_e8m0fnu" else -largest
        self.tiny = self.smallest_normal = smallest_normal
        self.resolution = 1.0  # 10 ** -(decimal digits of a 2- or 3-bit mantissa: 0)

    def __repr__(self):
        if "eps" not in self.__dict__:
            raise TypeError("bad argument type for built-in operation")
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


# name -> (eps, max, smallest normal), as torch's finfo reports them (c10's numeric_limits; note the
# e5m2fnuz eps of 2**-3, where its 2-bit mantissa would give 2**-2: torch's value is kept)
_FLOAT8_LIMITS = {
    "float8_e4m3fn": (2.0 ** -3, 448.0, 2.0 ** -6),
    "float8_e4m3fnuz": (2.0 ** -3, 240.0, 2.0 ** -7),
    "float8_e5m2": (2.0 ** -2, 57344.0, 2.0 ** -14),
    "float8_e5m2fnuz": (2.0 ** -3, 57344.0, 2.0 ** -15),
    "float8_e8m0fnu": (1.0, 2.0 ** 127, 2.0 ** -127),
}


class iinfo:
    """Limits of an integer dtype (``max``, ``min``, ``bits``)."""

    def __init__(self, d):
        d = to_dtype(d)
        if d.is_floating_point or d.is_complex:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle 'torch.iinfo'")
        if d is bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
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
        if isinstance(other, tuple):
            return Size(tuple(self) + other)
        reflected = getattr(type(other), "__radd__", None)
        result = reflected(other, self) if reflected is not None else NotImplemented
        if result is NotImplemented:   # torch's sequence concatenation refuses what is not a tuple
            raise TypeError(f"can only concatenate tuple (not {type(other).__name__}) to torch.Size")
        return result

    def __radd__(self, other):
        if isinstance(other, tuple):
            return Size(other + tuple(self))
        return NotImplemented


def widen(data: np.ndarray) -> np.ndarray:
    """``data`` in its compute dtype (bfloat16 arrays as float32; others unchanged, no copy)."""
    return data.astype(np.float32) if is_bfloat16_np(data.dtype) else data


def python_values(data: np.ndarray):
    """``data.tolist()`` as torch's ``tolist``/``item`` give it: Python numbers; float4 pairs refuse."""
    if data.dtype == _C32_NP:
        return complex32_as_complex64(data).tolist()
    if data.dtype == float4_e2m1fn_x2.np:
        raise RuntimeError("load_scalar: invalid type") if data.ndim else NotImplementedError(
            "\"_local_scalar_dense_cpu\" not implemented for 'Float4_e2m1fn_x2'")
    return data.tolist()


def printed_values(data: np.ndarray) -> np.ndarray:
    """What a print shows of ``data``: bfloat16 and float8 values as float32 (exactly), the packed
    float4 pairs as their bytes (as torch prints them), anything else as is."""
    if data.dtype == float4_e2m1fn_x2.np:
        return data.view(np.uint8).astype(np.float32)
    if data.dtype == _C32_NP:
        return complex32_as_complex64(data)
    if data.dtype.kind == "V" or data.dtype in _FLOAT8_NP:
        return data.astype(np.float32)
    return data


def narrow_to(out: np.ndarray, like: np.dtype) -> np.ndarray:
    """A result computed in float32 (or wider) for bfloat16 or float8 operands (``like``: their NumPy
    dtype), rounded back to that type once; any other result unchanged."""
    if like.kind == "V":
        if like.name == "bfloat16" and out.dtype.kind == "f":
            return out.astype(like)
        if like == _C32_NP and out.dtype != like:  # complex32: complex64 math, parts rounded to float16 once
            return to_complex32(out) if out.dtype.kind == "c" else out.astype(np.float16)
    if like in _FLOAT8_NP and out.dtype != like:  # float8 products: float32 sums, torch's rounding once
        return cast(out, like)
    return out


def refuse_bfloat16_numpy(data: np.ndarray) -> None:
    """torch hands no bfloat16 (or float8, float4) array to NumPy (``.numpy()``, ``np.asarray``): the
    same TypeError here, although hookgrad's storage is an ml_dtypes array (reach it through
    ``.float().numpy()``)."""
    if data.dtype.kind == "V" or data.dtype in _FLOAT8_NP:
        raise TypeError(f"Got unsupported ScalarType {scalar_type_name(data.dtype)}")


def is_float8_np(np_dtype) -> _py_bool:
    return np_dtype in _FLOAT8_NP


def is_lowprec_storage_np(np_dtype) -> _py_bool:
    """float8 and float4 arrays: types torch stores and converts but computes (almost) nothing on."""
    return np_dtype in _LOWPREC_NP


def cast(data: np.ndarray, target: np.dtype) -> np.ndarray:
    """``data`` converted to the NumPy dtype ``target`` (a new array) as torch converts: NumPy's cast,
    except into and out of the one-byte floats, whose rounding and saturation are torch's own
    (see _dtype_float8), and float4_e2m1fn_x2, which torch converts to and from nothing."""
    source = data.dtype
    if target in _LOWPREC_NP or source in _LOWPREC_NP:
        if source == _C32_NP:
            if target == _C32_NP:
                return data.copy()
            if target != float4_e2m1fn_x2.np:
                wide = complex32_as_complex64(data)
                return cast(wide if is_complex_np(target) else wide.real, target)
        if target == _C32_NP and source != float4_e2m1fn_x2.np:
            return to_complex32(data)
        if target == float4_e2m1fn_x2.np or source == float4_e2m1fn_x2.np:
            if source != target:  # torch's kernel names the copy of a float8 source "copy_"
                kernel = "copy_" if is_float8_np(source) or is_float8_np(target) else "copy_kernel"
                raise NotImplementedError(f"\"{kernel}\" not implemented for 'Float4_e2m1fn_x2'")
            return data.copy()
        if is_float8_np(target):
            from ._dtype_float8 import to_float8
            return to_float8(data.real if source.kind == "c" else data, target)
        if is_float8_np(source):
            with np.errstate(over="ignore", invalid="ignore"):  # beyond float16 is inf, NaN to int undefined
                return data.astype(np.float32).astype(target)
    if source.kind == "c" and target.kind != "c":   # the real part, without NumPy's ComplexWarning (callers warn
        return data.real.astype(target)             # as torch does)
    return data.astype(target)


def _refuse_float8_overflow(value, target: np.dtype) -> None:
    """torch's check of a Python number that fills a float8 tensor (``full``, ``fill_``): beyond the
    type's finite range is an error (not the saturation or NaN of a tensor conversion), except inf
    for float8_e5m2, which has it; integers below an unsigned type's range wrap instead."""
    d = _BY_NP[target]
    if isinstance(value, complex):
        raise RuntimeError(f"value cannot be converted to type c10::{scalar_type_name(d)} without overflow")
    eps, largest, smallest = _FLOAT8_LIMITS[d.name]
    lowest = smallest if d is float8_e8m0fnu else -largest
    if isinstance(value, (_py_bool, np.bool_)):
        return
    if isinstance(value, (_py_int, np.integer)):
        too_low = -value > largest if d is float8_e8m0fnu else value < lowest
        bad = too_low or value > largest
    else:
        value = _py_float(value)
        bad = not (d is float8_e5m2 and value in (_py_float("inf"), -_py_float("inf"))) and (
            value < lowest or value > largest)
    if bad:
        raise RuntimeError(f"value cannot be converted to type c10::{scalar_type_name(d)} without overflow")


_C_INTEGER_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
                    "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t"}
_FLOAT32_MAX = _py_float(np.finfo(np.float32).max)


def checked_scalar(value, target: np.dtype):
    """A Python or NumPy number written into a tensor of NumPy dtype ``target`` (fill_, full, an
    index assignment, masked_fill), checked as torch converts a Scalar: an integer type takes only
    numbers in its range (an unsigned one also a negative integer down to minus its maximum, which
    wraps), float32 and complex64 only finite parts within float32's range (inf passes); float16 and
    bfloat16 round to inf. Gives the value NumPy can write (the wrapped integer)."""
    if value.__class__ is _py_int and target.kind in "fc" and -2 ** 63 <= value < 2 ** 64:
        return value   # the common case (ones_like, zeros_like, fill_(0)): a Python int into a float or complex type
    if isinstance(value, (_py_bool, np.bool_)) or target.kind not in "iufc" and target != bfloat16.np:
        return value
    if isinstance(value, _py_int) and not -2 ** 63 <= value < 2 ** 64:   # no Scalar holds it
        raise OverflowError("int too big to convert")
    if target.kind != "c" and isinstance(value, (complex, np.complexfloating)):
        # a complex number fits a real type only without an imaginary part (float16 and bfloat16 take it as double)
        if value.imag != 0:
            name = _C_INTEGER_NAMES.get(target.name) or ("float" if target == np.float32 else "double")
            raise RuntimeError(f"value cannot be converted to type {name} without overflow")
        value = value.real
    if target.kind in "iu":
        info = np.iinfo(target)
        if isinstance(value, (_py_int, np.integer)):
            v = _py_int(value)
            if info.min <= v <= info.max:
                return value
            if target.kind == "u" and -info.max <= v < 0:
                return v % (info.max + 1)
        elif info.min <= _py_float(value) <= info.max:   # NaN and inf fail
            return value
        raise RuntimeError(f"value cannot be converted to type {_C_INTEGER_NAMES[target.name]} without overflow")
    if target in (np.float32, np.complex64) and not isinstance(value, (_py_int, np.integer)):
        parts = (value.real, value.imag) if isinstance(value, (complex, np.complexfloating)) else (value,)
        if any(_py_float("-inf") < _py_float(p) < _py_float("inf") and abs(_py_float(p)) > _FLOAT32_MAX
               for p in parts):
            name = "float" if target == np.float32 else "c10::complex<float>"
            raise RuntimeError(f"value cannot be converted to type {name} without overflow")
    return value


def full_array(shape, value, target: np.dtype) -> np.ndarray:
    """``np.full(shape, value, dtype=target)`` with torch's conversion of ``value`` into a one-byte float
    (a Python number is checked for overflow first where torch's fill kernel checks: more than one
    element)."""
    if target in _LOWPREC_NP:
        if target == float4_e2m1fn_x2.np:
            raise NotImplementedError("\"fill_cpu\" not implemented for 'Float4_e2m1fn_x2'")
        if target in _FLOAT8_NP and not isinstance(value, np.ndarray) and _py_int(np.prod(shape)) > 1:
            _refuse_float8_overflow(value, target)
        return cast(np.full(shape, value), target)
    if not isinstance(value, np.ndarray):
        value = checked_scalar(value, target)
    with np.errstate(over="ignore"):   # float16 and bfloat16 round a larger number to inf
        return np.full(shape, value, dtype=target)


def is_inexact_np(np_dtype) -> _py_bool:
    """Floating or complex (what can carry a gradient), bfloat16, float8 and complex32 included."""
    return np_dtype.kind in "fc" or np_dtype.kind == "V" and (is_floating_np(np_dtype) or np_dtype == _C32_NP)


# torch's C++ names of the scalar types, as its kernels' error messages spell them
_SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                      "complex64": "ComplexFloat", "complex128": "ComplexDouble", "int64": "Long", "int32": "Int",
                      "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}
_SCALAR_TYPE_NAMES.update(uint16="UInt16", uint32="UInt32", uint64="UInt64", complex32="ComplexHalf",
                          float8_e4m3fn="Float8_e4m3fn", float8_e4m3fnuz="Float8_e4m3fnuz",
                          float8_e5m2="Float8_e5m2", float8_e5m2fnuz="Float8_e5m2fnuz",
                          float8_e8m0fnu="Float8_e8m0fnu", float4_e2m1fn_x2="Float4_e2m1fn_x2")


_CPP_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                   "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                   "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
                   "complex128": "c10::complex<double>"}


def cpp_type_name(np_dtype) -> str:
    """The C++ spelling of a dtype that torch's messages print from its type metadata ("float",
    "long int", "c10::Half"); the ScalarType name for the others."""
    np_dtype = np.dtype(np_dtype)
    return _CPP_TYPE_NAMES.get(np_dtype.name) or scalar_type_name(np_dtype)


def scalar_type_name(np_dtype) -> str:
    """torch's name of a scalar type in kernel errors ("Long", "Float", ...) for a NumPy dtype or a
    hookgrad dtype; NumPy's name for any other."""
    if isinstance(np_dtype, dtype):
        name = np_dtype.name
    else:
        np_dtype = np.dtype(np_dtype)
        name = _BY_NP[np_dtype].name if np_dtype.kind == "V" and np_dtype in _BY_NP else np_dtype.name
    return _SCALAR_TYPE_NAMES.get(name, name)
