"""Elementwise ops: each forward (NumPy) beside its backward (hookgrad ops, so it is differentiable)."""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype, _memory_format
from .._meta import NO_ITEM, MetaArray, operands_are_the_ops_own
from .._tensor import Tensor, wrap
from ..autograd.graph import Node, saved_tensor
from ._base import GRAD, as_tensor_arg, data_of, is_number, result_np_dtype, sum_to_shape
from ._base import FP_IGNORE, fp_quiet, fp_restore, quiet_fp, refuse_complex
from ._base import _PassThroughNode, wrapped_int
from ._declare import _ARRAY_DTYPES, ZeroGradNode, formula_node, module_all, no_derivative_node, op, record_op, unary
from ..autograd.profiler import _active as _profiling
from . import _dtype_rules as _rules

_err = quiet_fp  # NumPy reports no inf/nan arithmetic (nor does torch)
try:  # the clip ufunc itself: np.clip's Python layers cost 2 us per call on small tensors
    from numpy._core.umath import clip as _clip_ufunc
except ImportError:
    _clip_ufunc = np.clip


# ---- binary arithmetic ----------------------------------------------------------------------
def _binary_inputs(a, b):
    """(a, b, numpy result dtype): ``a`` is a Tensor, ``b`` a Tensor or a Python number."""
    if not isinstance(a, Tensor):
        # a number first (torch.div(1.0, t)) promotes as a wrapped number: the tensor's dtype decides
        a = as_tensor_arg(a, like=b if isinstance(b, Tensor) else None)
    if not isinstance(b, Tensor) and not is_number(b):
        b = as_tensor_arg(b)
    elif isinstance(b, np.generic):
        b = b.item()
    return a, b, result_np_dtype(a, b)


def _np_binary(np_fn, a, b, dt, scale=1, float32_scalar=False):
    """``np_fn(a, b * scale)`` in dtype ``dt``; broadcasting failures become torch's RuntimeError.
    ``float32_scalar``: with float16 or bfloat16 operands a Python number enters as float32, unrounded
    (torch's mul and div; its add, sub and pow round the number to the operands' type first)."""
    if dt in _rules.LOWPREC:
        if dt == _C32 and np_fn in _COMPLEX32_BINARY:
            return _complex32_binary(np_fn, a, b, scale)
        if np_fn not in _LOWPREC_BINARY:
            kernel = _LOWPREC_KERNELS.get(np_fn) or f"{np_fn.__name__}_cpu"
            _rules.refuse_lowprec(dt, kernel if dt != _C32 else kernel.replace("_reduced_float", ""))
    with _err():  # nor about a number beyond the type's range (it becomes inf)
        reduced = dt == _F16 or dt.kind == "V" and _dtype.is_bfloat16_np(dt)
        if float32_scalar and reduced and not isinstance(b, Tensor):
            bd = np.float32(b)
        elif b.__class__ is int and dt.kind in "iu":
            bd = wrapped_int(b, dt)
        else:
            bd = data_of(b, dt)
        if scale != 1:
            bd = bd * scale
        elif dt.kind == "c" and (np_fn is np.add or np_fn is np.subtract):
            # torch adds ``alpha * other`` with a complex product even for alpha 1: an infinite part of
            # ``other`` makes the other part NaN (inf * 0), as there
            bd = bd * dt.type(1)
    try:
        with _err():  # torch never warns about inf/nan arithmetic
            ad = data_of(a, dt)
            result = np_fn(ad, bd)
            if not ad.flags.c_contiguous and isinstance(result, np.ndarray) and result.shape == ad.shape and \
                    _memory_format.is_dense(ad) and \
                    _memory_format.memory_order(result) != _memory_format.memory_order(ad):
                relaid = np.empty_like(ad, dtype=result.dtype)   # torch's result takes its first operand's layout
                relaid[...] = result
                return relaid
            return result
    except ValueError:
        raise RuntimeError(_broadcast_message(a, b)) from None


def _operand_dtype(a, b):
    """The NumPy dtype of the first Tensor among ``a``, ``b`` (None when neither is one)."""
    for operand in (a, b):
        if isinstance(operand, Tensor):
            return operand._ndarray.dtype
    return None


# the binary ufuncs torch runs on float8 tensors: (in)equality; and on complex32 ones: those and
# add, sub, mul, computed in complex64 with the result's parts rounded to float16 once
_LOWPREC_BINARY = (np.equal, np.not_equal)
# torch's names of the kernels that refuse them
_LOWPREC_KERNELS = {np.add: "add_stub", np.subtract: "add_stub", np.multiply: "mul_cpu_reduced_float",
                    np.true_divide: "div_cpu_reduced_float"}
_COMPLEX32_BINARY = (np.equal, np.not_equal, np.add, np.subtract, np.multiply)
_C32 = _dtype.complex32.np


def _complex32_binary(np_fn, a, b, scale):
    def wide(x):
        if isinstance(x, Tensor):
            return _dtype.cast(x._ndarray, np.dtype(np.complex64))
        return np.complex64(x)
    other = wide(b)
    if np_fn is np.add or np_fn is np.subtract:
        # torch adds ``alpha * other`` with a complex product even for alpha 1: an infinite part of
        # ``other`` makes the other part NaN (inf * 0), as there
        with _err():
            other = other * np.complex64(scale)
    try:
        with _err():
            out = np_fn(wide(a), other)
    except ValueError:
        raise RuntimeError(_broadcast_message(a, b)) from None
    return out if out.dtype.kind == "b" else _dtype.to_complex32(out)


# ---- the common case without promotion: a float tensor with a tensor of its dtype or a number ----
_FAST_FLOATS = frozenset(map(np.dtype, (np.float16, np.float32, np.float64)))
_F16 = np.dtype(np.float16)
_FLOAT32_SCALAR_UFUNCS = (np.multiply, np.true_divide)  # float32_scalar in _np_binary
_SCALAR_OPERANDS: dict = {}


def _scalar_operand(value, dtype):
    """A Python float or int as a 0-d array of ``dtype``: NumPy's ufuncs take one 0.15-0.3 us faster
    than a NumPy scalar. Cached, as programs reuse a few constants (not zero: 0.0 and -0.0 are
    equal keys for different values)."""
    key = (value, dtype)
    operand = _SCALAR_OPERANDS.get(key)
    if operand is None:
        operand = np.asanyarray(dtype.type(value))
        if value:
            if len(_SCALAR_OPERANDS) >= 256:  # NaNs never match: keep the cache bounded
                _SCALAR_OPERANDS.clear()
            operand.flags.writeable = False
            _SCALAR_OPERANDS[key] = operand
    return operand


def _fast_binary(ufunc, a, b, swap=False):
    """``ufunc(a, b)`` (``ufunc(b, a)`` with ``swap``) as an array, when ``a`` is a float16/32/64 tensor
    and ``b`` a tensor of the same dtype or a Python float or int: the result's dtype is ``a``'s and
    nothing is converted. None in every other case, and when NumPy raises (shapes that do not
    broadcast, an int too large for the dtype): the general path then decides, and reports errors
    as torch does."""
    if not isinstance(a, Tensor):
        return None
    ad = a._ndarray
    dtype = ad.dtype
    if dtype not in _FAST_FLOATS:
        return None
    cls = b.__class__
    if cls is float or cls is int:
        if dtype is _F16 and ufunc in _FLOAT32_SCALAR_UFUNCS:
            return None  # the number enters unrounded (see _np_binary)
        token = fp_quiet(FP_IGNORE)
        try:
            bd = _scalar_operand(b, dtype)
            return ufunc(bd, ad) if swap else ufunc(ad, bd)
        except (ValueError, OverflowError):
            return None
        finally:
            fp_restore(token)
    if not isinstance(b, Tensor):
        return None
    bd = b._ndarray
    if bd.dtype is not dtype:
        return None
    token = fp_quiet(FP_IGNORE)
    try:
        if swap:
            return ufunc(bd, ad)
        if not ad.flags.c_contiguous and bd.flags.c_contiguous and ad.shape == bd.shape and \
                _memory_format.is_dense(ad):
            # torch's result takes its first operand's layout (channels-last, transposed); NumPy's the row-major
            # one's. An expanded first operand orders nothing: the second one's layout stands
            return ufunc(ad, bd, out=np.empty_like(ad))
        return ufunc(ad, bd)
    except ValueError:
        return None
    finally:
        fp_restore(token)


# ---- backward formulas on arrays, where nothing records or observes their ops -------------------
def _plain_grad(g):
    """``g``'s array when a backward formula may compute on arrays (see ``UnaryNode.array_formula``):
    no create_graph records it, no profile times its ops, and ``g`` is float32/64. Else None."""
    if GRAD.enabled or _profiling:
        return None
    gd = g._ndarray
    return gd if gd.dtype in _ARRAY_DTYPES else None


def _grad_on_arrays(ufunc, gd, other, shape, dtype):
    """``ufunc(g, other)`` reduced to an input's ``shape`` and ``dtype``: the Tensor formula's ufunc call
    on the same operands. None where ``other`` is neither a real Python number nor a tensor of
    ``gd``'s dtype (the Tensor formula then runs)."""
    cls = other.__class__
    if cls is float or cls is int:
        od = _scalar_operand(other, gd.dtype)
    elif isinstance(other, Tensor) and other._ndarray.dtype is gd.dtype:
        od = other._ndarray
    else:
        return None
    token = fp_quiet(FP_IGNORE)
    try:
        out = ufunc(gd, od)
    finally:
        fp_restore(token)
    if out.shape == shape and out.dtype is dtype:
        return wrap(out)
    return _cast(sum_to_shape(wrap(out), shape), dtype)


def _padded(sa: tuple, sb: tuple):
    """The two shapes with leading 1s to one length, as broadcasting lines them up."""
    n = max(len(sa), len(sb))
    return (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb


def _mismatch(pa: tuple, pb: tuple):
    """torch's message for the last dim where padded shapes ``pa`` (tensor a) and ``pb`` (tensor b)
    do not broadcast, or None where they do."""
    for i in range(len(pa) - 1, -1, -1):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            return (f"The size of tensor a ({pa[i]}) must match the size of tensor b ({pb[i]}) at non-singleton "
                    f"dimension {i}")
    return None


def _broadcast_message(a, b):
    sa = tuple(a.shape) if isinstance(a, Tensor) else ()
    sb = tuple(b.shape) if isinstance(b, Tensor) else ()
    return _mismatch(*_padded(sa, sb)) or f"shapes {list(sa)} and {list(sb)} are not broadcastable"


def check_broadcast(*operands) -> None:
    """torch's RuntimeError where the shapes of the tensors among ``operands`` (in the op's order)
    do not broadcast together."""
    shapes = [tuple(t.shape) for t in operands if isinstance(t, Tensor)]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise RuntimeError(broadcast_mismatch(*shapes)) from None


def broadcast_mismatch(*shapes) -> str:
    """torch's message for shapes that do not broadcast, as its iterator finds it: the shape the
    earlier operands broadcast to (tensor a) against the first operand that does not fit (tensor b)."""
    so_far = ()
    for shape in shapes:
        pa, pb = _padded(so_far, tuple(shape))
        message = _mismatch(pa, pb)
        if message is not None:
            return message
        so_far = tuple(max(x, y) if min(x, y) != 0 else 0 for x, y in zip(pa, pb))
    return f"shapes {[list(s) for s in shapes]} are not broadcastable"


def _finish(out_data, np_dtype):
    if out_data.dtype != np_dtype:
        with _err():  # a value beyond the narrower type becomes inf, quietly as in torch
            out_data = out_data.astype(np_dtype)
    return wrap(out_data)



def _needs(a, b):
    return GRAD.enabled and (a._requires_grad or (isinstance(b, Tensor) and b._requires_grad))


class AddBackward0(Node):
    __slots__ = ("alpha", "a_shape", "b_shape", "a_dtype", "b_dtype")
    saved_values = {"alpha": lambda n: n.alpha}
    sign = 1

    def apply(self, grads):
        g = grads[0]
        ga = gb = None
        if self._should_compute_output(0):
            ga = _cast(sum_to_shape(g, self.a_shape), self.a_dtype)
        if self._should_compute_output(1):
            scale = self.sign * self.alpha
            gb = g if scale == 1 else -g if scale == -1 else g * scale
            gb = _cast(sum_to_shape(gb, self.b_shape), self.b_dtype)
        return ga, gb


class SubBackward0(AddBackward0):
    __slots__ = ()
    sign = -1


def _cast(g, np_dtype):
    if g is None or g._ndarray.dtype == np_dtype:
        return g
    if g._ndarray.dtype.kind == "c" and np_dtype.kind != "c":
        g = g.real  # a real input of a complex result gets the real part (torch's handle_r_to_c)
        if g._ndarray.dtype == np_dtype:
            return g
    return g.to(_dtype.from_numpy_dtype(np_dtype))


def _conj(v):
    """The conjugate of a complex operand (torch's gradients carry conj(df/dz)); others as they are."""
    if isinstance(v, Tensor):
        return v.conj() if v._ndarray.dtype.kind == "c" or v._ndarray.dtype == _C32 else v
    return v.conjugate() if isinstance(v, complex) else v


def _shape_dtype(b):
    if isinstance(b, Tensor):
        return b._ndarray.shape, b._ndarray.dtype
    return (), None


def _refuse_bool_subtraction(a, b, dt):
    if dt.kind == "b":
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if any(isinstance(t, (bool, np.bool_)) or isinstance(t, Tensor) and t._ndarray.dtype.kind == "b" for t in (a, b)):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")


def _add_or_sub(a, b, alpha, out, np_fn, node_cls):
    if isinstance(alpha, Tensor):   # a one-element tensor is a Scalar to torch's argument parser
        alpha = alpha.item()
    data = _fast_binary(np_fn, a, b) if out is None and alpha.__class__ is int and alpha == 1 else None
    if data is not None:
        result = wrap(data)
    else:
        if node_cls is SubBackward0 and isinstance(a, (bool, np.bool_)):
            _refuse_bool_subtraction(as_tensor_arg(a), b, np.dtype(np.int64))  # torch.sub(True, t)
        a, b, dt = _binary_inputs(a, b)
        if node_cls is SubBackward0 and (dt.kind == "b" or (isinstance(a, Tensor) and a._ndarray.dtype.kind == "b")
                                         or (isinstance(b, Tensor) and b._ndarray.dtype.kind == "b")
                                         or isinstance(b, (bool, np.bool_))):
            _refuse_bool_subtraction(a, b, dt)
        if isinstance(alpha, (bool, np.bool_)) and dt.kind != "b":
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
        if dt.kind in "biu" and isinstance(alpha, float):
            raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
        result = _finish(_np_binary(np_fn, a, b, dt, alpha), dt)
    if GRAD.enabled and (a._requires_grad or (isinstance(b, Tensor) and b._requires_grad)):  # _needs
        node = record_op(node_cls, (a, b), result)
        node.alpha = alpha
        node.a_shape, node.a_dtype = a._ndarray.shape, a._ndarray.dtype
        node.b_shape, node.b_dtype = _shape_dtype(b)
    return result if out is None else _maybe_out(result, out, "add")


@op(inplace=True, saves_self=False)
def add(a, b, *, alpha=1, out=None):
    return _add_or_sub(a, b, alpha, out, np.add, AddBackward0)


@op(aliases=("subtract",), inplace=True, saves_self=False)
def sub(a, b, *, alpha=1, out=None):
    return _add_or_sub(a, b, alpha, out, np.subtract, SubBackward0)


class RsubBackward1(Node):
    __slots__ = ("alpha", "a_dtype")
    saved_values = {"alpha": lambda n: n.alpha}

    def apply(self, grads):
        g = grads[0]
        gd = _plain_grad(g)
        ga = None if gd is None else _grad_on_arrays(np.multiply, gd, -self.alpha, gd.shape, self.a_dtype)
        return (_cast(g * (-self.alpha), self.a_dtype) if ga is None else ga,)


@op()
def rsub(a, b, *, alpha=1):
    """``b - alpha * a``."""
    if isinstance(b, Tensor):
        return sub(b, a, alpha=alpha)
    _rules.refuse_float8(_operand_dtype(a, b), "add_stub")
    data = _fast_binary(np.subtract, a, b, swap=True) if alpha.__class__ is int and alpha == 1 else None
    if data is not None:
        result = wrap(data)
    else:
        a, b, dt = _binary_inputs(a, b)
        _refuse_bool_subtraction(a, b, dt)
        if dt == _C32:
            result = wrap(_complex32_binary(np.subtract, b, a, alpha))
        else:
            with _err():
                result = _finish(np.subtract(data_of(b, dt), data_of(a, dt) * alpha), dt)
    if _needs(a, None):
        node = record_op(RsubBackward1, (a,), result)
        node.alpha, node.a_dtype = alpha, a._ndarray.dtype
    return result


def _number_or_saved(index):
    """``_saved_other`` of an op on a number: torch keeps the number as a 0-d tensor."""
    def get(node):
        if node.scalar is not None and node._saved is not None:
            return wrap(np.asanyarray(node.scalar))
        return saved_tensor(node, index, freed_if_undefined=node.scalar is not None)
    return get


class _TensorOrNumberNode(Node):
    """Backward of mul or div, whose second operand is a tensor or a number (``scalar``): keeps each
    operand's shape and dtype for its gradient."""

    __slots__ = ("a_shape", "b_shape", "a_dtype", "b_dtype", "scalar")
    saved_names = ("other", "self")

    def saved_a_number(self) -> bool:
        return self.scalar is not None


class MulBackward0(_TensorOrNumberNode):
    __slots__ = ()
    saved_values = {"other": _number_or_saved(0)}

    def apply(self, grads):
        g = grads[0]
        saved = self.saved()
        b, a = saved if self.scalar is None else (self.scalar, None)
        gd = _plain_grad(g)
        ga = gb = None
        # torch computes other's gradient first (what a create_graph pass records and saves follows)
        if self._should_compute_output(1):
            gb = None if gd is None else _grad_on_arrays(np.multiply, gd, a, self.b_shape, self.b_dtype)
            if gb is None:
                gb = _cast(sum_to_shape(g * _conj(a), self.b_shape), self.b_dtype)
        if self._should_compute_output(0):
            ga = None if gd is None else _grad_on_arrays(np.multiply, gd, b, self.a_shape, self.a_dtype)
            if ga is None:
                ga = _cast(sum_to_shape(g * _conj(b), self.a_shape), self.a_dtype)
        return ga, gb


@op(aliases=("multiply",), inplace=True)
def mul(a, b, *, out=None):
    data = _fast_binary(np.multiply, a, b) if out is None else None
    if data is not None:
        result = wrap(data)
    else:
        a, b, dt = _binary_inputs(a, b)
        result = _finish(_np_binary(np.multiply, a, b, dt, float32_scalar=True), dt)
    if GRAD.enabled and (a._requires_grad or (isinstance(b, Tensor) and b._requires_grad)):  # _needs
        node = record_op(MulBackward0, (a, b), result)
        node.a_shape, node.a_dtype = a._ndarray.shape, a._ndarray.dtype
        node.b_shape, node.b_dtype = _shape_dtype(b)
        if isinstance(b, Tensor):
            node.scalar = None
            # each side's gradient needs only the other side (packed in torch's order: other, self)
            # (a side with no edge, a view made under no_grad, needs no gradient: torch keeps nothing for it)
            edges = node.next_functions
            node.save(b if edges[0][0] is not None else None, a if edges[1][0] is not None else None)
        else:
            node.scalar = b
            node.save(None)  # torch saves the number as a tensor: a second backward finds it freed
    return result if out is None else _maybe_out(result, out, "mul")


class DivBackward0(_TensorOrNumberNode):
    __slots__ = ()
    saved_values = {"other": _number_or_saved(0)}

    def apply(self, grads):
        g = grads[0]
        saved = self.saved()
        b, a = saved if self.scalar is None else (self.scalar, None)
        ga = gb = None
        # torch computes other's gradient first (what a create_graph pass records and saves follows)
        if self._should_compute_output(1):
            # (a / b) / b, as torch: b * b would underflow to 0 (or overflow) where the quotients do not
            gb = _cast(sum_to_shape(-g * _conj((a / b) / b), self.b_shape), self.b_dtype)
        if self._should_compute_output(0):
            gd = _plain_grad(g)
            ga = None if gd is None else _grad_on_arrays(np.true_divide, gd, b, self.a_shape, self.a_dtype)
            if ga is None:
                ga = _cast(sum_to_shape(g / _conj(b), self.a_shape), self.a_dtype)
        return ga, gb


def _div_dtype(a, b):
    dt = result_np_dtype(a, b)
    return dt if dt.kind in "fc" or _dtype.is_inexact_np(dt) else _dtype.get_default_dtype().np


@op(aliases=("divide", "true_divide"), inplace=True)
def div(a, b, *, rounding_mode=None, out=None):
    data = _fast_binary(np.true_divide, a, b) if rounding_mode is None and out is None else None
    if data is not None:
        result = wrap(data)
    else:
        a, b, _ = _binary_inputs(a, b)
        if rounding_mode is not None:
            return _rounded_div(a, b, rounding_mode)
        dt = _div_dtype(a, b)
        with _err():
            result = _finish(_np_binary(np.true_divide, a, b, dt, float32_scalar=True), dt)
    if GRAD.enabled and (a._requires_grad or (isinstance(b, Tensor) and b._requires_grad)):  # _needs
        node = record_op(DivBackward0, (a, b), result)
        node.a_shape, node.a_dtype = a._ndarray.shape, a._ndarray.dtype
        node.b_shape, node.b_dtype = _shape_dtype(b)
        if isinstance(b, Tensor):
            node.scalar = None
            node.save(b, a if node.next_functions[1][0] is not None else None)  # torch's order: other, self
        else:
            node.scalar = b
            node.save(None)  # torch saves the number as a tensor: a second backward finds it freed
    return result if out is None else _maybe_out(result, out, "div")


def _refuse_integer_zero_divisor(divisor, dt) -> None:
    """Integer division by zero raises in torch (NumPy would give 0 and a warning)."""
    if dt.kind in "iub" and not np.all(divisor):
        raise RuntimeError("ZeroDivisionError")


def _arith_operand(x, dt):
    """An operand of integer or float arithmetic in ``dt``: a Python int wraps around an integer type
    as in torch (see ``wrapped_int``)."""
    if x.__class__ is int and dt.kind in "iu":
        return wrapped_int(x, dt)
    return data_of(x, dt)


def _rounded_div(a, b, mode, recorded=True):
    dt = result_np_dtype(a, b)
    if mode in ("floor", "trunc"):
        dt_in = _operand_dtype(a, b)
        _rules.refuse_lowprec(dt_in, f"div_{mode}_cpu" + ("" if dt_in == _C32 else "_reduced_float"))
    ad, bd = _arith_operand(a, dt), _arith_operand(b, dt)
    _refuse_integer_zero_divisor(bd, dt)
    if not isinstance(b, Tensor) and (dt == _F16 or _dtype.is_bfloat16_np(dt)):
        ad, bd = ad.astype(np.float32), np.float32(b)   # the number enters unrounded, as in div
    with _err():
        if mode == "floor":
            # NumPy's float floor division is torch's div_floor: from fmod, so 1 // 0.1 is 9 as in Python
            data = np.floor_divide(ad, bd)
        elif mode == "trunc":
            q = np.true_divide(ad, bd)
            data = np.trunc(q)
        else:
            raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{mode}'")
    result = _finish(np.asanyarray(data), dt)
    if recorded and _needs(a, b):
        record_op(DivBackward2, (a, b), result).keep_shapes(a, b)
    return result


def rdiv(a, b):
    """``b / a`` for a number ``b``: torch records it as ``reciprocal(a) * b``."""
    return mul(reciprocal(a), b)


@op(inplace=True)
def floor_divide(a, b):
    a, b, dt = _binary_inputs(a, b)
    if dt.kind == "c":  # a complex number operand too, not only a complex tensor
        raise NotImplementedError(f'"div_floor_cpu" not implemented for \'{_dtype.scalar_type_name(dt)}\'')
    result = _rounded_div(a, b, "floor", recorded=False)
    differentiable = tuple(t for t in (a, b) if isinstance(t, Tensor) and t._requires_grad)
    if GRAD.enabled and differentiable:
        # torch defines no derivative for floor_divide (div with rounding_mode has its zero one)
        record_op(_FloorDivideBackward, differentiable, result)
    return result


_FloorDivideBackward = no_derivative_node("floor_divide")


class DivBackward2(ZeroGradNode):
    __slots__ = ()


class PowBackward0(Node):
    __slots__ = ("exponent",)
    saved_names = ("self",)
    saved_values = {"exponent": lambda n: n.exponent}

    def apply(self, grads):
        (x,) = self.saved()
        e = self.exponent
        if e == 0:
            return (grads[0] * 0,)
        return (grads[0] * _conj(e * x.pow(e - 1)),)


class PowBackward1(Node):
    __slots__ = ("a_shape", "b_shape")
    saved_names = ("exponent", "self", "result")

    def apply(self, grads):
        b, a, result = self.saved()
        g = grads[0]
        ga = gb = None
        if self._should_compute_output(0):
            # 0 where the exponent is 0, whatever the base (0 ** -1 would make it NaN), as torch
            ga = (g * _conj(b * a.pow(b - 1))).masked_fill(b == 0, 0.0)
            ga = _cast(sum_to_shape(ga, self.a_shape), a._ndarray.dtype)
        if self._should_compute_output(1):
            # d(a^b)/db = a^b * log(a), taken as 0 where a == 0 and b >= 0
            la = a.log()
            gb = g * _conj(result * la)
            gb = gb.masked_fill((a == 0) & (b.real >= 0), 0.0)
            gb = _cast(sum_to_shape(gb, self.b_shape), b._ndarray.dtype)
        return ga, gb


class PowBackward2(Node):
    __slots__ = ("base",)
    saved_names = ("exponent", "result")
    saved_values = {"self": lambda n: n.base}

    def apply(self, grads):
        exponent, result = self.saved()
        with _err():
            log_base = float(np.log(self.base)) if self.base >= 0 else float("nan")
        grad = grads[0] * _conj(result) * log_base
        if self.base == 0:  # 0 ** y is constant (0 or 1) for y >= 0: torch's gradient is 0 there
            grad = grad.masked_fill(exponent.real >= 0, 0.0)
        return (grad,)


def _power(base, exponent, dt):
    """``base ** exponent`` in dtype ``dt``. Integer tensors raised to negative integer tensors follow
    torch's integer rule (1 stays 1, -1 alternates, anything else gives 0), where NumPy raises."""
    base, exponent = data_of(base, dt), data_of(exponent, dt)
    if dt.kind in "iu" and np.any(np.asanyarray(exponent) < 0):
        negative = np.asanyarray(exponent) < 0
        out = np.power(base, np.where(negative, 0, exponent))
        odd = np.asanyarray(exponent) % 2 != 0
        at_negative = np.where(base == 1, 1, np.where(base == -1, np.where(odd, -1, 1), 0))
        return np.where(negative, at_negative, out).astype(dt)
    return np.power(base, exponent)


def _power_by_number(base, exponent):
    """``base ** exponent`` for a number exponent through the kernels torch's pow picks for these
    exponents: they differ from ``std::pow`` at -0.0 and -inf (sqrt(-0.0) is -0.0, rsqrt(-0.0) -inf)."""
    if base.dtype.kind == "f":
        if exponent == 0.5:
            return np.sqrt(base)
        if exponent == -0.5:
            return np.reciprocal(np.sqrt(base))
        if exponent == -1:
            return np.reciprocal(base)
        if exponent == -2:
            return np.reciprocal(base * base)
    if exponent == 2:
        return base * base
    if exponent == 3:
        return base * base * base
    return np.power(base, exponent)


@op(inplace=True)
def pow(a, b):
    for operand in (a, b):
        if isinstance(operand, Tensor):
            if operand._ndarray.dtype in _rules.LOWPREC:  # float8, float4, complex32
                _rules.refuse_lowprec(operand._ndarray, "pow")
    if is_number(a) and isinstance(b, Tensor):
        dt = result_np_dtype(b, a)
        with _err():
            result = _finish(_power(a, b, dt), dt)
        if GRAD.enabled and b._requires_grad:
            node = record_op(PowBackward2, (b,), result)
            node.base = a
            node.save(b, output=result)
        return result
    a, b, dt = _binary_inputs(a, b)
    _rules.refuse_kernel(np.empty(0, dt), _rules.BOOL, "pow")
    if isinstance(b, Tensor):
        with _err():
            result = _finish(_power(a, b, dt), dt)
        if _needs(a, b):
            node = record_op(PowBackward1, (a, b), result)
            node.a_shape, node.b_shape = a._ndarray.shape, b._ndarray.shape
            node.save(b, a, output=result)
        return result
    if dt.kind in "iu" and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    with _err():
        ad = data_of(a, dt)
        result = _finish(_power_by_number(np.asanyarray(ad), data_of(b, dt)), dt)
    if _needs(a, None):
        node = record_op(PowBackward0, (a,), result)
        node.exponent = b
        node.save(a)
    return result


@op()
def float_power(a, b):
    a = as_tensor_arg(a).double()
    return pow(a, b.double() if isinstance(b, Tensor) else b)


# ---- unary ops ------------------------------------------------------------------------------
def _negative(data):
    if data.dtype == np.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.")
    return np.negative(data)


neg = unary("neg", _negative, lambda g: -g, node="NegBackward0", floating=False, aliases=("negative",),
            inplace=True, saves_self=False, on_arrays=True)
def _rounded_once(ufunc):
    """``ufunc`` with float32 computed in float64 and rounded once. torch's float32 kernels for these
    functions are correctly rounded almost everywhere; NumPy's float32 loops are not (float32 exp: 40%
    of 1e6 normal samples off by an ulp from torch, against 1% when rounded once from float64)."""
    def forward(data, out=None):
        if data.dtype == np.float32:
            if out is None:
                return ufunc(data.astype(np.float64)).astype(np.float32)
            np.copyto(out, ufunc(data.astype(np.float64)), casting="same_kind")
            return out
        return ufunc(data, out=out)
    forward.__name__ = ufunc.__name__
    return forward


exp = unary("exp", _rounded_once(np.exp), lambda g, r: g * r, node="ExpBackward0", saves="result", inplace=True, on_arrays=True)
exp2 = unary("exp2", np.exp2, lambda g, r: g * r * float(np.log(2.0)), node="Exp2Backward0", saves="result",
             inplace=True, on_arrays=True)
log = unary("log", np.log, lambda g, x: g / x, node="LogBackward0", saves="self", inplace=True, on_arrays=True)
log2 = unary("log2", _rounded_once(np.log2), lambda g, x: g / (x * float(np.log(2.0))), node="Log2Backward0", saves="self",
             inplace=True, on_arrays=True)
log10 = unary("log10", _rounded_once(np.log10), lambda g, x: g / (x * float(np.log(10.0))), node="Log10Backward0", saves="self",
              inplace=True, on_arrays=True)
log1p = unary("log1p", _rounded_once(np.log1p), lambda g, x: g / (x + 1), node="Log1PBackward0", saves="self",
              inplace=True, on_arrays=True)
expm1 = unary("expm1", _rounded_once(np.expm1), lambda g, r: g * (r + 1), node="Expm1Backward0", saves="result",
              inplace=True, on_arrays=True)
sqrt = unary("sqrt", np.sqrt, lambda g, r: g / (r * 2), node="SqrtBackward0", saves="result",
             inplace=True, on_arrays=True)
rsqrt = unary("rsqrt", lambda d: 1 / np.sqrt(d), lambda g, r: g * r.pow(3) * -0.5, node="RsqrtBackward0",
              saves="result", inplace=True)
abs = unary("abs", np.abs, lambda g, x: g * x.sgn(), node="AbsBackward0", saves="self", floating=False,
            on_complex="own", aliases=("absolute",), refuse=(_rules.BOOL, "abs_cpu"))


def _abs_in_place(self):
    if self._ndarray.dtype.kind == "c":
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    from .views import apply_inplace
    return apply_inplace(self, abs)


op("abs_", function=False, method=("abs_", "absolute_"))(_abs_in_place)
sin = unary("sin", np.sin, lambda g, x: g * x.cos(), node="SinBackward0", saves="self", inplace=True,
            on_arrays=lambda g, x: g * np.cos(x))
cos = unary("cos", np.cos, lambda g, x: -(g * x.sin()), node="CosBackward0", saves="self", inplace=True,
            on_arrays=lambda g, x: -(g * np.sin(x)))
tan = unary("tan", np.tan, lambda g, r: g * (r * r + 1), node="TanBackward0", saves="result",
            inplace=True, on_arrays=True)
class _ResultBackwardBackward(Node):
    """tanh's or sigmoid's backward recorded under create_graph as torch records it: one node over
    the incoming gradient and the forward's result, saving both (torch's TanhBackwardBackward0 and
    SigmoidBackwardBackward0), whose own backward is the first-order one again (for the gradient)
    and ``output_part`` (for the result)."""

    __slots__ = ()
    saved_names = ("grad_output", "output")
    first_order = output_part = None

    def apply(self, grads):
        g, r = self.saved()
        gg = grads[0]
        cls = type(self)
        return (cls.first_order(gg, r) if self._should_compute_output(0) else None,
                cls.output_part(gg, g, r) if self._should_compute_output(1) else None)


def _result_backward(name, formula, output_part):
    """The backward of an op that saves its result: ``formula(g, r)`` on arrays or tensors; under
    create_graph recorded as one ``name`` node (not as the formula's ops)."""
    node_cls = type(name, (_ResultBackwardBackward,), {"__slots__": ()})

    def backward(g, r):
        if not (isinstance(g, Tensor) and GRAD.enabled and (g._requires_grad or r._requires_grad)):
            return formula(g, r)
        GRAD.enabled = False
        try:
            out = formula(g, r)
        finally:
            GRAD.enabled = True
        node = record_op(node_cls, (g, r), out)
        node.save(g, r)
        return out
    node_cls.first_order = staticmethod(backward)
    node_cls.output_part = staticmethod(output_part)
    return backward


tanh_values = _rounded_once(np.tanh)  # also the recurrent layers' own tanh steps
tanh = unary("tanh", tanh_values, _result_backward("TanhBackwardBackward0", lambda g, r: g * (1 - r * r),
                                               lambda gg, g, r: gg * ((r * -2.0) * g)),
             node="TanhBackward0", saves="result", inplace=True, on_arrays=True)
_sinh, _cosh = _rounded_once(np.sinh), _rounded_once(np.cosh)
sinh = unary("sinh", _sinh, lambda g, x: g * x.cosh(), node="SinhBackward0", saves="self", inplace=True,
             on_arrays=lambda g, x: g * _cosh(x))
cosh = unary("cosh", _cosh, lambda g, x: g * x.sinh(), node="CoshBackward0", saves="self", inplace=True,
             on_arrays=lambda g, x: g * _sinh(x))
asin = unary("asin", np.arcsin, lambda g, x: g * (1 - x * x).rsqrt(), node="AsinBackward0", saves="self",
             aliases=("arcsin",), inplace=True)
acos = unary("acos", np.arccos, lambda g, x: -(g * (1 - x * x).rsqrt()), node="AcosBackward0", saves="self",
             aliases=("arccos",), inplace=True)
atan = unary("atan", np.arctan, lambda g, x: g / (x * x + 1), node="AtanBackward0", saves="self",
             aliases=("arctan",), inplace=True, on_arrays=True)
reciprocal = unary("reciprocal", np.reciprocal, lambda g, r: -(g * r * r), node="ReciprocalBackward0",
                   saves="result", inplace=True, on_arrays=True)


_expit = None  # scipy.special.expit, imported on first use (scipy.special adds 0.4 s to the import)


def _sigmoid_np(d):
    if d.dtype.kind == "f":
        # SciPy's expit is one ufunc pass, overflow-free and closer to torch's values than
        # 1 / (1 + exp(-x)); half precision computes in float32 and rounds once, as torch does
        global _expit
        if _expit is None:
            from scipy.special import expit as _expit
        if d.dtype.itemsize < 4:
            return _expit(d.astype(np.float32)).astype(d.dtype)
        return _expit(d)
    return _sigmoid_complex(d)


def _sigmoid_complex(d):
    # exp of a negative argument only: no overflow warnings for large |x|
    out = np.empty_like(d)
    pos = d >= 0
    np.divide(1, 1 + np.exp(-d, where=pos, out=np.zeros_like(d)), where=pos, out=out)
    ed = np.exp(d, where=~pos, out=np.zeros_like(d))
    np.divide(ed, 1 + ed, where=~pos, out=out)
    return out


# torch's sigmoid_backward(grad, result), recorded as SigmoidBackwardBackward0 (other backwards use it too)
sigmoid_backward = _result_backward("SigmoidBackwardBackward0", lambda g, r: g * (r * (1 - r)),
                                    lambda gg, g, r: (gg * g) * ((r * -2.0) + 1))
sigmoid = unary("sigmoid", _sigmoid_np, sigmoid_backward, node="SigmoidBackward0", saves="result", inplace=True,
                on_arrays=True)


def _relu_np(d):
    if d.dtype.kind == "b":
        raise RuntimeError("Boolean inputs not supported for relu")
    if d.dtype.kind == "f":
        # np.clip with scalar bounds of the array's own type takes NumPy's vectorized clip loop:
        # 115 us on a 64x16x28x28 float32 batch, against 185 us for np.maximum with an array of
        # zeros (and 400 us against the scalar 0); like torch it keeps NaN and the sign of -0.0
        bounds = _RELU_BOUNDS.get(d.dtype)
        if bounds is None:
            # 0-d arrays: NumPy scalars as ufunc operands cost 0.5 us more per call
            bounds = _RELU_BOUNDS[d.dtype] = (np.zeros((), d.dtype), np.full((), np.inf, d.dtype))
        return _clip_ufunc(d, *bounds)
    return np.maximum(d, np.zeros_like(d))


_RELU_BOUNDS = {}  # per floating dtype: (0, inf) as 0-d arrays


_SAME_SIZE_INT = {2: np.int16, 4: np.int32, 8: np.int64}


def _zeroed_where(g, drop):
    """+0.0 where ``drop``, else ``g``, exactly as torch's threshold_backward: the bits of ``g`` ANDed
    with all-zeros or all-ones. Multiplying by a mask would turn an inf or NaN gradient at a
    dropped position into NaN, and a negative one into -0.0; this costs one more integer pass."""
    ints = _SAME_SIZE_INT[g.dtype.itemsize]
    bits = drop.view(np.uint8).astype(ints)
    bits -= 1  # 1 -> 0, 0 -> all ones
    np.bitwise_and(np.ascontiguousarray(g).view(ints), bits, out=bits)
    return bits.view(g.dtype)


class ThresholdBackwardBackward0(Node):
    """ReLU's backward, recorded under create_graph as torch records it: one node over the incoming
    gradient and ReLU's result, which it saves (so a second pass through a freed graph raises here,
    where torch's does). The gradient's part is masked the same way; the result's part is zero
    (materialized, as torch's), so the double backward reaches ReLU's output and its hooks."""

    __slots__ = ()
    saved_names = ("self",)
    saved_values = {"threshold": lambda n: 0}

    def apply(self, grads):
        (r,) = self.saved()
        gg = grads[0]
        g_part = r_part = None
        if self._should_compute_output(0) and gg is not None:
            g_part = gg.masked_fill(r <= 0, 0)  # torch's test: a NaN result lets the gradient through
        if self._should_compute_output(1):
            r_part = wrap(np.zeros(r._ndarray.shape, dtype=gg._ndarray.dtype if gg is not None else r._ndarray.dtype))
        return g_part, r_part


def _relu_backward(g, r):
    gd, rd = g._ndarray, r._ndarray
    drop = rd <= 0  # torch's threshold_backward test: where the result is NaN the gradient passes
    exact = gd.dtype == rd.dtype and gd.dtype.kind == "f"
    out = wrap(_zeroed_where(gd, drop) if exact else gd * ~drop)
    if GRAD.enabled and (g._requires_grad or r._requires_grad):  # create_graph
        node = record_op(ThresholdBackwardBackward0, (g, r), out)
        node.save(r)
    return out


relu = unary("relu", _relu_np, _relu_backward, node="ReluBackward0", saves="result", floating=False, inplace=True,
             on_complex="clamp is not supported for complex types")


def _exact_for_integers(np_fn):
    """Rounding ops leave integers (and bools) as they are."""
    return lambda d: np_fn(d) if _dtype.is_floating_np(d.dtype) else d.copy()


def _sign_np(d):
    if d.dtype.kind == "b":
        return d.copy()
    out = np.sign(d)
    if d.dtype.kind == "f":  # torch's sign of NaN is 0
        out = np.where(np.isnan(out), out.dtype.type(0), out)
    return out


sign = unary("sign", _sign_np, None, node="SignBackward0", floating=False, inplace=True, saves_self=False,
             on_complex="Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn "
                        "instead.")
_real_sgn = unary("sgn", _sign_np, None, node="SgnBackward0", floating=False, function=False, method=False)


def _complex_sgn_backward(g, x, s):
    """sgn of a complex tensor, z / |z|: torch's gradient (g - conj(g) sgn(z)^2) / (2 |z|), 0 at z = 0."""
    r = x.abs()
    safe = r + (r == 0)
    return ((g - g.conj() * s * s) / (safe * 2)).masked_fill(r == 0, 0)


SgnBackward0 = formula_node("SgnBackward0", ("self", "result"), _complex_sgn_backward)


@op(inplace=True)
def sgn(x):
    """``x / |x|`` for complex tensors (0 at 0); ``sign`` for real ones."""
    if not isinstance(x, Tensor) or x._ndarray.dtype.kind != "c" and x._ndarray.dtype != _C32:
        return _real_sgn(x)
    d = x._ndarray
    wide = _dtype.complex32_as_complex64(d) if d.dtype == _C32 else d  # complex32: computed in complex64
    with _err():
        r = np.abs(wide)
        values = np.where(r == 0, 0, wide / np.where(r == 0, 1, r)).astype(wide.dtype)
        result = wrap(_dtype.to_complex32(values) if d.dtype == _C32 else values)
    if GRAD.enabled and x._requires_grad:
        record_op(SgnBackward0, (x,), result).save(x, output=result)
    return result

floor = unary("floor", _exact_for_integers(np.floor), None, node="FloorBackward0", floating=False, inplace=True,
              on_complex="floor is not supported for complex inputs", refuse=(_rules.BOOL, "floor_vml_cpu"),
              saves_self=False)
ceil = unary("ceil", _exact_for_integers(np.ceil), None, node="CeilBackward0", floating=False, inplace=True,
             on_complex="ceil is not supported for complex inputs", refuse=(_rules.BOOL, "ceil_vml_cpu"),
             saves_self=False)
trunc = unary("trunc", _exact_for_integers(np.trunc), None, node="TruncBackward0", floating=False, inplace=True,
              on_complex="trunc is not supported for complex inputs", refuse=(_rules.BOOL, "trunc_vml_cpu"),
              saves_self=False)
frac = unary("frac", lambda d: d - np.trunc(d), lambda g: g, node="FracBackward0", inplace=True,
             on_complex='"frac_cpu" not implemented for \'{dtype}\'', refuse=(_rules.INTEGRAL, "frac_cpu"))
_round_half_even = unary("round", _exact_for_integers(np.round), None, node="RoundBackward0", floating=False,
                         on_complex='"round_vml_cpu" not implemented for \'{dtype}\'',
                         function=False, method=False, refuse=(_rules.BOOL, "round_vml_cpu"))


class RoundBackward1(ZeroGradNode):
    __slots__ = ()


@op(inplace=True, saves_self=False)
def round(x, *, decimals=0):
    if decimals == 0:
        return _round_half_even(x)
    if not isinstance(x, Tensor):
        x = as_tensor_arg(x)
    data = x._ndarray
    _rules.refuse_kernel(data, _rules.INTEGRAL, "round_cpu")
    if _dtype.is_floating_np(data.dtype):
        result = wrap(_dtype.narrow_to(np.round(_dtype.widen(data), decimals), data.dtype))
    else:
        result = wrap(data.copy())
    if GRAD.enabled and x._requires_grad:
        record_op(RoundBackward1, (x,), result).keep_shapes(x)
    return result


@op(inplace=True)
def square(x):
    return pow(x, 2)


# ---- clamp, maximum/minimum, where, lerp -------------------------------------------------------
class ClampBackward1(Node):
    __slots__ = ("lo", "hi")
    saved_names = ("self",)
    saved_values = {"min": lambda n: n.lo, "max": lambda n: n.hi}

    def apply(self, grads):
        (x,) = self.saved()
        mask = None
        if self.lo is not None:
            mask = x >= self.lo
        if self.hi is not None:
            m = x <= self.hi
            mask = m if mask is None else mask & m
        # selected, not multiplied: a NaN or inf gradient where x was clamped gives 0, as torch's where
        return (grads[0].masked_fill(~mask, 0),)


class ClampBackward0(Node):
    __slots__ = ()
    saved_names = ("max", "min", "self")  # torch packs them in this order

    def apply(self, grads):
        hi, lo, x = self.saved()
        g = grads[0]
        gx = gl = gh = None
        lo_mask = (x >= lo) if lo is not None else None
        hi_mask = (x <= hi) if hi is not None else None
        if self._should_compute_output(0):
            mask = lo_mask if hi_mask is None else hi_mask if lo_mask is None else lo_mask & hi_mask
            gx = sum_to_shape(g.masked_fill(~mask, 0), x._ndarray.shape)
        # torch's selections: a bound gets the gradient where x is strictly beyond it (a NaN is not),
        # and with both bounds min only while min < max, max also where max < min
        if lo is not None and self._should_compute_output(1):
            m = x < lo if hi is None else (x < lo) & (lo < hi)
            gl = sum_to_shape(g.masked_fill(~m, 0), lo._ndarray.shape)
        if hi is not None and self._should_compute_output(2):
            m = x > hi if lo is None else (x > hi) | (hi < lo)
            gh = sum_to_shape(g.masked_fill(~m, 0), hi._ndarray.shape)
        return gx, gl, gh


class ClampMinBackward0(ClampBackward1):
    """``clamp_min`` by a number (torch's own op and node: keeps ``min`` only)."""

    __slots__ = ()
    saved_values = {"min": lambda n: n.lo}


class ClampMaxBackward0(ClampBackward1):
    __slots__ = ()
    saved_values = {"max": lambda n: n.hi}


@op(aliases=("clip",), inplace=True)
def clamp(x, min=None, max=None):
    return _clamp(x, min, max, ClampBackward1)


def _clamp(x, min, max, scalar_node):
    if x._ndarray.dtype in _rules.LOWPREC:  # float8, float4, complex32
        _rules.refuse_lowprec(x._ndarray, "clamp_scalar_cpu")
    refuse_complex("clamp is not supported for complex types", x)
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    # torch promotes across the input and the bounds: a bool or int tensor clamped by floats is a
    # float result, a bool one clamped by ints an int64 one
    dt = _dtype.result_type(x, *[bound for bound in (min, max) if bound is not None]).np
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        lo = as_tensor_arg(min, x) if min is not None else None
        hi = as_tensor_arg(max, x) if max is not None else None
        data = x._ndarray.astype(dt, copy=False)
        check_broadcast(x, lo, hi)
        if lo is not None:
            data = np.maximum(data, lo._ndarray.astype(dt, copy=False))
        if hi is not None:
            data = np.minimum(data, hi._ndarray.astype(dt, copy=False))
        result = wrap(np.asanyarray(data, dtype=dt))
        if GRAD.enabled and (x._requires_grad or (lo is not None and lo._requires_grad)
                             or (hi is not None and hi._requires_grad)):
            node = record_op(ClampBackward0, (x, lo, hi), result)
            node.save(hi, lo, x)
        return result
    data = x._ndarray.astype(dt, copy=False)
    with _err():
        out = np.clip(data, min, max) if min is None or max is None or min <= max else np.full_like(data, max)
    result = wrap(np.asanyarray(out, dtype=dt))
    if GRAD.enabled and x._requires_grad:
        node = record_op(scalar_node, (x,), result)
        node.lo, node.hi = min, max
        node.save(x)
    return result


clip = clamp


@op(inplace=True)
def clamp_min(x, min):
    return _clamp(x, min, None, ClampMinBackward0)


@op(inplace=True)
def clamp_max(x, max):
    return _clamp(x, None, max, ClampMaxBackward0)


class MaximumBackward0(Node):
    __slots__ = ("pick",)
    saved_names = ("other", "self")

    def apply(self, grads):
        b, a = self.saved()
        g = grads[0]
        a_loses, b_loses = (a < b, a > b) if self.pick == "max" else (a > b, a < b)
        # ties share the gradient; where a NaN makes every comparison false, both operands get all of it
        shared = g.where(a != b, g / 2)
        ga = sum_to_shape(shared.masked_fill(a_loses, 0), a._ndarray.shape) if self._should_compute_output(0) else None
        gb = sum_to_shape(shared.masked_fill(b_loses, 0), b._ndarray.shape) if self._should_compute_output(1) else None
        return ga, gb


class MinimumBackward0(MaximumBackward0):
    __slots__ = ()


def _extremum(a, b, np_fn, node_cls, pick):
    a = as_tensor_arg(a)
    b = as_tensor_arg(b, a)
    dt = result_np_dtype(a, b)
    with _err():
        result = _finish(np_fn(data_of(a, dt), data_of(b, dt)), dt)
    if _needs(a, b):
        node = record_op(node_cls, (a, b), result)
        node.pick = pick
        node.save(b, a)
    return result


@op(inplace=True)
def maximum(a, b):
    _rules.refuse_lowprec(_operand_dtype(a, b), "maximum_cpu")
    refuse_complex("maximum not implemented for complex tensors.", a, b, error=RuntimeError)
    return _extremum(a, b, np.maximum, MaximumBackward0, "max")


@op(inplace=True)
def minimum(a, b):
    _rules.refuse_lowprec(_operand_dtype(a, b), "minimum_cpu")
    refuse_complex("minimum not implemented for complex tensors.", a, b, error=RuntimeError)
    return _extremum(a, b, np.minimum, MinimumBackward0, "min")


class WhereBackward0(Node):
    __slots__ = ("a_shape", "b_shape")
    saved_names = ("condition",)

    def apply(self, grads):
        (cond,) = self.saved()
        g = grads[0]
        zero = g * 0
        ga = sum_to_shape(g.where(cond, zero), self.a_shape) if self._should_compute_output(0) else None
        gb = sum_to_shape(zero.where(cond, g), self.b_shape) if self._should_compute_output(1) else None
        return ga, gb


@op(method=False)  # Tensor.where(condition, other) takes self second
def where(condition, input=None, other=None):
    condition = as_tensor_arg(condition)
    if input is None and other is None:
        return tuple(wrap(i) for i in np.nonzero(condition._ndarray))
    if condition._ndarray.dtype == np.uint8:
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and will be removed in a "
                      "future version of PyTorch. Use a boolean condition instead.", UserWarning, stacklevel=2)
    elif condition._ndarray.dtype != np.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{_dtype.scalar_type_name(condition._ndarray.dtype)}")
    a = as_tensor_arg(input) if not is_number(input) else input
    b = as_tensor_arg(other) if not is_number(other) else other
    # a number beside a tensor takes the result's type as torch converts a Scalar (out of range: an error)
    if isinstance(b, Tensor) and not isinstance(a, Tensor):
        a = _dtype.checked_scalar(a, result_np_dtype(b, a))
    elif isinstance(a, Tensor) and not isinstance(b, Tensor):
        b = _dtype.checked_scalar(b, result_np_dtype(a, b))
    if not isinstance(a, Tensor):
        a = as_tensor_arg(a, b if isinstance(b, Tensor) else None)
    if not isinstance(b, Tensor):
        b = as_tensor_arg(b, a)
    dt = result_np_dtype(a, b)
    cond = condition._ndarray.astype(bool, copy=False)
    try:
        result = wrap(np.where(cond, data_of(a, dt), data_of(b, dt)))
    except ValueError:
        raise RuntimeError(broadcast_mismatch(cond.shape, a._ndarray.shape, b._ndarray.shape)) from None
    if _needs(a, b):
        node = record_op(WhereBackward0, (a, b), result)
        node.a_shape, node.b_shape = a._ndarray.shape, b._ndarray.shape
        node.save(wrap(cond))
    return result


class LerpBackward0(Node):
    __slots__ = ("weight", "shapes")
    saved_values = {"weight": lambda n: n.weight}

    def apply(self, grads):
        g = grads[0]
        w = self.weight
        ga = sum_to_shape(g * (1 - w), self.shapes[0]) if self._should_compute_output(0) else None
        gb = sum_to_shape(g * w, self.shapes[1]) if self._should_compute_output(1) else None
        return ga, gb


class LerpBackward1(Node):
    __slots__ = ()
    saved_names = ("end", "self", "weight")  # torch packs end before self

    def apply(self, grads):
        g = grads[0]
        end, start, w = self.saved()
        ga = sum_to_shape(g * (1 - w), start._ndarray.shape) if self._should_compute_output(0) else None
        gb = sum_to_shape(g * w, end._ndarray.shape) if self._should_compute_output(1) else None
        gw = sum_to_shape(g * (end - start), w._ndarray.shape) if self._should_compute_output(2) else None
        return ga, gb, gw


@op(inplace=True)
def lerp(start, end, weight):
    start, end = as_tensor_arg(start), as_tensor_arg(end)
    _rules.refuse_lowprec(start._ndarray, "lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar")
    check_broadcast(start, end, weight)
    # one dtype throughout; a 0-d weight is a number of any float dtype
    for name, other in (("end", end), ("weight", weight)):
        if isinstance(other, Tensor) and other._ndarray.dtype != start._ndarray.dtype and (name == "end" or other._ndarray.ndim):
            raise RuntimeError(f"expected dtype {_dtype.cpp_type_name(start._ndarray.dtype)} for `{name}` but got dtype "
                               f"{_dtype.cpp_type_name(other._ndarray.dtype)}")
    if isinstance(weight, Tensor) and weight._ndarray.ndim == 0 and weight._ndarray.dtype != start._ndarray.dtype:
        weight = weight.to(start.dtype)
    _rules.refuse_kernel(start._ndarray, _rules.INTEGRAL,
                         "lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar")
    if isinstance(weight, Tensor):
        result = wrap(start._ndarray + weight._ndarray * (end._ndarray - start._ndarray))
        if GRAD.enabled and (start._requires_grad or end._requires_grad or weight._requires_grad):
            node = record_op(LerpBackward1, (start, end, weight), result)
            node.save(end, start, weight)
        return result
    s, e = _dtype.widen(start._ndarray), _dtype.widen(end._ndarray)  # bfloat16: float32 math, one rounding
    result = wrap((s + weight * (e - s)).astype(start._ndarray.dtype, copy=False))
    if _needs(start, end):
        node = record_op(LerpBackward0, (start, end), result)
        node.weight = weight
        node.shapes = (start._ndarray.shape, end._ndarray.shape)  # torch keeps no tensor for a number weight
    return result


NanToNumBackward0 = formula_node("NanToNumBackward0", ("self",), lambda g, x: g * x.isfinite())


@op(inplace=True)
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    _rules.refuse_lowprec(x._ndarray, "nan_to_num")
    data = x._ndarray
    if _dtype.is_bfloat16_np(data.dtype):  # NumPy sees no float in bfloat16: work in float32 (exact)
        top = _dtype.finfo(_dtype.bfloat16).max
        posinf, neginf = (top if posinf is None else posinf), (-top if neginf is None else neginf)
        result = wrap(np.nan_to_num(data.astype(np.float32), nan=nan, posinf=posinf, neginf=neginf).astype(data.dtype))
    else:
        result = wrap(np.nan_to_num(data, nan=nan, posinf=posinf, neginf=neginf))
    if GRAD.enabled and x._requires_grad:
        node = record_op(NanToNumBackward0, (x,), result)
        node.save(x)
    return result


class Atan2Backward0(Node):
    __slots__ = ()
    saved_names = ("other", "self")

    def apply(self, grads):
        b, a = self.saved()
        g = grads[0]
        denom = a * a + b * b
        # torch's reciprocal is 0 where the squares vanish (at the origin, or where they underflow)
        recip = denom.reciprocal().masked_fill(denom == 0, 0.0)
        ga = sum_to_shape(g * b * recip, a._ndarray.shape) if self._should_compute_output(0) else None
        gb = sum_to_shape(g * -a * recip, b._ndarray.shape) if self._should_compute_output(1) else None
        return ga, gb


@op(aliases=("arctan2",), inplace=True)
def atan2(a, b):
    refuse_complex('"atan2_cpu" not implemented for \'{dtype}\'', a, b)
    a, b = as_tensor_arg(a), as_tensor_arg(b)
    _rules.refuse_lowprec(result_np_dtype(a, b), "atan2_cpu")
    dt = _dtype.result_type(a, b)
    if not dt.is_floating_point:  # integer and bool operands give the default float type, as in torch
        dt = _dtype.get_default_dtype()
    # computed in float64 and rounded once: NumPy's float32 arctan2 is off by an ulp where torch's is not
    work = np.float64 if dt.np.itemsize < 8 else dt.np
    with _err():
        result = wrap(np.arctan2(a._ndarray.astype(work, copy=False), b._ndarray.astype(work, copy=False)).astype(dt.np))
    if _needs(a, b):
        node = record_op(Atan2Backward0, (a, b), result)
        node.save(b, a)
    return result


class RemainderBackward0(_PassThroughNode):
    """remainder and fmod by a divisor that needs no gradient: the gradient passes through."""

    __slots__ = ()


class FmodBackward0(RemainderBackward0):
    __slots__ = ()


class RemainderBackward1(Node):
    """remainder by a tensor: the gradient passes to the dividend; the divisor's is -grad times the
    quotient rounded as the op rounds it (torch saves the operands only when the divisor needs it)."""

    __slots__ = ("a_shape", "b_shape", "a_dtype", "b_dtype")
    saved_names = ("other", "self")
    rounding_mode = "floor"

    def apply(self, grads):
        g = grads[0]
        ga = gb = None
        if self._should_compute_output(0):
            ga = _cast(sum_to_shape(g, self.a_shape), self.a_dtype)
        if self._should_compute_output(1):
            b, a = self.saved()
            gb = -g * a.div(b, rounding_mode=self.rounding_mode)
            gb = _cast(sum_to_shape(gb, self.b_shape), self.b_dtype)
        return ga, gb


class FmodBackward1(RemainderBackward1):
    __slots__ = ()
    rounding_mode = "trunc"


def _declared_as(fn, name, **decl):
    """``fn``, a function a factory made for op ``name``, under that name and declared as the op."""
    fn.__name__ = fn.__qualname__ = name
    return op(name, **decl)(fn)


def _modulo(np_fn, name, node_cls, tensor_node_cls):
    """remainder (the divisor's sign) or fmod (the dividend's sign) from its NumPy function."""
    def modulo(a, b):
        refuse_complex(f'"{name}_cpu" not implemented for \'{{dtype}}\'', a, b)
        _rules.refuse_lowprec(_operand_dtype(a, b), f"{name}_cpu")
        a, b, dt = _binary_inputs(a, b)
        if dt.kind in "cb":   # a complex Python number promotes a real tensor; two bools stay bool
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtype.scalar_type_name(dt)}\'')
        ad, bd = _arith_operand(a, dt), _arith_operand(b, dt)
        _refuse_integer_zero_divisor(bd, dt)
        with _err():
            result = _finish(np_fn(ad, bd), dt)
        if isinstance(b, Tensor):
            if _needs(a, b):
                node = record_op(tensor_node_cls, (a, b), result)
                node.a_shape, node.a_dtype = a._ndarray.shape, a._ndarray.dtype
                node.b_shape, node.b_dtype = b._ndarray.shape, b._ndarray.dtype
                if node.next_functions[1][0] is not None:
                    node.save(b, a)
                else:
                    node.save(None, None)
        elif _needs(a, None):
            record_op(node_cls, (a,), result)
        return result
    return _declared_as(modulo, name, inplace=True)


def _float_remainder(a, b):
    """torch's remainder: fmod, moved by the divisor where the signs differ. A zero keeps the
    dividend's sign (NumPy's mod gives it the divisor's)."""
    if np.result_type(a, b).kind in "iub":
        return np.mod(a, b)
    mod = np.fmod(a, b)
    moved = (mod != 0) & ((np.asanyarray(b) < 0) != (mod < 0))
    return np.where(moved, mod + b, mod).astype(mod.dtype, copy=False)


remainder = _modulo(_float_remainder, "remainder", RemainderBackward0, RemainderBackward1)
fmod = _modulo(np.fmod, "fmod", FmodBackward0, FmodBackward1)


# ---- comparisons and logic (no gradient) -------------------------------------------------------
_FLOAT4_X2 = _dtype.float4_e2m1fn_x2.np


def _compare(np_fn, name, aliases=()):
    def compare(a, b):
        if not isinstance(a, Tensor):
            a = as_tensor_arg(a)
        if not isinstance(b, Tensor) and not is_number(b):
            b = as_tensor_arg(b)
        if ordered:
            refuse_complex(f'"{name}_cpu" not implemented for \'{{dtype}}\'', a, b)
        dt = result_np_dtype(a, b)
        if ordered and dt.kind == "c":   # ``t < 1j``: the promoted type is complex
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_dtype.scalar_type_name(dt)}\'')
        if dt == _FLOAT4_X2:  # packed float4 pairs: torch compares them as bytes, for (in)equality only
            if ordered or not isinstance(b, Tensor):
                raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Float4_e2m1fn_x2'")
            return wrap(np.asanyarray(np_fn(a._ndarray.view(np.uint8), b._ndarray.view(np.uint8))))
        with _err():
            return wrap(np.asanyarray(_np_binary(np_fn, a, b, dt)))
    ordered = name in ("lt", "le", "gt", "ge")
    return _declared_as(compare, name, aliases=aliases, inplace=True)


eq = _compare(np.equal, "eq")
ne = _compare(np.not_equal, "ne", ("not_equal",))
lt = _compare(np.less, "lt", ("less",))
le = _compare(np.less_equal, "le", ("less_equal",))
gt = _compare(np.greater, "gt", ("greater",))
ge = _compare(np.greater_equal, "ge", ("greater_equal",))
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def _logical(np_fn, name):
    def logical(a, b):
        a, b = as_tensor_arg(a), as_tensor_arg(b)
        with _err():
            return wrap(np_fn(a._ndarray, b._ndarray))
    return _declared_as(logical, name, inplace=True)


logical_and = _logical(np.logical_and, "logical_and")
logical_or = _logical(np.logical_or, "logical_or")
logical_xor = _logical(np.logical_xor, "logical_xor")


@op(inplace=True)
def logical_not(a):
    return wrap(np.logical_not(as_tensor_arg(a)._ndarray))


def _bitwise(np_fn, name):
    def bitwise(a, b):
        a = as_tensor_arg(a)
        if not isinstance(b, Tensor) and not (b.__class__ is int and a._ndarray.dtype.kind in "iu"):
            b = as_tensor_arg(b, a)   # an int stays a number: it wraps around a's type (_arith_operand)
        dt = result_np_dtype(a, b)
        if np.dtype(dt).kind in "fc" or not np.dtype(dt).kind:
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_dtype.scalar_type_name(np.dtype(dt))}'")
        with _err():
            return wrap(np_fn(_arith_operand(a, dt), _arith_operand(b, dt)))
    return _declared_as(bitwise, name, inplace=True)


bitwise_and = _bitwise(np.bitwise_and, "bitwise_and")
bitwise_or = _bitwise(np.bitwise_or, "bitwise_or")
bitwise_xor = _bitwise(np.bitwise_xor, "bitwise_xor")


@op(inplace=True)
def bitwise_not(a):
    if a._ndarray.dtype.kind in "fcV":
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for '{_dtype.scalar_type_name(a._ndarray.dtype)}'")
    return wrap(np.invert(a._ndarray))


@op()
def isnan(x):
    if x._ndarray.dtype == _C32:
        return wrap(np.isnan(_dtype.complex32_as_complex64(x._ndarray)))
    return wrap(np.isnan(x._ndarray) if _dtype.is_inexact_np(x._ndarray.dtype) else np.zeros(x._ndarray.shape, bool))


@op()
def isinf(x):
    if x._ndarray.dtype != _dtype.float8_e5m2.np:  # the one float8 type torch's isinf takes: it has inf
        if x._ndarray.dtype in _rules.LOWPREC:  # float8, float4, complex32
            _rules.refuse_lowprec(x._ndarray, "isinf")
    return wrap(np.isinf(x._ndarray) if _dtype.is_inexact_np(x._ndarray.dtype) else np.zeros(x._ndarray.shape, bool))


@op()
def isfinite(x):
    return wrap(np.isfinite(x._ndarray) if _dtype.is_inexact_np(x._ndarray.dtype) else np.ones(x._ndarray.shape, bool))


@op()
def isposinf(x):
    return wrap(np.isposinf(x._ndarray))


@op()
def isneginf(x):
    return wrap(np.isneginf(x._ndarray))


@op()
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = as_tensor_arg(a), as_tensor_arg(b, a)
    if a._ndarray.dtype in _rules.LOWPREC:  # float8, float4, complex32
        _rules.refuse_lowprec(a._ndarray, "mul_cpu_reduced_float")
    if a._ndarray.dtype != b._ndarray.dtype:
        raise RuntimeError(f"{_dtype.scalar_type_name(a._ndarray.dtype)} did not match "
                           f"{_dtype.scalar_type_name(b._ndarray.dtype)}")
    check_broadcast(a, b)
    return wrap(np.isclose(a._ndarray, b._ndarray, rtol=rtol, atol=atol, equal_nan=equal_nan))


@op()
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    close = isclose(a, b, rtol, atol, equal_nan)._ndarray.all()
    if close.__class__ is MetaArray:   # no values to compare: torch's error for reading a meta tensor
        raise RuntimeError(NO_ITEM)
    return bool(close)


@op()
def equal(a, b) -> bool:
    return a._ndarray.shape == b._ndarray.shape and bool(np.array_equal(a._ndarray, b._ndarray))


@op("where", function=False)
def where_method(self, condition, other):
    return where(condition, self, other)


@op(inplace=True)
def addcmul(x, t1, t2, *, value=1):
    check_broadcast(x, t1, t2)
    return x + (t1 * t2) * value if value != 1 else x + t1 * t2


@op(inplace=True)
def addcdiv(x, t1, t2, *, value=1):
    check_broadcast(x, t1, t2)
    return x + (t1 / t2) * value if value != 1 else x + t1 / t2


def _maybe_out(result, out, name="out"):
    if out is None:
        return result
    # written in place, as torch writes out= (views of out see it; cast to out's dtype); autograd records
    # no out= call
    from .._out import write_native_out
    if result.requires_grad or (GRAD.enabled and isinstance(out, Tensor) and out.requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    return write_native_out(result, out, name)


# a CPU tensor meeting a meta one in these is torch's device mismatch (see _meta)
operands_are_the_ops_own(_np_binary, _fast_binary, where)

__all__ = module_all(globals())
