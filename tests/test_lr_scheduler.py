"""Learning-rate schedulers against torch: lr sequences over many epochs, get_last_lr, state
dicts, momentum cycling, plateau detection, closed forms, warnings and argument errors."""
import warnings

import numpy as np
import pytest

from difftest import catch, differential


def make_opt(T, cls="SGD", groups=2, **kwargs):
    params = [T.tensor(np.full(3, i + 1.0, dtype=np.float32), requires_grad=True) for i in range(groups)]
    for p in params:
        p.grad = T.tensor(np.ones(3, dtype=np.float32))
    spec = [{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(params)]
    return params, getattr(T.optim, cls)(spec, **kwargs)


def run(opt, sched, epochs, metric=None):
    lrs = [list(sched.get_last_lr())]
    for epoch in range(epochs):
        opt.step()
        if metric is None:
            sched.step()
        else:
            sched.step(metric(epoch))
        lrs.append(list(sched.get_last_lr()))
    return lrs


def plain_state(sched):
    """The scheduler state dict without callables (lambdas are never compared)."""
    def strip(d):
        return {k: ([strip(x) for x in v] if k == "_schedulers" else v) for k, v in d.items() if not callable(v)}
    return strip(sched.state_dict())


SCHEDULERS = {
    "StepLR": lambda S, opt: S.StepLR(opt, step_size=7, gamma=0.5),
    "MultiStepLR": lambda S, opt: S.MultiStepLR(opt, milestones=[3, 10, 10, 25], gamma=0.3),
    "ExponentialLR": lambda S, opt: S.ExponentialLR(opt, gamma=0.93),
    "CosineAnnealingLR": lambda S, opt: S.CosineAnnealingLR(opt, T_max=12, eta_min=0.001),
    "LambdaLR": lambda S, opt: S.LambdaLR(opt, lr_lambda=lambda e: 1.0 / (1 + e)),
    "LambdaLR-list": lambda S, opt: S.LambdaLR(opt, lr_lambda=[lambda e: 0.9 ** e, lambda e: 1 + e % 3]),
    "MultiplicativeLR": lambda S, opt: S.MultiplicativeLR(opt, lr_lambda=lambda e: 0.95),
    "LinearLR": lambda S, opt: S.LinearLR(opt, start_factor=0.25, end_factor=1.0, total_iters=10),
    "LinearLR-down": lambda S, opt: S.LinearLR(opt, start_factor=1.0, end_factor=0.1, total_iters=20),
    "ConstantLR": lambda S, opt: S.ConstantLR(opt, factor=0.5, total_iters=4),
    "PolynomialLR": lambda S, opt: S.PolynomialLR(opt, total_iters=15, power=2.0),
    "CosineAnnealingWarmRestarts": lambda S, opt: S.CosineAnnealingWarmRestarts(opt, T_0=5, T_mult=2, eta_min=0.01),
    "SequentialLR": lambda S, opt: S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.1, total_iters=5),
                                                        S.CosineAnnealingLR(opt, T_max=20),
                                                        S.ExponentialLR(opt, gamma=0.9)], milestones=[5, 25]),
    "ChainedScheduler": lambda S, opt: S.ChainedScheduler([S.ConstantLR(opt, factor=0.5, total_iters=3),
                                                           S.ExponentialLR(opt, gamma=0.95)]),
    "OneCycleLR": lambda S, opt: S.OneCycleLR(opt, max_lr=[1.0, 0.5], total_steps=40),
    "OneCycleLR-linear-3phase": lambda S, opt: S.OneCycleLR(opt, max_lr=0.8, epochs=4, steps_per_epoch=10,
                                                            anneal_strategy="linear", three_phase=True,
                                                            pct_start=0.25),
}


@pytest.mark.parametrize("name", list(SCHEDULERS))
@differential(rtol=1e-9, atol=1e-12)
def test_lr_sequence(T, name):
    params, opt = make_opt(T, momentum=0.9)
    sched = SCHEDULERS[name](T.optim.lr_scheduler, opt)
    epochs = 40 if name.startswith("OneCycle") else 45
    lrs = run(opt, sched, epochs)
    groups = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
    return lrs, groups, plain_state(sched), getattr(sched, "last_epoch", None)


@differential(rtol=1e-9, atol=1e-12)
def test_one_cycle_cycles_adam_betas(T):
    params, opt = make_opt(T, "Adam", groups=1)
    sched = T.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.01, total_steps=30, base_momentum=0.8,
                                            max_momentum=0.9)
    betas = []
    for _ in range(30):
        opt.step()
        sched.step()
        betas.append(opt.param_groups[0]["betas"])
    over = catch(sched.step)
    return betas, sched.get_last_lr(), over, params


@differential
def test_one_cycle_errors(T):
    S = T.optim.lr_scheduler
    params, opt = make_opt(T, "Adagrad", groups=1)
    _, sgd = make_opt(T, groups=1)
    return [catch(S.OneCycleLR, opt, max_lr=0.1, total_steps=10),  # no momentum to cycle
            catch(S.OneCycleLR, sgd, max_lr=0.1),
            catch(S.OneCycleLR, sgd, max_lr=0.1, total_steps=0),
            catch(S.OneCycleLR, sgd, max_lr=0.1, epochs=0, steps_per_epoch=3),
            catch(S.OneCycleLR, sgd, max_lr=0.1, total_steps=10, pct_start=1.5),
            catch(S.OneCycleLR, sgd, max_lr=0.1, total_steps=10, anneal_strategy="poly"),
            catch(S.OneCycleLR, sgd, max_lr=[0.1, 0.2], total_steps=10)]


@pytest.mark.parametrize("mode,threshold_mode,cooldown,min_lr", [
    ("min", "rel", 0, 0.0), ("min", "abs", 2, 0.004), ("max", "rel", 1, [0.0, 0.03]), ("max", "abs", 0, 0.0)])
@differential(rtol=1e-9, atol=1e-12)
def test_reduce_on_plateau(T, mode, threshold_mode, cooldown, min_lr):
    params, opt = make_opt(T)
    sched = T.optim.lr_scheduler.ReduceLROnPlateau(opt, mode=mode, factor=0.5, patience=2, threshold=0.01,
                                                   threshold_mode=threshold_mode, cooldown=cooldown,
                                                   min_lr=min_lr)
    values = [1.0, 0.9, 0.9, 0.899, 0.95, 0.9, 0.7, 0.7, 0.7, 0.7, 0.7, 0.71, 0.69, 0.69, 0.69, 0.69,
              1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2]
    lrs = run(opt, sched, len(values), metric=lambda e: values[e])
    return lrs, plain_state(sched), sched.in_cooldown


@differential
def test_reduce_on_plateau_errors(T):
    S = T.optim.lr_scheduler
    params, opt = make_opt(T)
    return [catch(S.ReduceLROnPlateau, opt, factor=1.0),
            catch(S.ReduceLROnPlateau, opt, mode="up"),
            catch(S.ReduceLROnPlateau, opt, threshold_mode="pct"),
            catch(S.ReduceLROnPlateau, opt, min_lr=[0.1]),
            catch(S.ReduceLROnPlateau, "not an optimizer")]


@differential
def test_scheduler_errors(T):
    S = T.optim.lr_scheduler
    params, opt = make_opt(T)
    return [catch(S.StepLR, "not an optimizer", step_size=2),
            catch(S.LinearLR, opt, start_factor=0.0),
            catch(S.LinearLR, opt, end_factor=1.5),
            catch(S.ConstantLR, opt, factor=2.0),
            catch(S.LambdaLR, opt, lr_lambda=[lambda e: 1.0]),
            catch(S.ExponentialLR, opt, gamma=0.5, last_epoch=3),  # no initial_lr yet
            catch(S.CosineAnnealingWarmRestarts, opt, T_0=0),
            catch(S.CosineAnnealingWarmRestarts, opt, T_0=2, T_mult=0),
            catch(S.SequentialLR, opt, [], milestones=[]),
            catch(S.SequentialLR, opt, [S.StepLR(opt, 2)], milestones=[3]),
            catch(S.SequentialLR, opt, [S.StepLR(opt, 2), S.ReduceLROnPlateau(opt)], milestones=[3]),
            catch(S.ChainedScheduler, [])]


@differential(rtol=1e-9, atol=1e-12)
def test_state_dict_round_trip_and_resume(T):
    S = T.optim.lr_scheduler
    params, opt = make_opt(T)
    sched = S.CosineAnnealingLR(opt, T_max=10)
    run(opt, sched, 4)
    saved = sched.state_dict()
    params2, opt2 = make_opt(T)
    sched2 = S.CosineAnnealingLR(opt2, T_max=99)
    sched2.load_state_dict(saved)
    opt2.load_state_dict(opt.state_dict())
    return run(opt, sched, 8), run(opt2, sched2, 8), plain_state(sched2)


@differential(rtol=1e-9, atol=1e-12)
def test_last_epoch_resume_and_closed_form(T):
    S = T.optim.lr_scheduler
    params, opt = make_opt(T)
    first = S.StepLR(opt, step_size=3, gamma=0.5)
    run(opt, first, 5)
    resumed = S.StepLR(opt, step_size=3, gamma=0.5, last_epoch=first.last_epoch)
    seq = run(opt, resumed, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        closed = []
        for epoch in (0, 4, 9, 2):
            resumed.step(epoch)
            closed.append(resumed.get_last_lr())
    return seq, closed


@differential
def test_warnings(T):
    S = T.optim.lr_scheduler
    out = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        params, opt = make_opt(T)
        sched = S.StepLR(opt, step_size=2)
        sched.step()  # before any optimizer.step()
        out.append(sorted({w.category.__name__ for w in caught}))
        caught.clear()
        params, opt = make_opt(T)
        sched = S.StepLR(opt, step_size=2)
        opt.step()
        sched.step()
        out.append(sorted({w.category.__name__ for w in caught}))
        caught.clear()
        sched.get_lr()  # outside step(): advises get_last_lr()
        out.append(sorted({w.category.__name__ for w in caught}))
    return out


@differential
def test_initial_lr_and_base_lrs(T):
    params, opt = make_opt(T)
    sched = T.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    return ([g["initial_lr"] for g in opt.param_groups], sched.base_lrs, sched.last_epoch,
            sorted(plain_state(sched)))
