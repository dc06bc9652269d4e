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
sort topk take argmax argmin
expit entr erfcx gammaln i0e i1 i1e log_ndtr ndtr ndtri gammainc gammaincc airy_ai bessel_j0 bessel_j1 bessel_y0
bessel_y1 modified_bessel_i0 modified_bessel_i1 modified_bessel_k0 modified_bessel_k1 scaled_modified_bessel_k0
scaled_modified_bessel_k1 spherical_bessel_j0
""".split())


# which dtypes ``out`` may have differs by op, as in torch: reductions that accumulate in out's dtype
# take any; ops with a fixed-dtype kernel want exactly the result's; all/any want bool; the rest (torch's
# TensorIterator ops) take a dtype the result can be cast to
_ANY_DTYPE = frozenset("sum prod nansum cumsum cumprod".split())
_SAME_DTYPE = frozenset("""amax amin norm max min median nanmedian where matmul mm bmm mv dot vdot addmm addmv addbmm
baddbmm addr outer ger inner tensordot""".split())
_BOOL_ONLY = frozenset(("all", "any"))
# torch.linalg's kernels write one dtype, except those composed of other ops (which cast into out)
_LINALG_COMPOSITES = frozenset(("linalg_pinv", "linalg_cond", "linalg_matrix_rank"))
_FLOATING_ONLY = frozenset(("logsumexp",))
# ops whose kernels check each out's dtype against their result's (values keep the input's, indices are long)
_EXACT_DTYPE = frozenset(("sort", "topk", "argmax", "argmin"))
# the name torch's refusal of autograd through out= gives (the ATen op the function calls); the special
# functions without a derivative formula of their own are not refused
_AUTOGRAD_NAMES = {"expit": "sigmoid", "gammaln": "lgamma", "gammainc": "igamma", "gammaincc": "igammac",
                   **{name: "special_" + name for name in "entr erfcx i0e i1 i1e log_ndtr ndtri".split()}}
_NOT_REFUSED = frozenset("""ndtr airy_ai bessel_j0 bessel_j1 bessel_y0 bessel_y1 modified_bessel_i0 modified_bessel_i1
modified_bessel_k0 modified_bessel_k1 scaled_modified_bessel_k0 scaled_modified_bessel_k1 spherical_bessel_j0""".split())
_JOINS = frozenset("cat concat concatenate stack hstack vstack dstack column_stack row_stack".split())


def _check_dtype(name: str, result: Tensor, out: Tensor) -> None:
    from . import can_cast
    if name in _ANY_DTYPE or result.dtype == out.dtype:
        return
    if name in _EXACT_DTYPE:
        raise RuntimeError(f"Expected out tensor to have dtype {_c_name(result.dtype)}, but got "
                           f"{_c_name(out.dtype)} instead")
    if name == "take":
        raise RuntimeError(f"take(): self and out expected to have the same dtype, but got self.dtype = "
                           f"{_short(result.dtype)} and out.dtype = {_short(out.dtype)}")
    if name in _BOOL_ONLY:
        raise RuntimeError(f"{name} only supports bool tensor for result, got: {_short(out.dtype)}")
    if name in _FLOATING_ONLY:
        if not out.dtype.is_floating_point:
            raise RuntimeError(f"{name}(): Expected floating point type for result tensor, but got: "
                               f"{_short(out.dtype)}")
        return
    if name == "tensordot":
        raise RuntimeError(f"tensordot: Expected the output tensor to have dtype {_short(result.dtype)}, but got an "
                           f"output tensor with dtype {_short(out.dtype)}")
    if name in _SAME_DTYPE or (name.startswith("linalg_") and name not in _LINALG_COMPOSITES):
        raise RuntimeError(f"Expected out tensor to have dtype {result.dtype}, but got {out.dtype} instead")
    if not can_cast(result.dtype, out.dtype):
        if name in _JOINS:
            raise TypeError(f"torch.{name}(): input types can't be cast to the desired output type "
                            f"{_short(out.dtype)}")
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


def _write(result: Tensor, out, name: str) -> Tensor:
    from .autograd.grad_mode import no_grad
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if not isinstance(result, Tensor):
        raise TypeError(f"{name}(): out= needs a tensor result, got {type(result).__name__}")
    _check_dtype(name, result, out)
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
        written = [_write(r, o, name) for r, o in zip(result, out)]
        return type(result)(*written) if hasattr(result, "_fields") else tuple(written)
    return _write(result, out, name)


def write_native_out(result: Tensor, out, name: str) -> Tensor:
    """For the ops that take ``out`` themselves: write ``result`` into ``out`` as torch does."""
    return _write(result, out, name)
