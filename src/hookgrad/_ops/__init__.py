"""Every differentiable op, once. Each op's declaration (``_declare.op`` / ``_declare.unary``) makes it a
``hookgrad`` function and Tensor method; this module adds the operator protocol (``a + b``, ``a[i]``,
``a += b``, ...), which is Python's, not an op's."""
from __future__ import annotations

import numbers

import numpy as np

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


def _comparable(b):
    return isinstance(b, (Tensor, numbers.Number, np.ndarray, np.generic, list, tuple))


def _bool_or_bitwise(logical, bitwise):
    def op(a, b):
        if a._ndarray.dtype == np.bool_ and (not isinstance(b, Tensor) or b._ndarray.dtype == np.bool_):
            return logical(a, b)
        return bitwise(a, b)
    return op


def _bind_operators():
    T, P, apply_inplace = Tensor, pointwise, views.apply_inplace
    # the op functions themselves (a lambda around each would add a frame to every operator)
    T.__add__ = T.__radd__ = P.add
    T.__sub__ = P.sub
    T.__rsub__ = P.rsub
    T.__mul__ = T.__rmul__ = P.mul
    T.__truediv__ = P.div
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
    T.__lshift__ = lambda a, b: more.bitwise_left_shift(a, b)
    T.__rshift__ = lambda a, b: more.bitwise_right_shift(a, b)
    T.__rlshift__ = lambda a, b: more.bitwise_left_shift(P.as_tensor_arg(b, a), a)
    T.__rrshift__ = lambda a, b: more.bitwise_right_shift(P.as_tensor_arg(b, a), a)
    T.__ilshift__ = lambda a, b: a.bitwise_left_shift_(b)
    T.__irshift__ = lambda a, b: a.bitwise_right_shift_(b)
    T.__invert__ = lambda a: P.logical_not(a) if a._ndarray.dtype == np.bool_ else P.bitwise_not(a)
    T.__and__ = T.__rand__ = _bool_or_bitwise(P.logical_and, P.bitwise_and)
    T.__or__ = T.__ror__ = _bool_or_bitwise(P.logical_or, P.bitwise_or)
    T.__xor__ = T.__rxor__ = _bool_or_bitwise(P.logical_xor, P.bitwise_xor)
    T.__eq__ = lambda a, b: P.eq(a, b) if _comparable(b) else False
    T.__ne__ = lambda a, b: P.ne(a, b) if _comparable(b) else True
    T.__lt__, T.__le__, T.__gt__, T.__ge__ = P.lt, P.le, P.gt, P.ge
    T.__getitem__ = indexing.getitem
    T.__setitem__ = indexing.setitem
    T.__iadd__ = lambda a, b: a.add_(b)
    T.__isub__ = lambda a, b: a.sub_(b)
    T.__imul__ = lambda a, b: a.mul_(b)
    T.__itruediv__ = lambda a, b: a.div_(b)
    T.__ipow__ = lambda a, b: a.pow_(b)
    T.__imatmul__ = lambda a, b: a.copy_(linalg.matmul(a, b))
    T.__iand__ = lambda a, b: apply_inplace(a, T.__and__, b)
    T.__ior__ = lambda a, b: apply_inplace(a, T.__or__, b)
    T.__ixor__ = lambda a, b: apply_inplace(a, T.__xor__, b)
    T.__ifloordiv__ = lambda a, b: apply_inplace(a, P.floor_divide, b)
    T.__imod__ = lambda a, b: apply_inplace(a, P.remainder, b)
    T.T = property(views.T_property)
    T.H = property(views.H_property)
    T.mT = property(views.mT_property)
    T.mH = property(views.mH_property)


bind_tensor_methods()
_bind_operators()
