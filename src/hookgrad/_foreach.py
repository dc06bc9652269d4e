"""torch's ``_foreach_*`` functions: one op applied across a list of tensors (what torch's optimizers
use with ``foreach=True``, and what libraries such as ema-pytorch call directly). Each is the public
op per tensor, so results, dtypes, errors and autograd are those of the op; the out-of-place forms
return a tuple, the in-place ones (``_foreach_add_``) update the tensors and return the list.

The other operand may be a number, a list of numbers, a list of tensors (same length), or a tensor
(for add, sub, mul, div, pow, maximum/minimum, clamp_min/max: one 0-d or broadcast tensor for all).
"""
from __future__ import annotations

import numbers

import numpy as np

from ._tensor import Tensor

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor", "frac",
          "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sin",
          "sinh", "sqrt", "tan", "tanh", "trunc")
_BINARY = ("add", "sub", "mul", "div", "maximum", "minimum", "clamp_min", "clamp_max", "pow")
_TAKES_ALPHA = ("add", "sub")


def _hookgrad():
    import hookgrad
    return hookgrad


def _tensor_list(tensors, what="Tensor list"):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"expected a list of tensors, got {type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{what} must have at least one tensor.")
    return list(tensors)


def _per_tensor(name, tensors, other):
    """``other`` spread over ``tensors``: a value per tensor."""
    if isinstance(other, (list, tuple)):
        if len(other) != len(tensors):
            if all(isinstance(o, Tensor) for o in other):
                raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(tensors)} and "
                                   f"{len(other)}")
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return list(other)
    if isinstance(other, (Tensor, numbers.Number, np.generic)):
        return [other] * len(tensors)
    raise TypeError(f"_foreach_{name}(): the other operand must be a number, a tensor or a list, not "
                    f"{type(other).__name__}")


def _binary(name):
    def out_of_place(self, other, *, alpha=None):
        tensors = _tensor_list(self)
        fn = getattr(_hookgrad(), name)
        extra = {} if alpha is None else {"alpha": alpha}
        return tuple(fn(t, o, **extra) for t, o in zip(tensors, _per_tensor(name, tensors, other)))

    def in_place(self, other, *, alpha=None):
        tensors = _tensor_list(self)
        extra = {} if alpha is None else {"alpha": alpha}
        for t, o in zip(tensors, _per_tensor(name, tensors, other)):
            method = getattr(t, name + "_", None)
            if method is None:  # (maximum, minimum: no in-place method of their own)
                t.copy_(getattr(_hookgrad(), name)(t, o))
            else:
                method(o, **extra)
        return self

    if name not in _TAKES_ALPHA:
        def out_no_alpha(self, other):
            return out_of_place(self, other)

        def in_no_alpha(self, other):
            return in_place(self, other)
        return out_no_alpha, in_no_alpha
    return out_of_place, in_place


def _unary(name):
    def out_of_place(self):
        return tuple(getattr(_hookgrad(), name)(t) for t in _tensor_list(self))

    def in_place(self):
        for t in _tensor_list(self):
            getattr(t, name + "_")()
        return self
    return out_of_place, in_place


def _pointwise3(name):
    def out_of_place(self, tensor1, tensor2, value=1):
        tensors = _tensor_list(self)
        first, second = _per_tensor(name, tensors, tensor1), _per_tensor(name, tensors, tensor2)
        values = _values(name, tensors, value)
        fn = getattr(_hookgrad(), name)
        return tuple(fn(t, a, b, value=v) for t, a, b, v in zip(tensors, first, second, values))

    def in_place(self, tensor1, tensor2, value=1):
        tensors = _tensor_list(self)
        first, second = _per_tensor(name, tensors, tensor1), _per_tensor(name, tensors, tensor2)
        for t, a, b, v in zip(tensors, first, second, _values(name, tensors, value)):
            getattr(t, name + "_")(a, b, value=v)
        return self
    return out_of_place, in_place


def _values(name, tensors, value):
    """addcmul's/addcdiv's ``value``: a number, a list of numbers or a 1-d tensor of them."""
    if isinstance(value, Tensor):
        value = value.tolist() if value.dim() else [value.item()] * len(tensors)
    return _per_tensor(name, tensors, value)


def _foreach_lerp(self, tensors1, weight):
    tensors = _tensor_list(self)
    ends, weights = _per_tensor("lerp", tensors, tensors1), _per_tensor("lerp", tensors, weight)
    return tuple(_hookgrad().lerp(t, e, w) for t, e, w in zip(tensors, ends, weights))


def _foreach_lerp_(self, tensors1, weight):
    tensors = _tensor_list(self)
    for t, e, w in zip(tensors, _per_tensor("lerp", tensors, tensors1), _per_tensor("lerp", tensors, weight)):
        t.lerp_(e, w)
    return self


def _foreach_norm(self, ord=2, dtype=None):
    hookgrad = _hookgrad()
    return tuple(hookgrad.linalg.vector_norm(t, ord, dtype=dtype) for t in _tensor_list(self))


def _foreach_powsum(self, exponent=2, dtype=None):
    """The sum of |x| ** exponent per tensor (vector_norm before its root)."""
    return tuple((t.abs() ** exponent).sum(dtype=dtype) for t in _tensor_list(self))


def _foreach_max(self):
    return tuple(t.max() for t in _tensor_list(self))


def _foreach_clone(self, *, memory_format=None):
    kwargs = {} if memory_format is None else {"memory_format": memory_format}
    return tuple(t.clone(**kwargs) for t in _tensor_list(self))


def _foreach_copy_(self, src, non_blocking=False):
    tensors = _tensor_list(self)
    for t, s in zip(tensors, _per_tensor("copy_", tensors, _tensor_list(src))):
        t.copy_(s)
    return self


def _foreach_zero_(self):
    for t in _tensor_list(self):
        t.zero_()
    return self


def _foreach_mm(self, other):
    tensors = _tensor_list(self)
    return tuple(_hookgrad().mm(a, b) for a, b in zip(tensors, _per_tensor("mm", tensors, _tensor_list(other))))


__all__ = ["_foreach_lerp", "_foreach_lerp_", "_foreach_norm", "_foreach_powsum", "_foreach_max", "_foreach_clone",
           "_foreach_copy_", "_foreach_zero_", "_foreach_mm"]
for _name in _UNARY:
    globals()[f"_foreach_{_name}"], globals()[f"_foreach_{_name}_"] = _unary(_name)
    __all__ += [f"_foreach_{_name}", f"_foreach_{_name}_"]
for _name in _BINARY:
    globals()[f"_foreach_{_name}"], globals()[f"_foreach_{_name}_"] = _binary(_name)
    __all__ += [f"_foreach_{_name}", f"_foreach_{_name}_"]
for _name in ("addcmul", "addcdiv"):
    globals()[f"_foreach_{_name}"], globals()[f"_foreach_{_name}_"] = _pointwise3(_name)
    __all__ += [f"_foreach_{_name}", f"_foreach_{_name}_"]
for _name in __all__:
    globals()[_name].__name__ = _name
