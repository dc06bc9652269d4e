"""``hookgrad.hooks.context()``: inside every kind of hook it says the phase, the backward pass's
id, the module and which call of it this is, and whether checkpointing recomputes; outside hooks
it is None. Property tests: each answer is checked against something independent of it (the
shapes a call was made with, the pass id its start hook saw, the order calls were made in)."""
from __future__ import annotations

import gc
import weakref

import pytest

import hookgrad
import hookgrad.hooks as H
from hookgrad.utils.checkpoint import checkpoint


def snapshot(ctx):
    return None if ctx is None else (ctx.phase, ctx.id, ctx.module, ctx.call_index, ctx.recompute, ctx.kind)


def test_outside_hooks_it_is_none():
    seen = []

    class Probe(hookgrad.nn.Module):
        def forward(self, x):
            seen.append(H.context())
            return x * 2

    assert H.context() is None
    Probe()(hookgrad.ones(2))
    assert seen == [None] and H.context() is None


def test_forward_hooks_name_the_module_and_the_call_index_of_a_shared_module():
    shared = hookgrad.nn.Linear(3, 3)
    model = hookgrad.nn.Sequential(shared, hookgrad.nn.Tanh(), shared, hookgrad.nn.Tanh(), shared)
    log = []
    shared.register_forward_pre_hook(lambda m, args: log.append(("pre", args[0].shape[0], snapshot(H.context()))))
    shared.register_forward_hook(lambda m, args, out: log.append(("post", snapshot(H.context()))))
    for _ in range(2):  # every forward counts from 0 again
        model(hookgrad.randn(4, 3))
    indices = [entry[-1][3] for entry in log]
    assert indices == [0, 0, 1, 1, 2, 2] * 2
    assert all(entry[-1][0] == "forward" and entry[-1][2] is shared and entry[-1][1] is None for entry in log)
    assert {entry[-1][5] for entry in log} == {"forward_pre_hook", "forward_hook"}


def test_calls_made_one_by_one_are_each_a_forward_of_their_own():
    lin, seen = hookgrad.nn.Linear(2, 2), []
    lin.register_forward_hook(lambda m, a, o: seen.append(H.context().call_index))
    for _ in range(3):
        lin(hookgrad.randn(1, 2))
    assert seen == [0, 0, 0]


def test_backward_hooks_know_which_forward_call_their_gradient_belongs_to():
    shared = hookgrad.nn.Linear(3, 3)
    seen = []

    def backward_hook(module, grad_input, grad_output):
        ctx = H.context()
        # call k was made with k + 1 rows: the gradient's shape tells the call independently
        seen.append((ctx.call_index, grad_output[0].shape[0] - 1, ctx.phase, ctx.module is shared))

    shared.register_full_backward_hook(backward_hook)
    shared.register_full_backward_pre_hook(lambda m, go: seen.append(("pre", H.context().call_index)))

    class Net(hookgrad.nn.Module):
        def __init__(self):
            super().__init__()
            self.shared = shared

        def forward(self, x):
            return sum(self.shared(x[: k + 1]).sum() for k in range(3))

    Net()(hookgrad.randn(3, 3, requires_grad=True)).backward()
    hooks = [s for s in seen if s[0] != "pre"]
    assert sorted(hooks) == [(k, k, "backward", True) for k in range(3)]
    assert all(a == b for a, b, *_ in hooks)
    assert sorted(s[1] for s in seen if s[0] == "pre") == [0, 1, 2]


def test_the_pass_id_is_the_one_the_backward_start_hook_saw():
    ids, seen = [], []
    start = H.register_backward_start_hook(lambda info: ids.append((info.id, H.context().id)))
    end = H.register_backward_end_hook(lambda info: seen.append(("end", H.context().phase, H.context().id)))
    try:
        x = hookgrad.randn(3, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: seen.append(("tensor", H.context().phase, H.context().id)))
        x.register_post_accumulate_grad_hook(lambda t: seen.append(("post-acc", H.context().phase, H.context().id)))
        y.grad_fn.register_hook(lambda gi, go: seen.append(("node", H.context().phase, H.context().id)))
        y.sum().backward(retain_graph=True)
        y.sum().backward()
    finally:
        start.remove()
        end.remove()
    assert ids[0][0] == ids[0][1] and ids[1][0] == ids[1][1] and ids[0][0] != ids[1][0]
    first = [s for s in seen[:4]]
    assert [s[0] for s in first] == ["tensor", "node", "post-acc", "end"]
    assert all(s[1] == "backward" and s[2] == ids[0][0] for s in first)
    assert all(s[2] == ids[1][0] for s in seen[4:])
    assert H.context() is None


def test_optimizer_step_and_state_dict_hooks():
    lin = hookgrad.nn.Linear(2, 2)
    opt = hookgrad.optim.SGD(lin.parameters(), lr=0.1)
    seen = []
    opt.register_step_pre_hook(lambda o, a, k: seen.append(snapshot(H.context())[0::5]))
    opt.register_step_post_hook(lambda o, a, k: seen.append(snapshot(H.context())[0::5]))
    lin.register_state_dict_pre_hook(lambda m, p, k: seen.append(snapshot(H.context())[0::5]))
    lin.register_load_state_dict_post_hook(lambda m, keys: seen.append(snapshot(H.context())[0::5]))
    lin(hookgrad.randn(1, 2)).sum().backward()
    opt.step()
    lin.load_state_dict(lin.state_dict())
    assert seen == [("optimizer_step", "optimizer_step_pre_hook"), ("optimizer_step", "optimizer_step_post_hook"),
                    ("state_dict", "state_dict_pre_hook"), ("state_dict", "load_state_dict_post_hook")]


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_recompute_is_true_while_checkpointing_reruns_the_forward(use_reentrant):
    lin = hookgrad.nn.Linear(3, 3)
    seen = []
    lin.register_forward_hook(lambda m, a, o: seen.append((H.context().recompute, H.context().phase)))
    x = hookgrad.randn(2, 3, requires_grad=True)
    checkpoint(lambda t: lin(t).tanh(), x, use_reentrant=use_reentrant).sum().backward()
    assert seen == [(False, "forward"), (True, "forward")]


def test_a_hook_that_calls_another_hooked_module_sees_its_own_context_again_after():
    inner, outer = hookgrad.nn.Linear(2, 2), hookgrad.nn.Linear(2, 2)
    seen = []
    inner.register_forward_hook(lambda m, a, o: seen.append(("inner", H.context().module is inner)))

    def outer_hook(m, a, o):
        inner(o)
        seen.append(("outer", H.context().module is outer, H.context().call_index))
    outer.register_forward_hook(outer_hook)
    outer(hookgrad.randn(1, 2))
    assert seen == [("inner", True), ("outer", True, 0)]


def test_counting_calls_keeps_no_module_alive():
    lin = hookgrad.nn.Linear(2, 2)
    model = hookgrad.nn.Sequential(lin, hookgrad.nn.ReLU())
    lin.register_forward_hook(lambda m, a, o: None if H.context() else None)
    model(hookgrad.randn(1, 2))
    refs = weakref.ref(lin), weakref.ref(model)
    del lin, model
    gc.collect()
    assert refs[0]() is None and refs[1]() is None


def test_an_error_in_a_hook_leaves_no_context_behind():
    lin = hookgrad.nn.Linear(2, 2)

    def bad(m, a, o):
        raise ValueError("boom")
    handle = lin.register_forward_hook(bad)
    with pytest.raises(ValueError):
        lin(hookgrad.randn(1, 2))
    handle.remove()
    assert H.context() is None
    seen = []
    lin.register_forward_hook(lambda m, a, o: seen.append(H.context().call_index))
    lin(hookgrad.randn(1, 2))
    assert seen == [0]
