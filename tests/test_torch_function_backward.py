"""What the Python code a backward pass calls sees of ``__torch_function__``, on torch and on hookgrad.

torch's engine runs every hook (tensor, node pre/post, post-accumulate-grad, module full backward and
backward pre-hooks, multi-grad, saved-tensor unpack), every final callback and every custom Function's
backward under the torch-function state ``backward()``/``autograd.grad()`` was called under, while its
own formulas consult no override. Each scenario below runs one kind of hook whose body does ``g * w``
(``w`` a captured tensor subclass that logs) and ``g.neg()`` (which an active mode logs), with backward
called in one of several ways, and records what reached which ``__torch_function__``."""
from __future__ import annotations

import pytest
from difftest import catch, differential
from torch_function_logs import func_name as _name

HOOK_KINDS = ["tensor", "leaf_tensor", "node_pre", "node_post", "post_accumulate", "module_full",
              "module_pre", "module_legacy", "multi_all", "multi_any", "unpack", "final_callback",
              "function_backward"]


def _logging_subclass(T, log):
    class Logged(T.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            name = _name(T, func)
            if not name.endswith(("__get__", "__set__")):  # property reads differ in number, not in kind
                log.append(("subclass", name))
            return super().__torch_function__(func, types, args, kwargs or {})
    return Logged


def _logging_mode(T, log, tag):
    class LoggingMode(T.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = _name(T, func)
            if not name.endswith(("__get__", "__set__")):
                log.append((tag, name))
            return func(*args, **(kwargs or {}))
    return LoggingMode


def _build(T, kind, log, w):
    """A small graph with one hook of ``kind``; returns (leaf, loss). The hook's body logs its name,
    then runs ``g * w`` and ``g.neg()``."""

    def touch(g):
        log.append(("hook", kind))
        g * w
        g.neg()

    x = T.ones(3, requires_grad=True)
    if kind == "leaf_tensor":
        x.register_hook(lambda g: touch(g))
    if kind == "post_accumulate":
        x.register_post_accumulate_grad_hook(lambda t: touch(t.grad))
    if kind.startswith("module"):
        layer = T.nn.Linear(3, 3)
        with T.no_grad():
            layer.weight.fill_(0.5)
            layer.bias.fill_(0.0)
        if kind == "module_full":
            layer.register_full_backward_hook(lambda m, gi, go: touch(go[0]))
        elif kind == "module_pre":
            layer.register_full_backward_pre_hook(lambda m, go: touch(go[0]))
        else:
            layer.register_backward_hook(lambda m, gi, go: touch(go[0]))
        log.append(("keeps alive", layer))  # torch's legacy hook refuses to run for a dead module
        return x, layer(x * 2).sum()
    if kind.startswith("multi"):
        b = T.ones(3, requires_grad=True)
        mode = kind.split("_")[1]
        T.autograd.graph.register_multi_grad_hook(
            (x, b), (lambda grads: touch(grads[0])) if mode == "all" else (lambda g: touch(g)), mode=mode)
        return x, (x * 2 + b * 3).sum()
    if kind == "unpack":
        def unpack(t):
            touch(t)
            return t

        with T.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
            y = x * x
        return x, y.sum()
    if kind == "function_backward":
        class Double(T.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                return t * 2

            @staticmethod
            def backward(ctx, g):
                touch(g)
                return g * 2

        return x, Double.apply(x).sum()
    y = x * 3
    if kind == "tensor":
        y.register_hook(lambda g: touch(g))
    elif kind == "node_pre":
        y.grad_fn.register_prehook(lambda go: touch(go[0]))
    elif kind == "node_post":
        y.grad_fn.register_hook(lambda gi, go: touch(gi[0]))
    elif kind == "final_callback":
        def queue(g):
            T.autograd.Variable._execution_engine.queue_callback(lambda: touch(g))

        y.register_hook(queue)
    return x, y.sum()


def _run(T, kind, how):
    log = []
    w = T.full((3,), 2.0).as_subclass(_logging_subclass(T, log))
    Mode = _logging_mode(T, log, "mode")
    if how == "mode_around_forward":
        with Mode():
            x, loss = _build(T, kind, log, w)
    else:
        x, loss = _build(T, kind, log, w)
    log.append(("backward", how))
    if how in ("plain", "mode_around_forward"):
        loss.backward()
    elif how == "subclasses_disabled":
        with T._C.DisableTorchFunctionSubclass():
            loss.backward()
    elif how == "all_disabled":
        with Mode(), T._C.DisableTorchFunction():
            loss.backward()
    elif how == "mode_around_backward":
        with Mode():
            loss.backward()
    elif how == "nested_modes_around_backward":
        with _logging_mode(T, log, "outer")(), _logging_mode(T, log, "inner")():
            loss.backward()
    elif how == "mode_around_autograd_backward":
        with Mode():
            T.autograd.backward([loss])
    elif how == "mode_around_autograd_grad":
        with Mode():
            log.append(("raised", catch(T.autograd.grad, [loss], [x])))
    elif how == "mode_around_engine":
        # the engine's own entry consults no override: the mode stays on for the whole pass
        with Mode():
            T.autograd.Variable._execution_engine.run_backward((loss,), (T.ones(()),), False, False, (),
                                                               True, True)
    elif how == "subclass_root":
        # the subclass's default __torch_function__ runs backward() with subclasses disabled
        loss.as_subclass(type(w)).backward()
    # from backward() on: the forward's own events under a mode are another matter
    log = [entry for entry in log[log.index(("backward", how)):] if entry[0] != "keeps alive"]
    log = [(tag, type(what).__name__ if tag == "raised" else what) for tag, what in log]
    return log, None if x.grad is None else type(x.grad).__name__


HOWS = ["plain", "subclasses_disabled", "all_disabled", "mode_around_forward", "mode_around_backward",
        "nested_modes_around_backward", "mode_around_autograd_backward", "mode_around_autograd_grad",
        "mode_around_engine", "subclass_root"]


@pytest.mark.parametrize("kind", HOOK_KINDS)
@pytest.mark.parametrize("how", HOWS)
@differential
def test_hooks_run_under_the_callers_torch_function_state(T, kind, how):
    return _run(T, kind, how)


@differential
def test_a_mode_entered_inside_a_hook_sees_its_ops(T):
    log = []
    Mode = _logging_mode(T, log, "in hook")
    Logged = _logging_subclass(T, log)
    x = T.ones(3, requires_grad=True)

    def hook(g):
        with Mode():
            return g + 1

    x.register_hook(hook)
    (x * 2).sum().as_subclass(Logged).backward()
    return log, x.grad


@differential
def test_hook_replacing_a_gradient_with_a_subclass(T):
    # what a hook returns under the caller's state reaches the formulas; their own ops stay unseen
    log = []
    Logged = _logging_subclass(T, log)
    x = T.ones(3, requires_grad=True)
    y = x.exp()
    y.register_hook(lambda g: (g * 2).as_subclass(Logged))
    log.clear()
    y.sum().backward()
    return log, type(x.grad).__name__, x.grad


@differential
def test_pack_hooks_of_a_create_graph_pass_see_the_callers_state(T):
    # the formulas' own ops under create_graph save tensors: their pack hooks are user code too
    log = []
    w = T.full((3,), 2.0).as_subclass(_logging_subclass(T, log))

    def pack(t):
        log.append(("hook", "pack"))
        t * w
        return t

    def unpack(t):
        log.append(("hook", "unpack"))
        return t

    x = T.ones(3, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = (x.exp() * x).sum()
        log.clear()
        (g,) = T.autograd.grad(y, x, create_graph=True)
        with T._C.DisableTorchFunctionSubclass():
            log.append(("second pass", "subclasses disabled"))
            T.autograd.grad(g.sum(), x)
    return log, g
