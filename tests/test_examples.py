"""The example scripts print the same output on hookgrad as on torch (the same file, run with
``import torch`` in place of ``import hookgrad as torch``)."""
from __future__ import annotations

import contextlib
import io
import os
import re

import pytest


EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "examples")
SCRIPTS = ["gradient_flow_global_hook.py", "layer_gradient_scaling.py", "incoming_gradient_checks.py",
           "blog_network.py"]


def _as_torch(source: str) -> str:
    source = re.sub(r"^import hookgrad as torch$", "import torch", source, flags=re.M)
    source = re.sub(r"^import hookgrad\.nn as nn$", "import torch.nn as nn", source, flags=re.M)
    return re.sub(r"^from hookgrad\.", "from torch.", source, flags=re.M)


def _run(source: str, path: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, path, "exec"), {"__name__": "__main__", "__file__": path})
    return out.getvalue()


@pytest.mark.parametrize("script", SCRIPTS)
def test_example_output_matches_torch(script):
    path = os.path.join(EXAMPLES, script)
    with open(path) as f:
        source = f.read()
    want = _run(_as_torch(source), path)
    got = _run(source, path)
    assert got == want


# ---- the DP-SGD example (hookgrad only: it uses hookgrad.data and hookgrad.tools) -------------------
def _dp_sgd_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("dp_sgd_digits", os.path.join(EXAMPLES, "dp_sgd_digits.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dp_sgd_example_trains_and_reports_its_privacy_parameters(capsys):
    result = _dp_sgd_module().main(["--epochs", "3"])
    out = capsys.readouterr().out
    assert result["accuracy"] > 0.8 and result["steps"] == 3 * round(1 / result["sampling_rate"])
    assert f"held-out accuracy {result['accuracy']:.3f}" in out
    for words in ("noise multiplier 1.0", "clip norm 1.0", f"sampling rate {result['sampling_rate']:.4f}",
                  f"steps {result['steps']}", f"(epsilon, delta) = ({result['epsilon']:.2f}, 1e-05)"):
        assert words in out


@pytest.mark.parametrize("q, sigma, steps", [(0.0445, 1.0, 330), (0.01, 0.7, 1000), (0.2, 2.5, 50), (1.0, 3.0, 10)])
def test_dp_sgd_accountant_matches_opacus(q, sigma, steps):
    rdp = pytest.importorskip("opacus.accountants.analysis.rdp")
    example = _dp_sgd_module()
    orders = list(example.ORDERS)
    want, want_order = rdp.get_privacy_spent(orders=orders, rdp=rdp.compute_rdp(q=q, noise_multiplier=sigma,
                                                                                 steps=steps, orders=orders),
                                             delta=1e-5)
    got, got_order = example.rdp_epsilon(q, sigma, steps, 1e-5)
    assert got == pytest.approx(want, rel=1e-9) and got_order == want_order


def test_dp_sgd_step_without_noise_or_clipping_is_the_batch_gradient():
    import hookgrad

    example = _dp_sgd_module()
    x_train, y_train, _, _ = example.digits(0)
    x, y = x_train[:20], y_train[:20]
    model = hookgrad.nn.Sequential(hookgrad.nn.Linear(64, 8), hookgrad.nn.Tanh(), hookgrad.nn.Linear(8, 10))
    hookgrad.nn.functional.cross_entropy(model(x), y, reduction="sum").backward()
    want = [p.grad.clone() / 32 for p in model.parameters()]
    optimizer = hookgrad.optim.SGD(model.parameters(), lr=0.0)
    with example.PerSampleGradients(model, loss_reduction="sum") as tool:
        example.dp_sgd_step(model, tool, optimizer, x, y, clip=1e9, sigma=0.0, expected_batch=32)
        got = [p.grad.clone() for p in model.parameters()]
        example.dp_sgd_step(model, tool, optimizer, x, y, clip=1e-3, sigma=0.0, expected_batch=32)
        clipped = hookgrad.cat([p.grad.reshape(-1) for p in model.parameters()]).norm().item()
    for g, w in zip(got, want):
        assert (g - w).abs().max().item() < 1e-5
    assert clipped <= 20 * 1e-3 / 32 * (1 + 1e-4)     # 20 samples, each of norm at most 1e-3
