"""The demo on a small budget: its outputs, the sentinel stopping an injected NaN, and (the full
budget, on torch and on hookgrad) the held-out accuracy it promises."""
from __future__ import annotations

import json
import os

import pytest
import torch

import hookgrad
from hookgrad.demo import NAN_TARGETS, make_parser, run_demo
from test_tools import needs_hookgrad_parts

# what the demo uses of a framework
needs_hookgrad = needs_hookgrad_parts("nn.Conv2d", "nn.MaxPool2d", "nn.ReLU", "nn.Flatten", "nn.Linear",
                                      "nn.functional.cross_entropy", "optim.Adam", "manual_seed", "no_grad")
FRAMEWORKS = [pytest.param("torch", id="torch"),
              pytest.param("hookgrad", id="hookgrad", marks=needs_hookgrad)]


@pytest.fixture(params=FRAMEWORKS)
def T(request):
    return {"torch": torch, "hookgrad": hookgrad}[request.param]


@pytest.fixture(autouse=True)
def one_torch_thread():
    """torch's intra-op threads only fight for the CPU on these small batches (much slower on a
    busy machine); restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def small(tmp_path, *extra):
    return ["--epochs", "1", "--no-plots", "--no-progress", "--out", str(tmp_path), *extra]


def test_small_run_writes_trace_and_report(T, tmp_path, capsys):
    result = run_demo(T, small(tmp_path))
    assert result.exit_code == 0 and result.stopped is None
    assert result.steps == 45 and 0.5 < result.accuracy <= 1.0
    assert sorted(os.listdir(tmp_path)) == ["hook_trace.json", "report.md"]
    trace = json.load(open(tmp_path / "hook_trace.json"))
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert spans and all(e["dur"] >= 0 for e in spans)
    assert {"forward_hook", "full_backward_hook", "post_accumulate_grad_hook"} <= {e["cat"] for e in spans}
    phases = [e for e in spans if e["cat"] == "phase"]
    assert len(phases) == 45 * 3 + 1 and {e["name"] for e in phases} == {"forward", "backward", "optimizer.step"}   # + the held-out forward
    hooks = [e for e in spans if e["cat"] not in ("phase", "step")]
    # every 15th step by default; 45: the held-out evaluation after the last step
    assert {e["args"]["step"] for e in hooks} == {0, 15, 30, 45}
    assert {e["args"].get("tool") for e in hooks} >= {"GradientFlow", "ActivationCapture", "NonFiniteSentinel"}
    conv1 = [e for e in hooks if e["name"] == "forward_hook conv1 · ActivationCapture"]
    assert conv1 and conv1[0]["args"]["output"] == "float32[32, 16, 8, 8]"
    report = (tmp_path / "report.md").read_text()
    assert "Held-out accuracy" in report and "## Per layer" in report and "## What was measured" in report
    for layer in ("conv1", "conv2", "pool", "act", "flatten", "fc1", "fc2"):
        assert f"| `{layer}` |" in report
    assert "| `act` | ReLU | 3 |" in report            # one ReLU module, three calls per step
    out = capsys.readouterr().out
    assert str(tmp_path) in out and "report.md" in out and "held-out accuracy" in out


def test_the_demo_shows_no_warning_about_its_tools_hooks(tmp_path, recwarn):
    run_demo(hookgrad, small(tmp_path))
    assert not [w for w in recwarn if "Full backward hook" in str(w.message)]


def test_plots_are_written(tmp_path):
    pytest.importorskip("matplotlib")
    result = run_demo(torch, ["--epochs", "1", "--no-progress", "--out", str(tmp_path)])
    for name in ("gradient_flow.png", "activations.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
    assert set(result.files) == {"gradient_flow", "activations", "hook_trace", "report"}


@pytest.mark.parametrize("phase", ["forward", "backward"])
def test_injected_nan_is_caught_and_named(T, tmp_path, phase, capsys):
    result = run_demo(T, small(tmp_path, "--epochs", "2", "--inject-nan", phase))
    assert result.exit_code == 0
    assert result.steps == 67                           # stopped halfway through 2 x 45 steps, mid-epoch
    assert f"module {NAN_TARGETS[phase]!r}" in result.stopped and f"{phase} " in result.stopped
    assert "at step 67" in result.stopped
    assert "Training stopped by the non-finite sentinel" in (tmp_path / "report.md").read_text()
    assert "Stopped:" in capsys.readouterr().err


def test_full_demo_reaches_95_percent(T, tmp_path):
    result = run_demo(T, ["--no-plots", "--no-progress", "--out", str(tmp_path)])
    assert result.exit_code == 0 and result.accuracy >= 0.95


@needs_hookgrad
def test_cli_demo_runs_on_hookgrad(tmp_path):
    from hookgrad.cli import main
    assert main(["demo", *small(tmp_path)]) == 0
    assert (tmp_path / "report.md").exists()


@pytest.mark.parametrize("argv, message", [
    (["--epochs", "0"], "expected a positive integer"),
    (["--epochs", "two"], "expected a positive integer"),
    (["--lr", "-1"], "expected a positive number"),
    (["--inject-nan", "sideways"], "invalid choice"),
])
def test_bad_options(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        make_parser().parse_args(argv)
    assert info.value.code == 2 and message in capsys.readouterr().err
