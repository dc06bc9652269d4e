"""Differential module-hook scenarios on the library's own layers (Linear, Conv2d, ReLU, ...),
with deterministic weights."""
from __future__ import annotations

from difftest import catch, differential, warns
from test_module_fixtures import clean_globals, shapes


def fill(T, model):
    """Deterministic parameters: a fixed ramp per tensor."""
    with T.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(T.linspace(-0.5, 0.5, p.numel()).reshape(p.shape) * (1 + 0.1 * i))
    return model


def mlp(T, inplace=False):
    return fill(T, T.nn.Sequential(T.nn.Linear(4, 5), T.nn.ReLU(inplace=inplace), T.nn.Linear(5, 3)))


def x_in(T, *shape):
    shape = shape or (2, 4)
    n = 1
    for s in shape:
        n *= s
    return T.linspace(-1.0, 1.0, n).reshape(*shape).requires_grad_()


@differential
def test_linear_full_hooks_args(T):
    log = []
    model = mlp(T)
    for name, m in model.named_modules():
        m.register_full_backward_hook(lambda mod, gi, go, name=name: log.append((name, gi, go)))
        m.register_full_backward_pre_hook(lambda mod, go, name=name: log.append(("pre", name, go)))
    x = x_in(T)
    model(x).sum().backward()
    return log, x.grad


@differential
def test_inplace_relu_after_hooked_linear_raises(T):
    model = mlp(T, inplace=True)
    model[0].register_full_backward_hook(lambda m, gi, go: None)
    return catch(model, x_in(T))


@differential
def test_inplace_relu_without_hooks_fine(T):
    model = mlp(T, inplace=True)
    x = x_in(T)
    model(x).sum().backward()
    return x.grad


@differential
def test_forward_hooks_capture_activations(T):
    acts = {}
    model = mlp(T)
    for name, m in model.named_children():
        m.register_forward_hook(lambda mod, a, o, name=name: acts.__setitem__(name, o.detach()))
    model(x_in(T))
    return acts


@differential
def test_linear_input_without_grad_warns(T):
    log = []
    lin = fill(T, T.nn.Linear(4, 2))
    lin.register_full_backward_hook(lambda m, gi, go: log.append((gi, go)))
    x = x_in(T).detach()
    out = lin(x).sum()
    return warns(out.backward), log, lin.weight.grad


@differential
def test_global_gradient_scaling_by_layer_type(T):
    model = mlp(T)
    x = x_in(T)
    with clean_globals(T) as mm:
        mm.register_module_full_backward_hook(
            lambda m, gi, go: tuple(None if g is None else g * (0.5 if isinstance(m, T.nn.Linear) else 1.0)
                                    for g in gi))
        model(x).sum().backward()
    return x.grad, [p.grad for p in model.parameters()]


@differential(rtol=1e-4, atol=1e-5)
def test_conv_hooks(T):
    log = []
    conv = fill(T, T.nn.Conv2d(2, 3, 2, stride=2))
    conv.register_forward_hook(lambda m, a, o: log.append(("fwd", tuple(o.shape))))
    conv.register_full_backward_hook(lambda m, gi, go: log.append(("bw", shapes(gi), shapes(go), gi[0])))
    x = x_in(T, 1, 2, 4, 4)
    conv(x).relu().sum().backward()
    return log, x.grad, conv.weight.grad


@differential
def test_linear_legacy_hook(T):
    log = []
    lin = fill(T, T.nn.Linear(4, 2))
    lin.register_backward_hook(lambda m, gi, go: log.append((shapes(gi), shapes(go))))
    x = x_in(T)
    res = warns(lambda: lin(x).sum().backward())
    return res, log, x.grad


@differential
def test_state_dict_roundtrip_with_layers(T):
    a = mlp(T)
    b = T.nn.Sequential(T.nn.Linear(4, 5), T.nn.ReLU(), T.nn.Linear(5, 3))
    res = b.load_state_dict(a.state_dict())
    return repr(res), list(b.state_dict()), [p for p in b.parameters()]


@differential
def test_layer_reprs(T):
    model = T.nn.Sequential(T.nn.Linear(4, 5), T.nn.ReLU(), T.nn.ModuleList([T.nn.Linear(5, 5)] * 3))
    return repr(model)


@differential
def test_parameter_registration_hook_sees_linear(T):
    log = []
    with clean_globals(T) as mm:
        mm.register_module_parameter_registration_hook(lambda m, n, p: log.append((type(m).__name__, n,
                                                                                    tuple(p.shape))))
        T.nn.Linear(3, 2)
        T.nn.Linear(3, 2, bias=False)
    return log


@differential
def test_spectral_norm_power_iteration_assigns_its_buffers(T):
    """torch's spectral norm assigns its power-iteration vectors back to the module after each
    update: every assignment runs the global buffer registration hooks (at registration, in the
    consistency check, and in each training-mode forward), none in evaluation mode."""
    log = []
    mm = T.nn.modules.module
    handle = mm.register_module_buffer_registration_hook(
        lambda module, name, value: log.append((type(module).__name__, name, tuple(value.shape))))
    try:
        T.manual_seed(0)
        layer = T.nn.utils.parametrizations.spectral_norm(T.nn.Linear(3, 2).double())
        log.append("forward")
        y = layer(T.ones(1, 3, dtype=T.float64))
        layer.eval()
        log.append("eval forward")
        layer(T.ones(1, 3, dtype=T.float64))
    finally:
        handle.remove()
    return log, y, layer.parametrizations.weight[0]._u


@differential
def test_a_module_registration_hook_replacing_the_parametrizations_dict(T):
    """A global module registration hook that hands back another module for every registration
    replaces register_parametrization's ModuleDict: torch's check refuses it (AssertionError)."""
    mm = T.nn.modules.module
    seen = []

    def replace(module, name, value):
        seen.append((type(module).__name__, name, type(value).__name__))
        return T.nn.Tanh()
    handle = mm.register_module_module_registration_hook(replace)
    try:
        layer = T.nn.Linear(3, 3).double()
        result = catch(lambda: T.nn.utils.parametrizations.spectral_norm(layer))
    finally:
        handle.remove()
    return seen, result
