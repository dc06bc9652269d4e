"""The ATen operators a ``TorchDispatchMode`` sees, and their arguments, against torch's, over every
case of the op-test registry (tests/op_cases.py): forward and backward apart (see aten_trace.py).

The cases whose sequence still differs from torch's are listed in dispatch_aten_gaps.json; they are
strict expected failures, so a case that comes to match fails until it is taken off the list
(``python tests/aten_trace.py --gaps`` rewrites the list)."""
from __future__ import annotations

import json
import os

import pytest

import aten_trace

_CASES = aten_trace.cases()
with open(os.path.join(os.path.dirname(__file__), "dispatch_aten_gaps.json")) as _file:
    _GAPS = json.load(_file)


def _params(phase):
    return [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason="differs from torch's sequence"))
            if name in _GAPS[phase] else name for name in _CASES]


_results: dict = {}


def _compare(name):
    if name not in _results:
        _results[name] = aten_trace.compare(*_CASES[name])
    return _results[name]


@pytest.mark.parametrize("name", _params("forward"))
def test_forward_operators_as_torch(name):
    forward_same, _, difference = _compare(name)
    assert forward_same, difference


@pytest.mark.parametrize("name", _params("backward"))
def test_backward_operators_as_torch(name):
    _, backward_same, difference = _compare(name)
    assert backward_same, difference


def test_gap_list_names_registry_cases():
    for phase in ("forward", "backward"):
        assert set(_GAPS[phase]) <= set(_CASES), set(_GAPS[phase]) - set(_CASES)
