"""Behaviours that hook-centric client libraries (surgeon-pytorch, torchopt, laplace-torch, pyro, ...)
rely on, each checked against torch on its own as a differential scenario."""
from __future__ import annotations

import operator

from difftest import catch, differential, warns


class _Net:
    """Built per framework: a conv stem, a linear head and a function call between them."""

    @staticmethod
    def make(T):
        class Net(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = T.nn.Linear(3, 3)
                self.head = T.nn.Linear(3, 2)

            def forward(self, x):
                h = T.tanh(self.stem(x))
                return self.head(h + x)

        return Net()


def _graph_rows(graph):
    return [(n.op, n.name, n.target if isinstance(n.target, str) else n.target.__name__,
             [str(a) for a in n.args]) for n in graph.nodes]


@differential
def test_fx_insert_points_and_node_moves(T):
    """Graph.inserting_before/after place new nodes (several in a row keep their order; the previous
    place comes back after the block); Node.prepend/append move existing nodes."""
    module = _Net.make(T)
    traced = T.fx.symbolic_trace(module)
    graph = traced.graph
    by_name = {n.name: n for n in graph.nodes}
    out = []
    with graph.inserting_after(by_name["tanh"]):
        first = graph.call_function(T.relu, (by_name["tanh"],))
        second = graph.call_function(T.sigmoid, (first,))
    by_name["add"].replace_input_with(by_name["tanh"], second)
    with graph.inserting_before(by_name["stem"]):
        graph.call_function(T.abs, (by_name["x"],))
    with graph.inserting_before():
        early = graph.placeholder("scale")
    late = graph.call_function(operator.mul, (by_name["head"], 2))  # back at the end: after the output
    out.append(_graph_rows(graph))
    graph.erase_node(late)
    graph.erase_node(early)
    by_name["output"].prepend(by_name["head"])
    by_name["x"].append(by_name["stem"])
    out.append(_graph_rows(graph))
    out.append(catch(lambda: T.fx.symbolic_trace(_Net.make(T)).graph.inserting_before(by_name["stem"])))
    traced.recompile()
    return out


@differential
def test_fx_node_names(T):
    """Nodes are named as torch names them: a callable's __name__ with its leading underscores, a dunder
    method without its underscores, camelCase as snake_case, dots as underscores, repeats numbered."""
    import operator
    graph = T.fx.Graph()
    x = graph.placeholder("x")
    graph.call_function(T._assert, (True, "kept"))
    graph.call_method("__add__", (x, 1))
    graph.call_module("layer1.Conv", (x,))
    graph.call_function(operator.add, (x, x))
    graph.call_function(T.relu, (x,))
    graph.get_attr("someWeight")
    graph.call_method("sum", (x,))
    graph.call_method("sum", (x,))
    return [node.name for node in graph.nodes]


@differential
def test_fx_dead_code_elimination(T):
    """eliminate_dead_code erases unused module calls, functions and methods, keeps placeholders,
    setitem, asserts, random draws and modules marked _is_impure; a predicate replaces the rule."""
    module = _Net.make(T)
    traced = T.fx.symbolic_trace(module)
    graph = traced.graph
    nodes = {n.name: n for n in graph.nodes}
    output = nodes["output"]
    with graph.inserting_before(output):
        graph.call_module("stem", (nodes["x"],))
        graph.call_method("sum", (nodes["head"],))
        graph.call_function(T.rand, (3,))
        graph.call_function(T.neg, (nodes["x"],))
        graph.call_function(operator.setitem, (nodes["x"], 0, 1.0))
        graph.call_function(T._assert, (True, "kept"))
        graph.placeholder("unused")
    output.args = (nodes["tanh"],)
    rows = [_graph_rows(graph)]
    changed = graph.eliminate_dead_code()
    rows.append((changed, _graph_rows(graph), graph.eliminate_dead_code()))
    traced.head._is_impure = True
    with graph.inserting_before(output):
        graph.call_module("head", (nodes["tanh"],))
    rows.append((graph.eliminate_dead_code(), [n.op for n in graph.nodes]))
    rows.append((graph.eliminate_dead_code(lambda n: n.op != "call_function"), _graph_rows(graph)))
    traced.recompile()
    return rows, [n.op for n in graph.nodes], T.fx.node.Node.is_impure(nodes["x"])


def _mlp(T, buffers=False):
    T.manual_seed(0)
    layers = [T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 2)]
    if buffers:
        layers.insert(1, T.nn.BatchNorm1d(4))
    model = T.nn.Sequential(*layers).double()
    with T.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(T.linspace(-1, 1, p.numel(), dtype=T.float64).reshape(p.shape) * (i + 1) * 0.3)
    return model


@differential
def test_functorch_make_functional(T):
    """functorch.make_functional(_with_buffers): the returned params are the copy's own (unrelated to the
    model's), the functional model takes them per call and puts its placeholders back; tied weights
    are one entry; disable_autograd_tracking; a model with buffers needs the _with_buffers form;
    torch._functorch.deprecated warns with FutureWarning."""
    from importlib import import_module
    make_functional = import_module(T.__name__ + "._functorch.make_functional")
    deprecated = import_module(T.__name__ + "._functorch.deprecated")
    x = T.linspace(-1, 1, 6, dtype=T.float64).reshape(2, 3)
    model = _mlp(T)
    fmodel, params = make_functional.make_functional(model)
    out = [type(fmodel).__name__, fmodel.param_names, [p.requires_grad for p in params],
           [p is q for p, q in zip(params, model.parameters())], fmodel(params, x), model(x)]
    doubled = tuple(p * 2 for p in params)
    y = fmodel(doubled, x)
    y.sum().backward()
    out += [y, [p.grad for p in params], len(list(fmodel.stateless_model.parameters()))]
    _, frozen = make_functional.make_functional(model, disable_autograd_tracking=True)
    out.append([p.requires_grad for p in frozen])
    tied = T.nn.Sequential(T.nn.Linear(2, 2, bias=False), T.nn.Linear(2, 2, bias=False)).double()
    tied[1].weight = tied[0].weight
    ftied, tied_params = make_functional.make_functional(tied)
    out.append((len(tied_params), ftied.names_map, ftied((T.eye(2, dtype=T.float64),), T.ones(1, 2, dtype=T.float64))))
    with_buffers = _mlp(T, buffers=True).eval()
    out.append(catch(make_functional.make_functional, with_buffers))
    fb, bparams, bbuffers = make_functional.make_functional_with_buffers(with_buffers)
    out.append((fb.param_names, fb.buffer_names, [b.dtype for b in bbuffers], fb(bparams, bbuffers, x)))
    out.append(warns(deprecated.make_functional, model)[1])
    out.append(warns(deprecated.grad, lambda t: (t ** 2).sum())[1])
    out.append(deprecated.get_warning("vmap", "torch.vmap", replace_newlines=True))
    return out


@differential
def test_functorch_combine_state_for_ensemble(T):
    from importlib import import_module
    make_functional = import_module(T.__name__ + "._functorch.make_functional")
    models = [_mlp(T), _mlp(T)]
    with T.no_grad():
        for p in models[1].parameters():
            p.mul_(-0.5)
    fmodel, params, buffers = make_functional.combine_state_for_ensemble(models)
    x = T.linspace(-1, 1, 6, dtype=T.float64).reshape(2, 3)
    ensemble = T.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x)
    errors = [catch(make_functional.combine_state_for_ensemble, []),
              catch(make_functional.combine_state_for_ensemble, [_mlp(T), _mlp(T).eval()]),
              catch(make_functional.combine_state_for_ensemble, [_mlp(T), T.nn.Linear(3, 2)])]
    return [p.shape for p in params], [p.requires_grad for p in params], ensemble, errors


@differential
def test_named_member_accessor(T):
    """nn.utils._named_member_accessor: get/set/swap/delete tensors by dotted path, a plain tensor in a
    parameter slot, swap_tensors_dict with missing names, check_keys, and torch's error classes."""
    from importlib import import_module
    accessor_module = import_module(T.__name__ + ".nn.utils._named_member_accessor")
    model = _mlp(T, buffers=True)
    accessor = accessor_module.NamedMemberAccessor(model)
    out = [accessor.get_tensor("0.weight").shape, accessor.get_submodule("1") is model[1]]
    plain = T.zeros(4, 3, dtype=T.float64)
    previous = accessor.swap_tensor("0.weight", plain)
    out += [type(previous).__name__, type(model[0]._parameters["weight"]).__name__,
            "weight" in model[0]._parameters, [n for n, _ in model.named_parameters()]]
    accessor.set_tensor("0.weight", previous)
    swapped, missing = accessor.swap_tensors_dict({"1.running_mean": T.ones(4, dtype=T.float64),
                                                   "0.extra": T.ones(1)}, allow_missing=True)
    out += [sorted(swapped), missing, model[1].running_mean, model[0].extra]
    accessor.del_tensor("0.extra")
    out.append(hasattr(model[0], "extra"))
    out.append(accessor.check_keys(["0.weight", "0.bias", "nope"]))
    out.append(catch(accessor.swap_tensors_dict, {"0.nothing": T.ones(1)}))
    out.append(hasattr(model[0], "nothing"))
    out += [catch(accessor.get_tensor, "0.missing"), catch(accessor.get_submodule, "0.weight"),
            catch(accessor.set_tensor, "0.weight", 3), catch(accessor.swap_tensor, "0.nothing", T.ones(1)),
            catch(accessor.set_tensors, ["0.bias"], []), catch(accessor.swap_submodule, "2", 5),
            catch(accessor_module.set_tensor, model, "a.b", T.ones(1)),
            catch(accessor_module.swap_submodule, model, "9", T.nn.ReLU())]
    new_tanh = T.nn.ReLU()
    out.append(type(accessor.swap_submodule("2", new_tanh)).__name__)
    out.append(model[2] is new_tanh)
    return out


@differential
def test_elastic_record(T, tmp_path):
    """@record writes the exception that ends the entry point to TORCHELASTIC_ERROR_FILE and re-raises;
    SystemExit(0) returns None; other exits pass through."""
    import json
    import os
    from importlib import import_module
    errors = import_module(T.__name__ + ".distributed.elastic.multiprocessing.errors")
    path = tmp_path / f"{T.__name__}.json"
    os.environ["TORCHELASTIC_ERROR_FILE"] = str(path)
    try:
        @errors.record
        def fails(n):
            raise ValueError(f"bad {n}")

        out = [catch(fails, 3)]
        written = json.loads(path.read_text())
        out.append((written["message"]["message"], sorted(written["message"]["extraInfo"]),
                    "ValueError: bad 3" in written["message"]["extraInfo"]["py_callstack"]))
        out.append(errors.record(lambda: (_ for _ in ()).throw(SystemExit(0)))())
        try:
            errors.record(lambda: (_ for _ in ()).throw(SystemExit(2)))()
        except SystemExit as exit_:
            out.append(("exit", exit_.code))
        out.append(errors.record(lambda a, b=1: a + b)(2, b=5))
        out.append(fails.__name__)
    finally:
        del os.environ["TORCHELASTIC_ERROR_FILE"]
    return out


def test_distributed_autograd_is_unavailable():
    """hookgrad has no distributed autograd (nor RPC): is_available() is False, a context raises."""
    import pytest

    import hookgrad.distributed.autograd as dist_autograd
    assert dist_autograd.is_available() is False
    with pytest.raises(RuntimeError, match="not available"):
        with dist_autograd.context():
            pass


@differential
def test_rnn_assigned_flat_weights(T):
    """RNNBase._flat_weights can be assigned (higher does before each patched forward): forward uses the
    assigned tensors while the module's weights stay in place; replacing a weight attribute goes back to
    the attributes."""
    T.manual_seed(0)
    gru = T.nn.GRU(2, 3, batch_first=True).double()
    x = T.linspace(-1, 1, 12, dtype=T.float64).reshape(2, 3, 2)
    plain, _ = gru(x)
    scaled = [w * 0.5 for w in gru._flat_weights]
    gru._flat_weights = scaled
    halved, _ = gru(x)
    halved_again, _ = gru(x)
    out = [plain, halved, halved_again, [w is s for w, s in zip(gru._flat_weights, scaled)]]
    gru.weight_ih_l0 = T.nn.Parameter(gru.weight_ih_l0.detach() * 2)
    doubled_input, _ = gru(x)
    out += [doubled_input, [w is getattr(gru, n) for w, n in zip(gru._flat_weights, gru._flat_weights_names)]]
    return out


def test_torch_name_under_run(tmp_path):
    """Under ``hookgrad run``, ``torch.__name__`` is "torch" (pyro checks it before patching torch's
    attributes by dotted path); hookgrad gets its own name back when the run ends."""
    import sys

    import hookgrad
    from hookgrad._run import run_script
    path = tmp_path / "name.py"
    path.write_text("import torch, functools\n"
                    "assert torch.__name__ == 'torch', torch.__name__\n"
                    "module = torch\n"
                    "for part in 'distributions.transforms.Transform'.split('.'):\n"
                    "    module = getattr(module, part)\n"
                    "assert module.__name__ == 'Transform'\n"
                    "import torch.fft\n"
                    "assert torch.fft.fft is not None\n")
    assert run_script(str(path), []) == 0
    assert hookgrad.__name__ == "hookgrad" and sys.modules["hookgrad"] is hookgrad


def test_serialization_constants():
    import torch

    import hookgrad
    for name in ("DEFAULT_PROTOCOL", "LONG_SIZE", "INT_SIZE", "SHORT_SIZE", "MAGIC_NUMBER", "PROTOCOL_VERSION",
                 "STORAGE_KEY_SEPARATOR", "IS_WINDOWS", "MAP_SHARED", "MAP_PRIVATE", "UNSAFE_MESSAGE"):
        assert getattr(hookgrad.serialization, name) == getattr(torch.serialization, name), name
    for alias in ("MAP_LOCATION", "STORAGE", "FileLike"):
        assert getattr(hookgrad.serialization, alias) is not None


def test_distribution_classes_have_docstrings():
    """pyro concatenates each torch distribution's docstring into its own class's."""
    import torch

    import hookgrad
    for name in torch.distributions.__all__:
        theirs = getattr(torch.distributions, name)
        if isinstance(theirs, type) and theirs.__doc__:
            assert getattr(hookgrad.distributions, name).__doc__, name


_LINALG_OUT_CALLS = [("cholesky_ex", 1), ("cholesky", 1), ("inv", 1), ("inv_ex", 1), ("det", 1), ("slogdet", 1),
                     ("solve", 2), ("solve_ex", 2), ("eigh", 1), ("eigvalsh", 1), ("svdvals", 1), ("svd", 1),
                     ("qr", 1), ("lu_factor", 1), ("lu", 1), ("pinv", 1), ("matrix_norm", 1), ("vector_norm", 1),
                     ("norm", 1), ("matrix_power", None), ("multi_dot", "list"), ("cond", 1),
                     ("matrix_rank", 1), ("vecdot", 2), ("cross", "vectors"), ("solve_triangular", "triangular")]


@differential
def test_linalg_out(T):
    """torch.linalg's functions take out= (a tuple for several results): written in place and returned,
    resized from empty, the wrong dtype refused, refused when an argument requires grad."""
    a = T.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], dtype=T.float64)
    rows = []
    for name, arity in _LINALG_OUT_CALLS:
        fn = getattr(T.linalg, name)
        if arity == 1:
            args, kwargs = (a,), {}
        elif arity == 2:
            args, kwargs = (a, a[:, :2] if name != "vecdot" else a), {}
        elif arity is None:
            args, kwargs = (a, 3), {}
        elif arity == "list":
            args, kwargs = ([a, a, a],), {}
        elif arity == "vectors":
            args, kwargs = (a, a.flip(0)), {}
        else:
            args, kwargs = (T.triu(a), a), {"upper": True}
        want = fn(*args, **kwargs)
        if isinstance(want, tuple):
            outs = tuple(T.empty(0, dtype=w.dtype) for w in want)
            got = fn(*args, out=outs, **kwargs)
            rows.append((name, [g is o for g, o in zip(got, outs)], list(outs), list(want)))
            wrong = tuple(T.empty(0, dtype=T.float32 if w.dtype == T.float64 else w.dtype) for w in want)
            rows.append(catch(fn, *args, out=wrong, **kwargs))
            rows.append(catch(fn, *args, out=outs[0], **kwargs))
        else:
            out = T.empty(0, dtype=want.dtype)
            got = fn(*args, out=out, **kwargs)
            rows.append((name, got is out, out, want))
            rows.append(catch(fn, *args, out=T.empty(0, dtype=T.float32), **kwargs))
    leaf = a.clone().requires_grad_()
    rows.append(catch(T.linalg.inv, leaf, out=T.empty(0, dtype=T.float64)))
    with T.no_grad():
        rows.append(T.linalg.det(leaf, out=T.empty(0, dtype=T.float64)))
    seen = []

    class Logging(T.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append((T.overrides.resolve_name(func), sorted(kwargs or {})))
            return func(*args, **(kwargs or {}))

    with Logging():
        T.linalg.inv(a, out=T.empty(0, dtype=T.float64))
        T.linalg.eigh(a, out=(T.empty(0, dtype=T.float64), T.empty(0, dtype=T.float64)))
    rows.append([entry for entry in seen if entry[0] and entry[0].startswith("torch.linalg")])
    return rows


@differential
def test_cuda_nvtx_on_a_cpu_build(T):
    """torch.cuda.nvtx on a CPU build: range() makes a context manager (and decorator) without error,
    entering it or calling what it decorates raises; pushes, pops and marks raise RuntimeError, range_start
    and range_end AttributeError."""
    nvtx = T.cuda.nvtx
    manager = nvtx.range("step {}", 3)

    @nvtx.range("decorated")
    def decorated():
        return 1

    def enter():
        with manager:
            return 0

    return [type(manager).__name__, catch(enter), catch(decorated), catch(nvtx.range_push, "a"),
            catch(nvtx.range_pop), catch(nvtx.mark, "m"), catch(nvtx.range_start, "s"), catch(nvtx.range_end, 0)]


@differential
def test_resize_a_view(T):
    """resize_/resize_as_ on a view within its storage: contiguous strides from the view's offset, the
    storage read in memory order (a transposed view's elements come out reordered), writes reach the base."""
    base = T.arange(12.0, dtype=T.float64).reshape(3, 4)
    transposed = base.t()
    transposed.resize_(4, 3)
    transposed[0, 0] = -1.0
    tail = base[1:]
    tail.resize_as_(T.empty(2, 2))
    tail.mul_(10)
    column = base[:, 1]
    column.resize_(2)
    return [transposed, base, tail, column, transposed.is_contiguous(), tail.stride(), column.storage_offset()]
