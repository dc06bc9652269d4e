"""``hookgrad.hooks.register_op_hook``.

Forward: which ops are reported, under which names and with which operands, against what torch's
``TorchFunctionMode`` (the function the program called) and ``TorchDispatchMode`` (the aten ops it
ran) see for the same program, over the op-test registry's cases, nn.functional's and nn modules;
that every node of a registry case's graph is made inside a reported op; no_grad, in-place ops,
custom Functions, output replacement (against a dispatch mode doing the same), and the zero-cost
rule (op functions run their own code while no op hook is registered). Backward: against torch's
node post-hooks on the same programs."""
from __future__ import annotations

import collections
import threading
import warnings

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import hookgrad
import hookgrad.hooks as H
from difftest import assert_same, normalize
from hookgrad import relu as relu_taken_before_any_hook  # a reference held from import time
from hookgrad.hooks._ops import _all_op_functions, reported_name
from op_cases import BINARY, EDGE, FUNCTIONAL_VS_TORCH, MATRIX, UNARY, columns
from test_op_registry import _registry_runs

PLAIN_CALL = hookgrad.nn.Module.__dict__["__call__"]


@pytest.fixture(autouse=True)
def no_op_hook_left():
    yield
    from hookgrad.autograd import graph
    assert not graph._op_forward_hooks and not graph._op_backward_hooks, "a test left an op hook registered"
    assert hookgrad.nn.Module.__call__ is PLAIN_CALL
    assert all(entry.fn.__code__ is entry.code for entry in _all_op_functions()), "an op function left hooked"


def tensors_of(value):
    kinds = (hookgrad.Tensor, torch.Tensor)
    if isinstance(value, kinds):
        return [value]
    if isinstance(value, (tuple, list)):
        return [v for v in value if isinstance(v, kinds)]
    return []


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


# ---- names and operands, against torch -------------------------------------------------------------
# torch's reflected operators, by the op they compute (hookgrad names ``1 - x`` rsub, as aten does)
REFLECTED = {"__rsub__": "rsub", "__rpow__": "pow", "__rdiv__": "div", "__rtruediv__": "div"}
# torch functions that hookgrad implements with another one of the same meaning (torch.linalg.inv
# is torch.inverse): one function, reported under one name
SHARED = {"linalg_inv": "inverse", "linalg_det": "det", "linalg_slogdet": "slogdet",
          "linalg_matrix_exp": "matrix_exp", "linalg_matrix_power": "matrix_power", "linalg_matmul": "matmul",
          # and two torch functions hookgrad implements as the op they mean
          "trapz": "trapezoid", "unsafe_split_with_sizes": "split_with_sizes"}


def is_factory(name):
    """torch functions that make a tensor from nothing but a shape and options: not reported."""
    return name.endswith("_like") or name.startswith("new_") or name in ("tensor", "zeros", "ones", "empty", "full")


def torch_calls(run):
    """What torch's TorchFunctionMode sees ``run`` call (the outermost calls; the mode is off
    while one runs), each with its tensor operands and the aten ops a TorchDispatchMode saw it run:
    ``[(name, operands, aten op names, kwargs)]``, for calls that take and return tensors."""
    calls = []

    class Aten(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if calls:
                calls[-1][2].append(func.__name__.split(".")[0])
            return func(*args, **(kwargs or {}))

    class Functions(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            operands = [t for a in list(args) + list(kwargs.values()) for t in tensors_of(a)]
            entry = (getattr(func, "__name__", repr(func)), operands, [], kwargs)
            calls.append(entry)
            out = func(*args, **kwargs)
            if not tensors_of(out) and entry[0] != "__setitem__":
                calls.remove(entry)
            return out

    with Aten(), Functions():
        run()
    return [c for c in calls if c[1] and not is_factory(c[0])]


def hookgrad_calls(run):
    calls = []

    def record(op, inputs, outputs):
        calls.append((op, inputs, outputs, H.context().module))

    with H.register_op_hook(forward=record):
        run()
    return calls


def expected_names(torch_name, aten, kwargs):
    """The names hookgrad may report for a torch call: torch's function name (the in-place form
    for ``inplace=True``; a reflected operator by its op), or, for an alias or a property, the one
    aten op it ran (``subtract`` -> ``sub``, ``x.mT`` -> ``transpose``)."""
    name = REFLECTED.get(torch_name, torch_name)
    if kwargs.get("inplace"):
        name += "_"
    names = {name, SHARED.get(name, name)}
    ran = [a for a in aten if a not in ("detach", "lift_fresh")]
    if len(set(ran)) == 1:
        names.add(ran[0])
    if name == "__get__":  # a property whose view takes torch several aten ops: hookgrad names the property
        names |= {"real", "imag"}
    return names


def assert_reports_like_torch(run_on, where, torch_only=()):
    """hookgrad reports the calls torch's function mode sees, with the same names and operands;
    ``torch_only``: names of torch's calls that hookgrad makes without an op (a known difference)."""
    want = torch_calls(run_on(torch))
    for name in torch_only:
        assert name in [w[0] for w in want], (where, name, "is no longer a difference")
        want = [w for w in want if w[0] != name]
    got = hookgrad_calls(run_on(hookgrad))
    got_names = [str(op) for op, _, _, _ in got]
    assert len(got) == len(want), (where, got_names, [w[0] for w in want])
    for (op, inputs, outputs, _), (name, operands, aten, kwargs) in zip(got, want):
        assert str(op) in expected_names(name, aten, kwargs), (where, str(op), name, aten)
        # every operand torch's function received is one of the op's inputs (hookgrad may give more:
        # torch's l1_loss hands its override no weight)
        shapes = collections.Counter(tuple(t.shape) for t in inputs)
        assert not collections.Counter(tuple(t.shape) for t in operands) - shapes, (where, str(op))
        assert all(isinstance(t, hookgrad.Tensor) for t in inputs + outputs)
    return got


def _registry_cases():
    rng = np.random.default_rng(3)
    for name, (fn, opts) in UNARY.items():
        a = rng.uniform(-2, 2, (2, 3, 4))
        yield f"unary:{name}", fn, [np.abs(a) + 0.5 if opts.get("positive") else a], False
    for name, (fn, opts) in BINARY.items():
        arrays = [rng.uniform(-2, 2, s) for s in ((2, 3), (3,))]
        yield f"binary:{name}", fn, [np.abs(a) + 0.5 for a in arrays] if opts.get("positive") else arrays, False
    for table, rows in (("matrix", MATRIX), ("edge", EDGE)):
        for name, row in rows.items():
            fn, shapes, _ = columns(table, row)
            yield f"{table}:{name}", fn, [rng.uniform(-2, 2, s) for s in shapes], False
    for name, (fn, arrays, _) in FUNCTIONAL_VS_TORCH.items():
        yield f"functional:{name}", fn, arrays, True


# batch_norm_float32 mixes dtypes, which torch refuses and hookgrad's row exists to accept; torch's
# lobpcg (Python code) tests a tensor's truth inside, which the recording dispatch mode refuses
REGISTRY_VS_TORCH = {name: (fn, arrays, functional) for name, fn, arrays, functional in _registry_cases()
                     if name not in ("functional:batch_norm_float32", "edge:lobpcg")}


@pytest.mark.parametrize("case", sorted(REGISTRY_VS_TORCH))
def test_op_names_and_operands_are_torchs(case):
    fn, arrays, functional = REGISTRY_VS_TORCH[case]

    def run_on(T):
        ts = [T.tensor(a, requires_grad=np.issubdtype(np.asarray(a).dtype, np.floating)) for a in arrays]
        if functional:
            return lambda: fn(T, T.nn.functional, *ts)
        return lambda: fn(T, *ts)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert assert_reports_like_torch(run_on, case), case


def _module_cases():
    x4 = np.random.default_rng(0).uniform(-1, 1, (2, 3, 6, 6))
    seq = np.random.default_rng(1).uniform(-1, 1, (5, 2, 4))
    return {
        "linear": (lambda nn: nn.Linear(4, 3), (2, 4)),
        "bilinear": (lambda nn: nn.Bilinear(4, 4, 2), (2, 4), (2, 4)),
        "conv1d": (lambda nn: nn.Conv1d(3, 2, 3, padding=1), (2, 3, 7)),
        "conv2d": (lambda nn: nn.Conv2d(3, 4, 3, stride=2), x4),
        "conv_transpose2d": (lambda nn: nn.ConvTranspose2d(3, 2, 2), x4),
        "batch_norm_train": (lambda nn: nn.BatchNorm2d(3), x4),
        "batch_norm_eval": (lambda nn: nn.BatchNorm2d(3).eval(), x4),
        "layer_norm": (lambda nn: nn.LayerNorm(6), x4),
        "group_norm": (lambda nn: nn.GroupNorm(1, 3), x4),
        "instance_norm": (lambda nn: nn.InstanceNorm2d(3), x4),
        "max_pool": (lambda nn: nn.MaxPool2d(2), x4),
        "max_pool_indices": (lambda nn: nn.MaxPool2d(2, return_indices=True), x4),
        "avg_pool": (lambda nn: nn.AvgPool2d(2), x4),
        "adaptive_avg_pool": (lambda nn: nn.AdaptiveAvgPool2d(1), x4),
        "flatten": (lambda nn: nn.Flatten(), x4),
        "dropout_eval": (lambda nn: nn.Dropout(0.5).eval(), x4),
        "activations": (lambda nn: nn.Sequential(nn.ReLU(), nn.GELU(), nn.Tanh(), nn.Sigmoid(), nn.SiLU(),
                                                 nn.LeakyReLU(), nn.ELU(), nn.Softplus(), nn.Hardswish()), x4),
        "relu_inplace": (lambda nn: nn.Sequential(nn.Linear(4, 4), nn.ReLU(inplace=True)), (2, 4)),
        "softmax": (lambda nn: nn.Sequential(nn.Softmax(dim=-1), nn.LogSoftmax(dim=1)), x4),
        "embedding": (lambda nn: nn.Embedding(10, 3), np.array([[1, 2], [3, 9]])),
        "lstm": (lambda nn: nn.LSTM(4, 3, num_layers=2), seq),
        "gru": (lambda nn: nn.GRU(4, 3, bidirectional=True), seq),
        "rnn": (lambda nn: nn.RNN(4, 3), seq),
        "lstm_cell": (lambda nn: nn.LSTMCell(4, 3), (2, 4), [(2, 3), (2, 3)]),
        "gru_cell": (lambda nn: nn.GRUCell(4, 3), (2, 4), (2, 3)),
        "rnn_cell": (lambda nn: nn.RNNCell(4, 3, nonlinearity="relu"), (2, 4), (2, 3)),
        "multihead_attention": (lambda nn: nn.MultiheadAttention(4, 2), seq, seq, seq),
        "mlp": (lambda nn: nn.Sequential(nn.Flatten(), nn.Linear(108, 8), nn.ReLU(), nn.Linear(8, 2)), x4),
    }


MODULE_CASES = _module_cases()
# BatchNorm counts batches in num_batches_tracked without an op (torch's module runs add_ on it)
MODULE_TORCH_ONLY = {"batch_norm_train": ("add_",)}


@pytest.mark.parametrize("case", sorted(MODULE_CASES))
def test_module_ops_are_reported_like_torch_functions(case):
    build, *inputs = MODULE_CASES[case]

    def run_on(T):
        module = build(T.nn)
        def tensor(a):
            if isinstance(a, list):  # a tuple argument, as an LSTM cell's (h, c)
                return tuple(tensor(b) for b in a)
            a = np.random.default_rng(2).uniform(-1, 1, a) if isinstance(a, tuple) else a
            return T.tensor(a, dtype=T.float32) if a.dtype.kind == "f" else T.tensor(a)

        args = [tensor(a) for a in inputs]
        return lambda: module(*args)

    got = assert_reports_like_torch(run_on, case, MODULE_TORCH_ONLY.get(case, ()))
    assert got and all(isinstance(module, hookgrad.nn.Module) for _, _, _, module in got)  # context().module


def test_every_op_function_is_named_like_its_torch_function_or_an_alias_of_it():
    """Across torch.*, torch.nn.functional.*, Tensor methods, torch.linalg and torch.special: the
    name reported for a call is torch's ``__name__`` of that function (what a TorchFunctionMode
    sees), or, for names hookgrad implements with one function, that function's one name, which
    is the name of the op they all run (``subtract`` reports ``sub``, as aten runs ``sub``)."""
    spaces = [(torch.nn.functional, hookgrad.nn.functional, hookgrad.nn.functional.__all__),
              (torch, hookgrad, [n for n in dir(hookgrad) if not n.startswith("_")]),
              (torch.Tensor, hookgrad.Tensor, [n for n in dir(hookgrad.Tensor) if not n.startswith("_")]),
              (torch.linalg, hookgrad.linalg, hookgrad.linalg.__all__),
              (torch.special, hookgrad.special, hookgrad.special.__all__)]
    same = shared = 0
    for torch_space, space, names in spaces:
        for name in names:
            fn, torch_fn = getattr(space, name, None), getattr(torch_space, name, None)
            reported = reported_name(fn) if callable(fn) and not isinstance(fn, type) else None
            if reported is None or torch_fn is None:
                continue
            if reported == getattr(torch_fn, "__name__", None):
                same += 1
                continue
            # one function under several names: the one it reports is a name torch has for one of them
            others = [n for n in names if reported_name(getattr(space, n, None)) == reported]
            torch_names = {getattr(getattr(torch_space, n, None), "__name__", None) for n in others}
            assert (reported in torch_names or reported in SHARED.values() or hasattr(torch, reported)
                    or hasattr(torch.Tensor, reported) or "_" + reported in torch_names), \
                (torch_space.__name__, name, reported)
            shared += 1
    assert same > 900 and shared < same / 5, (same, shared)


def test_factories_and_queries_are_not_ops():
    for fn in (hookgrad.zeros, hookgrad.randn, hookgrad.tensor, hookgrad.zeros_like, hookgrad.Tensor.new_zeros,
               hookgrad.Tensor.size, hookgrad.Tensor.item, hookgrad.Tensor.backward, hookgrad.is_tensor):
        assert reported_name(fn) is None, fn
    seen = []
    with H.register_op_hook(forward=lambda op, i, o: seen.append(str(op))):
        x = hookgrad.zeros(2, 3)
        x.size(), x.item() if x.numel() == 1 else x.tolist(), hookgrad.ones_like(x)
        hookgrad.diag(hookgrad.arange(3.0))
    assert seen == ["diag"]


# ---- every node of a graph is made inside a reported op ---------------------------------------------
REGISTRY = dict(_registry_runs())


@pytest.mark.parametrize("case", sorted(REGISTRY))
def test_every_graph_node_is_made_inside_a_reported_op(case):
    """Walking back from each reported op's node to its inputs' nodes covers the whole graph: no
    node is made by code that no op hook sees."""
    reports = []

    def forward(op, inputs, outputs):
        assert isinstance(inputs, tuple) and isinstance(outputs, tuple) and outputs
        assert all(isinstance(t, hookgrad.Tensor) for t in inputs + outputs)
        reports.append((op, [t.grad_fn for t in inputs], [t.grad_fn for t in outputs]))

    with H.register_op_hook(forward=forward):
        out, _ = REGISTRY[case]()
    graph = reachable(tensors_of(out))
    assert graph and reports, case
    covered = set()
    for op, input_nodes, output_nodes in reports:
        assert op.node is None or op.node in output_nodes
        todo = list(output_nodes)
        while todo:
            node = todo.pop()
            # an in-place op's input is its output: its node is the op's own
            if node is None or node in covered or any(node is n and n not in output_nodes for n in input_nodes):
                continue
            covered.add(node)
            todo += [fn for fn, _ in node.next_functions]
    for node in graph:
        assert node in covered, f"{case}: {node.name()} made outside every reported op"


# ---- what is reported --------------------------------------------------------------------------------
def test_ops_are_reported_without_grad_and_without_a_node():
    seen = []
    x = hookgrad.randn(3, requires_grad=True)

    def forward(op, inputs, outputs):
        seen.append((str(op), op.node is None, hookgrad.is_grad_enabled()))

    with H.register_op_hook(forward=forward):
        (x.exp() * 2).sum()
        with hookgrad.no_grad():
            (x * 2).sum()
        with hookgrad.inference_mode():
            hookgrad.nn.functional.relu(x)
        hookgrad.ones(2).mul(3)  # nothing requires grad
    assert seen == [("exp", False, False), ("mul", False, False), ("sum", False, False), ("mul", True, False),
                    ("sum", True, False), ("relu", True, False), ("mul", True, False)]


def test_a_replacement_under_no_grad_replaces_the_values():
    x = hookgrad.tensor([0.5, -1.0])
    with H.register_op_hook(forward=lambda op, i, o: o[0] * 0 + 7, ops="exp"):
        with hookgrad.no_grad():
            y = x.exp()
    np.testing.assert_array_equal(y.numpy(), [7.0, 7.0])


def test_inputs_are_every_tensor_operand_in_parameter_order():
    seen = {}
    x = hookgrad.randn(3, 4, requires_grad=True)
    w, b = hookgrad.randn(2, 4, requires_grad=True), hookgrad.randn(2)
    target, index = hookgrad.tensor([0, 1, 1]), hookgrad.tensor([2, 0])
    cond = x > 0

    def forward(op, inputs, outputs):
        seen[str(op)] = inputs

    with H.register_op_hook(forward=forward):
        hookgrad.nn.functional.linear(x, bias=b, weight=w)
        hookgrad.nn.functional.cross_entropy(x, target)
        hookgrad.index_select(x, 1, index)
        hookgrad.where(cond, x, 0.0)
        hookgrad.cat([x, x], 0)
        x.add(1.5)
    expect = {"linear": (x, w, b), "cross_entropy": (x, target), "index_select": (x, index),
              "where": (cond, x), "cat": (x, x), "add": (x,)}
    for name, tensors in expect.items():
        assert len(seen[name]) == len(tensors) and all(a is b for a, b in zip(seen[name], tensors)), name


def test_composite_ops_report_themselves_and_not_their_parts():
    seen = []
    model = hookgrad.nn.Sequential(hookgrad.nn.Linear(4, 3), hookgrad.nn.LayerNorm(3))
    x = hookgrad.randn(2, 4, requires_grad=True)
    with H.register_op_hook(forward=lambda op, i, o: seen.append((str(op), op.node.name()))):
        loss = hookgrad.nn.functional.cross_entropy(model(x), hookgrad.tensor([0, 2]))
    assert [s[0] for s in seen] == ["linear", "layer_norm", "cross_entropy"]
    assert seen[0][1] == "AddmmBackward0"  # the node of its last part
    assert loss.grad_fn is not None


def test_a_function_reference_taken_before_the_hook_is_hooked():
    seen = []
    x = hookgrad.randn(3)
    with H.register_op_hook(forward=lambda op, i, o: seen.append(str(op))):
        relu_taken_before_any_hook(x)
    assert seen == ["relu"]
    relu_taken_before_any_hook(x)
    assert seen == ["relu"]


def test_without_an_op_hook_op_functions_run_their_own_code():
    entries = _all_op_functions()
    assert len(entries) > 800
    code = {e.fn: e.fn.__code__ for e in entries}
    assert all(e.fn.__code__ is e.code for e in entries)
    with H.register_op_hook(forward=lambda op, i, o: None):
        assert all(e.fn.__code__ is not e.code for e in entries)
        with H.register_op_hook(forward=lambda op, i, o: None):
            pass
        assert all(e.fn.__code__ is not e.code for e in entries)  # one forward op hook is still there
    assert all(e.fn.__code__ is code[e.fn] for e in entries)
    with H.register_op_hook(backward=lambda node, gi, go: None):  # a backward op hook swaps nothing
        assert all(e.fn.__code__ is e.code for e in entries)


def test_errors_and_warnings_of_ops_are_unchanged_under_an_op_hook():
    x = hookgrad.randn(2, 3)
    with H.register_op_hook(forward=lambda op, i, o: None):
        with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
            hookgrad.nn.functional.linear(x, hookgrad.randn(2, 2))
        with pytest.warns(UserWarning, match="target size"):
            hookgrad.nn.functional.mse_loss(x, hookgrad.randn(1, 3))
        assert hookgrad.nn.functional.relu(x).shape == (2, 3)  # not left "inside an op" by the error


def test_ops_of_another_thread_are_reported():
    seen = []
    x = hookgrad.randn(3)
    with H.register_op_hook(forward=lambda op, i, o: seen.append((str(op), threading.current_thread().name))):
        worker = threading.Thread(target=lambda: x.sin(), name="worker")
        worker.start()
        worker.join()
    assert seen == [("sin", "worker")]


def test_ops_the_engine_runs_are_reported_only_when_they_build_a_graph():
    x = hookgrad.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    with H.register_op_hook(forward=lambda op, i, o: seen.append((str(op), H.context().phase, H.context().id))):
        y = (x ** 3).sum()
        del seen[:]
        y.backward(retain_graph=True)
        assert seen == []
        (g,) = hookgrad.autograd.grad(y, x, create_graph=True)
    assert seen and all(p[1] == "backward" and isinstance(p[2], int) for p in seen)


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


# the registry's rows whose graphs are torch's node for node (einsum is one node here and torch's
# decomposition there, ldexp a MulBackward0 here)
GRAPH_DIFFERS = {"matrix:einsum", "matrix:einsum_sum", "binary:ldexp"}
BACKWARD_CASES = {name: arrays for name, (fn, arrays, functional) in REGISTRY_VS_TORCH.items()
                  if name.split(":")[0] in ("unary", "binary", "matrix") and name not in GRAPH_DIFFERS}


@pytest.mark.parametrize("case", sorted(BACKWARD_CASES))
def test_backward_hook_sees_what_torch_node_post_hooks_see(case):
    fn, arrays, _ = REGISTRY_VS_TORCH[case]
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
    assert seen == [("linear", "Linear", 0, "forward", "op_forward_hook"),
                    ("relu", "ReLU", 0, "forward", "op_forward_hook"),
                    ("linear", "Linear", 1, "forward", "op_forward_hook"),
                    ("sum", None, None, "forward", "op_forward_hook")]


def test_ops_filter_names_calls_forward_and_nodes_backward():
    seen = []
    x = hookgrad.randn(2, 3, requires_grad=True)
    w = hookgrad.randn(4, 3, requires_grad=True)
    with H.register_op_hook(forward=lambda op, i, o: seen.append(str(op)), backward=lambda n, gi, go: seen.append(n.name()),
                            ops=["linear", "addmm", "mm", "sum"]):
        hookgrad.nn.functional.linear(x, w).sum().backward()
    # linear runs mm on a transposed weight: forward reports the call, backward the nodes it made
    assert seen == ["linear", "sum", "SumBackward0", "MmBackward0"]


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


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpointed_ops_are_reported_and_again_when_recomputed(use_reentrant):
    layer = hookgrad.nn.Linear(3, 3)
    x = hookgrad.randn(2, 3, requires_grad=True)
    seen = []
    with H.register_op_hook(forward=lambda op, i, o: seen.append((str(op), H.context().recompute))):
        out = hookgrad.utils.checkpoint.checkpoint(lambda t: layer(t).relu(), x, use_reentrant=use_reentrant)
        forward = list(seen)
        out.sum().backward()
    assert forward == [("linear", False), ("relu", False)]
    recomputed = seen[3:]  # after sum: the rerun (non-reentrant's early stop may end it inside relu)
    assert seen[2] == ("sum", False) and recomputed
    assert recomputed == [("linear", True), ("relu", True)][:len(recomputed)]


def test_a_packed_sequence_runs_one_recurrent_op_as_in_torch():
    x = np.random.default_rng(0).uniform(-1, 1, (5, 2, 3))

    def run_on(T):
        lstm = T.nn.LSTM(3, 4, num_layers=2, bidirectional=True)
        packed = T.nn.utils.rnn.pack_padded_sequence(T.tensor(x, dtype=T.float32), [5, 3])
        state = (T.zeros(4, 2, 4), T.ones(4, 2, 4))  # torch's own zero state would be an operand of torch's op only
        return lambda: lstm(packed, state)

    # torch's LSTM.forward reads batch_sizes[0] before its one op; hookgrad's does inside it
    got = assert_reports_like_torch(run_on, "packed lstm", torch_only=("__getitem__",))
    assert [str(op) for op, _, _, _ in got] == ["lstm"]


def test_replacements_inside_modules_and_custom_functions():
    class Square(hookgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            result = x * x
            ctx.save_for_backward(x, result)
            return result

        @staticmethod
        def backward(ctx, g):
            x, result = ctx.saved_tensors
            return g * result / x  # uses the saved output: 2 * x when result is x * x

    layer = hookgrad.nn.Linear(2, 2)
    x = hookgrad.tensor([[1.0, 2.0]], requires_grad=True)
    with H.register_op_hook(forward=lambda op, i, o: o[0] * 0 + 3, ops={"linear", "Square"}):
        out = layer(x)
        sq = Square.apply(x)
    np.testing.assert_array_equal(out.detach().numpy(), [[3.0, 3.0]])
    np.testing.assert_array_equal(sq.detach().numpy(), [[3.0, 3.0]])
    sq.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[3.0, 1.5]])  # the saved output is the replacement


def test_a_hook_that_removes_itself_mid_program_leaves_ops_unhooked():
    seen = []

    def once(op, inputs, outputs):
        seen.append(str(op))
        handle.remove()  # the last forward op hook: op functions get their own code back at once
        return outputs[0] * 2

    x = hookgrad.tensor([1.0, 2.0])
    handle = H.register_op_hook(forward=once)
    y = x.exp()
    z = y.exp()
    assert seen == ["exp"]
    np.testing.assert_allclose(y.numpy(), 2 * np.exp([1.0, 2.0]), rtol=1e-6)
    np.testing.assert_allclose(z.numpy(), np.exp(y.numpy()), rtol=1e-6)
