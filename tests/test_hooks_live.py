"""Live module backward hooks (``live=True``): looked up when backward reaches the module, and no
views of the module's inputs and outputs.

Wherever torch's default full backward hooks work, the live ones must see the same
``grad_input`` / ``grad_output`` and leave the same gradients: every program below runs on torch
with default hooks and on hookgrad with live hooks (differential), and on hookgrad in both modes.
What only live mode allows (in-place changes around the module, removal between forward and
backward) is checked against torch programs that get the same gradients without module hooks.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hookgrad
from difftest import assert_same, differential, normalize, warns


def _randn(T, *shape, requires_grad=False, seed=0):
    """The same random values on both frameworks (their generators differ)."""
    values = np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)
    return T.tensor(values, requires_grad=requires_grad)


def _init(T, module, seed=0):
    """Give every parameter the same values on both frameworks."""
    rng = np.random.default_rng(seed)
    with T.no_grad():
        for p in module.parameters():
            p.copy_(T.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32) * 0.5))
    return module


def _live(T):
    return {"live": True} if T is hookgrad else {}


def _recorder(log, name, scale=None):
    """A full hook recording (name, grad_input, grad_output); with ``scale`` it returns
    grad_input scaled (None entries stay None)."""
    def hook(module, grad_input, grad_output):
        log.append((name, "full", list(grad_input), list(grad_output)))
        if scale is not None:
            return tuple(None if g is None else g * scale for g in grad_input)
    return hook


def _pre_recorder(log, name, scale=None):
    def hook(module, grad_output):
        log.append((name, "pre", list(grad_output)))
        if scale is not None:
            return tuple(None if g is None else g * scale for g in grad_output)
    return hook


def _hook_all(T, modules, log, live_kw, scale=None):
    for name, m in modules:
        m.register_full_backward_pre_hook(_pre_recorder(log, name, scale), **live_kw)
        m.register_full_backward_hook(_recorder(log, name, scale), **live_kw)


def _grads(params):
    return [p.grad for p in params]


def _tuple_module(T):
    class TwoHeads(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = T.nn.Linear(4, 6)

        def forward(self, x, scale=1.0):
            a, b = self.lin(x).chunk(2, dim=-1)
            return a * scale, b.tanh(), "meta"
    return TwoHeads()


def _two_input_module(T):
    class Mix(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = T.nn.Linear(3, 3)

        def forward(self, x, y, flag, z=None):
            out = self.lin(x) * y + x.sum()
            return out if z is None else out + z
    return Mix()


PROGRAMS = {}


def program(fn):
    PROGRAMS[fn.__name__] = fn
    return fn


@program
def linear(T, live_kw, scale):
    m = _init(T, T.nn.Linear(3, 2))
    log = []
    _hook_all(T, [("lin", m)], log, live_kw, scale)
    x = _randn(T, 4, 3, requires_grad=True)
    (m(x) ** 2).sum().backward()
    return log, x.grad, _grads(m.parameters())


@program
def conv(T, live_kw, scale):
    m = _init(T, T.nn.Conv2d(2, 3, 3, padding=1))
    log = []
    _hook_all(T, [("conv", m)], log, live_kw, scale)
    x = _randn(T, 1, 2, 5, 5, requires_grad=True)
    m(x).pow(2).mean().backward()
    return log, x.grad, _grads(m.parameters())


@program
def mlp_every_layer(T, live_kw, scale):
    m = _init(T, T.nn.Sequential(T.nn.Linear(3, 5), T.nn.Tanh(), T.nn.Linear(5, 4), T.nn.Sigmoid(),
                                  T.nn.Linear(4, 1)))
    log = []
    _hook_all(T, [("seq", m)] + [(str(i), layer) for i, layer in enumerate(m)], log, live_kw, scale)
    x = _randn(T, 6, 3, requires_grad=True)
    m(x).sum().backward()
    return log, x.grad, _grads(m.parameters())


@program
def tuple_outputs_and_kwargs(T, live_kw, scale):
    m = _init(T, _tuple_module(T))
    log = []
    _hook_all(T, [("heads", m), ("lin", m.lin)], log, live_kw, scale)
    x = _randn(T, 2, 4, requires_grad=True)
    a, b, meta = m(x, scale=3.0)
    (a.sum() * 2 + (b * b).sum()).backward()
    return log, x.grad, _grads(m.parameters()), meta


@program
def unused_output_gets_zeros(T, live_kw, scale):
    m = _init(T, _tuple_module(T))
    log = []
    _hook_all(T, [("heads", m)], log, live_kw, scale)
    x = _randn(T, 2, 4, requires_grad=True)
    a, b, _ = m(x)
    a.sum().backward()
    return log, x.grad


@program
def several_calls_in_one_forward(T, live_kw, scale):
    m = _init(T, T.nn.Linear(3, 3))
    log = []
    _hook_all(T, [("lin", m)], log, live_kw, scale)
    x = _randn(T, 2, 3, requires_grad=True)
    y = m(m(x).relu() + x)
    z = m(y * 2)
    (z.sum() + y.sum()).backward()
    return log, x.grad, _grads(m.parameters())


@program
def inputs_without_grad_and_non_tensors(T, live_kw, scale):
    m = _init(T, _two_input_module(T))
    log = []
    _hook_all(T, [("mix", m)], log, live_kw, scale)
    x = _randn(T, 2, 3, requires_grad=True)
    y = _randn(T, 2, 3)  # needs no grad: a zero gradient in grad_input
    z = _randn(T, 2, 3, requires_grad=True)
    m(x, y, "flag", z=z).sum().backward()
    return log, x.grad, z.grad


@program
def the_same_tensor_twice(T, live_kw, scale):
    m = _init(T, _two_input_module(T))
    log = []
    _hook_all(T, [("mix", m)], log, live_kw, scale)
    x = _randn(T, 2, 3, requires_grad=True)
    m(x, x, None).sum().backward()
    return log, x.grad


@program
def no_input_requires_grad(T, live_kw, scale):
    m = _init(T, T.nn.Linear(3, 2))
    log = []
    _hook_all(T, [("lin", m)], log, live_kw, None)

    def run():
        m(_randn(T, 2, 3)).sum().backward()
    return warns(run), log, _grads(m.parameters())


@program
def no_output_requires_grad(T, live_kw, scale):
    m = _init(T, T.nn.Linear(3, 2))
    log = []
    _hook_all(T, [("lin", m)], log, live_kw, scale)
    with T.no_grad():
        out = m(_randn(T, 2, 3))
    return log, out.requires_grad


@program
def passthrough_and_nested(T, live_kw, scale):
    inner = _init(T, T.nn.Linear(3, 3))
    outer = T.nn.Sequential(T.nn.Identity(), inner, T.nn.Identity())
    log = []
    _hook_all(T, [("outer", outer), ("id0", outer[0]), ("inner", inner), ("id2", outer[2])], log, live_kw, scale)
    x = _randn(T, 2, 3, requires_grad=True)
    y = outer(x)
    (y * x).sum().backward()
    return log, x.grad


@program
def input_used_outside_too(T, live_kw, scale):
    m = _init(T, T.nn.Linear(3, 3))
    log = []
    _hook_all(T, [("lin", m)], log, live_kw, scale)
    x = _randn(T, 2, 3, requires_grad=True)
    h = x * 2
    out = m(h) + h.exp()     # h reaches the loss around the module too: not part of grad_input
    out.sum().backward()
    return log, x.grad


@program
def partial_backward_inputs(T, live_kw, scale):
    m = _init(T, T.nn.Sequential(T.nn.Linear(3, 3), T.nn.Linear(3, 1)))
    log = []
    _hook_all(T, [("0", m[0]), ("1", m[1])], log, live_kw, scale)
    x = _randn(T, 2, 3, requires_grad=True)
    out = m(x).sum()
    (gw,) = T.autograd.grad(out, [m[1].weight])
    return log, gw


@program
def global_hooks(T, live_kw, scale):
    log = []
    reg = T.nn.modules.module
    handles = [reg.register_module_full_backward_pre_hook(_pre_recorder(log, "g", scale), **live_kw),
               reg.register_module_full_backward_hook(_recorder(log, "g", scale), **live_kw)]
    try:
        m = _init(T, T.nn.Sequential(T.nn.Linear(2, 3), T.nn.ReLU(), T.nn.Linear(3, 1)))
        x = _randn(T, 4, 2, requires_grad=True)
        m(x).sum().backward()
        return log, x.grad, _grads(m.parameters())
    finally:
        for h in handles:
            h.remove()


@program
def twice_with_retain_graph(T, live_kw, scale):
    m = _init(T, T.nn.Sequential(T.nn.Linear(3, 3), T.nn.Tanh()))
    log = []
    _hook_all(T, [("seq", m), ("0", m[0])], log, live_kw, scale)
    x = _randn(T, 2, 3, requires_grad=True)
    out = m(x).sum()
    out.backward(retain_graph=True)
    out.backward()
    return log, x.grad


@program
def double_backward(T, live_kw, scale):
    m = _init(T, T.nn.Linear(3, 3))
    log = []
    _hook_all(T, [("lin", m)], log, live_kw, scale)
    x = _randn(T, 2, 3, requires_grad=True)
    y = (m(x) ** 3).sum()
    (gx,) = T.autograd.grad(y, x, create_graph=True)
    gx.sum().backward()
    return log, gx, x.grad, m.weight.grad


@program
def output_is_a_view_of_the_input(T, live_kw, scale):
    class Reshape(T.nn.Module):
        def forward(self, x):
            return x.view(-1), x.t()
    m = Reshape()
    log = []
    _hook_all(T, [("reshape", m)], log, live_kw, scale)
    x = _randn(T, 2, 3, requires_grad=True)
    a, b = m(x * 1)
    (a * 2).sum().backward(retain_graph=True)
    (b ** 2).sum().backward()
    return log, x.grad


@program
def recurrent_tuple_outputs(T, live_kw, scale):
    gru = _init(T, T.nn.GRU(3, 4, batch_first=True))
    lstm = _init(T, T.nn.LSTM(4, 2, batch_first=True), seed=1)
    log = []
    _hook_all(T, [("gru", gru), ("lstm", lstm)], log, live_kw, scale)
    x = _randn(T, 2, 5, 3, requires_grad=True)
    out, h = gru(x)
    out2, (h2, c2) = lstm(out)
    (out2.sum() + h.pow(2).sum()).backward()
    return log, x.grad, _grads(gru.parameters()) + _grads(lstm.parameters())


@pytest.mark.parametrize("scale", [None, 0.5])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
@differential
def test_live_hooks_see_what_torch_default_hooks_see(T, name, scale):
    return PROGRAMS[name](T, _live(T), scale)


@pytest.mark.parametrize("scale", [None, 0.5])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_live_and_default_mode_agree_on_hookgrad(name, scale):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        live = normalize(PROGRAMS[name](hookgrad, {"live": True}, scale))
        default = normalize(PROGRAMS[name](hookgrad, {}, scale))
    assert_same(live, default)


@differential
def test_mixed_live_and_default_hooks_on_one_module_keep_registration_order(T):
    m = T.nn.Linear(2, 2)
    log = []
    m.register_full_backward_hook(lambda *a: log.append("default 1"))
    m.register_full_backward_hook(lambda *a: log.append("live"), **_live(T))
    m.register_full_backward_hook(lambda *a: log.append("default 2"))
    m.register_full_backward_hook(lambda *a: log.append("live first"), prepend=True, **_live(T))
    m(T.ones(1, 2, requires_grad=True)).sum().backward()
    return log


# ---- what only live mode allows ---------------------------------------------------------------------
def _inplace_after_hooked_layer(T, live):
    """Linear -> ReLU(inplace) -> Linear -> ReLU(inplace): on torch the grad_output of each Linear
    comes from a tensor hook on its output (taken before the in-place change); on hookgrad from
    live module hooks."""
    net = _init(T, T.nn.Sequential(T.nn.Linear(3, 4), T.nn.ReLU(inplace=True), T.nn.Linear(4, 2),
                                    T.nn.ReLU(inplace=True)))
    log = []
    if live:
        for i in (0, 2):
            net[i].register_full_backward_hook(
                lambda m, gi, go, i=i: log.append((i, go[0], gi[0])), live=True)
    else:
        for i in (0, 2):
            def grab(m, args, out, i=i):
                out.register_hook(lambda g: log.append((i, g)))
            net[i].register_forward_hook(grab)
    x = _randn(T, 5, 3, requires_grad=True)
    net(x).sum().backward()
    return log, x.grad, _grads(net.parameters())


def test_inplace_activation_after_a_live_hooked_layer_matches_torch():
    import torch
    tlog, tx, tparams = _inplace_after_hooked_layer(torch, live=False)
    hlog, hx, hparams = _inplace_after_hooked_layer(hookgrad, live=True)
    assert [entry[0] for entry in hlog] == [entry[0] for entry in tlog] == [2, 0]
    assert_same(normalize([e[1] for e in hlog]), normalize([e[1] for e in tlog]))
    assert_same(normalize([hx, hparams]), normalize([tx, tparams]))
    # grad_input of the second Linear, through the ReLU's mask, is the first one's grad_output
    mask = (hlog[1][1] != 0)
    assert_same(normalize(hlog[0][2] * mask), normalize(hlog[1][1]))


def test_inplace_with_default_hooks_still_raises_as_torch():
    m = hookgrad.nn.Sequential(hookgrad.nn.Linear(3, 4), hookgrad.nn.ReLU(inplace=True))
    m[0].register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        m(hookgrad.randn(2, 3, requires_grad=True))


@differential
def test_hooked_module_that_changes_its_input_in_place(T):
    """The hooked module is itself ReLU(inplace=True) after a Linear; torch reference: no module
    hook, the gradients at the input and output edges come from tensor hooks."""
    lin, relu = _init(T, T.nn.Linear(3, 4)), T.nn.ReLU(inplace=True)
    log = []
    x = _randn(T, 5, 3, requires_grad=True)
    h = lin(x)
    if T is hookgrad:
        relu.register_full_backward_hook(lambda m, gi, go: log.append(("in", gi[0], "out", go[0])), live=True)
        y = relu(h)
    else:
        grads = {}
        h.register_hook(lambda g: grads.__setitem__("in", g))
        y = relu(h)
        y.register_hook(lambda g: grads.__setitem__("out", g))
    (y * T.arange(20.0).reshape(5, 4)).sum().backward()
    if T is not hookgrad:
        log.append(("in", grads["in"], "out", grads["out"]))
    return log, x.grad, lin.weight.grad


def test_removing_a_live_hook_between_forward_and_backward_stops_it():
    m = hookgrad.nn.Linear(2, 2)
    log = []
    keep = m.register_full_backward_hook(lambda *a: log.append("kept"), live=True)
    gone = m.register_full_backward_hook(lambda *a: log.append("removed"), live=True)
    pre_gone = m.register_full_backward_pre_hook(lambda *a: log.append("pre removed"), live=True)
    default = m.register_full_backward_hook(lambda *a: log.append("default"))
    out = m(hookgrad.ones(1, 2, requires_grad=True))
    gone.remove()
    pre_gone.remove()
    default.remove()  # default hooks were captured at forward, as in torch: it still runs
    out.sum().backward()
    assert log == ["kept", "default"]
    keep.remove()


def test_live_hook_registered_after_forward_runs_when_the_call_was_live():
    m = hookgrad.nn.Linear(2, 2)
    log = []
    m.register_full_backward_pre_hook(lambda *a: log.append("pre"), live=True)
    out = m(hookgrad.ones(1, 2, requires_grad=True))
    m.register_full_backward_hook(lambda *a: log.append("late"), live=True)
    out.sum().backward()
    assert log == ["pre", "late"]


def test_live_hook_on_a_removed_global():
    log = []
    handle = hookgrad.nn.modules.module.register_module_full_backward_hook(
        lambda m, gi, go: log.append(type(m).__name__), live=True)
    try:
        net = hookgrad.nn.Sequential(hookgrad.nn.Linear(2, 2), hookgrad.nn.ReLU(inplace=True))
        out = net(hookgrad.ones(1, 2, requires_grad=True))
        handle.remove()
        out.sum().backward()
        assert log == []
    finally:
        handle.remove()


# ---- errors ----------------------------------------------------------------------------------------
def test_live_mixed_with_legacy_hooks_raises_naming_module_and_hook():
    m = hookgrad.nn.Linear(2, 2)

    def legacy_hook(*a):
        return None

    def live_hook(*a):
        return None
    m.register_backward_hook(legacy_hook)
    with pytest.raises(RuntimeError, match=r"Cannot use both regular backward hooks and full backward hooks.*"
                                           r"module Linear, hook .*live_hook"):
        m.register_full_backward_pre_hook(live_hook, live=True)
    with pytest.raises(RuntimeError, match=r"module Linear, hook .*live_hook"):
        m.register_full_backward_hook(live_hook, live=True)
    other = hookgrad.nn.Conv1d(1, 1, 1)
    other.register_full_backward_pre_hook(live_hook, live=True)
    with pytest.raises(RuntimeError, match=r"module Conv1d, hook .*legacy_hook"):
        other.register_backward_hook(legacy_hook)
    # the registries stay usable
    assert len(m._backward_hooks) == 1 and len(other._backward_pre_hooks) == 1
    assert other._is_full_backward_hook is None


def test_global_live_mixed_with_global_legacy_raises(monkeypatch):
    reg = hookgrad.nn.modules.module
    monkeypatch.setattr(reg, "_global_is_full_backward_hook", None)  # as in a fresh process
    live = reg.register_module_full_backward_pre_hook(lambda *a: None, live=True)
    try:
        with pytest.raises(RuntimeError, match="global module hooks"):
            reg.register_module_backward_hook(lambda *a: None)
        assert reg._global_is_full_backward_hook is None
    finally:
        live.remove()


@pytest.mark.parametrize("register", ["register_full_backward_hook", "register_full_backward_pre_hook"])
def test_live_hook_must_be_callable(register):
    m = hookgrad.nn.Linear(2, 2)
    with pytest.raises(TypeError, match=f"{register}: the hook must be callable.*module Linear"):
        getattr(m, register)(42, live=True)
    assert not m._backward_hooks and not m._backward_pre_hooks


def test_the_hook_error_names_module_and_hook_in_live_mode():
    m = hookgrad.nn.Linear(2, 2)

    def wrong_length(module, grad_input, grad_output):
        return (None, None)
    m.register_full_backward_hook(wrong_length, live=True)
    out = m(hookgrad.ones(1, 2, requires_grad=True))
    with pytest.raises(RuntimeError, match="invalid number of grad_input.*module Linear, hook .*wrong_length"):
        out.sum().backward()


# ---- a property: random networks with in-place activations ---------------------------------------
@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.sampled_from(["relu_", "sigmoid", "none", "tanh_"])),
                min_size=1, max_size=4),
       st.integers(0, 2 ** 16))
def test_property_live_grad_output_is_the_gradient_at_the_module_output(layers, seed):
    """For random Linear stacks followed by (possibly in-place) activations, the live hooks'
    grad_output / grad_input equal the gradients torch computes at each layer's output / input
    (taken by tensor hooks on a hook-free torch network), and the parameter gradients agree."""
    import torch

    def build(T):
        mods, width = [], 3
        for out_width, act in layers:
            mods.append((_init(T, T.nn.Linear(width, out_width), seed), act))
            width = out_width
        return mods

    def run(T, live):
        mods = build(T)
        seen = {}
        x = _randn(T, 2, 3, requires_grad=True, seed=seed)
        h = x
        for i, (lin, act) in enumerate(mods):
            if live:
                lin.register_full_backward_hook(
                    lambda m, gi, go, i=i: seen.__setitem__(i, (gi[0], go[0])), live=True)
                h = lin(h)
            else:
                record = seen[i] = [None, None]
                h.register_hook(lambda g, r=record: r.__setitem__(0, g))
                h = lin(h)
                h.register_hook(lambda g, r=record: r.__setitem__(1, g))
            if act == "relu_":
                h.relu_()
            elif act == "tanh_":
                h.tanh_()
            elif act == "sigmoid":
                h = h.sigmoid()
        (h * h).sum().backward()
        return ([tuple(seen[i]) for i in range(len(mods))], x.grad,
                [p.grad for lin, _ in mods for p in lin.parameters()])

    want = normalize(run(torch, live=False))
    got = normalize(run(hookgrad, live=True))
    # float32 through up to four layers: the two libraries sum in different orders
    assert_same(got, want, rtol=1e-4, atol=1e-5)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["linear", "tanh", "residual", "pair"]), st.booleans(),
                          st.sampled_from([None, 0.5, 2.0])), min_size=1, max_size=5),
       st.integers(0, 1000))
def test_property_random_stacks_live_against_torch_default(layers, seed):
    """Random stacks (Linear, Tanh, a residual block, a module returning a pair) with hooks on a
    random subset, some returning scaled gradients: live on hookgrad sees and leaves what default
    hooks do on torch."""
    import torch

    def build(T):
        class Residual(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = T.nn.Linear(3, 3)

            def forward(self, x):
                return x + self.lin(x).tanh()

        class Pair(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = T.nn.Linear(3, 6)

            def forward(self, x):
                a, b = self.lin(x).chunk(2, dim=-1)
                return a, b * b

        class Merge(T.nn.Module):
            def forward(self, pair):
                return pair[0] - pair[1] if isinstance(pair, tuple) else pair

        mods = []
        for kind, _, _ in layers:
            mods.append({"linear": lambda: T.nn.Linear(3, 3), "tanh": T.nn.Tanh, "residual": Residual,
                         "pair": Pair}[kind]())
            if kind == "pair":
                mods.append(Merge())
        return _init(T, T.nn.Sequential(*mods), seed).double()

    def run(T):
        net = build(T)
        log = []
        hooked = iter(layers)
        for module in net:
            if type(module).__name__ == "Merge":
                continue
            _, hook, scale = next(hooked)
            if hook:
                _hook_all(T, [(type(module).__name__, module)], log, _live(T), scale)
        x = _randn(T, 2, 3, seed=seed).double().requires_grad_()
        (net(x) ** 2).sum().backward()
        return log, x.grad, _grads(net.parameters())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # float64: deep random stacks with scaled gradients cancel enough to amplify float32's
        # summation-order differences past any fixed tolerance
        assert_same(normalize(run(hookgrad)), normalize(run(torch)), rtol=1e-9, atol=1e-10)
