"""Tensor factories and random numbers (torch's CPU generator and samplers, from rng.py, behind torch's API)."""
from __future__ import annotations

import builtins
import math
import numbers
import os

import numpy as np

from .. import _dtype, _memory_format
from .._meta import MetaArray, is_meta_device, meta_array, meta_like, virtual_array
from .._tensor import FACTORY_REFUSES_GRAD, Tensor, wrap
from . import _dtype_rules as _rules
from ._declare import module_all, op


def _resolve_dtype(dtype, default=None):
    if dtype is None:
        return default if default is not None else _dtype.get_default_dtype()
    return _dtype.to_dtype(dtype)


def _made_into(out, dtype, make, name, requires_grad=False, warn_resize=False, writes=True):
    """torch's ``out=`` of a factory: the values are made in out's dtype (``make(dtype)``; another
    ``dtype=`` is an error), then out is resized to them and overwritten in place (``empty`` only
    resizes it)."""
    from .._out import _short, refuse_autograd
    from ..autograd._warn_once import warn_at_user_frame
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if dtype is not None and _dtype.to_dtype(dtype) != out.dtype:
        raise RuntimeError(f"dtype {_short(_dtype.to_dtype(dtype))} does not match dtype of out parameter "
                           f"({_short(out.dtype)})")
    refuse_autograd(f"aten::{name}", (), {}, out)
    result = make(out.dtype)
    if warn_resize and out.numel() not in (0, result.numel()):
        warn_at_user_frame(f"The number of elements in the out tensor of shape {list(out.shape)} is {out.numel()} "
                           f"which does not match the computed number of elements {result.numel()}. Note that this "
                           "may occur as a result of rounding error. The out tensor will be resized to a tensor of "
                           f"shape ({result.numel()},).")
    if writes:
        _into_out(out, result)
    elif tuple(out.shape) != tuple(result.shape):
        out.resize_(result.shape)
    if requires_grad:  # torch marks the out tensor
        out.requires_grad_(True)
    return out


def _finish(data, requires_grad=False, device=None):
    if device is not None:
        if is_meta_device(device):
            data = meta_like(data)
        else:
            from .._device import require_cpu
            require_cpu(device)
            if data.__class__ is MetaArray:   # made like a meta tensor, for the CPU: real memory
                data = np.zeros(data.shape, data.dtype)
    t = wrap(data)
    if requires_grad:
        t._set_requires_grad(True, FACTORY_REFUSES_GRAD)
    return t


def _leaf_dtype(leaf):
    """The dtype one element of ``tensor(data)``'s nest stands for: a Python number its category's
    default, a NumPy scalar or array its own type, a tensor its dtype."""
    if isinstance(leaf, Tensor):
        return leaf.dtype
    if isinstance(leaf, (np.ndarray, np.generic)):
        return _dtype.from_numpy_dtype(leaf.dtype)
    if isinstance(leaf, (builtins.bool, builtins.int, builtins.float, builtins.complex)):
        return _dtype.scalar_dtype(leaf)
    raise TypeError(f"can't convert {type(leaf).__name__} to a tensor")


def _leaves(data):
    """(the set of leaf types, the leaves whose dtype depends on more than their type: tensors and
    arrays) of a nest of lists and tuples, read a sequence at a time (C loops over big lists)."""
    types, typed, pending = set(), [], [data]
    while pending:
        seq = pending.pop()
        for tp in set(map(type, seq)):
            if issubclass(tp, (list, tuple)):
                pending.extend(x for x in seq if type(x) is tp)
            else:
                types.add(tp)
                if issubclass(tp, (Tensor, np.ndarray)):
                    typed.extend(x for x in seq if type(x) is tp)
    return types, typed


_PY_NUMBERS = (builtins.bool, builtins.int, builtins.float, builtins.complex)


def _infer_dtype(data):
    """torch's rule for ``tensor(data)``: the promotion of what every element stands for (bools ->
    bool, ints -> int64, floats -> the default dtype, NumPy scalars and arrays and tensors their own
    type), so that ``[np.int32(1), 2]`` is int64 and ``[np.float64(1.)]`` float64. Other sequences
    (a storage, a range) are read as NumPy reads them."""
    if isinstance(data, (list, tuple)):
        types, typed = _leaves(data)
        if all(tp in _PY_NUMBERS or issubclass(tp, (np.generic, Tensor, np.ndarray)) for tp in types):
            found = [_leaf_dtype(tp()) if tp in _PY_NUMBERS else _dtype.from_numpy_dtype(np.dtype(tp))
                     for tp in types if tp in _PY_NUMBERS or issubclass(tp, np.generic)]
            found += [_leaf_dtype(x) for x in typed]
            if not found:
                return _dtype.get_default_dtype()
            result = found[0]
            for d in found[1:]:
                result = _dtype.promote_types(result, d)
            return result
    elif isinstance(data, _PY_NUMBERS + (np.generic, Tensor, np.ndarray)):
        return _leaf_dtype(data)
    return _array_dtype(data)


def _array_dtype(data):
    """The dtype of any other nest, from NumPy's reading of it: bools, integers (int64), floats (the
    default dtype) or complex numbers (the default complex type)."""
    kind = np.asarray(data).dtype.kind
    if kind == "b":
        return _dtype.bool
    if kind in "iu":
        return _dtype.int64
    if kind == "f":
        return _dtype.get_default_dtype()
    if kind == "c":
        return _dtype.get_default_dtype().to_complex()
    raise TypeError(f"can't convert {type(data).__name__} to a tensor: only numbers, booleans, (nested) sequences "
                    "of them and NumPy arrays are supported")


def _nest_sizes(data) -> int:
    """How many dimensions ``tensor(data)`` has, read along the first elements as torch does: lists,
    tuples and NumPy arrays are sequences, a tensor met on that path is one element."""
    depth, first = 0, data
    while isinstance(first, (list, tuple, np.ndarray)) and not (isinstance(first, np.ndarray) and first.ndim == 0):
        depth += 1
        if len(first) == 0:
            break
        first = first[0]
    return depth


def _tensors_to_arrays(data, depth: int):
    """``data`` with its tensors replaced by arrays: a tensor where the nest expects more dimensions
    is a sequence; one in an element's place must hold one element (torch's rule)."""
    if isinstance(data, Tensor):
        if depth > 0:
            return data._ndarray
        if data._ndarray.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return data._ndarray.reshape(())
    if isinstance(data, (list, tuple)):
        return [_tensors_to_arrays(item, depth - 1) for item in data]
    return data


_SCALARS = (builtins.bool, builtins.int, builtins.float, builtins.complex, np.number, np.bool_)


def _nest_error(data, dtype) -> Exception | None:
    """torch's error for ``tensor(data)`` when ``data`` is not a regular nest of numbers, found in
    torch's order: the shape (read along the first elements), the element types, then each
    sequence's length. None when ``data`` has none of these faults."""
    if isinstance(data, str):
        return TypeError("new(): invalid data type 'str'")
    sizes, first = [], data
    while isinstance(first, (list, tuple, str)):
        if isinstance(first, str):
            return ValueError("too many dimensions 'str'")
        sizes.append(len(first))
        if not first:
            break
        first = first[0]
    leaves, pending = [], [data]
    while pending:
        item = pending.pop()
        if isinstance(item, (list, tuple)):
            pending.extend(reversed(item))
        else:
            leaves.append(item)
    if dtype is None:
        for leaf in leaves:
            if isinstance(leaf, str):
                return TypeError("new(): invalid data type 'str'")
            if not isinstance(leaf, _SCALARS) and not (isinstance(leaf, Tensor) and leaf._ndarray.ndim == 0):
                return RuntimeError(f"Could not infer dtype of {type(leaf).__name__}")
        real = builtins.any(isinstance(leaf, (builtins.float, builtins.complex, np.floating, np.complexfloating))
                            for leaf in leaves)
    else:
        real = _dtype.to_dtype(dtype).is_floating_point or _dtype.to_dtype(dtype).is_complex

    def check(item, dim):
        if dim == len(sizes):
            if isinstance(item, (list, tuple)):
                kind = type(item).__name__
                return TypeError(f"must be real number, not {kind}" if real
                                 else f"'{kind}' object cannot be interpreted as an integer")
            return None
        if not isinstance(item, (list, tuple)):
            return TypeError("not a sequence")
        if len(item) != sizes[dim]:
            return ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(item)})")
        for part in item:
            error = check(part, dim + 1)
            if error is not None:
                return error
        return None
    return check(data, 0)


_ELEMENT_REFUSALS = ("Overflow when unpacking long long", "must be real number, not complex",
                     "'complex' object cannot be interpreted as an integer")


def _checked_array(values, dt) -> np.ndarray:
    """Python numbers -> an array of ``dt``, refusing what torch's element conversion refuses: an
    integer type gets no value beyond its range (negative values down to ``-max`` wrap into an
    unsigned type, as torch lets them), no nan or inf and no complex number; a real type gets no
    complex number. Floating types take out-of-range values as inf."""
    if dt is _dtype.complex32:
        return _dtype.to_complex32(np.array(values, dtype=np.complex128))
    if dt.is_complex or (dt is _dtype.bool):
        return np.array(values, dtype=dt.np, copy=True)
    if dt.is_floating_point:
        try:
            with np.errstate(over="ignore"):
                if _dtype.is_lowprec_storage_np(dt.np):
                    if dt is _dtype.float4_e2m1fn_x2:  # packed pairs: no number converts to one
                        raise RuntimeError("store_scalar: invalid type")
                    return _dtype.cast(np.array(values, dtype=np.float64), dt.np)
                return np.array(values, dtype=dt.np, copy=True)
        except TypeError:
            if np.array(values).dtype.kind == "c":
                raise TypeError("must be real number, not complex") from None
            raise
    natural = np.array(values)
    if natural.dtype.kind == "c":
        raise TypeError("'complex' object cannot be interpreted as an integer")
    limits = np.iinfo(dt.np)
    lowest = -limits.max if limits.min == 0 else limits.min
    if natural.dtype.kind == "O":   # Python ints beyond 64 bits
        flat = natural.ravel().tolist()
        if dt is _dtype.int64 or not builtins.all(lowest <= int(v) <= limits.max for v in flat):
            raise ValueError("Overflow when unpacking long long")
    elif natural.dtype.kind == "u" and dt is _dtype.int64:
        raise ValueError("Overflow when unpacking long long")
    elif natural.size and natural.dtype.kind in "iuf":
        bad = (natural < lowest) | (natural > limits.max)
        if natural.dtype.kind == "f":
            bad |= ~np.isfinite(natural) | ((natural < 0) & (limits.min == 0))
        if bad.any():
            raise RuntimeError(f"value cannot be converted to type {dt.name} without overflow")
    with np.errstate(invalid="ignore", over="ignore"):
        if natural.dtype.kind in "iub":
            return natural.astype(np.int64 if natural.dtype.kind != "u" else np.uint64).astype(dt.np)
        if natural.dtype.kind == "O":
            return np.array([int(v) % (1 << (8 * dt.itemsize)) if v < 0 and limits.min == 0 else int(v)
                             for v in natural.ravel().tolist()], dtype=dt.np).reshape(natural.shape)
        return natural.astype(dt.np)


def _warn_copy_construct(spelling: str) -> None:
    """torch's advice when a tensor is built from a tensor (at the line that called the factory)."""
    import warnings
    warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                  f"sourceTensor.detach().clone().requires_grad_(True), rather than {spelling}.", UserWarning,
                  stacklevel=3)


@op(method=False)
def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    if isinstance(data, Tensor):
        _warn_copy_construct("torch.tensor(sourceTensor)")
    return _tensor(data, dtype, device, requires_grad, pin_memory)


def _tensor(data, dtype, device, requires_grad, pin_memory) -> Tensor:
    if isinstance(data, Tensor):
        arr = data._ndarray
        dt = _dtype.to_dtype(dtype) if dtype is not None else data.dtype
    else:
        if isinstance(data, np.ndarray):
            _check_numpy_source(data)
        try:
            dt = _dtype.to_dtype(dtype) if dtype is not None else _infer_dtype(data)
        except (ValueError, TypeError) as e:
            raise _nest_error(data, dtype) or e from None
        arr = data
        if isinstance(data, (list, tuple)) and builtins.any(issubclass(tp, Tensor) for tp in _leaves(data)[0]):
            arr = _tensors_to_arrays(data, _nest_sizes(data))
    try:
        if isinstance(data, Tensor) or isinstance(data, np.ndarray):
            # a conversion of stored values: wraps, as torch's (out of range: inf or wrapped, silently)
            with np.errstate(over="ignore", invalid="ignore"):
                out = _dtype.cast(np.asarray(arr), dt.np) if dt.np.kind == "V" or _dtype.is_float8_np(dt.np) \
                    else np.array(arr, dtype=dt.np, copy=True)
        else:
            out = _checked_array(arr, dt)
    except (ValueError, TypeError) as e:
        nest_error = _nest_error(data, dtype)
        if nest_error is not None:
            raise nest_error from None
        if str(e) in _ELEMENT_REFUSALS:
            raise
        raise ValueError(f"could not build a tensor from {type(data).__name__}: {e}") from None
    return _finish(out, requires_grad, device)


@op(method=False, aliases=("asarray",))
def as_tensor(data, dtype=None, device=None) -> Tensor:
    if isinstance(data, Tensor):
        if device is not None:
            data = data.to(device)
        return data if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray):
        t = from_numpy(data)
        return t if dtype is None else t.to(dtype)
    return tensor(data, dtype=dtype, device=device)


asarray = as_tensor


def _check_numpy_source(array: np.ndarray) -> None:
    """torch's refusals of a NumPy array as a tensor's source: a type it has no tensor for, or a
    negative stride (even where it would copy), a byte order other than the machine's."""
    if not array.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                         "between byte orders is currently not supported.")
    _dtype.from_numpy_dtype(array.dtype)
    if any(s < 0 for s in array.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making a "
                         "copy of your array  with array.copy().) ")


@op(method=False)
def from_numpy(array: np.ndarray) -> Tensor:
    if not isinstance(array, np.ndarray):
        from .._argcheck import type_name
        raise TypeError(f"expected np.ndarray (got {type_name(array)})")
    _check_numpy_source(array)
    if not array.flags.writeable:
        from ..autograd._warn_once import warn_once_at_user_frame
        warn_once_at_user_frame("numpy_not_writable", _NOT_WRITABLE)
    return wrap(array)


_NOT_WRITABLE = ("The given NumPy array is not writable, and PyTorch does not support non-writable tensors. This means "
                 "writing to this tensor will result in undefined behavior. You may want to copy the array to protect "
                 "its data or make it writable before converting it to a tensor. This type of warning will be "
                 "suppressed for the rest of this program.")


def _size(size, size_keyword=None, name=None):
    """A shape from ``*size`` positional ints or one sequence, or from the ``size=`` keyword; ``name``
    (the factory's) words a bad entry as torch's argument parser does."""
    if size_keyword is not None:
        if size:
            raise TypeError("got multiple values for argument 'size'")
        size = (size_keyword,)
    alone = len(size) == 1 and not isinstance(size[0], (tuple, list))   # one number, not a sequence
    if len(size) == 1 and not alone:
        size = tuple(size[0])
    out = []
    for i, s in enumerate(size):
        if isinstance(s, Tensor) and s._ndarray.dtype.kind in "iu":   # an integer tensor is an index
            s = s.item()
        if not isinstance(s, (int, np.integer)):
            kind = type(s).__name__
            if name is None:
                raise TypeError(f"expected a sequence of integers as size, got {kind}")
            if alone:
                raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, not {kind}")
            raise TypeError(f"{name}(): argument 'size' failed to unpack the object at pos {i + 1} with error "
                            f"\"type must be tuple of ints,but got {kind}\"")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


@op(method=False)
def zeros(*shape, size=None, dtype=None, device=None, requires_grad=False, out=None, layout=None) -> Tensor:
    if out is not None:
        return _made_into(out, dtype, lambda dt: zeros(*shape, size=size, dtype=dt, device=device),
                          "zeros", requires_grad)
    try:
        shape = _size(shape, size, "zeros")
    except RuntimeError:
        raise RuntimeError("zeros: Dimension size must be non-negative.") from None
    if device is not None and is_meta_device(device):
        return _finish(meta_array(shape, _resolve_dtype(dtype).np), requires_grad)
    return _finish(np.zeros(shape, dtype=_resolve_dtype(dtype).np), requires_grad, device)


@op(method=False)
def ones(*shape, size=None, dtype=None, device=None, requires_grad=False, out=None, layout=None) -> Tensor:
    if out is not None:
        return _made_into(out, dtype, lambda dt: ones(*shape, size=size, dtype=dt, device=device),
                          "ones", requires_grad)
    if device is not None and is_meta_device(device):
        return _finish(meta_array(_size(shape, size), _resolve_dtype(dtype).np), requires_grad)
    return _finish(_dtype.full_array(_size(shape, size, "ones"), 1, _resolve_dtype(dtype).np), requires_grad, device)


@op(method=False)
def empty(*shape, size=None, dtype=None, device=None, requires_grad=False, memory_format=None, out=None, layout=None) -> Tensor:
    if out is not None:
        return _made_into(out, dtype, lambda dt: empty(*shape, size=size, dtype=dt, device=device),
                          "empty", requires_grad, writes=False)
    if device is not None and is_meta_device(device):
        return _finish(meta_array(_size(shape, size), _resolve_dtype(dtype).np), requires_grad)
    return _finish(_memory_format.empty(_size(shape, size, "empty"), _resolve_dtype(dtype).np, memory_format),
                   requires_grad, device)


def _fill_number(fn_name: str, value):
    """``value`` as the Scalar torch's parser takes for ``fill_value``: a number (NumPy's included),
    or a 0-d tensor that does not require grad, read as its Python number; anything else (a 0-d
    NumPy array, a tensor with dimensions, None) is its TypeError."""
    if isinstance(value, Tensor):
        if value._ndarray.ndim == 0 and not value._requires_grad and value._ndarray.__class__ is not MetaArray:
            return value.item()
    elif isinstance(value, (numbers.Number, np.bool_)):
        return value
    from .._argcheck import type_name
    raise TypeError(f"{fn_name}(): argument 'fill_value' (position 2) must be Number, not {type_name(value)}")


@op(method=False)
def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None) -> Tensor:
    fill_value = _fill_number("full", fill_value)
    if out is not None:
        return _made_into(out, dtype, lambda dt: full(size, fill_value, dtype=dt, device=device), "full", requires_grad)
    if dtype is None:
        dtype = _dtype.scalar_dtype(fill_value)
    if device is not None and is_meta_device(device):
        return _finish(meta_array(_size((size,)), _resolve_dtype(dtype).np), requires_grad)
    return _finish(_dtype.full_array(_size((size,)), fill_value, _resolve_dtype(dtype).np), requires_grad, device)


def _like_dtype(t, dtype):
    return _resolve_dtype(dtype, t.dtype)


def _like_source(t, device):
    """``t``'s array, or a stand-in of its shape for the device a ``*_like`` factory is asked for
    (meta from a CPU tensor, the CPU from a meta one): the new array is made on that device."""
    data = t._ndarray
    if device is None:
        return data
    if is_meta_device(device):
        return data if data.__class__ is MetaArray else meta_like(data)
    return virtual_array(data.shape, data.dtype) if data.__class__ is MetaArray else data


def _meta_like_result(t, device, dtype, requires_grad):
    """The meta tensor a random ``*_like`` factory makes for meta ``t`` or ``device="meta"`` (nothing
    is drawn), or None when the result is a CPU tensor."""
    if is_meta_device(device) or (device is None and t._ndarray.__class__ is MetaArray):
        return _finish(meta_array(t._ndarray.shape, _like_dtype(t, dtype).np), requires_grad)
    return None


@op(method=False)
def zeros_like(t, *, dtype=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    # memory_format None is torch's preserve_format: the new tensor takes t's layout
    np_dtype = _like_dtype(t, dtype).np
    # all-zero bytes, as torch's zeros: for float8_e8m0fnu that is 2**-127 (the type has no zero)
    return _finish(_memory_format.like(_like_source(t, device), np_dtype, memory_format, np.zeros((), dtype=np_dtype)),
                   requires_grad, device)


@op(method=False)
def ones_like(t, *, dtype=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    # t's own array without a device given: the implicit gradient of every backward comes this way
    return _finish(_filled_like(t._ndarray if device is None else _like_source(t, device), _like_dtype(t, dtype).np,
                                memory_format, 1), requires_grad, device)


@op(method=False)
def empty_like(t, *, dtype=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    return _finish(_memory_format.like(_like_source(t, device), _like_dtype(t, dtype).np, memory_format), requires_grad,
                   device)


@op(method=False)
def full_like(t, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    fill_value = _fill_number("full_like", fill_value)
    return _finish(_filled_like(_like_source(t, device), _like_dtype(t, dtype).np, memory_format, fill_value),
                   requires_grad, device)


def _filled_like(source, np_dtype, memory_format, value):
    """An array shaped as the array ``source`` in ``memory_format``, every element ``value`` (a one-byte
    float takes torch's conversion and overflow check)."""
    out = _memory_format.like(source, np_dtype, memory_format)
    out[...] = _dtype.full_array(out.shape, value, np_dtype) if np_dtype in _rules.LOWPREC else \
        _dtype.checked_scalar(value, np_dtype)
    return out


def _sampled_like(t, memory_format, sample):
    """``sample(shape)`` (a new tensor) for a tensor shaped as ``t`` in ``memory_format`` (None:
    t's layout): the values are drawn in memory order, as torch fills a tensor's storage."""
    order = _memory_format.memory_order(t._ndarray, memory_format)
    if order is None:
        return sample(t._ndarray.shape)
    block = sample(tuple(t._ndarray.shape[d] for d in order))
    result = wrap(_memory_format.in_memory_order(block._ndarray, order))
    if block._requires_grad:
        result._set_requires_grad(True, FACTORY_REFUSES_GRAD)
    return result


@op(method=False)
def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None) -> Tensor:
    if out is not None:
        return _made_into(out, dtype, lambda dt: arange(start, end, step, dtype=dt, device=device),
                          "arange", requires_grad,
                          warn_resize=True)
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(vals[0]) and math.isfinite(vals[1])):
        shown = [f"{v:g}" if isinstance(v, builtins.float) else str(v) for v in vals[:2]]
        raise RuntimeError(f"unsupported range: {shown[0]} -> {shown[1]}")
    if (vals[2] > 0 and vals[1] < vals[0]) or (vals[2] < 0 and vals[1] > vals[0]):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        dtype = _dtype.int64 if builtins.all(isinstance(v, (int, np.integer)) for v in vals) else _dtype.get_default_dtype()
    dt = _dtype.to_dtype(dtype)
    if dt.is_complex or dt.np == np.bool_:
        raise NotImplementedError(f'"arange_cpu" not implemented for \'{_dtype.scalar_type_name(dt.np)}\'')
    if dt.np.kind in "iub":
        # torch steps an integer range by the numbers truncated to integers; int64 also counts its
        # length from them, the narrower types from the numbers themselves
        first, last, stride = (int(v) for v in vals)
        if dt.np == np.int64:
            if stride == 0:
                raise ValueError("step must be nonzero")
            n = builtins.max(-((first - last) // stride), 0)
        else:
            n = builtins.max(int(math.ceil((vals[1] - vals[0]) / vals[2])), 0)
        return _finish((first + np.arange(n, dtype=np.int64) * stride).astype(dt.np), requires_grad, device)
    n = builtins.max(int(math.ceil((vals[1] - vals[0]) / vals[2])), 0)
    if dt.np == np.float32 or dt.np == np.float16 or _dtype.is_bfloat16_np(dt.np):
        data = _arange_in_vectors(vals[0], vals[2], n, dt.np)
    else:
        data = (vals[0] + np.arange(n, dtype=np.float64) * vals[2]).astype(dt.np)
    return _finish(data, requires_grad, device)


def _arange_in_vectors(start, step, n, np_dtype):
    """A float32/float16/bfloat16 range with torch's CPU kernel's roundings: pairs of vectors (8
    float32 or 16 half elements) start from ``start + step * i`` rounded to the dtype and add
    ``k * step`` to that, in the wider type (float64, float32); the elements after the last pair are
    ``start + step * i``. (A range longer than 32768 elements that torch splits between threads
    starts its vectors elsewhere: its last bits may differ.)"""
    wide, width = (np.float64, 8) if np_dtype == np.float32 else (np.float32, 16)
    idx = np.arange(n)
    first, stride = wide(start), wide(step)
    lane = idx % width
    base = (first + stride * (idx - lane).astype(wide)).astype(np_dtype)
    data = (base.astype(wide) + lane.astype(wide) * stride).astype(np_dtype)
    paired = (n // (2 * width)) * 2 * width
    data[paired:] = (first + stride * idx[paired:].astype(wide)).astype(np_dtype)
    return data


@op("range", method=False)
def range_(start, end, step=1, *, dtype=None, device=None, requires_grad=False, out=None):
    from ..autograd._warn_once import warn_at_user_frame
    warn_at_user_frame("torch.range is deprecated and will be removed in a future release because its behavior is "
                       "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                       "[start, end).")

    def make(dt):
        dt = _dtype.to_dtype(dt)
        if dt.np.kind not in "iu":
            return arange(start, end + step / 2 if step > 0 else end - abs(step) / 2, step, dtype=dt, device=device)
        # integers: torch counts (end - start) // step + 1 on the values truncated toward zero
        vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
        first, last, stride = (int(v) for v in vals)
        if vals[2] == 0 or stride == 0:
            raise RuntimeError("step must be nonzero")
        if (vals[2] > 0 and vals[1] < vals[0]) or (vals[2] < 0 and vals[1] > vals[0]):
            raise RuntimeError("upper bound and lower bound inconsistent with step sign")
        span = last - first
        n = builtins.max(abs(span) // abs(stride) * (1 if (span >= 0) == (stride > 0) else -1) + 1, 0)
        return _finish((first + np.arange(n, dtype=np.int64) * stride).astype(dt.np), False, device)
    if out is not None:
        return _made_into(out, dtype, make, "range", requires_grad, warn_resize=True)
    return _finish(make(dtype or _dtype.get_default_dtype())._ndarray, requires_grad)


@op(method=False)
def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None) -> Tensor:
    if out is not None:
        return _made_into(out, dtype, lambda dt: linspace(start, end, steps, dtype=dt, device=device),
                          "linspace", requires_grad)
    ends = [v.item() if isinstance(v, Tensor) else v for v in (start, end)]
    if dtype is None and builtins.any(isinstance(v, complex) for v in ends):
        dt = _dtype.get_default_dtype().to_complex()  # complex ends give a complex range, as torch
    else:
        dt = _resolve_dtype(dtype)
    if int(steps) < 0:
        raise RuntimeError("number of steps must be non-negative")
    if dt.is_complex:
        return _finish(np.linspace(complex(ends[0]), complex(ends[1]), int(steps)).astype(dt.np), requires_grad,
                       device)
    return _finish(np.linspace(ends[0], ends[1], int(steps)).astype(dt.np), requires_grad, device)


@op(method=False)
def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False, out=None) -> Tensor:
    if out is not None:
        return _made_into(out, dtype, lambda dt: logspace(start, end, steps, base, dtype=dt, device=device),
                          "logspace", requires_grad)
    dt = _resolve_dtype(dtype)
    return _finish(np.logspace(start, end, int(steps), base=base).astype(dt.np), requires_grad, device)


@op(method=False)
def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None) -> Tensor:
    if out is not None:
        return _made_into(out, dtype, lambda dt: eye(n, m, dtype=dt, device=device), "eye", requires_grad)
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is not None and m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    return _finish(np.eye(n, m if m is not None else n, dtype=_resolve_dtype(dtype).np), requires_grad, device)


@op(method=False)
def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    return wrap(np.stack(np.tril_indices(row, offset, col)).astype(np.int64))


@op(method=False)
def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    return wrap(np.stack(np.triu_indices(row, offset, col)).astype(np.int64))


@op(method=False)
def meshgrid(*tensors, indexing="ij"):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = [t.numel() for t in tensors]
    outs = []
    for i, t in enumerate(tensors):
        view_shape = [1] * len(tensors)
        view_shape[i] = shape[i]
        outs.append(t.reshape(view_shape).expand(shape))
    if indexing == "xy" and len(tensors) >= 2:
        outs = [o.transpose(0, 1) for o in outs]
    return tuple(outs)


@op()
def diag(x, diagonal=0):
    if x.ndim == 1:
        n = x.shape[0] + builtins.abs(diagonal)
        out = zeros(n, n, dtype=x.dtype)
        idx = np.arange(x.shape[0])
        rows, cols = (idx, idx + diagonal) if diagonal >= 0 else (idx - diagonal, idx)
        from .indexing import _index_put
        return _index_put(out, (rows, cols), x)
    return x.diagonal(diagonal).clone()


@op()
def diag_embed(x, offset=0, dim1=-2, dim2=-1):
    n = x.shape[-1] + builtins.abs(offset)
    out = zeros(*x.shape[:-1], n, n, dtype=x.dtype)
    idx = np.arange(x.shape[-1])
    from .indexing import _index_put
    from .._tensor import _wrap_dim
    nd = x.ndim + 1
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    out = _index_put(out, (Ellipsis, idx, idx + offset) if offset >= 0 else (Ellipsis, idx - offset, idx), x)
    # built with the diagonal in the last two dims; torch puts them at dim1 and dim2
    return out if (d1, d2) == (nd - 2, nd - 1) else out.movedim((nd - 2, nd - 1), (d1, d2))


# ---- random numbers: torch's CPU streams (see rng.py) -----------------------------------------
from . import rng as _rng_streams
from .rng import Generator

default_generator = Generator()
# torch seeds its default CPU generator from the system's entropy when it starts (each run draws other
# numbers until manual_seed); a Generator() made later starts from the fixed DEFAULT_SEED
default_generator.manual_seed(int.from_bytes(os.urandom(8), "little"))


def _generator(generator) -> Generator:
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"expected a torch.Generator, but got {type(generator).__name__}")
    return generator


@op(method=False)
def manual_seed(seed) -> Generator:
    return default_generator.manual_seed(int(seed))  # torch.manual_seed takes int(seed) first


@op(method=False)
def seed() -> int:
    return default_generator.seed()


@op(method=False)
def initial_seed() -> int:
    return default_generator.initial_seed()


@op(method=False)
def get_rng_state():
    return default_generator.get_state()


@op(method=False)
def set_rng_state(new_state):
    default_generator.set_state(new_state)


def _sampled(shape, dtype, fill, requires_grad, device, out):
    """A new tensor of ``shape``/``dtype`` filled by ``fill(array) -> values`` (torch: empty + in-place fill)."""
    if device is not None and is_meta_device(device) and out is None:   # nothing drawn, as torch
        return _finish(meta_array(shape, dtype.np), requires_grad)
    target = np.empty(shape, dtype=dtype.np)
    data = fill(target) if target.size else target
    data = np.ascontiguousarray(data, dtype=dtype.np).reshape(shape)
    if out is not None:
        return _into_out(out, wrap(data))
    return _finish(data, requires_grad, device)


def _into_out(out, result):
    from ..autograd.grad_mode import no_grad
    with no_grad():
        if tuple(out.shape) != tuple(result.shape):
            out.resize_(result.shape)
        out.copy_(result)
    return out


def _floating(dtype, kernel):
    dt = _resolve_dtype(dtype)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_dtype.scalar_type_name(dt.np)}'")
    return dt


@op(method=False)
def rand(*shape, size=None, generator=None, dtype=None, device=None, requires_grad=False, out=None,
         layout=None, pin_memory=False) -> Tensor:
    if out is not None:
        return _made_into(out, dtype, lambda dt: rand(*shape, size=size, generator=generator, dtype=dt,
                                                      device=device), "rand", requires_grad)
    if dtype is not None and not _resolve_dtype(dtype).is_complex:
        _rules.refuse_lowprec(_resolve_dtype(dtype).np, "check_uniform_bounds")
    if dtype is not None and _resolve_dtype(dtype).is_complex:  # torch fills view_as_real: both parts uniform
        parts = rand(*_size(shape, size), 2, generator=generator, dtype=_resolve_dtype(dtype).to_real())
        return _finish(_as_complex_np(parts._ndarray), requires_grad, device)
    dt = _floating(dtype, "check_uniform_bounds")
    gen = _generator(generator)
    return _sampled(_size(shape, size, "rand"), dt, lambda a: _rng_streams.fill_in_memory_order(
        a, _rng_streams.uniform(gen, a.size, 0.0, 1.0, a.dtype)), requires_grad, device, out)


def _as_complex_np(parts: np.ndarray) -> np.ndarray:
    """(..., 2) real and imaginary parts as one complex array (torch's view_as_complex)."""
    if parts.dtype == np.float16:  # complex32: two float16 fields, the parts' own layout
        return np.ascontiguousarray(parts).view(_dtype.complex32.np)[..., 0]
    complex_np = np.complex128 if parts.dtype == np.float64 else np.complex64
    return np.ascontiguousarray(parts).view(complex_np)[..., 0]


@op(method=False)
def randn(*shape, size=None, generator=None, dtype=None, device=None, requires_grad=False, out=None,
          layout=None, pin_memory=False) -> Tensor:
    if out is not None:
        return _made_into(out, dtype, lambda dt: randn(*shape, size=size, generator=generator, dtype=dt,
                                                       device=device), "randn", requires_grad)
    if dtype is not None and not _resolve_dtype(dtype).is_complex:
        _rules.refuse_lowprec(_resolve_dtype(dtype).np, "normal_kernel_cpu")
    gen = _generator(generator)
    if dtype is not None and _resolve_dtype(dtype).is_complex:
        # torch's complex normal fills view_as_real with std 1/sqrt(2): E|z|^2 = 1
        real = _resolve_dtype(dtype).to_real()
        parts = _sampled(_size(shape, size) + (2,), real, lambda a: _rng_streams.normal(gen, a, 0.0, 0.5 ** 0.5),
                         False, device, None)
        return _finish(_as_complex_np(parts._ndarray), requires_grad, device)
    dt = _floating(dtype, "normal_kernel_cpu")
    return _sampled(_size(shape, size, "randn"), dt, lambda a: _rng_streams.normal(gen, a, 0.0, 1.0), requires_grad,
                    device, out)


def _check_random_bounds(low, high):
    if not low < high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")


_FACTORY_KEYWORDS = ("torch.dtype dtype = None, torch.layout layout = None, torch.device device = None, "
                     "bool pin_memory = False, bool requires_grad = False")


@op(method=False)
def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False,
            out=None, layout=None, pin_memory=False) -> Tensor:
    if out is not None:
        return _made_into(out, dtype, lambda dt: randint(low, high, size, generator=generator, dtype=dt,
                                                         device=device), "randint", requires_grad)
    if size is None:  # randint(high, size)
        if high is None:   # no size at all: torch's parser lists the signatures
            signatures = "".join(f" * ({sig}, *, {gen}Tensor out = None, {_FACTORY_KEYWORDS})\n"
                                 for sig in ("int high, tuple of ints size", "int low, int high, tuple of ints size")
                                 for gen in ("torch.Generator generator, ", ""))
            raise TypeError(f"randint() received an invalid combination of arguments - got ({type(low).__name__}), "
                            f"but expected one of:\n{signatures}")
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    low, high = int(low), int(high)
    _check_random_bounds(low, high)
    dt = _resolve_dtype(dtype, _dtype.int64)
    gen = _generator(generator)
    return _sampled(_size((size,)), dt, lambda a: _rng_streams.fill_in_memory_order(
        a, _rng_streams.random_from_to(gen, a.size, low, high - low)), requires_grad, device, out)


@op(method=False)
def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, out=None, layout=None,
             pin_memory=False) -> Tensor:
    if out is not None:
        return _made_into(out, dtype, lambda dt: randperm(n, generator=generator, dtype=dt, device=device),
                          "randperm", requires_grad)
    n = int(n)
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    dt = _resolve_dtype(dtype, _dtype.int64)
    gen = _generator(generator)
    return _sampled((n,), dt, lambda a: _rng_streams.randperm(gen, n), requires_grad, device, out)


@op(method=False)
def rand_like(t, *, dtype=None, generator=None, requires_grad=False, layout=None, device=None,
              memory_format=None) -> Tensor:
    meta = _meta_like_result(t, device, dtype, requires_grad)
    if meta is not None:
        return meta
    return _sampled_like(t, memory_format, lambda shape: rand(shape, dtype=_like_dtype(t, dtype), generator=generator,
                                                             requires_grad=requires_grad))


@op(method=False)
def randn_like(t, *, dtype=None, generator=None, requires_grad=False, layout=None, device=None,
               memory_format=None) -> Tensor:
    meta = _meta_like_result(t, device, dtype, requires_grad)
    if meta is not None:
        return meta
    dt = _like_dtype(t, dtype)
    if _memory_format.memory_order(t._ndarray, memory_format) is not None and not dt.is_complex:
        # torch fills empty_like(t) in place: laid out other than row-major that tensor is not contiguous,
        # and its normal_ takes the scalar sampler (not the 16-element blocks), in memory order
        _rules.refuse_lowprec(_floating(dt, "normal_kernel_cpu").np, "normal_kernel_cpu")
        target = _memory_format.like(t._ndarray, dt.np, memory_format)
        if target.size:
            target[...] = _rng_streams.normal(_generator(generator), target, 0.0, 1.0)
        return _finish(target, requires_grad)
    return _sampled_like(t, memory_format, lambda shape: randn(shape, dtype=dt, generator=generator,
                                                              requires_grad=requires_grad))


_NOT_GIVEN = object()


def _randint_like_bounds(bounds, low, high):
    """torch's two forms, ``(input, high)`` and ``(input, low, high)``, positional or by keyword
    (``randint_like(x, high=2)``, ``randint_like(x, 1, high=3)``); anything else is a TypeError."""
    given = list(bounds)
    if low is not _NOT_GIVEN:
        if given:
            given = None  # low both by position and by keyword
        else:
            given.append(low)
    if given is not None and high is not _NOT_GIVEN:
        given.append(high)
    if given is None or not 1 <= len(given) <= 2 or (len(given) == 1 and low is not _NOT_GIVEN):
        forms = "(Tensor input, int high, ...) or (Tensor input, int low, int high, ...)"
        raise TypeError(f"randint_like() received an invalid combination of arguments - expected one of {forms}")
    return (0, given[0]) if len(given) == 1 else tuple(given)


@op(method=False)
def randint_like(t, *bounds, low=_NOT_GIVEN, high=_NOT_GIVEN, dtype=None, generator=None, requires_grad=False,
                 layout=None, device=None, memory_format=None) -> Tensor:
    low, high = _randint_like_bounds(bounds, low, high)
    meta = _meta_like_result(t, device, dtype, requires_grad)
    if meta is not None:
        return meta
    return _sampled_like(t, memory_format, lambda shape: randint(low, high, shape, dtype=_like_dtype(t, dtype),
                                                                generator=generator, requires_grad=requires_grad))


def _check_std(std, name="normal"):
    if std < 0.0:
        raise RuntimeError(f"{name} expects std >= 0.0, but found std {std}")


@op(method=False)
def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None, layout=None,
           pin_memory=False, requires_grad=False):
    """torch.normal's overloads: (Tensor, Tensor), (Tensor, float), (float, Tensor) and (float, float, size).
    The tensor forms draw standard normals, then scale by std and add mean, as torch does."""
    gen = _generator(generator)
    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not (mean_t or std_t):
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got (float, float), but "
                            "expected one of: (Tensor mean, Tensor std), (Tensor mean, float std), "
                            "(float mean, Tensor std), (float mean, float std, tuple of ints size)")
        _check_std(std)
        dt = _floating(dtype, "normal_kernel_cpu")
        return _sampled(_size((size,)), dt, lambda a: _rng_streams.normal(gen, a, mean, std), requires_grad, device,
                        out)
    if std_t and (std._ndarray < 0).any():
        raise RuntimeError("normal expects all elements of std >= 0.0")
    if not std_t:
        _check_std(std)
    like = mean if mean_t else std
    if not (_dtype.is_floating_np(like._ndarray.dtype) or like._ndarray.dtype.kind == "c"):
        raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for "
                                  f"'{_dtype.scalar_type_name(like._ndarray.dtype)}'")
    shape = np.broadcast_shapes(mean._ndarray.shape if mean_t else (), std._ndarray.shape if std_t else ())
    dtype_np = like._ndarray.dtype
    if mean_t and not std_t:
        z = _rng_streams.normal(gen, np.empty(shape, dtype_np), 0.0, std)
        data = (z + mean._ndarray).astype(dtype_np, copy=False)
    else:
        z = _rng_streams.normal(gen, np.empty(shape, dtype_np), 0.0, 1.0)
        m = mean._ndarray if mean_t else np.asarray(mean, dtype=dtype_np)
        data = (z * std._ndarray + m).astype(dtype_np, copy=False)
    result = wrap(np.ascontiguousarray(data))
    return result if out is None else _into_out(out, result)


@op(method=False)
def bernoulli(input, p=None, *, generator=None, out=None):
    """Samples of Bernoulli(p) shaped like ``input``: ``input`` holds the probabilities unless ``p`` is given."""
    gen = _generator(generator)
    if p is not None:
        return empty_like(input).bernoulli_(p, generator=gen)
    probs = input._ndarray
    if probs.dtype.kind != "f":
        raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                  f"'{_dtype.scalar_type_name(probs.dtype)}'")
    if ((probs < 0) | (probs > 1)).any():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message "
                           "be improved?  If so, please report an enhancement request to PyTorch.)")
    draws = _rng_streams.bernoulli_tensor(gen, np.ascontiguousarray(probs))
    result = wrap(draws.reshape(probs.shape).astype(probs.dtype))
    return result if out is None else _into_out(out, result)


@op()
def multinomial(probs, num_samples, replacement=False, *, generator=None, out=None):
    """torch's CPU sampler: with replacement, one double uniform per sample looked up in each row's
    normalised running sum; without (or for one sample), the largest ``p / Exp(1)`` (an exponential
    draw per category), which samples without replacement in proportion to ``p``."""
    gen = _generator(generator)
    p = probs._ndarray
    n_sample = int(num_samples)
    if p.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if p.dtype.kind != "f":
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{_dtype.scalar_type_name(p.dtype)}")
    n_categories = p.shape[-1]
    if n_sample <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and n_sample > n_categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    rows = np.ascontiguousarray(p).reshape(-1, n_categories)
    if not np.isfinite(rows).all() or (rows < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (rows.sum(axis=1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement or n_sample == 1:
        # torch draws zero-probability categories last, in the order its topk leaves equal keys: one is
        # placed exactly; for two or more that order is not reproduced, and the draw is refused instead
        if not replacement and ((rows > 0).sum(axis=1) < n_sample - 1).any():
            raise RuntimeError("invalid multinomial distribution (with replacement=False, not enough non-negative "
                               "category to sample)")
        noise = _rng_streams.exponential(gen, rows.size, 1.0).astype(rows.dtype).reshape(rows.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = rows / noise
        if n_sample == 1:
            picked = np.argmax(keys, axis=1)[:, None]
        else:  # topk: largest first, ties to the lower index
            picked = np.argsort(-keys, axis=1, kind="stable")[:, :n_sample]
    else:
        cum = np.cumsum(rows, axis=1, dtype=rows.dtype)
        cum = cum / cum[:, -1:]
        cum[:, -1] = 1
        uniforms = _rng_streams.unit_doubles(gen, rows.shape[0] * n_sample).reshape(rows.shape[0], n_sample)
        picked = np.stack([np.searchsorted(cum[i].astype(np.float64), uniforms[i], side="left")
                           for i in builtins.range(rows.shape[0])])
    result = wrap(picked.astype(np.int64).reshape(p.shape[:-1] + (n_sample,)))
    return result if out is None else _into_out(out, result)


# ---- Tensor.new_*: factories with self's dtype --------------------------------------------------
def _new_device(self, device):
    """The device a ``new_*`` tensor is made on: the given one, else self's (meta for a meta tensor)."""
    if device is None and self._ndarray.__class__ is MetaArray:
        return "meta"
    return device


@op(function=False)
def new_zeros(self, *shape, size=None, dtype=None, device=None, requires_grad=False, **kwargs):
    return zeros(*shape, size=size, dtype=dtype if dtype is not None else self.dtype,
                 device=_new_device(self, device), requires_grad=requires_grad)


@op(function=False)
def new_ones(self, *shape, size=None, dtype=None, device=None, requires_grad=False, **kwargs):
    return ones(*shape, size=size, dtype=dtype if dtype is not None else self.dtype,
                device=_new_device(self, device), requires_grad=requires_grad)


@op(function=False)
def new_empty(self, *shape, size=None, dtype=None, device=None, requires_grad=False, **kwargs):
    return empty(*shape, size=size, dtype=dtype if dtype is not None else self.dtype,
                 device=_new_device(self, device), requires_grad=requires_grad)


@op(function=False)
def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    fill_value = _fill_number("new_full", fill_value)
    return full(size, fill_value, dtype=dtype if dtype is not None else self.dtype,
                device=_new_device(self, device), requires_grad=requires_grad)


@op(function=False)
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    if isinstance(data, Tensor):
        _warn_copy_construct("tensor.new_tensor(sourceTensor)")
    return _tensor(data, dtype if dtype is not None else self.dtype, _new_device(self, device), requires_grad, False)


__all__ = module_all(globals()) + ["Generator", "default_generator"]
