"""``hookgrad.hooks.register_op_hook``: property tests over the op-test registry (every case fires
the forward hook for every node of its graph, with torch's short op name), the backward hook against
torch's node post-hooks on the same programs, and output replacement against a TorchDispatchMode."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import hookgrad
import hookgrad.hooks as H
from difftest import assert_same, normalize
from hookgrad.hooks._ops import op_name
from op_cases import BINARY, MATRIX, UNARY
from test_op_registry import _registry_runs

PLAIN_CALL = hookgrad.nn.Module.__dict__["__call__"]


@pytest.fixture(autouse=True)
def no_op_hook_left():
    yield
    from hookgrad.autograd import graph
    assert not graph._op_forward_hooks and not graph._op_backward_hooks, "a test left an op hook registered"
    assert hookgrad.nn.Module.__call__ is PLAIN_CALL


def reachable(outs):
    """Every node of the graph behind ``outs`` (AccumulateGrad excluded), in a stable order."""
    seen, order = set(), []
    todo = [o.grad_fn for o in outs if getattr(o, "grad_fn", None) is not None]
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        if "AccumulateGrad" not in type(node).__name__:
            order.append(node)
        todo += [fn for fn, _ in node.next_functions if fn is not None]
    return order


def tensors_of(out):
    return [o for o in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(o, (hookgrad.Tensor, torch.Tensor))]


# ---- forward: every registry case -----------------------------------------------------------------
REGISTRY = dict(_registry_runs())


@pytest.mark.parametrize("case", sorted(REGISTRY))
def test_every_registry_op_fires_the_forward_hook_with_its_name_and_node(case):
    reports = []

    def forward(op, inputs, outputs):
        assert isinstance(inputs, (tuple, list)) and inputs, (op, "an op must give its inputs to its recording point")
        reports.append((op, op.node, outputs, [o.grad_fn is op.node for o in outputs]))

    with H.register_op_hook(forward=forward):
        out, _ = REGISTRY[case]()
    reported = {id(node) for _, node, _, _ in reports}
    graph = reachable(tensors_of(out))
    assert graph, case
    for node in graph:
        # an in-place op on a view is reported with its own node, which the base's CopySlices wraps
        made = getattr(node, "fn", node) if type(node).__name__ == "CopySlices" else node
        assert id(made) in reported, f"{case}: {node.name()} made without an op hook call"
    for op, node, outputs, made_by_node in reports:
        assert isinstance(op, str) and re.fullmatch(r"[a-z][a-z0-9_]*", op), op
        assert op == op_name(type(node)) + ("_" if op.inplace else "")
        assert outputs and all(isinstance(o, hookgrad.Tensor) for o in outputs)
        if not op.inplace:
            assert any(made_by_node), (case, op)


def torch_names(fn, arrays):
    """torch's graph for the case: the short names of its nodes, and the aten ops dispatched."""
    seen = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.__name__.split(".")[0].lstrip("_"))
            return func(*args, **(kwargs or {}))

    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    with Record():
        out = fn(torch, *ts)
    return {op_name(type(n)) for n in reachable(tensors_of(out))}, set(seen)


def hookgrad_names(fn, arrays):
    names = []
    with H.register_op_hook(forward=lambda op, i, o: names.append(op)):
        out = fn(hookgrad, *[hookgrad.tensor(a, requires_grad=True) for a in arrays])
    graph = {op_name(type(n)) for n in reachable(tensors_of(out))}
    return graph, names


def _torch_cases():
    rng = np.random.default_rng(3)
    for name, (fn, opts) in UNARY.items():
        a = rng.uniform(-2, 2, (2, 3, 4))
        yield f"unary:{name}", fn, [np.abs(a) + 0.5 if opts.get("positive") else a]
    for name, (fn, opts) in BINARY.items():
        arrays = [rng.uniform(-2, 2, s) for s in ((2, 3), (3,))]
        yield f"binary:{name}", fn, [np.abs(a) + 0.5 for a in arrays] if opts.get("positive") else arrays
    for name, (fn, shapes) in MATRIX.items():
        yield f"matrix:{name}", fn, [rng.uniform(-2, 2, s) for s in shapes]


# the registry's rows whose graphs are torch's node for node (EDGE rows are not, by design; einsum
# is one node here and torch's decomposition there, ldexp a MulBackward0 here)
GRAPH_DIFFERS = {"matrix:einsum", "matrix:einsum_sum", "binary:ldexp"}
TORCH_CASES = {name: (fn, arrays) for name, fn, arrays in _torch_cases() if name not in GRAPH_DIFFERS}


@pytest.mark.parametrize("case", sorted(TORCH_CASES))
def test_op_names_are_torchs(case):
    fn, arrays = TORCH_CASES[case]
    torch_graph, aten = torch_names(fn, arrays)
    graph, names = hookgrad_names(fn, arrays)
    assert graph == torch_graph  # the same nodes, named the same way
    aten = {a.rstrip("_") for a in aten}
    for name in set(names):
        # a node that is no aten op of its own (torch's graph has it too: checked above)
        assert name.rstrip("_") in aten or name in torch_graph, (case, name, sorted(aten))


# ---- backward: what torch's node post-hooks see ----------------------------------------------------
def post_hook_log(T, fn, arrays, use_op_hook):
    ts = [T.tensor(a, requires_grad=True) for a in arrays]
    log = []

    def plain(g):  # torch's efficient zero tensors have no storage to compare
        return T.zeros(g.shape, dtype=g.dtype) if T is torch and g is not None and g._is_zerotensor() else g

    def record(node, grad_inputs, grad_outputs):
        log.append((node.name(), [plain(g) for g in grad_inputs], [plain(g) for g in grad_outputs]))

    if use_op_hook:
        with H.register_op_hook(backward=record):
            out = fn(T, *ts)
            out.backward(T.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape))))
        return log
    out = fn(T, *ts)
    seen, todo = set(), [out.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        node.register_hook(lambda gi, go, node=node: record(node, gi, go))
        todo += [fn for fn, _ in node.next_functions]
    out.backward(T.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape))))
    return log


@pytest.mark.parametrize("case", sorted(TORCH_CASES))
def test_backward_hook_sees_what_torch_node_post_hooks_see(case):
    fn, arrays = TORCH_CASES[case]
    want = post_hook_log(torch, fn, arrays, use_op_hook=False)
    got = post_hook_log(hookgrad, fn, arrays, use_op_hook=True)
    assert_same(normalize(got), normalize(want), rtol=1e-7, atol=1e-9)


def test_backward_hook_replaces_grad_inputs_like_a_node_post_hook():
    def program(T, hook_all):
        x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = (x * x).exp().sum()
        hook_all(y)
        y.backward()
        return x.grad

    def torch_hooks(y):
        node = y.grad_fn.next_functions[0][0].next_functions[0][0]  # MulBackward0
        node.register_hook(lambda gi, go: tuple(g * 2 for g in gi))

    want = program(torch, torch_hooks)
    with H.register_op_hook(backward=lambda node, gi, go: tuple(g * 2 for g in gi), ops={"mul"}):
        got = program(hookgrad, lambda y: None)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


# ---- forward replacement, against a dispatch mode doing the same ------------------------------------
def test_a_returned_value_replaces_the_outputs_and_what_backward_saved():
    class Twice(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            return out * 2 if func.__name__.startswith("exp") else out

    def program(T):
        x = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = x.exp()
        z = (y * x).sum()
        z.backward()
        return y.detach(), x.grad

    with Twice():
        want = program(torch)
    with H.register_op_hook(forward=lambda op, inputs, outputs: outputs[0] * 2, ops="exp"):
        got = program(hookgrad)
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy())
    # exp's node saved its output, which is the replaced one: d/dx sum(y * x) = y + x * y
    y, x = got[0].numpy(), np.array([0.5, -1.0, 2.0], dtype=np.float32)
    np.testing.assert_allclose(got[1].numpy(), y + x * y, rtol=1e-6)


def test_bad_replacements_raise_and_change_nothing():
    x = hookgrad.randn(3, requires_grad=True)
    cases = [(lambda op, i, o: hookgrad.zeros(4), RuntimeError, "size or type"),
             (lambda op, i, o: o[0].double(), RuntimeError, "size or type"),
             (lambda op, i, o: (o[0], o[0]), RuntimeError, "returned 2 outputs"),
             (lambda op, i, o: "nope", TypeError, "expected None, a Tensor"),
             (lambda op, i, o: [3], TypeError, "for output 0")]
    for hook, error, message in cases:
        with H.register_op_hook(forward=hook, ops="sin"):
            with pytest.raises(error, match=message):
                x.sin()
    with H.register_op_hook(forward=lambda op, i, o: o[0] * 0, ops="view"):
        with pytest.raises(RuntimeError, match="view of the op's input"):
            x.view(3, 1)
    y = x.sin()  # the registries are usable again
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(x.detach().numpy()), rtol=1e-6)


def test_in_place_ops_are_reported_once_after_the_write():
    reports = []

    def forward(op, inputs, outputs):
        reports.append((str(op), op.inplace, inputs[0] is outputs[0], outputs[0].detach().clone()))

    x = hookgrad.tensor([-1.0, 2.0], requires_grad=True)
    with H.register_op_hook(forward=forward):
        y = x * 1
        y.add_(1.0)
        hookgrad.nn.functional.relu(y, inplace=True)
    assert [r[:3] for r in reports] == [("mul", False, False), ("add_", True, True), ("relu_", True, True)]
    np.testing.assert_array_equal(reports[-1][3].numpy(), [0.0, 3.0])


def test_in_place_shape_changes_are_reported_as_in_place_ops():
    seen = []
    x = hookgrad.randn(2, 3, requires_grad=True)
    with H.register_op_hook(forward=lambda op, i, o: seen.append((str(op), o[0], tuple(o[0].shape)))):
        y = x * 1
        y.unsqueeze_(0)
        y.squeeze_(0)
    assert [(name, out is y, shape) for name, out, shape in seen] == [
        ("mul", True, (2, 3)), ("unsqueeze_", True, (1, 2, 3)), ("squeeze_", True, (2, 3))]


def test_a_mark_dirty_function_output_is_replaced_in_place():
    class Double(hookgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x.mul_(2)

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    x = hookgrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    view = y[:1]
    with H.register_op_hook(forward=lambda op, i, o: o[0] + 1, ops="Double"):
        out = Double.apply(y)
    assert out is y
    np.testing.assert_array_equal(view.detach().numpy(), [3.0])  # written into y's storage: views see it


def test_in_place_replacement_writes_into_the_tensor():
    x = hookgrad.tensor([-1.0, 2.0], requires_grad=True)
    with H.register_op_hook(forward=lambda op, i, o: o[0] + 10, ops="add_"):
        y = x * 1
        y.add_(1.0)
    np.testing.assert_array_equal(y.detach().numpy(), [10.0, 13.0])


def test_custom_functions_are_reported_by_class_name():
    class Cube(hookgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 3 * x * x * g

    seen = []
    x = hookgrad.tensor([2.0], requires_grad=True)
    with H.register_op_hook(forward=lambda op, i, o: seen.append((str(op), op.node is o[0].grad_fn, i[0] is x)),
                            backward=lambda node, gi, go: seen.append(node.name())):
        Cube.apply(x).sum().backward()
    assert seen[0] == ("Cube", True, True)
    assert "CubeBackward" in seen


def test_context_names_the_module_running_the_op():
    shared = hookgrad.nn.Linear(2, 2)
    model = hookgrad.nn.Sequential(shared, hookgrad.nn.ReLU(), shared)
    seen = []

    def forward(op, inputs, outputs):
        ctx = H.context()
        seen.append((str(op), None if ctx.module is None else type(ctx.module).__name__, ctx.call_index,
                     ctx.phase, ctx.kind))

    with H.register_op_hook(forward=forward):
        model(hookgrad.randn(1, 2, requires_grad=True)).sum()
    assert seen == [("t", "Linear", 0, "forward", "op_forward_hook"), ("addmm", "Linear", 0, "forward", "op_forward_hook"),
                    ("relu", "ReLU", 0, "forward", "op_forward_hook"),
                    ("t", "Linear", 1, "forward", "op_forward_hook"), ("addmm", "Linear", 1, "forward", "op_forward_hook"),
                    ("sum", None, None, "forward", "op_forward_hook")]


def test_ops_filter_and_nothing_without_a_node():
    seen = []
    x = hookgrad.randn(3, requires_grad=True)
    with H.register_op_hook(forward=lambda op, i, o: seen.append(str(op)), backward=lambda n, gi, go: seen.append(n.name()),
                            ops=["mul", "sum"]):
        (x.exp() * 2).sum().backward()
        with hookgrad.no_grad():
            (x * 2).sum()
        (hookgrad.ones(2) * 2).sum()  # nothing requires grad: no node, no report
    assert seen == ["mul", "sum", "SumBackward0", "MulBackward0"]


def test_ops_a_hook_runs_fire_no_op_hook_and_are_not_recorded():
    seen = []

    def forward(op, inputs, outputs):
        seen.append(str(op))
        assert not hookgrad.is_grad_enabled()
        (outputs[0] * 3).exp()  # would recurse if it fired op hooks

    x = hookgrad.randn(2, requires_grad=True)
    with H.register_op_hook(forward=forward):
        x.sin()
    assert seen == ["sin"]


def test_create_graph_backward_ops_are_reported_in_the_backward_phase():
    phases = []
    x = hookgrad.tensor([1.0, 2.0], requires_grad=True)
    y = (x ** 3).sum()
    with H.register_op_hook(forward=lambda op, i, o: phases.append((str(op), H.context().phase, H.context().id))):
        (g,) = hookgrad.autograd.grad(y, x, create_graph=True)
    assert phases and all(p[1] == "backward" and isinstance(p[2], int) for p in phases)


def test_bad_registrations_raise_type_error():
    with pytest.raises(TypeError, match="give a forward= hook"):
        H.register_op_hook()
    with pytest.raises(TypeError, match="forward hook must be callable"):
        H.register_op_hook(forward=3)
    with pytest.raises(TypeError, match="backward hook must be callable"):
        H.register_op_hook(backward="x")
    with pytest.raises(TypeError, match="ops must be"):
        H.register_op_hook(forward=print, ops=5)
    with pytest.raises(TypeError, match="ops must hold op names"):
        H.register_op_hook(forward=print, ops=[1])


def test_removing_the_handle_twice_is_harmless():
    handle = H.register_op_hook(forward=lambda op, i, o: None)
    assert hookgrad.nn.Module.__call__ is not PLAIN_CALL
    handle.remove()
    handle.remove()
    assert hookgrad.nn.Module.__call__ is PLAIN_CALL
