"""Shared plumbing for op definitions: operand coercion, graph recording, broadcasting sums."""
from __future__ import annotations

import numbers

import numpy as np

from .. import _dtype
from .._tensor import Tensor, wrap
from ..autograd import grad_mode
from ..autograd.graph import Node

__all__ = ["GRAD", "NONE_EDGE", "edge", "any_requires_grad", "record", "as_tensor_arg", "is_number", "result_np_dtype",
           "data_of", "sum_to_shape", "float_dtype_for", "zeros_like_data", "quiet_fp", "refuse_complex",
           "FP_IGNORE", "fp_quiet", "fp_restore"]

GRAD = grad_mode.STATE
NONE_EDGE = (None, 0)


class _PassThroughNode(Node):
    """Base of the nodes whose input gradient is the output gradient unchanged (clone, alias, a
    number added or taken away, ...): subclasses only give torch's node name."""

    __slots__ = ()

    def apply(self, grads):
        return (grads[0],)


def edge(t) -> tuple:
    """The graph edge for ``t`` as an op input: where its gradient must be sent."""
    if t is None or not t._requires_grad:
        return NONE_EDGE
    fn = t._grad_fn_value
    if t._base_value is not None and t._view_version != t._version_counter[0]:
        fn = t.grad_fn  # changed in place through its base since: grad_fn regenerates the view's node
    if fn is not None:
        return (fn, t._output_nr)
    if t._base_value is not None and t.__dict__ and _views().is_no_grad_view(t):
        return NONE_EDGE  # torch gives such a view no grad accumulator
    return (t._grad_accumulator(), 0)


def _views():
    from . import views
    return views


def any_requires_grad(*tensors) -> bool:
    if not GRAD.enabled:
        return False
    for t in tensors:
        if t is not None and t._requires_grad:
            return True
    return False


def record(node: Node, *outputs: Tensor, inputs=None) -> None:
    """Make ``node`` the grad_fn of ``outputs`` (output_nr in order); ``inputs``: the op's inputs
    (unused here; kept so that every recording point says what the op read)."""
    for i, out in enumerate(outputs):
        out._grad_fn_value = node
        out._output_nr = i
        out._requires_grad = True


def as_tensor_arg(x, like: Tensor | None = None) -> Tensor:
    """A Tensor for an op argument; numbers become 0-d tensors of the promoted dtype."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, np.ndarray):
        return wrap(x)
    if like is not None:
        dt = _dtype.result_type(like, x)
        return wrap(np.asanyarray(x, dtype=dt.np))
    return wrap(np.asanyarray(x, dtype=_dtype.scalar_dtype(x).np if isinstance(x, numbers.Number) else None))


def is_number(x) -> bool:
    return isinstance(x, (numbers.Number, np.generic)) and not isinstance(x, Tensor)


def result_np_dtype(a, b) -> np.dtype:
    """NumPy dtype of torch's promotion of ``a`` and ``b`` (fast path for the common cases)."""
    if type(b) is float and a._ndarray.dtype.kind == "f":
        return a._ndarray.dtype
    if isinstance(b, Tensor) and isinstance(a, Tensor) and a._ndarray.dtype is b._ndarray.dtype:
        return a._ndarray.dtype
    return _dtype.result_type(a, b).np


def data_of(x, np_dtype):
    """The raw operand for NumPy: an array in ``np_dtype`` (no copy when already there) or a scalar."""
    if isinstance(x, Tensor):
        d = x._ndarray
        # a bool mask needs no converted copy: NumPy's loops promote bool to any other type exactly
        return d if d.dtype == np_dtype or d.dtype == np.bool_ else _dtype.cast(d, np_dtype)
    if isinstance(x, np.ndarray):
        return x.astype(np_dtype, copy=False)
    return np_dtype.type(x) if np_dtype.kind != "b" else x


def wrapped_int(x: int, np_dtype):
    """A Python int as an operand of integer arithmetic in ``np_dtype``: torch reads it as a 64-bit
    integer and casts, so a value beyond the type wraps around (``uint8 - 3``, ``int8 * 1000``);
    beyond 64 bits it is refused with Python's OverflowError."""
    if x < -(1 << 63) or x >= (1 << 64):
        raise OverflowError("int too big to convert")
    bits = np_dtype.itemsize * 8
    x &= (1 << bits) - 1
    if np_dtype.kind == "i" and x >= 1 << (bits - 1):
        x -= 1 << bits
    return np_dtype.type(x)


_CONSTANTS: dict = {}  # the small read-only arrays below, by what they hold
_CACHED_UP_TO = 1 << 16  # elements; longer operands cost far more to use than to make


def _kept(key, array: np.ndarray) -> np.ndarray:
    """``array``, made read-only and kept under ``key`` when it is small."""
    if array.size <= _CACHED_UP_TO:
        array.flags.writeable = False
        if len(_CONSTANTS) >= 64:
            _CONSTANTS.clear()
        _CONSTANTS[key] = array
    return array


def ones_vector(n: int, dtype) -> np.ndarray:
    """A read-only vector of ``n`` ones, cached: the operand of the sums computed as BLAS products
    with ones (bias gradients, row sums), which ran np.ones (about 1.5 us) on every call."""
    ones = _CONSTANTS.get((n, dtype))
    return ones if ones is not None else _kept((n, dtype), np.ones(n, dtype=dtype))


def index_range(stop: int, step: int = 1) -> np.ndarray:
    """``np.arange(0, stop, step)``, read-only and cached: the row indices and row starts that
    per-row picks and reductions (cross entropy's, log_softmax's) made on every call."""
    key = ("range", stop, step)
    indices = _CONSTANTS.get(key)
    return indices if indices is not None else _kept(key, np.arange(0, stop, step))


def sum_to_shape(g: Tensor, shape: tuple) -> Tensor:
    """Reduce a broadcast gradient back to ``shape`` (sum over the broadcast dimensions)."""
    gshape = g._ndarray.shape
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    dims = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape) if s == 1 and gshape[i + lead] != 1)
    if not GRAD.enabled:
        if dims and g._ndarray.dtype in _dtype._LOWPREC_NP:  # complex32 gradients: torch has no sum for them
            raise NotImplementedError(f"\"sum_cpu\" not implemented for '{_dtype.scalar_type_name(g._ndarray.dtype)}'")
        data = g._ndarray
        if dims:
            if data.dtype == np.float16 or _dtype.is_bfloat16_np(data.dtype):
                # accumulate in float32 and round once, as torch's sum (a half-precision running sum
                # rounds at every step)
                data = data.sum(axis=dims, keepdims=True, dtype=np.float32).astype(data.dtype)
            else:
                data = data.sum(axis=dims, keepdims=True)
        return wrap(data.reshape(shape) if data.shape != shape else data)
    if dims:
        g = g.sum(dims, keepdim=True)
    if g._ndarray.shape != shape:
        g = g.reshape(shape)
    return g


def float_dtype_for(t: Tensor) -> np.dtype:
    """Ops like exp and sqrt promote integer inputs to the default float dtype."""
    kind = t._ndarray.dtype.kind
    if kind in "fc":
        return t._ndarray.dtype
    if _dtype.is_bfloat16_np(t._ndarray.dtype):
        return np.dtype(np.float32)  # computed in float32, the result rounded back (see _dtype.narrow_to)
    return _dtype.get_default_dtype().np


def refuse_complex(message: str, *operands, error=NotImplementedError) -> None:
    """Raise torch's error for an op it does not define on complex numbers (ordering, clamping, ...)
    when an operand is complex; ``{dtype}`` in ``message`` becomes torch's name of its type."""
    for t in operands:
        if isinstance(t, Tensor) and t._ndarray.dtype.kind == "c":
            raise error(message.replace("{dtype}", _dtype.scalar_type_name(t._ndarray.dtype)))


def zeros_like_data(t: Tensor) -> Tensor:
    return wrap(np.zeros(t._ndarray.shape, dtype=t._ndarray.dtype))


# ---- NumPy's broadcasting errors as torch's ---------------------------------------------------------
_NUMPY_BROADCAST_ERRORS = ("operands could not be broadcast together with shapes",
                           "shape mismatch: objects cannot be broadcast to a single shape")


def raise_torch_broadcast_error(exc: ValueError) -> None:
    """Raise torch's RuntimeError for NumPy's ValueError about operands that do not broadcast (the
    shapes in the order NumPy met them, which is the order of the op's operands); return for any
    other ValueError."""
    text = str(exc)
    if not text.startswith(_NUMPY_BROADCAST_ERRORS):
        return
    import re

    from .pointwise import broadcast_mismatch
    shapes = [tuple(int(n) for n in group.split(",") if n.strip())
              for group in re.findall(r"\(([\d,\s]*)\)", text)]
    raise RuntimeError(broadcast_mismatch(*shapes)) from None


# ---- floating-point error reports ----------------------------------------------------------------
# torch never warns about inf/nan arithmetic, so every NumPy kernel runs with NumPy's floating-point
# error reports off. ``np.errstate`` costs ~1 us per use and the ops use it on every call; this sets
# NumPy's error-state context variable to a precomputed "ignore everything" value directly (0.4 us).
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _fp_state
except ImportError:  # another NumPy layout: the public (slower) context manager
    _fp_state = None

if _fp_state is not None:
    with np.errstate(all="ignore"):
        _FP_IGNORE = _fp_state.get()

    class quiet_fp:
        """``with quiet_fp():`` runs NumPy code with no floating-point warnings."""

        __slots__ = ("_token",)

        def __enter__(self):
            self._token = _fp_state.set(_FP_IGNORE)
            return self

        def __exit__(self, exc_type, exc, tb):
            _fp_state.reset(self._token)
            if exc_type is ValueError:
                raise_torch_broadcast_error(exc)

    # the same without a with-statement, for the per-op fast paths (0.1 us instead of 0.4 us):
    # ``token = fp_quiet(FP_IGNORE)`` ... ``fp_restore(token)`` in a finally clause
    FP_IGNORE = _FP_IGNORE
    fp_quiet, fp_restore = _fp_state.set, _fp_state.reset
else:
    class quiet_fp(np.errstate):
        """``with quiet_fp():`` runs NumPy code with no floating-point warnings."""

        def __init__(self):
            super().__init__(all="ignore")

        def __exit__(self, exc_type, exc, tb):
            super().__exit__(exc_type, exc, tb)
            if exc_type is ValueError:
                raise_torch_broadcast_error(exc)

    FP_IGNORE = "ignore"

    def fp_quiet(setting):
        return np.seterr(all=setting)

    def fp_restore(previous):
        np.seterr(**previous)
