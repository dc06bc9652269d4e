"""The meta device: tensors that have a shape, a dtype and autograd, and no values.

A meta tensor is an ordinary Tensor whose ``_ndarray`` is a ``MetaArray``: an ndarray subclass whose
strides are all zero over a single element, so it costs no memory proportional to its size. The ops
run their usual NumPy code on it; NumPy hands every ufunc and array function that meets a MetaArray
to the class, which works out the result's shape and dtype and returns another MetaArray (nothing is
computed). Views (slicing, reshape, transpose) are NumPy's own and keep the class. Whatever would
read the values (``item``, ``tolist``, a tensor's truth value, ``np.copyto`` into a plain array)
raises torch's error; a kernel's own checks on values (``if np.isnan(x).any():``) see False and take
the kernel's ordinary path, as torch's meta kernels, which check nothing, do.

NumPy's own conversions cannot be intercepted: ``np.asarray``/``np.array`` of a MetaArray, or writing
one into a plain array, give its single zero element repeated. So the ops keep their results' class
with ``np.asanyarray`` and copy with the array's own ``copy()``, and the kernels found building their
results otherwise (padding, the fused LSTM, convolutions) take a meta path of their own.

A CPU tensor with dimensions among the meta operands of elementwise arithmetic, comparisons, ``where``,
``cat`` and ``stack`` is torch's device mismatch; CPU scalars (0-d) mix freely, as in torch. Other
kernels combine arrays of their own (a mask, an initial state, a divisor grid) with their operands,
so there a plain array meeting a meta one gives a meta result (torch refuses a CPU tensor there).
"""
from __future__ import annotations

import sys

import numpy as np

from ._device import device

META = device("meta")

NO_DATA = "Cannot copy out of meta tensor; no data!"
NO_ITEM = "Tensor.item() cannot be called on meta tensors"
NO_NUMPY = "can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."

_as_strided = np.lib.stride_tricks.as_strided


def virtual_array(shape, dtype) -> np.ndarray:
    """A plain array of ``shape`` and ``dtype`` with zero strides over one zero element."""
    shape = tuple(int(s) for s in shape)
    return _as_strided(np.zeros(1, dtype=dtype), shape, (0,) * len(shape))


def meta_array(shape, dtype) -> "MetaArray":
    """A MetaArray of ``shape`` and ``dtype`` (no memory beyond one element)."""
    return virtual_array(shape, dtype).view(MetaArray)


def meta_like(array) -> "MetaArray":
    return meta_array(array.shape, array.dtype)


def contiguous_strides(shape) -> tuple:
    """The element strides of a row-major (contiguous) tensor of ``shape``."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def is_meta_device(where) -> bool:
    """Whether a ``device=`` argument names the meta device (a device, a string, or None)."""
    if where is None:
        return False
    if isinstance(where, device):
        return where.type == "meta"
    return isinstance(where, str) and where.split(":", 1)[0] == "meta"


def _mismatch(first_is_meta: bool) -> RuntimeError:
    if first_is_meta:
        return RuntimeError("Tensor on device cpu is not on the expected device meta!")
    return RuntimeError("Tensor on device meta is not on the expected device cpu!")


# the code of the kernels whose array operands are their op's own tensors (elementwise arithmetic and
# comparisons, where, cat, stack): only there is a plain array among meta ones a CPU tensor the caller
# passed. Elsewhere it is a kernel's own constant (a mask, an initial state, a divisor grid), which
# combines with meta operands into a meta result
_STRICT_CALLERS: set = set()


def operands_are_the_ops_own(*functions) -> None:
    """Declare ``functions`` kernels whose operands are the op's own tensors: a CPU tensor with
    dimensions among meta ones there is torch's device mismatch."""
    _STRICT_CALLERS.update(f.__code__ for f in functions)


def _called_strictly(depth: int) -> bool:
    return sys._getframe(depth + 1).f_code in _STRICT_CALLERS


def _check_devices(arrays) -> None:
    """torch's device mismatch for a plain array with dimensions among MetaArray operands (a 0-d one
    is a CPU scalar, which torch lets mix), worded after the first tensor operand's device."""
    first_meta = None
    for a in arrays:
        if isinstance(a, np.ndarray) and (a.ndim or isinstance(a, MetaArray)):
            if first_meta is None:
                first_meta = isinstance(a, MetaArray)
            elif isinstance(a, MetaArray) != first_meta:
                raise _mismatch(first_meta)


def _probe(value):
    """A stand-in of one element per dimension with ``value``'s dtype, to learn a result's dtype."""
    if isinstance(value, np.ndarray):
        return np.ones((1,) * value.ndim, dtype=value.dtype)
    return value


def _metaify(result):
    """NumPy results as MetaArrays (arrays and tuples/lists of them); other values as they are."""
    if isinstance(result, np.ndarray):
        return result if isinstance(result, MetaArray) else meta_like(result)
    if isinstance(result, tuple):
        return tuple(_metaify(r) for r in result)
    if isinstance(result, list):
        return [_metaify(r) for r in result]
    if isinstance(result, np.generic):
        return meta_array((), result.dtype)
    return result


def _unmeta(value):
    """A MetaArray argument as a plain zero-stride array (no memory), nested containers too."""
    if isinstance(value, MetaArray):
        return virtual_array(value.shape, value.dtype)
    if isinstance(value, (list, tuple)):
        return type(value)(_unmeta(v) for v in value)
    return value


def _matmul_shape(a, b):
    sa, sb = tuple(a.shape), tuple(b.shape)
    if not sa or not sb:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    a2 = (1,) + sa if len(sa) == 1 else sa
    b2 = sb + (1,) if len(sb) == 1 else sb
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 ({a2[-1]} is different "
                         f"from {b2[-2]})")
    shape = np.broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    if len(sa) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(sb) == 1:
        shape = shape[:-1]
    return shape


def _reduced_shape(shape, axis, keepdims):
    ndim = len(shape)
    if axis is None:
        axes = set(range(ndim))
    else:
        axes = {int(x) % max(ndim, 1) for x in (axis if isinstance(axis, tuple) else (axis,))}
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


class MetaArray(np.ndarray):
    """An array with a shape and a dtype and no values (see the module docstring)."""

    # -- ufuncs: shapes by broadcasting (matmul by its rule), dtypes from a one-element probe --------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.pop("out", None)
        outs = out if isinstance(out, tuple) else ((out,) if out is not None else ())
        if _STRICT_CALLERS and _called_strictly(1):
            _check_devices(inputs + tuple(o for o in outs if o is not None))
        if outs and not all(isinstance(o, MetaArray) for o in outs if o is not None):
            outs = out = None   # a kernel's CPU buffer for a meta result: the result is meta
        if method == "at":   # np.add.at(target, index, values): writes in place
            return None
        kwargs.pop("where", None)
        probes = [_probe(x) for x in inputs]
        with np.errstate(all="ignore"):
            if method == "__call__":
                sample = getattr(ufunc, method)(*probes, **kwargs)
                if ufunc.signature is not None:
                    if ufunc is not np.matmul:
                        return self._computed(ufunc, method, inputs, kwargs, out)
                    shape = _matmul_shape(*inputs)
                else:
                    shape = np.broadcast_shapes(*(np.shape(x) for x in inputs))
            elif method in ("reduce", "accumulate"):
                source = inputs[0]
                axis = kwargs.get("axis", 0)
                keepdims = kwargs.get("keepdims", False)
                kwargs.pop("initial", None)
                sample = getattr(ufunc, method)(probes[0], **kwargs)
                if method == "accumulate":
                    shape = source.shape
                else:
                    shape = _reduced_shape(source.shape, axis, keepdims)
            elif method == "outer":
                sample = ufunc.outer(*probes, **kwargs)
                shape = np.shape(inputs[0]) + np.shape(inputs[1])
            else:
                return self._computed(ufunc, method, inputs, kwargs, out)
        samples = sample if isinstance(sample, tuple) else (sample,)
        results = tuple(meta_array(shape, np.asarray(s).dtype) for s in samples)
        if outs:
            results = tuple(o if o is not None else r for o, r in zip(outs, results))
        return results if isinstance(sample, tuple) else results[0]

    def _computed(self, ufunc, method, inputs, kwargs, out):
        """A rarer ufunc form: computed on zero-stride stand-ins, the result made meta."""
        if out is not None:
            return out
        with np.errstate(all="ignore"):
            return _metaify(getattr(ufunc, method)(*(_unmeta(x) for x in inputs), **kwargs))

    # -- array functions ------------------------------------------------------------------------
    def __array_function__(self, func, types, args, kwargs):
        if _STRICT_CALLERS and _called_strictly(1):
            _check_devices([v for a in args for v in (a if isinstance(a, (list, tuple)) else (a,))])
        handler = _FUNCTIONS.get(func)
        if handler is not None:
            return handler(*args, **kwargs)
        if func in _DATA_DEPENDENT:
            raise NotImplementedError(f"{func.__name__}: the result's shape depends on the values, which a "
                                      "meta tensor does not have")
        if func in _NATIVE:   # NumPy's code for these only calls methods and ufuncs, which come back here
            return super().__array_function__(func, types, args, kwargs)
        # any other function: run on zero-stride stand-ins (no memory for the inputs), the results made meta
        with np.errstate(all="ignore"):
            result = func(*(_unmeta(a) for a in args), **{k: _unmeta(v) for k, v in kwargs.items()})
        return _metaify(result)

    # -- what would read values --------------------------------------------------------------
    def item(self, *args):
        raise RuntimeError(NO_ITEM)

    def __bool__(self):
        # the truth of an array inside a kernel is a check on values (any NaN? an index out of range?):
        # a meta kernel has none to check, so the kernel takes its ordinary path. A meta *tensor*'s
        # truth value raises (Tensor.__bool__)
        return False

    def __float__(self):
        raise RuntimeError(NO_ITEM)

    __int__ = __index__ = __complex__ = __float__

    def tolist(self):
        raise NotImplementedError(NO_DATA)

    def tobytes(self, order="C"):
        raise NotImplementedError(NO_DATA)

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(NO_DATA)

    def nonzero(self):
        raise NotImplementedError("nonzero: the result's shape depends on the values, which a meta tensor "
                                  "does not have")

    # -- what would allocate: answered with new MetaArrays ---------------------------------------
    def copy(self, order="C"):
        return meta_like(self)

    __copy__ = copy

    def __deepcopy__(self, memo):
        return meta_like(self)

    def __reduce__(self):
        return (meta_array, (self.shape, self.dtype))

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        dtype = np.dtype(dtype)
        if not copy and dtype == self.dtype:
            return self
        return meta_array(self.shape, dtype)

    def flatten(self, order="C"):
        return meta_array((self.size,), self.dtype)

    def fill(self, value):
        return None

    def view(self, *args, **kwargs):
        dtype = kwargs.get("dtype", args[0] if args else None)
        if dtype is None or isinstance(dtype, type) and issubclass(dtype, np.ndarray):
            return super().view(*args, **kwargs)
        dtype = np.dtype(dtype)
        if dtype.itemsize == self.dtype.itemsize or not self.ndim:
            return super().view(*args, **kwargs)
        shape = self.shape[:-1] + (self.shape[-1] * self.dtype.itemsize // dtype.itemsize,)
        return meta_array(shape, dtype)

    def __getitem__(self, index):
        parts = index if isinstance(index, tuple) else (index,)
        if not any(isinstance(p, (np.ndarray, list)) for p in parts):
            return super().__getitem__(index)   # basic indexing: a view, zero strides kept
        for p in parts:
            if isinstance(p, MetaArray) and p.dtype == np.bool_:
                raise NotImplementedError("indexing with a meta boolean mask: the result's shape depends on the "
                                          "mask's values, which a meta tensor does not have")
        # advanced indexing: the shape from indexing a zero-stride stand-in of one-byte elements
        stand_in = virtual_array(self.shape, np.int8)
        index = tuple(virtual_array(p.shape, p.dtype) if isinstance(p, MetaArray) else p for p in parts)
        return meta_array(stand_in[index].shape, self.dtype)

    def __setitem__(self, index, value):
        return None   # no values to write (torch copies a CPU tensor into a meta one without complaint)

    def take(self, indices, axis=None, out=None, mode="raise"):
        shape = np.shape(indices)
        if axis is None:
            return meta_array(shape, self.dtype)
        axis %= self.ndim
        return meta_array(self.shape[:axis] + shape + self.shape[axis + 1:], self.dtype)

    def repeat(self, repeats, axis=None):
        if not isinstance(repeats, (int, np.integer)):
            raise NotImplementedError("repeat with per-element counts on a meta tensor")
        if axis is None:
            return meta_array((self.size * int(repeats),), self.dtype)
        axis %= self.ndim
        return meta_array(self.shape[:axis] + (self.shape[axis] * int(repeats),) + self.shape[axis + 1:], self.dtype)

    def _arg_reduced(self, axis=None, out=None, *, keepdims=False):
        return meta_array(_reduced_shape(self.shape, axis, keepdims), np.intp)

    argmax = argmin = _arg_reduced

    def argsort(self, axis=-1, kind=None, order=None, **kwargs):
        return meta_array(self.shape if axis is not None else (self.size,), np.intp)

    argpartition = argsort

    def sort(self, axis=-1, kind=None, order=None, **kwargs):
        return None

    partition = sort

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        shape = tuple(s for i, s in enumerate(self.shape) if i not in (axis1 % self.ndim, axis2 % self.ndim))
        return meta_array(shape, dtype or np.add.reduce(np.ones(1, self.dtype)).dtype)

    def dot(self, other, out=None):
        return _dot(self, other)

    def searchsorted(self, v, side="left", sorter=None):
        return meta_array(np.shape(v), np.intp)

    def __repr__(self):
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    __str__ = __repr__


# -- array functions answered from shapes alone ---------------------------------------------------
def _arrays_dtype(arrays, dtype=None):
    if dtype is not None:
        return np.dtype(dtype)
    return np.result_type(*[a.dtype if isinstance(a, np.ndarray) else np.asarray(a).dtype for a in arrays])


def _concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    arrays = list(arrays)
    shapes = [np.shape(a) for a in arrays]
    if axis is None:
        shape = (sum(int(np.prod(s)) for s in shapes),)
    else:
        probe = np.concatenate([np.empty(s[:axis % len(s)] + (0,) + s[axis % len(s) + 1:], np.int8) for s in shapes],
                               axis=axis)   # validates the shapes as NumPy does
        axis %= len(shapes[0])
        shape = probe.shape[:axis] + (sum(s[axis] for s in shapes),) + probe.shape[axis + 1:]
    result = meta_array(shape, _arrays_dtype(arrays, dtype))
    return out if out is not None else result


def _stack(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    arrays = list(arrays)
    shapes = {np.shape(a) for a in arrays}
    if len(shapes) != 1:
        raise ValueError("all input arrays must have the same shape")
    shape = shapes.pop()
    axis = axis % (len(shape) + 1)
    result = meta_array(shape[:axis] + (len(arrays),) + shape[axis:], _arrays_dtype(arrays, dtype))
    return out if out is not None else result


def _where(condition, x=None, y=None):
    if x is None and y is None:
        raise NotImplementedError("where(condition) on a meta tensor: the result's shape depends on the values")
    shape = np.broadcast_shapes(np.shape(condition), np.shape(x), np.shape(y))
    return meta_array(shape, np.result_type(_probe(x), _probe(y)))


def _copyto(dst, src, casting="same_kind", where=True):
    if isinstance(src, MetaArray) and not isinstance(dst, MetaArray):
        raise NotImplementedError(NO_DATA)
    if isinstance(src, np.ndarray) and not isinstance(src, MetaArray) and src.ndim and isinstance(dst, MetaArray):
        return None   # torch copies a CPU tensor into a meta one (nothing to write)
    np.broadcast_shapes(np.shape(src), dst.shape)
    return None


def _like(prototype, dtype=None, order="K", subok=True, shape=None, **kwargs):
    shape = np.shape(prototype) if shape is None else shape
    return meta_array(shape if isinstance(shape, tuple) else tuple(np.atleast_1d(shape)),
                      prototype.dtype if dtype is None else dtype)


def _full_like(prototype, fill_value, dtype=None, order="K", subok=True, shape=None, **kwargs):
    return _like(prototype, dtype, shape=shape)


def _broadcast_to(array, shape, subok=False):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    np.broadcast_shapes(np.shape(array), shape)
    if np.broadcast_shapes(np.shape(array), shape) != shape:
        raise ValueError(f"cannot broadcast shape {np.shape(array)} to {shape}")
    return meta_array(shape, array.dtype if isinstance(array, np.ndarray) else np.asarray(array).dtype)


def _broadcast_arrays(*arrays, subok=False):
    shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
    return tuple(meta_array(shape, a.dtype) for a in arrays)


def _dot(a, b, out=None):
    sa, sb = np.shape(a), np.shape(b)
    dtype = np.result_type(_probe(a), _probe(b))
    if not sa or not sb:
        return meta_array(np.broadcast_shapes(sa, sb), dtype)
    if len(sb) == 1:
        if sa[-1] != sb[0]:
            raise ValueError("shapes not aligned")
        return meta_array(sa[:-1], dtype)
    if sa[-1] != sb[-2]:
        raise ValueError("shapes not aligned")
    return meta_array(sa[:-1] + sb[:-2] + sb[-1:], dtype)


def _tensordot(a, b, axes=2):
    sa, sb = np.shape(a), np.shape(b)
    if isinstance(axes, (int, np.integer)):
        axes_a, axes_b = list(range(len(sa) - axes, len(sa))), list(range(0, axes))
    else:
        axes_a, axes_b = axes
        axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    axes_a = [x % len(sa) for x in axes_a]
    axes_b = [x % len(sb) for x in axes_b]
    if [sa[x] for x in axes_a] != [sb[x] for x in axes_b]:
        raise ValueError("shape-mismatch for sum")
    shape = tuple(s for i, s in enumerate(sa) if i not in axes_a) + tuple(s for i, s in enumerate(sb) if i not in axes_b)
    return meta_array(shape, np.result_type(_probe(a), _probe(b)))


def _einsum(subscripts, *operands, out=None, dtype=None, optimize=False, **kwargs):
    if not isinstance(subscripts, str):
        raise NotImplementedError("einsum in the sublist form on a meta tensor")
    spec = subscripts.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    sizes: dict = {}
    batch = ()
    for term, x in zip(terms, operands):
        shape = np.shape(x)
        if "..." in term:
            head, tail = term.split("...")
            n_ell = len(shape) - len(head) - len(tail)
            batch = np.broadcast_shapes(batch, shape[len(head):len(head) + n_ell])
            letters = list(head) + list(tail)
            dims = shape[:len(head)] + shape[len(head) + n_ell:]
        else:
            letters, dims = list(term), shape
        for letter, d in zip(letters, dims):
            if sizes.get(letter, 1) != 1 and d != 1 and sizes[letter] != d:
                raise ValueError(f"einsum: operands could not be broadcast for subscript {letter}")
            sizes[letter] = max(sizes.get(letter, d), d) if d != 1 else sizes.get(letter, 1)
    if not arrow:
        counts = {c: inputs.count(c) for c in sizes}
        output = ("..." if "..." in inputs else "") + "".join(sorted(c for c, n in counts.items() if n == 1))
    head, ell, tail = output.partition("...")
    shape = tuple(sizes[c] for c in head) + (tuple(batch) if ell else ()) + tuple(sizes[c] for c in tail)
    result_dtype = dtype if dtype is not None else np.result_type(*(_probe(x) for x in operands))
    result = meta_array(shape, result_dtype)
    return out if out is not None else result


def _shares_memory(a, b, max_work=None):
    return False


def _pad(array, pad_width, mode="constant", **kwargs):
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.intp), (np.ndim(array), 2))
    return meta_array(tuple(int(s + w[0] + w[1]) for s, w in zip(np.shape(array), widths)), array.dtype)


_FUNCTIONS = {
    np.concatenate: _concatenate, np.stack: _stack, np.where: _where, np.copyto: _copyto,
    np.empty_like: _like, np.zeros_like: _like, np.ones_like: _like, np.full_like: _full_like,
    np.broadcast_to: _broadcast_to, np.broadcast_arrays: _broadcast_arrays, np.dot: _dot,
    np.tensordot: _tensordot, np.einsum: _einsum, np.shares_memory: _shares_memory,
    np.may_share_memory: _shares_memory, np.pad: _pad, np.copy: lambda a, *args, **kwargs: meta_like(a),
}

# NumPy functions that call only methods and ufuncs of their argument
_NATIVE = frozenset((
    np.transpose, np.reshape, np.squeeze, np.swapaxes, np.expand_dims, np.ravel, np.sum, np.mean, np.amax, np.amin,
    np.max, np.min, np.prod, np.any, np.all, np.cumsum, np.cumprod, np.argmax, np.argmin, np.clip, np.round,
    np.around, np.std, np.var, np.sort, np.argsort, np.diagonal, np.take, np.repeat, np.moveaxis, np.shape,
    np.ndim, np.size, np.real, np.imag, np.conjugate, np.flip, np.iscomplexobj, np.isrealobj, np.result_type,
    np.can_cast, np.atleast_1d, np.atleast_2d, np.atleast_3d, np.squeeze, np.trace, np.matmul,
))

# functions whose result's shape depends on the values: torch has no meta kernel for them either
_DATA_DEPENDENT = frozenset((np.nonzero, np.argwhere, np.flatnonzero, np.unique, np.count_nonzero, np.extract,
                             np.compress, np.bincount, np.allclose, np.array_equal, np.array_equiv, np.histogram,
                             np.trim_zeros))
