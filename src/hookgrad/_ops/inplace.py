"""Ops that exist to be run in place (``zero_``, ``fill_``, ``copy_``, the random fills): each is an
out-of-place op whose declaration names only its in-place Tensor method."""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor, wrap
from ._base import GRAD, sum_to_shape
from ._declare import ZeroGradNode, module_all, op, record_op
from .creation import _rng, bernoulli as _bernoulli, full_like
from .views import apply_inplace
from ..autograd.graph import Node


class ZeroBackward0(ZeroGradNode):
    __slots__ = ()


class FillBackward2(ZeroGradNode):
    __slots__ = ()


@op(function=False, method=False, inplace="zero_", saves_self=False)
def zero(x):
    result = wrap(np.zeros(x._data.shape, dtype=x._data.dtype))
    if GRAD.enabled and x._requires_grad:
        record_op(ZeroBackward0, (x,), result).keep_shapes(x)
    return result


class FillBackward3(Node):
    __slots__ = ("shape", "dtype")

    def apply(self, grads):
        gx = wrap(np.zeros(self.shape, dtype=self.dtype)) if self.next_functions[0][0] is not None else None
        gv = grads[0].sum() if self.next_functions[1][0] is not None else None
        return gx, gv


@op(function=False, method=False, inplace="fill_", saves_self=False)
def fill(x, value):
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions.")
        result = wrap(np.full(x._data.shape, value._data, dtype=x._data.dtype))
        if GRAD.enabled and (x._requires_grad or value._requires_grad):
            node = record_op(FillBackward3, (x, value), result)
            node.shape, node.dtype = x._data.shape, x._data.dtype
        return result
    result = wrap(np.full(x._data.shape, value, dtype=x._data.dtype))
    if GRAD.enabled and x._requires_grad:
        record_op(FillBackward2, (x,), result).keep_shapes(x)
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
        node = record_op(CopyBackwards, (x, src), result)
        node.shape, node.dtype = x._data.shape, x._data.dtype
        node.src_shape, node.src_dtype = src._data.shape, src._data.dtype
    return result


@op("copy_", function=False)
def copy_(self, src, non_blocking=False):
    return apply_inplace(self, _copied, src, saves_self=False)


# ---- random fills: zero-gradient ops that replace the values with samples ----------------------
def _randomized(x, sample):
    result = wrap(np.asarray(sample(x._data.shape)).astype(x._data.dtype))
    if GRAD.enabled and x._requires_grad:
        record_op(ZeroBackward0, (x,), result).keep_shapes(x)
    return result


def _random_fill(name, make_sampler):
    """Declare ``Tensor.<name>``: ``make_sampler(rng, *args, **kwargs)`` returns ``shape -> samples``."""
    def method(self, *args, generator=None, **kwargs):
        return apply_inplace(self, _randomized, make_sampler(_rng(generator), *args, **kwargs), saves_self=False)
    method.__name__ = method.__qualname__ = name
    return op(name, function=False)(method)


def _random_int(rng, low=0, high=None):
    if high is None:  # random_(to) draws from [0, to); random_() from [0, 2**24) (float32's exact integers)
        low, high = 0, (2 ** 24 if low == 0 else low)
    return lambda s: rng.integers(low, high, s)


_random_fill("uniform_", lambda rng, a=0.0, b=1.0: lambda s: rng.uniform(a, b, s))
_random_fill("normal_", lambda rng, mean=0.0, std=1.0: lambda s: rng.normal(mean, std, s))
_random_fill("bernoulli_", lambda rng, p=0.5: lambda s: rng.random(s) < (p._data if isinstance(p, Tensor) else p))
_random_fill("exponential_", lambda rng, lambd=1.0: lambda s: rng.exponential(1.0 / lambd, s))
_random_fill("random_", _random_int)
_random_fill("log_normal_", lambda rng, mean=1.0, std=2.0: lambda s: rng.lognormal(mean, std, s))


@op("bernoulli", function=False)
def bernoulli_method(self, p=None, *, generator=None):
    return _bernoulli(self if p is None else full_like(self, p), generator=generator)


__all__ = module_all(globals())
