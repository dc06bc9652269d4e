"""The optimizers beyond SGD/Adam/AdamW/RMSprop/Adagrad against torch: many steps in float64 to
1e-10, float32 runs, state dicts (ours, torch's loaded into ours and back), hooks, LBFGS with
and without line search, schedulers on top, and torch's errors for bad options and CPU-only flags."""
import copy

import numpy as np
import pytest

from difftest import catch, differential

RNG = np.random.default_rng(4321)
INIT = [RNG.standard_normal((4, 3)), RNG.standard_normal(5), RNG.standard_normal((2, 3, 4))]
TARGET = [RNG.standard_normal(a.shape) for a in INIT]
GRADS = [[RNG.standard_normal(a.shape) for a in INIT] for _ in range(60)]

CONFIGS = [
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.01, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True, betas=(0.5, 0.6))),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, weight_decay=0.1, maximize=True, eps=1e-3)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1, maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=10, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=0, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.7), step_sizes=(1e-3, 0.2), maximize=True)),
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=2.0, weight_decay=0.1)),
    ("Adafactor", dict(lr=0.05, maximize=True, eps=(1e-3, 1e-3))),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'defaults'}" for name, kw in CONFIGS]


def make_params(T, dtype=np.float64):
    return [T.tensor(a.astype(dtype), requires_grad=True) for a in INIT]


def loss_fn(T, params):
    w, b, c = params
    tw, tb, tc = (T.tensor(t.astype(np.float64)).to(w.dtype) for t in TARGET)
    return ((w - tw) ** 2).sum() + 0.1 * (w ** 4).sum() + ((b - tb) ** 2).mean() * 3.0 + ((c - tc) ** 2).sum()


def plain(value):
    """A state value as plain data (0-d tensors and lists of tensors included)."""
    if hasattr(value, "detach"):
        return value.detach().clone()
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def state_record(opt):
    sd = opt.state_dict()
    return {"state": {k: {key: plain(v) for key, v in s.items()} for k, s in sd["state"].items()},
            "param_groups": sd["param_groups"]}


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
@differential(rtol=1e-10, atol=1e-12)
def test_float64_steps_with_autograd_loss(T, name, kwargs):
    params = make_params(T)
    opt = getattr(T.optim, name)(params, **kwargs)
    sign = -1.0 if kwargs.get("maximize") else 1.0
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = loss_fn(T, params) * sign
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return params, losses, state_record(opt)


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
@differential(rtol=1e-10, atol=1e-12)
def test_float64_steps_with_given_gradients(T, name, kwargs):
    params = make_params(T)
    opt = getattr(T.optim, name)(params, **kwargs)
    history = []
    for step in range(60):
        for p, g in zip(params, GRADS[step]):
            p.grad = T.tensor(g)
        if step % 7 == 3:
            params[1].grad = None  # a parameter without a gradient is skipped that step
        opt.step()
        if step % 20 == 0:
            history.append([p.detach().clone() for p in params])
    return params, history, state_record(opt)


@pytest.mark.parametrize("name,kwargs", CONFIGS[::2], ids=IDS[::2])
@differential(rtol=5e-5, atol=5e-6)
def test_float32_steps(T, name, kwargs):
    params = make_params(T, np.float32)
    opt = getattr(T.optim, name)(params, **kwargs)
    for step in range(30):
        for p, g in zip(params, GRADS[step]):
            p.grad = T.tensor(g.astype(np.float32))
        opt.step()
    return params, state_record(opt)


@pytest.mark.parametrize("name,kwargs", CONFIGS[1::3], ids=IDS[1::3])
@differential(rtol=1e-10, atol=1e-12)
def test_state_dict_round_trip(T, name, kwargs):
    params = make_params(T)
    opt = getattr(T.optim, name)(params, **kwargs)
    for step in range(20):
        for p, g in zip(params, GRADS[step]):
            p.grad = T.tensor(g)
        opt.step()
    saved = copy.deepcopy(opt.state_dict())
    clones = [p.detach().clone().requires_grad_(True) for p in params]
    opt2 = getattr(T.optim, name)(clones, lr=0.123)
    opt2.load_state_dict(saved)
    for step in range(20, 40):
        for p, q, g in zip(params, clones, GRADS[step]):
            p.grad = T.tensor(g)
            q.grad = T.tensor(g)
        opt.step()
        opt2.step()
    return params, clones, state_record(opt2)


@differential(rtol=1e-10, atol=1e-12)
def test_param_groups_and_schedulers(T):
    params = make_params(T)
    opt = T.optim.NAdam([{"params": params[:2]}, {"params": params[2:], "lr": 0.05, "momentum_decay": 0.02}],
                        lr=0.01)
    sched = T.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    lrs = []
    for step in range(20):
        for p, g in zip(params, GRADS[step]):
            p.grad = T.tensor(g)
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
    rprop = T.optim.Rprop(make_params(T), lr=0.1)
    cosine = T.optim.lr_scheduler.CosineAnnealingLR(rprop, T_max=10)
    for step in range(5):
        rprop.step()  # no gradients yet: nothing changes, no state
        cosine.step()
    return params, lrs, state_record(opt), cosine.get_last_lr(), len(rprop.state)


def _to_hookgrad(x):
    import hookgrad
    import torch
    if isinstance(x, torch.Tensor):
        return hookgrad.tensor(x.detach().numpy().copy())
    if isinstance(x, dict):
        return {k: _to_hookgrad(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_to_hookgrad(v) for v in x)
    return x


def _to_torch(x):
    import hookgrad
    import torch
    if isinstance(x, hookgrad.Tensor):
        return torch.tensor(x.detach().numpy().copy())
    if isinstance(x, dict):
        return {k: _to_torch(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_to_torch(v) for v in x)
    return x


@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=IDS)
def test_torch_state_dict_into_hookgrad_and_back(name, kwargs):
    """torch trains 15 steps; hookgrad loads its state dict and trains 15 more; torch loads that
    and trains 15 more; a torch run of 45 steps must agree with the relay."""
    import hookgrad
    import torch

    def feed(params, framework, step):
        for p, g in zip(params, GRADS[step]):
            p.grad = framework.tensor(g)

    reference = [torch.tensor(a, requires_grad=True) for a in INIT]
    ropt = getattr(torch.optim, name)(reference, **kwargs)
    for step in range(45):
        feed(reference, torch, step)
        ropt.step()

    tp = [torch.tensor(a, requires_grad=True) for a in INIT]
    topt = getattr(torch.optim, name)(tp, **kwargs)
    for step in range(15):
        feed(tp, torch, step)
        topt.step()
    hp = [hookgrad.tensor(p.detach().numpy().copy(), requires_grad=True) for p in tp]
    hopt = getattr(hookgrad.optim, name)(hp, lr=0.5)
    hopt.load_state_dict(_to_hookgrad(topt.state_dict()))
    assert hopt.state_dict()["param_groups"] == topt.state_dict()["param_groups"]
    for step in range(15, 30):
        feed(hp, hookgrad, step)
        hopt.step()
    back = [torch.tensor(p.detach().numpy().copy(), requires_grad=True) for p in hp]
    bopt = getattr(torch.optim, name)(back, lr=0.5)
    bopt.load_state_dict(_to_torch(hopt.state_dict()))
    for step in range(30, 45):
        feed(back, torch, step)
        bopt.step()
    for p, q in zip(reference, back):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=1e-10, atol=1e-12)
    rsd, bsd = ropt.state_dict(), bopt.state_dict()
    for k in rsd["state"]:
        assert list(rsd["state"][k]) == list(bsd["state"][k])
        for key, value in rsd["state"][k].items():
            got = bsd["state"][k][key]
            # (dtypes may differ: loading casts 0-d float state such as mu_product to the
            # parameter's dtype, in torch as here)
            np.testing.assert_allclose(got.numpy(), value.numpy(), rtol=1e-10, atol=1e-12)


@differential
def test_step_hooks_fire(T):
    log = []
    params = make_params(T)
    for name, kwargs in CONFIGS[::3]:
        opt = getattr(T.optim, name)(params, **kwargs)
        opt.register_step_pre_hook(lambda o, a, k: log.append(("pre", type(o).__name__, len(a), dict(k))))
        opt.register_step_post_hook(lambda o, a, k: log.append(("post", type(o).__name__)))
        opt.register_state_dict_post_hook(lambda o, sd: log.append(("sd", sorted(sd))))
        opt.register_load_state_dict_pre_hook(lambda o, sd: log.append(("load", sorted(sd))))
        for p, g in zip(params, GRADS[0]):
            p.grad = T.tensor(g)
        opt.step()
        opt.load_state_dict(opt.state_dict())
    return log


def _lbfgs_run(T, kwargs, steps=4, dtype=np.float64):
    params = make_params(T, dtype)
    opt = T.optim.LBFGS(params, **kwargs)
    calls = []

    def closure():
        opt.zero_grad()
        loss = loss_fn(T, params)
        loss.backward()
        calls.append(T.is_grad_enabled())
        return loss

    losses = [opt.step(closure) for _ in range(steps)]
    st = opt.state[params[0]]
    summary = {"func_evals": st["func_evals"], "n_iter": st["n_iter"], "t": float(st["t"]),
               "prev_loss": float(st["prev_loss"]), "d": st["d"], "prev_flat_grad": st["prev_flat_grad"],
               "history": len(st["old_dirs"]), "ro": [float(r) for r in st["ro"]],
               "H_diag": float(st["H_diag"]), "old_dirs": st["old_dirs"], "old_stps": st["old_stps"]}
    return params, losses, len(calls), all(calls), summary, sorted(st)


LBFGS_CONFIGS = [
    dict(),
    dict(lr=0.5, max_iter=5, history_size=3),
    dict(line_search_fn="strong_wolfe"),
    dict(lr=0.8, max_iter=7, max_eval=12, history_size=2, line_search_fn="strong_wolfe"),
    dict(tolerance_grad=1e-3, tolerance_change=1e-4, line_search_fn="strong_wolfe"),
]


@pytest.mark.parametrize("kwargs", LBFGS_CONFIGS, ids=[str(k) for k in LBFGS_CONFIGS])
@differential(rtol=1e-9, atol=1e-11)
def test_lbfgs(T, kwargs):
    return _lbfgs_run(T, kwargs)


@differential(rtol=2e-4, atol=2e-5)
def test_lbfgs_float32(T):
    return _lbfgs_run(T, dict(max_iter=4, history_size=3), steps=2, dtype=np.float32)[:4]


@differential(rtol=1e-9, atol=1e-11)
def test_lbfgs_state_dict_round_trip_and_hooks(T):
    params = make_params(T)
    opt = T.optim.LBFGS(params, max_iter=3, line_search_fn="strong_wolfe")
    log = []
    opt.register_step_pre_hook(lambda o, a, k: log.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: log.append("post"))

    def closure():
        log.append("closure")
        opt.zero_grad()
        loss = loss_fn(T, params)
        loss.backward()
        return loss

    opt.step(closure)
    clones = [p.detach().clone().requires_grad_(True) for p in params]
    twin = T.optim.LBFGS(clones, max_iter=3, line_search_fn="strong_wolfe")
    twin.load_state_dict(copy.deepcopy(opt.state_dict()))

    def twin_closure():
        twin.zero_grad()
        loss = loss_fn(T, clones)
        loss.backward()
        return loss

    opt.step(closure)
    twin.step(twin_closure)
    return params, clones, log


@differential
def test_lbfgs_errors(T):
    p = T.zeros(3, requires_grad=True)
    q = T.zeros(2, requires_grad=True)
    bad_search = T.optim.LBFGS([p], line_search_fn="armijo")

    def closure():
        bad_search.zero_grad()
        loss = ((p - 1) ** 2).sum()
        loss.backward()
        return loss

    return [catch(T.optim.LBFGS, [{"params": [p]}, {"params": [q]}]),
            catch(T.optim.LBFGS, [p], lr=-1.0),
            catch(bad_search.step, closure),
            T.optim.LBFGS([p]).defaults]


@differential
def test_defaults_and_state_keys(T):
    out = {}
    for name in ("NAdam", "RAdam", "Adamax", "Adadelta", "ASGD", "Rprop", "Adafactor", "SparseAdam", "LBFGS"):
        p = T.zeros(3, requires_grad=True)
        opt = getattr(T.optim, name)([p])
        out[name] = sorted((k, v) for k, v in opt.defaults.items())
        if name not in ("SparseAdam", "LBFGS"):
            p.grad = T.ones(3)
            opt.step()
            out[name + " state"] = {k: plain(v) for k, v in opt.state_dict()["state"][0].items()}
    return out


@differential
def test_constructor_and_step_errors(T):
    p = T.zeros(3, requires_grad=True)
    O = T.optim
    sparse = O.SparseAdam([p])
    p.grad = T.ones(3)
    errors = [
        catch(O.NAdam, [p], lr=-1.0), catch(O.NAdam, [p], momentum_decay=-1.0), catch(O.NAdam, [p], betas=(1.0, 0.9)),
        catch(O.RAdam, [p], eps=-1.0), catch(O.RAdam, [p], weight_decay=-1.0),
        catch(O.Adamax, [p], betas=(0.9, 1.0)), catch(O.Adadelta, [p], rho=1.5), catch(O.Adadelta, [p], eps=-1),
        catch(O.ASGD, [p], lr=-1.0), catch(O.ASGD, [p], weight_decay=-1.0),
        catch(O.Rprop, [p], etas=(1.2, 0.5)), catch(O.Rprop, [p], lr=-0.1),
        catch(O.Adafactor, [p], beta2_decay=0.5), catch(O.Adafactor, [p], d=0.5), catch(O.Adafactor, [p], eps=(-1, 1e-3)),
        catch(O.Adafactor, [p], eps=(None, -1.0)), catch(O.Adafactor, [p], weight_decay=-1.0),
        catch(O.SparseAdam, [p], lr=0.0), catch(O.SparseAdam, [p], eps=0.0), catch(O.SparseAdam, [p], betas=(0.9, 1.0)),
        catch(sparse.step),
    ]
    for name in ("NAdam", "RAdam", "Adamax", "Adadelta", "ASGD", "Rprop", "Adam", "AdamW", "RMSprop"):
        errors.append(catch(getattr(O, name)([p], capturable=True).step))
    errors.append(catch(O.Adam, [p], lr=T.tensor(0.01), foreach=True))
    errors.append(catch(O.AdamW, [p], betas=(T.tensor(0.9), T.tensor(0.99)), foreach=True))
    errors.append(catch(O.Adam, [p], betas=(T.tensor([0.9, 0.8]), T.tensor(0.99))))
    errors.append(catch(O.Adam, [p], fused=True, foreach=True))
    errors.append(catch(O.AdamW, [p], fused=True, foreach=True))
    return errors, p  # p unchanged by the refused steps


@differential(rtol=1e-10, atol=1e-12)
def test_accelerator_flags_accepted_on_cpu(T):
    out = []
    for name, kwargs in [("Adam", dict(foreach=True)), ("Adam", dict(foreach=False, amsgrad=True)),
                         ("AdamW", dict(foreach=True, maximize=True)), ("NAdam", dict(foreach=True)),
                         ("RAdam", dict(foreach=False)), ("Adamax", dict(foreach=True)),
                         ("SGD", dict(foreach=True, momentum=0.9)), ("Adagrad", dict(foreach=True)),
                         ("RMSprop", dict(foreach=True, centered=True))]:
        params = make_params(T)
        opt = getattr(T.optim, name)(params, **kwargs)
        for step in range(10):
            for p, g in zip(params, GRADS[step]):
                p.grad = T.tensor(g)
            opt.step()
        out.append((params, state_record(opt)))
    return out


# the group options each optimizer added over time, and the 0-d state numbers older pickles hold
_OPTIONS_ADDED_LATER = ("foreach", "maximize", "differentiable", "capturable", "fused", "decoupled_weight_decay",
                        "amsgrad", "nesterov", "momentum", "centered")


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adadelta", "Adagrad", "Adamax", "ASGD", "NAdam", "RAdam",
                                  "RMSprop", "Rprop", "Adafactor"])
@differential
def test_unpickling_an_older_state_fills_in_options_and_tensorizes_counters(T, name):
    p = T.nn.Parameter(T.ones(2))
    opt = getattr(T.optim, name)([p], lr=0.1)
    p.grad = T.ones(2)
    opt.step()
    state = opt.__getstate__()
    for group in state["param_groups"]:
        for key in _OPTIONS_ADDED_LATER:
            group.pop(key, None)
    for p_state in state["state"].values():
        for key in ("step", "mu_product", "eta", "mu"):
            if key in p_state:
                p_state[key] = float(p_state[key])
    loaded = object.__new__(type(opt))
    loaded.__setstate__(state)
    group = loaded.param_groups[0]
    return sorted((k, v) for k, v in group.items() if k != "params"), sorted(loaded.state[p].items())
