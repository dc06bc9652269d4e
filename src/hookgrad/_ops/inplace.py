"""Ops that exist to be run in place (``zero_``, ``fill_``, ``copy_``, the random fills): each is an
out-of-place op whose declaration names only its in-place Tensor method."""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor, wrap
from ._base import GRAD, sum_to_shape
from ._declare import ZeroGradNode, module_all, op, record_op
from . import rng as _rs
from .creation import bernoulli as _bernoulli, full_like
from .views import WRITES_ONE_VALUE, apply_inplace, check_inplace
from .._meta import MetaArray
from ..autograd.graph import Node


class ZeroBackward0(ZeroGradNode):
    __slots__ = ()


class FillBackward2(ZeroGradNode):
    __slots__ = ()


@op(function=False, method=False, inplace="zero_", saves_self=False)
def zero(x):
    result = wrap(np.zeros(x._ndarray.shape, dtype=x._ndarray.dtype))
    if GRAD.enabled and x._requires_grad:
        record_op(ZeroBackward0, (x,), result).keep_shapes(x)
    return result


class FillBackward3(Node):
    __slots__ = ("shape", "dtype")

    def apply(self, grads):
        gx = wrap(np.zeros(self.shape, dtype=self.dtype)) if self._should_compute_output(0) else None
        gv = grads[0].sum() if self._should_compute_output(1) else None
        return gx, gv


@op(function=False, method=False, inplace="fill_", saves_self=False)
def fill(x, value):
    if isinstance(value, Tensor):
        if value._ndarray.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._ndarray.ndim} dimensions.")
        result = wrap(_dtype.full_array(x._ndarray.shape, value._ndarray, x._ndarray.dtype))
        if GRAD.enabled and (x._requires_grad or value._requires_grad):
            node = record_op(FillBackward3, (x, value), result)
            node.shape, node.dtype = x._ndarray.shape, x._ndarray.dtype
        return result
    result = wrap(_dtype.full_array(x._ndarray.shape, value, x._ndarray.dtype))
    if GRAD.enabled and x._requires_grad:
        record_op(FillBackward2, (x,), result).keep_shapes(x)
    return result


WRITES_ONE_VALUE.update((zero, fill))


class CopyBackwards(Node):
    __slots__ = ("shape", "dtype", "src_shape", "src_dtype")

    def name(self):
        return "torch::autograd::CopyBackwards"

    def apply(self, grads):
        g = grads[0]
        gx = wrap(np.zeros(self.shape, dtype=self.dtype)) if self._should_compute_output(0) else None
        gs = None
        if self._should_compute_output(1):
            gs = sum_to_shape(g, self.src_shape)
            if gs._ndarray.dtype != self.src_dtype:
                if gs._ndarray.dtype.kind == "c" and self.src_dtype.kind != "c":
                    gs = gs.real  # a real source's gradient: the real part, without the casting warning
                gs = gs.to(_dtype.from_numpy_dtype(self.src_dtype))
        return gx, gs


def _copied(x, src):
    if not isinstance(src, Tensor):
        src = wrap(np.asanyarray(src))
    try:
        data = _dtype.cast(np.broadcast_to(src._ndarray, x._ndarray.shape), x._ndarray.dtype)
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({x._ndarray.shape[-1] if x._ndarray.ndim else 1}) must match the size of "
                           f"tensor b ({src._ndarray.shape[-1] if src._ndarray.ndim else 1}) at non-singleton dimension "
                           f"{x._ndarray.ndim - 1}") from None
    result = wrap(data)
    if GRAD.enabled and (x._requires_grad or src._requires_grad):
        node = record_op(CopyBackwards, (x, src), result)
        node.shape, node.dtype = x._ndarray.shape, x._ndarray.dtype
        node.src_shape, node.src_dtype = src._ndarray.shape, src._ndarray.dtype
    return result


def _refuse_partial_overlap(target: np.ndarray, source: np.ndarray) -> None:
    """torch refuses to copy between two different views of some of the same elements (copying a
    view onto itself is fine); NumPy would copy through a buffer instead."""
    # the same elements in the same order, size-1 dims aside (index assignment drops a value's leading
    # ones, and a size-1 dim's stride says nothing)
    same_view = (target.__array_interface__["data"][0] == source.__array_interface__["data"][0]
                 and [(n, st) for n, st in zip(target.shape, target.strides) if n != 1]
                 == [(n, st) for n, st in zip(source.shape, source.strides) if n != 1])
    if not same_view and np.may_share_memory(target, source) and np.shares_memory(target, source, max_work=10 ** 6):
        raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor refer "
                           "to a single memory location. Please clone() the tensor before performing the operation.")


@op("copy_", function=False)
def copy_(self, src, non_blocking=False):
    if isinstance(src, Tensor) and src._ndarray.dtype == self._ndarray.dtype:
        _refuse_partial_overlap(self._ndarray, src._ndarray)
    return apply_inplace(self, _copied, src, saves_self=False)


# ---- random fills: zero-gradient ops that replace the values with samples ----------------------
# Each sampler maps the target array to its new values, drawing what torch's CPU kernel draws (rng.py).
def _randomized(x, sample):
    data = x._ndarray
    values = sample(data) if data.size else data.copy()
    result = wrap(np.asanyarray(values).astype(data.dtype, copy=False).reshape(data.shape))
    if GRAD.enabled and x._requires_grad:
        record_op(ZeroBackward0, (x,), result).keep_shapes(x)
    return result


def _random_fill(name, make_sampler):
    """Declare ``Tensor.<name>``: ``make_sampler(generator, *args, **kwargs)`` returns ``array -> samples``
    after checking the arguments (so bad ones fail before anything is drawn)."""
    def method(self, *args, generator=None, **kwargs):
        from .creation import _generator
        sampler = make_sampler(_generator(generator), *args, **kwargs)
        if self._ndarray.__class__ is MetaArray:   # nothing to fill and nothing drawn, as torch
            check_inplace(self)
            return self
        return apply_inplace(self, _randomized, sampler, saves_self=False)
    method.__name__ = method.__qualname__ = name
    return op(name, function=False)(method)


def _in_order(draw):
    """A sampler that fills the target in memory order with ``draw(n, dtype)``."""
    return lambda a: _rs.fill_in_memory_order(a, np.asanyarray(draw(a.size, a.dtype)))


def _is_floating(dtype) -> bool:
    return np.dtype(dtype).kind == "f" or np.dtype(dtype).name == "bfloat16"


def _floating_only(kernel):
    def check(a):
        if not _is_floating(a.dtype):
            from .. import _dtype
            name = _dtype.scalar_type_name(a.dtype)
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{name}'")
    return check


def _continuous_only(name, type_word=None):
    def check(a):
        if not _is_floating(a.dtype):
            from .. import _dtype
            shown = _dtype.scalar_type_name(a.dtype) if type_word is None \
                else type_word(a.dtype)
            raise RuntimeError(f"{name} distribution is a continuous probability distribution. dtype must be a "
                               f"floating point but you specified {shown}")
    return check


def _c_type_name(dtype) -> str:
    """The C++ spelling torch's cauchy_ error uses ("long int", "int", ...)."""
    return {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "bool": "bool"}.get(np.dtype(dtype).name, np.dtype(dtype).name)


def _uniform_sampler(gen, a=0.0, b=1.0):
    a, b = float(a), float(b)
    if not a <= b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a:g} > to={b:g}")
    check = _floating_only("check_uniform_bounds")

    def sample(target):
        check(target)
        return _rs.fill_in_memory_order(target, _rs.uniform(gen, target.size, a, b, target.dtype))
    return sample


def _normal_sampler(gen, mean=0.0, std=1.0):
    mean, std = float(mean), float(std)
    if std < 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    check = _floating_only("normal_kernel_cpu")

    def sample(target):
        check(target)
        return _rs.normal(gen, target, mean, std)
    return sample


def _bernoulli_sampler(gen, p=0.5):
    if isinstance(p, Tensor):
        probs = p._ndarray

        def sample(target):
            expanded = np.ascontiguousarray(np.broadcast_to(probs, target.shape))
            return _rs.fill_in_memory_order(target, _rs.bernoulli_tensor(gen, expanded))
        return sample
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
    return _in_order(lambda n, dt: _rs.bernoulli_scalar(gen, n, p))


def _random_sampler(gen, *bounds, **named):
    if "from" in named:
        bounds = (named.pop("from"),) + bounds
    if "to" in named:
        bounds = bounds + (named.pop("to"),)
    if named:
        raise TypeError(f"random_() got an unexpected keyword argument '{next(iter(named))}'")
    if len(bounds) == 0:
        return _in_order(lambda n, dt: _rs.random_full(gen, n, dt))
    if len(bounds) == 1:
        low, high = 0, bounds[0]
    else:
        low, high = bounds[0], bounds[1]
    low = int(low)
    if high is None:
        def sample(target):
            top = _random_top(target.dtype)
            if not low < top:
                raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' "
                                   f"casted to dtype, but got from={low} > to_inc={top}")
            return _rs.fill_in_memory_order(target, _rs.random_from_to(gen, target.size, low, top - low + 1))
        return sample
    high = int(high)
    if not low < high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")

    def draw(n, dt):
        _check_random_bounds(low, high - 1, dt)
        return _rs.random_from_to(gen, n, low, high - low)
    return _in_order(draw)


# (lowest, largest, mantissa digits) of the floating types random_ fills
_FLOAT_RANGES = {"float16": (-65504.0, 65504.0, 11), "bfloat16": (-3.3895313892515355e38, 3.3895313892515355e38, 8),
                 "float32": (-3.4028234663852886e38, 3.4028234663852886e38, 24),
                 "float64": (-1.7976931348623157e308, 1.7976931348623157e308, 53)}


def _check_random_bounds(low: int, top: int, dtype) -> None:
    """torch's check of ``random_(from, to)`` against the target's type: both ends within its range
    (an error), and for a floating type within the integers its mantissa holds (a warning)."""
    dtype = np.dtype(dtype)
    name = _dtype.cpp_type_name(dtype)
    if dtype.name in _FLOAT_RANGES:
        lowest, largest, digits = _FLOAT_RANGES[dtype.name]
    elif dtype.kind == "b":
        lowest, largest, digits = 0, 1, None
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        lowest, largest, digits = int(info.min), min(int(info.max), 2 ** 63 - 1), None
    else:
        return
    for value, what in ((low, "from"), (top, "to - 1")):
        if not lowest <= value <= largest:
            raise RuntimeError(f"{what} is out of bounds for {name}")
    if digits is not None:
        from ..autograd._warn_once import warn_at_user_frame
        for value, what in ((low, "from"), (top, "to - 1")):
            if not -(1 << digits) <= value <= 1 << digits:
                warn_at_user_frame(f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations "
                                   f"{name} can support discrete uniform distribution only within this range. This "
                                   f"warning will become an error in version 1.7 release, please fix the code in advance")


def _random_top(dtype):
    """The largest value ``random_(from)`` draws for ``dtype`` (torch: 2**mantissa for floats)."""
    dtype = np.dtype(dtype)
    if _is_floating(dtype):
        digits = {"float16": 11, "bfloat16": 8, "float32": 24}.get(dtype.name, 53)
        return 1 << digits
    if dtype.kind == "b":
        return 1
    return int(np.iinfo(dtype).max)


def _exponential_sampler(gen, lambd=1.0):
    lambd = float(lambd)
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    check = _continuous_only("Exponential")

    def sample(target):
        check(target)
        return _rs.fill_in_memory_order(target, _rs.exponential(gen, target.size, lambd).astype(target.dtype))
    return sample


def _geometric_sampler(gen, p):
    p = float(p)
    if not 0.0 < p < 1.0:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    return _in_order(lambda n, dt: _rs.geometric(gen, n, p))


def _cauchy_sampler(gen, median=0.0, sigma=1.0):
    median, sigma = float(median), float(sigma)
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    check = _continuous_only("Cauchy", _c_type_name)

    def sample(target):
        check(target)
        return _rs.fill_in_memory_order(target, _rs.cauchy(gen, target.size, median, sigma).astype(target.dtype))
    return sample


def _log_normal_sampler(gen, mean=1.0, std=2.0):
    mean, std = float(mean), float(std)
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    check = _floating_only("log_normal_cpu")

    def sample(target):
        check(target)
        return _rs.fill_in_memory_order(target, _rs.log_normal(gen, target.size, mean, std).astype(target.dtype))
    return sample


_random_fill("uniform_", _uniform_sampler)
_random_fill("normal_", _normal_sampler)
_random_fill("bernoulli_", _bernoulli_sampler)
_random_fill("exponential_", _exponential_sampler)
_random_fill("random_", _random_sampler)
_random_fill("geometric_", _geometric_sampler)
_random_fill("cauchy_", _cauchy_sampler)
_random_fill("log_normal_", _log_normal_sampler)


@op("bernoulli", function=False)
def bernoulli_method(self, p=None, *, generator=None):
    return _bernoulli(self, p, generator=generator)


__all__ = module_all(globals())
