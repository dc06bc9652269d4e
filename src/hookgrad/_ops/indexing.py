"""Indexing: ``x[...]``, index assignment, gather/scatter, index_select, masked_fill."""
from __future__ import annotations

import numbers

import numpy as np

from .. import _dtype
from .._dtype import cpp_type_name, scalar_type_name
from .._tensor import Tensor, _wrap_dim, wrap
from ..autograd.graph import Node, SavedTensor, saved_dim
from . import _dtype_rules as _rules
from ._declare import delayed_error, module_all, op, record_op
from ._base import GRAD, as_tensor_arg, edge, record, sum_to_shape
from .views import WRITES_ONE_VALUE, apply_inplace, basic_index, check_inplace, refuse_overlapping_write
from .pointwise import check_broadcast


def _is_basic(item) -> bool:
    return item is None or item is Ellipsis or isinstance(item, slice) or (
        isinstance(item, (numbers.Integral, np.integer)) and not isinstance(item, bool)) or (
        isinstance(item, Tensor) and item._ndarray.ndim == 0 and item._ndarray.dtype.kind in "iu")


def _without_trailing_ellipses(index: tuple) -> tuple:
    """torch lets a second ``...`` end an index (``x[..., ...]``, ``x[0, ..., ...]``): once the first
    has covered the remaining dimensions, the later ones cover none. One before another index item
    stays, for NumPy to refuse (torch's results there read past the tensor's dimensions)."""
    while len(index) > 1 and index[-1] is Ellipsis and any(i is Ellipsis for i in index[:-1]):
        index = index[:-1]
    return index


_SEQUENCE_AS_TUPLE = ("Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in "
                      "pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as "
                      "tensor index, x[torch.tensor(seq)], which will result either in an error or a different result")


def _list_read_as_tuple(index: list) -> bool:
    """torch's (and old NumPy's) reading of a short list holding a tensor, a sequence, a slice, None or
    an Ellipsis as one index per dimension (``x[[rows, cols]]`` is ``x[rows, cols]``), with its warning."""
    if len(index) >= 32 or not any(isinstance(i, (Tensor, list, tuple, range, str, np.ndarray, slice)) or i is None
                                   or i is Ellipsis for i in index):
        return False
    from ..autograd._warn_once import warn_at_user_frame
    warn_at_user_frame(_SEQUENCE_AS_TUPLE)
    return True


def _normalize_index(index):
    if isinstance(index, list) and _list_read_as_tuple(index):
        index = tuple(index)
    if not isinstance(index, tuple):
        index = (index,)
    elif len(index) > 1 and index[-1] is Ellipsis:
        index = _without_trailing_ellipses(index)
    # a range is a sequence of integers to torch (``x[range(n), target]`` of the nn tutorial)
    return tuple(int(i.item()) if isinstance(i, Tensor) and i._ndarray.ndim == 0 and i._ndarray.dtype.kind in "iu"
                 else list(i) if isinstance(i, range) else i for i in index)


def _np_index_array(arr: np.ndarray) -> np.ndarray:
    return arr.astype(np.bool_) if arr.dtype == np.uint8 else arr   # a byte tensor is a mask to torch


def _np_index(index):
    """The index as NumPy understands it (tensors -> arrays; lists -> arrays of ints/bools), knowing
    the tensors behind its arrays (a ``_TensorIndex``)."""
    out, sources = [], []
    for item in index:
        if isinstance(item, Tensor):
            arr = item._ndarray
            if arr.dtype.kind not in "iub":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            if arr.dtype == np.uint8:
                from ..autograd._warn_once import warn_at_user_frame
                warn_at_user_frame("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool "
                                   "instead.")
            out.append(_np_index_array(arr))
            sources.append(item)
        elif isinstance(item, (list, tuple)):
            arr = np.asanyarray([i._ndarray if isinstance(i, Tensor) else i for i in item])
            if arr.size == 0 and arr.dtype.kind == "f":
                arr = arr.astype(np.int64)   # ``x[[]]``: torch reads an empty list as an empty long index
            if arr.dtype.kind not in "iub":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            out.append(arr)
            sources.append(wrap(arr))
        elif isinstance(item, str):
            raise TypeError("new(): invalid data type 'str'")   # torch reads a string as a sequence to convert
        elif item is not None and item is not Ellipsis and not isinstance(item, (slice, numbers.Integral, np.ndarray)):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {type(item).__name__})")
        else:
            out.append(item)
            sources.append(None)
    return _TensorIndex(out, sources)


class _TensorIndex(tuple):
    """An index in NumPy's form that knows the tensors torch saves for it: ``sources[i]`` is the
    tensor behind item ``i`` (the index tensor itself, or one made from a list), None for a slice,
    an integer, None or an Ellipsis."""

    def __new__(cls, items, sources):
        index = super().__new__(cls, items)
        index.sources = tuple(sources)
        return index


class _IndexNode(Node):
    """A node of an indexing op: it saves the index tensors as torch does (pack hooks see them, an
    in-place change of one is refused, a backward frees them), keeping the rest of the index as is.
    An index without known tensors (an op's own NumPy index) is kept, unsaved."""

    __slots__ = ("index", "index_slots")

    def keep_index(self, npi) -> None:
        sources = getattr(npi, "sources", None)
        if sources is None:
            self.index, self.index_slots = npi, None
            return
        self.index = tuple(None if t is not None else item for item, t in zip(npi, sources))
        self.index_slots = tuple(i for i, t in enumerate(sources) if t is not None)
        self.save(*[t for t in sources if t is not None])

    def index_tensors(self) -> list:
        """One entry per index item, None where no tensor was saved (torch's ``_saved_indices`` as a tuple)."""
        tensors = [None] * len(self.index)
        for i, t in zip(self.index_slots or (), self.saved()):
            tensors[i] = t
        return tensors

    def _index_tuple(self) -> tuple:
        return tuple(self.index_tensors())

    @property
    def _raw_saved_indices(self) -> tuple:
        """torch's ``_raw_saved_indices``: the SavedTensor of each index item, an empty one (whose
        ``register_hooks`` refuses) where no tensor was saved."""
        if self._saved is None:
            self.saved()   # raises torch's error for freed saved tensors
        raw = [SavedTensor.of_none() for _ in self.index]
        for i, saved in zip(self.index_slots or (), self._saved):
            raw[i] = saved
        return tuple(raw)

    def kept_index(self):
        if self.index_slots is None:
            return self.index
        tensors = self.index_tensors()
        items = [item if t is None else _np_index_array(t._ndarray) for item, t in zip(self.index, tensors)]
        return _TensorIndex(items, tensors)


class IndexBackward0(_IndexNode):
    __slots__ = ("in_shape",)
    saved_values = {"indices": _IndexNode._index_tuple, "self_sym_sizes": lambda n: n.in_shape}

    def apply(self, grads):
        return (index_put_accumulate(grads[0], self.in_shape, self.kept_index()),)


class IndexPutAccumulateNode(_IndexNode):
    __slots__ = ()
    saved_values = {"indices": _IndexNode._index_tuple, "accumulate": lambda n: True}

    def apply(self, grads):
        return (_take_at(grads[0], self.kept_index()),)


IndexPutAccumulateNode.__name__ = IndexPutAccumulateNode.__qualname__ = "IndexPutBackward0"  # torch's grad_fn name


def index_put_accumulate(g: Tensor, shape, index) -> Tensor:
    """zeros(shape) with ``g`` added at ``index`` (repeated indices add up); differentiable."""
    buf = np.zeros(shape, dtype=g._ndarray.dtype)
    np.add.at(buf, index, g._ndarray)
    out = wrap(buf)
    if GRAD.enabled and g._requires_grad:
        record_op(IndexPutAccumulateNode, (g,), out).keep_index(index)
    return out


def _take_at(g: Tensor, npi) -> Tensor:
    """``g[npi]`` for an index already in NumPy's form, recorded (IndexBackward0) when a graph is
    being built: backward formulas use it so that their results stay differentiable."""
    result = wrap(g._ndarray[npi].copy(order="K"))
    if GRAD.enabled and g._requires_grad:
        node = record_op(IndexBackward0, (g,), result)
        node.in_shape = g._ndarray.shape
        node.keep_index(npi)
    return result


def _check_masks(shape, index) -> None:
    """torch's error for a boolean mask whose shape does not match the dimensions it indexes. torch
    applies the basic items first, so the shape it reports is the one they leave."""
    shape = list(shape)
    consumed = sum(_dims_taken(i) for i in index if i is not None and i is not Ellipsis)
    dim = 0
    for item in index:
        if item is None:
            shape.insert(dim, 1)
            dim += 1
        elif item is Ellipsis:
            dim += len(shape) - consumed
        elif isinstance(item, slice):
            shape[dim] = len(range(*item.indices(shape[dim])))
            dim += 1
        elif isinstance(item, (numbers.Integral, np.integer)) and not isinstance(item, bool):
            del shape[dim]
            consumed -= 1
        elif isinstance(item, Tensor) and item._ndarray.dtype.kind == "b":
            for j, size in enumerate(item._ndarray.shape):
                if dim + j < len(shape) and size != shape[dim + j]:
                    raise IndexError(f"The shape of the mask {list(item._ndarray.shape)} at index {j} does not match "
                                     f"the shape of the indexed tensor {shape} at index {dim + j}")
            dim += item._ndarray.ndim
        else:
            dim += 1


def _dims_taken(item) -> int:
    return item._ndarray.ndim if isinstance(item, Tensor) and item._ndarray.dtype.kind == "b" else 1


def _is_integer(item) -> bool:
    return isinstance(item, (numbers.Integral, np.integer)) and not isinstance(item, bool)


def _changes_view(item) -> bool:
    """Whether a basic index item makes a view of its own (a full slice and an Ellipsis do not)."""
    return item is None or _is_integer(item) or (isinstance(item, slice) and item != slice(None))


def _split_views(index):
    """torch applies an index's integers, slices and Nones as views before its tensor and list items
    (so the graph has their view nodes, and NumPy, which counts integers among the advanced items,
    would move the result's dimensions when a slice stands between them): (the basic part, the
    advanced rest to apply to its result), or None when the index mixes no such item with advanced
    ones."""
    if not any(_changes_view(i) for i in index) or all(_is_basic(i) for i in index):
        return None
    basic, rest = [], []
    for item in index:
        if _is_basic(item) and not isinstance(item, Tensor):
            basic.append(item)
            if not _is_integer(item):
                rest.append(Ellipsis if item is Ellipsis else slice(None))
        else:
            spans = item._ndarray.ndim if isinstance(item, Tensor) and item._ndarray.dtype.kind == "b" else (
                np.asanyarray(item).ndim if isinstance(item, (list, tuple)) and np.asanyarray(item).dtype.kind == "b" else 1)
            basic.extend([slice(None)] * spans)
            rest.append(item)
    return tuple(basic), tuple(rest)


def _torch_index_error(exc: IndexError) -> IndexError:
    """NumPy's IndexError in torch's words."""
    text = str(exc)
    if text.startswith("shape mismatch: indexing arrays could not be broadcast together with shapes"):
        import re
        shapes = [f"[{', '.join(n.strip() for n in group.split(',') if n.strip())}]"
                  for group in re.findall(r"\(([\d,\s]*)\)", text)]
        return IndexError(f"shape mismatch: indexing tensors could not be broadcast together with shapes "
                          f"{', '.join(shapes)}")
    return IndexError(text.replace("axis", "dimension"))


def getitem(x: Tensor, index) -> Tensor:
    index = _normalize_index(index)
    if all(_is_basic(i) for i in index):
        return basic_index(x, index)
    split = _split_views(index)
    if split is not None:
        return getitem(basic_index(x, split[0]), split[1])
    npi = _np_index(index)
    try:
        data = x._ndarray[npi]
    except IndexError as e:
        _check_masks(x._ndarray.shape, index)
        raise _torch_index_error(e) from None
    # a method call: a meta array copies as meta. NumPy lays x[:, idx] out column-major; torch's result of
    # a C-contiguous input is C-contiguous (torch_geometric views it flat)
    result = wrap(data.copy(order="C" if x._ndarray.flags.c_contiguous else "K"))
    if GRAD.enabled and x._requires_grad:
        node = record_op(IndexBackward0, (x,), result)
        node.in_shape = x._ndarray.shape
        node.keep_index(npi)
    return result


class IndexPutBackward0(_IndexNode):
    __slots__ = ("value_shape", "accumulate")
    saved_values = {"indices": _IndexNode._index_tuple, "accumulate": lambda n: n.accumulate}

    def apply(self, grads):
        g = grads[0]
        gx = gv = None
        index = self.kept_index()
        if self._should_compute_output(0):
            gx = g if self.accumulate else index_put_zero(g, index)
        if self._should_compute_output(1):
            gv = sum_to_shape(_take_at(g, index), self.value_shape)
        return gx, gv


def _index_put(x: Tensor, index, value, accumulate=False) -> Tensor:
    """Out-of-place ``index_put``: a copy of ``x`` with ``value`` written (or added) at ``index``."""
    value_t = value if isinstance(value, Tensor) else None
    vdata = value._ndarray if value_t is not None else value
    data = x._ndarray.copy()
    if accumulate:
        np.add.at(data, index, vdata)
    else:
        data[index] = vdata
    result = wrap(data)
    if GRAD.enabled and (x._requires_grad or (value_t is not None and value_t._requires_grad)):
        node = record_op(IndexPutBackward0, (x, value_t), result)
        node.keep_index(index)
        node.value_shape = value_t._ndarray.shape if value_t is not None else ()
        node.accumulate = accumulate
    return result


def index_put_zero(g: Tensor, index) -> Tensor:
    return _index_put(g, index, 0.0)


def setitem(x: Tensor, index, value) -> None:
    if not isinstance(value, (Tensor, numbers.Number, np.bool_)):
        from .._argcheck import type_name
        raise TypeError(f"can't assign a {type_name(value)} to a {x.type()}")
    index = _normalize_index(index)
    source_dtype = None
    if isinstance(value, Tensor) and value._ndarray.dtype != x._ndarray.dtype:
        source_dtype = value._ndarray.dtype
        if value._ndarray.size != 1 or not any(isinstance(i, Tensor) and i._ndarray.dtype == np.bool_ for i in index):
            source_dtype = (source_dtype, "index_put")   # a write through index_put keeps the dtype check
        value = value.to(x.dtype)
    if isinstance(value, Tensor) and value._ndarray.ndim and value._ndarray.shape[0] == 1:
        # torch drops the value's leading size-1 dimensions before broadcasting it into the target
        shape = value._ndarray.shape
        lead = next((i for i, n in enumerate(shape) if n != 1), len(shape))
        value = value.reshape(shape[lead:])
    split = _split_views(index)
    if split is not None and isinstance(source_dtype, tuple) and not all(_is_basic(i) for i in split[1]):
        _refuse_index_put_dtypes(x._ndarray.dtype, source_dtype[0])
    if split is not None:
        setitem(basic_index(x, split[0]), split[1], value)
        return
    if all(_is_basic(i) for i in index):
        target = basic_index(x, index)
        if isinstance(value, Tensor):
            if value._ndarray.shape != target._ndarray.shape:
                value.expand(target._ndarray.shape)   # torch's error for a value that does not fit the target
            target.copy_(value)
        else:
            refuse_overlapping_write(target)   # torch copies the number in: an expanded target is refused
            target.fill_(value)
        return
    check_inplace(x)
    if isinstance(source_dtype, tuple):
        _refuse_index_put_dtypes(x._ndarray.dtype, source_dtype[0])
    if (not isinstance(value, Tensor) or value._ndarray.ndim == 0) and any(
            isinstance(i, Tensor) and i._ndarray.dtype == np.uint8 for i in index):
        # torch writes one value through a byte mask with masked_fill_, which takes only bool masks
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype unsigned char")
    npi = _np_index(index)
    if not isinstance(value, Tensor) and isinstance(value, numbers.Number):
        value = _dtype.checked_scalar(value, x._ndarray.dtype)
    try:
        apply_inplace(x, _index_put, npi, value, saves_self=False)
    except IndexError as e:
        raise _torch_index_error(e) from None
    except ValueError:
        value_shape = value._ndarray.shape if isinstance(value, Tensor) else np.shape(value)
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value_shape)} cannot be broadcast to "
                           f"indexing result of shape {list(x._ndarray[npi].shape)}") from None


def _check_index_put_arguments(name, indices, values):
    """torch's parser: the indices a tuple (or list) of tensors, the values a tensor (the method's
    argument positions). A whole-dimension slice passes: index_copy and index_fill address their
    dimension so."""
    from .._argcheck import check_sequence, type_name
    if isinstance(indices, (tuple, list)):
        indices = [i for i in indices if not (isinstance(i, slice) and i == slice(None))]
    check_sequence(name, indices, 0, "indices")
    if not isinstance(values, Tensor):
        raise TypeError(f"{name}(): argument 'values' (position 2) must be Tensor, not {type_name(values)}")


def _refuse_index_put_dtypes(destination, source):
    raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                       f"{scalar_type_name(destination)} for the destination and {scalar_type_name(source)} for the "
                       f"source.")


def _check_index_put_dtypes(x, values):
    if isinstance(values, Tensor) and values._ndarray.dtype != x._ndarray.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{scalar_type_name(x._ndarray.dtype)} for the destination and "
                           f"{scalar_type_name(values._ndarray.dtype)} for the source.")


@op(function=False)
def index_put_(x, indices, values, accumulate=False):
    _check_index_put_arguments("index_put_", indices, values)
    _check_index_put_dtypes(x, values)
    npi = _np_index(tuple(indices))
    return apply_inplace(x, _index_put, npi, values, accumulate, saves_self=False)


@op()
def index_put(x, indices, values, accumulate=False):
    _check_index_put_arguments("index_put", indices, values)
    _check_index_put_dtypes(x, values)
    return _index_put(x, _np_index(tuple(indices)), values, accumulate)


# ---- gather / scatter ----------------------------------------------------------------------
class GatherBackward0(Node):
    __slots__ = ("dim", "in_shape", "dim_arg", "sparse_grad")
    saved_names = ("index", "self")  # torch keeps self too (its backward reads only its sizes)
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg), "sparse_grad": lambda n: n.sparse_grad}

    def apply(self, grads):
        index = self.saved()[0]
        zeros = wrap(np.zeros(self.in_shape, dtype=grads[0]._ndarray.dtype))
        return (zeros.scatter_add(self.dim, index, grads[0]),)


def _check_index(index, name):
    if not isinstance(index, Tensor) or index._ndarray.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")


def _check_index_bounds(idx: np.ndarray, size: int, d: int) -> None:
    """torch's refusal of the first index (in order) outside ``[0, size)``: gather and scatter take
    no negative index."""
    if idx.size and (idx.min() < 0 or idx.max() >= size):
        bad = idx[(idx < 0) | (idx >= size)].flat[0]
        raise RuntimeError(f"index {int(bad)} is out of bounds for dimension {d} with size {size}")


def _check_scatter_shapes(x: Tensor, d: int, index: Tensor, src) -> None:
    """torch's rule for scatter: ``index`` no larger than ``self`` apart from ``dim``, nor than ``src``."""
    if not index._ndarray.ndim:
        return
    xs, ix = x._ndarray.shape, index._ndarray.shape
    wrong = any(i != d and n > xs[i] for i, n in enumerate(ix))
    if isinstance(src, Tensor):
        ss = src._ndarray.shape
        if wrong or any(n > ss[i] for i, n in enumerate(ix) if i < len(ss)):
            raise RuntimeError(f"Expected index {list(ix)} to be no larger than self {list(xs)} apart from dimension "
                               f"{d} and to be no larger size than src {list(ss)}")
    elif wrong:
        raise RuntimeError(f"Expected index {list(ix)} to be no larger than self {list(xs)} apart from dimension {d}")


@op()
def gather(x: Tensor, dim: int, index: Tensor, *, sparse_grad=False) -> Tensor:
    _check_index(index, "gather")
    _rules.refuse_lowprec(x._ndarray, "scatter_gather_tensor_cpu")
    d = _wrap_dim(dim, x._ndarray.ndim)
    if index._ndarray.ndim != x._ndarray.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    idx = index._ndarray
    for i, n in enumerate(idx.shape):
        if i != d and n > x._ndarray.shape[i]:
            raise RuntimeError(f"Size does not match at dimension {i} expected index {list(idx.shape)} to be no larger "
                               f"than self {list(x._ndarray.shape)} apart from dimension {d}")
    _check_index_bounds(idx, x._ndarray.shape[d] if x._ndarray.ndim else 1, d)
    src = x._ndarray[tuple(slice(0, s) if i != d else slice(None) for i, s in enumerate(idx.shape))]
    result = wrap(np.take_along_axis(src, idx, axis=d))
    if GRAD.enabled and x._requires_grad:
        node = record_op(GatherBackward0, (x,), result)
        node.dim, node.in_shape, node.dim_arg, node.sparse_grad = d, x._ndarray.shape, dim, sparse_grad
        node.save(index, x)
    return result


@op()
def take_along_dim(x, indices, dim=None):
    if dim is None:
        return gather(x.reshape(-1), 0, indices.reshape(-1))
    if indices._ndarray.dtype != np.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{scalar_type_name(indices._ndarray.dtype)}")
    d = _wrap_dim(dim, x.ndim)
    if x.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {x.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    # both broadcast against each other in every dimension but ``dim``
    sizes = list(x.shape)
    sizes[d] = indices.shape[d]
    check_broadcast(wrap(np.empty(sizes, np.bool_)), indices)
    shape = list(np.broadcast_shapes(tuple(sizes), tuple(indices.shape)))
    index_shape = list(shape)
    shape[d] = x.shape[d]
    return gather(x.expand(*shape), d, indices.expand(*index_shape))


def _scatter_positions(index: np.ndarray, d: int):
    """Full index tuples addressing, for each element of ``index``, its target in the output."""
    grids = list(np.indices(index.shape, sparse=True))
    grids[d] = index
    return tuple(grids)


class _ScatterNode(Node):
    """Backward of a scatter along ``dim``: keeps the index (``keep``)."""

    __slots__ = ("dim", "dim_arg")
    saved_names = ("index",)
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg)}

    def keep(self, d: int, dim, index: Tensor) -> None:
        self.dim, self.dim_arg = d, dim
        self.save(index)


class ScatterBackward0(_ScatterNode):
    __slots__ = ()

    def apply(self, grads):
        (index,) = self.saved()
        g = grads[0]
        gx = gs = None
        if self._should_compute_output(0):
            gx = g.scatter(self.dim, index, 0.0)
        if len(self.next_functions) > 1 and self._should_compute_output(1):
            gs = g.gather(self.dim, index)
        return gx, gs


class ScatterBackward1(ScatterBackward0):
    __slots__ = ()

    def apply(self, grads):
        (index,) = self.saved()
        return (grads[0].scatter(self.dim, index, 0.0),)


class ScatterAddBackward0(_ScatterNode):
    __slots__ = ()

    def apply(self, grads):
        (index,) = self.saved()
        g = grads[0]
        gs = g.gather(self.dim, index) if self._should_compute_output(1) else None
        return g if self._should_compute_output(0) else None, gs


def _scalar_index_as_vector(x: Tensor, index: Tensor, src):
    """torch reads a 0-d index (and a 0-d source with it) into a 1-d tensor as one of a single
    element (the tutorials' ``zeros(10).scatter_(0, tensor(y), value=1)``)."""
    if index._ndarray.ndim == 0 and x._ndarray.ndim == 1:
        index = index.reshape(1)
        if isinstance(src, Tensor) and src._ndarray.ndim == 0:
            src = src.reshape(1)
    if index._ndarray.ndim != max(x._ndarray.ndim, 1) and index._ndarray.ndim != x._ndarray.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    return index, src


def _scatter_start(x: Tensor, dim, index: Tensor, src, name: str):
    """The checked index and source, the wrapped ``dim`` and the copy of ``x``'s data to scatter into."""
    _check_index(index, name)
    if isinstance(src, Tensor) and src._ndarray.dtype != x._ndarray.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    _rules.refuse_lowprec(x._ndarray, "scatter_gather_tensor_cpu" if isinstance(src, Tensor) else "scatter_gather_scalar_cpu")
    index, src = _scalar_index_as_vector(x, index, src)
    d = _wrap_dim(dim, x._ndarray.ndim)
    _check_scatter_shapes(x, d, index, src)
    _check_index_bounds(index._ndarray, x._ndarray.shape[d] if x._ndarray.ndim else 1, d)
    return index, src, d, x._ndarray.copy()


def _sent_part(src: Tensor, index: Tensor) -> np.ndarray:
    """The part of ``src`` that a scatter sends: its leading block of ``index``'s shape."""
    return src._ndarray[tuple(slice(0, s) for s in index._ndarray.shape)]


@op(inplace=True, saves_self=False)
def scatter(x: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce=None) -> Tensor:
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if reduce is not None and isinstance(src, Tensor):
        from ..autograd._warn_once import warn_once_at_user_frame
        warn_once_at_user_frame("scatter_reduce_argument", "The reduce argument of torch.scatter with Tensor src is "
                                "deprecated and will be removed in a future PyTorch release. Use torch.scatter_reduce "
                                "instead for more reduction options.")
    index, src, d, data = _scatter_start(x, dim, index, value if src is None else src, "scatter")
    pos = _scatter_positions(index._ndarray, d)
    src_t = src if isinstance(src, Tensor) else None
    sent = src if src_t is None else _sent_part(src_t, index)
    if reduce == "add":
        np.add.at(data, pos, sent)
    elif reduce == "multiply":
        np.multiply.at(data, pos, sent)
    else:
        data[pos] = sent
    result = wrap(data)
    if GRAD.enabled and (x._requires_grad or (src_t is not None and src_t._requires_grad)):
        if src_t is not None:
            node = ScatterBackward0((edge(x), edge(src_t)))
        else:
            node = ScatterBackward1((edge(x),))
        node.keep(d, dim, index)
        record(node, result, inputs=(x, src))
    return result


@op(inplace=True, saves_self=False)
def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    index, src, d, data = _scatter_start(x, dim, index, src, "scatter_add")
    np.add.at(data, _scatter_positions(index._ndarray, d), _sent_part(src, index))
    result = wrap(data)
    if GRAD.enabled and (x._requires_grad or src._requires_grad):
        record_op(ScatterAddBackward0, (x, src), result).keep(d, dim, index)
    return result


_REDUCE_AT = {"sum": np.add, "prod": np.multiply, "mean": np.add, "amax": np.maximum, "amin": np.minimum}


def _reduce_identity(reduce: str, dtype: np.dtype):
    """The value a reduction starts from where ``include_self=False`` leaves the target out."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "b":
        return reduce == "amin"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if reduce == "amax" else info.max
    return -np.inf if reduce == "amax" else np.inf


def _scatter_reduced(x: np.ndarray, d: int, index: np.ndarray, src: np.ndarray, reduce: str, include_self: bool):
    """The forward of ``scatter_reduce`` on arrays: each target reduced with the sources sent to it
    (and itself unless ``include_self`` is False); a mean of integers rounds down, as torch's does."""
    data = x.copy()
    pos = _scatter_positions(index, d)
    values = src[tuple(slice(0, n) for n in index.shape)]
    if not include_self:
        data[pos] = _reduce_identity(reduce, data.dtype)
    _REDUCE_AT[reduce].at(data, pos, values)
    if reduce == "mean":
        counts = np.full(data.shape, 1 if include_self else 0, dtype=np.int64)
        np.add.at(counts, pos, 1)
        counts = np.maximum(counts, 1)
        data = np.floor_divide(data, counts).astype(data.dtype) if data.dtype.kind in "iu" else \
            (data / counts).astype(data.dtype)
    return data


class _ReduceIntoBackward(Node):
    """The backward of an op that reduces sources into targets of ``self`` (``scatter_reduce`` element
    by element, ``index_reduce`` slice by slice), written with differentiable ops so that under
    create_graph it is differentiated in turn. Subclasses say how the op addresses its targets:
    ``pick`` reads the targets' values for each source, ``spread`` adds sources into targets,
    ``reduce_into`` is the op itself, ``clear`` zeroes the targets."""
    __slots__ = ("dim", "dim_arg", "reduce", "include_self")
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg), "reduce": lambda n: n.reduce,
                    "include_self": lambda n: n.include_self}
    two_zeros_message = ""
    # the Tensor methods that read targets, add into them, reduce into them and zero them
    pick_method = spread_method = reduce_method = clear_method = ""

    def sources_used(self, src, index):
        return src

    def pick(self, t, index):
        return getattr(t, self.pick_method)(self.dim, index)

    def spread(self, t, index, values):
        return getattr(t, self.spread_method)(self.dim, index, values)

    def reduce_into(self, t, index, values):
        return getattr(t, self.reduce_method)(self.dim, index, values, "prod", include_self=self.include_self)

    def clear(self, t, index):
        return getattr(t, self.clear_method)(self.dim, index, 0)

    def apply(self, grads):
        index, x, src, result = self.saved()
        g, reduce = grads[0], self.reduce
        pick = self.pick
        if reduce not in _REDUCE_AT:
            raise RuntimeError(f"Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', 'amin' but got {reduce}.")
        src = self.sources_used(src, index)
        if reduce == "sum":
            gx, gs = g, pick(g, index)
        elif reduce == "mean":
            # how many values each target averages (constants: no graph under create_graph)
            counts = self.spread(wrap(np.full_like(g._ndarray, 1 if self.include_self else 0)), index,
                                 wrap(np.ones_like(src._ndarray, dtype=g._ndarray.dtype)))
            counts = counts.masked_fill(counts == 0, 1)
            gx, gs = g / counts, pick(g, index) / pick(counts, index)
        elif reduce == "prod":
            # products of everything else at a target, exact where one factor is zero
            x_nonzero = x.masked_fill(x == 0, 1)
            gx = g * self.reduce_into(x_nonzero, index, src) / x_nonzero
            src_zero = src == 0
            zeros_at = pick(self.spread(wrap(np.zeros_like(x._ndarray)), index, src_zero.to(x.dtype)), index)
            single_zero = src_zero & (zeros_at == 1)
            without_zero = self.reduce_into(x, index, src.masked_fill(single_zero, 1))
            gs = pick(g * without_zero, index).where(single_zero, pick(g * result, index) / src.masked_fill(src_zero, 1))
            if (zeros_at._ndarray > 1).any():
                gs = delayed_error(self.two_zeros_message, gs)
        else:   # amax / amin: the gradient shared evenly among the values equal to the result
            # (torch counts a target equal to the result even when include_self=False leaves it out)
            x_wins = (x == result).to(g.dtype)
            src_wins = (src == pick(result, index)).to(g.dtype)
            share = g / self.spread(x_wins, index, src_wins)
            gx, gs = x_wins * share, src_wins * pick(share, index)
        if not self.include_self:
            gx = self.clear(gx, index)
        return (gx if self._should_compute_output(0) else None), (gs if self._should_compute_output(1) else None)


class ScatterReduceBackward0(_ReduceIntoBackward):
    __slots__ = ()
    saved_names = ("index", "self", "src", "result")
    two_zeros_message = ("scatter_reduce(): Double backward is unsupported for src when >1 zeros in src are scattered "
                         "to the same position in self")
    pick_method, spread_method, reduce_method, clear_method = "gather", "scatter_add", "scatter_reduce", "scatter"

    def sources_used(self, src, index):
        return src[tuple(slice(0, n) for n in index.shape)] if tuple(src.shape) != tuple(index.shape) else src


@op(inplace=True)
def scatter_reduce(x, dim, index, src, reduce, *, include_self=True):
    # torch's forward also takes "max" and "min" (its backward then refuses them)
    forward_reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)
    if forward_reduce not in _REDUCE_AT:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if not isinstance(index, Tensor) or index._ndarray.dtype.kind not in "iu":
        raise RuntimeError("scatter(): Expected dtype int32/int64 for index")
    if src._ndarray.dtype != x._ndarray.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    _rules.refuse_lowprec(x._ndarray, f"scatter_gather_tensor_cpu_reduce_{forward_reduce}"
                          if forward_reduce in ("amax", "amin", "mean") else "scatter_gather_tensor_cpu")
    kind = x._ndarray.dtype.kind
    if (forward_reduce == "mean" and kind == "b") or (forward_reduce in ("amax", "amin") and kind == "c"):
        raise NotImplementedError(f"\"scatter_gather_tensor_cpu_reduce_{forward_reduce}\" not implemented for "
                                  f"'{scalar_type_name(x._ndarray.dtype)}'")
    d = _wrap_dim(dim, x._ndarray.ndim)
    size = x._ndarray.shape[d] if x._ndarray.ndim else 1
    if index._ndarray.size and (index._ndarray.max() >= size or index._ndarray.min() < -size):
        bad = int(index._ndarray.max()) if index._ndarray.max() >= size else int(index._ndarray.min())
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size {size}")
    result = wrap(_scatter_reduced(x._ndarray, d, index._ndarray, src._ndarray, forward_reduce, include_self))
    if GRAD.enabled and (x._requires_grad or src._requires_grad):
        node = record_op(ScatterReduceBackward0, (x, src), result)
        node.dim, node.dim_arg, node.reduce, node.include_self = d, dim, reduce, include_self
        node.save(index, x, src, output=result)
    return result


class IndexSelectBackward0(Node):
    __slots__ = ("dim", "in_shape", "dim_arg")
    saved_names = ("index",)
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg), "self_sym_sizes": lambda n: n.in_shape}

    def apply(self, grads):
        (index,) = self.saved()
        zeros = wrap(np.zeros(self.in_shape, dtype=grads[0]._ndarray.dtype))
        return (zeros.index_add(self.dim, index, grads[0]),)


@op()
def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    d = _wrap_dim(dim, x._ndarray.ndim)
    if index._ndarray.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index._ndarray.dtype.kind not in "iu":
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    result = wrap(np.take(x._ndarray, index._ndarray.reshape(-1), axis=d) if x._ndarray.ndim else x._ndarray.copy())
    if GRAD.enabled and x._requires_grad:
        node = record_op(IndexSelectBackward0, (x,), result)
        node.dim, node.in_shape, node.dim_arg = d, x._ndarray.shape, dim
        node.save(index)
    return result


class IndexAddBackward0(Node):
    __slots__ = ("dim", "alpha", "dim_arg", "source_dim")
    saved_names = ("index", "source")  # torch keeps source too (for its sizes)
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg), "alpha": lambda n: n.alpha,
                    "source_dim": lambda n: n.source_dim}

    def apply(self, grads):
        index = self.saved()[0]
        g = grads[0]
        gs = g.index_select(self.dim, index) * self.alpha if self._should_compute_output(1) else None
        return g if self._should_compute_output(0) else None, gs


@op(inplace=True, saves_self=False)
def index_add(x: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    if index._ndarray.ndim > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: {index._ndarray.ndim} with type: "
                         f"{scalar_type_name(index._ndarray.dtype)} and size: {list(index._ndarray.shape)}")
    if index._ndarray.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{scalar_type_name(index._ndarray.dtype)}")
    if source._ndarray.dtype != x._ndarray.dtype:
        raise RuntimeError(f"index_add_(): self ({scalar_type_name(x._ndarray.dtype)}) and source "
                           f"({scalar_type_name(source._ndarray.dtype)}) must have the same scalar type")
    _rules.refuse_float8(x._ndarray, "scatter_gather_tensor_cpu")
    d = _wrap_dim(dim, x._ndarray.ndim)
    _check_index_add_shapes(x._ndarray.shape, d, index._ndarray, source._ndarray.shape)
    data = x._ndarray.copy()
    moved = np.moveaxis(data, d, 0) if data.ndim else data.reshape(1)
    added = source._ndarray * alpha if alpha != 1 else source._ndarray
    np.add.at(moved, index._ndarray.reshape(-1), np.moveaxis(added, d, 0) if added.ndim else added.reshape(1))
    result = wrap(data)
    if GRAD.enabled and (x._requires_grad or source._requires_grad):
        node = record_op(IndexAddBackward0, (x, source), result)
        node.dim, node.alpha, node.dim_arg, node.source_dim = d, alpha, dim, source._ndarray.ndim
        node.save(index, source)
    return result


def _check_index_add_shapes(shape, d, index, source_shape) -> None:
    """torch's checks of index_add's operands: one index per slice of ``source`` along ``d``, the
    shapes equal apart from ``d``, the indices within ``self``."""
    if not (d == 0 or d < len(source_shape)):
        raise RuntimeError(f"index_add_(): Indexing dim {d} is out of bounds of the source tensor with dim "
                           f"{len(source_shape)}")
    along = source_shape[d] if source_shape else 1
    if index.size != along:
        raise RuntimeError(f"index_add_(): Number of indices ({index.size}) should be equal to source.size(dim): "
                           f"({along}), for dim: {d}")
    mine, theirs = tuple(shape), tuple(source_shape)
    if mine and theirs:
        mine, theirs = mine[:d] + mine[d + 1:], theirs[:d] + theirs[d + 1:]
    if mine != theirs:
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. Got "
                           f"self.shape = {list(shape)} source.shape = {list(source_shape)}")
    size = shape[d] if shape else 1
    if index.size and (index.min() < 0 or index.max() >= size):
        raise IndexError("index out of range in self")


def _masked_fill_grad(g, mask):
    return g.masked_fill(mask, 0.0)


class MaskedFillBackward0(Node):
    """masked_fill with a number value. A mask larger than ``self`` broadcasts it: its gradient is
    summed back to its shape."""

    __slots__ = ("self_shape",)
    saved_names = ("mask",)

    def apply(self, grads):
        (mask,) = self.saved()
        return (sum_to_shape(_masked_fill_grad(grads[0], mask), self.self_shape),)


class MaskedFillBackward1(MaskedFillBackward0):
    """masked_fill with a 0-d tensor value, which gets the masked part of the gradient, summed."""

    __slots__ = ()

    def apply(self, grads):
        (mask,) = self.saved()
        return (sum_to_shape(_masked_fill_grad(grads[0], mask), self.self_shape) if self._should_compute_output(0) else None,
                (grads[0] * mask).sum() if self._should_compute_output(1) else None)


@op(inplace=True, saves_self=False)
def masked_fill(x: Tensor, mask: Tensor, value) -> Tensor:
    if x._ndarray.dtype in _rules.LOWPREC:  # float8, float4, complex32
        _rules.refuse_lowprec(x._ndarray, "masked_fill")
    mask = as_tensor_arg(mask)
    if mask._ndarray.dtype != np.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{cpp_type_name(mask._ndarray.dtype)}")
    vt = value if isinstance(value, Tensor) else None
    if vt is not None and vt._ndarray.ndim != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{vt._ndarray.ndim} dimension(s).")
    v = vt._ndarray if vt is not None else _dtype.checked_scalar(value, x._ndarray.dtype)
    check_broadcast(mask, x)   # the result takes the broadcast shape (in place, apply_inplace refuses a larger one)
    data = np.where(mask._ndarray, np.asanyarray(v).astype(x._ndarray.dtype), x._ndarray)
    result = wrap(np.ascontiguousarray(data).reshape(data.shape))   # (NumPy's makes a 0-d array 1-d)
    if GRAD.enabled and (x._requires_grad or (vt is not None and vt._requires_grad)):
        if vt is not None:
            node = MaskedFillBackward1((edge(x), edge(vt)))
        else:
            node = MaskedFillBackward0((edge(x),))
        node.self_shape = x._ndarray.shape
        node.save(mask)
        record(node, result, inputs=(x, value))
    return result


class MaskedSelectBackward0(Node):
    __slots__ = ("in_shape",)
    saved_names = ("mask", "self")  # torch keeps self too (for its sizes)

    def apply(self, grads):
        mask = self.saved()[0]
        m = np.broadcast_to(mask._ndarray, self.in_shape)
        return (index_put_accumulate(grads[0], self.in_shape, np.nonzero(m)),)


@op()
def masked_select(x: Tensor, mask: Tensor) -> Tensor:
    check_broadcast(mask, x)
    m = np.broadcast_to(mask._ndarray, np.broadcast_shapes(mask._ndarray.shape, x._ndarray.shape))
    xd = np.broadcast_to(x._ndarray, m.shape)
    result = wrap(xd[m].copy())
    if GRAD.enabled and x._requires_grad:
        node = record_op(MaskedSelectBackward0, (x,), result)
        node.in_shape = x._ndarray.shape
        node.save(mask, x)
    return result


@op()
def nonzero(x, *, as_tuple=False):
    if x._ndarray.dtype in _rules.LOWPREC:  # float8, float4, complex32
        _rules.refuse_lowprec(x._ndarray, "nonzero_count_cpu")
    if x._ndarray.ndim == 0:  # a 0-d input counts as one element with no coordinates
        found = np.flatnonzero(x._ndarray.reshape(1))
        if as_tuple:
            return (wrap(found.astype(np.int64)),)
        return wrap(np.zeros((found.size, 0), np.int64))
    idx = np.nonzero(x._ndarray)
    if as_tuple:
        return tuple(wrap(i.astype(np.int64)) for i in idx)
    return wrap(np.stack(idx, axis=1).astype(np.int64) if idx else np.zeros((0, 0), np.int64))


@op()
def argwhere(x):
    return nonzero(x)


__all__ = module_all(globals())


WRITES_ONE_VALUE.update((masked_fill, _index_put))
