"""Reductions and scans: sum, mean, prod, max/min, var/std, norm, logsumexp, softmax, cumsum, ..."""
from __future__ import annotations

import builtins

import numpy as np

from .. import _dtype, return_types
from ..autograd._warn_once import warn_at_user_frame
from .. import _threads as _blas
from .._tensor import Tensor, _wrap_dim, wrap
from ..autograd import grad_mode
from ..autograd.graph import Node, saved_dim
from . import _dtype_rules as _rules
from ._declare import _InputShapeNode, formula_node, module_all, op, record_op
from ._base import GRAD, as_tensor_arg, edge, float_dtype_for, record
from ._base import FP_IGNORE, fp_quiet, fp_restore, index_range, ones_vector, quiet_fp, refuse_complex

_err = quiet_fp  # NumPy reports no inf/nan arithmetic (nor does torch)


def norm_dims(dim, ndim):
    """None (all dims) or a sorted tuple of non-negative dims."""
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return None
        wrapped = [_wrap_dim(int(d), ndim) for d in dim]
        for i, d in enumerate(wrapped):
            if d in wrapped[:i]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        return tuple(sorted(wrapped)) if ndim else None  # a 0-d tensor's dim 0 (or -1) is the tensor
    wrapped = _wrap_dim(int(dim), ndim)
    return (wrapped,) if ndim else None


def _keep_shape(in_shape, dims):
    """The reduced shape with keepdim=True."""
    if dims is None:
        return (1,) * len(in_shape)
    return tuple(1 if i in dims else s for i, s in enumerate(in_shape))


def _restore_dims(in_shape, dims, keepdim, *tensors):
    """Give reduced tensors back their reduced dims (as size 1) so they broadcast against the input."""
    if keepdim:
        return tensors
    shape = _keep_shape(in_shape, dims)
    return tuple(t.reshape(shape) for t in tensors)


def _expand_grad(g: Tensor, in_shape, dims, keepdim):
    """Undo a reduction's shape change on the gradient: reshape to keepdim form, then expand."""
    if not keepdim:
        g = g.reshape(_keep_shape(in_shape, dims))
    return g.expand(in_shape)


def _numel(shape):
    return int(np.prod(shape, dtype=np.int64))


def _dims_arg(dim):
    """A reduction's dim argument as torch's nodes report it: a tuple, as passed."""
    return saved_dim(dim if dim is None or isinstance(dim, (tuple, list)) else (dim,))


class SumBackward0(_InputShapeNode):
    __slots__ = ()

    def apply(self, grads):
        return (grads[0].expand(self.in_shape),)


class SumBackward1(Node):
    __slots__ = ("in_shape", "dims", "keepdim", "dim_arg")
    saved_values = {"self_sym_sizes": lambda n: n.in_shape, "dim": lambda n: _dims_arg(n.dim_arg),
                    "keepdim": lambda n: n.keepdim}

    def apply(self, grads):
        return (_expand_grad(grads[0], self.in_shape, self.dims, self.keepdim),)


def _sum_dtype(x, dtype):
    if x._ndarray.dtype in _rules.LOWPREC:  # float8, float4, complex32
        _rules.refuse_lowprec(x._ndarray, "sum_cpu")
    if dtype is not None:
        return _dtype.to_dtype(dtype).np
    k = x._ndarray.dtype.kind
    return np.dtype(np.int64) if k in "iub" else x._ndarray.dtype


@op()
def sum(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    if not isinstance(x, Tensor):
        x = as_tensor_arg(x)
    data = x._ndarray
    dims = norm_dims(dim, data.ndim)
    out_dt = result_dt = _sum_dtype(x, dtype)
    if out_dt == np.float16 or (out_dt.kind == "V" and _dtype.is_bfloat16_np(out_dt)):
        # accumulate in float32, round the result once (as torch)
        data, out_dt = data.astype(np.float32), np.dtype(np.float32)
    token = fp_quiet(FP_IGNORE)  # inf - inf gives NaN without a warning, as in torch
    try:
        total = np.asanyarray(data.sum(dtype=out_dt) if dims is None and dim is None
                           else data.sum(axis=dims, keepdims=keepdim, dtype=out_dt))
    finally:
        fp_restore(token)
    if dims is None and dim is None:
        result = wrap(total if out_dt is result_dt else total.astype(result_dt))
        if GRAD.enabled and x._requires_grad:
            node = record_op(SumBackward0, (x,), result)
            node.in_shape = data.shape
        return result
    result = wrap(total if out_dt is result_dt else total.astype(result_dt))
    if GRAD.enabled and x._requires_grad:
        node = record_op(SumBackward1, (x,), result)
        node.in_shape, node.dims, node.keepdim, node.dim_arg = data.shape, dims, keepdim, dim
    return result


@op()
def nansum(x, dim=None, keepdim=False, *, dtype=None):
    return sum(x.masked_fill(x.isnan(), 0), dim, keepdim, dtype=dtype)


class MeanBackward0(Node):
    __slots__ = ("in_shape", "count")
    saved_values = {"self_sym_sizes": lambda n: n.in_shape, "self_sym_numel": lambda n: _numel(n.in_shape)}

    def apply(self, grads):
        return ((grads[0] / self.count).expand(self.in_shape),)


class MeanBackward1(Node):
    __slots__ = ("in_shape", "dims", "keepdim", "count", "dim_arg")
    saved_values = {"self_sym_sizes": lambda n: n.in_shape, "self_sym_numel": lambda n: _numel(n.in_shape),
                    "dim": lambda n: _dims_arg(n.dim_arg), "keepdim": lambda n: n.keepdim}

    def apply(self, grads):
        return (_expand_grad(grads[0] / self.count, self.in_shape, self.dims, self.keepdim),)


@op()
def mean(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    if x._ndarray.dtype in _rules.LOWPREC:  # float8, float4, complex32
        _rules.refuse_lowprec(x._ndarray, "sum_cpu")
    data = _dtype.widen(x._ndarray) if dtype is None else x._ndarray
    if data.dtype.kind not in "fc" and dtype is None:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {_dtype.scalar_type_name(data.dtype)}")
    if dtype is not None:
        data = data.astype(_dtype.to_dtype(dtype).np)
    dims = norm_dims(dim, data.ndim)
    with _err():
        if dims is None and dim is None:
            result = wrap(np.asanyarray(data.mean(), dtype=data.dtype))
        else:
            result = wrap(np.asanyarray(data.mean(axis=dims, keepdims=keepdim), dtype=data.dtype))
        if dtype is None and result._ndarray.dtype != x._ndarray.dtype:
            result._ndarray = _dtype.narrow_to(result._ndarray, x._ndarray.dtype)
    if GRAD.enabled and x._requires_grad:
        count = data.size if dims is None else int(np.prod([data.shape[d] for d in dims]))
        if dim is None:
            node = MeanBackward0((edge(x),))
            node.in_shape, node.count = data.shape, count
        else:
            node = MeanBackward1((edge(x),))
            node.in_shape, node.dims, node.keepdim, node.count = data.shape, dims, keepdim, count
            node.dim_arg = dim
        record(node, result, inputs=(x,))
    return result


@op()
def nanmean(x, dim=None, keepdim=False):
    mask = ~x.isnan()
    return sum(x.masked_fill(~mask, 0), dim, keepdim) / sum(mask, dim, keepdim)


class ProdBackward0(Node):
    __slots__ = ("dims", "keepdim")
    saved_names = ("self", "result")

    def apply(self, grads):
        x, result = self.saved()
        g = grads[0]
        dims = self.dims
        if not self.keepdim and dims is not None:
            g = g.reshape(_keep_shape(x._ndarray.shape, dims))
            result = result.reshape(_keep_shape(x._ndarray.shape, dims))
        elif dims is None:
            g = g.reshape((1,) * x._ndarray.ndim)
            result = result.reshape((1,) * x._ndarray.ndim)
        if x._ndarray.ndim == 0:
            return (g,)
        zeros = int(np.count_nonzero(x._ndarray == 0))
        if not zeros:
            if x._ndarray.dtype.kind == "c":
                return (g * (result / x).conj(),)  # torch's convention: g times conj of the derivative
            return (g * result / x,)
        if dims is None and zeros > 1 and not GRAD.enabled:
            # two zeros make every partial product 0; torch returns zeros then (even beside inf or NaN)
            return (wrap(np.zeros_like(x._ndarray)),)
        # with zeros: product of all the other elements, computed without dividing
        others = _prod_others(x, dims)
        return (g * (others.conj() if x._ndarray.dtype.kind == "c" else others),)


class ProdBackward1(ProdBackward0):
    __slots__ = ("dim_arg",)
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg), "keepdim": lambda n: n.keepdim}


def _prod_others(x: Tensor, dims):
    """For each element, the product of the others along ``dims`` (differentiable, no division)."""
    if dims is None:
        flat = x.reshape(-1)
        others = _prod_others(flat, (0,))
        return others.reshape(x._ndarray.shape)
    out = x
    for d in dims:
        n = x._ndarray.shape[d]
        ones_shape = list(x._ndarray.shape)
        ones_shape[d] = 1
        ones = wrap(np.ones(ones_shape, dtype=x._ndarray.dtype))
        if n == 1:
            out = ones
            continue
        from .shape import cat
        # exclusive cumulative products from the left and from the right
        left = cat([ones, out.narrow(d, 0, n - 1).cumprod(d)], d)
        right = cat([out.flip(d).narrow(d, 0, n - 1).cumprod(d).flip(d), ones], d)
        out = left * right
    return out


@op()
def prod(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    data = x._ndarray
    out_dt = result_dt = _sum_dtype(x, dtype)
    with _err():
        if dim is None:
            result = wrap(np.asanyarray(data.prod(dtype=out_dt)).astype(result_dt, copy=False))
            dims = None
            node_cls = ProdBackward0
        else:
            dims = norm_dims(dim, data.ndim)
            result = wrap(np.asanyarray(data.prod(axis=dims, keepdims=keepdim, dtype=out_dt)).astype(result_dt, copy=False))
            node_cls = ProdBackward1
    if GRAD.enabled and x._requires_grad:
        node = record_op(node_cls, (x,), result)
        node.dims, node.keepdim = dims, keepdim
        if dim is not None:
            node.dim_arg = dim
        node.save(x, output=result)
    return result


def _cumprod_np(data, d):
    """Running products; float16 and bfloat16 accumulate in float32 with each product rounded once,
    as torch's kernel does."""
    # (reshaped: NumPy's running product of a 0-d array is 1-d)
    if data.dtype == np.float16 or _dtype.is_bfloat16_np(data.dtype):
        return np.cumprod(data.astype(np.float32), axis=d).astype(data.dtype).reshape(data.shape)
    return np.cumprod(data, axis=d).reshape(data.shape)


class CumprodBackward0(Node):
    __slots__ = ("dim", "dim_arg")
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg)}
    saved_names = ("self", "result")

    def apply(self, grads):
        x, out = self.saved()
        g = grads[0]
        d = self.dim
        if x._ndarray.dtype.kind == "c":  # torch's convention: the conjugates of the partial products
            x, out = x.conj(), out.conj()
        if x._ndarray.size <= 1 or x._ndarray.shape[d] == 1:
            return (g,)
        if not (x._ndarray == 0).any():
            return ((g * out).flip(d).cumsum(d).flip(d) / x,)
        if not GRAD.enabled:
            return (wrap(_cumprod_grad_with_zeros(g._ndarray, x._ndarray, out._ndarray, d)),)
        # with zeros: d out_j / d x_i is the cumulative product with x_i replaced by 1 (j >= i)
        from .shape import cat
        n = x._ndarray.shape[d]
        parts = []
        for i in range(n):
            keep = np.ones(x._ndarray.shape, dtype=bool)
            keep[(slice(None),) * d + (i,)] = False
            cp = x.where(wrap(keep), wrap(np.ones((), dtype=x._ndarray.dtype))).cumprod(d)
            parts.append((g.narrow(d, i, n - i) * cp.narrow(d, i, n - i)).sum(d, keepdim=True))
        return (cat(parts, d),)


def _cumprod_grad_with_zeros(g, x, out, d):
    """cumprod's gradient where the input has zeros, slice by slice along ``d`` as torch's kernel: before
    the first zero k, the reversed running sums of g * out over the elements before k, divided by x;
    at k, the product before k times the sum over j from k up to the next zero of g_j times the product
    of x over (k, j]; 0 after k
    (what lies past a zero, inf or NaN included, never reaches the earlier elements)."""
    g, x, out = (np.moveaxis(np.broadcast_to(a, x.shape), d, -1) for a in (g, x, out))
    grad = np.zeros(x.shape, dtype=np.result_type(g.dtype, x.dtype))
    with np.errstate(all="ignore"):
        for index in np.ndindex(x.shape[:-1]):
            xs, gs, outs = x[index], g[index], out[index]
            zero_at = np.flatnonzero(xs == 0)
            if not zero_at.size:
                grad[index] = np.cumsum((gs * outs)[::-1])[::-1] / xs
                continue
            k = zero_at[0]
            grad[index][:k] = np.cumsum((gs[:k] * outs[:k])[::-1])[::-1] / xs[:k]
            stop = zero_at[1] if zero_at.size > 1 else xs.size
            between = np.ones(xs.size, dtype=grad.dtype)
            between[k + 1:stop] = xs[k + 1:stop]
            # torch's masks multiply the whole row: a zeroed gradient times an infinite product is NaN
            in_range = np.zeros(xs.size, dtype=grad.dtype)
            in_range[k:stop] = gs[k:stop]
            before = outs[k - 1] if k else 1
            grad[index][k] = before * np.sum(in_range * np.cumprod(between))
    return np.moveaxis(grad, -1, d).astype(x.dtype, copy=False)


@op(inplace=True)
def cumprod(x: Tensor, dim: int, *, dtype=None) -> Tensor:
    _rules.refuse_lowprec(x._ndarray, "cumprod_out_cpu")
    d = _wrap_dim(dim, x._ndarray.ndim)
    if dtype is None and x._ndarray.dtype.kind in "biu":
        dtype = _dtype.int64  # integer and bool products accumulate in int64, as torch's
    data = x._ndarray if dtype is None else x._ndarray.astype(_dtype.to_dtype(dtype).np)
    with _err():
        result = wrap(_cumprod_np(data, d))
    if GRAD.enabled and x._requires_grad:
        node = record_op(CumprodBackward0, (x,), result)
        node.dim, node.dim_arg = d, dim
        node.save(x, output=result)
    return result


class CumsumBackward0(Node):
    __slots__ = ("dim", "dim_arg")
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg)}

    def apply(self, grads):
        return (grads[0].flip(self.dim).cumsum(self.dim).flip(self.dim),)


@op(inplace=True)
def cumsum(x: Tensor, dim: int, *, dtype=None) -> Tensor:
    d = _wrap_dim(dim, x._ndarray.ndim)
    out_dt = _sum_dtype(x, dtype)
    data, final_dt = x._ndarray, out_dt
    if _dtype.is_bfloat16_np(out_dt) or out_dt == np.float16:  # accumulate in float32, round each sum once
        data, out_dt = data.astype(np.float32), np.dtype(np.float32)
    sums = np.cumsum(data, axis=d, dtype=out_dt) if data.ndim else data.astype(out_dt)
    result = wrap(sums if sums.dtype == final_dt else sums.astype(final_dt))
    if GRAD.enabled and x._requires_grad:
        node = record_op(CumsumBackward0, (x,), result)
        node.dim, node.dim_arg = d, dim
    return result


# ---- max / min ----------------------------------------------------------------------------
def _return_type(name):
    return return_types.make(name, ("values", "indices"))


def evenly_distributed_grad(g, x, result):
    """The gradient of a full reduction that picks one value (max, min, median): shared evenly among
    the elements equal to it, or among the NaNs when it is NaN (torch's rule)."""
    mask = x.isnan() if bool(result.isnan()) else (x == result)
    return (g / mask.sum()) * mask


MaxBackward1 = formula_node("MaxBackward1", ("self", "result"), evenly_distributed_grad)
MinBackward1 = formula_node("MinBackward1", ("self", "result"), evenly_distributed_grad)


class MaxBackward0(Node):
    """Gradient of max/min along a dim: goes to the index that was returned."""

    __slots__ = ("in_shape", "dim", "keepdim", "dim_arg")
    saved_names = ("indices",)
    saved_values = {"self_sym_sizes": lambda n: n.in_shape, "dim": lambda n: saved_dim(n.dim_arg),
                    "keepdim": lambda n: n.keepdim}

    def apply(self, grads):
        (indices,) = self.saved()
        g = grads[0]
        if not self.keepdim:
            g = g.unsqueeze(self.dim)
            indices = indices.unsqueeze(self.dim)
        zeros = wrap(np.zeros(self.in_shape, dtype=g._ndarray.dtype))
        return (zeros.scatter(self.dim, indices, g),)


class MinBackward0(MaxBackward0):
    __slots__ = ()


def _extreme(x, dim, keepdim, is_max, name):
    data = x._ndarray
    if data.dtype in _rules.LOWPREC:  # float8, float4, complex32
        _rules.refuse_lowprec(data, f"{name}_all")
    if dim is None:
        if data.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        result = wrap(np.asanyarray(data.max() if is_max else data.min()))
        if GRAD.enabled and x._requires_grad:
            node = record_op((MaxBackward1 if is_max else MinBackward1), (x,), result)
            node.save(x, output=result)
        return result
    if isinstance(dim, Tensor):
        return (maximum_ if is_max else minimum_)(x, dim)
    d = _wrap_dim(dim, data.ndim)
    if data.ndim == 0:
        idx = np.zeros((), dtype=np.int64)
        values = data.copy()
    else:
        if data.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        idx = np.argmax(data, axis=d) if is_max else np.argmin(data, axis=d)
        if _dtype.is_floating_np(data.dtype):
            nan_any = np.isnan(data).any(axis=d)
            if nan_any.any():
                idx = np.where(nan_any, np.argmax(np.isnan(data), axis=d), idx)
        values = np.take_along_axis(data, np.expand_dims(idx, d), d)
        idx = np.expand_dims(idx, d) if keepdim else idx
        values = values if keepdim else np.squeeze(values, d)
    vals = wrap(np.asanyarray(values))
    inds = wrap(np.asanyarray(idx, dtype=np.int64))
    if GRAD.enabled and x._requires_grad:
        node = record_op((MaxBackward0 if is_max else MinBackward0), (x,), vals)
        node.in_shape, node.dim, node.keepdim, node.dim_arg = data.shape, d, keepdim, dim
        node.save(inds)
    return _return_type("max" if is_max else "min")(vals, inds)


def maximum_(a, b):
    from .pointwise import maximum
    return maximum(a, b)


def minimum_(a, b):
    from .pointwise import minimum
    return minimum(a, b)


@op()
def max(x: Tensor, dim=None, keepdim: bool = False):
    _refuse_extreme(x, dim, "max")
    return _extreme(x, dim, keepdim, True, "max")


@op()
def min(x: Tensor, dim=None, keepdim: bool = False):
    _refuse_extreme(x, dim, "min")
    return _extreme(x, dim, keepdim, False, "min")


class _ResultOverDimsBackward(Node):
    """Backward of a reduction over ``dims`` that saves its input and its result: ``gradient(x, g,
    result)`` gets the incoming gradient and the result with the reduced dims restored (size 1)."""

    __slots__ = ("dims", "keepdim", "dim_arg")
    saved_names = ("self", "result")
    saved_values = {"dim": lambda n: _dims_arg(n.dim_arg), "keepdim": lambda n: n.keepdim}

    def apply(self, grads):
        x, result = self.saved()
        g, result = _restore_dims(x._ndarray.shape, self.dims, self.keepdim, grads[0], result)
        return (self.gradient(x, g, result),)


class AmaxBackward0(_ResultOverDimsBackward):
    __slots__ = ()

    def gradient(self, x, g, result):
        mask = (x == result)
        count = mask.sum(self.dims, keepdim=True) if self.dims is not None else mask.sum()
        return (g / count) * mask


class AminBackward0(AmaxBackward0):
    __slots__ = ()


def _refuse_extreme(x, dim, name):
    if dim is None or isinstance(dim, Tensor):
        refuse_complex(f'"{name}_all" not implemented for \'{{dtype}}\'', x)
    else:
        refuse_complex(f"{name}(): does not support complex input", x, error=RuntimeError)


def _amax(x, dim, keepdim, is_max):
    if x._ndarray.dtype in _rules.LOWPREC:  # float8, float4, complex32
        _rules.refuse_lowprec(x._ndarray, f'{"max" if is_max else "min"}_values_cpu')
    refuse_complex(f'"{"max" if is_max else "min"}_values_cpu" not implemented for \'{{dtype}}\'', x)
    data = x._ndarray
    dims = norm_dims(dim if dim != () else None, data.ndim)
    if data.size == 0:
        name = "amax" if is_max else "amin"
        if dims is None:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        for d in dims:
            if data.shape[d] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    fn = np.max if is_max else np.min
    result = wrap(np.asanyarray(fn(data, axis=dims, keepdims=keepdim)))
    if GRAD.enabled and x._requires_grad:
        node = record_op((AmaxBackward0 if is_max else AminBackward0), (x,), result)
        node.dims, node.keepdim, node.dim_arg = dims, keepdim, dim
        node.save(x, output=result)
    return result


@op()
def amax(x, dim=(), keepdim=False):
    return _amax(x, dim, keepdim, True)


@op()
def amin(x, dim=(), keepdim=False):
    return _amax(x, dim, keepdim, False)


@op()
def aminmax(x, *, dim=None, keepdim=False):
    rt = return_types.make("aminmax", ("min", "max"))
    return rt(amin(x, dim if dim is not None else (), keepdim), amax(x, dim if dim is not None else (), keepdim))


def _arg_extreme(x, dim, keepdim, np_fn):
    data = x._ndarray
    name = np_fn.__name__  # "argmax" / "argmin", as torch's errors name them
    if data.dtype in _rules.LOWPREC:  # float8, float4, complex32
        _rules.refuse_lowprec(data, f"{name}_cpu")
    if data.dtype == np.bool_:   # torch has no bool kernel for these (max and sort take bools)
        raise RuntimeError(f"{name}(): does not support bool input")
    if dim is None and data.size == 0:
        raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
    if dim is not None and data.ndim and data.shape[_wrap_dim(dim, data.ndim)] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {_wrap_dim(dim, data.ndim)} to have non-zero size.")
    if dim is None:
        out = np.asanyarray(np_fn(data), dtype=np.int64)
        return wrap(out.reshape((1,) * data.ndim) if keepdim else out)
    d = _wrap_dim(dim, data.ndim)
    out = np_fn(data, axis=d) if data.ndim else np.zeros((), np.int64)
    return wrap(np.asanyarray(np.expand_dims(out, d) if keepdim and data.ndim else out, dtype=np.int64))


@op()
def argmax(x, dim=None, keepdim=False):
    refuse_complex("argmax(): does not support complex input", x, error=RuntimeError)
    return _arg_extreme(x, dim, keepdim, np.argmax)


@op()
def argmin(x, dim=None, keepdim=False):
    refuse_complex("argmin(): does not support complex input", x, error=RuntimeError)
    return _arg_extreme(x, dim, keepdim, np.argmin)


def _truth_reduction(np_reduce, x, dim, keepdim):
    data = x._ndarray
    if dim is None:
        return wrap(np.asanyarray(np_reduce(data)))
    return wrap(np.asanyarray(np_reduce(data, axis=norm_dims(dim, data.ndim), keepdims=keepdim)))


@op()
def all(x, dim=None, keepdim=False):
    return _truth_reduction(np.all, x, dim, keepdim)


@op()
def any(x, dim=None, keepdim=False):
    return _truth_reduction(np.any, x, dim, keepdim)


@op()
def count_nonzero(x, dim=None):
    return wrap(np.asanyarray(np.count_nonzero(x._ndarray, axis=norm_dims(dim, x._ndarray.ndim)), dtype=np.int64))


# ---- variance and friends ------------------------------------------------------------------
def _correction_arg(dim, unbiased, correction):
    """The correction torch's variance nodes report: as given, from ``unbiased``, else None for the
    argument-less call and 1 once a dim is given."""
    if correction is not None:
        return correction
    if isinstance(dim, bool):
        return int(dim)
    if unbiased is not None:
        return int(unbiased)
    return None if dim is None else 1


def _variance_grad(x, g, dims, keepdim, correction, std=None):
    """The gradient of the variance of ``x`` over ``dims`` (of the standard deviation, when its
    result ``std`` is given) for the incoming gradient ``g``."""
    n = x._ndarray.size if dims is None else int(np.prod([x._ndarray.shape[d] for d in dims]))
    mu = x.mean(dims, keepdim=True) if dims is not None else x.mean()
    if std is None:
        (g,) = _restore_dims(x._ndarray.shape, dims, keepdim, g)
        return g * (x - mu) * (2.0 / builtins.max(n - correction, 0))
    g, std = _restore_dims(x._ndarray.shape, dims, keepdim, g, std)
    # 0 where the deviation is 0 (a constant slice), as torch's masked grad / (2 std)
    scale = (g / (std * builtins.max(n - correction, 0))).masked_fill(std == 0, 0.0)
    return scale * (x - mu)


class _VarianceBackward(Node):
    """Backward of var (saves ``self``) or std (saves ``self`` and ``result``)."""

    __slots__ = ("dims", "keepdim", "correction", "dim_arg", "correction_arg")
    saved_values = {"dim": lambda n: _dims_arg(n.dim_arg), "keepdim": lambda n: n.keepdim,
                    "correction": lambda n: n.correction_arg}

    def apply(self, grads):
        saved = self.saved()
        return (_variance_grad(saved[0], grads[0], self.dims, self.keepdim, self.correction, *saved[1:]),)


class VarBackward0(_VarianceBackward):
    __slots__ = ()
    saved_names = ("self",)


class StdBackward0(_VarianceBackward):
    __slots__ = ()
    saved_names = ("self", "result")


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    if unbiased is None:
        return 1
    return 1 if unbiased else 0


def _floating_only_var_std(x):
    if not _dtype.is_inexact_np(x._ndarray.dtype):
        raise RuntimeError("std and var only support floating point and complex dtypes")


def _var_args(dim, unbiased, keepdim, correction):
    # var(x, True) is the old ``unbiased`` positional form
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    return dim, _correction(unbiased, correction), keepdim


def _warn_without_dof(caller, n, correction):
    if n - correction <= 0:
        warn_at_user_frame(f"{caller}(): degrees of freedom is <= 0. Correction should be strictly less than the "
                           "reduction factor (input numel divided by output numel).")


def _variance(x, dim, unbiased, keepdim, correction, std, caller):
    """var of a real floating ``x`` (its square root, std, when ``std``), recorded with torch's node;
    warns as ``caller()`` (torch's name for the public call) when no degree of freedom is left."""
    _floating_only_var_std(x)
    if _rules.is_lowprec_storage_np(x._ndarray.dtype) and x._ndarray.dtype != _dtype.complex32.np:
        if dim is None or isinstance(dim, bool):   # torch's all-element kernel names the dtype itself
            raise RuntimeError(f"std_var_all: Unsupported dtype {_dtype.scalar_type_name(x._ndarray.dtype)}")
        _rules.refuse_lowprec(x._ndarray, "std_cpu")
    correction_arg = _correction_arg(dim, unbiased, correction)
    dim, corr, keepdim = _var_args(dim, unbiased, keepdim, correction)
    data = _dtype.widen(x._ndarray)
    if data.dtype == np.float32:   # torch's CPU kernel accumulates float in double, rounding once at the end
        data = data.astype(np.float64)
    dims = norm_dims(dim, data.ndim)
    n = data.size if dims is None else int(np.prod([data.shape[d] for d in dims]))
    _warn_without_dof(caller, n, corr)
    with _err():
        if n - corr > 0:
            out = np.var(data, axis=dims, ddof=corr, keepdims=keepdim)   # one division by n - correction, as torch
            if std:
                out = np.sqrt(out)
        else:
            out = np.full(_out_shape(data.shape, dims, keepdim), np.nan, dtype=data.dtype)
    out = np.asanyarray(out, dtype=data.dtype)
    result = wrap(out.astype(np.float32) if x._ndarray.dtype == np.float32 else _dtype.narrow_to(out, x._ndarray.dtype))
    if GRAD.enabled and x._requires_grad:
        node = record_op(StdBackward0 if std else VarBackward0, (x,), result)
        node.dims, node.keepdim, node.correction = dims, keepdim, corr
        node.dim_arg, node.correction_arg = dim, correction_arg
        if std:
            node.save(x, output=result)
        else:
            node.save(x)
    return result


@op()
def var(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _var(x, dim, unbiased, keepdim, correction, "var")


def _var(x, dim, unbiased, keepdim, correction, caller):
    if x._ndarray.dtype.kind == "c":  # a real result: the variances of the two parts add up (each warns, as in torch)
        return (_var(x.real, dim, unbiased, keepdim, correction, caller)
                + _var(x.imag, dim, unbiased, keepdim, correction, caller))
    return _variance(x, dim, unbiased, keepdim, correction, False, caller)


def _out_shape(shape, dims, keepdim):
    if dims is None:
        return (1,) * len(shape) if keepdim else ()
    return tuple(1 if i in dims else s for i, s in enumerate(shape) if keepdim or i not in dims)


@op()
def std(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _std(x, dim, unbiased, keepdim, correction, "std")


def _std(x, dim, unbiased, keepdim, correction, caller):
    if x._ndarray.dtype.kind == "c":
        return _var(x, dim, unbiased, keepdim, correction, caller).sqrt()
    return _variance(x, dim, unbiased, keepdim, correction, True, caller)


class VarMeanBackward0(_VarianceBackward):
    """One node for both outputs of var_mean (std_mean below), as torch records them."""

    __slots__ = ()
    saved_names = ("self",)
    _num_outputs = 2

    def apply(self, grads):
        saved = self.saved()
        x = saved[0]
        g_stat, g_mean = grads
        shape, dims, keepdim = x._ndarray.shape, self.dims, self.keepdim
        grad = None
        if g_stat is not None:
            grad = _variance_grad(x, g_stat, dims, keepdim, self.correction, *saved[1:])
        if g_mean is not None:
            n = x._ndarray.size if dims is None else int(np.prod([shape[d] for d in dims]))
            (g,) = _restore_dims(shape, dims, keepdim or dims is None, g_mean)
            g = g.expand(shape) / n
            grad = g if grad is None else grad + g
        return (grad,)


class StdMeanBackward0(VarMeanBackward0):
    __slots__ = ()
    saved_names = ("self", "result0")


def _stat_mean(stat, node_cls, x, dim, unbiased, keepdim, correction):
    with grad_mode.no_grad():
        s = stat(x, dim, unbiased, keepdim, correction, "std_mean" if stat is _std else "var_mean")
        m = mean(x, dim, keepdim) if dim is not None and not isinstance(dim, bool) else mean(x)
    if GRAD.enabled and x._requires_grad:
        correction_arg = _correction_arg(dim, unbiased, correction)
        dim, corr, keepdim = _var_args(dim, unbiased, keepdim, correction)
        node = record_op(node_cls, (x,), s, m)
        node.dim_arg, node.correction_arg = dim, correction_arg
        node.dims, node.keepdim, node.correction = norm_dims(dim, x._ndarray.ndim), keepdim, corr
        node.save(x) if node_cls is VarMeanBackward0 else node.save(x, output=s)
    return s, m


@op(method=False)
def var_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _stat_mean(_var, VarMeanBackward0, x, dim, unbiased, keepdim, correction)


@op(method=False)
def std_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _stat_mean(_std, StdMeanBackward0, x, dim, unbiased, keepdim, correction)


class LinalgVectorNormBackward0(Node):
    __slots__ = ("ord", "dims", "keepdim", "dim_arg")
    saved_names = ("self", "result")
    saved_values = {"ord": lambda n: n.ord, "dim": lambda n: _dims_arg(n.dim_arg), "keepdim": lambda n: n.keepdim}

    def apply(self, grads):
        x, result = self.saved()
        return (vector_norm_grad(x, grads[0], result, self.ord, self.dims, self.keepdim),)


def vector_norm_grad(x, g, result, p, dims, keepdim):
    """The gradient of ``vector_norm(x, p, dims, keepdim)`` (``result``) for the incoming ``g``,
    written with differentiable ops."""
    g, result = _restore_dims(x._ndarray.shape, dims, keepdim or dims is None, g, result)
    if p == 2:
        return x * (g / result).masked_fill(result == 0, 0.0)
    if p == 1:
        return g * x.sign()
    if p == float("inf") or p == float("-inf"):
        # the elements reaching the extremum, and NaNs (a NaN is the extremum of its slice)
        mask = (x.abs() == result) | x.isnan()
        count = mask.sum(dims, keepdim=True) if dims is not None else mask.sum()
        return g * x.sign() * mask / count
    if p == 0:
        return x * 0
    # general p: |x|^(p-1) sign(x) / ||x||^(p-1); below 1 the zero elements give 0 (their
    # |x|^(p-1) is infinite) and the norm's power is not masked, as torch's
    if p < 1:
        return x.sign() * x.abs().pow(p - 1).masked_fill(x == 0, 0.0) * g * result.pow(1 - p)
    scale = (g / result.pow(p - 1)).masked_fill(result == 0, 0.0)
    return x.sign() * x.abs().pow(p - 1) * scale


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    if x._ndarray.dtype.kind == "c" and dtype is None:  # the norm of the moduli (a real result)
        return vector_norm(x.abs(), ord, dim, keepdim)
    data = _dtype.widen(x._ndarray) if dtype is None else x._ndarray
    if dtype is None and data.dtype == np.float16:   # float32 sums, one rounding back (as torch)
        data = data.astype(np.float32)
    if dtype is not None:
        data = data.astype(_dtype.to_dtype(dtype).np)
    if data.dtype.kind not in "fc":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{_dtype.scalar_type_name(data.dtype)}")
    dims = norm_dims(dim, data.ndim)
    a = np.abs(data)
    with _err():
        if ord == 2:
            out = np.sqrt(np.sum(a * a, axis=dims, keepdims=keepdim))
        elif ord == float("inf"):
            out = np.max(a, axis=dims, keepdims=keepdim)
        elif ord == float("-inf"):
            out = np.min(a, axis=dims, keepdims=keepdim)
        elif ord == 0:
            out = np.sum(a != 0, axis=dims, keepdims=keepdim).astype(data.dtype)
        elif ord == 1:
            out = np.sum(a, axis=dims, keepdims=keepdim)
        else:
            out = np.sum(a ** ord, axis=dims, keepdims=keepdim) ** (1.0 / ord)
    result = wrap(np.asanyarray(out, dtype=data.dtype))
    if dtype is None and result._ndarray.dtype != x._ndarray.dtype:
        result._ndarray = result._ndarray.astype(x._ndarray.dtype)
    if GRAD.enabled and x._requires_grad:
        node = record_op(LinalgVectorNormBackward0, (x,), result)
        node.ord, node.dims, node.keepdim, node.dim_arg = ord, dims, keepdim, dim
        node.save(x, output=result)
    return result


@op()
def norm(x, p="fro", dim=None, keepdim=False, dtype=None):
    if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2) or p is None:
        p = 2
    if isinstance(p, str):   # the nuclear norm (or an order matrix_norm refuses) over the given or all dims
        from .decompositions import matrix_norm
        return matrix_norm(x, p, tuple(range(x.ndim)) if dim is None else dim, keepdim, dtype=dtype)
    return vector_norm(x, p, dim, keepdim, dtype=dtype)


class LogsumexpBackward0(_ResultOverDimsBackward):
    __slots__ = ()

    def gradient(self, x, g, result):
        return g * (x - result).exp()


@op()
def logsumexp(x, dim, keepdim=False):
    _rules.refuse_lowprec(x._ndarray, "max_values_cpu")
    data = x._ndarray
    if data.dtype.kind not in "fc":
        data = data.astype(float_dtype_for(x))
    dims = norm_dims(dim, data.ndim)
    with _err():
        m = np.max(data, axis=dims, keepdims=True) if data.size else np.zeros(_keep_shape(data.shape, dims), data.dtype)
        m = np.where(np.isfinite(m), m, 0)
        out = np.log(np.sum(np.exp(data - m), axis=dims, keepdims=True)) + m
    if not keepdim:
        out = out.reshape(_out_shape(data.shape, dims, False))
    result = wrap(_dtype.narrow_to(np.asanyarray(out, dtype=data.dtype), x._ndarray.dtype))
    if GRAD.enabled and x._requires_grad:
        node = record_op(LogsumexpBackward0, (x,), result)
        node.dims, node.keepdim, node.dim_arg = dims, keepdim, dim
        node.save(x, output=result)
    return result


# ---- softmax family --------------------------------------------------------------------------
# Sums over the last axis of short rows (attention scores: rows of 64) are slow in NumPy, which walks
# each row on its own: on a (16, 4, 64, 64) float32 array np.sum takes 0.11 ms, one BLAS product with
# a vector of ones 0.02 ms. The product sums in float32 like np.sum, in another order, so it is kept
# to rows of moderate length. The row maximum: np.maximum.reduceat over the flat array, one segment per
# row, 0.11 ms against np.max's 0.24 ms (the same maximum; a halving tree of np.maximum over the
# halves of each row measured slower, 0.31 ms).
_ROW_SUM_BLAS_MAX = 4096


def _blas_rows(a, axis):
    """``a`` as a C-contiguous (rows, n) matrix when the reduction over ``axis`` can be a BLAS
    product with ones (float32 or float64, the last axis, moderate n), else None."""
    n = a.shape[-1] if a.ndim else 0
    if (axis != a.ndim - 1 or a.dtype.type not in (np.float32, np.float64) or not 8 <= n <= _ROW_SUM_BLAS_MAX
            or not a.flags.c_contiguous or a.size == 0):
        return None
    return a.reshape(-1, n)


def sum_keepdims(a, axis):
    """``np.sum(a, axis, keepdims=True)``; a BLAS product with ones for rows of a float matrix."""
    rows = _blas_rows(a, axis)
    if rows is None:
        return np.sum(a, axis=axis, keepdims=True)
    # through _threads: a small product must not wake BLAS threads left spinning by a large one
    return _blas.matmul(rows, ones_vector(rows.shape[1], a.dtype)).reshape(a.shape[:-1] + (1,))


def max_keepdims(a, axis):
    """``np.max(a, axis, keepdims=True)``; over the last axis of a C-contiguous float array, one
    ``np.maximum.reduceat`` with a segment per row."""
    n = a.shape[-1] if a.ndim else 0
    if axis != a.ndim - 1 or n < 2 or a.dtype.kind != "f" or not a.flags.c_contiguous or a.size == 0:
        return np.max(a, axis=axis, keepdims=True)
    return np.maximum.reduceat(a.reshape(-1), index_range(a.size, n)).reshape(a.shape[:-1] + (1,))


def _row_sum(t, dim):
    """``t`` summed along ``dim``, keeping it; a 0-d tensor is its own one-element sum."""
    return t.sum(dim, keepdim=True) if t._ndarray.ndim else t


class _SoftmaxFamilyBackward(Node):
    """Backward of softmax or log_softmax from the saved result ``y``: ``formula(g, y, dim)`` on
    tensors, and ``on_arrays(gd, yd, dim)``, the same NumPy calls without a Tensor per step, for a
    float32/64 backward that nothing records (a cross-entropy step's last node: four Tensor ops cost
    more than their arithmetic on a (batch, classes) gradient)."""

    __slots__ = ("dim", "dim_arg")
    saved_names = ("result",)
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg)}

    def apply(self, grads):
        (y,) = self.saved()
        g = grads[0]
        yd, gd = y._ndarray, g._ndarray
        if not GRAD.enabled and yd.ndim and yd.dtype == gd.dtype and yd.dtype.type in (np.float32, np.float64):
            with _err():
                return (wrap(self.on_arrays(gd, yd, self.dim)),)
        return (self.formula(g, y, self.dim),)


class SoftmaxBackward0(_SoftmaxFamilyBackward):
    __slots__ = ()

    @staticmethod
    def on_arrays(gd, yd, dim):
        gy = gd * yd
        gy -= yd * sum_keepdims(gy, dim)
        return gy

    @staticmethod
    def formula(g, y, dim):  # under create_graph: torch's one node for the backward of this backward
        return _softmax_backward_data(g, y, dim, y.dtype)


class LogSoftmaxBackward0(_SoftmaxFamilyBackward):
    __slots__ = ()

    @staticmethod
    def on_arrays(gd, yd, dim):
        gx = np.exp(yd)
        gx *= gd.sum(axis=(dim,), keepdims=True, dtype=gd.dtype)
        np.subtract(gd, gx, out=gx)
        return gx

    @staticmethod
    def formula(g, y, dim):
        return _log_softmax_backward_data(g, y, dim, y.dtype)


class _SoftmaxDataBackward(Node):
    """The backward of softmax's (or log_softmax's) backward, a create_graph pass: one node over
    (grad_output, output), as torch records it; ``grad_of_grad_output`` and ``grad_of_output`` are the
    two formulas, given the saved g and y and the incoming gg."""
    __slots__ = ("dim",)
    saved_names = ("grad_output", "output")
    saved_values = {"dim": lambda n: n.dim}

    def apply(self, grads):
        g, y = self.saved()
        gg = grads[0]
        return (self.grad_of_grad_output(g, y, gg, self.dim) if self._should_compute_output(0) else None,
                self.grad_of_output(g, y, gg, self.dim) if self._should_compute_output(1) else None)


class SoftmaxBackwardDataBackward0(_SoftmaxDataBackward):
    __slots__ = ()

    @staticmethod
    def grad_of_grad_output(g, y, gg, dim):
        return _softmax_backward_data(gg, y, dim, y.dtype)

    @staticmethod
    def grad_of_output(g, y, gg, dim):
        return g * gg - _row_sum(y * g, dim) * gg - g * _row_sum(y * gg, dim)


class LogSoftmaxBackwardDataBackward0(_SoftmaxDataBackward):
    __slots__ = ()

    @staticmethod
    def grad_of_grad_output(g, y, gg, dim):
        return gg - _row_sum(gg * y.exp(), dim)

    @staticmethod
    def grad_of_output(g, y, gg, dim):
        return -_row_sum(g, dim) * y.exp() * gg


def _backward_data(node_cls, kernel, grad_output, output, dim, input_dtype):
    g, y = grad_output._ndarray, output._ndarray
    d = _wrap_dim(dim, y.ndim)
    with _err():
        gx = kernel(g.astype(y.dtype, copy=False), y, d)
    result = wrap(gx.astype(_dtype.to_dtype(input_dtype).np, copy=False))
    if GRAD.enabled and (grad_output._requires_grad or output._requires_grad):
        node = record_op(node_cls, (grad_output, output), result)
        node.dim = d
        node.save(grad_output, output)
    return result


def _softmax_backward_np(g, y, d):
    return SoftmaxBackward0.on_arrays(g, y, d) if y.ndim else g * y - y * (g * y)  # (0-d: its own sum)


def _log_softmax_backward_np(g, y, d):
    return LogSoftmaxBackward0.on_arrays(g, y, d) if y.ndim else g - np.exp(y) * g


@op(method=False)
def _softmax_backward_data(grad_output, output, dim, input_dtype):
    return _backward_data(SoftmaxBackwardDataBackward0, _softmax_backward_np, grad_output, output, dim,
                          input_dtype)


@op(method=False)
def _log_softmax_backward_data(grad_output, output, dim, input_dtype):
    return _backward_data(LogSoftmaxBackwardDataBackward0, _log_softmax_backward_np, grad_output, output, dim,
                          input_dtype)


def _softmax_np(data, d):
    e = np.subtract(data, max_keepdims(data, d))
    np.exp(e, out=e)
    e /= sum_keepdims(e, d)
    return e


def _log_softmax_np(data, d):
    shifted = np.subtract(data, max_keepdims(data, d))
    shifted -= np.log(sum_keepdims(np.exp(shifted), d))
    return shifted


def _softmax_input(x, dim, dtype, kernel):
    """``x`` cast to ``dtype`` (a recorded op, so the gradient flows back in the input's dtype), its
    data widened for the computation and ``dim`` wrapped; torch's error for a non-floating input."""
    if dim is None:  # only nn.functional's forms choose a dimension for the caller
        raise TypeError(f'{kernel}() missing 1 required positional arguments: "dim"')
    if dtype is not None:
        x = x.to(_dtype.to_dtype(dtype))
    if x._ndarray.dtype in _rules.LOWPREC:  # float8, float4, complex32
        _rules.refuse_lowprec(x._ndarray, "softmax_lastdim_kernel_impl")
    data = _dtype.widen(x._ndarray)
    if data.dtype.kind not in "fc":
        raise NotImplementedError(f'"{kernel}_lastdim_kernel_impl" not implemented for '
                                  f"'{_dtype.scalar_type_name(data.dtype)}'")
    return x, data, _wrap_dim(dim, data.ndim)


def _softmax_family(x, dim, dtype, kernel, on_rows, zero_dim_value, node_cls):
    """softmax or log_softmax: ``on_rows(data, d)`` computes it along ``d``; a 0-d input gives
    ``zero_dim_value`` (its softmax over itself)."""
    x, data, d = _softmax_input(x, dim, dtype, kernel)
    if dtype is None and x._ndarray.dtype.kind in "biu":
        _rules.refuse_kernel(x._ndarray, _rules.INTEGRAL, f"{kernel}_kernel_impl")
    with _err():
        out = on_rows(data, d) if data.ndim else np.full_like(data, zero_dim_value)
        result = wrap(_dtype.narrow_to(out, x._ndarray.dtype))
    if GRAD.enabled and x._requires_grad:
        node = record_op(node_cls, (x,), result)
        node.dim, node.dim_arg = d, dim
        node.save(output=result)
    return result


@op()
def softmax(x, dim=None, dtype=None, *, _stacklevel=3):
    return _softmax_family(x, dim, dtype, "softmax", _softmax_np, 1, SoftmaxBackward0)


@op()
def log_softmax(x, dim=None, dtype=None, *, _stacklevel=3):
    return _softmax_family(x, dim, dtype, "log_softmax", _log_softmax_np, 0, LogSoftmaxBackward0)


__all__ = module_all(globals())
