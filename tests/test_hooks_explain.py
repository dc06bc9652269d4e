"""``hookgrad.hooks.explain()``: which hooks fired in a block's passes, which did not, and why.

torch has no counterpart, so these are property tests: every reason the issue names is produced
by a program that really has that cause, ``fired`` holds exactly what the hooks' own logs show,
explain changes nothing (same gradients, same hook calls, registries as before), and HookTrace
lists the skipped hooks too.
"""
from __future__ import annotations

import json
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hookgrad
import hookgrad.hooks as H
from hookgrad.hooks import _explain
from hookgrad.tools import HookTrace

nn = hookgrad.nn


def _reasons(report):
    return [(r.kind, r.owner, r.reason) for r in report.skipped]


def _net():
    hookgrad.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


def test_fired_hooks_are_listed_with_owner_kind_and_site():
    net = _net()
    log = []

    def fwd(m, a, o):
        log.append("fwd")

    def full(m, gi, go):
        log.append("full")

    def grad_hook(g):
        log.append("tensor")
    net[0].register_forward_hook(fwd)
    net[2].register_full_backward_hook(full)
    net[0].weight.register_hook(grad_hook)
    with H.explain(net) as report:
        net(hookgrad.randn(2, 3)).sum().backward()
    assert log == ["fwd", "full", "tensor"]
    fired = [(r.kind, r.owner, r.fn) for r in report.fired]
    assert fired == [("forward_hook", "0", fwd), ("full_backward_hook", "2", full), ("tensor_hook", "0.weight", grad_hook)]
    assert report.skipped == []
    assert all(r.registered_at.startswith("test_hooks_explain.py:") for r in report.fired)


def test_no_output_required_grad_and_output_not_a_tensor():
    net = _net()
    net[0].register_full_backward_hook(lambda *a: None)

    class Meta(nn.Module):
        def forward(self, x):
            return {"x": x}
    meta = Meta()
    meta.register_full_backward_pre_hook(lambda *a: None)
    with H.explain() as report, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with hookgrad.no_grad():
            net(hookgrad.randn(2, 3))
        meta(hookgrad.randn(2, 3, requires_grad=True))
    assert _reasons(report) == [("full_backward_hook", "Linear", _explain.NO_OUTPUT_REQUIRED_GRAD),
                                ("full_backward_pre_hook", "Meta", _explain.OUTPUT_NOT_TENSOR)]


def test_tensor_not_reached_by_inputs_autograd_grad_or_an_unused_branch():
    x = hookgrad.randn(3, requires_grad=True)
    w = hookgrad.randn(3, requires_grad=True)
    with H.explain() as report:
        a = x * 2
        b = w * 3
        a.register_hook(lambda g: None)          # on the path of w's gradient? no
        unused = x.exp()
        unused.register_hook(lambda g: None)     # never part of any pass
        (a + b).sum().backward(inputs=[w])
        c = x * w
        x.register_post_accumulate_grad_hook(lambda t: None)
        hookgrad.autograd.grad(c.sum(), [w])
    reasons = [r.reason for r in report.skipped]
    assert reasons[0].startswith(_explain.NOT_REACHED) and "backward(inputs=...)" in reasons[0]
    assert reasons[1].startswith(_explain.NOT_REACHED) and "autograd.grad" in reasons[1]
    assert report.skipped[1].kind == "post_accumulate_grad_hook"
    assert reasons[2] == _explain.NOT_REACHED + " (an unused branch)"
    assert len(reasons) == 3


def test_gradient_none_is_noted_on_a_hook_that_ran_with_none():
    x = hookgrad.ones(4, requires_grad=True)
    log = []
    with H.explain() as report:
        a, b = (x * 2).split(2)
        b.register_hook(lambda g: log.append(g))
        a.sum().backward()
    assert log == [None]
    [record] = report.fired
    assert record.kind == "tensor_hook" and record.reason == _explain.GRADIENT_NONE


def test_removed_during_the_pass_and_live_hook_removed_before_backward():
    x = hookgrad.ones(2, requires_grad=True)
    net = _net()
    live = net[2].register_full_backward_hook(lambda *a: None, live=True)
    with H.explain(net) as report:
        y = x * 2
        z = y * 3
        later = y.register_hook(lambda g: None)
        z.register_hook(lambda g: later.remove())   # z's node runs before y's
        out = net(hookgrad.randn(2, 3, requires_grad=True))
        live.remove()
        (z.sum() + out.sum()).backward()
    assert [(r.kind, r.reason) for r in report.skipped] == [("tensor_hook", _explain.REMOVED),
                                                           ("full_backward_hook", _explain.REMOVED)]


def test_registered_too_late_for_the_call():
    net = _net()
    net[0].register_full_backward_pre_hook(lambda *a: None)
    with H.explain(net) as report:
        out = net(hookgrad.randn(2, 3, requires_grad=True))
        net[0].register_full_backward_hook(lambda *a: None)   # after the call's forward
        out.sum().backward()
    assert [(r.kind, r.owner, r.reason) for r in report.skipped] == [("full_backward_hook", "0", _explain.TOO_LATE)]
    assert [r.kind for r in report.fired] == ["full_backward_pre_hook"]


def test_live_hooks_module_skipped_by_the_pass():
    net = _net()
    net[0].register_full_backward_hook(lambda *a: None, live=True)
    with H.explain(net) as report:
        out = net(hookgrad.randn(2, 3, requires_grad=True))
        hookgrad.autograd.grad(out.sum(), [net[2].weight])
    assert _reasons(report) == [("full_backward_hook", "0", _explain.LIVE_MODULE_SKIPPED)]


def test_module_never_reached_is_reported_at_the_end():
    net = _net()
    net[1].register_full_backward_hook(lambda *a: None)
    with H.explain(net) as report:
        net(hookgrad.randn(2, 3, requires_grad=True))
    [(kind, owner, reason)] = _reasons(report)
    assert owner == "1" and reason.startswith(_explain.MODULE_NOT_REACHED)
    assert report.rows[0][0] == "end"


def test_the_table_reads_well():
    net = _net()
    net[0].register_full_backward_hook(lambda *a: None)
    with H.explain(net) as report:
        with hookgrad.no_grad():
            net(hookgrad.randn(1, 3))
    text = str(report)
    assert text.splitlines()[0].split() == ["phase", "result", "kind", "owner", "hook", "reason", "registered", "at"]
    assert "no output of the module's call required grad" in text and "test_hooks_explain.py:" in text
    with H.explain() as empty:
        pass
    assert "no hook was due" in str(empty)


def test_explain_changes_nothing_and_cleans_up():
    def program():
        net = _net()
        log = []
        net[0].register_full_backward_hook(lambda m, gi, go: log.append(("full", gi[0].sum().item())))
        net[2].register_full_backward_pre_hook(lambda m, go: (go[0] * 2,), live=True)
        net[0].weight.register_hook(lambda g: log.append(("w", g.sum().item())))
        x = hookgrad.randn(2, 3, requires_grad=True)
        y = net(x)
        y.register_hook(lambda g: g * 3)
        y.sum().backward()
        return log, x.grad.tolist(), [p.grad.tolist() for p in net.parameters()], net
    plain = program()[:3]
    with H.explain() as report:
        explained = program()
    assert explained[:3] == plain
    assert len(report.fired) == 4
    net = explained[3]
    assert all(not getattr(r.fn, "_explain_own", False) for r in H.inventory(net))
    assert _explain._watcher is None
    assert not hookgrad.nn.modules.module._backward_hook_call_observers
    assert hookgrad.nn.modules.module._hook_observer is None
    assert not hookgrad.autograd.engine._backward_start_hooks and not hookgrad.autograd.engine._backward_end_hooks


def test_nested_blocks_each_get_their_own_end():
    net = _net()
    net[0].register_full_backward_hook(lambda *a: None)
    with H.explain() as outer:
        net(hookgrad.randn(1, 3, requires_grad=True))
        with H.explain() as inner:
            pass
    assert inner.skipped == [] and len(outer.skipped) == 1


def test_explain_takes_models_only():
    with pytest.raises(TypeError, match="takes models"):
        H.explain(hookgrad.ones(2))


def test_hooktrace_lists_skipped_hooks_alone_and_inside_explain(tmp_path):
    net = _net()
    net[0].register_full_backward_hook(lambda *a: None, live=True)
    with HookTrace(net) as trace:
        out = net(hookgrad.randn(2, 3, requires_grad=True))
        hookgrad.autograd.grad(out.sum(), [net[2].weight])
    assert [(s.kind, s.owner, s.reason) for s in trace.skipped] == [
        ("full_backward_hook", "0", _explain.LIVE_MODULE_SKIPPED)]
    events = json.load(open(trace.save(str(tmp_path / "t.json"))))["traceEvents"]
    skipped = [e for e in events if e.get("cat") == "skipped"]
    assert len(skipped) == 1 and skipped[0]["args"]["reason"] == _explain.LIVE_MODULE_SKIPPED
    with H.explain(net) as report, HookTrace(net) as trace2:
        with hookgrad.no_grad():
            net(hookgrad.randn(1, 3))
    assert len(trace2.skipped) == 1 and len(report.skipped) == 1
    assert _explain._watcher is None


# ---- a property: every hook of a random program is fired or skipped, as its log says ---------------
@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["mul", "exp", "branch"]), min_size=1, max_size=5),
       st.sampled_from(["backward", "inputs", "grad"]))
def test_property_fired_is_what_ran_and_the_rest_is_skipped(ops, how):
    x = hookgrad.ones(3, requires_grad=True)
    w = hookgrad.ones(3, requires_grad=True)
    ran = []
    hooks = {}
    with H.explain() as report:
        h = x
        dangling = []
        for i, op in enumerate(ops):
            if op == "branch":
                side = h * 5
                dangling.append(side)
                t = side
            else:
                h = h * w if op == "mul" else h.exp()
                t = h

            def hook(g, i=i):
                ran.append(i)
            hooks[i] = hook
            t.register_hook(hook)
        loss = (h * w).sum()
        if how == "backward":
            loss.backward()
        elif how == "inputs":
            loss.backward(inputs=[w])
        else:
            hookgrad.autograd.grad(loss, [x])
    fired = {ops_i for ops_i, f in hooks.items() if any(r.fn is f for r in report.fired)}
    skipped = {ops_i for ops_i, f in hooks.items() if any(r.fn is f for r in report.skipped)}
    assert fired == set(ran)
    assert fired | skipped == set(hooks) and not fired & skipped
    assert all(r.reason.startswith(_explain.NOT_REACHED) for r in report.skipped)


def test_a_pass_that_raises_reports_the_hooks_it_did_not_reach_and_restores_them():
    x = hookgrad.ones(2, requires_grad=True)
    log = []

    def late(g):
        log.append("late")

    def boom(g):
        raise ValueError("boom")
    with H.explain() as report:
        y = x * 2
        y.register_hook(late)
        z = y * 3
        z.register_hook(boom)
        with pytest.raises(ValueError, match="boom"):
            z.sum().backward()
    assert [(r.fn, r.reason) for r in report.skipped] == [(late, _explain.PASS_RAISED)]
    assert [r.fn for r in report.fired] == [boom]
    assert [r.fn for r in H.inventory(y, z)] == [late, boom]   # the originals, not wrappers
    z.register_hook(lambda g: None)
    assert list(z._backward_hooks.values())[0] is boom
