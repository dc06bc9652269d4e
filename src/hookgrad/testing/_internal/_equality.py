"""The comparison behind ``TestCase.assertEqual``: torch's test-suite equality, looser than
``torch.testing.assert_close`` in a few deliberate ways.

* A boolean compares with a boolean, a number or a one-element tensor/array by truth value.
* A number compares with a number or a one-element tensor/array by value, never by type
  (``1 == 1.0`` passes); a Python float uses float32's tolerances, an int must be exact. A
  tensor with more elements raises ValueError.
* Tensors and NumPy arrays compare with each other freely (an array becomes a tensor).
* Strings, sets, types and any other object fall back to ``==`` with unittest's message.
* At the top level a tensor against a list/tuple first turns the sequence into a tensor of the
  tensor's dtype; sequences (``nn.Sequential``, ``nn.ModuleList`` and ``nn.ParameterList``
  included) and mappings (``nn.ModuleDict``, ``nn.ParameterDict``) are walked item by item.
* Tolerances default per dtype as in ``assert_close`` and never go below the test's
  ``precision`` (absolute) and ``rel_tol`` (relative) minimums. NaNs are equal by default.
"""
from __future__ import annotations

import collections.abc
import contextlib
import enum
import unittest

import numpy as np

from .._comparison import (_Failure, _Unsupported, _comparison, _compare_none, _compare_tensors, _tensor_cls,
                           _tolerances)

_FLOAT_FOR_NUMBER = {int: "int64", float: "float32", complex: "complex64"}


def _is_tensor_like(value) -> bool:
    return isinstance(value, (_tensor_cls(), np.ndarray))


def _single_item(value, kind: str, path):
    """The Python scalar inside a one-element tensor or array (ValueError for more elements)."""
    count = value.numel() if isinstance(value, _tensor_cls()) else value.size
    if count > 1:
        raise _Failure(ValueError, f"Only single element tensor-likes can be compared against a {kind}. "
                                   f"Got {count} elements instead.", path)
    return value.item()


def _as_bool(value, path):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if _is_tensor_like(value):
        return bool(_single_item(value, "boolean", path))
    return bool(value.item() if isinstance(value, np.number) else value)


def _compare_boolean(actual, expected, path, options):
    def is_bool(x):
        return isinstance(x, (bool, np.bool_))

    def bool_like(x):
        return is_bool(x) or _is_number(x) or _is_tensor_like(x)

    if not ((is_bool(actual) and bool_like(expected)) or (is_bool(expected) and bool_like(actual))):
        raise _Unsupported
    a, e = _as_bool(actual, path), _as_bool(expected, path)

    def compare():
        if a is not e:
            raise _Failure(AssertionError, f"Booleans mismatch: {a} is not {e}", path)
    return compare


def _is_number(x) -> bool:
    return isinstance(x, (int, float, complex, np.number, enum.Enum)) and not isinstance(x, (bool, np.bool_))


def _as_number(value, path):
    if _is_tensor_like(value):
        number = _single_item(value, "number", path)
        return int(number) if isinstance(number, bool) else number
    if isinstance(value, enum.Enum):
        return int(value)
    if isinstance(value, np.number):
        value = value.item()
    if type(value) not in _FLOAT_FOR_NUMBER:
        raise _Unsupported
    return value


def _compare_number(actual, expected, path, options):
    if not ((_is_number(actual) and (_is_number(expected) or _is_tensor_like(expected)))
            or (_is_number(expected) and _is_tensor_like(actual))):
        raise _Unsupported
    a, e = _as_number(actual, path), _as_number(expected, path)
    rtol, atol = _tolerances([_FLOAT_FOR_NUMBER[type(x)] for x in (a, e)], options["rtol"], options["atol"], path)
    rtol, atol = max(rtol, options["rtol_floor"]), max(atol, options["atol_floor"])

    def compare():
        if a == e:
            return
        if options["equal_nan"] and _isnan(a) and _isnan(e):
            return
        diff = abs(a - e)
        if diff == diff and diff != float("inf") and diff <= atol + rtol * abs(e):
            return
        raise _Failure(AssertionError, _number_message(a, e, diff, rtol, atol), path)
    return compare


def _isnan(x) -> bool:
    return isinstance(x, (float, complex)) and x != x


def _number_message(actual, expected, diff, rtol, atol) -> str:
    text = (f"Scalars are not close!\n\nExpected {expected} but got {actual}.\n"
            f"Absolute difference: {diff} (up to {atol} allowed)")
    with contextlib.suppress(ZeroDivisionError, TypeError):
        text += f"\nRelative difference: {diff / abs(expected)} (up to {rtol} allowed)"
    return text


def _compare_tensor_or_array(actual, expected, path, options):
    if not (_is_tensor_like(actual) and _is_tensor_like(expected)):
        raise _Unsupported
    from ... import as_tensor
    a = actual if isinstance(actual, _tensor_cls()) else as_tensor(actual)
    e = expected if isinstance(expected, _tensor_cls()) else as_tensor(expected)
    names = [str(t.dtype).split(".")[-1] for t in (a, e)]
    rtol, atol = _tolerances(names, options["rtol"], options["atol"], path)
    rtol, atol = max(rtol, options["rtol_floor"]), max(atol, options["atol_floor"])
    return lambda: _compare_tensors(a, e, rtol, atol, path, options)


def _compare_with_unittest(type_name: str, accepted):
    def kind(actual, expected, path, options):
        if not (isinstance(actual, accepted) and isinstance(expected, accepted)):
            raise _Unsupported

        def compare():
            checker = unittest.TestCase()
            try:
                checker.assertEqual(actual, expected)
            except checker.failureException as error:
                raise _Failure(AssertionError, f"{type_name} comparison failed: {error}", path) from None
        return compare
    return kind


_KINDS = (
    _compare_none,
    _compare_boolean,
    _compare_number,
    _compare_tensor_or_array,
    _compare_with_unittest("String", (str, bytes)),
    _compare_with_unittest("Set", set),
    _compare_with_unittest("Type", type),
    _compare_with_unittest("Object", object),
)


def _container_types():
    from ...nn.modules.container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
    return ((collections.abc.Sequence, Sequential, ModuleList, ParameterList),
            (collections.abc.Mapping, ModuleDict, ParameterDict))


def _leaves(actual, expected, path, sequences, mappings):
    def is_sequence(x):
        return isinstance(x, sequences) and not isinstance(x, (str, bytes))

    if is_sequence(actual) and is_sequence(expected):
        if len(actual) != len(expected):
            raise _Failure(AssertionError,
                           f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", path)
        pairs = []
        for i in range(len(actual)):
            pairs.extend(_leaves(actual[i], expected[i], (*path, i), sequences, mappings))
        return pairs
    if isinstance(actual, mappings) and isinstance(expected, mappings):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            missing, extra = expected_keys - actual_keys, actual_keys - expected_keys
            with contextlib.suppress(TypeError):
                missing, extra = sorted(missing), sorted(extra)
            raise _Failure(AssertionError,
                           "The keys of the mappings do not match:\n"
                           f"Missing keys in the actual mapping: {missing}\n"
                           f"Additional keys in the actual mapping: {extra}", path)
        keys = list(actual.keys())
        with contextlib.suppress(TypeError):
            keys = sorted(keys)
        pairs = []
        for key in keys:
            pairs.extend(_leaves(actual[key], expected[key], (*path, key), sequences, mappings))
        return pairs
    return [(actual, expected, path)]


def check_equal(actual, expected, msg=None, *, atol=None, rtol=None, equal_nan=True, exact_dtype=True,
                exact_device=False, exact_stride=False, atol_floor=0.0, rtol_floor=0.0, long_message=True):
    """Raise (AssertionError on a mismatch; ValueError/TypeError for inputs that cannot be compared)
    unless ``actual`` equals ``expected`` in the test-suite sense described in the module text.

    A string ``msg`` is appended to the generated message (replacing it when ``long_message`` is
    false); a callable ``msg`` receives the generated message and returns the one to raise."""
    __tracebackhide__ = True
    tensor = _tensor_cls()
    sequence = collections.abc.Sequence
    if isinstance(actual, tensor) and isinstance(expected, sequence) and not isinstance(expected, (str, bytes)):
        from ... import as_tensor
        expected = as_tensor(expected, dtype=actual.dtype)
    elif isinstance(expected, tensor) and isinstance(actual, sequence) and not isinstance(actual, (str, bytes)):
        from ... import as_tensor
        actual = as_tensor(actual, dtype=expected.dtype)

    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=exact_dtype, check_device=exact_device,
                   check_stride=exact_stride, check_layout=False, allow_subclasses=True,
                   atol_floor=atol_floor, rtol_floor=rtol_floor)
    sequences, mappings = _container_types()
    try:
        comparisons = [_comparison(a, e, path, options, _KINDS)
                       for a, e, path in _leaves(actual, expected, (), sequences, mappings)]
    except _Failure as failure:  # inputs that cannot be compared: the message is not the caller's to change
        raise failure.to_error() from None
    try:
        for compare in comparisons:
            compare()
    except _Failure as failure:
        if isinstance(msg, str) and long_message:
            raise failure.to_error(lambda generated: f"{generated}\n{msg}") from None
        raise failure.to_error(msg) from None
