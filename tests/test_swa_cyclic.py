"""CyclicLR and torch.optim.swa_utils (AveragedModel, the averaging functions, update_bn,
SWALR) against torch."""
import copy
import importlib

import numpy as np
import pytest

from difftest import catch, differential, warns

RNG = np.random.default_rng(77)
X = RNG.standard_normal((32, 4))
Y = RNG.standard_normal((32, 1))


def _sgd_model(T):
    T.manual_seed(0)
    model = T.nn.Sequential(T.nn.Linear(4, 6), T.nn.BatchNorm1d(6), T.nn.Tanh(), T.nn.Linear(6, 1)).double()
    for p in model.parameters():
        p.data = T.tensor(RNG.standard_normal(tuple(p.shape)) * 0.0 + np.linspace(-0.5, 0.5, p.numel()).reshape(tuple(p.shape)))
    return model


CYCLIC = [
    dict(base_lr=0.01, max_lr=0.1, step_size_up=3),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=2, step_size_down=5, mode="triangular2"),
    dict(base_lr=[0.01, 0.02], max_lr=[0.1, 0.3], step_size_up=4, mode="exp_range", gamma=0.9),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn=lambda x: 0.5 ** x, scale_mode="iterations"),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=3, cycle_momentum=False),
]


@pytest.mark.parametrize("kwargs", CYCLIC, ids=[str(i) for i in range(len(CYCLIC))])
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
@differential(rtol=1e-12, atol=1e-14)
def test_cyclic_lr(T, kwargs, opt_name):
    a = T.zeros(2, dtype=T.float64, requires_grad=True)
    b = T.zeros(2, dtype=T.float64, requires_grad=True)
    extra = {"momentum": 0.9} if opt_name == "SGD" else {}
    opt = getattr(T.optim, opt_name)([{"params": [a]}, {"params": [b]}], lr=1.0, **extra)
    sched = T.optim.lr_scheduler.CyclicLR(opt, **kwargs)
    key = "momentum" if opt_name == "SGD" else "betas"
    seen = [(sched.get_last_lr(), [g[key] for g in opt.param_groups])]
    for _ in range(20):
        a.grad, b.grad = T.ones(2, dtype=T.float64), T.ones(2, dtype=T.float64)
        opt.step()
        sched.step()
        seen.append((sched.get_last_lr(), [g[key] for g in opt.param_groups]))
    sd = sched.state_dict()
    return seen, sorted(sd), sd["_scale_fn_custom"], a, b


@differential
def test_cyclic_lr_errors_and_reload(T):
    p = T.zeros(2, requires_grad=True)
    opt = T.optim.SGD([p], lr=0.1, momentum=0.9)
    errors = [catch(T.optim.lr_scheduler.CyclicLR, opt, 0.01, 0.1, mode="sawtooth"),
              catch(T.optim.lr_scheduler.CyclicLR, T.optim.Adagrad([p]), 0.01, 0.1),
              catch(T.optim.lr_scheduler.CyclicLR, opt, [0.01, 0.02], 0.1)]
    sched = T.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=3, mode="triangular2")
    for _ in range(7):
        opt.step()
        sched.step()
    twin = T.optim.lr_scheduler.CyclicLR(T.optim.SGD([p], lr=0.1, momentum=0.9), 0.01, 0.1)
    twin.load_state_dict(sched.state_dict())
    twin.step()
    sched.step()
    return errors, twin.get_last_lr(), sched.get_last_lr(), twin.mode, warns(sched.get_lr)[1]


SWALR_CONFIGS = [dict(swa_lr=0.05), dict(swa_lr=[0.05, 0.2], anneal_epochs=3, anneal_strategy="linear"),
                 dict(swa_lr=0.5, anneal_epochs=0)]


@pytest.mark.parametrize("kwargs", SWALR_CONFIGS, ids=[str(i) for i in range(len(SWALR_CONFIGS))])
@differential(rtol=1e-12, atol=1e-14)
def test_swalr(T, kwargs):
    swa = importlib.import_module(T.__name__ + ".optim.swa_utils")
    a, b = T.zeros(2, requires_grad=True), T.zeros(2, requires_grad=True)
    opt = T.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.3}], lr=1.0)
    sched = swa.SWALR(opt, **kwargs)
    lrs = [sched.get_last_lr()]
    for _ in range(14):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
    return lrs, sorted(sched.state_dict()), [g["swa_lr"] for g in opt.param_groups]


@differential
def test_swalr_errors(T):
    swa = importlib.import_module(T.__name__ + ".optim.swa_utils")
    opt = T.optim.SGD([T.zeros(2, requires_grad=True)], lr=1.0)
    return [catch(swa.SWALR, opt, 0.1, anneal_strategy="exp"), catch(swa.SWALR, opt, 0.1, anneal_epochs=-1),
            catch(swa.SWALR, opt, 0.1, anneal_epochs=2.5), catch(swa.get_ema_avg_fn, 1.5),
            catch(swa.get_ema_multi_avg_fn, -0.1),
            catch(swa.AveragedModel, T.nn.Linear(2, 2), avg_fn=swa.get_swa_avg_fn(),
                  multi_avg_fn=swa.get_swa_multi_avg_fn())]


AVERAGING = ["default", "ema", "ema_multi", "swa_multi", "custom", "default_buffers", "ema_multi_buffers"]


@pytest.mark.parametrize("how", AVERAGING)
@differential(rtol=1e-11, atol=1e-13)
def test_averaged_model(T, how):
    swa = importlib.import_module(T.__name__ + ".optim.swa_utils")
    model = _sgd_model(T)
    kwargs = {"default": {}, "ema": {"avg_fn": swa.get_ema_avg_fn(0.8)},
              "ema_multi": {"multi_avg_fn": swa.get_ema_multi_avg_fn(0.7)},
              "swa_multi": {"multi_avg_fn": swa.get_swa_multi_avg_fn()},
              "custom": {"avg_fn": lambda avg, cur, n: avg * 0.5 + cur * 0.5 + n * 0.001},
              "default_buffers": {"use_buffers": True},
              "ema_multi_buffers": {"multi_avg_fn": swa.get_ema_multi_avg_fn(0.7), "use_buffers": True}}[how]
    averaged = swa.AveragedModel(model, **kwargs)
    opt = T.optim.SGD(model.parameters(), lr=0.05)
    x, y = T.tensor(X), T.tensor(Y)
    for step in range(6):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
        averaged.update_parameters(model)
    out = averaged(x)
    sd = averaged.state_dict()
    return out, {k: v for k, v in sd.items()}, averaged.n_averaged, list(dict(averaged.named_modules()))


@differential(rtol=1e-11, atol=1e-13)
def test_update_bn(T):
    swa = importlib.import_module(T.__name__ + ".optim.swa_utils")
    data = importlib.import_module(T.__name__ + ".utils.data")
    model = _sgd_model(T)
    model.eval()
    bn = model[1]
    bn.momentum = 0.3
    loader = data.DataLoader(data.TensorDataset(T.tensor(X), T.tensor(Y)), batch_size=8)
    swa.update_bn(loader, model)
    plain_loader = [T.tensor(X[:16]), T.tensor(X[16:])]
    twin = _sgd_model(T)
    swa.update_bn(plain_loader, twin)
    no_bn = T.nn.Linear(2, 2)
    swa.update_bn(plain_loader, no_bn)
    return (bn.running_mean, bn.running_var, bn.num_batches_tracked, bn.momentum, model.training,
            twin[1].running_mean, twin[1].running_var)


@differential(rtol=1e-11, atol=1e-13)
def test_swa_training_recipe(T):
    """The documented recipe: train, switch to SWALR late, average, recompute BN stats."""
    swa = importlib.import_module(T.__name__ + ".optim.swa_utils")
    model = _sgd_model(T)
    swa_model = swa.AveragedModel(model)
    opt = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = T.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    swa_sched = swa.SWALR(opt, swa_lr=0.05, anneal_epochs=2)
    x, y = T.tensor(X), T.tensor(Y)
    lrs = []
    for epoch in range(10):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
        if epoch > 5:
            swa_model.update_parameters(model)
            swa_sched.step()
        else:
            sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    swa.update_bn([x[:16], x[16:]], swa_model)
    return lrs, swa_model(x), copy.deepcopy(swa_model).state_dict()
