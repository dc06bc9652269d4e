"""torch's submodules that libraries import (torch.utils._pytree, torch.nn.utils.prune, torch.compiler,
torch.random, torch.signal.windows, ...): each behaviour differentially against torch, and every
one of them importable under ``hookgrad run``."""

import importlib
import os
import subprocess
import sys
import textwrap
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple

import numpy as np
import pytest

from difftest import Raised, catch, differential, warns

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# every torch submodule hookgrad serves for libraries (tests/test_submodules.py imports each under
# ``hookgrad run``); docs/api-coverage.md lists them and the ones left out
SUBMODULES = ["torch.utils._pytree", "torch.types", "torch.compiler", "torch._dynamo", "torch.nn.attention",
              "torch.nn.utils.prune", "torch.nn.utils.stateless", "torch.nn.utils.fusion", "torch.nn.grad",
              "torch.nn.common_types", "torch._utils", "torch.storage", "torch.random", "torch.functional",
              "torch.accelerator", "torch.mps", "torch.xpu", "torch.signal", "torch.signal.windows",
              "torch.utils.weak", "torch.utils._contextlib", "torch.utils.collect_env", "torch._dynamo.config",
              "torch.compiler.config", "torch._dynamo.eval_frame", "torch.distributed.fsdp.fully_sharded_data_parallel", "torch.__config__"]


def sub(T, name: str):
    """Framework ``T``'s submodule ``name`` (``"utils._pytree"`` -> torch.utils._pytree)."""
    return importlib.import_module(f"{T.__name__}.{name}")


P = namedtuple("P", "x y")


def _nested():
    return {"b": [1, (2, 3)], "a": OrderedDict(z=4, y=P(5, None)), "c": defaultdict(int, {"k": 6}),
            "d": deque([7, 8], maxlen=3)}


# ------------------------------------------------------------------------------------------ pytree

@differential
def test_pytree_flatten_unflatten_round_trip(T):
    pt = sub(T, "utils._pytree")
    tree = _nested()
    leaves, spec = pt.tree_flatten(tree)
    rebuilt = pt.tree_unflatten(leaves, spec)
    return (leaves, repr(spec), rebuilt == tree, type(rebuilt["a"]).__name__, rebuilt["d"].maxlen,
            spec.num_leaves, spec.num_nodes, spec.num_children, spec.is_leaf(), pt.tree_structure(1).is_leaf(),
            hash(spec) == hash(pt.tree_structure(_nested())), spec == pt.tree_structure(_nested()),
            pt.treespec_pprint(spec))


@differential
def test_pytree_key_paths_and_maps(T):
    pt = sub(T, "utils._pytree")
    tree = _nested()
    paths = [(pt.keystr(k), v) for k, v in pt.tree_leaves_with_path(tree)]
    got = [pt.key_get(tree, k) for k, _ in pt.tree_flatten_with_path(tree)[0]]
    mapped = pt.tree_map(lambda a, b: a * 10 + b, [1, (2, 3)], [4, (5, 6)])
    prefix = pt.tree_map(lambda a, b: (a, b), [1, 2], [[7, 8], {"k": 9}])
    with_path = pt.tree_map_with_path(lambda kp, v: pt.keystr(kp) + str(v), {"a": [1, 2]})
    only = pt.tree_map_only(int, lambda v: -v, [1, "s", 2.5, (3,)])
    seen = []
    same = pt.tree_map_(seen.append, [1, [2]])
    return (paths, got, mapped, prefix, with_path, only, seen, same,
            pt.tree_all(lambda v: v > 0, [1, (2,)]), pt.tree_any(lambda v: v is None, [1, None]),
            pt.tree_all_only(str, lambda s: s == "a", ["a", 1]), pt.tree_any_only(int, lambda v: v > 5, [1, "x"]),
            pt.tree_leaves([1, [2, None]], is_leaf=lambda x: isinstance(x, list) and len(x) == 2 and x[0] == 2),
            pt.tree_is_leaf((1,)), pt.tree_is_leaf((1,), is_leaf=lambda x: True), pt.is_namedtuple(P(1, 2)))


@differential
def test_pytree_tensors_are_leaves(T):
    pt = sub(T, "utils._pytree")
    tree = {"w": T.ones(2), "s": T.Size([2, 3]), "pair": (T.zeros(1), 4)}
    leaves, spec = pt.tree_flatten(tree)
    doubled = pt.tree_map_only(T.Tensor, lambda t: t * 2, tree)
    return leaves, repr(spec), doubled


@differential
def test_pytree_mismatches_and_registration(T):
    pt = sub(T, "utils._pytree")

    class Box:
        def __init__(self, v):
            self.v = v

    pt.register_pytree_node(Box, lambda b: ([b.v], "ctx"), lambda vs, c: Box(vs[0]))
    try:
        leaves, spec = pt.tree_flatten([Box(3), Box([4, 5])])
        rebuilt = pt.tree_unflatten([10, 11, 12], spec)
        return (leaves, rebuilt[1].v, repr(spec).replace(Box.__qualname__, "Box"),
                catch(pt.register_pytree_node, Box, lambda b: ([b.v], None), lambda vs, c: Box(vs[0])),
                catch(pt.tree_leaves_with_path, Box(1)),
                catch(pt.tree_map, lambda a, b: a, [1, 2], [1]),
                catch(pt.tree_map, lambda a, b: a, {"a": 1}, {"b": 1}),
                catch(pt.tree_map, lambda a, b: a, (1, 2), [1, 2]),
                catch(spec.unflatten, [1]),
                catch(pt.treespec_dumps, spec))
    finally:
        pt._deregister_pytree_node(Box)


@differential
def test_pytree_treespec_dumps_loads(T):
    pt = sub(T, "utils._pytree")
    spec = pt.tree_structure([1, {"a": (2, 3)}, OrderedDict(q=1), defaultdict(list, {"r": 2}), deque([1])])
    text = pt.treespec_dumps(spec)
    return text, pt.treespec_loads(text) == spec, catch(pt.treespec_dumps, spec, protocol=7)


@differential
def test_pytree_register_dataclass(T):
    import dataclasses
    pt = sub(T, "utils._pytree")

    @dataclasses.dataclass
    class Pt:
        a: int
        b: object = None

    pt.register_dataclass(Pt)
    try:
        leaves, spec = pt.tree_flatten([Pt(1, (2, 3)), Pt(4)])
        return leaves, repr(pt.tree_unflatten(leaves, spec)), spec.child(0).context, spec.child(1).context, \
            [pt.keystr(k) for k, _ in pt.tree_leaves_with_path(Pt(1, 2))]
    finally:
        pt._deregister_pytree_node(Pt)


# ------------------------------------------------------------------------------- compiler, dynamo

@differential
def test_compiler_and_dynamo_run_eagerly(T):
    compiler, dynamo = sub(T, "compiler"), sub(T, "_dynamo")

    def f(x):
        return x + 1

    config = dynamo.config
    before = config.cache_size_limit
    config.cache_size_limit = 64
    after = config.cache_size_limit
    config.cache_size_limit = before
    with config.patch(suppress_errors=True):
        patched = config.suppress_errors
    # torch's first compile switches distribution argument checks off for the whole process:
    # put them back so that later tests see torch's default
    validating = T.distributions.Distribution._validate_args
    try:
        compiled = (T.compile(f)(T.ones(1)), compiler.compile(f)(T.ones(1)))
    finally:
        T.distributions.Distribution.set_default_validate_args(validating)
    return (compiler.is_compiling(), dynamo.is_compiling(), compiler.is_dynamo_compiling(),
            compiler.is_exporting(), compiler.disable(f)(T.ones(1)), dynamo.disable(f)(T.ones(1)),
            compiler.disable(recursive=False)(f)(T.ones(1)),
            compiler.allow_in_graph(f) is f, dynamo.allow_in_graph(f) is f, compiler.assume_constant_result(f) is f,
            dynamo.mark_dynamic(T.ones(2), 0), before, after, patched, config.suppress_errors,
            catch(setattr, config, "no_such_setting", 1), catch(lambda: config.patch(no_such_setting=1).__enter__()),
            compiled)


@differential
def test_compiled_and_sharded_wrapper_types_for_unwrapping(T):
    # libraries unwrap models with isinstance checks on these types (accelerate, peft)
    eval_frame = sub(T, "_dynamo.eval_frame")
    fsdp_module = sub(T, "distributed.fsdp.fully_sharded_data_parallel")
    model = T.nn.Linear(2, 2)

    def f(x):
        return x

    return (isinstance(model, eval_frame.OptimizedModule), isinstance(T.compile(f), eval_frame.OptimizedModule),
            eval_frame.OptimizedModule is sub(T, "_dynamo").OptimizedModule, eval_frame.innermost_fn(f) is f,
            isinstance(model, fsdp_module.FullyShardedDataParallel),
            fsdp_module.FullyShardedDataParallel is sub(T, "distributed.fsdp").FullyShardedDataParallel)


# ------------------------------------------------------------------------- random, devices, types

@differential
def test_fork_rng_restores_the_generator(T):
    random = sub(T, "random")
    T.manual_seed(3)
    with random.fork_rng():
        inside = T.rand(3)
        T.manual_seed(99)
    after = T.rand(3)
    T.manual_seed(3)
    with random.fork_rng(enabled=False):
        T.rand(3)
    unforked = T.rand(3)
    T.manual_seed(3)
    try:
        with random.fork_rng(devices=[]):
            T.rand(2)
            raise KeyError("inside")
    except KeyError:
        pass
    after_error = T.rand(2)
    T.manual_seed(3)
    fresh = T.rand(2)
    return (T.equal(inside, after), T.equal(inside, unforked), T.equal(after_error, fresh),
            random.initial_seed(), random.thread_safe_generator(), random.get_rng_state().dtype)


@differential
def test_accelerators_are_absent(T):
    acc, mps, xpu = sub(T, "accelerator"), sub(T, "mps"), sub(T, "xpu")
    return (acc.is_available(), acc.device_count(), acc.current_accelerator(), catch(acc.current_device_index),
            catch(acc.synchronize), mps.is_available(), mps.device_count(), catch(mps.synchronize),
            catch(mps.get_rng_state), xpu.is_available(), xpu.device_count(), xpu.is_initialized(),
            catch(xpu.current_device), xpu.memory_allocated(), xpu.is_bf16_supported())


@differential
def test_types_storage_functional(T):
    types_, storage, functional = sub(T, "types"), sub(T, "storage"), sub(T, "functional")
    return (types_.Size is T.Size, types_.Tensor is T.Tensor, storage.UntypedStorage is T.UntypedStorage,
            storage.TypedStorage is T.TypedStorage, functional.einsum("ij->j", T.ones(2, 3)),
            functional.split(T.arange(5), 2), functional.broadcast_shapes((2, 1), (3,)),
            functional.unique(T.tensor([3, 1, 3])), set(functional.__all__) <= set(dir(functional)))


@pytest.mark.parametrize("name", ["bartlett", "blackman", "cosine", "hamming", "hann", "nuttall", "gaussian",
                                  "kaiser", "exponential", "general_hamming"])
@pytest.mark.parametrize("sym", [True, False])
@differential
def test_signal_windows(T, name, sym):
    windows = sub(T, "signal.windows")
    fn = getattr(windows, name)
    out = [fn(M, sym=sym) for M in (0, 1, 2, 5, 8)]
    out.append(fn(7, sym=sym, dtype=T.float64))
    if name == "exponential" and not sym:
        out.append(fn(6, sym=False, center=1.5, tau=2.0))
    return out, catch(fn, -1), catch(fn, 4, dtype=T.int64)


@differential
def test_signal_window_arguments(T):
    windows = sub(T, "signal.windows")
    return (windows.general_cosine(6, a=[0.5, 0.3, 0.2]), catch(windows.general_cosine, 6, a=[]),
            catch(windows.general_cosine, 6, a=3), catch(windows.gaussian, 4, std=0.0),
            catch(windows.kaiser, 4, beta=-1.0), catch(windows.exponential, 4, tau=-1.0),
            catch(windows.exponential, 4, center=1.0), windows.kaiser(5, beta=0.0))


# --------------------------------------------------------------------------------- small helpers

@differential
def test_conv_gradients_of_nn_grad(T):
    grad = sub(T, "nn.grad")
    rng = np.random.default_rng(0)
    out = []
    for dims, stride, padding, dilation, groups in [(1, 2, 1, 1, 1), (2, 1, 1, 2, 2), (3, 1, 0, 1, 1)]:
        x = T.tensor(rng.standard_normal((2, 4) + (7,) * dims), dtype=T.float64)
        w = T.tensor(rng.standard_normal((4, 4 // groups) + (3,) * dims), dtype=T.float64)
        conv = getattr(T.nn.functional, f"conv{dims}d")
        y = conv(x, w, None, stride, padding, dilation, groups)
        g = T.tensor(rng.standard_normal(tuple(y.shape)), dtype=T.float64)
        out.append(getattr(grad, f"conv{dims}d_input")(x.shape, w, g, stride, padding, dilation, groups))
        out.append(getattr(grad, f"conv{dims}d_weight")(x, w.shape, g, stride, padding, dilation, groups))
    return out


@differential
def test_private_utils(T):
    utils = sub(T, "_utils")
    parts = [T.arange(3.0), T.ones(2, 2)]
    flat = utils._flatten_dense_tensors(parts)
    back = utils._unflatten_dense_tensors(flat, parts)

    def failing():
        try:
            raise KeyError("missing")
        except KeyError:
            return utils.ExceptionWrapper(where="in worker")

    wrapped = failing()
    return (flat, back, utils._get_device_index("cpu", allow_cpu=True), catch(utils._get_device_index, "cpu"),
            utils._get_device_index(3), utils._get_available_device_type(), catch(wrapped.reraise))


@differential
def test_weak_id_key_dictionary(T):
    weak = sub(T, "utils.weak")
    d = weak.WeakIdKeyDictionary()
    a, b = T.ones(2), T.ones(2)
    d[a] = "a"
    d[b] = "b"
    d[a] = "a2"
    state = (len(d), d[a], d[b], a in d, T.ones(2) in d)
    del b
    ref = weak.TensorWeakRef(a)
    return state, len(d), ref() is a, catch(weak.TensorWeakRef, 3)


@differential
def test_context_decorator(T):
    contextlib_ = sub(T, "utils._contextlib")
    log = []

    class Ctx(contextlib_._DecoratorContextManager):
        def __enter__(self):
            log.append("enter")

        def __exit__(self, *exc):
            log.append("exit")

    @Ctx()
    def plain(x):
        log.append(("body", x))
        return x + 1

    @Ctx()
    def gen():
        log.append("g1")
        yield 1
        log.append("g2")
        yield 2

    result = plain(1)
    values = list(gen())
    decorated_class = warns(Ctx(), type("K", (), {}))[1]
    return result, values, log, decorated_class, catch(contextlib_.context_decorator, Ctx, type("K", (), {}))


# -------------------------------------------------------------------------------------- attention

@differential
def test_sdpa_kernel_selects_backends(T):
    attention = sub(T, "nn.attention")
    F = T.nn.functional
    B = attention.SDPBackend
    q = T.linspace(-1, 1, 24).reshape(1, 2, 3, 4)
    calls = {"4d": lambda: F.scaled_dot_product_attention(q, q, q),
             "3d": lambda: F.scaled_dot_product_attention(q[0], q[0], q[0]),
             "dropout": lambda: F.scaled_dot_product_attention(q, q, q, dropout_p=0.5),
             "head_sizes": lambda: F.scaled_dot_product_attention(q, q, T.ones(1, 2, 3, 5)),
             "causal": lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True)}
    out = {}
    for label, backends in [("math", B.MATH), ("flash", B.FLASH_ATTENTION), ("efficient", B.EFFICIENT_ATTENTION),
                            ("cudnn", [B.CUDNN_ATTENTION]), ("efficient+math", [B.EFFICIENT_ATTENTION, B.MATH])]:
        with attention.sdpa_kernel(backends) as ctx:
            out[label] = {name: catch(call) for name, call in calls.items() if name != "dropout" or label == "efficient"}
            out[label]["ctx"] = ctx
            out[label]["current"] = [b.name for b in attention._cur_sdpa_kernel_backends()]
    with attention.sdpa_kernel([B.MATH, B.FLASH_ATTENTION], set_priority=True):
        prioritized = [b.name for b in attention._cur_sdpa_kernel_backends(with_priority=True)]
    return (out, prioritized, [b.name for b in attention._cur_sdpa_kernel_backends()], calls["3d"](),
            catch(lambda: attention.sdpa_kernel("math").__enter__()), [(n, int(b)) for n, b in B.__members__.items()],
            str(B.MATH),
            attention.WARN_FOR_UNFUSED_KERNELS)


# ---------------------------------------------------------------------------------------- pruning

def _pruned_linear(T):
    prune = sub(T, "nn.utils.prune")
    m = T.nn.Linear(6, 4)
    with T.no_grad():
        m.weight.copy_(T.arange(24.0).reshape(4, 6).sin())
        m.bias.copy_(T.tensor([0.5, -0.25, 0.125, 1.0]))
    return prune, m


def _names(m):
    return sorted(n for n, _ in m.named_parameters()), sorted(n for n, _ in m.named_buffers())


@differential
def test_prune_l1_and_ln_structured_masks_hooks_and_training(T):
    prune, m = _pruned_linear(T)
    method = prune.l1_unstructured(m, "weight", amount=0.3)
    first = (_names(m), m.weight_mask, [type(h).__name__ for h in m._forward_pre_hooks.values()],
             type(m.weight).__name__, m.weight, isinstance(m.weight, T.nn.Parameter), method is m)
    prune.ln_structured(m, "weight", amount=1, n=2, dim=0)
    container = list(m._forward_pre_hooks.values())[0]
    second = (m.weight_mask, [type(x).__name__ for x in container], len(container), container._tensor_name)
    opt = T.optim.SGD(m.parameters(), lr=0.1)
    x = T.linspace(-1, 1, 12).reshape(2, 6)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = (m(x) ** 2).sum()
        loss.backward()
        opt.step()
        losses.append(loss)
    grads = m.weight_orig.grad
    prune.remove(m, "weight")
    third = (_names(m), m.weight, isinstance(m.weight, T.nn.Parameter), len(m._forward_pre_hooks),
             prune.is_pruned(m))
    return first, second, losses, grads, third, catch(prune.remove, m, "weight")


@differential
def test_prune_bad_amounts_leave_the_module_usable(T):
    prune, m = _pruned_linear(T)
    results = [catch(prune.l1_unstructured, m, "weight", amount=1.5),
               catch(prune.l1_unstructured, m, "weight", amount=-1),
               catch(prune.l1_unstructured, m, "weight", amount="half"),
               catch(prune.l1_unstructured, m, "weight", amount=100),
               _names(m), len(m._forward_pre_hooks),
               catch(prune.ln_structured, m, "bias", amount=1, n=1, dim=0),
               catch(prune.ln_structured, m, "weight", amount=1, n=1, dim=5),
               _names(m), m(T.ones(1, 6)),
               catch(prune.l1_unstructured, m, "weight", amount=2, importance_scores=T.ones(3))]
    return results


@differential
def test_prune_random_counts_and_custom_and_global(T):
    prune, m = _pruned_linear(T)
    prune.random_unstructured(m, "weight", amount=5)
    prune.random_unstructured(m, "weight", amount=0.25)  # of the 19 still unpruned
    random_count = int(m.weight_mask.sum())
    c = T.nn.Conv2d(2, 3, 3)
    prune.random_structured(c, "weight", amount=1, dim=0)
    kept_channels = int((c.weight_mask.sum(dim=(1, 2, 3)) > 0).sum())
    prune.custom_from_mask(m, "bias", T.tensor([0.0, 1.0, 1.0, 0.0]))
    d = T.nn.Linear(3, 2)
    with T.no_grad():
        c.weight.copy_(T.arange(54.0).reshape(3, 2, 3, 3).cos())
        d.weight.copy_(T.arange(6.0).reshape(2, 3).sin() * 3)
    e = T.nn.Linear(3, 2)
    with T.no_grad():
        e.weight.copy_(T.arange(6.0).reshape(2, 3).cos())
    prune.global_unstructured([(d, "weight"), (e, "weight")], pruning_method=prune.L1Unstructured, amount=0.5)
    identity = prune.identity(T.nn.Linear(2, 2), "weight")
    direct = prune.L1Unstructured(amount=2).prune(T.tensor([3.0, -1.0, 2.0, 0.5]))
    structured = prune.LnStructured(amount=1, n=1, dim=1).prune(T.tensor([[1.0, -5.0], [2.0, 0.5]]))
    return (random_count, kept_channels, m.bias_mask, m.bias, d.weight_mask, e.weight_mask, identity.weight_mask,
            prune.is_pruned(T.nn.Sequential(T.nn.Linear(1, 1), d)), direct, structured,
            catch(prune.global_unstructured, [(d, "bias")], pruning_method=prune.LnStructured, amount=1, n=1),
            list(d.state_dict().keys()))


# ----------------------------------------------------------------------------------------- fusion

@differential
def test_fuse_conv_and_linear_with_batch_norm(T):
    fusion = sub(T, "nn.utils.fusion")
    out = []
    for transpose in (False, True):
        conv = T.nn.ConvTranspose2d(4, 3, 3) if transpose else T.nn.Conv2d(3, 4, 3)
        bn = T.nn.BatchNorm2d(3 if transpose else 4)
        channels = bn.num_features
        with T.no_grad():
            conv.weight.copy_(T.linspace(-1, 1, conv.weight.numel()).reshape(conv.weight.shape))
            conv.bias.copy_(T.linspace(-0.3, 0.3, channels))
            bn.running_mean.copy_(T.linspace(-0.5, 0.5, channels))
            bn.running_var.copy_(T.linspace(0.5, 2.0, channels))
            bn.weight.copy_(T.linspace(-1.0, 2.0, channels))
            bn.bias.copy_(T.linspace(0.1, -0.1, channels))
        conv.eval()
        bn.eval()
        in_channels = 4 if transpose else 3
        x = T.linspace(-2, 2, in_channels * 25).reshape(1, in_channels, 5, 5)
        fused = fusion.fuse_conv_bn_eval(conv, bn, transpose=transpose)
        out += [fused.weight, fused.bias, type(fused.weight).__name__, fused(x), bn(conv(x)), fused is conv]
    lin, bn1 = T.nn.Linear(3, 4, bias=False), T.nn.BatchNorm1d(4)
    with T.no_grad():
        lin.weight.copy_(T.arange(12.0).reshape(4, 3) / 7)
        bn1.running_var.copy_(T.tensor([1.0, 2.0, 3.0, 4.0]))
    lin.eval()
    bn1.eval()
    fused_lin = fusion.fuse_linear_bn_eval(lin, bn1)
    out += [fused_lin.weight, fused_lin.bias, catch(fusion.fuse_linear_bn_eval, lin, T.nn.BatchNorm1d(3).eval())]
    out.append(catch(fusion.fuse_conv_bn_eval, T.nn.Conv2d(1, 1, 1), T.nn.BatchNorm2d(1)))
    w, b = fusion.fuse_conv_bn_weights(T.ones(2, 1, 1), None, T.zeros(2), T.ones(2), 0.0, None, None)
    return out, w, b


@differential
def test_stateless_and_skip_init(T):
    stateless = sub(T, "nn.utils.stateless")
    lin = T.nn.Linear(2, 2)
    with T.no_grad():
        lin.weight.copy_(T.eye(2))
        lin.bias.zero_()
    result = warns(stateless.functional_call, lin, {"bias": T.ones(2)}, (T.ones(1, 2),))
    with stateless._reparametrize_module(lin, {"weight": T.zeros(2, 2)}):
        inside = lin(T.ones(1, 2))
    skipped = T.nn.utils.skip_init(T.nn.Linear, 3, 2)
    return (result, inside, lin(T.ones(1, 2)), tuple(skipped.weight.shape), type(skipped.weight).__name__,
            catch(T.nn.utils.skip_init, T.nn.ReLU), catch(T.nn.utils.skip_init, int))


# ------------------------------------------------------------------------------- hookgrad run

def test_every_listed_submodule_imports_under_hookgrad_run(tmp_path):
    script = tmp_path / "imports.py"
    script.write_text(textwrap.dedent(f"""
        import importlib
        failed = []
        for name in {SUBMODULES!r}:
            try:
                module = importlib.import_module(name)
                assert module.__name__.startswith("hookgrad"), module.__name__
            except Exception as exc:
                failed.append(f"{{name}}: {{type(exc).__name__}}: {{exc}}")
        import torch
        assert torch.utils._pytree.tree_leaves([1, [2]]) == [1, 2]
        print("FAILED" if failed else "OK", failed)
    """))
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    done = subprocess.run([sys.executable, "-m", "hookgrad", "run", str(script)], capture_output=True, text=True,
                          env=env, timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OK"), done.stdout


# ------------------------------------------------------------------------------- library and ops

@differential
def test_custom_op_forward_backward_and_hooks(T):
    library = sub(T, "library")
    Tensor = T.Tensor

    @library.custom_op("hgtest_a::scaled_sin", mutates_args=())
    def scaled_sin(x: Tensor, k: float = 2.0) -> Tensor:
        return x.sin() * k

    x = T.linspace(-1, 1, 4).requires_grad_()
    y = scaled_sin(x)
    unregistered = (y.requires_grad, y.grad_fn.name(), catch(y.sum().backward))

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.k = inputs[1]

    def backward(ctx, grad):
        (saved,) = ctx.saved_tensors
        return grad * saved.cos() * ctx.k, None

    scaled_sin.register_autograd(backward, setup_context=setup_context)
    log = []
    with T.autograd.graph.saved_tensors_hooks(lambda t: log.append(("pack", tuple(t.shape))) or t,
                                              lambda t: log.append("unpack") or t):
        y = scaled_sin(x, k=3.0)
    y.register_hook(lambda g: log.append(("tensor hook", g)))
    y.grad_fn.register_hook(lambda gi, go: log.append(("node hook", len(gi), len(go))))
    y.sum().backward()
    ops_call = T.ops.hgtest_a.scaled_sin(x.detach(), 0.5)
    no_grad_out = scaled_sin(T.ones(2))
    return (unregistered, y, x.grad, log, y.grad_fn.name(), ops_call, no_grad_out.requires_grad,
            str(T.ops.hgtest_a.scaled_sin), str(T.ops.hgtest_a.scaled_sin.default),
            type(T.ops.hgtest_a.scaled_sin).__name__, type(T.ops.hgtest_a.scaled_sin.default).__name__,
            str(scaled_sin._opoverload._schema), type(scaled_sin).__name__)


@differential
def test_custom_op_gradient_count_and_mutation(T):
    library = sub(T, "library")
    Tensor = T.Tensor

    @library.custom_op("hgtest_b::times", mutates_args=())
    def times(x: Tensor, k: float) -> Tensor:
        return x * k

    x = T.ones(2, requires_grad=True)
    results = []
    for backward in (lambda ctx, g: g * 2, lambda ctx, g: (g * 2, None), lambda ctx, g: (g * 2, 1.0),
                     lambda ctx, g: (g * 2, None, None), lambda ctx, g: [g * 2, None]):
        times.register_autograd(backward)
        x.grad = None
        results.append(catch(lambda: times(x, 2.0).sum().backward()))
        results.append(x.grad)

    @library.custom_op("hgtest_b::add_into", mutates_args={"a"})
    def add_into(a: Tensor, b: Tensor) -> None:
        a.add_(b)

    a = T.zeros(2)
    version = a._version
    out = add_into(a, T.ones(2))

    @library.custom_op("hgtest_b::same", mutates_args=())
    def same(a: Tensor) -> Tensor:
        return a

    @library.custom_op("hgtest_b::view", mutates_args=())
    def view(a: Tensor) -> Tensor:
        return a[:1]

    @library.custom_op("hgtest_b::pair", mutates_args=())
    def pair(a: Tensor) -> tuple[Tensor, Tensor]:
        return a + 1, a * 2

    p = pair(x)
    return (results, out, a, a._version > version, catch(same, T.zeros(2)), catch(view, T.zeros(2)),
            p, p[0].grad_fn is p[1].grad_fn, catch(p[0].sum().backward),
            catch(library.register_autograd, "hgtest_b::nothere", lambda ctx, g: g),
            catch(getattr, T.ops.hgtest_b, "nothere"), str(add_into._opoverload._schema))


@differential
def test_infer_schema(T):
    library = sub(T, "library")
    Tensor = T.Tensor
    from typing import Optional, Sequence

    def f(x: Tensor, y: Optional[Tensor], ws: list[Tensor], n: int, k: float = 1.5, flag: bool = False,
          s: str = "a", sizes: Sequence[int] = None, dt: T.dtype = None, z: Tensor | None = None) -> tuple[Tensor, Tensor]:
        ...

    def g(x: Tensor, *, alpha: float = 2.0) -> list[Tensor]:
        ...

    def no_annotation(x) -> Tensor:
        ...

    def no_return(x: Tensor):
        ...

    def mutated_int(x: int) -> Tensor:
        ...

    return (library.infer_schema(f, mutates_args={"x", "ws"}), library.infer_schema(f, mutates_args=(), op_name="foo"),
            library.infer_schema(g, mutates_args="unknown"), catch(library.infer_schema, no_annotation, mutates_args=()),
            catch(library.infer_schema, no_return, mutates_args=()),
            catch(library.infer_schema, mutated_int, mutates_args={"x"}),
            catch(library.infer_schema, g, mutates_args={"nope"}),
            catch(lambda: library.custom_op("no_namespace", mutates_args=())(mutated_int)))


@differential
def test_classic_library_define_impl(T):
    library = sub(T, "library")
    lib = library.Library("hgtest_c", "DEF")
    lib.define("mul3(Tensor x) -> Tensor")
    lib.impl("mul3", lambda x: x * 3, "CompositeImplicitAutograd")
    library.define("hgtest_c::neg", "(Tensor x) -> Tensor", lib=lib)

    @library.impl("hgtest_c::neg", "cpu", lib=lib)
    def neg(x):
        return -x

    x = T.ones(2, requires_grad=True)
    y = T.ops.hgtest_c.mul3(x)
    y.sum().backward()
    return (y, x.grad, T.ops.hgtest_c.neg(T.ones(2)), catch(library.Library, "aten", "DEF"),
            catch(library.Library, "hgtest_c", "BAD"), catch(lib.define, "mul3(Tensor x) -> Tensor"))


@differential
def test_aten_operators(T):
    aten = T.ops.aten
    x = T.tensor([[-1.0, 2.0], [3.0, -4.0]])
    w = T.linspace(-1, 1, 2 * 2 * 3 * 3).reshape(2, 2, 3, 3)
    img = T.linspace(-1, 1, 2 * 25).reshape(1, 2, 5, 5)
    return (aten.add(x, x), aten.add.Tensor(x, 1.0), aten.add.Scalar(x, 2), aten.relu.default(x),
            aten.mm(x, x), aten.addmm(x, x, x, beta=0.5), aten.sum.dim_IntList(x, [1]), aten.mean.dim(x, [0], True),
            aten.view(x, [4]), aten.expand(x[:1], [3, 2]), aten.permute(x, [1, 0]), aten.t(x),
            aten._softmax(x, 1, False), aten._log_softmax(x, 0, False), aten.slice.Tensor(x, 1, 1, 2),
            aten.select.int(x, 0, 1), aten.convolution(img, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
            aten.embedding(x, T.tensor([1, 0])), aten.cat([x, x], 1), aten.sym_size.int(x, 0),
            aten.clone(x), aten.where.self(x > 0, x, -x), aten.gelu(x), aten._to_copy(x, dtype=T.float64),
            aten.native_layer_norm(x, [2], None, None, 1e-5), aten.rsub(x, 1.0), aten.mul_.Tensor(x.clone(), 2),
            catch(getattr, aten, "no_such_op"), catch(getattr, aten.add, "no_such_overload"),
            str(aten.add), str(aten.add.Tensor), aten.add.Tensor.name(), aten.add.default.name())


# --------------------------------------------------------------------------------- hub, benchmark

@differential
def test_hub_checkpoints_from_file_urls(T, tmp_path_factory, capsys):
    import hashlib
    hub = sub(T, "hub")
    folder = tmp_path_factory.mktemp(T.__name__)
    saved_dir = hub.get_dir()
    hub.set_dir(str(folder / "hub"))
    try:
        state = {"w": T.arange(6.0).reshape(2, 3), "b": T.ones(2)}
        staging = folder / "staging.pth"
        T.save(state, str(staging))
        digest = hashlib.sha256(staging.read_bytes()).hexdigest()
        good = folder / f"model-{digest[:10]}.pth"
        staging.rename(good)
        first = hub.load_state_dict_from_url(good.as_uri(), progress=False, check_hash=True)
        good.unlink()  # the second read comes from the cache
        second = hub.load_state_dict_from_url(good.as_uri(), progress=False, check_hash=True)
        bad = folder / "other-0000aaaa.pth"
        T.save(state, str(bad))
        wrong_hash = catch(hub.load_state_dict_from_url, bad.as_uri(), progress=False, check_hash=True)
        cached = sorted(os.listdir(folder / "hub" / "checkpoints"))
        missing = catch(hub.load_state_dict_from_url, (folder / "missing.pth").as_uri(), progress=False)
        model_zoo = sub(T, "utils.model_zoo").load_url(good.as_uri(), progress=False)
        repo = folder / "repo"
        repo.mkdir()
        (repo / "hubconf.py").write_text("dependencies = ['numpy']\nimport torch\n\n\ndef tiny(n=2):\n"
                                         "    '''A tiny model.'''\n    return torch.nn.Linear(n, 1)\n")
        model = hub.load(str(repo), "tiny", 3, source="local")
        capsys.readouterr()
        return (first, second, wrong_hash, [c.replace(digest[:10], "<hash>") for c in cached], missing, model_zoo,
                type(model).__name__, model.in_features, catch(hub.load, str(repo), "nothere", source="local"),
                catch(hub.load, str(repo), "tiny", source="svn"), catch(hub.list, str(repo)),
                hub.get_dir() == str(folder / "hub"))
    finally:
        hub.set_dir(saved_dir)


@differential
def test_benchmark_timer_and_measurement(T):
    benchmark = sub(T, "utils.benchmark")
    x = T.ones(8, 8)
    timer = benchmark.Timer("x @ x", setup="y = 1", globals={"x": x}, label="mm", sub_label="8",
                            description="ones")
    once = timer.timeit(50)
    blocked = timer.blocked_autorange(min_run_time=0.02)
    adaptive = benchmark.Timer("torch.zeros(3)").adaptive_autorange(min_run_time=0.01, max_run_time=0.5)
    fixed = benchmark.Measurement(number_per_run=10, raw_times=[1e-5, 2e-5, 3e-5, 4e-5, 5e-5],
                                  task_spec=once.task_spec)
    return (type(once).__name__, once.number_per_run, len(once.times), once.median > 0, repr(once).splitlines()[1:3],
            blocked.number_per_run >= 1, sum(blocked.raw_times) >= 0.02, repr(blocked).splitlines()[1],
            adaptive.title, repr(fixed).splitlines()[1:], fixed.median, fixed.mean, fixed.iqr,
            fixed.significant_figures, fixed.has_warnings, fixed.meets_confidence(2.0),
            benchmark.select_unit(2.5e-5), benchmark.select_unit(3.0),
            catch(benchmark.Timer, lambda: 1), catch(benchmark.Timer, "1", global_setup="x"), catch(timer.repeat),
            len(benchmark.Measurement.merge([once, blocked])))


# ---------------------------------------------------------------------------------- serialization

class SavedConfig:
    """A user class inside a checkpoint (weights_only loading refuses it unless allowed)."""

    def __init__(self, lr):
        self.lr = lr


@differential
def test_safe_globals_in_weights_only_loading(T):
    import io
    serialization = sub(T, "serialization")
    buffer = io.BytesIO()
    T.save({"cfg": SavedConfig(0.5), "w": T.ones(2)}, buffer)
    data = buffer.getvalue()
    refused = catch(T.load, io.BytesIO(data))
    unsafe = serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data))
    with serialization.safe_globals([SavedConfig]):
        inside = T.load(io.BytesIO(data))
        listed_inside = SavedConfig in serialization.get_safe_globals()
    after = catch(T.load, io.BytesIO(data))
    before = list(serialization.get_safe_globals())
    serialization.add_safe_globals([SavedConfig])
    try:
        added = T.load(io.BytesIO(data))
        listed = SavedConfig in serialization.get_safe_globals()
    finally:
        serialization.clear_safe_globals()
        serialization.add_safe_globals(before)
    return (refused, [u for u in unsafe if "SavedConfig" in u], inside["cfg"].lr, inside["w"], listed_inside, after,
            added["cfg"].lr, type(added["cfg"]).__name__, listed, T.load(io.BytesIO(data), weights_only=False)["w"])


def test_torch_checkpoint_with_a_user_class_loads_with_safe_globals():
    import io
    import torch
    import hookgrad
    buffer = io.BytesIO()
    torch.save({"cfg": SavedConfig(0.25), "w": torch.arange(3.0)}, buffer)
    data = buffer.getvalue()
    with pytest.raises(__import__("pickle").UnpicklingError):
        hookgrad.load(io.BytesIO(data))
    assert hookgrad.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == \
        torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data))
    with hookgrad.serialization.safe_globals([SavedConfig]):
        out = hookgrad.load(io.BytesIO(data))
    assert out["cfg"].lr == 0.25 and isinstance(out["cfg"], SavedConfig) and out["w"].tolist() == [0.0, 1.0, 2.0]


@differential
def test_serialization_settings_and_names(T):
    import mmap
    serialization = sub(T, "serialization")
    before = serialization.get_default_load_endianness()
    serialization.set_default_load_endianness(serialization.LoadEndianness.LITTLE)
    changed = serialization.get_default_load_endianness().name
    serialization.set_default_load_endianness(before)
    with serialization.set_default_mmap_options(mmap.MAP_SHARED):
        shared = serialization.get_default_mmap_options() == mmap.MAP_SHARED
    return (serialization.DEFAULT_PROTOCOL, before, changed, catch(serialization.set_default_load_endianness, "big"),
            shared, serialization.get_default_mmap_options() == mmap.MAP_PRIVATE,
            catch(serialization.set_default_mmap_options, 12345), serialization.get_crc32_options(),
            [m.name for m in serialization.LoadEndianness], issubclass(serialization.SourceChangeWarning, Warning),
            serialization.location_tag(T.ones(1).untyped_storage()),
            catch(serialization.default_restore_location, T.ones(1).untyped_storage(), "cuda:0"),
            serialization.check_module_version_greater_or_equal(np, (1, 0)),
            serialization.check_module_version_greater_or_equal(np, (999, 0)),
            serialization.normalize_storage_type(T.UntypedStorage) is T.UntypedStorage)


# ------------------------------------------------------------------------------ amp decorators

@differential(rtol=1e-2, atol=1e-2)
def test_custom_fwd_and_custom_bwd(T):
    amp = sub(T, "amp")
    log = []

    class Scale(T.autograd.Function):
        @staticmethod
        @amp.custom_fwd(device_type="cpu", cast_inputs=T.float32)
        def forward(ctx, x, w):
            log.append(("forward", str(x.dtype).split(".")[-1], T.is_autocast_enabled("cpu")))
            return x @ w

        @staticmethod
        @amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            log.append(("backward", T.is_autocast_enabled("cpu")))
            return g, g

    class Keep(T.autograd.Function):
        @staticmethod
        @amp.custom_fwd(device_type="cpu")
        def forward(ctx, x):
            log.append(("keep forward", T.is_autocast_enabled("cpu"), str(ctx._dtype).split(".")[-1]))
            return x * 2

        @staticmethod
        @amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            log.append(("keep backward", T.is_autocast_enabled("cpu"), str(T.get_autocast_dtype("cpu")).split(".")[-1]))
            return g * 2

    x = T.ones(2, 2, dtype=T.bfloat16, requires_grad=True)
    w = T.ones(2, 2, requires_grad=True)
    with T.autocast("cpu"):
        y = Scale.apply(x, w)
        z = Keep.apply(T.ones(2, requires_grad=True))
    y.sum().backward()
    z.sum().backward()
    outside = Scale.apply(T.ones(1, 1), T.ones(1, 1))
    return (log, str(y.dtype).split(".")[-1], outside, catch(amp.custom_fwd, device_type=None),
            catch(amp.custom_bwd, device_type=3))


# ------------------------------------------------------------------------- functional optimizers

def _functional_case(T, name):
    """Two steps of the functional optimizer ``name`` on two parameters, with the state lists a
    caller keeps; returns the parameters and the state lists after each step."""
    module = sub(T, f"optim.{name}")
    fn = getattr(module, name)
    params = [T.tensor([1.0, -2.0, 3.0]), T.tensor([[0.5, -0.5], [1.5, 2.0]])]
    grads = [T.tensor([0.1, -0.3, 0.2]), T.tensor([[0.4, -0.1], [0.0, 0.3]])]
    zeros = lambda: [T.zeros_like(p) for p in params]  # noqa: E731
    steps = lambda: [T.tensor(0.0) for _ in params]  # noqa: E731
    hyper = {"lr": 0.1, "weight_decay": 0.01}
    if name in ("adam", "adamw"):
        lists = [zeros(), zeros(), zeros(), steps()]
        kwargs = dict(amsgrad=True, beta1=0.9, beta2=0.99, eps=1e-8, maximize=False, **hyper)
    elif name == "sgd":
        lists = [[None, None]]
        kwargs = dict(momentum=0.9, dampening=0.0, nesterov=True, maximize=False, **hyper)
    elif name == "adagrad":
        lists = [zeros(), steps()]
        kwargs = dict(lr_decay=0.01, eps=1e-10, maximize=False, **hyper)
    elif name == "rmsprop":
        lists = [zeros(), zeros(), zeros(), steps()]
        kwargs = dict(alpha=0.9, eps=1e-8, momentum=0.5, centered=True, **hyper)
    elif name == "adadelta":
        lists = [zeros(), zeros(), steps()]
        kwargs = dict(rho=0.9, eps=1e-6, maximize=False, **hyper)
    elif name == "adamax":
        lists = [zeros(), zeros(), steps()]
        kwargs = dict(eps=1e-8, beta1=0.9, beta2=0.99, **hyper)
    elif name == "asgd":
        lists = [zeros(), [T.tensor(1.0) for _ in params], [T.tensor(0.1) for _ in params], steps()]
        kwargs = dict(lambd=1e-4, t0=1.0, alpha=0.75, **hyper)
    elif name == "nadam":
        lists = [zeros(), zeros(), [T.tensor(1.0) for _ in params], steps()]
        kwargs = dict(beta1=0.9, beta2=0.99, momentum_decay=4e-3, eps=1e-8, **hyper)
    elif name == "radam":
        lists = [zeros(), zeros(), steps()]
        kwargs = dict(beta1=0.9, beta2=0.99, eps=1e-8, **hyper)
    else:  # rprop
        lists = [zeros(), [T.full_like(p, 0.05) for p in params], steps()]
        kwargs = dict(step_size_min=1e-6, step_size_max=50.0, etaminus=0.5, etaplus=1.2)
    originals = [list(values) for values in lists]
    record = []
    for _ in range(2):
        fn(params, grads, *lists, **kwargs)
        record.append(([p.clone() for p in params], [[None if v is None else v.clone() for v in values]
                                                      for values in lists]))
    same_objects = [all(a is b for a, b in zip(o, values) if a is not None) for o, values in zip(originals, lists)]
    return record, same_objects


@pytest.mark.parametrize("name", ["adam", "adamw", "sgd", "adagrad", "rmsprop", "adadelta", "adamax", "asgd",
                                  "nadam", "radam", "rprop"])
@differential(rtol=1e-5, atol=1e-6)
def test_functional_optimizers(T, name):
    return _functional_case(T, name)


@differential
def test_deprecated_jacobian_helpers(T):
    gradcheck = importlib.import_module(f"{T.__name__}.autograd.gradcheck")
    x = T.tensor([0.5, -1.0, 2.0], dtype=T.float64, requires_grad=True)
    w = T.tensor([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]], dtype=T.float64, requires_grad=True)
    numerical = warns(gradcheck.get_numerical_jacobian, lambda inputs: (inputs[0].sin() @ inputs[1]), (x, w),
                      eps=1e-6)
    out = (x.sin() @ w) * 2
    analytical = warns(gradcheck.get_analytical_jacobian, (x, w), out)
    wrt = gradcheck.get_numerical_jacobian_wrt_specific_input(lambda a, b: (a * b.sum(),), 0, (x, w),
                                                              (x * w.sum(),), 1e-6)
    return (numerical, analytical, wrt, catch(gradcheck.get_numerical_jacobian, lambda i: i[0], (x,), grad_out=2.0))


def test_consume_prefix_in_state_dict_if_present():
    import torch
    import hookgrad
    results = []
    for T in (torch, hookgrad):
        model = T.nn.Sequential(T.nn.Linear(2, 2))
        wrapped = T.nn.Sequential(model)  # keys "0.0.weight", metadata "", "0", "0.0"
        state = wrapped.state_dict()
        sub(T, "nn.modules.utils").consume_prefix_in_state_dict_if_present(state, "0.")
        results.append((list(state.keys()), sorted(state._metadata.keys())))
    assert results[0] == results[1]


@differential
def test_checkpoint_device_states_and_selective_arguments(T):
    checkpoint = sub(T, "utils.checkpoint")
    return (checkpoint.get_device_states(T.ones(2), 3), checkpoint.set_device_states([], []),
            checkpoint.DefaultDeviceType.get_device_type(), isinstance(checkpoint.SAC_IGNORED_OPS, set),
            checkpoint.SelectiveCheckpointContext(is_recompute=False).is_recompute,
            catch(checkpoint.create_selective_checkpoint_contexts, [T.ops.aten.mm]),
            catch(checkpoint.create_selective_checkpoint_contexts, 3),
            checkpoint.CheckpointPolicy.MUST_SAVE.value if hasattr(checkpoint.CheckpointPolicy.MUST_SAVE, "value")
            else checkpoint.CheckpointPolicy.MUST_SAVE)


@differential
def test_jit_and_overrides_leftovers(T):
    jit, overrides = T.jit, sub(T, "overrides")
    from typing import Optional

    def f(x):
        return x + 1

    previous = jit.set_fusion_strategy([("DYNAMIC", 3)])
    restored = jit.set_fusion_strategy(previous)
    with jit.strict_fusion():
        inside = 1
    lin = T.nn.Linear(1, 1)
    return (jit.script_if_tracing(f)(1), jit.isinstance([1, 2], list[int]), jit.isinstance([1, "a"], list[int]),
            jit.isinstance({"a": T.ones(1)}, dict[str, T.Tensor]), jit.isinstance((1, "a"), tuple[int, str]),
            jit.isinstance(None, Optional[int]), jit.isinstance(3, int), issubclass(jit.Error, Exception),
            previous, restored, jit.onednn_fusion_enabled(), inside,
            overrides.resolve_name(T.add), overrides.resolve_name(T.Tensor.add),
            overrides.resolve_name(T.nn.functional.conv2d), overrides.resolve_name(T.linalg.norm),
            overrides.resolve_name(lambda: 1), overrides.resolve_name(T.ops.aten.add.Tensor), lin.weight.shape)


# ------------------------------------------------------------------------ mutation of saved tensors

def _graph_extras(T):
    if T.__name__ == "torch":
        return T.autograd.graph
    return importlib.import_module("hookgrad.autograd.saved_mutation")


@differential
def test_allow_mutation_on_saved_tensors(T):
    graph = _graph_extras(T)
    out = []
    with graph.allow_mutation_on_saved_tensors() as ctx:
        a = T.tensor([0.5, 1.0, 2.0], requires_grad=True)
        b = a.clone()
        loss = (b ** 2).sum()
        b.sin_()  # mutated after being saved by pow
        view = a.clone()
        prod = (view * T.tensor([1.0, 2.0, 3.0])).sum()
        view[1:].mul_(10)  # a view of the saved tensor changes it too
        unchanged = a.clone()
        third = (unchanged.exp()).sum()
        loss.backward()
        first_grad = a.grad.clone()
        a.grad = None
        prod.backward()
        second_grad = a.grad.clone()
        a.grad = None
        third.backward()
        out += [first_grad, second_grad, a.grad, b, type(ctx).__name__]
    c = T.tensor([1.0, 2.0], requires_grad=True)
    with graph.allow_mutation_on_saved_tensors():
        d = c.clone()
        late = (d * d).sum()
    out.append(catch(late.backward))

    def nested():
        with graph.allow_mutation_on_saved_tensors():
            with graph.allow_mutation_on_saved_tensors():
                pass
    out.append(catch(nested))
    e = T.ones(2, requires_grad=True).clone()
    version = e._version
    graph.increment_version(e)
    graph.increment_version([e, e])
    out.append(e._version - version)
    f = T.ones(2, requires_grad=True)
    g = f.clone()
    h = (g * g).sum()
    graph.increment_version(g)
    out.append(catch(h.backward))
    return out


@differential
def test_pytree_return_types_are_their_own_nodes(T):
    pt = sub(T, "utils._pytree")
    x = T.tensor([[3.0, 1.0], [2.0, 4.0]])
    out = []
    for result in (T.max(x, 0), T.sort(x), T.topk(x, 1), T.kthvalue(x, 1), T.median(x, 0)):
        leaves, spec = pt.tree_flatten(result)
        rebuilt = pt.tree_map(lambda t: t * 2, result)
        out.append((leaves, spec.num_leaves, spec.context, type(rebuilt).__name__, rebuilt[0],
                    [pt.keystr(k) for k, _ in pt.tree_leaves_with_path(result)]))
    return out


@differential
def test_allow_mutation_context_shows_torchs_bookkeeping(T):
    """ctx.cloned holds one entry per saved tensor (per version) changed in place while its graph
    lives; ctx.tid_to_weakhandle one per saved tensor; both forget a graph once it is freed."""
    graph = _graph_extras(T)
    counts = []

    def note(ctx):
        counts.append((len(list(ctx.cloned.items())), len(list(ctx.tid_to_weakhandle.items())),
                       len(list(ctx.original.items()))))

    with graph.allow_mutation_on_saved_tensors() as ctx:
        a = T.randn(2, 3, requires_grad=True).clone()
        b, c = a ** 2, a ** 2  # the same tensor at one version: one handle
        note(ctx)
        a.sin_()
        note(ctx)
        d = a ** 3
        a[:1].mul_(2)  # through a view
        note(ctx)
        del b, c
        note(ctx)
        d.sum().backward()
        note(ctx)
        base = T.ones(2, requires_grad=True)
        plain, out = T.tensor([1.0, 2.0]), None
        out = base * plain
        T.sin(T.tensor([2.0, 3.0]), out=plain)
        note(ctx)
        out.sum().backward()
        note(ctx)
        grad = base.grad
    return counts, grad
