"""Every differentiable op, once. Each op's declaration (``_declare.op`` / ``_declare.unary``) makes it a
``hookgrad`` function and Tensor method; this module adds the operator protocol (``a + b``, ``a[i]``,
``a += b``, ...), which is Python's, not an op's."""
from __future__ import annotations

import builtins

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from . import creation, indexing, inplace, linalg, pointwise, reduce, shape, views
from . import more
from . import ordering
from . import special
from . import decompositions
from . import breadth
from . import complex as complex_ops
from . import fft as fft_ops
from . import tensor_methods
from . import torch_breadth
from . import scaled_mm as scaled_mm_ops
from ._declare import bind_tensor_methods
from .creation import *  # noqa: F401,F403
from .decompositions import *  # noqa: F401,F403
from .breadth import *  # noqa: F401,F403
from .tensor_methods import *  # noqa: F401,F403
from .torch_breadth import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .more import *  # noqa: F401,F403
from .ordering import *  # noqa: F401,F403
from .pointwise import *  # noqa: F401,F403
from .reduce import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .special import *  # noqa: F401,F403
from .views import *  # noqa: F401,F403
from .complex import *  # noqa: F401,F403
from .fft import *  # noqa: F401,F403
from .scaled_mm import *  # noqa: F401,F403

__all__ = (creation.__all__ + indexing.__all__ + linalg.__all__ + pointwise.__all__ + reduce.__all__
           + shape.__all__ + views.__all__ + more.__all__ + ordering.__all__ + special.__all__ + decompositions.__all__
           + breadth.__all__ + tensor_methods.__all__ + complex_ops.__all__ + fft_ops.__all__)
__all__ += torch_breadth.__all__
__all__ += scaled_mm_ops.__all__


# What torch's operators take as the other operand: a tensor, a Python number, a NumPy scalar (or an
# object that overrides torch functions). Anything else gets NotImplemented, so that Python tries the
# other operand's reflected method: ``[1] * t`` repeats the list, ``ndarray + t`` is NumPy's, ``t == None``
# is False.
_SCALAR_OPERANDS = (Tensor, builtins.int, builtins.float, builtins.complex, np.number, np.bool_)


def _scalar_operand(b) -> bool:
    return isinstance(b, _SCALAR_OPERANDS) or hasattr(type(b), "__torch_function__")


def _eq_operand(b) -> bool:   # torch's ``==`` (and only it) also converts a NumPy array
    return _scalar_operand(b) or isinstance(b, np.ndarray)


def _operator(fn, accepts=_scalar_operand):
    """The binary operator around ``fn``: NotImplemented for an operand torch's operator refuses, and, as
    torch's, for a TypeError raised while computing."""
    def operator(a, b):
        if b.__class__ is not Tensor and not accepts(b):
            return NotImplemented
        try:
            return fn(a, b)
        except TypeError:
            return NotImplemented
    return operator


def _reflected_true_divide(a, b):
    # torch computes ``b / a`` as ``a.reciprocal() * b``, so a NumPy array ``b`` reaches NumPy's product
    if isinstance(b, Tensor):
        return pointwise.div(b, a)
    if isinstance(b, np.ndarray):
        return pointwise.reciprocal(a) * b
    return pointwise.rdiv(a, b)


def _bool_or_bitwise(logical, bitwise):
    def op(a, b):
        # bool with bool stays bool; a number of another kind promotes (``mask | 1`` is int64, and a NumPy
        # bool is a float Scalar to torch)
        if a._ndarray.dtype == np.bool_ and (b.__class__ is builtins.bool if not isinstance(b, Tensor)
                                             else b._ndarray.dtype == np.bool_):
            return logical(a, b)
        return bitwise(a, b)
    return op


def _promoting_inplace(fn):
    """``a op= b`` for an op whose kernel exists for fewer types than promotion yields (bitwise ops,
    shifts, ``//``, ``%``): torch refuses a result ``a`` cannot hold before it looks for the kernel."""
    def inplace(a, b):
        result = _dtype.result_type(a, b).np
        if result != a._ndarray.dtype and not _dtype.can_cast(result, a._ndarray.dtype):
            raise RuntimeError(f"result type {_dtype.scalar_type_name(result)} can't be cast to the desired "
                               f"output type {_dtype.scalar_type_name(a._ndarray.dtype)}")
        return fn(a, b)
    return inplace


def _invert(a):
    kind = a._ndarray.dtype.kind
    if kind == "b":
        return pointwise.logical_not(a)
    if kind not in "iu":   # the operator's own check (bitwise_not names the type instead)
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return pointwise.bitwise_not(a)


def _bind_operators():
    T, P, apply_inplace, op = Tensor, pointwise, views.apply_inplace, _operator
    T.__add__ = T.__radd__ = op(P.add)
    T.__sub__ = op(P.sub)
    T.__rsub__ = op(P.rsub)
    T.__mul__ = T.__rmul__ = op(P.mul)
    T.__truediv__ = op(P.div)
    T.__rtruediv__ = op(_reflected_true_divide, _eq_operand)
    T.__floordiv__ = op(lambda a, b: P.floor_divide(a, b))
    T.__rfloordiv__ = op(lambda a, b: P.floor_divide(P.as_tensor_arg(b, a), a))
    T.__mod__ = op(lambda a, b: P.remainder(a, b))
    T.__rmod__ = op(lambda a, b: P.remainder(P.as_tensor_arg(b, a), a))
    T.__pow__ = op(lambda a, b: P.pow(a, b))
    T.__rpow__ = op(lambda a, b: P.pow(b, a))
    # ``@`` itself: hookgrad/__init__.py (with autocast's cast in front)
    T.__neg__ = P.neg
    T.__pos__ = lambda a: a
    T.__abs__ = P.abs
    T.__lshift__ = op(lambda a, b: more.bitwise_left_shift(a, b))
    T.__rshift__ = op(lambda a, b: more.bitwise_right_shift(a, b))
    T.__rlshift__ = op(lambda a, b: more.bitwise_left_shift(P.as_tensor_arg(b, a), a))
    T.__rrshift__ = op(lambda a, b: more.bitwise_right_shift(P.as_tensor_arg(b, a), a))
    T.__ilshift__ = op(_promoting_inplace(lambda a, b: a.bitwise_left_shift_(b)))
    T.__irshift__ = op(_promoting_inplace(lambda a, b: a.bitwise_right_shift_(b)))
    T.__invert__ = _invert
    and_, or_ = _bool_or_bitwise(P.logical_and, P.bitwise_and), _bool_or_bitwise(P.logical_or, P.bitwise_or)
    xor = _bool_or_bitwise(P.logical_xor, P.bitwise_xor)
    T.__and__, T.__or__, T.__xor__ = T.__rand__, T.__ror__, T.__rxor__ = op(and_), op(or_), op(xor)
    T.__eq__ = op(P.eq, _eq_operand)
    T.__ne__ = op(P.ne)
    T.__lt__, T.__le__, T.__gt__, T.__ge__ = op(P.lt), op(P.le), op(P.gt), op(P.ge)
    T.__getitem__ = indexing.getitem
    T.__setitem__ = indexing.setitem
    T.__iadd__ = op(lambda a, b: a.add_(b))
    T.__isub__ = op(lambda a, b: a.sub_(b))
    T.__imul__ = op(lambda a, b: a.mul_(b))
    T.__itruediv__ = op(lambda a, b: a.div_(b))
    T.__ipow__ = op(lambda a, b: a.pow_(b))
    # no __imatmul__: as torch's, ``a @= b`` binds ``a`` to the new tensor ``a @ b``
    T.__iand__ = op(_promoting_inplace(lambda a, b: apply_inplace(a, and_, b)))
    T.__ior__ = op(_promoting_inplace(lambda a, b: apply_inplace(a, or_, b)))
    T.__ixor__ = op(_promoting_inplace(lambda a, b: apply_inplace(a, xor, b)))
    T.__ifloordiv__ = op(_promoting_inplace(lambda a, b: apply_inplace(a, P.floor_divide, b)))
    T.__imod__ = op(_promoting_inplace(lambda a, b: apply_inplace(a, P.remainder, b)))
    T.T = property(views.T_property)
    T.H = property(views.H_property)
    T.mT = property(views.mT_property)
    T.mH = property(views.mH_property)


bind_tensor_methods()
_bind_operators()
