"""``assert_close``: compare tensors, NumPy arrays, numbers, booleans, None, and sequences and
mappings of them, the way torch.testing does.

Inputs are walked in parallel (sequences by position, mappings by sorted key); each leaf pair
is compared by kind. Tensors must agree in shape, and unless switched off in device and dtype;
then their values must satisfy ``|actual - expected| <= atol + rtol * |expected|`` elementwise
(NaNs equal only with ``equal_nan``). The first failing leaf raises, with torch's message text:
"Tensor-likes are not close!", the number of mismatched elements, and the greatest absolute
and relative differences with their indices.

Default tolerances (rtol, atol) by dtype, as in torch: float16 (1e-3, 1e-5), bfloat16
(1.6e-2, 1e-5), float32 and complex64 (1.3e-6, 1e-5), float64 and complex128 (1e-7, 1e-7),
everything else (0, 0) - integers and booleans must be equal. With mixed dtypes the looser
pair applies. ``rtol`` and ``atol`` must be given together or not at all.
"""
from __future__ import annotations

import cmath
import collections.abc
import contextlib
import warnings

import numpy as np

__all__ = ["assert_close", "assert_allclose"]

_TOLERANCES = {
    "float16": (0.001, 1e-5),
    "bfloat16": (0.016, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex32": (0.001, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}
# Python numbers compare as the dtype a tensor made from them would have
_NUMBER_DTYPE = {int: "int64", float: "float64", complex: "complex128"}


class _Failure(Exception):
    """A failed comparison: the exception class to raise, its message and where it happened."""

    def __init__(self, exc_type, msg: str, path=()):
        super().__init__(msg)
        self.exc_type, self.msg, self.path = exc_type, msg, path

    def to_error(self, msg=None) -> Exception:
        if isinstance(msg, str):
            return self.exc_type(msg)
        text = self.msg
        if self.path:
            text += "\n\nThe failure occurred for item " + "".join(str([item]) for item in self.path)
        return self.exc_type(msg(text) if callable(msg) else text)


class _Unsupported(Exception):
    """This kind of comparison does not apply to these inputs; try the next."""


def _torch_words(value) -> str:
    """``value`` as torch would print it in an error message (hookgrad's error texts use
    torch's wording: code in the wild matches it)."""
    return str(value).replace("hookgrad._tensor.Tensor", "torch.Tensor").replace("hookgrad.", "torch.")


def _dtype_name(dtype) -> str:
    return str(dtype).split(".")[-1]


def _tolerances(dtype_names, rtol, atol, path):
    if (rtol is None) != (atol is None):
        raise _Failure(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                                   f"{'rtol' if rtol is None else 'atol'}.", path)
    if rtol is not None:
        return rtol, atol
    pairs = [_TOLERANCES.get(name, (0.0, 0.0)) for name in dtype_names]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _mismatch_message(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol) -> str:
    exact = rtol == 0 and atol == 0

    def line(kind, diff, idx, tol):
        text = (f"{kind.title()} difference: {diff}" if idx is None
                else f"Greatest {kind} difference: {diff} at index {idx}")
        return text + ("" if exact else f" (up to {tol} allowed)") + "\n"

    text = f"{identifier} are not {'equal' if exact else 'close'}!\n\n"
    if extra:
        text += extra.strip() + "\n"
    text += line("absolute", abs_diff, abs_idx, atol) + line("relative", rel_diff, rel_idx, rtol)
    return text.strip()


def _scalar_message(actual, expected, rtol, atol) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_message("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol,
                             rel_diff, None, rtol)


def _isclose(actual: np.ndarray, expected: np.ndarray, rtol, atol, equal_nan) -> np.ndarray:
    """torch.isclose in the arrays' own dtype."""
    with np.errstate(all="ignore"):
        close = actual == expected
        if equal_nan and actual.dtype.kind in "fc":
            close |= np.isnan(actual) & np.isnan(expected)
        if actual.dtype.kind == "b" or (rtol == 0 and atol == 0):
            return close
        if actual.dtype.kind in "iu":
            actual, expected = actual.astype(np.float64), expected.astype(np.float64)
        error = np.abs(actual - expected)
        allowed = atol + rtol * np.abs(expected)
        close |= np.isfinite(error) & (error <= allowed)
    return close


def _tensor_message(actual: np.ndarray, expected: np.ndarray, matches: np.ndarray, rtol, atol) -> str:
    total = matches.size
    mismatched = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    a, e, m = actual.ravel(), expected.ravel(), matches.ravel()
    if a.dtype.kind not in "fc":
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[m] = 0
        # integer differences divide in the default float dtype, as torch's true division does
        rel_diff = (abs_diff / np.abs(e)).astype(_default_np_dtype()) if a.dtype.kind in "iu" \
            else abs_diff / np.abs(e)
        rel_diff[m] = 0

    def where(flat):
        return tuple(int(i) for i in np.unravel_index(flat, matches.shape))

    abs_at, rel_at = int(np.argmax(abs_diff)), int(np.argmax(rel_diff))
    return _mismatch_message("Tensor-likes", extra, abs_diff[abs_at].item(), where(abs_at), atol,
                             rel_diff[rel_at].item(), where(rel_at), rtol)


def _default_np_dtype():
    from .._dtype import get_default_dtype
    return get_default_dtype().np


def _tensor_cls():
    from .._tensor import Tensor
    return Tensor


# Each kind below checks whether it handles the pair (raising _Unsupported if not, or a
# _Failure for bad arguments) and returns the comparison to run later: like torch, every
# pair is set up before any is compared, and set-up errors ignore ``msg``.

def _compare_none(actual, expected, path, options):
    if not (actual is None or expected is None):
        raise _Unsupported

    def compare():
        if not (actual is None and expected is None):
            raise _Failure(AssertionError, f"None mismatch: {actual} is not {expected}", path)
    return compare


def _compare_bool(actual, expected, path, options):
    if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
        raise _Unsupported
    actual, expected = bool(actual), bool(expected)

    def compare():
        if actual is not expected:
            raise _Failure(AssertionError, f"Booleans mismatch: {actual} is not {expected}", path)
    return compare


def _compare_number(actual, expected, path, options):
    if not all(isinstance(x, (int, float, complex, np.number)) for x in (actual, expected)):
        raise _Unsupported
    actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
    rtol, atol = _tolerances([_NUMBER_DTYPE[type(x)] for x in (actual, expected)], options["rtol"],
                             options["atol"], path)

    def compare():
        if options["check_dtype"] and type(actual) is not type(expected):
            raise _Failure(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.",
                           path)
        if actual == expected:
            return
        if options["equal_nan"] and cmath.isnan(actual) and cmath.isnan(expected):
            return
        abs_diff = abs(actual - expected)
        if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
            return
        raise _Failure(AssertionError, _scalar_message(actual, expected, rtol, atol), path)
    return compare


def _compare_tensor_like(actual, expected, path, options):
    if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
        raise _Unsupported
    if not options["allow_subclasses"] and type(actual) is not type(expected):
        raise _Unsupported
    tensor_cls = _tensor_cls()
    if not isinstance(actual, tensor_cls):
        from .. import as_tensor
        try:
            actual, expected = as_tensor(actual), as_tensor(expected)
        except Exception:  # noqa: BLE001 - not tensor-like after all: let the next kind try
            raise _Unsupported from None
    rtol, atol = _tolerances([_dtype_name(actual.dtype), _dtype_name(expected.dtype)], options["rtol"],
                             options["atol"], path)
    return lambda: _compare_tensors(actual, expected, rtol, atol, path, options)


def _values(t) -> np.ndarray:
    """``t``'s values as an array; those of a wrapper subclass instance (no storage of its own) read
    element by element through its ``__torch_dispatch__``, as torch's comparison does."""
    from .._meta import MetaArray
    data = t.detach()._ndarray
    if data.__class__ is MetaArray and not t.is_meta:
        flat = t.detach().reshape(-1)
        return np.array([flat[i].item() for i in range(flat.numel())], dtype=data.dtype).reshape(data.shape)
    return np.asarray(data)


def _compare_tensors(actual, expected, rtol, atol, path, options):
    def attribute_mismatch(name, a, e):
        raise _Failure(AssertionError, f"The values for attribute '{name}' do not match: {_torch_words(a)} != "
                                       f"{_torch_words(e)}.", path)

    if actual.shape != expected.shape:
        attribute_mismatch("shape", actual.shape, expected.shape)
    if options["check_stride"] and actual.stride() != expected.stride():
        attribute_mismatch("stride()", actual.stride(), expected.stride())
    if options["check_device"] and actual.device != expected.device:
        attribute_mismatch("device", actual.device, expected.device)
    if options["check_dtype"] and actual.dtype != expected.dtype:
        attribute_mismatch("dtype", actual.dtype, expected.dtype)

    if actual.is_meta and expected.is_meta:
        return   # no values to compare, as torch
    a, e = _values(actual), _values(expected)
    if a.dtype != e.dtype:
        from .._dtype import promote_types
        common = promote_types(actual.dtype, expected.dtype).np
        a, e = a.astype(common), e.astype(common)
    matches = _isclose(a, e, rtol, atol, options["equal_nan"])
    if matches.all():
        return
    if a.ndim == 0:
        raise _Failure(AssertionError, _scalar_message(a.item(), e.item(), rtol, atol), path)
    raise _Failure(AssertionError, _tensor_message(a, e, matches, rtol, atol), path)


_KINDS = (_compare_none, _compare_bool, _compare_number, _compare_tensor_like)


def _leaf_pairs(actual, expected, path):
    """(actual, expected, path) for every leaf of two parallel nested structures."""
    sequence, mapping = collections.abc.Sequence, collections.abc.Mapping
    if (isinstance(actual, sequence) and not isinstance(actual, str)
            and isinstance(expected, sequence) and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise _Failure(AssertionError,
                           f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", path)
        pairs = []
        for i in range(len(actual)):
            pairs.extend(_leaf_pairs(actual[i], expected[i], (*path, i)))
        return pairs
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise _Failure(AssertionError,
                           "The keys of the mappings do not match:\n"
                           f"Missing keys in the actual mapping: {sorted(expected_keys - actual_keys)}\n"
                           f"Additional keys in the actual mapping: {sorted(actual_keys - expected_keys)}", path)
        keys = actual_keys
        with contextlib.suppress(Exception):
            keys = sorted(keys)
        pairs = []
        for key in keys:
            pairs.extend(_leaf_pairs(actual[key], expected[key], (*path, key)))
        return pairs
    return [(actual, expected, path)]


def _comparison(actual, expected, path, options, kinds=_KINDS):
    """The comparison of the first of ``kinds`` that handles the pair."""
    for kind in kinds:
        try:
            return kind(actual, expected, path, options)
        except _Unsupported:
            continue
    raise _Failure(TypeError, "No comparison pair was able to handle inputs of type "
                              f"{_torch_words(type(actual))} and {_torch_words(type(expected))}.", path)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Raise AssertionError (torch's message) unless ``actual`` and ``expected`` are close.

    ``msg`` replaces the message (a string) or rewrites it (a callable receiving the generated
    text). Bad arguments raise ValueError (``rtol`` without ``atol`` or vice versa) or TypeError
    (inputs no comparison handles, e.g. a tensor and a list)."""
    __tracebackhide__ = True
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype, check_layout=check_layout,
                   check_stride=check_stride)
    try:
        comparisons = [_comparison(a, e, path, options) for a, e, path in _leaf_pairs(actual, expected, ())]
    except _Failure as failure:
        raise failure.to_error() from None
    for compare in comparisons:
        try:
            compare()
        except _Failure as failure:
            raise failure.to_error(msg) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated in torch since 1.12 (a FutureWarning): ``assert_close`` with looser defaults,
    no dtype check and NaNs equal."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `torch.testing.assert_close()` instead. You can find detailed upgrade "
                  "instructions in https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    from .. import tensor
    tensor_cls = _tensor_cls()
    if not isinstance(actual, tensor_cls):
        actual = tensor(actual)
    if not isinstance(expected, tensor_cls):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        loose = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}
        pairs = [loose.get(_dtype_name(t.dtype), (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)
