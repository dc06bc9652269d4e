"""torch's ``out=`` argument: the result written into a given tensor, in place.

What torch does, and so this: the result is computed as without ``out``, then cast to ``out``'s
dtype (a cast torch's ``can_cast`` refuses raises RuntimeError), ``out`` is resized when its shape
differs (with torch's deprecation UserWarning unless it was empty) and written in place (views of
it see the result, its version counter moves), and ``out`` is returned. Autograd does not record
out= calls: with grad mode on, an argument that requires grad makes the call a RuntimeError.
Functions returning several tensors (``max(x, dim)``) take a tuple of outs.
"""
from __future__ import annotations

from ._tensor import Tensor
from .autograd._warn_once import warn_at_user_frame

# the public torch functions hookgrad implements without an out= parameter of its own that take
# out= in torch 2.13 (their docstrings list "out (Tensor, optional)")
OUT_NAMES = frozenset("""
abs acos acosh addbmm addcdiv addcmul addmm addmv addr all amax amin angle any asin asinh atan atan2 atanh
baddbmm bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor bmm bucketize cat
ceil cholesky cholesky_inverse cholesky_solve clamp clip column_stack complex concat concatenate conj_physical
copysign cos cosh cross cumprod cumsum deg2rad diag diff digamma dot dstack eq erf erfc erfinv exp exp2 expm1
fix float_power floor floor_divide fmax fmin fmod frac gather gcd ge ger greater greater_equal gt heaviside
histc hstack hypot i0 igamma igammac index_select inner inverse isneginf isposinf kron lcm ldexp le lerp less
less_equal lgamma log log10 log1p log2 logaddexp logaddexp2 logcumsumexp logical_and logical_not logical_or
logical_xor logit logsumexp lt lu_solve masked_select matmul matrix_power max maximum mean median min minimum
mm msort mv mvlgamma nan_to_num nanmean nanmedian nanquantile ne neg negative nextafter nonzero norm not_equal
ormqr outer polar polygamma pow quantile rad2deg reciprocal remainder renorm round row_stack rsqrt searchsorted
sgn sigmoid sign signbit sin sinc sinh sqrt square stack std take_along_dim tan tanh tensordot tril triu trunc var vdot
vstack where xlogy sum prod nansum
sort topk take argmax argmin cummax cummin kthvalue mode
expit entr erfcx gammaln i0e i1 i1e log_ndtr ndtr ndtri gammainc gammaincc airy_ai bessel_j0 bessel_j1 bessel_y0
bessel_y1 modified_bessel_i0 modified_bessel_i1 modified_bessel_k0 modified_bessel_k1 scaled_modified_bessel_k0
scaled_modified_bessel_k1 spherical_bessel_j0
""".split())


# which dtypes ``out`` may have differs by op, as in torch: reductions that accumulate in out's dtype
# take any; ops with a fixed-dtype kernel want exactly the result's (each kernel words its refusal its own
# way: _EXACT below); all/any want bool; the rest (torch's TensorIterator ops) take a dtype the result can
# be cast to
_ANY_DTYPE = frozenset("sum prod nansum cumsum cumprod".split())
_BOOL_ONLY = frozenset(("all", "any"))
# torch.linalg's kernels write one dtype, except those composed of other ops (which cast into out)
_LINALG_COMPOSITES = frozenset(("linalg_pinv", "linalg_cond", "linalg_matrix_rank"))
_FLOATING_ONLY = frozenset(("logsumexp",))
# the name torch's refusal of autograd through out= gives (the ATen op the function calls); the special
# functions without a derivative formula of their own are not refused
_AUTOGRAD_NAMES = {"expit": "sigmoid", "gammaln": "lgamma", "gammainc": "igamma", "gammaincc": "igammac",
                   "multigammaln": "mvlgamma",
                   **{name: "special_" + name for name in "entr erfcx i0e i1 i1e log_ndtr ndtri xlog1py zeta".split()}}
_NOT_REFUSED = frozenset("""ndtr airy_ai bessel_j0 bessel_j1 bessel_y0 bessel_y1 modified_bessel_i0
modified_bessel_i1 modified_bessel_k0 modified_bessel_k1 scaled_modified_bessel_k0 scaled_modified_bessel_k1
spherical_bessel_j0""".split())
_JOINS = frozenset("cat concat concatenate stack hstack vstack dstack column_stack row_stack".split())


def _expected_out(result, out, indices):
    return f"Expected out tensor to have dtype {_c_name(result.dtype)}, but got {_c_name(out.dtype)} instead"


def _same_as_input(result, out, indices):
    return (f"Expected the dtype for input and out to match, but got {_short(result.dtype)} for input's dtype and "
            f"{_short(out.dtype)} for out's dtype.")


def _median(result, out, indices):
    if indices:
        return (f"Expected tensor for argument #1 'indices' to have scalar type Long; but got {out.type()} instead "
                "(while checking arguments for median)")
    return (f"Expected tensor for 'values' to have the same type as tensor for argument #2 'self'; but type "
            f"{out.type()} does not equal {result.type()} (while checking arguments for median)")


def _scalar_type(result, out, indices):  # cummax, cummin
    return f"expected scalar_type {_short(result.dtype)} but found {_short(out.dtype)}"


def _kthvalue(result, out, indices):
    return "output indices must be of scalar type Long" if indices else "output values must be of same type as input"


def _mode(result, out, indices):
    return (f"expected scalar type '{_short(result.dtype)}' but got '{_short(out.dtype)}' for "
            f"{'indices' if indices else 'values'} output")


def _take(result, out, indices):
    return (f"take(): self and out expected to have the same dtype, but got self.dtype = {_short(result.dtype)} and "
            f"out.dtype = {_short(out.dtype)}")


def _tensordot(result, out, indices):  # tensordot, inner
    return (f"tensordot: Expected the output tensor to have dtype {_short(result.dtype)}, but got an output tensor "
            f"with dtype {_short(out.dtype)}")


# ops whose kernels want out's dtype exactly the result's: how each words its refusal (``indices``: the
# out is the indices half of a (values, indices) pair)
_EXACT = {
    **dict.fromkeys("""sort topk argmax argmin max min norm mm bmm mv matmul addmm addmv baddbmm""".split(),
                    _expected_out),
    "amax": _same_as_input, "amin": _same_as_input, "median": _median, "nanmedian": _median,
    "cummax": _scalar_type, "cummin": _scalar_type, "kthvalue": _kthvalue, "mode": _mode, "take": _take,
    "tensordot": _tensordot, "inner": _tensordot,
    "where": lambda result, out, indices: f"Expected out type to be {_short(result.dtype)} but got {_short(out.dtype)}",
    "dot": lambda result, out, indices: f"result dtype {_short(out.dtype)} does not match input dtype "
                                        f"{_short(result.dtype)}",
    "addbmm": lambda result, out, indices: f"self and mat2 must have the same dtype, but got {_short(out.dtype)} and "
                                           f"{_short(result.dtype)}",
    "linalg_matrix_norm": lambda result, out, indices: f"linalg.matrix_norm expected out tensor dtype "
                                                       f"{_short(result.dtype)} but got: {_short(out.dtype)}",
}
_EXACT["vdot"] = _EXACT["dot"]


def _check_dtype(name: str, result: Tensor, out: Tensor, indices: bool = False) -> None:
    from . import can_cast
    if name in _ANY_DTYPE or result.dtype == out.dtype:
        return
    message = _EXACT.get(name)
    if message is None and name.startswith("linalg_") and name not in _LINALG_COMPOSITES:
        message = _expected_out
    if message is not None:
        raise RuntimeError(message(result, out, indices))
    if name in _BOOL_ONLY:
        raise RuntimeError(f"{name} only supports bool tensor for result, got: {_short(out.dtype)}")
    if name in _FLOATING_ONLY:
        if not out.dtype.is_floating_point:
            raise RuntimeError(f"{name}(): Expected floating point type for result tensor, but got: "
                               f"{_short(out.dtype)}")
        return
    if not can_cast(result.dtype, out.dtype):
        if name in _JOINS:
            raise TypeError(f"torch.{name}(): input types can't be cast to the desired output type "
                            f"{_short(out.dtype)}")
        if name == "multigammaln":  # (torch's kernel names the input's type twice)
            raise RuntimeError(f"mvlgamma: result type {_short(result.dtype)} can't be cast to the desired output "
                               f"type {_short(result.dtype)}")
        raise RuntimeError(f"result type {_short(result.dtype)} can't be cast to the desired output type "
                           f"{_short(out.dtype)}")


def _tensors_in(values):
    for value in values:
        if isinstance(value, Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from _tensors_in(value)


def refuse_autograd(name: str, args, kwargs, out) -> None:
    """torch's refusal of an out= call that autograd would have to record."""
    from .autograd.grad_mode import is_grad_enabled
    if not is_grad_enabled():
        return
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if any(t.requires_grad for t in _tensors_in((*args, *kwargs.values(), *outs))):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")


def _write(result: Tensor, out, name: str, indices: bool = False) -> Tensor:
    from .autograd.grad_mode import no_grad
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if not isinstance(result, Tensor):
        raise TypeError(f"{name}(): out= needs a tensor result, got {type(result).__name__}")
    _check_dtype(name, result, out, indices)
    if tuple(out.shape) != tuple(result.shape):
        if out.numel() != 0:
            warn_at_user_frame(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                               f"which does not match the required output shape {list(result.shape)}. This behavior "
                               "is deprecated, and in a future PyTorch release outputs will not be resized unless they "
                               "have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, "
                               "to zero elements with t.resize_(0).")
        out.resize_(tuple(result.shape))
    with no_grad():
        out.copy_(result)
    return out


def _short(dtype) -> str:
    # torch's messages name dtypes by their scalar type: Float, Long, ComplexFloat, ...
    names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
             "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
             "complex64": "ComplexFloat", "complex128": "ComplexDouble"}
    text = str(dtype).rpartition(".")[2]
    return names.get(text, text)


def _c_name(dtype) -> str:
    # some of torch's kernels name dtypes by their C++ type
    names = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
             "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
             "bool": "bool", "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}
    text = str(dtype).rpartition(".")[2]
    return names.get(text, text)


def call_with_out(fn, name: str, args, kwargs):
    """``fn(*args, **kwargs)`` with ``kwargs["out"]`` taken out and written as torch writes it."""
    out = kwargs.pop("out")
    if out is None:
        return fn(*args, **kwargs)
    if name in _ANY_DTYPE and isinstance(out, Tensor) and kwargs.get("dtype") is None:
        kwargs["dtype"] = out.dtype  # these accumulate in out's dtype, the input cast to it first
    from .autograd.grad_mode import no_grad
    with no_grad():
        result = fn(*args, **kwargs)
    results = result if isinstance(result, tuple) else (result,)
    # torch refuses only for differentiable ops: comparisons and other integer or bool results pass
    if name not in _NOT_REFUSED and \
            any(isinstance(r, Tensor) and (r.is_floating_point() or r.is_complex()) for r in results):
        refuse_autograd(_AUTOGRAD_NAMES.get(name, name), args, kwargs, out)
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{name}(): argument 'out' must be tuple of {len(result)} Tensors")
        written = [_write(r, o, name, position == 1) for position, (r, o) in enumerate(zip(result, out))]
        if not hasattr(result, "_fields"):
            return tuple(written)
        from .return_types import out_variant
        return out_variant(type(result))(*written)  # torch.return_types.max_out, ...
    return _write(result, out, name)


def write_native_out(result: Tensor, out, name: str) -> Tensor:
    """For the ops that take ``out`` themselves: write ``result`` into ``out`` as torch does."""
    return _write(result, out, name)
