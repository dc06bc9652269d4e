"""The hook tools (hookgrad.tools) on torch and on hookgrad modules: what they record, that the two
frameworks agree given the same weights, and that every hook is gone when a tool closes."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

import hookgrad
from difftest import assert_same, normalize
from hookgrad.tools import (ActivationCapture, GradientFlow, HookTrace, NonFiniteError, NonFiniteEvent,
                            NonFiniteSentinel)


def hookgrad_missing(*names: str) -> list[str]:
    """Which of the named attributes (``"nn.Linear"``, ``"optim.SGD"``) hookgrad lacks; all of
    them when ``hookgrad.nn`` or ``hookgrad.optim`` cannot be imported."""
    try:
        import hookgrad.nn  # noqa: F401
        import hookgrad.optim  # noqa: F401
    except ImportError:
        return list(names)
    missing = []
    for name in names:
        obj = hookgrad
        for part in name.split("."):
            obj = getattr(obj, part, None)
        if obj is None:
            missing.append(name)
    return missing


def needs_hookgrad_parts(*names: str):
    missing = hookgrad_missing(*names)
    return pytest.mark.skipif(bool(missing), reason=f"hookgrad.nn not available (missing: {', '.join(missing)})")


TOOL_TEST_NEEDS = ("nn.Linear", "nn.ReLU", "optim.SGD")
needs_hookgrad = needs_hookgrad_parts(*TOOL_TEST_NEEDS)
HAVE_HOOKGRAD_NN = not hookgrad_missing(*TOOL_TEST_NEEDS)
FRAMEWORKS = [pytest.param("torch", id="torch"),
              pytest.param("hookgrad", id="hookgrad", marks=needs_hookgrad)]


@pytest.fixture(params=FRAMEWORKS)
def T(request):
    return {"torch": torch, "hookgrad": hookgrad}[request.param]


# Models here take inputs that need no gradient, so full backward hooks fire on output gradients,
# which both frameworks announce with a UserWarning on every backward pass.
pytestmark = pytest.mark.filterwarnings("ignore:Full backward hook is firing:UserWarning")
def compare(scenario, *args, rtol=1e-5, atol=1e-6):
    """Run ``scenario(T, ...)`` on both frameworks and compare the records."""
    want = normalize(scenario(torch, *args))
    got = normalize(scenario(hookgrad, *args))
    assert_same(got, want, rtol, atol)


# ---- models written once against T, weights from NumPy --------------------------------------------
def set_weights(T, model, seed=0, scale=0.5):
    rng = np.random.default_rng(seed)
    with T.no_grad():
        for _, p in model.named_parameters():
            p.copy_(T.tensor((rng.standard_normal(tuple(p.shape)) * scale).astype(np.float32)))
    return model


def mlp(T, seed=0):
    """fc1 -> act -> fc2 -> act -> out: the ReLU module ``act`` is called twice per forward."""
    nn = T.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 6)
            self.act = nn.ReLU()
            self.fc2 = nn.Linear(6, 5)
            self.out = nn.Linear(5, 3)

        def forward(self, x):
            return self.out(self.act(self.fc2(self.act(self.fc1(x)))))

    return set_weights(T, MLP(), seed)


def batch(T, seed=1, n=7, requires_grad=False):
    x = np.random.default_rng(seed).standard_normal((n, 4)).astype(np.float32)
    return T.tensor(x, requires_grad=requires_grad)


def no_hooks_left(model) -> bool:
    """True when no module and no parameter of ``model`` holds a hook (read from the hook registries,
    which both frameworks keep under PyTorch's attribute names)."""
    for m in model.modules():
        for attr in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks"):
            if getattr(m, attr, None):
                return False
    for p in model.parameters():
        for attr in ("_backward_hooks", "_post_accumulate_grad_hooks"):
            if getattr(p, attr, None):
                return False
    return True


def train_steps(T, model, flow_or_tools, steps=2, lr=0.1):
    """A few SGD steps on a squared loss; each tool's step() is called after optimizer.step()."""
    opt = T.optim.SGD(model.parameters(), lr=lr)
    for i in range(steps):
        loss = (model(batch(T, seed=10 + i)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        for tool in flow_or_tools:
            tool.step()
    return opt


# ---- GradientFlow -------------------------------------------------------------------------------------
def test_gradient_flow_norms_match_the_gradients(T):
    model = mlp(T)
    with GradientFlow(model) as flow:
        out = model(batch(T))
        out.sum().backward()           # d(sum)/d(out) is all ones: |grad_out| of ``out`` = sqrt(7 * 3)
        grads = {n: np.asarray(p.grad.tolist()) for n, p in model.named_parameters()}
        flow.step()
    rec = flow.history[0]
    assert rec["step"] == 0 and flow.steps == 1
    assert rec["modules"]["out"]["grad_output"] == pytest.approx(math.sqrt(21), rel=1e-6)
    assert rec["modules"]["act"]["calls"] == 2 and rec["modules"]["fc1"]["calls"] == 1
    assert rec["modules"]["fc1"]["grad_input"] is None     # the input needs no gradient
    for name, g in grads.items():
        assert rec["params"][name] == pytest.approx(float(np.linalg.norm(g)), rel=1e-5)
    assert list(flow.series("param")) == ["fc1", "fc2", "out"]
    assert no_hooks_left(model)


def gradient_flow_scenario(T):
    model = mlp(T)
    with GradientFlow(model) as flow:
        train_steps(T, model, [flow], steps=3)
    return flow.history, flow.series("grad_input"), flow.series("param")


@needs_hookgrad
def test_gradient_flow_same_on_torch_and_hookgrad():
    compare(gradient_flow_scenario, rtol=1e-4, atol=1e-6)


def test_gradient_flow_steps_from_the_optimizer_and_accumulation(T):
    model = mlp(T)
    opt = T.optim.SGD(model.parameters(), lr=0.01)
    with GradientFlow(model, optimizer=opt) as flow:
        for i in range(3):
            opt.zero_grad()
            for j in range(2):                      # two backward passes accumulate into .grad
                model(batch(T, seed=i * 2 + j)).sum().backward()
            accumulated = float(np.linalg.norm(np.asarray(model.out.weight.grad.tolist())))
            opt.step()
    assert flow.steps == 3 and len(flow.history) == 3
    last = flow.history[-1]
    assert last["params"]["out.weight"] == pytest.approx(accumulated, rel=1e-5)
    assert last["modules"]["act"]["calls"] == 4             # 2 calls per forward, 2 forwards
    assert no_hooks_left(model)


def test_gradient_flow_table_and_plot(T, tmp_path):
    model = mlp(T)
    with GradientFlow(model) as flow:
        train_steps(T, model, [flow], steps=2)
    table = flow.table()
    for name in ("fc1", "act", "fc2", "out", "Linear", "ReLU", "|grad_out| last"):
        assert name in table
    pytest.importorskip("matplotlib")
    path = flow.plot(str(tmp_path / "flow.png"))
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_gradient_flow_names_selects_modules(T):
    model = mlp(T)
    with GradientFlow(model, names=["fc*", ""]) as flow:
        model(batch(T)).sum().backward()
    assert [n for n, _ in flow.modules] == ["", "fc1", "fc2"]
    assert "(model)" in flow.table()


# ---- cleanup, misuse ------------------------------------------------------------------------------
TOOLS = {
    "GradientFlow": lambda m: GradientFlow(m),
    "NonFiniteSentinel": lambda m: NonFiniteSentinel(m),
    "ActivationCapture": lambda m: ActivationCapture(m, names="*"),
    "all together": None,
}


@pytest.mark.parametrize("which", list(TOOLS))
def test_every_hook_removed_after_an_exception(T, which):
    model = mlp(T)
    makers = [TOOLS[which]] if TOOLS[which] else [f for f in TOOLS.values() if f]
    tools = []
    with pytest.raises(KeyError, match="on purpose"):
        with HookTrace(model):
            for make in makers:
                tools.append(make(model).__enter__())
            assert not no_hooks_left(model)
            model(batch(T)).sum().backward()
            for tool in tools:
                tool.close()
            raise KeyError("on purpose")
    assert no_hooks_left(model)
    # closed tools record nothing more and the model still trains (in-place edits on outputs are
    # allowed again once the full backward hooks are gone)
    before = [len(t.records()) if isinstance(t, GradientFlow) else len(getattr(t, "records", [])) for t in tools]
    y = model(batch(T))
    y.add_(1.0)
    y.sum().backward()
    after = [len(t.records()) if isinstance(t, GradientFlow) else len(getattr(t, "records", [])) for t in tools]
    assert before == after


def test_exit_removes_hooks_when_the_body_raises(T):
    model = mlp(T)
    with pytest.raises(RuntimeError, match="boom"):
        with GradientFlow(model), ActivationCapture(model), NonFiniteSentinel(model):
            raise RuntimeError("boom")
    assert no_hooks_left(model)


def test_close_is_idempotent_and_a_closed_tool_refuses_new_hooks(T):
    model = mlp(T)
    flow = GradientFlow(model)
    assert flow.hook_count == 3 * 4 + 6    # per leaf module: a full backward hook and the two that quiet its
    #                                        warning (a forward pre-hook, a backward pre-hook); 6 parameters
    flow.close()
    flow.close()
    assert flow.hook_count == 0 and no_hooks_left(model)
    with pytest.raises(RuntimeError, match="closed"):
        flow._register(model.register_forward_hook, lambda *a: None)


@pytest.mark.parametrize("make, error, match", [
    (lambda m: GradientFlow(m, names="nothing*"), ValueError, "no module name matches"),
    (lambda m: GradientFlow(m, names=[]), TypeError, "names must be"),
    (lambda m: GradientFlow(object()), TypeError, "expects a module"),
    (lambda m: GradientFlow(m, optimizer=object()), TypeError, "register_step_post_hook"),
    (lambda m: NonFiniteSentinel(m, check="sideways"), ValueError, "check must be one of"),
    (lambda m: NonFiniteSentinel(m, action="ignore"), ValueError, "action must be one of"),
    (lambda m: ActivationCapture(m, mode="images"), ValueError, "mode must be one of"),
    (lambda m: HookTrace(object()), TypeError, "cannot tell the framework"),
    (lambda m: HookTrace(m, max_events=-1), ValueError, "max_events"),
])
def test_bad_arguments_raise_clear_errors_and_leave_no_hooks(T, make, error, match):
    model = mlp(T)
    with pytest.raises(error, match=match):
        make(model)
    assert no_hooks_left(model)


# ---- NonFiniteSentinel -------------------------------------------------------------------------------
def sick_model(T, where):
    """Linear layers around a module ``sick`` that makes NaN in its forward (``where="forward"``),
    Inf in its backward only (``"backward"``: sqrt at 0), or nothing; or NaN made by the parent's
    own forward code between two children (``"parent"``)."""
    nn = T.nn

    class Sick(nn.Module):
        def forward(self, x):
            if where == "forward":
                return x * float("nan")
            if where == "backward":
                return (x * 0.0).sqrt()          # finite forward, infinite gradient
            return x

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 4)
            self.sick = Sick()
            self.fc2 = nn.Linear(4, 2)

        def forward(self, x):
            x = self.sick(self.fc1(x))
            if where == "parent":
                x = x / 0.0 * 0.0
            return self.fc2(x)

    return set_weights(T, Net())


@pytest.mark.parametrize("where, module, phase, tensor", [
    ("forward", "sick", "forward", "output"),
    ("backward", "sick", "backward", "grad_input[0]"),
    ("parent", "", "forward", "output"),
])
def test_sentinel_names_the_first_module(T, where, module, phase, tensor):
    model = sick_model(T, where)
    with NonFiniteSentinel(model) as sentinel:
        sentinel.step()
        sentinel.step()
        with pytest.raises(NonFiniteError) as info:
            model(batch(T, requires_grad=True)).sum().backward()
    err = info.value
    assert (err.module, err.phase, err.step) == (module, phase, 2)
    assert err.tensor.startswith(tensor) and "float32[7, " in err.tensor
    assert err.module_type == type(dict(model.named_modules())[module]).__name__
    assert ("NaN" in err.tensor) and ("Inf" in err.tensor)
    assert f"{phase}" in str(err) and "at step 2" in str(err)
    assert sentinel.first == err.event
    assert no_hooks_left(model)


def test_sentinel_blames_nonfinite_input_on_the_model(T):
    model = mlp(T)
    x = np.ones((2, 4), dtype=np.float32)
    x[1, 2] = np.inf
    with NonFiniteSentinel(model, check="forward") as sentinel:
        assert sentinel.hook_count == 5        # forward hooks only: the model and its 4 children
        with pytest.raises(NonFiniteError) as info:
            model(T.tensor(x))
    assert info.value.module == "" and "input[0]" in info.value.tensor and "1 Inf" in info.value.tensor


def test_sentinel_blames_nonfinite_loss_gradient_on_the_model(T):
    model = mlp(T)
    with NonFiniteSentinel(model, check="backward") as sentinel:
        with pytest.raises(NonFiniteError) as info:
            (model(batch(T, requires_grad=True)).sum() * float("inf")).backward()
    assert (info.value.module, info.value.phase) == ("", "backward")
    assert info.value.tensor.startswith("grad_output[0]")
    assert sentinel.events == [info.value.event]


def test_sentinel_record_mode_keeps_training(T):
    model = sick_model(T, "backward")
    with NonFiniteSentinel(model, action="record") as sentinel:
        for _ in range(3):
            model(batch(T, requires_grad=True)).sum().backward()
            sentinel.step()
    assert [(e.module, e.phase, e.step) for e in sentinel.events] == [("sick", "backward", s) for s in range(3)]
    assert all(isinstance(e, NonFiniteEvent) for e in sentinel.events) and sentinel.tripped


def test_sentinel_quiet_on_a_healthy_model(T):
    model = mlp(T)
    with NonFiniteSentinel(model) as sentinel:
        train_steps(T, model, [sentinel], steps=3)
    assert sentinel.events == [] and sentinel.first is None and sentinel.steps == 3


def sentinel_scenario(T, where):
    model = sick_model(T, where)
    with NonFiniteSentinel(model, action="record") as sentinel:
        model(batch(T, requires_grad=True)).sum().backward()
    return [(e.module, e.module_type, e.phase, e.tensor, e.step) for e in sentinel.events]


@needs_hookgrad
@pytest.mark.parametrize("where", ["forward", "backward", "parent"])
def test_sentinel_same_on_torch_and_hookgrad(where):
    compare(sentinel_scenario, where)


# ---- ActivationCapture -------------------------------------------------------------------------------
def test_capture_keeps_one_detached_copy_per_call(T):
    model = mlp(T)
    x = batch(T)
    with ActivationCapture(model, names=["act", "out"]) as cap:
        y = model(x)
        y.sum().backward()
    h1 = np.maximum(np.asarray(model.fc1(x).tolist()), 0)
    first, second = cap["act"]
    np.testing.assert_allclose(np.asarray(first.tolist()), h1, rtol=1e-6)
    assert not first.requires_grad and not second.requires_grad
    assert tuple(second.shape) == (7, 5)
    np.testing.assert_allclose(np.asarray(cap["out"][0].tolist()), np.asarray(y.tolist()), rtol=1e-6)
    assert [(r.order, r.module) for r in cap.records] == [(0, "act"), (1, "act"), (2, "out")]
    assert len(cap) == 3 and cap.names == ["act", "out"]
    with pytest.raises(KeyError, match="watches no module"):
        cap["fc1"]


def capture_stats_scenario(T):
    model = mlp(T)
    with ActivationCapture(model, mode="stats") as cap:
        train_steps(T, model, [cap], steps=2)
        with cap.paused():
            model(batch(T))                  # not recorded
    return [(r.order, r.step, r.module, r.value) for r in cap.records]


def test_capture_stats(T):
    records = capture_stats_scenario(T)
    assert [r[2] for r in records[:5]] == ["fc1", "act", "fc2", "act", "out"] and len(records) == 10
    assert [r[1] for r in records] == [0] * 5 + [1] * 5
    stats = records[1][3]
    assert set(stats) == {"shape", "mean", "std", "min", "max", "frac_zero"}
    assert stats["shape"] == (7, 6) and stats["min"] == 0.0 and 0 < stats["frac_zero"] < 1


def test_capture_stats_values(T):
    model = mlp(T)
    x = batch(T)
    with ActivationCapture(model, names="fc1", mode="stats") as cap:
        model(x)
    ref = np.asarray(model.fc1(x).tolist(), dtype=np.float64)
    s = cap["fc1"][0]
    assert s["mean"] == pytest.approx(ref.mean(), rel=1e-5) and s["std"] == pytest.approx(ref.std(), rel=1e-5)
    assert (s["min"], s["max"]) == (pytest.approx(ref.min()), pytest.approx(ref.max()))
    assert "fc1" in cap.table() and "Linear" in cap.table()


@needs_hookgrad
def test_capture_stats_same_on_torch_and_hookgrad():
    compare(capture_stats_scenario, rtol=1e-4, atol=1e-6)


def capture_tensor_scenario(T):
    model = mlp(T)
    with ActivationCapture(model, names=["act", ""]) as cap:
        train_steps(T, model, [cap], steps=2)
    return [(r.order, r.step, r.module, r.value) for r in cap.records]


@needs_hookgrad
def test_capture_tensors_same_on_torch_and_hookgrad():
    compare(capture_tensor_scenario, rtol=1e-4, atol=1e-6)


def test_capture_plots(T, tmp_path):
    pytest.importorskip("matplotlib")
    model = mlp(T)
    for mode in ("stats", "tensor"):
        with ActivationCapture(model, mode=mode) as cap:
            train_steps(T, model, [cap], steps=2)
        path = cap.plot(str(tmp_path / f"{mode}.png"))
        assert open(path, "rb").read(4) == b"\x89PNG"


# ---- HookTrace ---------------------------------------------------------------------------------------------
def traced_training(T, tmp_path=None):
    model = mlp(T)
    opt = T.optim.SGD(model.parameters(), lr=0.1)
    log = []
    with HookTrace(model, opt) as trace:
        model.fc2.register_forward_hook(lambda m, a, o: o * 2.0)        # its result must still count
        model.act.register_forward_pre_hook(lambda m, a: log.append("pre"))
        model.out.register_full_backward_hook(lambda m, gi, go: None)
        model.fc1.weight.register_hook(lambda g: None)
        model.fc1.bias.register_post_accumulate_grad_hook(lambda p: None)
        opt.register_step_post_hook(lambda o, a, k: None)
        y = model(batch(T))
        y.sum().backward()
        opt.step()
    return trace, y, log


def test_trace_records_kind_owner_order(T, tmp_path):
    trace, y, log = traced_training(T)
    seen = [(kind, owner) for _, kind, owner, *_ in trace.events]
    assert seen == [
        ("forward_pre_hook", "act"), ("forward_hook", "fc2"), ("forward_pre_hook", "act"),
        ("full_backward_hook", "out"), ("tensor_hook", "fc1.weight"),
        ("post_accumulate_grad_hook", "fc1.bias"), ("optimizer_step_post_hook", "optimizer (SGD)"),
    ] or sorted(seen) == sorted([
        ("forward_pre_hook", "act"), ("forward_hook", "fc2"), ("forward_pre_hook", "act"),
        ("full_backward_hook", "out"), ("tensor_hook", "fc1.weight"),
        ("post_accumulate_grad_hook", "fc1.bias"), ("optimizer_step_post_hook", "optimizer (SGD)"),
    ])
    assert [e[0] for e in trace.events] == list(range(7)) and len(trace) == 7
    assert all(e.end >= e.start for e in trace.events)
    assert log == ["pre", "pre"]
    assert [e.step for e in trace.events] == [0] * 7 and trace.steps == 1
    assert all(e.tool is None for e in trace.events)            # the user's hooks, named by function
    assert all(e.hook.startswith("traced_training.<lambda> (test_tools.py:") for e in trace.events)
    shapes = {(e.kind, e.owner): e.shapes for e in trace.events}
    assert shapes[("forward_hook", "fc2")] == {"input": ["float32[7, 6]"], "output": "float32[7, 5]"}
    assert shapes[("full_backward_hook", "out")] == {"grad_input": ["float32[7, 5]"], "grad_output": ["float32[7, 3]"]}
    assert shapes[("tensor_hook", "fc1.weight")] == {"grad": "float32[6, 4]"}
    table = trace.table()
    assert "forward_pre_hook" in table and "optimizer (SGD)" in table and "fc1.weight" in table

    path = trace.save(str(tmp_path / "trace.json"))
    data = json.load(open(path))
    spans = [e for e in data["traceEvents"] if e["ph"] == "X" and e["cat"] not in ("phase", "step")]
    assert len(spans) == 7
    for e in spans:
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)) and e["dur"] >= 0
        assert {"name", "cat", "pid", "tid", "args"} <= set(e)
        assert {"step", "order", "owner", "hook"} <= set(e["args"])
    assert spans == sorted(spans, key=lambda e: e["ts"])
    phases = [e for e in data["traceEvents"] if e.get("cat") == "phase"]
    assert [p["name"] for p in phases] == ["forward", "backward", "optimizer.step"]
    forward, backward, step = phases
    assert forward["ts"] + forward["dur"] <= backward["ts"] and backward["ts"] + backward["dur"] <= step["ts"]
    hook_at = {e["cat"]: e for e in spans}
    # each hook lies inside its phase
    for kind, phase in (("forward_hook", forward), ("full_backward_hook", backward),
                        ("optimizer_step_post_hook", step)):
        assert phase["ts"] <= hook_at[kind]["ts"] <= phase["ts"] + phase["dur"] + 1, kind
    steps = [e for e in data["traceEvents"] if e.get("cat") == "step"]
    assert [e["name"] for e in steps] == ["step 0"]


def test_trace_hook_results_still_apply(T):
    model = mlp(T)
    x = batch(T)
    plain = np.asarray(model(x).tolist())
    with HookTrace(model):
        handle = model.out.register_forward_hook(lambda m, a, o: o * 2.0)
        traced = np.asarray(model(x).tolist())
    np.testing.assert_allclose(traced, plain * 2, rtol=1e-6)
    after = np.asarray(model(x).tolist())          # still registered, still applied, no longer traced
    np.testing.assert_allclose(after, plain * 2, rtol=1e-6)
    handle.remove()
    np.testing.assert_allclose(np.asarray(model(x).tolist()), plain, rtol=1e-6)


def test_trace_restores_registration_methods_even_after_an_exception(T):
    before = (T.nn.Module.register_forward_hook, T.Tensor.register_hook,
              T.optim.Optimizer.register_step_pre_hook)
    model = mlp(T)
    with pytest.raises(ZeroDivisionError):
        with HookTrace(model) as trace:
            model.fc1.register_forward_hook(lambda *a: None)
            1 / 0
    assert (T.nn.Module.register_forward_hook, T.Tensor.register_hook,
            T.optim.Optimizer.register_step_pre_hook) == before
    model(batch(T))
    assert len(trace) == 0           # fired after the trace closed: not recorded


def test_nested_traces_closed_out_of_order(T):
    model = mlp(T)
    original = T.Tensor.register_hook
    outer = HookTrace(model)
    model.fc1.register_forward_hook(lambda *a: None)
    inner = HookTrace(model)
    model.fc2.register_forward_hook(lambda *a: None)
    model(batch(T))
    outer.close()                      # not the last one opened
    model(batch(T))
    inner.close()
    assert T.Tensor.register_hook is original
    assert [owner for _, _, owner, *_ in outer.events] == ["fc1", "fc2"]
    assert [owner for _, _, owner, *_ in inner.events] == ["fc1", "fc2", "fc1", "fc2"]


def test_trace_sees_global_module_hooks(T):
    model = mlp(T)
    with HookTrace(model) as trace:
        handle = T.nn.modules.module.register_module_forward_hook(lambda m, a, o: None)
        try:
            model(batch(T))
        finally:
            handle.remove()
    owners = [owner for _, kind, owner, *_ in trace.events if kind == "forward_hook"]
    assert owners == ["fc1", "act", "fc2", "act", "out", "(model)"]


def test_trace_sees_the_other_tools(T, tmp_path):
    model = mlp(T)
    with HookTrace(model, max_events=5) as trace:
        with GradientFlow(model), ActivationCapture(model), NonFiniteSentinel(model):
            train_steps(T, model, [], steps=1)
    kinds = {kind for kind, _ in trace.counts}
    assert {"forward_hook", "full_backward_hook", "post_accumulate_grad_hook"} <= kinds
    assert len(trace.events) == 5 and trace.dropped == len(trace) - 5 > 0
    data = json.load(open(trace.save(str(tmp_path / "t.json"))))
    assert data["otherData"]["events_dropped"] == trace.dropped


def test_trace_names_the_tool_owning_each_hook(T, tmp_path):
    model = mlp(T)
    with HookTrace(model) as trace, GradientFlow(model), ActivationCapture(model):
        model.fc1.register_forward_hook(lambda m, a, o: None)
        train_steps(T, model, [], steps=1)
    on_fc1 = sorted((e.tool or "user") for e in trace.events if e.kind == "forward_hook" and e.owner == "fc1")
    assert on_fc1 == ["ActivationCapture", "user"]
    names = {e["name"] for e in json.load(open(trace.save(str(tmp_path / "t.json"))))["traceEvents"]}
    assert "forward_hook fc1 · ActivationCapture" in names
    assert "forward_hook fc1 · test_trace_names_the_tool_owning_each_hook.<lambda>" in names
    assert "full_backward_hook fc2 · GradientFlow" in names


def test_trace_keeps_every_nth_step_or_a_window(T, tmp_path):
    model = mlp(T)
    opt = T.optim.SGD(model.parameters(), lr=0.01)

    def run(**options):
        with HookTrace(model, opt, **options) as trace:
            handle = model.fc1.register_forward_hook(lambda m, a, o: None)
            for i in range(6):
                loss = model(batch(T, seed=i)).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
            handle.remove()
        return trace

    every = run(every=3)
    assert [e.step for e in every.events] == [0, 3] and len(every) == 6 and every.dropped == 4
    window = run(steps=range(2, 4))
    assert [e.step for e in window.events] == [2, 3] and window.dropped == 4
    assert [row["count"] for row in window.summary()] == [6]        # the summary counts every call
    data = json.load(open(window.save(str(tmp_path / "w.json"))))
    phases = [e for e in data["traceEvents"] if e.get("cat") == "phase"]
    assert len(phases) == 6 * 3 and [e["args"]["step"] for e in phases[:3]] == [0, 0, 0]  # all steps
    with pytest.raises(ValueError, match="every must be a positive int"):
        HookTrace(model, every=0)


def trace_scenario(T):
    trace, y, log = traced_training(T)
    return [(kind, owner) for _, kind, owner, *_ in trace.events], y, log


@needs_hookgrad
def test_trace_same_on_torch_and_hookgrad():
    compare(trace_scenario)


@needs_hookgrad
def test_trace_sees_hooks_registered_before_it_on_hookgrad():
    import hookgrad.nn.modules.module as module_file
    if not hasattr(module_file, "_set_hook_observer"):
        pytest.skip("hookgrad.nn has no hook observer")
    model = mlp(hookgrad)
    handle = model.fc1.register_forward_hook(lambda *a: None)
    with HookTrace(model) as trace:
        model(batch(hookgrad))
    handle.remove()
    assert [(k, o) for _, k, o, *_ in trace.events] == [("forward_hook", "fc1")]
    assert module_file._hook_observer is None


def test_trace_without_roots_watches_the_imported_frameworks():
    with HookTrace() as trace:
        assert set(trace.frameworks) >= {"torch", "hookgrad"}
        model = mlp(torch)
        model.fc1.register_forward_hook(lambda *a: None)
        model(batch(torch))
    assert [(kind, owner) for _, kind, owner, *_ in trace.events] == [("forward_hook", "Linear")]


def test_trace_of_a_framework_package_and_a_tensor_owner(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with HookTrace(T) as trace:
        assert trace.frameworks == [T.__name__]
        x.register_hook(lambda g: g * 3)
        (x * x).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad.tolist()), [6.0, 12.0])
    assert [(kind, owner) for _, kind, owner, *_ in trace.events] == [("tensor_hook", "tensor float32[2]")]


@needs_hookgrad
def test_trace_sees_autograd_node_hooks_on_hookgrad():
    x = hookgrad.tensor([1.0, 2.0], requires_grad=True)
    with HookTrace(hookgrad) as trace:
        y = x * 2
        y.grad_fn.register_prehook(lambda grads: None)
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: None)
        y.sum().backward()
    assert [(kind, owner) for _, kind, owner, *_ in trace.events] == [("node_pre_hook", "MulBackward0"),
                                                                       ("node_hook", "MulBackward0")]


# ---- the framework's warning about full backward hooks on a first layer ------------------------------------------
FULL_HOOK_WARNING = "Full backward hook is firing when gradients are computed with respect to module outputs"


def warnings_during(T, model, user_hook: bool):
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with GradientFlow(model), NonFiniteSentinel(model):
            handle = model.fc1.register_full_backward_hook(lambda m, gi, go: None) if user_hook else None
            train_steps(T, model, [], steps=2)        # the input needs no grad: fc1 warns each pass
            if handle is not None:
                handle.remove()
    return [str(w.message) for w in caught if FULL_HOOK_WARNING in str(w.message)]


@pytest.mark.filterwarnings("default")
def test_tools_do_not_warn_about_their_own_backward_hooks(T):
    assert warnings_during(T, mlp(T), user_hook=False) == []
    # ... but a user's full backward hook on the same module still gets the framework's warning
    assert len(warnings_during(T, mlp(T), user_hook=True)) == 2
    import warnings
    assert not any(FULL_HOOK_WARNING.lower() in str(f[1].pattern).lower() for f in warnings.filters
                   if getattr(f[1], "pattern", None))           # nothing left behind


# ---- per call, in data-flow order ---------------------------------------------------------------------------------
def test_gradient_flow_rows_follow_the_data_flow_call_by_call(T, tmp_path):
    model = mlp(T)
    with GradientFlow(model) as flow:
        train_steps(T, model, [flow], steps=2)
    assert flow.data_flow() == [("fc1", 0, 1), ("act", 0, 2), ("fc2", 0, 1), ("act", 1, 2), ("out", 0, 1)]
    rows = {(name, call): values for name, call, values in flow.call_series("grad_output")}
    combined = flow.series("grad_output")["act"]
    for step in range(2):
        first, second = rows[("act", 0)][step], rows[("act", 1)][step]
        assert math.isclose(math.hypot(first, second), combined[step], rel_tol=1e-9)
    # act's first call feeds fc2, whose grad_input is the gradient at act's first output
    assert rows[("act", 0)] == pytest.approx(flow.series("grad_input")["fc2"], rel=1e-6)
    assert rows[("act", 1)] == pytest.approx(flow.series("grad_input")["out"], rel=1e-6)
    with pytest.raises(ValueError, match="key must be"):
        flow.call_series("params")
    pytest.importorskip("matplotlib")
    flow.history[0]["modules"]["fc2"]["per_call"]["grad_output"] = [float("nan")]   # drawn red, not dropped
    assert flow.plot(str(tmp_path / "f.png"), marks={0: "epoch 1", 1: "2"}).endswith("f.png")


def test_capture_call_series_keeps_each_call_apart(T, tmp_path):
    model = mlp(T)
    with ActivationCapture(model, mode="stats") as cap:
        train_steps(T, model, [cap], steps=3)
    rows = cap.call_series("frac_zero")
    assert [(name, call) for name, call, _, _ in rows] == [("fc1", 0), ("act", 0), ("fc2", 0), ("act", 1), ("out", 0)]
    calls = cap["act"]
    for name, call, steps, values in rows:
        if name == "act":
            assert steps == [0, 1, 2]
            assert values == [calls[2 * s + call]["frac_zero"] for s in range(3)]
    averaged = cap.per_step("frac_zero")["act"][1]
    assert averaged == pytest.approx([(calls[2 * s]["frac_zero"] + calls[2 * s + 1]["frac_zero"]) / 2 for s in range(3)])
    with pytest.raises(ValueError, match="key must be one of"):
        cap.call_series("median")


def test_gradient_flow_rows_of_a_backward_stopped_early(T):
    """A backward that stops part-way (an exception from a hook) reached only the last calls."""
    model = mlp(T)
    with GradientFlow(model) as flow:
        train_steps(T, model, [flow], steps=1)

        def stop(module, grad_input, grad_output):
            raise RuntimeError("stop here")
        handle = model.fc2.register_full_backward_hook(stop)
        with pytest.raises(RuntimeError, match="stop here"):
            (model(batch(T)) ** 2).mean().backward()
        handle.remove()
    rows = {(name, call): values[-1] for name, call, values in flow.call_series("grad_output")}
    assert rows[("act", 1)] is not None and rows[("out", 0)] is not None       # reached before fc2
    assert rows[("act", 0)] is None and rows[("fc1", 0)] is None               # never reached
