"""Selective activation checkpointing (``checkpoint(fn, use_reentrant=False, context_fn=...)`` with
``create_selective_checkpoint_contexts``) against torch: which operators the policy is asked
about and with what, the gradients, the errors (a saved output mutated, a second backward, bad
policies), and a policy's saved outputs handed back in the recomputation."""
import functools
import importlib

import numpy as np
import pytest

from difftest import catch, differential


def _ckpt(T):
    return importlib.import_module(T.__name__ + ".utils.checkpoint")


def _inputs(T, *shapes):
    rng = np.random.default_rng(5)
    return [T.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]


def _asking(T, log, saved_ops=None, answer_bool=False):
    ckpt = _ckpt(T)

    def policy(ctx, op, *args, **kwargs):
        log.append((str(op), ctx.is_recompute, type(ctx.op_output).__name__, len(args), sorted(kwargs)))
        save = op in (saved_ops or ())
        if answer_bool:
            return save
        return ckpt.CheckpointPolicy.MUST_SAVE if save else ckpt.CheckpointPolicy.PREFER_RECOMPUTE
    return functools.partial(ckpt.create_selective_checkpoint_contexts, policy)


@pytest.mark.parametrize("answer_bool", [False, True])
@differential
def test_policy_sees_each_operator_once_in_the_forward(T, answer_bool):
    aten = T.ops.aten
    x, y = _inputs(T, (4, 4), (4, 4))
    log = []

    def fn(x, y):
        return T.sigmoid(T.matmul(T.matmul(x, y), y)) * y
    out = _ckpt(T).checkpoint(fn, x, y, use_reentrant=False,
                              context_fn=_asking(T, log, [aten.mm.default], answer_bool))
    forward_log = list(log)
    out.sum().backward()
    return forward_log, log, x.grad, y.grad


@differential
def test_list_of_ops_and_a_model(T):
    """A list of operators to save, over a small MLP with dropout (the recomputation draws the same mask)."""
    aten = T.ops.aten
    T.manual_seed(0)
    model = T.nn.Sequential(T.nn.Linear(4, 8), T.nn.ReLU(), T.nn.Dropout(0.3), T.nn.Linear(8, 2)).double()
    (x,) = _inputs(T, (3, 4))
    context_fn = functools.partial(_ckpt(T).create_selective_checkpoint_contexts,
                                   [aten.addmm.default, aten.relu.default])
    out = _ckpt(T).checkpoint(model, x, use_reentrant=False, context_fn=context_fn)
    out.sum().backward()
    return out, x.grad, [p.grad for p in model.parameters()]


@differential
def test_saved_output_mutated_then_allowed(T):
    aten = T.ops.aten
    ckpt = _ckpt(T)

    def policy(ctx, op, *args, **kwargs):
        return ckpt.CheckpointPolicy.MUST_SAVE if op == aten.sin.default else ckpt.CheckpointPolicy.PREFER_RECOMPUTE

    def fn(x):
        return x.sin().mul_(2).cos().exp()
    (x,) = _inputs(T, (3,))
    out = ckpt.checkpoint(fn, x, use_reentrant=False,
                          context_fn=functools.partial(ckpt.create_selective_checkpoint_contexts, policy))
    mutated = catch(out.sum().backward)
    out = ckpt.checkpoint(fn, x, use_reentrant=False, context_fn=functools.partial(
        ckpt.create_selective_checkpoint_contexts, policy, allow_cache_entry_mutation=True))
    out.sum().backward()
    return mutated, x.grad


@differential
def test_second_backward_refused(T):
    ckpt = _ckpt(T)
    (x,) = _inputs(T, (3,))
    out = ckpt.checkpoint(lambda x: x.sin().cos().exp(), x, use_reentrant=False,
                          context_fn=functools.partial(ckpt.create_selective_checkpoint_contexts, [T.ops.aten.sin.default]))
    out.sum().backward(retain_graph=True)
    return catch(out.sum().backward, retain_graph=True), x.grad


@differential
def test_views_and_several_outputs(T):
    """A saved view of an integer tensor, and an operator with two outputs saved (var_mean)."""
    ckpt = _ckpt(T)
    aten = T.ops.aten
    counted = []

    def policy(ctx, op, *args, **kwargs):
        if op == aten.var_mean.correction:
            counted.append(str(op))
            return ckpt.CheckpointPolicy.MUST_SAVE
        return ckpt.CheckpointPolicy.PREFER_RECOMPUTE
    (y,) = _inputs(T, (3,))
    ints = T.tensor([1, 2, 3])
    out = ckpt.checkpoint(lambda a, b: (a.view(-1), b.sin().cos()), ints, y, use_reentrant=False,
                          context_fn=functools.partial(ckpt.create_selective_checkpoint_contexts, [aten.view.default]))
    out[1].sum().backward()

    def fn(x):
        a, b = T.var_mean(x)
        return a * b
    (x,) = _inputs(T, (4,))
    out2 = ckpt.checkpoint(fn, x, use_reentrant=False,
                           context_fn=functools.partial(ckpt.create_selective_checkpoint_contexts, policy))
    grads = T.autograd.grad(out2.sum(), (x,))
    return out[0], y.grad, grads, counted


@differential
def test_bad_policies(T):
    ckpt = _ckpt(T)
    return (catch(ckpt.create_selective_checkpoint_contexts, [2]),
            catch(ckpt.create_selective_checkpoint_contexts, [T.ops.aten.sin]),
            catch(ckpt.create_selective_checkpoint_contexts, 2),
            [p.name for p in ckpt.CheckpointPolicy], T.ops.aten.detach.default in ckpt.SAC_IGNORED_OPS,
            T.ops.aten.sin.default in ckpt.SAC_IGNORED_OPS)


@differential
def test_modes_and_storage(T):
    """Inside the forward the caching mode is current and keeps a detached output per operator;
    the recomputation consumes it."""
    ckpt = _ckpt(T)
    dispatch = importlib.import_module(T.__name__ + ".utils._python_dispatch")
    seen = []

    def policy(ctx, op, *args, **kwargs):
        return ckpt.CheckpointPolicy.MUST_SAVE

    def fn(x):
        mode = dispatch._get_current_dispatch_mode()
        seen.append(type(mode).__name__)
        out = x.cos().exp()
        if isinstance(mode, ckpt._CachingTorchDispatchMode):
            kept = mode.storage[T.ops.aten.exp.default][0].val
            seen.append((kept.requires_grad, tuple(kept.shape)))
        return out.sin()
    (x,) = _inputs(T, (3,))
    out = ckpt.checkpoint(fn, x, use_reentrant=False,
                          context_fn=functools.partial(ckpt.create_selective_checkpoint_contexts, policy))
    out.sum().backward()
    return seen, x.grad


@pytest.mark.parametrize("early_stop", [True, False])
@differential
def test_checkpoint_under_a_mode_counting_an_operator(T, early_stop):
    """A mode keyed on ``torch.ops.aten.sin.default`` around a checkpointed region and its
    backward: the recomputation's sin is seen only without early stop."""
    ckpt = _ckpt(T)
    base = importlib.import_module(T.__name__ + ".utils._python_dispatch").TorchDispatchMode

    class SinCounter(base):
        count = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func is T.ops.aten.sin.default:
                self.count += 1
            return func(*args, **(kwargs or {}))
    calls = []

    def fn(x):
        calls.append(1)
        return x.sin()
    a = T.tensor(1.0, requires_grad=True)
    with SinCounter() as counter:
        with ckpt.set_checkpoint_early_stop(early_stop):
            out = ckpt.checkpoint(fn, a, use_reentrant=False)
        out.backward()
    return len(calls), counter.count, a.grad


@differential
def test_storage_released_after_backward(T):
    import gc
    import weakref
    ckpt = _ckpt(T)
    dispatch = importlib.import_module(T.__name__ + ".utils._python_dispatch")
    refs = []

    def fn(x):
        out = x.cos().exp()
        mode = dispatch._get_current_dispatch_mode()
        if isinstance(mode, ckpt._CachingTorchDispatchMode):
            refs.append(weakref.ref(mode.storage[T.ops.aten.exp.default][0].val))
        return out.sin()
    context_fn = functools.partial(ckpt.create_selective_checkpoint_contexts,
                                   lambda ctx, op, *a, **k: ckpt.CheckpointPolicy.MUST_SAVE)
    gc.disable()
    try:
        (x,) = _inputs(T, (3,))
        out = ckpt.checkpoint(fn, x, use_reentrant=False, context_fn=context_fn)
        alive = refs[-1]() is not None
        del out
        dropped_with_graph = refs[-1]() is None
        out = ckpt.checkpoint(fn, x, use_reentrant=False, context_fn=context_fn)
        out.sum().backward(retain_graph=True)
        dropped_after_backward = refs[-1]() is None
    finally:
        gc.enable()
    return alive, dropped_with_graph, dropped_after_backward
