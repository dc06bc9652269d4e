"""Optimizers against torch: many steps of every optimizer and option set, state dicts, param
groups, zero_grad and argument errors. Hook behaviour is in test_optim_hooks.py."""
import copy

import numpy as np
import pytest

from difftest import Raised, catch, differential

RNG = np.random.default_rng(1234)
INIT = [RNG.standard_normal((4, 3)).astype(np.float32), RNG.standard_normal(5).astype(np.float32)]
TARGET = [RNG.standard_normal((4, 3)).astype(np.float32), RNG.standard_normal(5).astype(np.float32)]
GRADS = [[RNG.standard_normal(a.shape).astype(np.float32) for a in INIT] for _ in range(60)]

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict()),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True, amsgrad=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.05, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01, maximize=True, betas=(0.5, 0.6))),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.005, alpha=0.9, momentum=0.9)),
    ("RMSprop", dict(lr=0.005, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.005, centered=True, momentum=0.5, maximize=True)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, eps=1e-6, maximize=True)),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}" for name, kw in CONFIGS]


def make_params(T, dtype=np.float32):
    return [T.tensor(a.astype(dtype), requires_grad=True) for a in INIT]


def loss_fn(T, params):
    """A smooth non-quadratic loss so that gradients depend on the parameters."""
    w, b = params
    tw, tb = T.tensor(TARGET[0]), T.tensor(TARGET[1])
    return ((w - tw) ** 2).sum() + 0.1 * (w ** 4).sum() + ((b - tb) ** 2).mean() * 3.0


def state_record(opt):
    """The state dict as plain data: state values (tensors compared by value) and param groups."""
    sd = opt.state_dict()
    return {"state": {k: dict(v) for k, v in sd["state"].items()}, "param_groups": sd["param_groups"]}


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
@differential(rtol=2e-5, atol=2e-6)
def test_steps_with_autograd_loss(T, name, kwargs):
    params = make_params(T)
    opt = getattr(T.optim, name)(params, **kwargs)
    sign = -1.0 if kwargs.get("maximize") else 1.0  # maximize the negated loss: stays bounded
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = loss_fn(T, params) * sign
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return params, losses, state_record(opt)


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
@differential(rtol=2e-5, atol=2e-6)
def test_steps_with_given_gradients(T, name, kwargs):
    params = make_params(T)
    opt = getattr(T.optim, name)(params, **kwargs)
    history = []
    for step in range(60):
        for p, g in zip(params, GRADS[step]):
            p.grad = T.tensor(g)
        opt.step()
        if step % 20 == 0:
            history.append([p.detach().clone() for p in params])
    return params, history, state_record(opt)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
@differential(rtol=1e-10, atol=1e-12)
def test_float64_stays_float64(T, name):
    params = make_params(T, np.float64)
    opt = getattr(T.optim, name)(params, lr=0.01, **({"momentum": 0.9} if name in ("SGD", "RMSprop") else {}))
    for step in range(50):
        for p, g in zip(params, GRADS[step]):
            p.grad = T.tensor(g.astype(np.float64))
        opt.step()
    return params, state_record(opt)


@differential
def test_param_groups_and_missing_grads(T):
    a, b, c = (T.tensor(x, requires_grad=True) for x in (INIT[0], INIT[1], TARGET[1]))
    opt = T.optim.SGD([{"params": [a]}, {"params": [b, c], "lr": 0.5, "momentum": 0.9}], lr=0.1)
    for step in range(10):
        a.grad = T.tensor(GRADS[step][0])
        b.grad = T.tensor(GRADS[step][1])  # c never gets a gradient: skipped, no state
        opt.step()
    groups = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
    return a, b, c, groups, state_record(opt), len(opt.state)


@differential
def test_add_param_group_later(T):
    a, b = (T.tensor(x, requires_grad=True) for x in INIT)
    opt = T.optim.Adam([a], lr=0.01)
    opt.add_param_group({"params": b, "lr": 0.1, "betas": (0.5, 0.6)})
    for step in range(20):
        for p, g in zip((a, b), GRADS[step]):
            p.grad = T.tensor(g)
        opt.step()
    return a, b, state_record(opt)


@differential
def test_named_parameters(T):
    a, b = (T.tensor(x, requires_grad=True) for x in INIT)
    opt = T.optim.SGD([("w", a), ("b", b)], lr=0.1, momentum=0.9)
    for step in range(3):
        for p, g in zip((a, b), GRADS[step]):
            p.grad = T.tensor(g)
        opt.step()
    mixed = catch(lambda: T.optim.SGD([("w", T.zeros(1, requires_grad=True)), T.zeros(1, requires_grad=True)]))
    return state_record(opt), mixed


@differential
def test_zero_grad(T):
    a, b = (T.tensor(x, requires_grad=True) for x in INIT)
    opt = T.optim.SGD([a, b], lr=0.1)
    a.grad = T.tensor(GRADS[0][0])
    grad_before = a.grad
    opt.zero_grad(set_to_none=False)
    kept = a.grad is grad_before
    zeros = a.grad.clone()
    b_none = b.grad is None
    opt.zero_grad()
    return kept, zeros, b_none, a.grad is None


@differential
def test_closure(T):
    params = make_params(T)
    opt = T.optim.SGD(params, lr=0.01)
    calls = []

    def closure():
        opt.zero_grad()
        loss = loss_fn(T, params)
        loss.backward()
        calls.append(T.is_grad_enabled())
        return loss

    losses = [opt.step(closure) for _ in range(5)]
    return losses, calls, params


@differential
def test_step_that_raises_inside_the_update_leaves_grad_mode_and_fp_reports_as_they_were(T):
    p = T.nn.Parameter(T.ones(3))
    opt = T.optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = T.ones(3)
    opt.step()
    opt.state[p]["momentum_buffer"] = T.ones(2)  # the wrong size: the update itself raises
    raised = isinstance(catch(opt.step), Raised)
    return raised, T.is_grad_enabled(), np.geterr()


@differential
def test_state_dict_structure(T):
    out = {}
    for name in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad"):
        params = make_params(T)
        kwargs = {"momentum": 0.9} if name in ("SGD", "RMSprop") else {}
        if name in ("Adam", "AdamW"):
            kwargs["amsgrad"] = True
        opt = getattr(T.optim, name)(params, lr=0.01, **kwargs)
        for p, g in zip(params, GRADS[0]):
            p.grad = T.tensor(g)
        opt.step()
        sd = opt.state_dict()
        out[name] = {
            "keys": list(sd),
            "state_keys": {k: list(v) for k, v in sd["state"].items()},
            "step": [v.get("step") for v in sd["state"].values()],
            "groups": sd["param_groups"],
            "shares_tensors": all(sd["state"][i][key] is opt.state[p][key]
                                  for i, p in enumerate(params) for key in sd["state"][i]),
        }
    return out


@pytest.mark.parametrize("name,kwargs", [CONFIGS[2], CONFIGS[7], CONFIGS[11], CONFIGS[16], CONFIGS[18]],
                         ids=[IDS[2], IDS[7], IDS[11], IDS[16], IDS[18]])
@differential(rtol=2e-5, atol=2e-6)
def test_state_dict_round_trip(T, name, kwargs):
    params = make_params(T)
    opt = getattr(T.optim, name)(params, **kwargs)
    for step in range(20):
        for p, g in zip(params, GRADS[step]):
            p.grad = T.tensor(g)
        opt.step()
    saved = copy.deepcopy(opt.state_dict())
    clones = [p.detach().clone().requires_grad_(True) for p in params]
    opt2 = getattr(T.optim, name)(clones, lr=123.0)  # the lr comes back from the state dict
    opt2.load_state_dict(saved)
    for step in range(20, 50):
        for p, q, g in zip(params, clones, GRADS[step]):
            p.grad = T.tensor(g)
            q.grad = T.tensor(g)
        opt.step()
        opt2.step()
    return params, clones, state_record(opt2), opt2.param_groups[0]["lr"]


@differential
def test_load_state_dict_casts_to_param_dtype(T):
    a = T.tensor(INIT[1].astype(np.float64), requires_grad=True)
    opt = T.optim.Adam([a], lr=0.01)
    sd = {"state": {0: {"step": T.tensor(3.0), "exp_avg": T.tensor(TARGET[1]),
                        "exp_avg_sq": T.tensor(np.abs(TARGET[1]))}},
          "param_groups": [dict(opt.state_dict()["param_groups"][0])]}
    opt.load_state_dict(sd)
    st = opt.state[a]
    return st["step"], st["exp_avg"], st["exp_avg_sq"], st["step"] is sd["state"][0]["step"]


@differential
def test_load_state_dict_errors(T):
    a, b = (T.tensor(x, requires_grad=True) for x in INIT)
    opt = T.optim.SGD([a, b], lr=0.1)
    other = T.optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1)
    one = T.optim.SGD([a], lr=0.1)
    return (catch(opt.load_state_dict, other.state_dict()),
            catch(opt.load_state_dict, one.state_dict()))


@differential
def test_constructor_errors(T):
    p = T.zeros(3, requires_grad=True)
    q = T.zeros(3, requires_grad=True)
    nonleaf = p * 2
    O = T.optim
    return [
        catch(O.SGD, [p], lr=-0.1),
        catch(O.SGD, [p], lr=0.1, momentum=-1.0),
        catch(O.SGD, [p], lr=0.1, weight_decay=-1.0),
        catch(O.SGD, [p], lr=0.1, nesterov=True),
        catch(O.SGD, [p], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
        catch(O.Adam, [p], lr=-1.0),
        catch(O.Adam, [p], eps=-1.0),
        catch(O.Adam, [p], betas=(1.0, 0.999)),
        catch(O.Adam, [p], betas=(0.9, -0.1)),
        catch(O.Adam, [p], betas=(0, 0.999)),
        catch(O.Adam, [p], weight_decay=-1.0),
        catch(O.AdamW, [p], lr=-1.0),
        catch(O.RMSprop, [p], alpha=-1.0),
        catch(O.RMSprop, [p], momentum=-1.0),
        catch(O.RMSprop, [p], eps=-1.0),
        catch(O.Adagrad, [p], lr_decay=-1.0),
        catch(O.Adagrad, [p], initial_accumulator_value=-1.0),
        catch(O.SGD, p, lr=0.1),
        catch(O.SGD, 5, lr=0.1),
        catch(O.SGD, [1.0, 2.0], lr=0.1),
        catch(O.SGD, [], lr=0.1),
        catch(O.SGD, [nonleaf], lr=0.1),
        catch(O.SGD, [{"params": {p}}], lr=0.1),
        catch(O.SGD, [{"params": [p]}, {"params": [q, p]}], lr=0.1),
        catch(O.SGD([p], lr=0.1).add_param_group, [q]),
    ]


@differential
def test_duplicate_parameters_warn(T):
    import warnings
    p = T.zeros(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        T.optim.SGD([p, p], lr=0.1)
    return sorted({w.category.__name__ for w in caught})


@differential
def test_required_lr_and_defaults_in_groups(T):
    p = T.zeros(3, requires_grad=True)
    opt = T.optim.Adagrad([p])
    opt2 = T.optim.RMSprop([{"params": [p], "lr": 0.5}])
    return (sorted(opt.defaults.items()), sorted((k, v) for k, v in opt2.param_groups[0].items() if k != "params"),
            {k: v for k, v in opt.state_dict()["state"][0].items()})


@differential
def test_tensor_lr(T):
    params = make_params(T)
    opt = T.optim.SGD(params, lr=T.tensor(0.05), momentum=0.9)
    for step in range(10):
        for p, g in zip(params, GRADS[step]):
            p.grad = T.tensor(g)
        opt.step()
    return params, catch(T.optim.SGD, params, lr=T.tensor([0.1, 0.2]))


def test_load_a_torch_state_dict_into_hookgrad():
    """A state dict produced by torch's optimizer, with its tensors converted, loads into ours
    and training continues identically."""
    import hookgrad
    import torch

    def to_hookgrad(x):
        if isinstance(x, torch.Tensor):
            return hookgrad.tensor(x.detach().numpy().copy())
        if isinstance(x, dict):
            return {k: to_hookgrad(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return type(x)(to_hookgrad(v) for v in x)
        return x

    for name, kwargs in [("Adam", dict(lr=0.01, amsgrad=True)), ("SGD", dict(lr=0.05, momentum=0.9)),
                         ("RMSprop", dict(centered=True, momentum=0.5)), ("Adagrad", dict(lr_decay=0.01)),
                         ("AdamW", dict(weight_decay=0.1))]:
        tp = [torch.tensor(a, requires_grad=True) for a in INIT]
        topt = getattr(torch.optim, name)(tp, **kwargs)
        for step in range(15):
            for p, g in zip(tp, GRADS[step]):
                p.grad = torch.tensor(g)
            topt.step()
        hp = [hookgrad.tensor(p.detach().numpy().copy(), requires_grad=True) for p in tp]
        hopt = getattr(hookgrad.optim, name)(hp, lr=1.0)
        hopt.load_state_dict(to_hookgrad(topt.state_dict()))
        assert hopt.state_dict()["param_groups"] == topt.state_dict()["param_groups"]
        for step in range(15, 45):
            for p, q, g in zip(tp, hp, GRADS[step]):
                p.grad = torch.tensor(g)
                q.grad = hookgrad.tensor(g)
            topt.step()
            hopt.step()
        for p, q in zip(tp, hp):
            np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=2e-5, atol=2e-6)
        tsd, hsd = topt.state_dict(), hopt.state_dict()
        assert list(tsd["state"]) == list(hsd["state"])
        for k in tsd["state"]:
            assert list(tsd["state"][k]) == list(hsd["state"][k])
            for key, value in tsd["state"][k].items():
                got = hsd["state"][k][key]
                assert str(got.dtype).split(".")[-1] == str(value.dtype).split(".")[-1], (name, key)
                np.testing.assert_allclose(got.detach().numpy(), value.numpy(), rtol=2e-5, atol=2e-6)


def test_step_records_no_graph_and_bumps_versions():
    import hookgrad
    p = hookgrad.tensor(INIT[1], requires_grad=True)
    opt = hookgrad.optim.Adam([p], lr=0.01)
    p.grad = hookgrad.tensor(GRADS[0][1])
    before = p._version
    opt.step()
    assert p._version > before
    assert p.grad_fn is None and p.is_leaf and p.requires_grad
    assert p.dtype == hookgrad.float32


@differential
def test_repr_and_deepcopy(T):
    params = make_params(T)
    opt = T.optim.Adam([{"params": params[:1]}, {"params": params[1:], "lr": 0.5, "amsgrad": True}], lr=0.01)
    for p, g in zip(params, GRADS[0]):
        p.grad = T.tensor(g)
    opt.step()
    twin = copy.deepcopy(opt)
    for step in range(1, 10):
        for p, q, g in zip(params, twin.param_groups[0]["params"] + twin.param_groups[1]["params"], GRADS[step]):
            p.grad = T.tensor(g)
            q.grad = T.tensor(g)
        opt.step()
        twin.step()
    twin_params = twin.param_groups[0]["params"] + twin.param_groups[1]["params"]
    return repr(opt), repr(T.optim.SGD(params, lr=0.1)), params, twin_params, state_record(twin)


@differential(rtol=5e-5, atol=5e-6)
def test_training_loop_end_to_end(T):
    """DataLoader batches -> loss -> backward -> gradient clipping -> step -> lr schedule."""
    import importlib
    data = importlib.import_module(T.__name__ + ".utils.data")
    rng = np.random.default_rng(99)
    x = rng.standard_normal((64, 5)).astype(np.float32)
    y = (x @ rng.standard_normal((5, 1)).astype(np.float32) + 0.3).astype(np.float32)
    loader = data.DataLoader(data.TensorDataset(T.tensor(x), T.tensor(y)), batch_size=16)
    w = T.tensor(np.zeros((5, 1), dtype=np.float32), requires_grad=True)
    b = T.tensor(np.zeros(1, dtype=np.float32), requires_grad=True)
    opt = T.optim.AdamW([{"params": [w]}, {"params": [b], "weight_decay": 0.0}], lr=0.05)
    sched = T.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=40)
    norms, losses = [], []
    for epoch in range(10):
        for xb, yb in loader:
            opt.zero_grad()
            loss = ((xb @ w + b - yb) ** 2).mean()
            loss.backward()
            norms.append(T.nn.utils.clip_grad_norm_([w, b], max_norm=1.0).item())
            opt.step()
            sched.step()
            losses.append(loss.item())
    return w, b, losses, norms, sched.get_last_lr()


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"]),
       lr=st.floats(1e-4, 0.5), wd=st.sampled_from([0.0, 1e-3, 0.1]), flag=st.booleans(),
       maximize=st.booleans(), mom=st.floats(0.0, 0.95), seed=st.integers(0, 2 ** 16))
def test_random_hyperparameters_match_torch(name, lr, wd, flag, maximize, mom, seed):
    import hookgrad
    import torch
    rng = np.random.default_rng(seed)
    init = rng.standard_normal((3, 4)).astype(np.float32)
    grads = rng.standard_normal((12, 3, 4)).astype(np.float32)
    kwargs = {"lr": lr, "weight_decay": wd, "maximize": maximize}
    if name == "SGD":
        kwargs.update(momentum=mom, nesterov=flag and mom > 0)
    elif name in ("Adam", "AdamW"):
        kwargs.update(amsgrad=flag, betas=(mom, 0.999))
    elif name == "RMSprop":
        kwargs.update(centered=flag, momentum=mom)
    else:
        kwargs.update(lr_decay=mom / 10)
    results = []
    for T in (torch, hookgrad):
        p = T.tensor(init, requires_grad=True)
        opt = getattr(T.optim, name)([p], **kwargs)
        for g in grads:
            p.grad = T.tensor(g)
            opt.step()
        results.append(p.detach().numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-4, atol=1e-5)


def test_differentiable_mode_is_refused_clearly():
    import hookgrad
    p = hookgrad.zeros(2, requires_grad=True)
    for cls in (hookgrad.optim.SGD, hookgrad.optim.Adam, hookgrad.optim.AdamW, hookgrad.optim.RMSprop,
                hookgrad.optim.Adagrad):
        with pytest.raises(NotImplementedError, match="differentiable"):
            cls([p], lr=0.1, differentiable=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kwargs", [{}, {"momentum": 0.9}, {"momentum": 0.9, "nesterov": True, "weight_decay": 1e-2},
                                    {"momentum": 0.5, "dampening": 0.1, "weight_decay": 0.1, "maximize": True}])
@differential(rtol=0, atol=0)
def test_sgd_steps_are_torchs_to_the_bit(T, dtype, kwargs):
    """Given exact gradients, SGD's parameters match torch's bit for bit: torch adds ``alpha * x``
    with one rounding (``add_(x, alpha=...)``), which rounding the product first would miss."""
    dt = getattr(T, dtype)
    w = T.nn.Parameter(T.tensor(np.random.RandomState(1).randn(50, 30)).to(dt))
    opt = T.optim.SGD([w], lr=0.0137, **kwargs)
    for i in range(5):
        opt.zero_grad()
        (w * T.tensor(np.random.RandomState(i).randn(50, 30)).to(dt)).sum().backward()
        opt.step()
    return w.detach()
