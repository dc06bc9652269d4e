"""Every differentiable op, once. This module also attaches them to Tensor as methods/operators."""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor, wrap
from ..autograd.graph import Node
from . import creation, indexing, linalg, pointwise, reduce, shape, views
from ._base import GRAD, edge, record, sum_to_shape
from .creation import *  # noqa: F401,F403
from .indexing import (gather, index_add, index_put, index_select, masked_fill, masked_select, nonzero,
                       scatter, scatter_add, scatter_reduce, take_along_dim, argwhere)
from .linalg import (addmm, addmv, baddbmm, bmm, dot, einsum, inner, matmul, mm, mv, outer, ger, tensordot,
                     vdot)
from .pointwise import *  # noqa: F401,F403
from .pointwise import abs, pow, round  # noqa: A004 - torch's names
from .reduce import (all, amax, amin, aminmax, any, argmax, argmin, count_nonzero, cumprod, cumsum, log_softmax,
                     logsumexp, max, mean, min, nanmean, nansum, norm, prod, softmax, std, std_mean, sum, var,
                     var_mean)
from .shape import (cat, clone, concat, concatenate, flip, fliplr, flipud, hstack, repeat_interleave, roll, stack,
                    tile, tril, triu, vstack)
from .views import (as_strided, broadcast_to, chunk, diagonal, expand, flatten, movedim, moveaxis, narrow, permute,
                    reshape, select, split, squeeze, swapaxes, swapdims, t, tensor_split, transpose, unbind,
                    unflatten, unsqueeze, view_as)


# ---- ops that exist to be run in place ------------------------------------------------------------
class ZeroBackward0(Node):
    __slots__ = ("shape", "dtype")

    def apply(self, grads):
        return (wrap(np.zeros(self.shape, dtype=self.dtype)),)


def _zeroed(x):
    result = wrap(np.zeros(x._data.shape, dtype=x._data.dtype))
    if GRAD.enabled and x._requires_grad:
        node = ZeroBackward0((edge(x),))
        node.shape, node.dtype = x._data.shape, x._data.dtype
        record(node, result)
    return result


class FillBackward2(ZeroBackward0):
    __slots__ = ()


class FillBackward3(Node):
    __slots__ = ("shape", "dtype")

    def apply(self, grads):
        gx = wrap(np.zeros(self.shape, dtype=self.dtype)) if self.next_functions[0][0] is not None else None
        gv = grads[0].sum() if self.next_functions[1][0] is not None else None
        return gx, gv


def _filled(x, value):
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions.")
        result = wrap(np.full(x._data.shape, value._data, dtype=x._data.dtype))
        if GRAD.enabled and (x._requires_grad or value._requires_grad):
            node = FillBackward3((edge(x), edge(value)))
            node.shape, node.dtype = x._data.shape, x._data.dtype
            record(node, result)
        return result
    result = wrap(np.full(x._data.shape, value, dtype=x._data.dtype))
    if GRAD.enabled and x._requires_grad:
        node = FillBackward2((edge(x),))
        node.shape, node.dtype = x._data.shape, x._data.dtype
        record(node, result)
    return result


class CopyBackwards(Node):
    __slots__ = ("shape", "dtype", "src_shape", "src_dtype")

    def name(self):
        return "torch::autograd::CopyBackwards"

    def apply(self, grads):
        g = grads[0]
        gx = wrap(np.zeros(self.shape, dtype=self.dtype)) if self.next_functions[0][0] is not None else None
        gs = None
        if self.next_functions[1][0] is not None:
            gs = sum_to_shape(g, self.src_shape)
            if gs._data.dtype != self.src_dtype:
                gs = gs.to(_dtype.from_numpy_dtype(self.src_dtype))
        return gx, gs


def _copied(x, src):
    if not isinstance(src, Tensor):
        src = wrap(np.asarray(src))
    try:
        data = np.broadcast_to(src._data, x._data.shape).astype(x._data.dtype)
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({x._data.shape[-1] if x._data.ndim else 1}) must match the size of "
                           f"tensor b ({src._data.shape[-1] if src._data.ndim else 1}) at non-singleton dimension "
                           f"{x._data.ndim - 1}") from None
    result = wrap(data)
    if GRAD.enabled and (x._requires_grad or src._requires_grad):
        node = CopyBackwards((edge(x), edge(src)))
        node.shape, node.dtype = x._data.shape, x._data.dtype
        node.src_shape, node.src_dtype = src._data.shape, src._data.dtype
        record(node, result)
    return result


def _randomized(x, sample):
    """A zero-gradient op that replaces values with ``sample(shape)`` (uniform_, normal_, ...)."""
    result = wrap(np.asarray(sample(x._data.shape)).astype(x._data.dtype))
    if GRAD.enabled and x._requires_grad:
        node = ZeroBackward0((edge(x),))
        node.shape, node.dtype = x._data.shape, x._data.dtype
        record(node, result)
    return result


def _inplace(op, saves_self=True):
    def method(self, *args, **kwargs):
        return views.apply_inplace(self, op, *args, saves_self=saves_self, **kwargs)
    method.__name__ = getattr(op, "__name__", "op") + "_"
    return method


def _random_inplace(make_sampler):
    def method(self, *args, generator=None, **kwargs):
        rng = creation._rng(generator)
        sampler = make_sampler(rng, *args, **kwargs)
        return views.apply_inplace(self, _randomized, sampler, saves_self=False)
    return method


def addcmul(x, t1, t2, *, value=1):
    return x + (t1 * t2) * value if value != 1 else x + t1 * t2


def addcdiv(x, t1, t2, *, value=1):
    return x + (t1 / t2) * value if value != 1 else x + t1 / t2


def _new_factory(factory):
    def method(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
        return factory(*size, dtype=dtype if dtype is not None else self.dtype, requires_grad=requires_grad)
    return method


def _bind_methods():
    T = Tensor
    P = pointwise
    # operators
    T.__add__ = lambda a, b: P.add(a, b)
    T.__radd__ = lambda a, b: P.add(a, b)
    T.__sub__ = lambda a, b: P.sub(a, b)
    T.__rsub__ = lambda a, b: P.rsub(a, b)
    T.__mul__ = lambda a, b: P.mul(a, b)
    T.__rmul__ = lambda a, b: P.mul(a, b)
    T.__truediv__ = lambda a, b: P.div(a, b)
    T.__rtruediv__ = lambda a, b: P.rdiv(a, b) if not isinstance(b, Tensor) else P.div(b, a)
    T.__floordiv__ = lambda a, b: P.floor_divide(a, b)
    T.__rfloordiv__ = lambda a, b: P.floor_divide(P.as_tensor_arg(b, a), a)
    T.__mod__ = lambda a, b: P.remainder(a, b)
    T.__rmod__ = lambda a, b: P.remainder(P.as_tensor_arg(b, a), a)
    T.__pow__ = lambda a, b: P.pow(a, b)
    T.__rpow__ = lambda a, b: P.pow(b, a)
    T.__matmul__ = lambda a, b: linalg.matmul(a, b)
    T.__rmatmul__ = lambda a, b: linalg.matmul(b, a)
    T.__neg__ = P.neg
    T.__pos__ = lambda a: a
    T.__abs__ = P.abs
    T.__invert__ = lambda a: P.logical_not(a) if a._data.dtype == np.bool_ else P.bitwise_not(a)
    T.__and__ = T.__rand__ = lambda a, b: P.logical_and(a, b) if a._data.dtype == np.bool_ and (
        not isinstance(b, Tensor) or b._data.dtype == np.bool_) else P.bitwise_and(a, b)
    T.__or__ = T.__ror__ = lambda a, b: P.logical_or(a, b) if a._data.dtype == np.bool_ and (
        not isinstance(b, Tensor) or b._data.dtype == np.bool_) else P.bitwise_or(a, b)
    T.__xor__ = T.__rxor__ = lambda a, b: P.logical_xor(a, b) if a._data.dtype == np.bool_ and (
        not isinstance(b, Tensor) or b._data.dtype == np.bool_) else P.bitwise_xor(a, b)
    T.__eq__ = lambda a, b: P.eq(a, b) if _comparable(b) else False
    T.__ne__ = lambda a, b: P.ne(a, b) if _comparable(b) else True
    T.__lt__ = P.lt
    T.__le__ = P.le
    T.__gt__ = P.gt
    T.__ge__ = P.ge
    T.__getitem__ = indexing.getitem
    T.__setitem__ = indexing.setitem
    T.__iadd__ = lambda a, b: a.add_(b)
    T.__isub__ = lambda a, b: a.sub_(b)
    T.__imul__ = lambda a, b: a.mul_(b)
    T.__itruediv__ = lambda a, b: a.div_(b)
    T.__ipow__ = lambda a, b: a.pow_(b)
    T.__imatmul__ = lambda a, b: a.copy_(linalg.matmul(a, b))
    T.__iand__ = lambda a, b: views.apply_inplace(a, T.__and__, b)
    T.__ior__ = lambda a, b: views.apply_inplace(a, T.__or__, b)
    T.__ixor__ = lambda a, b: views.apply_inplace(a, T.__xor__, b)
    T.__ifloordiv__ = lambda a, b: views.apply_inplace(a, P.floor_divide, b)
    T.__imod__ = lambda a, b: views.apply_inplace(a, P.remainder, b)

    methods = dict(
        add=P.add, sub=P.sub, subtract=P.sub, mul=P.mul, multiply=P.mul, div=P.div, divide=P.div,
        true_divide=P.div, floor_divide=P.floor_divide, remainder=P.remainder, fmod=P.fmod, pow=P.pow,
        float_power=P.float_power, rsub=P.rsub, neg=P.neg, negative=P.neg, exp=P.exp, exp2=P.exp2,
        log=P.log, log2=P.log2, log10=P.log10, log1p=P.log1p, expm1=P.expm1, sqrt=P.sqrt, rsqrt=P.rsqrt,
        abs=P.abs, absolute=P.abs, sign=P.sign, sgn=P.sign, sin=P.sin, cos=P.cos, tan=P.tan, tanh=P.tanh,
        sinh=P.sinh, cosh=P.cosh, asin=P.asin, acos=P.acos, atan=P.atan, arcsin=P.asin, arccos=P.acos,
        arctan=P.atan, atan2=P.atan2, sigmoid=P.sigmoid, relu=P.relu, reciprocal=P.reciprocal,
        floor=P.floor, ceil=P.ceil, trunc=P.trunc, frac=P.frac, round=P.round, square=P.square,
        clamp=P.clamp, clip=P.clip, clamp_min=P.clamp_min, clamp_max=P.clamp_max,
        maximum=P.maximum, minimum=P.minimum, fmax=P.fmax, fmin=P.fmin, lerp=P.lerp,
        nan_to_num=P.nan_to_num, eq=P.eq, ne=P.ne, lt=P.lt, le=P.le, gt=P.gt, ge=P.ge, greater=P.gt,
        greater_equal=P.ge, less=P.lt, less_equal=P.le, not_equal=P.ne, logical_and=P.logical_and,
        logical_or=P.logical_or, logical_xor=P.logical_xor, logical_not=P.logical_not,
        bitwise_and=P.bitwise_and, bitwise_or=P.bitwise_or, bitwise_xor=P.bitwise_xor,
        bitwise_not=P.bitwise_not, isnan=P.isnan, isinf=P.isinf, isfinite=P.isfinite, isposinf=P.isposinf,
        isneginf=P.isneginf, isclose=P.isclose, allclose=P.allclose, equal=P.equal, addcmul=addcmul,
        addcdiv=addcdiv,
        sum=reduce.sum, nansum=reduce.nansum, mean=reduce.mean, nanmean=reduce.nanmean, prod=reduce.prod,
        cumsum=reduce.cumsum, cumprod=reduce.cumprod, max=reduce.max, min=reduce.min, amax=reduce.amax,
        amin=reduce.amin, aminmax=reduce.aminmax, argmax=reduce.argmax, argmin=reduce.argmin, all=reduce.all,
        any=reduce.any, count_nonzero=reduce.count_nonzero, var=reduce.var, std=reduce.std, norm=reduce.norm,
        logsumexp=reduce.logsumexp, softmax=reduce.softmax, log_softmax=reduce.log_softmax,
        view=views.view, view_as=views.view_as, reshape=views.reshape, reshape_as=views.reshape_as,
        flatten=views.flatten, unflatten=views.unflatten, squeeze=views.squeeze, unsqueeze=views.unsqueeze,
        permute=views.permute, transpose=views.transpose, swapaxes=views.swapaxes, swapdims=views.swapdims,
        t=views.t, expand=views.expand, expand_as=views.expand_as, broadcast_to=views.broadcast_to,
        select=views.select, narrow=views.narrow, split=views.split, chunk=views.chunk,
        tensor_split=views.tensor_split, unbind=views.unbind, movedim=views.movedim, moveaxis=views.moveaxis,
        diagonal=views.diagonal, as_strided=views.as_strided,
        repeat=shape.repeat, tile=shape.tile, repeat_interleave=shape.repeat_interleave, roll=shape.roll,
        tril=shape.tril, triu=shape.triu, clone=shape.clone, contiguous=shape.contiguous, to=shape.to,
        type_as=shape.type_as,
        gather=indexing.gather, scatter=indexing.scatter, scatter_add=indexing.scatter_add,
        scatter_reduce=indexing.scatter_reduce, index_select=indexing.index_select,
        index_add=indexing.index_add, index_put=indexing.index_put, masked_fill=indexing.masked_fill,
        masked_select=indexing.masked_select, nonzero=indexing.nonzero, argwhere=indexing.argwhere,
        take_along_dim=indexing.take_along_dim,
        matmul=linalg.matmul, mm=linalg.mm, bmm=linalg.bmm, mv=linalg.mv, dot=linalg.dot, inner=linalg.inner,
        outer=linalg.outer, ger=linalg.outer, addmm=linalg.addmm, det=linalg.det, inverse=linalg.inv,
        slogdet=linalg.slogdet, logdet=lambda a: linalg.slogdet(a)[1], diag=creation.diag,
        new_zeros=_new_factory(creation.zeros), new_ones=_new_factory(creation.ones),
        new_empty=_new_factory(creation.empty),
    )
    for name, fn in methods.items():
        setattr(T, name, fn)
    T.where = lambda self, condition, other: P.where(condition, self, other)
    T.flip = lambda self, *dims: shape.flip(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims)
    T.new_full = lambda self, size, fill_value, *, dtype=None, device=None, requires_grad=False: creation.full(
        size, fill_value, dtype=dtype if dtype is not None else self.dtype, requires_grad=requires_grad)
    T.new_tensor = lambda self, data, *, dtype=None, device=None, requires_grad=False: creation.tensor(
        data, dtype=dtype if dtype is not None else self.dtype, requires_grad=requires_grad)
    T.T = property(views.T_property)
    T.mT = property(views.mT_property)
    T.H = property(views.T_property)
    T.mH = property(views.mT_property)
    T.float = lambda self, memory_format=None: shape.to_dtype(self, _dtype.float32)
    T.double = lambda self, memory_format=None: shape.to_dtype(self, _dtype.float64)
    T.half = lambda self, memory_format=None: shape.to_dtype(self, _dtype.float16)
    T.bfloat16 = lambda self, memory_format=None: shape.to_dtype(self, _dtype.bfloat16)
    T.long = lambda self, memory_format=None: shape.to_dtype(self, _dtype.int64)
    T.int = lambda self, memory_format=None: shape.to_dtype(self, _dtype.int32)
    T.short = lambda self, memory_format=None: shape.to_dtype(self, _dtype.int16)
    T.char = lambda self, memory_format=None: shape.to_dtype(self, _dtype.int8)
    T.byte = lambda self, memory_format=None: shape.to_dtype(self, _dtype.uint8)
    T.bool = lambda self, memory_format=None: shape.to_dtype(self, _dtype.bool)

    # in-place versions
    inplace = dict(
        add_=P.add, sub_=P.sub, subtract_=P.sub, mul_=P.mul, multiply_=P.mul, div_=P.div, divide_=P.div,
        true_divide_=P.div, floor_divide_=P.floor_divide, remainder_=P.remainder, fmod_=P.fmod, pow_=P.pow,
        neg_=P.neg, negative_=P.neg, exp_=P.exp, log_=P.log, log1p_=P.log1p, expm1_=P.expm1, sqrt_=P.sqrt,
        rsqrt_=P.rsqrt, abs_=P.abs, sign_=P.sign, sin_=P.sin, cos_=P.cos, tan_=P.tan, tanh_=P.tanh,
        sigmoid_=P.sigmoid, relu_=P.relu, reciprocal_=P.reciprocal, floor_=P.floor, ceil_=P.ceil,
        trunc_=P.trunc, round_=P.round, clamp_=P.clamp, clip_=P.clip, clamp_min_=P.clamp_min,
        clamp_max_=P.clamp_max, lerp_=P.lerp, nan_to_num_=P.nan_to_num, addcmul_=addcmul, addcdiv_=addcdiv,
        masked_fill_=indexing.masked_fill, scatter_=indexing.scatter, scatter_add_=indexing.scatter_add,
        index_add_=indexing.index_add, tril_=shape.tril, triu_=shape.triu, square_=P.square,
        maximum_=P.maximum, minimum_=P.minimum,
    )
    no_self_needed = {"add_", "sub_", "subtract_", "neg_", "negative_", "masked_fill_", "scatter_", "scatter_add_",
                      "index_add_", "tril_", "triu_", "floor_", "ceil_", "trunc_", "round_", "sign_"}
    for name, fn in inplace.items():
        setattr(T, name, _inplace(fn, saves_self=name not in no_self_needed))
    T.zero_ = _inplace(_zeroed, saves_self=False)
    T.fill_ = _inplace(_filled, saves_self=False)
    T.copy_ = lambda self, src, non_blocking=False: views.apply_inplace(self, _copied, src, saves_self=False)
    T.index_put_ = indexing.index_put_
    T.uniform_ = _random_inplace(lambda rng, a=0.0, b=1.0: lambda s: rng.uniform(a, b, s))
    T.normal_ = _random_inplace(lambda rng, mean=0.0, std=1.0: lambda s: rng.normal(mean, std, s))
    T.bernoulli_ = _random_inplace(lambda rng, p=0.5: lambda s: rng.random(s) < (p._data if isinstance(p, Tensor) else p))
    T.exponential_ = _random_inplace(lambda rng, lambd=1.0: lambda s: rng.exponential(1.0 / lambd, s))
    T.random_ = _random_inplace(lambda rng, low=0, high=None: lambda s: rng.integers(
        0 if high is None else low, (2 ** 24 if high is None and low == 0 else (low if high is None else high)), s))
    T.log_normal_ = _random_inplace(lambda rng, mean=1.0, std=2.0: lambda s: rng.lognormal(mean, std, s))
    T.bernoulli = lambda self, p=None, *, generator=None: creation.bernoulli(self if p is None else creation.full_like(self, p), generator=generator)


def _comparable(b):
    import numbers
    return isinstance(b, (Tensor, numbers.Number, np.ndarray, np.generic, list, tuple))


_bind_methods()
