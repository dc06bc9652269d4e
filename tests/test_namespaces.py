"""The torch namespaces hook libraries import: torch.futures, torch.jit, torch.nn.utils.rnn (packed
sequences, recurrent layers on packed input), torch.fx, torch.func, torch.distributions,
torch.nn.parallel, torch.distributed, torch.version, sort/argsort/column_stack, and their import
under ``hookgrad run``."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import hookgrad
from difftest import Raised, assert_same, catch, differential, run_both

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))


def arr(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# ---- torch.futures ---------------------------------------------------------------------------------
@differential
def test_future_results_callbacks_and_errors(T):
    log = []
    fut = T.futures.Future()
    fut.add_done_callback(lambda f: log.append(("callback", f.value())))
    chained = fut.then(lambda f: f.wait() * 2)
    log.append(("done before", fut.done()))
    fut.set_result(T.tensor([1.0, 2.0]))
    log += [("done after", fut.done()), ("value", fut.value()), ("chained", chained.wait())]
    log.append(("twice", catch(fut.set_result, 3)))
    failing = T.futures.Future()
    then_failed = failing.then(lambda f: f.wait())
    failing.set_exception(ValueError("bad"))
    log += [("wait error", catch(failing.wait)), ("chained error", catch(then_failed.wait))]
    a, b = T.futures.Future(), T.futures.Future()
    both = T.futures.collect_all([a, b])
    a.set_result(1)
    log.append(("collect pending", both.done()))
    b.set_result(2)
    log += [("collect", [f.value() for f in both.wait()]), ("wait_all", T.futures.wait_all([a, b]))]
    log.append(("subscript", T.futures.Future[int] is not None))
    return log


def test_future_wait_blocks_until_another_thread_sets_it():
    fut = hookgrad.futures.Future()
    threading.Timer(0.05, fut.set_result, args=(42,)).start()
    assert fut.wait() == 42


# ---- torch.jit ---------------------------------------------------------------------------------------
def test_jit_entry_points_hand_back_their_argument():
    jit = hookgrad.jit
    model = hookgrad.nn.Linear(2, 2)

    def fn(x):
        return x * 2

    assert jit.script(model) is model and jit.trace(fn, (hookgrad.ones(2),)) is fn and jit.script(fn) is fn
    assert jit.ignore(fn) is fn and jit.unused(fn) is fn and jit.ignore(drop=True)(fn) is fn
    assert jit.export(fn) is fn and jit.trace_module(model, {"forward": hookgrad.ones(1, 2)}) is model
    assert not isinstance(model, (jit.ScriptModule, jit.ScriptFunction))
    assert jit.is_scripting() is False and jit.is_tracing() is False
    assert jit.fork(fn, hookgrad.ones(1)).wait().tolist() == [2.0]
    with pytest.raises(TypeError):  # torch's class takes no Python arguments either
        jit.ScriptModule()
    with pytest.raises(RuntimeError):
        jit.save(model, "unused.pt")


@differential
def test_jit_marker_semantics_match(T):
    return [T.jit.is_scripting(), T.jit.annotate(int, 3), isinstance(T.nn.ReLU(), T.jit.ScriptModule)]


# ---- torch.nn.utils.rnn ------------------------------------------------------------------------------
def _sequences(T, lengths=(2, 5, 3)):
    return [T.tensor(arr(n, 3, seed=i), requires_grad=True) for i, n in enumerate(lengths)]


@differential(rtol=1e-12, atol=1e-12)
def test_pack_and_pad_round_trips(T):
    rnn = T.nn.utils.rnn
    seqs = _sequences(T)
    packed = rnn.pack_sequence(seqs, enforce_sorted=False)
    padded, lengths = rnn.pad_packed_sequence(packed, batch_first=True, total_length=6, padding_value=-1.0)
    (padded * T.tensor(arr(*padded.shape, seed=9))).sum().backward()
    sorted_seqs = [seqs[1], seqs[2], seqs[0]]
    sorted_packed = rnn.pack_sequence([s.detach() for s in sorted_seqs])
    left = rnn.pad_sequence([s.detach() for s in seqs], padding_side="left", padding_value=7.0)
    pp = rnn.pack_padded_sequence(rnn.pad_sequence([s.detach() for s in seqs], batch_first=True),
                                  T.tensor([2, 5, 3]), batch_first=True, enforce_sorted=False)
    return (packed.data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices, padded, lengths,
            [s.grad for s in seqs], sorted_packed.sorted_indices, sorted_packed.batch_sizes, left, pp.data,
            rnn.unpack_sequence(packed), rnn.unpad_sequence(padded, lengths, batch_first=True),
            packed.double().data.dtype, type(packed).__name__, packed._fields,
            catch(rnn.pack_sequence, [s.detach() for s in seqs]),
            catch(rnn.pack_padded_sequence, T.zeros(4, 2), [4, 0]),
            catch(rnn.pad_packed_sequence, packed, total_length=2),
            catch(rnn.pad_sequence, seqs, padding_side="middle"))


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_recurrent_layers_on_packed_input(cls, batch_first):
    @differential(rtol=1e-10, atol=1e-12)
    def scenario(T):
        T.manual_seed(0)
        layer = getattr(T.nn, cls)(3, 4, num_layers=2, bidirectional=True, batch_first=batch_first).double()
        with T.no_grad():
            for i, p in enumerate(layer.parameters()):
                p.copy_(T.tensor(arr(*p.shape, seed=10 + i) * 0.4))
        seqs = _sequences(T)
        packed = T.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False)
        state_shape = (4, 3, 4)
        h0 = T.tensor(arr(*state_shape, seed=20), requires_grad=True)
        hx = (h0, T.tensor(arr(*state_shape, seed=21))) if cls == "LSTM" else h0
        out, state = layer(packed, hx)
        h_n = state[0] if cls == "LSTM" else state
        (out.data.pow(2).sum() + (h_n * T.tensor(arr(*state_shape, seed=22))).sum()).backward()
        out_default, _ = layer(packed)
        return (type(out).__name__, out.data, out.batch_sizes, out.sorted_indices, state, out_default.data,
                [s.grad for s in seqs], h0.grad, [p.grad for p in layer.parameters()])
    scenario()


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_recurrent_layers_on_packed_input_second_derivative(cls):
    @differential(rtol=1e-9, atol=1e-11)
    def scenario(T):
        layer = getattr(T.nn, cls)(3, 4, bidirectional=True).double()
        with T.no_grad():
            for i, p in enumerate(layer.parameters()):
                p.copy_(T.tensor(arr(*p.shape, seed=30 + i) * 0.4))
        seqs = [T.tensor(arr(n, 3, seed=40 + n), requires_grad=True) for n in (2, 5, 3)]
        out, _ = layer(T.nn.utils.rnn.pack_sequence(seqs, enforce_sorted=False))
        grads = T.autograd.grad(out.data.pow(2).sum(), seqs + [layer.weight_hh_l0], create_graph=True)
        total = sum((g * g).sum() for g in grads)
        return grads, T.autograd.grad(total, seqs + [layer.weight_ih_l0_reverse])
    scenario()


# ---- torch.fx ------------------------------------------------------------------------------------------
def _fx_model(T):
    class Block(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = T.nn.Conv2d(2, 3, 3, padding=1)
            self.norm = T.nn.BatchNorm2d(3)
            self.scale = T.nn.Parameter(T.ones(3, 1, 1))
            self.head = T.nn.Sequential(T.nn.Flatten(), T.nn.Linear(12, 5))

        def forward(self, x, bias=1.0):
            h = T.relu(self.norm(self.conv(x))) * self.scale + bias
            h = T.nn.functional.max_pool2d(h, 2)
            return self.head(h).softmax(-1), h.flatten(1).sum(dim=1)

    return Block().double()


def _structure(graph):
    def target(node):
        return node.target if isinstance(node.target, str) else node.target.__name__
    return [(n.op, target(n), len(n.users)) for n in graph.nodes]


@differential(rtol=1e-12, atol=1e-12)
def test_symbolic_trace_module_structure_and_results(T):
    T.manual_seed(0)
    model = _fx_model(T).eval()
    with T.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(T.tensor(arr(*p.shape, seed=i)))
    traced = T.fx.symbolic_trace(model)
    x = T.tensor(arr(2, 2, 4, 4, seed=7))
    return (_structure(traced.graph), traced(x), model(x), traced(x, bias=-2.0),
            isinstance(traced, T.fx.GraphModule), isinstance(traced, T.nn.Module),
            [n for n, _ in traced.named_parameters()], "def forward(self, x, bias = 1.0):" in traced.code)


@differential(rtol=1e-12, atol=1e-12)
def test_symbolic_trace_functions_and_trace_errors(T):
    def fn(x, y):
        z = T.cat([x, y], 0).tanh()
        return z[1:, ::2] @ z.t()[::2], z.shape[0] * 2

    def branches(x):
        if x.sum() > 0:
            return x
        return -x

    def loops(x):
        return [row for row in x]

    def unpacks(x):
        first, second = x.chunk(2, 1)
        values, indices = x.max(1)
        return first * second + values.unsqueeze(1)

    traced = T.fx.symbolic_trace(fn)
    x, y = T.tensor(arr(2, 3)), T.tensor(arr(1, 3, seed=1))
    traced_unpacks = T.fx.symbolic_trace(unpacks)
    z = T.tensor(arr(3, 4, seed=2))
    graph = T.fx.Graph()
    a = graph.placeholder("a")
    doubled = graph.call_function(T.mul, (a, 2))
    graph.output(graph.call_method("sum", (doubled,)))
    built = T.fx.GraphModule(T.nn.Module(), graph)
    return (_structure(traced.graph), traced(x, y), fn(x, y), _structure(traced_unpacks.graph), traced_unpacks(z),
            unpacks(z), catch(T.fx.symbolic_trace, branches),
            catch(T.fx.symbolic_trace, loops), built(T.tensor([1.0, 2.0])), [n.op for n in graph.nodes])


def test_graph_module_prints_its_code_and_interpreter_runs_it():
    model = _fx_model(hookgrad).eval()
    call, getattr_, relu = hookgrad.nn.Module.__call__, hookgrad.nn.Module.__getattr__, hookgrad.relu
    traced = hookgrad.fx.symbolic_trace(model)
    # tracing leaves the module system and the function namespaces as they were
    assert (hookgrad.nn.Module.__call__, hookgrad.nn.Module.__getattr__, hookgrad.relu) == (call, getattr_, relu)
    with pytest.raises(hookgrad.fx.TraceError):
        hookgrad.fx.symbolic_trace(lambda x: x if x.sum() > 0 else -x)
    assert (hookgrad.nn.Module.__call__, hookgrad.nn.Module.__getattr__, hookgrad.relu) == (call, getattr_, relu)
    text = str(traced.graph)
    assert text.startswith("graph():") and "call_module[target=conv]" in text and "get_attr[target=scale]" in text
    assert "return (softmax, sum_1)" in text
    assert "relu = hookgrad.relu(norm)" in traced.code and "head_0 = getattr(self.head, '0')(max_pool2d)" in traced.code
    x = hookgrad.tensor(arr(2, 2, 4, 4))
    from hookgrad.fx.passes.shape_prop import ShapeProp
    shapes = ShapeProp(traced)
    shapes.propagate(x)
    conv = next(n for n in traced.graph.nodes if n.target == "conv")
    assert tuple(conv.meta["tensor_meta"].shape) == (2, 3, 4, 4)
    interpreted = hookgrad.fx.Interpreter(traced).run(x)
    assert all(bool((a == b).all()) for a, b in zip(interpreted, traced(x)))


# ---- torch.func -------------------------------------------------------------------------------------------
@differential(rtol=1e-12, atol=1e-12)
def test_func_transforms(T):
    model = T.nn.Linear(3, 2).double()
    with T.no_grad():
        model.weight.copy_(T.tensor(arr(2, 3)))
        model.bias.copy_(T.tensor(arr(2, seed=1)))
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = T.tensor(arr(4, 3, seed=2)), T.tensor(arr(4, 2, seed=3))

    def loss(p, xb, yb):
        return ((T.func.functional_call(model, p, (xb.unsqueeze(0),)) - yb) ** 2).sum()

    per_sample = T.func.vmap(T.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    cube = lambda z: (z ** 3).sum()  # noqa: E731
    point = T.tensor(2.0, dtype=T.float64)
    value_and_grad = T.func.grad_and_value(cube)(T.tensor([1.0, 2.0], dtype=T.float64))
    out, vjp_fn = T.func.vjp(lambda z: z.sin(), T.tensor([0.5, 1.5], dtype=T.float64))
    return (per_sample, T.func.grad(T.func.grad(cube))(point), value_and_grad,
            T.func.jacrev(lambda z: z.sin() * z)(T.tensor([0.5, 1.0], dtype=T.float64)),
            T.func.vmap(lambda a, b: a * b, in_dims=(0, None), out_dims=1)(x, T.tensor(2.0, dtype=T.float64)),
            out, vjp_fn(T.ones(2, dtype=T.float64)), [p.grad for p in model.parameters()],
            T.func.functional_call(model, (params,), x) if False else model(x).shape)


# ---- torch.distributions -----------------------------------------------------------------------------------
@differential(rtol=1e-12, atol=1e-12)
def test_distributions_densities_and_moments(T):
    D = T.distributions
    loc, scale = T.tensor([0.0, 1.0], dtype=T.float64), T.tensor([1.0, 2.0], dtype=T.float64)
    normal = D.Normal(loc, scale)
    cat_p = D.Categorical(probs=T.tensor([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], dtype=T.float64))
    cat_l = D.Categorical(logits=T.tensor([[0.2, -1.0, 0.5]], dtype=T.float64))
    binom = D.Binomial(5, probs=T.tensor([0.2, 0.7], dtype=T.float64))
    value = T.tensor([[0.3, -1.0], [2.0, 0.5]], dtype=T.float64)
    return (normal.log_prob(value), normal.entropy(), normal.mean, normal.variance, normal.stddev,
            normal.batch_shape, cat_p.log_prob(T.tensor([2, 0])), cat_p.entropy(), cat_p.probs,
            cat_l.logits, cat_l.probs, cat_p.enumerate_support(), binom.log_prob(T.tensor([[1.0, 3.0], [5.0, 0.0]],
                                                                                          dtype=T.float64)),
            binom.mean, binom.variance, binom.entropy(), normal.rsample((3,)).shape, cat_p.sample((4,)).shape,
            binom.sample((2, 3)).shape, catch(D.Normal, loc, -scale), catch(D.Categorical),
            isinstance(normal, D.Distribution))


def test_distribution_samples_follow_the_parameters():
    hookgrad.manual_seed(0)
    D = hookgrad.distributions
    cat = D.Categorical(probs=hookgrad.tensor([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]))
    assert np.allclose(cat.sample((4000,)).double().mean(0).numpy(), [1.3, 1.7], atol=0.06)
    binom = D.Binomial(10, probs=hookgrad.tensor([0.2, 0.7]))
    assert np.allclose(binom.sample((4000,)).mean(0).numpy(), [2.0, 7.0], atol=0.1)
    normal = D.Normal(hookgrad.tensor([1.0]), hookgrad.tensor([2.0]))
    draws = normal.sample((20000,))
    assert abs(float(draws.mean()) - 1.0) < 0.05 and abs(float(draws.std()) - 2.0) < 0.05
    loc = hookgrad.tensor([0.5], requires_grad=True)
    D.Normal(loc, hookgrad.tensor([1.0])).rsample((5,)).sum().backward()
    assert loc.grad.tolist() == [5.0]


# ---- torch.nn.parallel, torch.distributed, torch.multiprocessing ---------------------------------------
def test_parallel_helpers_on_one_device():
    from hookgrad.nn.parallel import DataParallel, gather, scatter
    x = hookgrad.arange(10.0).reshape(5, 2).requires_grad_()
    pieces = scatter((x, "tag"), [0, 1])
    assert [p[0].shape[0] for p in pieces] == [3, 2] and [p[1] for p in pieces] == ["tag", "tag"]
    joined = gather([p[0] for p in pieces], 0)
    joined.sum().backward()
    assert joined.tolist() == x.tolist() and x.grad.tolist() == [[1.0, 1.0]] * 5
    model = hookgrad.nn.Linear(2, 1)
    assert DataParallel(model)(x).tolist() == model(x).tolist()
    assert isinstance(hookgrad.nn.DataParallel(model), hookgrad.nn.Module)


def test_distributed_is_unavailable_in_one_process():
    import importlib.util
    dist = hookgrad.distributed
    # available means mpi4py is installed; nothing is initialized in a plain process
    assert dist.is_available() is (importlib.util.find_spec("mpi4py") is not None)
    assert dist.is_initialized() is False
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    from hookgrad.distributed.fsdp import FSDPModule
    from hookgrad.distributed.tensor import DTensor
    assert not isinstance(hookgrad.ones(1), DTensor) and not isinstance(hookgrad.nn.Linear(1, 1), FSDPModule)
    with pytest.raises(RuntimeError):
        DTensor()
    with pytest.raises(ValueError):
        hookgrad.nn.parallel.DistributedDataParallel(hookgrad.nn.Linear(1, 1))
    from hookgrad.distributed._tensor.experimental import implicit_replication
    with implicit_replication():
        pass
    assert hookgrad.multiprocessing.get_context("spawn") is not None


# ---- version, sorting, column_stack ---------------------------------------------------------------------
def test_version_compares_like_torchs():
    v = hookgrad.__version__
    assert isinstance(v, str) and v.startswith("2.13.0")
    assert v >= (1, 13) and v < (2, 14) and v > "1.9" and v >= "2.13" and not v < "2.13.0"
    assert hookgrad.version.__version__ == v and hookgrad.version.cuda is None
    from hookgrad.torch_version import TorchVersion
    assert TorchVersion("1.10.0a0") < (1, 10) and TorchVersion("2.0") == "2.0.0"


@differential(rtol=0, atol=0)
def test_sort_argsort_column_stack(T):
    x = T.tensor([[3.0, 1.0, float("nan"), 2.0, 1.0], [0.0, 5.0, 5.0, -1.0, float("inf")]], requires_grad=True)
    ascending, descending = T.sort(x, stable=True), T.sort(x, dim=1, descending=True, stable=True)
    (ascending.values[:, :2].sum() + descending.values[:, 1].sum()).backward()
    ints = T.tensor([[3, 1, 2], [2, 2, 0]])
    return (ascending, descending, x.grad, T.argsort(ints, dim=0, stable=True),
            T.argsort(ints, descending=True, stable=True), T.msort(ints),
            T.column_stack([T.arange(3), T.ones(3, 2, dtype=T.long), T.tensor([7, 8, 9])]),
            T.column_stack([T.tensor(1.0), T.tensor(2.0)]), catch(T.column_stack, []))


# ---- under ``hookgrad run`` ---------------------------------------------------------------------------------
def test_torch_submodules_resolve_under_hookgrad_run(tmp_path):
    script = tmp_path / "imports.py"
    script.write_text(textwrap.dedent("""
        import importlib
        import torch
        import torch.fx
        from torch.nn.modules.instancenorm import InstanceNorm2d
        from torch.nn.modules.conv import Conv3d, ConvTranspose3d, _ConvNd
        from torch.nn.modules.activation import MultiheadAttention, PReLU
        from torch.nn.modules.utils import _pair
        from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence
        from torch.futures import Future
        from torch.jit import ScriptModule
        from torch.func import grad, vmap
        from torch.distributions import Categorical
        from torch.nn.parallel.scatter_gather import scatter
        from torch.distributed.fsdp import FSDPModule
        from torch.utils.data._utils.collate import default_collate
        from torch.utils.data import Sampler
        Sampler[int]
        names = ["torch.fx", "torch.nn.modules.instancenorm", "torch.nn.modules.padding", "torch.nn.modules.fold",
                 "torch.nn.utils.rnn", "torch.futures", "torch.jit", "torch.func", "torch.distributions",
                 "torch.multiprocessing", "torch.version", "torch.fx.passes.shape_prop"]
        for name in names:
            assert importlib.import_module(name).__name__.startswith("hookgrad"), name
        assert torch.nn.modules.instancenorm.InstanceNorm2d is torch.nn.InstanceNorm2d is InstanceNorm2d
        assert torch.__version__ >= (1, 13) and torch.column_stack and torch.argsort
        traced = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()))
        print(type(traced).__mro__[1].__name__, [n.op for n in traced.graph.nodes])
    """))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.join(ROOT, "src"), env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-m", "hookgrad", "run", str(script)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "GraphModule ['placeholder', 'call_module', 'call_module', 'output']"


# ---- torch.overrides and torch.utils._python_dispatch ------------------------------------------------------
def test_torch_function_protocol_helpers():
    from hookgrad import overrides

    class Wrapped:
        def __init__(self, value):
            self.value = value

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return ("handled", func.__name__, len(args))

    def api(x, y):
        if overrides.has_torch_function((x, y)):
            return overrides.handle_torch_function(api, (x, y), x, y)
        return x + y

    t = hookgrad.ones(1)
    assert api(t, t).tolist() == [2.0] and not overrides.has_torch_function_unary(t)
    assert api(Wrapped(1), t) == ("handled", "api", 2)
    assert overrides.is_tensor_like(t) and overrides.is_tensor_like(Wrapped(1)) and not overrides.is_tensor_like(1)

    class Refuses:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return NotImplemented

    with pytest.raises(TypeError, match="no implementation found"):
        api(Refuses(), t)


def test_plain_tensors_are_not_traceable_wrapper_subclasses():
    """(Function modes: tests/test_torch_function.py; dispatch modes: tests/test_python_dispatch.py.)"""
    from hookgrad.utils._python_dispatch import is_traceable_wrapper_subclass

    assert is_traceable_wrapper_subclass(hookgrad.ones(1)) is False


@differential
def test_thread_safe_generator_and_scheduler_tensor_names(T):
    """``torch.thread_safe_generator`` is None outside a DataLoader thread worker (the default
    generator then serves), and lr_scheduler re-exports the Tensor class, as torch's module does."""
    return (T.thread_safe_generator(), T.random.thread_safe_generator(),
            T.optim.lr_scheduler.Tensor is T.Tensor)
