"""nn.utils.parametrize, nn.utils.parametrizations (weight_norm, spectral_norm, orthogonal) and the
legacy hook-based weight_norm / spectral_norm, against torch: values and gradients through SGD steps
(float64), state_dict keys and values, class swap, hooks, removal, errors."""
import copy
import pickle

import numpy as np
import pytest

from difftest import catch, differential, warns

X = np.linspace(-1.0, 1.0, 8).reshape(2, 4)


def linear(T, n_in=4, n_out=3):
    m = T.nn.Linear(n_in, n_out).double()
    with T.no_grad():
        m.weight.copy_(T.tensor(np.cos(np.arange(n_in * n_out)).reshape(n_out, n_in)))
        m.bias.fill_(0.1)
    return m


def train(T, module, steps=3, power=2, x=X):
    opt = T.optim.SGD(module.parameters(), lr=0.1)
    x = T.tensor(x)
    for _ in range(steps):
        opt.zero_grad()
        (module(x) ** power).sum().backward()
        opt.step()
    return [(n, p, p.grad) for n, p in module.named_parameters()]


def parametrizations(T):
    class Scale(T.nn.Module):
        def forward(self, X):
            return 2 * X

        def right_inverse(self, X):
            return X / 2

    class Symmetric(T.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

    class Split(T.nn.Module):  # two originals
        def forward(self, a, b):
            return a + b

        def right_inverse(self, X):
            return X * 0.25, X * 0.75

    class Widen(T.nn.Module):  # changes the shape: needs unsafe=True
        def forward(self, X):
            return T.cat([X, X], 0)

    class NotATensor(T.nn.Module):
        def forward(self, X):
            return 3

    return Scale, Symmetric, Split, Widen, NotATensor


@differential(rtol=1e-7, atol=1e-9)
def test_register_chain_assign_train_remove(T):
    Scale, Symmetric, *_ = parametrizations(T)
    P = T.nn.utils.parametrize
    m = linear(T)
    out = {"plain": (P.is_parametrized(m), P.type_before_parametrizations(m).__name__)}
    P.register_parametrization(m, "weight", Scale())
    out["class"] = (type(m).__name__, type(m).__bases__[0].__name__, P.type_before_parametrizations(m).__name__)
    out["keys"] = list(m.state_dict())
    out["params"] = [n for n, _ in m.named_parameters()]
    out["value"] = m.weight
    P.register_parametrization(m, "weight", Scale())
    out["chain"] = (m.weight, m.parametrizations.weight.original, len(m.parametrizations.weight))
    out["repr"] = repr(m)
    m.weight = T.ones(3, 4, dtype=T.float64)
    out["assigned"] = (m.weight, m.parametrizations.weight.original)
    out["trained"] = train(T, m)
    out["is"] = (P.is_parametrized(m), P.is_parametrized(m, "weight"), P.is_parametrized(m, "bias"))
    with P.cached():
        out["cached"] = m.weight is m.weight
        with P.cached():
            pass
        out["cached_after_inner"] = m.weight is m.weight
    out["uncached"] = m.weight is m.weight
    original = m.parametrizations.weight.original
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    out["removed"] = (type(m).__name__, list(m.state_dict()), m.weight, m.weight is original,
                      hasattr(m, "parametrizations"))
    return out


@pytest.mark.parametrize("leave", [True, False])
@differential(rtol=1e-7, atol=1e-9)
def test_remove_leave_parametrized(T, leave):
    Scale, Symmetric, Split, *_ = parametrizations(T)
    P = T.nn.utils.parametrize
    m = linear(T, 3, 3)
    P.register_parametrization(m, "weight", Symmetric())
    P.register_parametrization(m, "bias", Scale())
    weight = m.parametrizations.weight.original
    P.remove_parametrizations(m, "weight", leave_parametrized=leave)
    out = [type(m).__name__, m.weight, m.weight is weight, list(m.state_dict())]
    P.remove_parametrizations(m, "bias", leave_parametrized=leave)
    out += [type(m).__name__, m.bias, list(m.state_dict())]
    s = linear(T, 3, 3)
    P.register_parametrization(s, "weight", Split())
    out += [list(s.state_dict()), s.weight, catch(lambda: P.remove_parametrizations(s, "weight", leave_parametrized=leave) is s)]
    out += [type(s).__name__, list(s.state_dict()), s.weight]
    out += [catch(lambda: P.remove_parametrizations(s, "weight") is s)]
    return out


@differential(rtol=1e-7, atol=1e-9)
def test_several_originals_train(T):
    _, _, Split, *_ = parametrizations(T)
    P = T.nn.utils.parametrize
    m = linear(T)
    P.register_parametrization(m, "weight", Split())
    out = [list(m.state_dict().items()), train(T, m)]
    m.weight = T.full((3, 4), 4.0, dtype=T.float64)
    out.append((m.parametrizations.weight.original0, m.parametrizations.weight.original1))
    return out


@differential
def test_errors_leave_module_usable(T):
    Scale, Symmetric, Split, Widen, NotATensor = parametrizations(T)
    P = T.nn.utils.parametrize
    m = linear(T)
    out = [catch(P.register_parametrization, m, "nothing", Scale()),
           catch(P.register_parametrization, m, "weight", Widen()),
           catch(P.register_parametrization, m, "weight", NotATensor()),
           type(m).__name__, list(m.state_dict())]
    P.register_parametrization(m, "weight", Widen(), unsafe=True)
    out += [m.weight.shape, m.parametrizations.weight.unsafe]
    P.register_parametrization(m, "weight", Scale())
    out += [m.weight.shape, m.parametrizations.weight.unsafe, catch(setattr, m, "weight", T.zeros(6, 4))]
    n = linear(T)
    P.register_parametrization(n, "weight", Symmetric() if False else Scale())
    out += [catch(P.register_parametrization, n, "weight", Widen()), len(n.parametrizations.weight),
            catch(P.remove_parametrizations, n, "bias"), catch(pickle.dumps, n)]
    c = copy.deepcopy(n)
    out += [type(c).__name__, c.weight, c.weight is not n.weight]
    with pytest.raises(ValueError):
        T.nn.utils.parametrize.ParametrizationList([], T.zeros(2))
    return out


@differential(rtol=1e-7, atol=1e-9)
def test_transfer_parametrizations_and_params(T):
    Scale, *_ = parametrizations(T)
    P = T.nn.utils.parametrize
    src, dst = linear(T), linear(T)
    with T.no_grad():
        dst.weight.mul_(3)
    P.register_parametrization(src, "weight", Scale())
    P.transfer_parametrizations_and_params(src, dst)
    return (type(dst).__name__, list(dst.state_dict().items()),
            dst.parametrizations.weight.original is src.parametrizations.weight.original, dst.weight)


@pytest.mark.parametrize("dim", [0, 1, None, -1])
@differential(rtol=1e-7, atol=1e-9)
def test_weight_norm_parametrization(T, dim):
    m = linear(T)
    T.nn.utils.parametrizations.weight_norm(m, dim=dim)
    out = [type(m).__name__, [(k, v.clone()) for k, v in m.state_dict().items()], m.weight]
    out += [train(T, m), m.weight]
    return out


@differential(rtol=1e-7, atol=1e-9)
def test_weight_norm_loads_legacy_state_dict(T):
    import warnings
    old = linear(T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        T.nn.utils.weight_norm(old)
    with T.no_grad():
        old.weight_g.mul_(2)
    new = linear(T, 4, 3)
    T.nn.utils.parametrizations.weight_norm(new)
    result = new.load_state_dict(old.state_dict())
    return list(result.missing_keys), list(result.unexpected_keys), new.weight, list(new.state_dict())


def set_power_vectors(T, u_buffer, v_buffer):
    with T.no_grad():
        u_buffer.copy_(T.tensor(np.linspace(0.2, 1.0, u_buffer.numel())))
        v_buffer.copy_(T.tensor(np.linspace(1.0, -0.5, v_buffer.numel())))


@pytest.mark.parametrize("kind", ["linear", "conv", "convT"])
@differential(rtol=1e-7, atol=1e-9)
def test_spectral_norm_parametrization(T, kind):
    if kind == "linear":
        m, x = linear(T), X
    else:
        cls = T.nn.Conv1d if kind == "conv" else T.nn.ConvTranspose1d
        m = cls(2, 3, 2).double()
        with T.no_grad():
            m.weight.copy_(T.tensor(np.sin(np.arange(12.0)).reshape(m.weight.shape)))
            m.bias.fill_(0.1)
        x = np.cos(np.arange(10.0)).reshape(1, 2, 5)
    T.nn.utils.parametrizations.spectral_norm(m, n_power_iterations=2)
    sn = m.parametrizations.weight[0]
    set_power_vectors(T, sn._u, sn._v)
    out = [type(m).__name__, list(m.state_dict()), sn.dim, train(T, m, x=x), sn._u, sn._v]
    m.eval()
    out.append(m.weight)
    return out


@differential
def test_spectral_norm_parametrization_errors(T):
    P = T.nn.utils.parametrizations
    return [catch(P.spectral_norm, linear(T), n_power_iterations=0), catch(P.spectral_norm, linear(T), dim=2),
            catch(P.spectral_norm, linear(T), name="nope"), catch(P.weight_norm, linear(T), dim=5),
            catch(P.orthogonal, linear(T), name="bias"), catch(P.orthogonal, linear(T), orthogonal_map="qr"),
            catch(P.orthogonal, linear(T), name="nope")]


BASES = {n: np.linalg.qr(np.cos(np.arange(n * n) + 1.0).reshape(n, n))[0] for n in (3, 4)}


@pytest.mark.parametrize("shape,orthogonal_map", [((3, 3), None), ((3, 3), "cayley"), ((3, 3), "householder"),
                                                  ((3, 3), "matrix_exp"), ((4, 2), None), ((2, 4), None),
                                                  ((4, 2), "cayley"), ((2, 4), "matrix_exp")])
@differential(rtol=1e-7, atol=1e-9)
def test_orthogonal(T, shape, orthogonal_map):
    m = linear(T, shape[1], shape[0])
    T.nn.utils.parametrizations.orthogonal(m, orthogonal_map=orthogonal_map)
    orth = m.parametrizations.weight[0]
    if shape[0] != shape[1]:  # the base's extra columns are random: give both the same
        with T.no_grad():
            orth.base = T.tensor(BASES[max(shape)])
    out = [orth.orthogonal_map.name, m.weight, list(m.state_dict())]
    out += [train(T, m, power=3, x=np.linspace(-1, 1, 2 * shape[1]).reshape(2, shape[1]))]
    w = m.weight
    out.append(T.allclose(w.mT @ w if shape[0] >= shape[1] else w @ w.mT, T.eye(min(shape), dtype=T.float64)))
    m.weight = T.tensor(np.linalg.qr(np.sin(np.arange(9.0)).reshape(3, 3))[0])[:shape[0], :shape[1]] \
        if shape == (3, 3) else w.detach()
    out.append(m.weight)
    return out


@differential(rtol=1e-7, atol=1e-9)
def test_orthogonal_without_trivialization(T):
    m = linear(T, 3, 3)
    T.nn.utils.parametrizations.orthogonal(m, orthogonal_map="cayley", use_trivialization=False)
    return [m.weight, list(m.state_dict()), train(T, m, power=3, x=np.ones((2, 3))), catch(setattr, m, "weight", m.weight.detach())]


def legacy_weight_norm(T, dim):
    import warnings
    m = linear(T)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        T.nn.utils.weight_norm(m, dim=dim)
    return m, sorted({w.category.__name__ for w in caught})


@pytest.mark.parametrize("dim", [0, 1, None])
@differential(rtol=1e-7, atol=1e-9)
def test_legacy_weight_norm(T, dim):
    m, warned = legacy_weight_norm(T, dim)
    hooks = list(m._forward_pre_hooks.values())
    out = [warned, type(m).__name__, [type(h).__name__ for h in hooks], hooks[0].name, hooks[0].dim,
           [(n, p.shape) for n, p in m.named_parameters()], list(m.state_dict()), m.weight,
           "weight" in m.__dict__, catch(T.nn.utils.weight_norm, m, dim=dim)]
    out += [train(T, m), m.weight]
    T.nn.utils.remove_weight_norm(m)
    out += [len(m._forward_pre_hooks), list(m.state_dict().items()), type(m.weight).__name__,
            catch(T.nn.utils.remove_weight_norm, m)]
    return out


@differential(rtol=1e-7, atol=1e-9)
def test_legacy_spectral_norm(T):
    m = linear(T)
    T.nn.utils.spectral_norm(m, n_power_iterations=2)
    set_power_vectors(T, m.weight_u, m.weight_v)
    hooks = list(m._forward_pre_hooks.values())
    sd = m.state_dict()
    out = [type(m).__name__, [type(h).__name__ for h in hooks], [type(h).__name__ for h in m._state_dict_hooks.values()],
           list(sd), dict(sd._metadata[""]), [(n, p.shape) for n, p in m.named_parameters()],
           catch(T.nn.utils.spectral_norm, m)]
    out += [train(T, m), m.weight, m.weight_u, m.weight_v]
    m.eval()
    out.append(m(T.tensor(X)))
    T.nn.utils.remove_spectral_norm(m)
    out += [len(m._forward_pre_hooks), len(m._state_dict_hooks), len(m._load_state_dict_pre_hooks),
            list(m.state_dict().items()), catch(T.nn.utils.remove_spectral_norm, m)]
    return out


@differential(rtol=1e-7, atol=1e-9)
def test_legacy_spectral_norm_state_dict_round_trip(T):
    a, b = linear(T), linear(T, 4, 3)
    T.nn.utils.spectral_norm(a)
    T.nn.utils.spectral_norm(b)
    set_power_vectors(T, a.weight_u, a.weight_v)
    a(T.tensor(X))
    sd = a.state_dict()
    result = b.load_state_dict(sd)
    b.eval()
    # an old-format dict (version 0: weight present, weight_v absent) is converted on load
    old = {k: v for k, v in sd.items() if k != "weight_v"}
    old["weight"] = a.weight.detach()
    c = linear(T, 4, 3)
    T.nn.utils.spectral_norm(c)
    c.load_state_dict(old, strict=False)
    c.eval()
    return list(result.missing_keys), b(T.tensor(X)), b.weight_v, c.weight_v, c(T.tensor(X))


@differential
def test_legacy_errors(T):
    import warnings
    warnings.simplefilter("ignore")
    lazy = T.nn.LazyLinear(3)
    return [catch(T.nn.utils.weight_norm, lazy), catch(T.nn.utils.spectral_norm, lazy),
            catch(T.nn.utils.spectral_norm, linear(T), n_power_iterations=0),
            catch(T.nn.utils.remove_spectral_norm, linear(T)), catch(T.nn.utils.remove_weight_norm, linear(T)),
            [n for n, _ in lazy.named_parameters()]]


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
@differential(rtol=1e-7, atol=1e-9)
def test_orthogonal_householder_without_trivialization(T, shape):
    m = linear(T, shape[1], shape[0])
    T.nn.utils.parametrizations.orthogonal(m, orthogonal_map="householder", use_trivialization=False)
    out = [m.weight, m.parametrizations.weight.original, list(m.state_dict())]
    out.append(train(T, m, power=3, x=np.linspace(-1, 1, 2 * shape[1]).reshape(2, shape[1])))
    m.weight = T.tensor(np.linalg.qr(np.sin(np.arange(16.0)).reshape(4, 4))[0][:shape[0], :shape[1]])
    return out + [m.weight, m.parametrizations.weight.original]


@differential(rtol=1e-7, atol=1e-9)
def test_parametrized_state_dict_round_trip(T):
    source, target = linear(T), linear(T, 4, 3)
    T.nn.utils.parametrizations.weight_norm(source)
    T.nn.utils.parametrizations.weight_norm(target)
    with T.no_grad():
        source.parametrizations.weight.original0.mul_(3)
    result = target.load_state_dict(source.state_dict())
    plain = linear(T)
    return (list(result.missing_keys), target.weight, catch(lambda: plain.load_state_dict(source.state_dict()) and None),
            [(k, v) for k, v in target.state_dict().items()])


def test_namespaces_resolve_under_hookgrad_run(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "s.py"
    script.write_text(
        "import torch\n"
        "import torch.nn.utils.parametrize as parametrize\n"
        "from torch.nn.utils.parametrizations import orthogonal, spectral_norm, weight_norm\n"
        "from torch.nn.utils import remove_spectral_norm, remove_weight_norm\n"
        "from torch.autograd.functional import jacobian, hvp\n"
        "from torch.func import jacfwd, jvp, linearize, stack_module_state\n"
        "m = orthogonal(torch.nn.Linear(2, 2))\n"
        "print(type(m).__name__, parametrize.__name__, jacobian.__module__, jvp.__module__)\n")
    done = subprocess.run([sys.executable, "-m", "hookgrad", "run", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # functions wear torch's identity under hookgrad run (modules keep their own names)
    assert done.stdout.split() == ["ParametrizedLinear", "hookgrad.nn.utils.parametrize",
                                   "torch.autograd.functional", "torch.func"]


@pytest.mark.parametrize("orthogonal_map", [None, "cayley", "householder"])
@differential(rtol=1e-7, atol=1e-9)
def test_orthogonal_batch_of_matrices(T, orthogonal_map):
    class Holder(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.mats = T.nn.Parameter(T.tensor(np.cos(np.arange(18.0)).reshape(2, 3, 3)))

        def forward(self, x):
            return (self.mats @ x).sum(0)

    m = Holder()
    T.nn.utils.parametrizations.orthogonal(m, "mats", orthogonal_map=orthogonal_map)
    return [type(m).__name__, m.mats, train(T, m, power=3, x=np.linspace(-1, 1, 6).reshape(3, 2)), m.mats]


@differential(rtol=1e-7, atol=1e-9)
def test_buffer_parametrization_and_conv_weight_norm(T):
    Scale, *_ = parametrizations(T)
    P = T.nn.utils.parametrize
    bn = T.nn.BatchNorm1d(3).double()
    P.register_parametrization(bn, "running_var", Scale())
    out = [type(bn).__name__, list(bn.state_dict()), bn.running_var, [n for n, _ in bn.named_buffers()]]
    conv = T.nn.Conv1d(2, 3, 2).double()
    legacy = T.nn.Conv1d(2, 3, 2).double()
    for c in (conv, legacy):
        with T.no_grad():
            c.weight.copy_(T.tensor(np.sin(np.arange(12.0)).reshape(3, 2, 2)))
            c.bias.fill_(0.1)
    T.nn.utils.parametrizations.weight_norm(conv)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        T.nn.utils.weight_norm(legacy, dim=1)
    x = np.cos(np.arange(10.0)).reshape(1, 2, 5)
    return out + [list(conv.state_dict().items()), train(T, conv, x=x), conv.weight,
                  list(legacy.state_dict().items()), train(T, legacy, x=x), legacy.weight]
