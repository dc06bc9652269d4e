"""View ops (results share memory with their input) and in-place ops (which rewrite history).

A view keeps ``_base`` (the tensor owning the memory) and shares its version counter. An
in-place op on a view rewrites the base's history with a CopySlices node, exactly like torch,
and the views' grad_fn is regenerated lazily (AsStridedBackward0) when their version moved on.
"""
from __future__ import annotations

import re

import builtins
import math

import weakref

import numpy as np

from .. import _dtype
from .._tensor import Tensor, _wrap_dim, wrap
from ..autograd.function import view_inplace_error_head
from ..autograd.grad_mode import InferenceCounter
from ..autograd.graph import _FREED_MESSAGE, Node, _running_tasks, saved_dim
from ._declare import _InputShapeNode, module_all, op, record_op
from ._base import GRAD, _PassThroughNode, edge, record, sum_to_shape


def _records_view(x: Tensor) -> bool:
    """Whether a view of ``x`` gets a node: under grad mode, of a tensor requiring grad that is no
    inference tensor (torch gives a view of an inference tensor no history, even outside inference_mode)."""
    return GRAD.enabled and x._requires_grad and x._version_counter.__class__ is not InferenceCounter


def make_view(x: Tensor, data: np.ndarray, node_cls=None, **attrs) -> Tensor:
    """A Tensor over ``data`` (a NumPy view of ``x``'s memory) registered as a view of ``x``."""
    out = wrap(data)
    # a view of an inference tensor is no view to autograd (no base, no history: it requires no grad
    # even outside inference_mode; detach_ works), as in torch
    of_inference = x._version_counter.__class__ is InferenceCounter
    out._base_value = None if of_inference else x._base_value if x._base_value is not None else x
    out._version_counter = x._version_counter
    out._view_version = x._version_counter[0]
    if node_cls is not None and _records_view(x):
        node = record_op(node_cls, (x,), out)
        for k, v in attrs.items():
            setattr(node, k, v)
        if x.__dict__:
            error = x.__dict__.get("_inplace_error")
            if type(error) is tuple:  # a view of a custom Function's view inherits its restriction
                out.__dict__["_inplace_error"] = (error[0], node, 0)
    elif node_cls is not None and out._base_value is not None and out._base_value._requires_grad:
        # a view made under no_grad (or inference_mode) of a tensor whose base requires grad requires
        # grad too, as in torch (which asks the base): a leaf without grad_fn that no gradient
        # reaches, which must not be modified in place under grad mode (nor used after its base was)
        out._requires_grad = True
        out.__dict__["_inplace_error"] = (inference_view_message if GRAD.inference else no_grad_view_message,
                                          None, 0)
    elif node_cls is not None and out._base_value is not None and not GRAD.enabled:
        # torch remembers that the view was made without grad mode: should the view be made to require
        # grad later, an in-place change of it (or of a view of it made then) is refused. Unlike the
        # views above it is a leaf that gradients do reach.
        out.__dict__["_inplace_error"] = (
            inference_view_of_plain_message if GRAD.inference else no_grad_view_of_plain_message, None, 0)
    return out


def no_grad_view_message(node, output_nr, base_modified=False, mode="no_grad", block="no_grad",
                         where="with grad mode enabled") -> str:
    what = "its base or another view of its base has been modified inplace" if base_modified \
        else "is being modified inplace"
    # a view of such a view (made under grad mode) is named by its own node, as torch names it
    head = f"A view was created in {mode} mode" if node is None else \
        f"Output {output_nr} of {re.sub(r'Backward[0-9]*$', '', node.name())} is a view of a view which was created " \
        f"in {mode} mode"
    return (f"{head} and {what} {where}. Given that this use case is "
            "ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the "
            f"inplace either both inside the {block} block (if you don't want the inplace to be tracked) or both "
            "outside (if you want the inplace to be tracked).")


def inference_view_message(node, output_nr, base_modified=False) -> str:
    return no_grad_view_message(node, output_nr, base_modified, "inference", "inference_mode", "in normal mode")


def no_grad_view_of_plain_message(node, output_nr, base_modified=False) -> str:
    """The refusal for a view made under no_grad of a tensor not requiring grad (its own function, so
    that ``is_no_grad_view`` tells it apart: gradients reach such a view once it requires grad)."""
    return no_grad_view_message(node, output_nr, base_modified)


def inference_view_of_plain_message(node, output_nr, base_modified=False) -> str:
    return inference_view_message(node, output_nr, base_modified)


def is_no_grad_view(t) -> bool:
    """A view made under no_grad or inference_mode of a tensor requiring grad (or a view of one): no
    gradient reaches it."""
    error = t.__dict__.get("_inplace_error") if t.__dict__ else None
    return type(error) is tuple and (error[0] is no_grad_view_message or error[0] is inference_view_message)


# ---- reshaping views --------------------------------------------------------------------------
class ViewBackward0(_InputShapeNode):
    __slots__ = ()

    def apply(self, grads):
        if not GRAD.enabled:
            # a plain reshape: no view bookkeeping is needed for a gradient nobody differentiates
            return (wrap(grads[0]._ndarray.reshape(self.in_shape)),)
        return (grads[0].reshape(self.in_shape),)


class ReshapeAliasBackward0(ViewBackward0):
    """A reshape of a non-contiguous tensor that its strides still allow as a view (torch's
    ``_reshape_alias``); a contiguous tensor's reshape is a plain ``view``."""
    __slots__ = ()


def _infer_shape(shape, numel):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for i, s in enumerate(shape):
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {shape}")
            known *= s
    if numel == known or (neg and known > 0 and numel % known == 0):
        if neg:
            if known == 0:   # 0 elements: any size fits the -1
                raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {shape} because the "
                                   "unspecified dimension size -1 can be any value and is ambiguous")
            shape[neg[0]] = numel // known
        return tuple(shape)
    raise RuntimeError(f"shape '{shape}' is invalid for input of size {numel}")


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(int(s) for s in shape)


@op(function=False)
def view(x: Tensor, *shape, dtype=None) -> Tensor:
    if dtype is not None:  # torch's keyword form x.view(dtype=...)
        if shape:
            raise TypeError("view() received an invalid combination of arguments: a shape and dtype=")
        shape = (dtype,)
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int, np.integer)) and not isinstance(shape[0], Tensor):
        return view_dtype(x, _dtype.to_dtype(shape[0]))
    shape = _infer_shape(_shape_args(shape), x._ndarray.size)
    data = x._ndarray
    try:
        new = data.view()
        new.shape = shape  # raises instead of copying when the strides do not allow a view
    except AttributeError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.") from None
    return make_view(x, new, ViewBackward0, in_shape=data.shape)


def view_dtype(x, dt):
    from .._dtype import scalar_type_name
    data = x._ndarray
    if dt.itemsize != data.itemsize:
        names = f"{scalar_type_name(data.dtype)} as {scalar_type_name(dt.np)} (different element sizes)"
        if not data.ndim:
            raise RuntimeError(f"self.dim() cannot be 0 to view {names}")
        if data.strides[-1] != data.itemsize and data.shape[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 to view {names}, but got {data.strides[-1] // data.itemsize}")
        if dt.itemsize > data.itemsize and data.shape[-1] % (dt.itemsize // data.itemsize):
            raise RuntimeError(f"self.size(-1) must be divisible by {dt.itemsize // data.itemsize} to view {names}, "
                               f"but got {data.shape[-1]}")
    return make_view(x, data.view(dt.np))


@op()
def reshape(x: Tensor, *shape) -> Tensor:
    shape = _infer_shape(_shape_args(shape), x._ndarray.size)
    data = x._ndarray
    contiguous = data.flags.c_contiguous
    if data.shape == shape and contiguous:
        return view(x, shape)
    try:
        new = data.view()
        new.shape = shape
        return make_view(x, new, ViewBackward0 if contiguous else ReshapeAliasBackward0, in_shape=data.shape)
    except AttributeError:
        # not expressible as a view: torch copies (clone) and reshapes the copy (not a view of it)
        from .linalg import _unsafe_view
        return _unsafe_view(x.clone(memory_format="torch.contiguous_format"), shape)


@op(function=False)
def view_as(x, other):
    return view(x, other._ndarray.shape)


@op(function=False)
def reshape_as(x, other):
    return reshape(x, other._ndarray.shape)


@op()
def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    nd = x._ndarray.ndim
    if nd == 0:
        return reshape(x, (1,))
    s, e = _wrap_dim(start_dim, nd), _wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return x
    shape = x._ndarray.shape
    return reshape(x, shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])


@op()
def unflatten(x: Tensor, dim: int, sizes) -> Tensor:
    d = _wrap_dim(dim, x._ndarray.ndim)
    shape = x._ndarray.shape
    if not len(sizes):
        raise RuntimeError("unflatten: sizes must be non-empty")
    try:
        sizes = _infer_shape(tuple(sizes), shape[d])
    except RuntimeError as exc:
        if "is invalid for input of size" not in str(exc):
            raise RuntimeError(f"unflatten got an unexpected error:\n{exc}") from None
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} "
                           f"({shape[d]}) in the input tensor") from None
    return view(x, shape[:d] + sizes + shape[d + 1:])


class SqueezeBackward0(_InputShapeNode):
    __slots__ = ("dim_arg",)

    def apply(self, grads):
        return (grads[0].reshape(self.in_shape),)


class SqueezeBackward1(SqueezeBackward0):
    __slots__ = ()
    saved_values = {"self_sym_sizes": lambda n: n.in_shape, "dim": lambda n: saved_dim(n.dim_arg)}


class SqueezeBackward2(SqueezeBackward0):
    __slots__ = ()
    saved_values = {"self_sym_sizes": lambda n: n.in_shape, "dim": lambda n: saved_dim(tuple(n.dim_arg))}


@op()
def squeeze(x: Tensor, dim=None) -> Tensor:
    shape = x._ndarray.shape
    if dim is None:
        new = tuple(s for s in shape if s != 1)
        node_cls = SqueezeBackward0
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = {_wrap_dim(d, len(shape)) for d in dims}
        new = tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))
        node_cls = SqueezeBackward1 if isinstance(dim, int) else SqueezeBackward2
    return make_view(x, x._ndarray.reshape(new), node_cls, in_shape=shape, dim_arg=dim)


class UnsqueezeBackward0(Node):
    __slots__ = ("dim", "dim_arg")
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg)}

    def apply(self, grads):
        return (grads[0].squeeze(self.dim),)


@op()
def unsqueeze(x: Tensor, dim: int) -> Tensor:
    d = _wrap_dim(dim, x._ndarray.ndim + 1)
    return make_view(x, np.expand_dims(x._ndarray, d), UnsqueezeBackward0, dim=d, dim_arg=dim)


# ---- permutations ---------------------------------------------------------------------------
class PermuteBackward0(Node):
    __slots__ = ("dims", "dims_arg")
    saved_values = {"dims": lambda n: saved_dim(n.dims_arg)}

    def apply(self, grads):
        return (grads[0].permute(tuple(np.argsort(self.dims))),)


@op()
def permute(x: Tensor, *dims) -> Tensor:
    dims = _shape_args(dims)
    nd = x._ndarray.ndim
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match "
                           f"the length of the desired ordering of dimensions i.e. input.dim() = {nd} is not "
                           f"equal to len(dims) = {len(dims)}")
    dims_arg, dims = dims, tuple(_wrap_dim(d, nd) for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return make_view(x, x._ndarray.transpose(dims), PermuteBackward0, dims=dims, dims_arg=dims_arg)


class TransposeBackward0(Node):
    __slots__ = ("d0", "d1", "dims_arg")
    saved_values = {"dim0": lambda n: saved_dim(n.dims_arg[0]), "dim1": lambda n: saved_dim(n.dims_arg[1])}

    def apply(self, grads):
        return (grads[0].transpose(self.d0, self.d1),)


@op(aliases=("swapaxes", "swapdims"))
def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    nd = x._ndarray.ndim
    d0, d1 = _wrap_dim(dim0, nd), _wrap_dim(dim1, nd)
    return make_view(x, np.swapaxes(x._ndarray, d0, d1), TransposeBackward0, d0=d0, d1=d1,
                     dims_arg=(dim0, dim1))


swapaxes = swapdims = transpose


class TBackward0(Node):
    __slots__ = ()

    def apply(self, grads):
        if not GRAD.enabled:
            return (wrap(grads[0]._ndarray.T),)
        return (grads[0].t(),)


@op()
def t(x: Tensor) -> Tensor:
    if x._ndarray.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x._ndarray.ndim}D")
    return make_view(x, x._ndarray.T, TBackward0)


def T_property(x: Tensor) -> Tensor:
    nd = x._ndarray.ndim
    if nd < 2:
        return x
    return permute(x, tuple(range(nd - 1, -1, -1)))


def H_property(x: Tensor) -> Tensor:
    """The conjugate transpose of a matrix."""
    nd = x._ndarray.ndim
    if nd == 0:
        import warnings
        warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=2)
        return x.conj()
    if nd != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {nd}-D tensor."
                           + (" For batches of matrices, consider using tensor.mH" if nd > 2 else ""))
    out = transpose(x, 0, 1)
    return out.conj() if x._ndarray.dtype.kind == "c" else out


def mH_property(x: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions."""
    if x._ndarray.ndim < 2:
        raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. Got 1-D tensor.")
    out = transpose(x, -2, -1)
    return out.conj() if x._ndarray.dtype.kind == "c" else out


def mT_property(x: Tensor) -> Tensor:
    if x._ndarray.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return transpose(x, -2, -1)


@op(aliases=("moveaxis",))
def movedim(x: Tensor, source, destination) -> Tensor:
    nd = x._ndarray.ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [_wrap_dim(s, nd) for s in src]
    dst = [_wrap_dim(d, nd) for d in dst]
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(x, tuple(order))


moveaxis = movedim


# ---- expand -----------------------------------------------------------------------------------
class ExpandBackward0(_InputShapeNode):
    __slots__ = ()

    def apply(self, grads):
        return (sum_to_shape(grads[0], self.in_shape),)


@op(function=False)
def expand(x: Tensor, *sizes) -> Tensor:
    sizes = _shape_args(sizes)
    shape = x._ndarray.shape
    if len(sizes) < len(shape):
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(shape)}}}, size={list(sizes)}): the number of sizes "
                           f"provided ({len(sizes)}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({len(shape)})")
    lead = len(sizes) - len(shape)
    for i in range(lead):
        if sizes[i] == -1:
            raise RuntimeError(f"The expanded size of the tensor ({sizes[i]}) isn't allowed in a leading, non-existing "
                               f"dimension {i}")
    target = tuple(shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    for i, s in enumerate(shape):
        if s != 1 and s != target[i + lead]:
            raise RuntimeError(f"The expanded size of the tensor ({target[i + lead]}) must match the existing size "
                               f"({s}) at non-singleton dimension {i + lead}.  Target sizes: {list(sizes)}.  "
                               f"Tensor sizes: {list(shape)}")
    if target == shape:
        data = x._ndarray.view()
    else:
        data = np.broadcast_to(x._ndarray, target)
    return make_view(x, data, ExpandBackward0, in_shape=shape)


@op(function=False)
def expand_as(x, other):
    return expand(x, other._ndarray.shape)


@op()
def broadcast_to(x, shape):
    return expand(x, shape)


# ---- slicing views ------------------------------------------------------------------------
class _IndexScatterBackward(Node):
    """Backward of a basic-index view: scatter the gradient into zeros of the input's shape."""

    __slots__ = ("in_shape", "index", "dtype")

    def apply(self, grads):
        return (index_scatter(grads[0], self.in_shape, self.index),)


class SelectBackward0(_IndexScatterBackward):
    __slots__ = ("dim_arg", "index_arg")
    saved_values = {"self_sym_sizes": lambda n: n.in_shape, "dim": lambda n: saved_dim(n.dim_arg),
                    "index": lambda n: saved_dim(n.index_arg)}


_INT64_MAX = 2 ** 63 - 1


class SliceBackward0(_IndexScatterBackward):
    # bounds: (start, end, step) as the caller gave them, None for an open end
    __slots__ = ("bounds", "dim_arg")
    saved_values = {
        "self_sym_sizes": lambda n: n.in_shape, "dim": lambda n: saved_dim(n.dim_arg),
        "start": lambda n: 0 if n.bounds[0] is None else saved_dim(n.bounds[0]),
        "end": lambda n: _INT64_MAX if n.bounds[1] is None else saved_dim(n.bounds[1]),
        "step": lambda n: 1 if n.bounds[2] is None else n.bounds[2],
    }


class AliasBackward0(_PassThroughNode):
    __slots__ = ()


class IndexScatterNode(Node):
    __slots__ = ("index",)

    def apply(self, grads):
        return (grads[0][self.index],)


IndexScatterNode.__name__ = IndexScatterNode.__qualname__ = "SelectBackwardBackward0"  # torch's grad_fn name


def index_scatter(g: Tensor, shape, index) -> Tensor:
    """zeros(shape) with ``g`` written at ``index`` (basic indexing); differentiable."""
    buf = np.zeros(shape, dtype=g._ndarray.dtype)
    buf[index] = g._ndarray
    out = wrap(buf)
    if GRAD.enabled and g._requires_grad:
        node = record_op(IndexScatterNode, (g,), out)
        node.index = index
    return out


@op()
def select(x: Tensor, dim: int, index: int) -> Tensor:
    nd = x._ndarray.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, nd)
    size = x._ndarray.shape[d]
    index = int(index)
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {d} with size {size}")
    # the trailing Ellipsis keeps NumPy returning a (0-d) view rather than a scalar copy
    idx = (slice(None),) * d + (index % size, Ellipsis)
    return make_view(x, x._ndarray[idx], SelectBackward0, in_shape=x._ndarray.shape, index=idx, dim_arg=dim,
                     index_arg=index)


def slice_dim(x: Tensor, dim: int, start, stop, step=1, given=None) -> Tensor:
    """``x`` sliced along ``dim``; ``given``: the bounds as the user wrote them (torch's node reports
    those), when they differ from the normalized ones passed here."""
    d = _wrap_dim(dim, x._ndarray.ndim)
    if step is not None and step <= 0:
        raise ValueError("step must be greater than zero")
    idx = (slice(None),) * d + (slice(start, stop, step),)
    return make_view(x, x._ndarray[idx], SliceBackward0, in_shape=x._ndarray.shape, index=idx,
                     bounds=given or (start, stop, step), dim_arg=dim)


@op()
def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    d = _wrap_dim(dim, x._ndarray.ndim)
    size = x._ndarray.shape[d]
    start = int(start)
    if start < 0:
        start += size
    if start < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return slice_dim(x, dim, start, start + length)


def basic_index(x: Tensor, index: tuple) -> Tensor:
    """``x[index]`` for ints, slices, None and Ellipsis: a chain of select/slice/unsqueeze views
    in torch's order, so grad_fn and next_functions come out the same."""
    nd = x._ndarray.ndim
    n_ellipsis = builtins.sum(1 for i in index if i is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = builtins.sum(1 for i in index if i is not None and i is not Ellipsis)
    if consumed > nd:
        if nd == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
                             "in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    out = x
    dim = 0
    touched = False
    # an out-of-range error names the item's position in the index, as torch's does
    for position_in_index, item in enumerate(index):
        if item is Ellipsis:
            dim += nd - consumed
        elif item is None:
            out = unsqueeze(out, dim)
            dim += 1
            touched = True
        elif isinstance(item, slice):
            size = out._ndarray.shape[dim]
            start, stop, step = item.indices(size)
            if item.step is not None and item.step <= 0:
                raise ValueError("step must be greater than zero")
            if not (start == 0 and stop == size and step == 1):
                out = slice_dim(out, dim, start, builtins.max(stop, start), step,
                                given=(item.start, item.stop, item.step))
                touched = True
            dim += 1
        else:
            position, size = int(item), out._ndarray.shape[dim]
            if not -size <= position < size:
                raise IndexError(f"index {position} is out of bounds for dimension {position_in_index} with size {size}")
            out = select(out, dim, position)
            touched = True
    if not touched:
        return make_view(x, x._ndarray.view(), AliasBackward0)
    return out


# ---- split / chunk / unbind (one node, several outputs) ------------------------------------------
class SplitBackward0(Node):
    __slots__ = ("dim", "sizes", "in_shape", "dtype", "_num_outputs", "dim_arg", "split_arg")
    saved_values = {"self_sym_sizes": lambda n: n.in_shape, "dim": lambda n: saved_dim(n.dim_arg),
                    "split_size": lambda n: n.split_arg}

    def apply(self, grads):
        parts = []
        for g, size in zip(grads, self.sizes):
            if g is None:
                shape = list(self.in_shape)
                shape[self.dim] = size
                g = wrap(np.zeros(shape, dtype=self.dtype))
            parts.append(g)
        from .shape import cat
        return (cat(parts, self.dim),)


class SplitWithSizesBackward0(SplitBackward0):
    __slots__ = ()
    saved_values = {"self_sym_sizes": lambda n: n.in_shape, "dim": lambda n: saved_dim(n.dim_arg),
                    "split_sizes": lambda n: tuple(n.sizes)}


class UnbindBackward0(Node):
    __slots__ = ("dim", "in_shape", "dtype", "_num_outputs", "dim_arg")
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg)}

    def apply(self, grads):
        shape = list(self.in_shape)
        del shape[self.dim]
        parts = [g if g is not None else wrap(np.zeros(shape, dtype=self.dtype)) for g in grads]
        from .shape import stack
        return (stack(parts, self.dim),)


def _multi_view_message(node, output_nr, base_modified=False) -> str:
    """torch's error for an in-place change of an output of split/unbind/chunk (or of a view of one)."""
    return (view_inplace_error_head(node, output_nr, base_modified) + " This view is the output of a function "
            "that returns multiple views. Such functions do not allow the output views to be modified inplace. "
            "You should replace the inplace operation by an out-of-place one.")


def _multi_view(x, pieces, node):
    outs = []
    for i, data in enumerate(pieces):
        out = wrap(data)
        out._base_value = None if x._version_counter.__class__ is InferenceCounter else x._base_value if x._base_value is not None else x
        out._version_counter = x._version_counter
        out._view_version = x._version_counter[0]
        if node is not None or (GRAD.enabled and out._base_value is not None):
            # without history too: should an operand requiring grad be written into it, torch refuses
            out.__dict__["_inplace_error"] = (_multi_view_message, node, i)
        outs.append(out)
    if node is not None:
        node._num_outputs = len(outs)
        record(node, *outs, inputs=(x,))
    return tuple(outs)


@op()
def split(x: Tensor, split_size_or_sections, dim: int = 0):
    pieces, node = _split_pieces(x, split_size_or_sections, dim, SplitBackward0, SplitWithSizesBackward0)
    return _multi_view(x, pieces, node)


class UnsafeSplitBackward0(SplitBackward0):
    __slots__ = ()


class UnsafeSplitWithSizesBackward0(SplitWithSizesBackward0):
    __slots__ = ()


def unsafe_split_pieces(x: Tensor, split_size_or_sections, dim: int = 0):
    """The pieces of ``split`` as tensors that share ``x``'s memory but are no views to autograd: no
    ``_base``, a version counter each, so in-place ops on them are allowed (torch's ``unsafe_split``)."""
    pieces, node = _split_pieces(x, split_size_or_sections, dim, UnsafeSplitBackward0, UnsafeSplitWithSizesBackward0)
    outs = tuple(wrap(data) for data in pieces)
    if node is not None:
        node._num_outputs = len(outs)
        record(node, *outs, inputs=(x,))
    return outs


def _split_pieces(x: Tensor, split_size_or_sections, dim, node_cls_for_size, node_cls_for_sizes):
    """The NumPy slices ``split`` cuts ``x`` into, and the node recording them (None without history)."""
    d = _wrap_dim(dim, x._ndarray.ndim)
    size = x._ndarray.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0 and size:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
        sizes = [builtins.min(step, size - i) for i in range(0, size, step)] if size else [0]
        node_cls = node_cls_for_size
    else:
        sizes = list(split_size_or_sections)
        if builtins.sum(sizes) != size:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size "
                               f"at dimension {d}), but got split_sizes={sizes}")
        node_cls = node_cls_for_sizes
    bounds = np.cumsum([0] + sizes)
    pieces = [x._ndarray[(slice(None),) * d + (slice(int(a), int(b)),)] for a, b in zip(bounds[:-1], bounds[1:])]
    node = None
    if _records_view(x):
        node = node_cls((edge(x),))
        node.dim, node.sizes, node.in_shape, node.dtype = d, sizes, x._ndarray.shape, x._ndarray.dtype
        node.dim_arg, node.split_arg = dim, split_size_or_sections
    return pieces, node


@op()
def chunk(x: Tensor, chunks: int, dim: int = 0):
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = _wrap_dim(dim, x._ndarray.ndim)
    size = x._ndarray.shape[d]
    step = -(-size // chunks) if size else 1
    return split(x, step, d)


def _tensor_split_cuts(indices_or_sections, size: int) -> list:
    """Where tensor_split cuts a dim of ``size``: the given indices (a list, or a 1-D long tensor), or
    for ``n`` sections (an int or a 0-d long tensor) the ends of all but the last, the first
    ``size % n`` sections one longer."""
    spec = indices_or_sections
    if isinstance(spec, Tensor):
        if spec._ndarray.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {spec._ndarray.ndim} dims")
        if spec._ndarray.dtype != np.int64:
            from .._dtype import scalar_type_name
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                               f"{scalar_type_name(spec._ndarray.dtype)}")
        spec = int(spec._ndarray) if spec._ndarray.ndim == 0 else [int(i) for i in spec._ndarray]
    if not isinstance(spec, int):
        return [int(i) for i in spec]
    if spec <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {spec}")
    cuts, end = [], 0
    for i in range(spec - 1):
        end += size // spec + (1 if i < size % spec else 0)
        cuts.append(end)
    return cuts


@op()
def tensor_split(x: Tensor, indices_or_sections, dim: int = 0):
    """The pieces between the cuts, each its own slice view (SliceBackward0), as in torch: pieces may
    overlap or be empty when the indices go backwards, and each may be modified in place."""
    if x._ndarray.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = _wrap_dim(dim, x._ndarray.ndim)
    size = x._ndarray.shape[d]
    cuts = _tensor_split_cuts(indices_or_sections, size)
    return tuple(slice_dim(x, d, start, end) for start, end in zip([0] + cuts, cuts + [size]))


@op()
def unbind(x: Tensor, dim: int = 0):
    d = _wrap_dim(dim, x._ndarray.ndim)
    pieces = [x._ndarray[(slice(None),) * d + (i, Ellipsis)] for i in range(x._ndarray.shape[d])]
    node = None
    if _records_view(x):
        node = UnbindBackward0((edge(x),))
        node.dim, node.in_shape, node.dtype, node.dim_arg = d, x._ndarray.shape, x._ndarray.dtype, dim
    return _multi_view(x, pieces, node)


# ---- diagonal and as_strided ----------------------------------------------------------------
class DiagonalBackward0(Node):
    __slots__ = ("in_shape", "offset", "d1", "d2", "dims_arg")
    saved_values = {"self_sym_sizes": lambda n: n.in_shape, "offset": lambda n: n.offset,
                    "dim1": lambda n: saved_dim(n.dims_arg[0]), "dim2": lambda n: saved_dim(n.dims_arg[1])}

    def apply(self, grads):
        g = grads[0]
        buf = np.zeros(self.in_shape, dtype=g._ndarray.dtype)
        view = _writable_diagonal(buf, self.offset, self.d1, self.d2)
        view[...] = g._ndarray
        out = wrap(buf)
        if GRAD.enabled and g._requires_grad:  # create_graph: the result reads back g's diagonal
            node = record_op(DiagonalBackwardBackward0, (g,), out)
            node.offset, node.d1, node.d2 = self.offset, self.d1, self.d2
        return (out,)


class DiagonalBackwardBackward0(Node):
    """Backward of DiagonalBackward0's scatter: the diagonal of the incoming gradient."""

    __slots__ = ("offset", "d1", "d2")
    saved_values = {"offset": lambda n: n.offset, "dim1": lambda n: n.d1, "dim2": lambda n: n.d2}

    def apply(self, grads):
        return (diagonal(grads[0], self.offset, self.d1, self.d2),)


def _writable_diagonal(arr, offset, d1, d2):
    """np.diagonal as a writable view (NumPy's own is read-only)."""
    idx = [slice(None)] * arr.ndim
    if offset >= 0:
        idx[d2] = slice(offset, None)
    else:
        idx[d1] = slice(-offset, None)
    sub = arr[tuple(idx)]
    n = builtins.max(builtins.min(sub.shape[d1], sub.shape[d2]), 0)
    others = [i for i in range(arr.ndim) if i not in (d1, d2)]
    shape = [sub.shape[i] for i in others] + [n]
    strides = [sub.strides[i] for i in others] + [sub.strides[d1] + sub.strides[d2]]
    return np.lib.stride_tricks.as_strided(sub, shape, strides, writeable=arr.flags.writeable)


@op()
def diagonal(x: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    nd = x._ndarray.ndim
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    data = _writable_diagonal(x._ndarray, offset, d1, d2)
    return make_view(x, data, DiagonalBackward0, in_shape=x._ndarray.shape, offset=offset, d1=d1, d2=d2,
                     dims_arg=(dim1, dim2))


def _span(a: np.ndarray):
    """(lowest byte address, one past the highest) that ``a``'s elements occupy."""
    ptr = a.__array_interface__["data"][0]
    lo = hi = ptr
    for n, s in zip(a.shape, a.strides):
        if n == 0:
            return ptr, ptr
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return lo, hi + a.itemsize


class Geometry:
    """Where a view sits in its base's memory, replayable on another array shaped like the base."""

    __slots__ = ("base_shape", "base_strides", "base_offset", "shape", "strides", "offset", "nbytes", "dtype",
                 "view_dtype")

    def __init__(self, base: np.ndarray, view: np.ndarray):
        lo, hi = _span(base)
        self.base_shape, self.base_strides = base.shape, base.strides
        self.base_offset = base.__array_interface__["data"][0] - lo
        self.shape, self.strides = view.shape, view.strides
        self.offset = view.__array_interface__["data"][0] - lo
        self.nbytes = hi - lo
        self.dtype = base.dtype
        # a view may read the base's memory as another type (the real parts of a complex tensor)
        self.view_dtype = view.dtype

    @property
    def reinterprets(self) -> bool:
        return self.view_dtype != self.dtype

    def buffers(self, dtype=None):
        """A zero buffer laid out like the base: (array shaped like the base, the view into it)."""
        dtype = self.dtype
        if self.view_dtype != dtype:
            # the two read the same bytes as different types: a gradient of a complex base read as
            # (real, imaginary) pairs is the gradient of its real view, and back
            raw = np.zeros(builtins.max(self.nbytes, 1), dtype=np.uint8)
            whole = np.ndarray(self.base_shape, dtype, buffer=raw, offset=self.base_offset,
                               strides=self.base_strides)
            part = np.ndarray(self.shape, self.view_dtype, buffer=raw, offset=self.offset, strides=self.strides)
            return whole, part
        raw = np.zeros(builtins.max(self.nbytes // dtype.itemsize, 1), dtype=dtype)
        item = dtype.itemsize
        whole = np.lib.stride_tricks.as_strided(raw[self.base_offset // item:], self.base_shape,
                                                self.base_strides, writeable=True)
        part = np.lib.stride_tricks.as_strided(raw[self.offset // item:], self.shape, self.strides,
                                               writeable=True)
        return whole, part

    def gradient_buffers(self, g: np.ndarray):
        """``buffers()`` holding a copy of ``g`` (shaped like the base). Where the base is C-contiguous
        (the common case) the copy itself is the buffer: one pass over it instead of zero-fill, copy in and
        copy out."""
        if self.view_dtype == self.dtype and self.base_offset == 0 and g.shape == self.base_shape:
            whole = np.array(g, dtype=self.dtype, order="C")
            if whole.strides == self.base_strides and whole.nbytes == self.nbytes:
                return whole, np.ndarray(self.shape, self.dtype, buffer=whole, offset=self.offset,
                                         strides=self.strides)
        whole, part = self.buffers()
        whole[...] = g
        return whole, part

    def read_view(self, g: np.ndarray) -> np.ndarray:
        """A copy of the view's elements of ``g`` (shaped like the base)."""
        if (self.view_dtype == self.dtype == g.dtype and self.base_offset == 0 and g.shape == self.base_shape
                and g.strides == self.base_strides and g.flags.c_contiguous and g.nbytes == self.nbytes):
            return np.ndarray(self.shape, self.dtype, buffer=g, offset=self.offset, strides=self.strides).copy()
        return self.gradient_buffers(g)[1].copy()


class AsStridedBackward0(Node):
    """Gradient of a view taken from its base's history (after in-place changes)."""

    # args: (size, stride, storage_offset) as torch reports them
    __slots__ = ("geometry", "args")
    saved_values = {"size": lambda n: n.args[0], "stride": lambda n: n.args[1],
                    "storage_offset": lambda n: n.args[2]}

    def apply(self, grads):
        return (strided_scatter(grads[0], self.geometry),)


class AsStridedBackwardBackward0(Node):
    """Backward of ``strided_scatter`` (itself the backward of a strided view): read the view back out."""

    __slots__ = ("geometry",)

    def apply(self, grads):
        return (strided_gather(grads[0], self.geometry),)


def strided_scatter(g: Tensor, geometry: Geometry) -> Tensor:
    """zeros shaped like the base, with ``g`` added at the view's place; differentiable."""
    whole, part = geometry.buffers(g._ndarray.dtype)
    part += g._ndarray
    out = wrap(np.ascontiguousarray(whole))
    if GRAD.enabled and g._requires_grad:
        node = record_op(AsStridedBackwardBackward0, (g,), out)
        node.geometry = geometry
    return out


def strided_gather(g: Tensor, geometry: Geometry) -> Tensor:
    """The view's place read out of ``g`` (shaped like the base); differentiable."""
    out = wrap(geometry.read_view(g._ndarray))
    if GRAD.enabled and g._requires_grad:
        node = record_op(AsStridedBackward0, (g,), out)
        node.geometry = geometry
        node.args = _strided_args(geometry)
    return out


def as_strided_node(base: Tensor, view_tensor: Tensor) -> Node:
    node = AsStridedBackward0((edge(base),))
    node.geometry = geom = Geometry(base._ndarray, view_tensor._ndarray)
    node.args = _strided_args(geom)
    return node


def _strided_args(geom: Geometry) -> tuple:
    """(size, stride, storage_offset) of a view's geometry, in elements."""
    item = geom.dtype.itemsize
    return geom.shape, tuple(s // item for s in geom.strides), (geom.offset - geom.base_offset) // item


@op()
def as_strided(x: Tensor, size, stride, storage_offset=None) -> Tensor:
    item = x._ndarray.itemsize
    base = x._ndarray if x._base_value is None else x._base_value._ndarray
    offset = storage_offset if storage_offset is not None else (
        x._ndarray.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // item
    start = np.lib.stride_tricks.as_strided(base.reshape(-1) if base.flags.c_contiguous else base.ravel(),
                                            (base.size,), (item,))
    data = np.lib.stride_tricks.as_strided(start[offset:], tuple(size), tuple(s * item for s in stride),
                                           writeable=True)
    out = make_view(x, data)
    if _records_view(x):
        node = record_op(AsStridedBackward0, (x,), out)
        node.geometry = Geometry(x._ndarray, data)
        node.args = (tuple(size), tuple(stride), storage_offset)
    return out


# ---- in-place ops -------------------------------------------------------------------------
class CopySlices(Node):
    """History of a base after an in-place op on one of its views: the op's node ``fn`` handles
    the view's part of the gradient, the rest flows to the base's previous history."""

    __slots__ = ("geometry", "fn")

    def name(self):
        return "torch::autograd::CopySlices"

    def apply(self, grads):
        g = grads[0]
        if g is None:
            return (None,) * len(self.next_functions)
        if self.fn is None:  # released by an earlier backward that did not retain the graph
            raise RuntimeError(_FREED_MESSAGE)
        whole, part = self.geometry.gradient_buffers(g._ndarray)
        view_grad = wrap(part.copy())
        if GRAD.enabled and g._requires_grad:
            view_grad = strided_gather(g, self.geometry)
        # fn's first edge leads to the view's history before the op, which no pass walks (this node's
        # leads to the base's): in a pass that wants only some gradients, fn computes that one
        # exactly when this node must (torch's CopySlices marks fn's edge in the pass so)
        view_history = self.fn.next_functions[0][0]
        if view_history is not None and _running_tasks:
            exec_info = _running_tasks[-1].exec_info
            if exec_info is not None and view_history not in exec_info and self._should_compute_output(0):
                exec_info[view_history] = True
        res = self.fn.apply([view_grad])
        if res[0] is None:
            part[...] = 0
        else:
            part[...] = res[0]._ndarray
        base_grad = wrap(whole if whole.base is None else np.array(whole))
        # differentiable when the incoming gradient or the op's own gradient (a ReLU's, which
        # depends on its saved result) requires grad
        differentiable = GRAD.enabled and (g._requires_grad or (res[0] is not None and res[0]._requires_grad))
        if differentiable and self.geometry.reinterprets:
            # differentiable form without a mask of the view's type: g less its view part, plus the new one
            geom = self.geometry
            base_grad = g - strided_scatter(strided_gather(g, geom), geom)
            if res[0] is not None:
                base_grad = base_grad + strided_scatter(res[0], geom)
        elif differentiable:
            # differentiable form: g with the view's part replaced
            mask_geom = self.geometry
            keep = strided_scatter(wrap(np.ones(mask_geom.shape, dtype=g._ndarray.dtype)), mask_geom)
            base_grad = g * (1 - keep) + (strided_scatter(res[0], mask_geom) if res[0] is not None else 0)
        return (base_grad,) + tuple(res[1:])

    def release_variables(self):
        # as torch's: the op's node goes with what it saved, and a second backward raises
        if self.fn is not None:
            self.fn.release_variables()
            self.fn = None


def check_inplace(x: Tensor, result_requires_grad: bool = False) -> None:
    """Refuse an in-place change of ``x`` as torch does. ``result_requires_grad``: another operand of
    the op requires grad, so ``x`` would after it (torch checks a view's restriction then too)."""
    if not GRAD.enabled:
        return
    if x.__dict__ and (x._requires_grad or result_requires_grad) and "_inplace_error" in x.__dict__:
        error = x.__dict__["_inplace_error"]
        raise RuntimeError(error if isinstance(error, str) else error[0](*error[1:]))
    if x._requires_grad and x._grad_fn_value is None:
        # a leaf; torch calls it a view when it was made from a view of a tensor without grad
        raise RuntimeError(f"a {'view of a ' if x._base_value is not None else ''}leaf Variable that requires grad is "
                           "being used in an in-place operation.")
    base = x._base_value
    # torch asks only whether the view's base is a leaf: a base without grad counts too (a view of it
    # that was made to require grad), and so does a view made before its base was made to require grad
    if base is not None and base._grad_fn_value is None and (x._requires_grad or x.requires_grad):
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")


# ops torch lets write one value into a tensor whose elements share memory (an expanded tensor):
# zero_, fill_ with a number, masked_fill_, index_fill_, index_put_ (the modules that define them add them)
WRITES_ONE_VALUE = set()


def rebase_view_history(x: Tensor, node: Node) -> None:
    """``node`` changed the view ``x`` in place: its base's history becomes a CopySlices around
    ``node`` (whose first input is taken to be the view), and ``x`` gets its new view node."""
    base = x._base_value
    cs = CopySlices((edge(base),) + node.next_functions[1:])
    cs.geometry = Geometry(base._ndarray, x._ndarray)
    cs.fn = node
    base._after_inplace(cs)
    base._view_version = base._version_counter[0]
    x._requires_grad = True
    x._regenerate_view_grad_fn()  # torch gives the changed view its new node at once


def apply_inplace(x: Tensor, op, *args, saves_self=True, **kwargs) -> Tensor:
    """Run ``op(x, *args)`` out of place and write the result into ``x``, rewriting its history
    (or its base's, for a view) the way torch does for ``x.op_(...)``."""
    may_overlap = op in WRITES_ONE_VALUE and not (op.__name__ == "fill" and isinstance(args[0], Tensor))
    _T = Tensor
    recording = GRAD.enabled and (x._requires_grad or builtins.any(
        isinstance(a, _T) and a._requires_grad for a in args) or builtins.any(
        isinstance(a, _T) and a._requires_grad for a in kwargs.values()))
    check_inplace(x, recording)
    if not recording:
        prev = GRAD.enabled
        GRAD.enabled = False
        try:
            result = op(x, *args, **kwargs)
        finally:
            GRAD.enabled = prev
        _write(x, result._ndarray, may_overlap)
        return x
    # the op sees x's current value and history, in storage the write below will not touch
    alias = wrap(x._ndarray.copy() if saves_self else x._ndarray)
    alias._version_counter = [0] if saves_self else x._version_counter
    if x._requires_grad:
        alias._grad_fn_value = x.grad_fn
        alias._output_nr = x._output_nr
        alias._requires_grad = True
        alias._accumulator = x._accumulator
    result = op(alias, *args, **kwargs)
    node = result._grad_fn_value
    _write(x, result._ndarray, may_overlap)
    if node is None:
        return x
    if node._saved:
        # an op that kept its output now keeps x itself: later in-place changes to x must be caught
        for saved in node._saved:
            if saved is not None and saved.is_output:
                if saved.unpack_hook is None:
                    saved.tensor = x._ndarray
                    saved.counter = x._version_counter
                    saved.version = x._version_counter[0]
                elif result._ndarray.shape == x._ndarray.shape and result._ndarray.dtype == x._ndarray.dtype:
                    # a pack hook was handed the result: what it kept of it aliases x, as torch's
                    # output is x itself (later in-place changes show through, unchecked)
                    result._ndarray, result._version_counter = x._ndarray, x._version_counter
    if x._base_value is None:
        x._after_inplace(node)
    else:
        rebase_view_history(x, node)
        if node._saved:
            for saved in node._saved:
                if saved is not None and saved.is_output:
                    # unpacked (by an unpack hook too), the output is the view with its new history; held weakly, as torch
                    # does: that history leads back to this node (a strong reference is a cycle)
                    saved.grad_fn = weakref.ref(x._grad_fn_value)
    return x


def _writable_alias(target: np.ndarray, may_overlap: bool = False) -> np.ndarray:
    """A writable array over ``target``'s memory. NumPy marks every view of an expanded (broadcast)
    array read-only; torch refuses a write only where the written tensor itself has elements sharing
    memory (a zero stride over more than one element), so one element of an expanded tensor can be set."""
    overlap = builtins.any(step == 0 and n > 1 for step, n in zip(target.strides, target.shape))
    root = target
    while isinstance(root.base, np.ndarray):
        root = root.base
    if (overlap and not may_overlap) or not root.flags.writeable or not root.flags.c_contiguous:
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")
    offset = target.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return np.ndarray(target.shape, target.dtype, buffer=root, offset=offset, strides=target.strides)


def refuse_overlapping_write(x: Tensor) -> None:
    """torch's error for writing into ``x`` where elements of ``x`` share memory."""
    if builtins.any(step == 0 and n > 1 for step, n in zip(x._ndarray.strides, x._ndarray.shape)):
        _writable_alias(x._ndarray)


def _write(x: Tensor, data: np.ndarray, may_overlap: bool = False) -> None:
    target = x._ndarray
    if data.dtype != target.dtype and not _dtype.can_cast(data.dtype, target.dtype):
        raise RuntimeError(f"result type {_dtype.scalar_type_name(data.dtype)} can't be cast to "
                           f"the desired output type {_dtype.scalar_type_name(target.dtype)}")
    if data.shape != target.shape:
        try:
            data = np.broadcast_to(data, target.shape)
        except ValueError:
            raise RuntimeError(f"output with shape {list(target.shape)} doesn't match the broadcast shape "
                               f"{list(data.shape)}") from None
    if not target.flags.writeable:
        target = _writable_alias(target, may_overlap)
        if may_overlap:
            # elements sharing memory: write only what the op changed, so that an untouched alias does
            # not write its old value back over a changed one (torch writes just the selected elements)
            np.copyto(target, data, casting="unsafe", where=data != target)
            x._version_counter[0] += 1
            return
    np.copyto(target, data, casting="unsafe")
    x._version_counter[0] += 1


__all__ = module_all(globals())
