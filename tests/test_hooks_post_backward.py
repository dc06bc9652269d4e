"""``hookgrad.hooks.register_module_post_backward_hook``: tested against the truth. Inside the hook,
every parameter of the module that the pass reaches has its final ``.grad`` (equal to torch's
after the same backward) and its post-accumulate-grad hooks have run; the hook fires once per pass."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import hookgrad
import hookgrad.hooks as H



@pytest.fixture(autouse=True)
def no_hooks_left():
    yield
    from hookgrad.autograd import graph
    graph._module_post_backward_hooks.clear()


R = np.random.default_rng(0)
W1, B1, W2, B2 = R.standard_normal((4, 3)), R.standard_normal(4), R.standard_normal((2, 4)), R.standard_normal(2)
X = R.standard_normal((5, 3))


def mlp(T):
    model = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 2)).double()
    with T.no_grad():
        for p, v in zip(model.parameters(), (W1, B1, W2, B2)):
            p.copy_(T.tensor(v))
    return model


def grads(module):
    return {name: None if p.grad is None else p.grad.detach().numpy().copy() for name, p in module.named_parameters()}


class Recorder:
    def __init__(self):
        self.log = []

    def hook(self, name):
        def fn(module):
            self.log.append((name, grads(module)))
        return fn


def test_fires_once_with_final_grads_equal_to_torchs():
    model, rec = mlp(hookgrad), Recorder()
    handles = [H.register_module_post_backward_hook(model[0], rec.hook("first")),
               H.register_module_post_backward_hook(model, rec.hook("model"))]
    model(hookgrad.tensor(X)).pow(2).sum().backward()
    ref = mlp(torch)
    ref(torch.tensor(X)).pow(2).sum().backward()
    assert [name for name, _ in rec.log] == ["first", "model"]
    want = grads(ref)
    for name, seen in rec.log:
        for key, g in seen.items():
            prefix = "0." if name == "first" else ""
            np.testing.assert_allclose(g, want[prefix + key], rtol=1e-12)
    for handle in handles:
        handle.remove()


def test_runs_after_every_post_accumulate_grad_hook():
    model, log = mlp(hookgrad), []
    for name, p in model.named_parameters():
        p.register_post_accumulate_grad_hook(lambda p, name=name: log.append(name))
    H.register_module_post_backward_hook(model, lambda m: log.append("module"))
    model(hookgrad.tensor(X)).sum().backward()
    assert log[-1] == "module" and sorted(log[:-1]) == sorted(n for n, _ in model.named_parameters())


def test_a_module_called_several_times_fires_once_after_its_last_gradient():
    lin = hookgrad.nn.Linear(3, 3).double()
    rec = Recorder()
    H.register_module_post_backward_hook(lin, rec.hook("lin"))
    x = hookgrad.tensor(X)
    lin(lin(lin(x)).tanh()).sum().backward()
    assert len(rec.log) == 1
    np.testing.assert_array_equal(rec.log[0][1]["weight"], lin.weight.grad.numpy())
    t = torch.nn.Linear(3, 3).double()
    with torch.no_grad():
        t.weight.copy_(torch.tensor(lin.weight.detach().numpy()))
        t.bias.copy_(torch.tensor(lin.bias.detach().numpy()))
    xt = torch.tensor(X)
    t(t(t(xt)).tanh()).sum().backward()
    np.testing.assert_allclose(rec.log[0][1]["weight"], t.weight.grad.numpy(), rtol=1e-12)


def test_shared_parameters_fire_each_owner_once():
    a, b = hookgrad.nn.Linear(3, 3), hookgrad.nn.Linear(3, 3)
    b.weight = a.weight  # shared
    log = []
    H.register_module_post_backward_hook(a, lambda m: log.append(("a", m.weight.grad.clone())))
    H.register_module_post_backward_hook(b, lambda m: log.append(("b", m.weight.grad.clone())))
    x = hookgrad.randn(2, 3)
    b(a(x)).sum().backward()
    assert sorted(name for name, _ in log) == ["a", "b"]
    for _, g in log:
        assert hookgrad.equal(g, a.weight.grad)


def test_frozen_parameters_are_not_waited_for():
    lin, log = hookgrad.nn.Linear(3, 2), []
    lin.weight.requires_grad_(False)
    H.register_module_post_backward_hook(lin, lambda m: log.append((m.weight.grad, m.bias.grad is not None)))
    lin(hookgrad.randn(4, 3)).sum().backward()
    assert log == [(None, True)]
    lin.bias.requires_grad_(False)
    out = lin(hookgrad.randn(4, 3, requires_grad=True)).sum()
    out.backward()
    assert len(log) == 1  # nothing of the module's in the pass


def test_nested_modules_fire_after_their_children():
    model, log = mlp(hookgrad), []
    H.register_module_post_backward_hook(model, lambda m: log.append("model"))
    H.register_module_post_backward_hook(model[0], lambda m: log.append("0"))
    H.register_module_post_backward_hook(model[2], lambda m: log.append("2"))
    H.register_module_post_backward_hook(model[1], lambda m: log.append("tanh (no parameters)"))
    model(hookgrad.tensor(X)).sum().backward()
    assert log == ["2", "0", "model"]


def test_a_pass_that_reaches_no_parameter_does_not_fire():
    model, log = mlp(hookgrad), []
    H.register_module_post_backward_hook(model[0], lambda m: log.append("0"))
    H.register_module_post_backward_hook(model[2], lambda m: log.append("2"))
    h = model[0](hookgrad.tensor(X)).detach().requires_grad_()
    model[2](h).sum().backward()
    assert log == ["2"]


def test_retain_graph_fires_on_every_pass_with_that_pass_grads():
    model, rec = mlp(hookgrad), Recorder()
    H.register_module_post_backward_hook(model[2], rec.hook("2"))
    loss = model(hookgrad.tensor(X)).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    assert len(rec.log) == 2
    np.testing.assert_allclose(rec.log[1][1]["weight"], 2 * rec.log[0][1]["weight"], rtol=1e-12)
    np.testing.assert_array_equal(rec.log[1][1]["weight"], model[2].weight.grad.numpy())


def test_backward_inputs_waits_only_for_the_inputs():
    model, rec = mlp(hookgrad), Recorder()
    H.register_module_post_backward_hook(model, rec.hook("model"))
    H.register_module_post_backward_hook(model[2], rec.hook("2"))
    model(hookgrad.tensor(X)).sum().backward(inputs=[model[0].weight])
    assert [n for n, _ in rec.log] == ["model"]
    assert rec.log[0][1]["0.weight"] is not None and rec.log[0][1]["0.bias"] is None


def test_autograd_grad_accumulates_nothing_so_never_fires():
    model, log = mlp(hookgrad), []
    H.register_module_post_backward_hook(model, lambda m: log.append("model"))
    out = model(hookgrad.tensor(X)).sum()
    hookgrad.autograd.grad(out, list(model.parameters()))
    assert log == []


def test_remove_and_context_manager():
    model, log = mlp(hookgrad), []
    handle = H.register_module_post_backward_hook(model, lambda m: log.append("a"))
    handle.remove()
    with H.register_module_post_backward_hook(model, lambda m: log.append("b")):
        model(hookgrad.tensor(X)).sum().backward()
    model(hookgrad.tensor(X)).sum().backward()
    assert log == ["b"]


def test_a_hook_registered_during_a_pass_fires_from_the_next_pass_on():
    model, log, handles = mlp(hookgrad), [], []

    def register_late(grad):
        if not handles:
            handles.append(H.register_module_post_backward_hook(model, lambda m: log.append("late")))
    model[2].weight.register_hook(register_late)
    model(hookgrad.tensor(X)).sum().backward()
    assert log == []
    model(hookgrad.tensor(X)).sum().backward()
    assert log == ["late"]


def test_the_hook_sees_its_module_in_the_context():
    lin, seen = hookgrad.nn.Linear(2, 2), []
    H.register_module_post_backward_hook(lin, lambda m: seen.append(H.context()))
    lin(hookgrad.randn(1, 2)).sum().backward()
    ctx = seen[0]
    assert (ctx.phase, ctx.module, ctx.kind) == ("backward", lin, "module_post_backward_hook")
    assert isinstance(ctx.id, int)


def test_an_error_in_the_hook_propagates_and_leaves_things_usable():
    lin = hookgrad.nn.Linear(2, 2)

    def bad(m):
        raise ValueError("boom")
    handle = H.register_module_post_backward_hook(lin, bad)
    with pytest.raises(ValueError, match="boom"):
        lin(hookgrad.randn(1, 2)).sum().backward()
    handle.remove()
    log = []
    H.register_module_post_backward_hook(lin, lambda m: log.append("ok"))
    lin(hookgrad.randn(1, 2)).sum().backward()
    assert log == ["ok"]


def test_bad_use_raises_type_error_naming_the_problem():
    lin = hookgrad.nn.Linear(2, 2)
    with pytest.raises(TypeError, match="must be callable.*Linear|Linear.*must be callable"):
        H.register_module_post_backward_hook(lin, 3)
    with pytest.raises(TypeError, match="expected a hookgrad.nn.Module"):
        H.register_module_post_backward_hook(torch.nn.Linear(2, 2), print)
    with pytest.raises(TypeError, match="expected a hookgrad.nn.Module"):
        H.register_module_post_backward_hook(hookgrad.randn(2), print)
    log = []
    H.register_module_post_backward_hook(lin, lambda m: log.append("ok"))
    lin(hookgrad.randn(1, 2)).sum().backward()
    assert log == ["ok"]


def test_a_dead_module_is_forgotten():
    import gc
    lin, log = hookgrad.nn.Linear(2, 2), []
    handle = H.register_module_post_backward_hook(lin, lambda m: log.append("dead"))
    del lin
    gc.collect()
    other = hookgrad.nn.Linear(2, 2)
    other(hookgrad.randn(1, 2)).sum().backward()
    assert log == []
    handle.remove()
