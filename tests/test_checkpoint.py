"""torch.utils.checkpoint against torch: gradients, and the hook event log (module forward
pre-/post-hooks, tensor hooks, saved-tensor hooks, full backward hooks) in both the forward
and the recomputation, for use_reentrant=False (with and without early stop) and True, and
checkpoint_sequential."""
import importlib

import numpy as np
import pytest

from difftest import catch, differential, warns

RNG = np.random.default_rng(11)
X = RNG.standard_normal((5, 4))


def _ckpt(T):
    return importlib.import_module(T.__name__ + ".utils.checkpoint")


def _model(T, dropout=False):
    T.manual_seed(0)
    layers = [T.nn.Linear(4, 6), T.nn.Tanh(), T.nn.Linear(6, 6), T.nn.Sigmoid(), T.nn.Linear(6, 3)]
    if dropout:
        layers.insert(2, T.nn.Dropout(0.5))
    model = T.nn.Sequential(*layers).double()
    with T.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(T.tensor(np.cos(np.arange(p.numel()) * 0.7 + i).reshape(tuple(p.shape))))
    return model


def _instrument(T, model, log):
    for name, module in model.named_children():
        module.register_forward_pre_hook(lambda m, a, n=name: log.append(("pre", n, T.is_grad_enabled())))
        module.register_forward_hook(lambda m, a, o, n=name: log.append(("fwd", n, tuple(o.shape))))
    return model


MODES = [dict(use_reentrant=False), dict(use_reentrant=False, early_stop=False), dict(use_reentrant=True)]
IDS = ["non-reentrant", "non-reentrant-no-early-stop", "reentrant"]


@pytest.mark.parametrize("mode", MODES, ids=IDS)
@differential(rtol=1e-12, atol=1e-14)
def test_hooks_fire_on_recompute(T, mode):
    ckpt = _ckpt(T)
    log = []
    model = _instrument(T, _model(T), log)
    x = T.tensor(X, requires_grad=True)
    x.register_hook(lambda g: log.append(("x grad", tuple(g.shape))))
    head = model[0]
    log.append("forward")
    y = ckpt.checkpoint(lambda v: model[1:4](head(v)), x, **mode)
    out = model[4](y)
    log.append(("y requires grad", y.requires_grad, y.grad_fn is not None))
    log.append("backward")
    out.sum().backward()
    log.append("done")
    return log, x.grad, [p.grad for p in model.parameters()]


@pytest.mark.parametrize("mode", MODES, ids=IDS)
@differential(rtol=1e-12, atol=1e-14)
def test_saved_tensor_hooks_seen(T, mode):
    """Outer saved-tensor hooks: what they pack and unpack with a checkpointed block inside."""
    ckpt = _ckpt(T)
    log = []
    model = _model(T)
    x = T.tensor(X, requires_grad=True)

    def pack(t):
        log.append(("pack", tuple(t.shape)))
        return t

    def unpack(t):
        log.append(("unpack", tuple(t.shape)))
        return t

    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        h = (x * 2).exp()
        y = ckpt.checkpoint(model, h, **mode)
        z = (y * y).sum()
    z.backward()
    return log, x.grad


@pytest.mark.parametrize("mode", MODES, ids=IDS)
@differential(rtol=1e-12, atol=1e-14)
def test_module_backward_hooks_and_dropout_rng(T, mode):
    ckpt = _ckpt(T)
    log = []
    model = _model(T, dropout=True)
    for name, module in model.named_children():
        module.register_full_backward_hook(
            lambda m, gi, go, n=name: log.append(("bwd", n, [None if g is None else tuple(g.shape) for g in go])))
    x = T.tensor(X, requires_grad=True)
    T.manual_seed(3)
    y = ckpt.checkpoint(model, x, **mode)
    after_forward = T.rand(2)  # the RNG stream continues from after the forward
    y.pow(2).sum().backward()
    after_backward = T.rand(2)
    grads = [x.grad] + [p.grad.clone() for p in model.parameters()]
    # the same seed without checkpointing: dropout masks (and so gradients) must agree, and the
    # recomputation must not have advanced the RNG stream (RNG values differ between frameworks)
    model.zero_grad()
    ref_x = T.tensor(X, requires_grad=True)
    T.manual_seed(3)
    ref_y = model(ref_x)
    ref_after_forward = T.rand(2)
    ref_y.pow(2).sum().backward()
    ref_after_backward = T.rand(2)
    ref_grads = [ref_x.grad] + [p.grad for p in model.parameters()]
    same = [bool(T.allclose(a, b)) for a, b in zip(grads, ref_grads)]
    return (log, same, bool(T.allclose(y, ref_y)), bool(T.equal(after_forward, ref_after_forward)),
            bool(T.equal(after_backward, ref_after_backward)))


@pytest.mark.parametrize("reentrant", [False, True])
@differential(rtol=1e-12, atol=1e-14)
def test_checkpoint_sequential(T, reentrant):
    ckpt = _ckpt(T)
    log = []
    model = _instrument(T, _model(T), log)
    x = T.tensor(X, requires_grad=True)
    out = ckpt.checkpoint_sequential(model, 2, x, use_reentrant=reentrant)
    log.append("backward")
    out.sum().backward()
    plain = _model(T)
    ref_x = T.tensor(X, requires_grad=True)
    plain(ref_x).sum().backward()
    return log, out, x.grad, ref_x.grad, [p.grad for p in model.parameters()]


@differential(rtol=1e-12, atol=1e-14)
def test_two_backwards_recompute_each_time(T):
    ckpt = _ckpt(T)
    log = []
    model = _instrument(T, _model(T), log)
    x = T.tensor(X, requires_grad=True)
    y = ckpt.checkpoint(model, x, use_reentrant=False)
    y.sum().backward(retain_graph=True)
    log.append("second")
    y.sum().backward()
    return log, x.grad


@differential
def test_warnings_and_errors(T):
    ckpt = _ckpt(T)
    model = _model(T)
    x = T.tensor(X, requires_grad=True)
    no_grad_input = T.tensor(X)
    out = [warns(ckpt.checkpoint, model, x)[1],
           warns(ckpt.checkpoint, model, no_grad_input, use_reentrant=True)[1],
           catch(ckpt.checkpoint, model, x, use_reentrant=True, extra=1),
           catch(ckpt.checkpoint, model, x, use_reentrant=True, context_fn=lambda: (None, None)),
           catch(ckpt.checkpoint, model, x, use_reentrant=False, determinism_check="strict"),
           warns(ckpt.checkpoint_sequential, model, 2, x)[1],
           catch(ckpt.checkpoint_sequential, model, 2, x, use_reentrant=False, foo=1)]
    with T.no_grad():
        out.append(ckpt.checkpoint(model, x, use_reentrant=False).requires_grad)
    # an input changed in place between forward and backward
    w = T.tensor(X, requires_grad=True)
    v = w * 1.0
    y = ckpt.checkpoint(lambda a: (a * a).sum(), v, use_reentrant=False)
    with T.no_grad():
        v.add_(1.0)
    out.append(catch(y.backward))
    # a rerun that saves a different number of tensors
    calls = []

    def flaky(a):
        calls.append(1)
        return (a * a).sum() if len(calls) == 1 else (a * a * a).sum()

    z = ckpt.checkpoint(flaky, T.tensor(X, requires_grad=True), use_reentrant=False, early_stop=False)
    out.append(catch(z.backward))
    return out


def test_checkpoint_error_class_is_runtime_error():
    import hookgrad
    import torch
    assert issubclass(hookgrad.utils.checkpoint.CheckpointError, RuntimeError)
    assert issubclass(torch.utils.checkpoint.CheckpointError, RuntimeError)


@pytest.mark.parametrize("early_stop", [True, False])
@differential(rtol=1e-12, atol=1e-14)
def test_early_stop_skips_the_tail(T, early_stop):
    """Modules after the last op that saves a tensor run again on recompute only without early
    stop."""
    ckpt = _ckpt(T)
    log = []
    model = T.nn.Sequential(T.nn.Linear(4, 3), T.nn.Tanh(), T.nn.Flatten(), T.nn.Identity()).double()
    with T.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(T.tensor(np.sin(np.arange(p.numel()) * 0.9 + i).reshape(tuple(p.shape))))
    _instrument(T, model, log)
    x = T.tensor(X, requires_grad=True)
    y = ckpt.checkpoint(model, x, use_reentrant=False, early_stop=early_stop)
    log.append("backward")
    (y * 3.0).sum().backward()
    return log, x.grad


@differential(rtol=1e-12, atol=1e-14)
def test_nested_checkpoints(T):
    ckpt = _ckpt(T)
    log = []
    model = _instrument(T, _model(T), log)
    x = T.tensor(X, requires_grad=True)

    def inner(v):
        return model[2:4](v)

    def outer(v):
        return model[4](ckpt.checkpoint(inner, model[0:2](v), use_reentrant=False))

    y = ckpt.checkpoint(outer, x, use_reentrant=False)
    log.append("backward")
    y.sum().backward()
    return log, x.grad, [p.grad for p in model.parameters()]


@differential
def test_helpers(T):
    ckpt = _ckpt(T)
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = T.tensor([3.0])
    detached = ckpt.detach_variable((a * 2, b, 5))
    model = _model(T)
    x = T.tensor(X, requires_grad=True)
    with ckpt.set_checkpoint_early_stop(False):
        log = []
        _instrument(T, model, log)
        y = ckpt.checkpoint(model[:3], x, use_reentrant=False)
        y.sum().backward()
    y2 = ckpt.CheckpointFunction.apply(model, True, x)
    return ([(t.requires_grad, t.is_leaf) if hasattr(t, "requires_grad") else t for t in detached],
            catch(ckpt.detach_variable, [a]), warns(ckpt.check_backward_validity, (b, 1))[1],
            warns(ckpt.check_backward_validity, (a,))[1], log, y2.requires_grad,
            issubclass(T.optim.lr_scheduler._LRScheduler, T.optim.lr_scheduler.LRScheduler))
