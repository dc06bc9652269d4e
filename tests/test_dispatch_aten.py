"""The ATen operators a ``TorchDispatchMode`` sees, and their arguments, against torch's, over every
case of the op-test registry (tests/op_cases.py): forward and backward apart (see aten_trace.py).

The cases whose sequence still differs from torch's are listed in dispatch_aten_gaps.json; they are
strict expected failures, so a case that comes to match fails until it is taken off the list
(``python tests/aten_trace.py --gaps`` rewrites the list)."""
from __future__ import annotations

import importlib
import json
import os

import pytest

import aten_trace
from difftest import differential

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


def _record(T, program):
    log: list = []
    with aten_trace.recorder(T, log):
        program()
    return log


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("grad", [True, False])
@differential
def test_self_attention_operators(T, need_weights, grad):
    """nn.MultiheadAttention's self-attention: the projection's addmm, the heads' views, then the
    flash kernel or the math path's bmm/_softmax/bmm (what FLOP counters built on modes count)."""
    T.manual_seed(0)
    attention = T.nn.MultiheadAttention(16, 4)
    x = T.ones(5, 2, 16)
    with T.set_grad_enabled(grad):
        return _record(T, lambda: attention(x, x, x, need_weights=need_weights))


@differential
def test_transformer_layer_operators(T):
    T.manual_seed(0)
    layer = T.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
    return _record(T, lambda: layer(T.ones(1, 5, 16)))


@differential
def test_custom_function_inner_operators(T):
    """A mode sees the operators a custom Function's forward and backward run, not the Function."""
    class Twice(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return T.mm(x, x)

        @staticmethod
        def backward(ctx, grad):
            return T.mm(grad, grad) + grad

    a = T.ones(3, 3, requires_grad=True)
    out = Twice.apply(a)
    grad = T.ones(3, 3)
    return _record(T, lambda: Twice.apply(a)), _record(T, lambda: out.backward(grad))


@differential
def test_mode_result_replaces_decomposed_op(T):
    """What a mode returns for an operator of a decomposition flows into the next one, and the
    last one's result is the op's (matmul's folded mm, then its _unsafe_view)."""
    class Doubling(importlib.import_module(T.__name__ + ".utils._python_dispatch").TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            return out * 2 if func.__name__ == "mm.default" else out

    a, b = T.ones(2, 3, 4), T.ones(4, 5)
    with Doubling():
        folded = a @ b
    with Doubling():
        conv = T.nn.functional.conv1d(T.ones(2, 3), T.ones(4, 2, 1))
    return folded, conv
