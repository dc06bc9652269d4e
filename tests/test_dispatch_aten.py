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


def _describe_overload(T, func):
    schema = func._schema
    arguments = [(a.name, str(a.type), a.default_value if not isinstance(a.default_value, float) else
                  round(a.default_value, 9), a.kwarg_only, a.alias_info is not None and a.alias_info.is_write, a.N)
                 for a in schema.arguments]
    returns = [(r.name, str(r.type)) for r in schema.returns]
    return (str(func), repr(func), func.name(), func.__name__, str(func.overloadpacket), func._overloadname,
            func._overloadpacket is func.overloadpacket, str(schema), schema.name, schema.overload_name,
            schema.is_mutable, arguments, returns, sorted(tag.name for tag in func.tags), func.is_view)


@differential
def test_mode_receives_the_overload_torch_ops_names(T):
    """A mode's ``func`` is the object ``torch.ops.aten.X.overload`` names, so tables keyed by
    operators (FLOP counters, checkpoint policies) find it; with its schema and tags."""
    aten = T.ops.aten
    seen = []

    class Identity(importlib.import_module(T.__name__ + ".utils._python_dispatch").TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    x = T.ones(3, 4, requires_grad=True)
    w = T.ones(5, 4, requires_grad=True)
    with Identity():
        T.nn.functional.linear(x, w).sin().sum()
    names = {aten.t.default: "t", aten.mm.default: "mm", aten.sin.default: "sin", aten.sum.default: "sum"}
    same_objects = [names.get(f) for f in seen]
    described = [_describe_overload(T, f) for f in (aten.sin.default, aten.add.Tensor, aten.add_.Tensor,
                                                    aten.max_pool2d_with_indices.default, aten.nll_loss_forward.default,
                                                    aten.sum.dim_IntList, aten.transpose.int, aten.t_.default,
                                                    aten.bernoulli.p, aten.split.Tensor, aten.clone.default)]
    tags = (T.Tag.pointwise in aten.sin.default.tags, T.Tag.inplace_view in aten.t_.default.tags,
            T.Tag.nondeterministic_seeded in aten.bernoulli.p.tags, int(T.Tag.pointwise), str(T.Tag.core))
    return same_objects, described, tags, sorted(aten.max.overloads()), aten.mm.default is aten.mm.default


@differential
def test_mode_result_of_the_interned_overload(T):
    """Calling the overload with the mode's own arguments gives the op's result; with others it
    computes; a nested mode hands it on to the outer one."""
    base = importlib.import_module(T.__name__ + ".utils._python_dispatch").TorchDispatchMode
    log = []

    class Outer(base):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            log.append(("outer", str(func)))
            return func(*args, **(kwargs or {}))

    class Inner(base):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            log.append(("inner", str(func)))
            out = func(*args, **(kwargs or {}))
            if func is T.ops.aten.cos.default:
                return func(zeros)        # another argument: computed for real
            return out

    x, zeros = T.tensor([0.5, 1.0]), T.zeros(2)
    with Outer(), Inner():
        y = x.cos()
    return y, log


def test_every_aten_schema_parses_as_torchs():
    """hookgrad's parse of each schema in its table agrees with torch's own parse (names, types,
    defaults, keyword-only, alias annotations, results)."""
    import math

    import torch
    from hookgrad._function_schema import FunctionSchema
    count = 0
    for theirs in torch._C._jit_get_all_schemas():
        if not theirs.name.startswith("aten::"):
            continue
        ours = FunctionSchema(str(theirs))
        assert (ours.name, ours.overload_name, ours.is_mutable) == (theirs.name, theirs.overload_name,
                                                                     theirs.is_mutable), str(theirs)
        assert len(ours.arguments) == len(theirs.arguments) and len(ours.returns) == len(theirs.returns)
        for a, b in zip(ours.arguments + ours.returns, list(theirs.arguments) + list(theirs.returns)):
            assert (a.name, str(a.type), a.type.kind(), a.kwarg_only, a.N, a.is_out, a.has_default_value()) == \
                (b.name, str(b.type), b.type.kind(), b.kwarg_only, b.N, b.is_out, b.has_default_value()), str(theirs)
            default, expected = a.default_value, b.default_value
            if isinstance(expected, float) and math.isnan(expected):
                assert math.isnan(default)
            elif "MemoryFormat" in a.type_text and expected is not None:
                assert str(default).split(".")[-1] == str(expected).split(".")[-1]
            else:
                assert default == expected, (str(theirs), a.name)
            assert (a.alias_info is None) == (b.alias_info is None), str(theirs)
            if a.alias_info is not None:
                assert (a.alias_info.is_write, a.alias_info.before_set, a.alias_info.after_set) == \
                    (b.alias_info.is_write, b.alias_info.before_set, b.alias_info.after_set), str(theirs)
        count += 1
    assert count > 3000


def test_schema_table_is_current():
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, os.path.join(root, "scripts", "gen_aten_schemas.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
