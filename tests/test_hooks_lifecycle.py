"""The backward pass's lifecycle: ``hookgrad.hooks.register_backward_start_hook`` /
``register_backward_end_hook`` / ``call_at_backward_end``, and torch's private form of the last,
``Variable._execution_engine.queue_callback`` (differential: data-parallel code calls it)."""
from __future__ import annotations

import pytest

import hookgrad
import hookgrad.hooks as H
from difftest import catch, differential


@pytest.fixture
def events():
    log = []
    handles = [H.register_backward_start_hook(lambda info: log.append(("start", info))),
               H.register_backward_end_hook(lambda info: log.append(("end", info)))]
    yield log
    for handle in handles:
        handle.remove()


# ---- torch's queue_callback, differentially ------------------------------------------------------
@differential
def test_queued_callbacks_run_after_the_last_node_in_queue_order(T):
    queue = T.autograd.Variable._execution_engine.queue_callback
    log = []
    w = T.ones(3, requires_grad=True)
    v = T.ones(2, requires_grad=True)

    def later():
        log.append("queued by a callback")

    def callback():
        log.append(("callback", w.grad, T.is_grad_enabled()))
        queue(later)

    def tensor_hook(grad):
        log.append("tensor hook")
        queue(callback)
        with T.enable_grad():
            inner = (v * 3).sum()
        queue(lambda: log.append("second outer callback"))
        inner.backward()  # a nested pass runs its own callbacks, at its own end
        log.append(("nested pass done", v.grad))

    w.register_hook(tensor_hook)
    w.register_post_accumulate_grad_hook(lambda p: log.append("post-accumulate"))
    v.register_post_accumulate_grad_hook(
        lambda p: [log.append("nested post-accumulate"), queue(lambda: log.append("nested callback"))] and None)
    (w * 2).sum().backward()
    return log


@differential
def test_queue_callback_outside_backward_and_failing_passes(T):
    queue = T.autograd.Variable._execution_engine.queue_callback
    log = [catch(queue, lambda: None)]

    def failing(grad):
        queue(lambda: log.append("never runs"))
        raise ValueError("hook failed")

    z = T.ones(2, requires_grad=True)
    z.register_hook(failing)
    log.append(catch((z * 2).sum().backward))

    def raising_callback():
        raise KeyError("callback failed")

    z2 = T.ones(2, requires_grad=True)
    z2.register_hook(lambda g: queue(raising_callback))
    log.append(catch((z2 * 2).sum().backward))
    return log


@differential
def test_callbacks_run_in_the_pass_grad_mode(T):
    queue = T.autograd.Variable._execution_engine.queue_callback
    log = []
    x = T.ones(2, requires_grad=True)
    x.register_hook(lambda g: queue(lambda: log.append(T.is_grad_enabled())))
    T.autograd.grad((x * x).sum(), x, create_graph=True)
    (x * x).sum().backward()
    return log


# ---- start and end hooks ---------------------------------------------------------------------------
def test_start_and_end_hooks_frame_each_pass(events):
    w = hookgrad.randn(3, requires_grad=True)
    order = []
    w.register_post_accumulate_grad_hook(lambda p: order.append(("post-accumulate", len(events))) and None)
    loss = (w * 2).sum()
    loss.backward(retain_graph=True)
    kinds = [kind for kind, _ in events]
    assert kinds == ["start", "end"]
    start, end = events[0][1], events[1][1]
    assert start is end and start.id == end.id
    assert start.kind == "backward" and start.roots == (loss,) and start.inputs is None
    assert start.retain_graph is True and start.create_graph is False and end.error is None
    assert order == [("post-accumulate", 1)]  # between start and end

    events.clear()
    (gw,) = hookgrad.autograd.grad(loss, w, create_graph=True)
    assert [kind for kind, _ in events] == ["start", "end"]
    info = events[0][1]
    assert info.kind == "grad" and info.inputs == (w,) and info.create_graph and info.retain_graph
    assert info.id > start.id


def test_backward_with_inputs_reports_them(events):
    a = hookgrad.ones(2, requires_grad=True)
    b = hookgrad.ones(2, requires_grad=True)
    (a * b).sum().backward(inputs=[b])
    info = events[0][1]
    assert info.inputs == (b,) and info.kind == "backward"


def test_end_hook_sees_the_error_and_it_propagates(events):
    z = hookgrad.ones(2, requires_grad=True)

    def failing(grad):
        raise ValueError("hook failed")

    z.register_hook(failing)
    with pytest.raises(ValueError, match="hook failed"):
        (z * 2).sum().backward()
    assert [kind for kind, _ in events] == ["start", "end"]
    assert isinstance(events[1][1].error, ValueError)
    # the engine is usable afterwards
    y = hookgrad.ones(2, requires_grad=True)
    (y * 3).sum().backward()
    assert y.grad.tolist() == [3.0, 3.0]


def test_a_failing_start_hook_ends_the_pass_before_any_node():
    ran = []
    ends = []
    x = hookgrad.ones(2, requires_grad=True)
    x.register_hook(lambda g: ran.append(g))
    h1 = H.register_backward_start_hook(lambda info: 1 / 0)
    h2 = H.register_backward_end_hook(lambda info: ends.append(type(info.error)))
    try:
        with pytest.raises(ZeroDivisionError):
            (x * 2).sum().backward()
    finally:
        h1.remove()
        h2.remove()
    assert ran == [] and ends == [ZeroDivisionError] and x.grad is None


def test_call_at_backward_end_runs_before_end_hooks_and_sees_final_grads(events):
    lin = hookgrad.nn.Linear(3, 2)
    seen = []

    def mark_ready(p):
        H.call_at_backward_end(lambda: seen.append(("callback", len(events), p.grad.clone())))

    for p in lin.parameters():
        p.register_post_accumulate_grad_hook(mark_ready)
    lin(hookgrad.ones(4, 3)).sum().backward()
    assert [s[:2] for s in seen] == [("callback", 1), ("callback", 1)]  # after start, before end
    grads = sorted((tuple(s[2].shape) for s in seen))
    assert grads == [(2,), (2, 3)]
    assert [kind for kind, _ in events] == ["start", "end"]


def test_nested_passes_get_their_own_start_end_and_callbacks(events):
    outer = hookgrad.ones(2, requires_grad=True)
    inner_leaf = hookgrad.ones(2, requires_grad=True)
    order = []

    def hook(grad):
        H.call_at_backward_end(lambda: order.append("outer callback"))
        with hookgrad.enable_grad():
            (inner_leaf * 2).sum().backward()
        order.append("inner returned")

    inner_leaf.register_hook(lambda g: H.call_at_backward_end(lambda: order.append("inner callback")))
    outer.register_hook(hook)
    (outer * 2).sum().backward()
    assert order == ["inner callback", "inner returned", "outer callback"]
    kinds = [(kind, info.id) for kind, info in events]
    outer_id, inner_id = kinds[0][1], kinds[1][1]
    assert kinds == [("start", outer_id), ("start", inner_id), ("end", inner_id), ("end", outer_id)]


def test_removed_hooks_stop_and_bad_use_is_refused():
    calls = []
    handle = H.register_backward_end_hook(lambda info: calls.append(info.id))
    x = hookgrad.ones(1, requires_grad=True)
    (x * 1).sum().backward()
    handle.remove()
    (x * 1).sum().backward()
    assert len(calls) == 1
    with pytest.raises(TypeError, match="register_backward_start_hook.*callable"):
        H.register_backward_start_hook("not a function")
    with pytest.raises(TypeError, match="register_backward_end_hook.*callable"):
        H.register_backward_end_hook(None)
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass"):
        H.call_at_backward_end(lambda: None)
    with pytest.raises(TypeError, match="call_at_backward_end"):
        H.call_at_backward_end(3)


def test_handles_work_as_context_managers():
    calls = []
    x = hookgrad.ones(1, requires_grad=True)
    with H.register_backward_start_hook(lambda info: calls.append(info.kind)):
        (x * 1).sum().backward()
    (x * 1).sum().backward()
    assert calls == ["backward"]
