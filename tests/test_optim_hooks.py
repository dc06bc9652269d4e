"""Optimizer hooks against torch: step pre/post hooks (global and per instance), their order,
arguments, return-value rules and handles, and the four state-dict hook kinds with prepend."""
import importlib

import numpy as np
import pytest

from difftest import catch, differential

INIT = np.arange(6, dtype=np.float32).reshape(2, 3) / 7.0
GRAD = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)


def make(T, cls="SGD", **kwargs):
    p = T.tensor(INIT, requires_grad=True)
    p.grad = T.tensor(GRAD)
    return p, getattr(T.optim, cls)([p], lr=0.1, **kwargs)


@differential
def test_step_hook_order_and_arguments(T):
    log = []
    p, opt = make(T, momentum=0.9)
    reg = importlib.import_module(T.__name__ + ".optim.optimizer")
    handles = [
        opt.register_step_pre_hook(lambda o, a, k: log.append(("pre1", o is opt, len(a), a[0] is opt, dict(k)))),
        opt.register_step_post_hook(lambda o, a, k: log.append(("post1", o is opt, len(a), dict(k)))),
        opt.register_step_pre_hook(lambda o, a, k: log.append(("pre2",))),
        opt.register_step_post_hook(lambda o, a, k: log.append(("post2", p.detach().clone()))),
    ]
    globals_ = [reg.register_optimizer_step_pre_hook(lambda o, a, k: log.append(("gpre", o is opt))),
                reg.register_optimizer_step_post_hook(lambda o, a, k: log.append(("gpost", o is opt)))]
    try:
        opt.step()
        log.append("--")
        opt.step(closure=None)
    finally:
        for h in globals_:
            h.remove()
    log.append("--")
    opt.step()
    ids_increase = all(a.id < b.id for a, b in zip(handles, handles[1:]))
    return log, ids_increase


@differential
def test_pre_hook_replaces_arguments(T):
    log = []
    p, opt = make(T)

    def closure():
        log.append("closure called")
        return 42.0

    def swap_in_closure(o, args, kwargs):
        log.append(("pre sees", len(args), sorted(kwargs)))
        return args, {"closure": closure}

    opt.register_step_pre_hook(swap_in_closure)
    opt.register_step_post_hook(lambda o, a, k: log.append(("post sees", sorted(k), k["closure"] is closure)))
    result = opt.step()
    return log, result


@differential
def test_pre_hook_bad_return_value(T):
    p, opt = make(T)
    handle = opt.register_step_pre_hook(lambda o, a, k: 5)
    bad_int = catch(opt.step)
    handle.remove()
    handle = opt.register_step_pre_hook(lambda o, a, k: (1, 2, 3))
    bad_tuple = catch(opt.step)
    handle.remove()
    ok = catch(opt.step)
    return bad_int, bad_tuple, ok, p


@differential
def test_handle_removal_and_context_manager(T):
    log = []
    p, opt = make(T, "Adam")
    h1 = opt.register_step_pre_hook(lambda o, a, k: log.append("h1"))
    h2 = opt.register_step_post_hook(lambda o, a, k: log.append("h2"))
    opt.step()
    h1.remove()
    h1.remove()  # idempotent
    opt.step()
    with opt.register_step_pre_hook(lambda o, a, k: log.append("ctx")):
        opt.step()
    opt.step()
    h2.remove()
    opt.step()
    return log, p


@differential
def test_hooks_are_per_instance(T):
    log = []
    p, opt1 = make(T)
    q, opt2 = make(T)
    opt1.register_step_pre_hook(lambda o, a, k: log.append("opt1"))
    opt2.step()
    opt1.step()
    return log


@differential
def test_hook_exception_propagates(T):
    p, opt = make(T)

    def boom(o, a, k):
        raise KeyError("from hook")

    opt.register_step_pre_hook(boom)
    return catch(opt.step), p


@differential
def test_subclass_step_gets_hooks_once(T):
    log = []

    class MyOpt(T.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.5})

        def step(self, closure=None):
            log.append("step")
            for group in self.param_groups:
                for p in group["params"]:
                    p.data.add_(p.grad, alpha=-group["lr"])

    p = T.tensor(INIT, requires_grad=True)
    p.grad = T.tensor(GRAD)
    opt = MyOpt([p])
    opt.register_step_pre_hook(lambda o, a, k: log.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: log.append("post"))
    opt.step()
    opt.step()
    return log, p, opt.state_dict()


@differential
def test_state_dict_hooks_with_prepend(T):
    log = []
    p, opt = make(T, momentum=0.9)
    opt.step()
    opt.register_state_dict_pre_hook(lambda o: log.append("pre-a"))
    opt.register_state_dict_pre_hook(lambda o: log.append("pre-b"), prepend=True)

    def post_in_place(o, sd):
        log.append("post-a")
        sd["extra"] = 1

    def post_replace(o, sd):
        log.append(("post-b", sorted(sd)))
        return {"state": sd["state"], "param_groups": sd["param_groups"], "replaced": True}

    opt.register_state_dict_post_hook(post_in_place)
    opt.register_state_dict_post_hook(lambda o, sd: log.append(("post-first", sorted(sd))), prepend=True)
    h = opt.register_state_dict_post_hook(post_replace)
    sd = opt.state_dict()
    h.remove()
    sd2 = opt.state_dict()
    return log, sorted(sd), sorted(sd2)


@differential
def test_load_state_dict_hooks(T):
    log = []
    p, opt = make(T, momentum=0.9)
    opt.step()
    saved = opt.state_dict()
    q, opt2 = make(T, momentum=0.9)

    def change_lr(o, sd):
        log.append(("pre-change", o is opt2, sd is saved, sorted(sd)))
        groups = [dict(g, lr=0.25) for g in sd["param_groups"]]
        return {"state": sd["state"], "param_groups": groups}

    opt2.register_load_state_dict_pre_hook(change_lr)
    opt2.register_load_state_dict_pre_hook(lambda o, sd: log.append(("pre-first", sd["param_groups"][0]["lr"])),
                                           prepend=True)
    opt2.register_load_state_dict_post_hook(lambda o: log.append(("post", o.param_groups[0]["lr"])))
    opt2.register_load_state_dict_post_hook(lambda o: log.append(("post-first", len(o.state))), prepend=True)
    opt2.load_state_dict(saved)
    opt2.step()
    return log, q, saved["param_groups"][0]["lr"], opt2.state[q]["momentum_buffer"]


@differential
def test_hooks_survive_lr_scheduler_wrapping(T):
    log = []
    p, opt = make(T)
    opt.register_step_post_hook(lambda o, a, k: log.append(("post", o.param_groups[0]["lr"])))
    sched = T.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        opt.step()
        sched.step()
    return log, p


@pytest.mark.parametrize("where", ["pre", "post", "global_pre", "global_post"])
@pytest.mark.parametrize("others", [0, 1])
@differential
def test_step_hook_removing_its_own_handle_during_step(T, where, others):
    # torch iterates the live registries: removing a hook while they are iterated raises
    # RuntimeError at the next iteration step; the registries stay usable afterwards
    log = []
    p, opt = make(T)
    reg = importlib.import_module(T.__name__ + ".optim.optimizer")
    register = {"pre": opt.register_step_pre_hook, "post": opt.register_step_post_hook,
                "global_pre": reg.register_optimizer_step_pre_hook,
                "global_post": reg.register_optimizer_step_post_hook}[where]
    handles = []

    def remove_self(o, a, k):
        log.append("remove_self")
        handles[0].remove()

    handles.append(register(remove_self))
    for i in range(others):
        handles.append(register(lambda o, a, k, i=i: log.append(("other", i))))
    try:
        first = catch(opt.step)
        log.append("--")
        second = catch(opt.step)
    finally:
        for h in handles:
            h.remove()
    return log, first, second, p


@differential
def test_step_hook_adding_a_hook_during_step(T):
    log = []
    p, opt = make(T)
    handles = []

    def add_one(o, a, k):
        log.append("add")
        if not handles[1:]:
            handles.append(opt.register_step_pre_hook(lambda o, a, k: log.append("added")))

    handles.append(opt.register_step_pre_hook(add_one))
    first = catch(opt.step)
    second = catch(opt.step)
    return log, first, second, p
