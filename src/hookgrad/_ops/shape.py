"""Ops that copy while rearranging: cat, stack, repeat, flip, roll, tril/triu, clone, dtype casts."""
from __future__ import annotations

import numpy as np

from .. import _dtype, _memory_format
from .._meta import operands_are_the_ops_own
from .._tensor import Tensor, _wrap_dim, wrap
from ..autograd.graph import Node, saved_dim
from . import _dtype_rules as _rules
from ._declare import module_all, note_input_dtypes, op, record_op
from ._base import GRAD, _PassThroughNode, as_tensor_arg, edge, record


def _real_where_real(pieces, real_inputs):
    """A complex gradient's pieces for the real inputs of a mixed list: their real parts (as torch)."""
    if not real_inputs or pieces[0]._ndarray.dtype.kind != "c":
        return tuple(pieces)
    return tuple(p.real if real else p for p, real in zip(pieces, real_inputs))


class CatBackward0(Node):
    __slots__ = ("dim", "sizes", "shapes", "dim_arg", "real_inputs")
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg)}
    # a tensor-list input: torch computes every piece, even for inputs that need no grad
    grads_for_every_input = True

    def apply(self, grads):
        g = grads[0]
        out = []
        start = 0
        for size, shape in zip(self.sizes, self.shapes):
            piece = g.narrow(self.dim, start, size)
            out.append(piece.reshape(shape) if piece._ndarray.shape != shape else piece)
            start += size
        return _real_where_real(out, self.real_inputs)


@op(method=False, aliases=("concat", "concatenate"))
def cat(tensors, dim: int = 0) -> Tensor:
    tensors = [as_tensor_arg(t) for t in tensors]
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    # torch skips legacy empty 1-D tensors of size 0
    parts = [t for t in tensors if not (t._ndarray.ndim == 1 and t._ndarray.shape[0] == 0)] or tensors[:1]
    ref = parts[0]._ndarray
    if ref.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = _wrap_dim(dim, ref.ndim)
    for i, t in enumerate(parts):
        s = t._ndarray.shape
        if len(s) != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {len(s)}")
        for j, (want, got) in enumerate(zip(ref.shape, s)):
            if j != d and want != got:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size {want} "
                                   f"but got size {got} for tensor number {i} in the list.")
    result, node = _joined(np.concatenate, tensors, parts, d, dim, CatBackward0)
    if node is not None:
        node.sizes = [t._ndarray.shape[d] if any(t is p for p in parts) else 0 for t in tensors]
        node.shapes = [t._ndarray.shape for t in tensors]
        record(node, result, inputs=tuple(tensors))
    return result


concat = concatenate = cat


class StackBackward0(Node):
    __slots__ = ("dim", "dim_arg", "real_inputs")
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg)}
    grads_for_every_input = True

    def apply(self, grads):
        return _real_where_real(grads[0].unbind(self.dim), self.real_inputs)


def _real_inputs_of_complex(tensors, result):
    """Which inputs are real when the joined result is complex (None when there is nothing to do)."""
    if result._ndarray.dtype.kind != "c" or all(t._ndarray.dtype.kind == "c" for t in tensors):
        return None
    return [t._ndarray.dtype.kind != "c" for t in tensors]


def _joined(np_join, tensors, parts, d, dim, node_cls):
    """cat's and stack's shared body: ``parts`` (the tensors that take part) joined along ``d`` in
    their promoted dtype, and the backward node for all ``tensors`` (None without grad), its dim,
    input dtypes and real inputs filled in, not yet recorded."""
    dt = _dtype.result_type(*parts).np
    result = wrap(np_join([t._ndarray for t in parts], axis=d).astype(dt, copy=False))
    if not (GRAD.enabled and any(t._requires_grad for t in tensors)):
        return result, None
    node = node_cls(tuple(edge(t) for t in tensors))
    note_input_dtypes(node, tensors)
    node.dim, node.dim_arg = d, dim
    node.real_inputs = _real_inputs_of_complex(tensors, result)
    return result, node


@op(method=False)
def stack(tensors, dim: int = 0) -> Tensor:
    tensors = [as_tensor_arg(t) for t in tensors]
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0]._ndarray.shape
    for i, t in enumerate(tensors):
        if t._ndarray.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 and "
                               f"{list(t._ndarray.shape)} at entry {i}")
    d = _wrap_dim(dim, len(shape) + 1)
    result, node = _joined(np.stack, tensors, tensors, d, dim, StackBackward0)
    if node is not None:
        record(node, result, inputs=tuple(tensors))
    return result


@op(method=False)
def hstack(tensors):
    tensors = [as_tensor_arg(t) for t in tensors]
    return cat(tensors, 0 if tensors[0]._ndarray.ndim == 1 else 1)


@op(method=False)
def column_stack(tensors):
    """0-d and 1-d tensors become columns; the rest are concatenated along dim 1."""
    tensors = [as_tensor_arg(t) for t in tensors]
    if not tensors:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    return hstack([t.reshape(-1, 1) if t._ndarray.ndim <= 1 else t for t in tensors])


@op(method=False)
def vstack(tensors):
    return cat([t.reshape(1, -1) if t.ndim == 1 else t for t in tensors], 0)


class RepeatBackward0(Node):
    __slots__ = ("in_shape", "repeats")
    saved_values = {"self_sym_sizes": lambda n: n.in_shape, "repeats": lambda n: saved_dim(n.repeats)}

    def apply(self, grads):
        g = grads[0]
        lead = len(self.repeats) - len(self.in_shape)
        shape = (1,) * lead + tuple(self.in_shape)
        # view the gradient as (r0, s0, r1, s1, ...) and sum the repeat axes
        split = []
        for r, s in zip(self.repeats, shape):
            split += [r, s]
        g = g.reshape(split).sum(tuple(range(0, 2 * len(shape), 2)))
        return (g.reshape(self.in_shape),)


@op(function=False)
def repeat(x: Tensor, *sizes) -> Tensor:
    sizes = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)
    if len(sizes) < x._ndarray.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    result = wrap(np.tile(x._ndarray, sizes))
    if GRAD.enabled and x._requires_grad:
        node = record_op(RepeatBackward0, (x,), result)
        node.in_shape, node.repeats = x._ndarray.shape, sizes
    return result


@op(method=False)  # Tensor.tile takes *dims
def tile(x, dims):
    if isinstance(dims, int):
        raise TypeError(f"tile(): argument 'dims' (position 2) must be tuple of ints, not int")
    dims = tuple(dims)
    if len(dims) < x._ndarray.ndim:
        dims = (1,) * (x._ndarray.ndim - len(dims)) + dims
    return repeat(x, dims)


class RepeatInterleaveBackward(Node):
    __slots__ = ("dim", "repeats", "in_shape", "dim_arg")
    # torch records repeat_interleave as index_select with the repeated positions as index
    saved_names = ("index",)
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg), "self_sym_sizes": lambda n: n.in_shape}

    def apply(self, grads):
        g = grads[0]
        idx = np.repeat(np.arange(self.in_shape[self.dim]), self.repeats)
        if GRAD.enabled and g._requires_grad:  # create_graph: the same sum, recorded
            zeros = wrap(np.zeros(self.in_shape, dtype=g._ndarray.dtype))
            return (zeros.index_add(self.dim, wrap(idx.astype(np.int64)), g),)
        out = np.zeros(self.in_shape, dtype=g._ndarray.dtype)
        np.add.at(np.moveaxis(out, self.dim, 0), idx, np.moveaxis(g._ndarray, self.dim, 0))
        return (wrap(out),)


RepeatInterleaveBackward.__name__ = RepeatInterleaveBackward.__qualname__ = "IndexSelectBackward0"  # torch's grad_fn name


@op()
def repeat_interleave(x, repeats, dim=None):
    if dim is None:
        x = x.reshape(-1)
        dim = 0
    d = _wrap_dim(dim, x._ndarray.ndim)
    if isinstance(repeats, int) and not isinstance(repeats, bool) and repeats >= 0 and x._ndarray.ndim:
        # torch repeats by a number as a copy of an expanded view: its graph saves no index
        sizes = x._ndarray.shape
        spread = x.unsqueeze(d + 1).expand(*sizes[:d + 1], repeats, *sizes[d + 1:])
        return spread.clone().view(*sizes[:d], sizes[d] * repeats, *sizes[d + 1:])
    reps = repeats._ndarray if isinstance(repeats, Tensor) else repeats
    result = wrap(np.repeat(x._ndarray, reps, axis=d))
    if GRAD.enabled and x._requires_grad:
        node = record_op(RepeatInterleaveBackward, (x,), result)
        node.dim, node.repeats, node.in_shape, node.dim_arg = d, reps, x._ndarray.shape, dim
        node.save(wrap(np.repeat(np.arange(x._ndarray.shape[d]), reps)))
    return result


class FlipBackward0(Node):
    __slots__ = ("dims", "dims_arg")
    saved_values = {"dims": lambda n: saved_dim(n.dims_arg)}

    def apply(self, grads):
        return (grads[0].flip(self.dims),)


@op(method=False)  # Tensor.flip takes *dims
def flip(x: Tensor, dims) -> Tensor:
    if x._ndarray.dtype in _rules.LOWPREC:  # float8, float4, complex32
        _rules.refuse_lowprec(x._ndarray, "flip_cpu")
    dims_arg = (dims,) if isinstance(dims, int) else tuple(dims)
    dims = tuple(_wrap_dim(d, x._ndarray.ndim) for d in dims_arg)
    # a 0-d tensor's dim 0 is the tensor itself: nothing to reverse
    result = wrap(np.flip(x._ndarray, dims).copy() if x._ndarray.ndim else x._ndarray.copy())
    if GRAD.enabled and x._requires_grad:
        node = record_op(FlipBackward0, (x,), result)
        node.dims, node.dims_arg = dims, dims_arg
    return result


@op()
def fliplr(x):
    if x.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(x, 1)


@op()
def flipud(x):
    if x.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(x, 0)


def _int_tuple(v):
    return () if v is None else (v,) if isinstance(v, int) else tuple(v)


class RollBackward0(Node):
    __slots__ = ("shifts", "dims")
    saved_values = {"shifts": lambda n: saved_dim(_int_tuple(n.shifts)),
                    "dims": lambda n: saved_dim(_int_tuple(n.dims))}

    def apply(self, grads):
        neg = tuple(-s for s in self.shifts) if isinstance(self.shifts, tuple) else -self.shifts
        return (grads[0].roll(neg, self.dims),)


@op()
def roll(x: Tensor, shifts, dims=None) -> Tensor:
    if isinstance(shifts, list):
        shifts = tuple(shifts)
    if isinstance(dims, list):
        dims = tuple(dims)
    if dims is None:
        result = wrap(np.roll(x._ndarray.reshape(-1), shifts).reshape(x._ndarray.shape))
    else:
        result = wrap(np.roll(x._ndarray, shifts, dims))
    if GRAD.enabled and x._requires_grad:
        node = record_op(RollBackward0, (x,), result)
        node.shifts, node.dims = shifts, dims
    return result


class TrilBackward0(Node):
    __slots__ = ("diagonal",)
    saved_values = {"diagonal": lambda n: saved_dim(n.diagonal)}

    def apply(self, grads):
        return (grads[0].tril(self.diagonal),)


class TriuBackward0(Node):
    __slots__ = ("diagonal",)
    saved_values = {"diagonal": lambda n: saved_dim(n.diagonal)}

    def apply(self, grads):
        return (grads[0].triu(self.diagonal),)


def _triangle(x: Tensor, diagonal: int, np_fn, node_cls) -> Tensor:
    _rules.refuse_float8(x._ndarray, np_fn.__name__)   # torch's kernels are named tril and triu
    result = wrap(np_fn(x._ndarray, diagonal))
    if GRAD.enabled and x._requires_grad:
        node = record_op(node_cls, (x,), result)
        node.diagonal = diagonal
    return result


@op(inplace=True, saves_self=False)
def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    return _triangle(x, diagonal, np.tril, TrilBackward0)


@op(inplace=True, saves_self=False)
def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    return _triangle(x, diagonal, np.triu, TriuBackward0)


class CloneBackward0(_PassThroughNode):
    __slots__ = ()


@op()
def clone(x: Tensor, *, memory_format=None) -> Tensor:
    # preserve_format keeps a dense tensor's layout; an expanded (stride-0) one comes out row-major
    result = wrap(_memory_format.copy(x._ndarray, memory_format))
    if GRAD.enabled and x._requires_grad:
        record(CloneBackward0((edge(x),)), result, inputs=(x,))
    return result


@op(function=False)
def contiguous(x: Tensor, memory_format=None) -> Tensor:
    memory_format = memory_format or _memory_format.CONTIGUOUS
    if _memory_format.is_contiguous(x._ndarray, memory_format):   # preserve_format: as row-major
        return x
    if memory_format == _memory_format.PRESERVE:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return clone(x, memory_format=memory_format)


class ToCopyBackward0(Node):
    __slots__ = ("dtype",)

    def apply(self, grads):
        g = grads[0]
        if g._ndarray.dtype.kind == "c" and not self.dtype.is_complex:
            g = g.real  # the real input of a complex copy gets the gradient's real part, as torch
        return (g.to(self.dtype),)


def to_dtype(x: Tensor, dtype, copy: bool = False, memory_format=None) -> Tensor:
    dt = _dtype.to_dtype(dtype)
    relayout = memory_format not in (None, _memory_format.PRESERVE) and \
        not _memory_format.is_contiguous(x._ndarray, memory_format)
    if x._ndarray.dtype == dt.np and not copy and not relayout:
        return x
    data = _memory_format.copy(x._ndarray, memory_format) if relayout else x._ndarray
    if relayout and data.dtype == dt.np:   # the relaid copy is the result
        result = wrap(data)
        if GRAD.enabled and x._requires_grad:
            record_op(ToCopyBackward0, (x,), result).dtype = _dtype.from_numpy_dtype(data.dtype)
        return result
    if dt.np.kind in "iub" and data.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            new = data.astype(dt.np)
    elif _dtype.is_complex_np(data.dtype) and not dt.is_complex:
        from ..autograd._warn_once import warn_once
        warn_once("complex_to_real", "Casting complex values to real discards the imaginary part", stacklevel=3)
        with np.errstate(invalid="ignore"):
            new = _dtype.cast(data.real if data.dtype.kind == "c" else data, dt.np)
    else:
        with np.errstate(over="ignore"):  # a value out of the new type's range becomes inf, silently as in torch
            new = _dtype.cast(data, dt.np)
    result = wrap(new)
    if GRAD.enabled and x._requires_grad and (dt.is_floating_point or dt.is_complex):
        node = record_op(ToCopyBackward0, (x,), result)
        node.dtype = _dtype.from_numpy_dtype(data.dtype)
    return result


def _to_device(x: Tensor, device) -> Tensor:
    """``x`` on ``device``: itself where it already is, a meta tensor of its shape for ``"meta"``;
    the CPU for a meta tensor is torch's NotImplementedError (no data to copy)."""
    from .._meta import MetaArray, is_meta_device, meta_like
    if is_meta_device(device):
        if x._ndarray.__class__ is MetaArray:
            return x
        result = wrap(meta_like(x._ndarray))
        if GRAD.enabled and x._requires_grad:
            record_op(ToCopyBackward0, (x,), result).dtype = _dtype.from_numpy_dtype(x._ndarray.dtype)
        return result
    from .._device import require_cpu
    require_cpu(device)  # raises for anything but the CPU
    if x._ndarray.__class__ is MetaArray:
        x.cpu()   # torch's error: a meta tensor has no data to copy out
    return x


@op(function=False)
def to(x: Tensor, *args, **kwargs) -> Tensor:
    """``to(dtype)``, ``to(device)``, ``to(other)``, ``to(device, dtype)``; copy=, non_blocking= accepted."""
    dtype = kwargs.pop("dtype", None)
    if dtype is not None:
        from .._argcheck import check_dtype_argument
        check_dtype_argument("to", dtype)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    memory_format = kwargs.pop("memory_format", None)
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {list(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype = a.dtype
            if a._ndarray.__class__ is not x._ndarray.__class__:   # to(other) takes other's device too
                device = a.device
        elif isinstance(a, _dtype.dtype) or (type(a).__name__ == "dtype") or a in (float, int, bool, complex):
            dtype = a
        elif isinstance(a, bool):
            pass
        elif isinstance(a, (str, int)) or type(a).__name__ == "device":   # an int is an accelerator index
            device = a
        elif a is not None:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    if device is not None:
        moved = _to_device(x, device)
        if moved is not x:
            return moved if dtype is None else to_dtype(moved, dtype, False, memory_format)
    if dtype is None:
        if memory_format not in (None, _memory_format.PRESERVE):
            return to_dtype(x, x.dtype, copy, memory_format)
        return clone(x) if copy else x
    return to_dtype(x, dtype, copy, memory_format)


@op(function=False)
def type_as(x, other):
    return to_dtype(x, other.dtype)


@op("flip", function=False)
def flip_method(self, *dims):
    return flip(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims)


@op("tile", function=False)
def tile_method(self, *dims):
    return tile(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims)


def _dtype_method(name, dtype):
    def convert(self, memory_format=None):
        return to_dtype(self, dtype)
    convert.__name__ = convert.__qualname__ = name
    op(name, function=False)(convert)


for _name, _dt in (("float", _dtype.float32), ("double", _dtype.float64), ("half", _dtype.float16),
                   ("bfloat16", _dtype.bfloat16),
                   ("long", _dtype.int64), ("int", _dtype.int32), ("short", _dtype.int16), ("char", _dtype.int8),
                   ("byte", _dtype.uint8), ("bool", _dtype.bool)):
    _dtype_method(_name, _dt)


operands_are_the_ops_own(_joined)   # cat's and stack's tensors: a CPU one among meta ones is torch's error

__all__ = module_all(globals())
