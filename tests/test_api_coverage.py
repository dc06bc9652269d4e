"""docs/api-coverage.md is generated from torch and hookgrad and kept in step with the code; every
"hookgrad has no ..." error points to it, and it lists the name the error is about."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

import hookgrad

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "api-coverage.md")


@pytest.fixture(scope="module")
def coverage():
    spec = importlib.util.spec_from_file_location("api_coverage", os.path.join(ROOT, "scripts", "api_coverage.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def survey(coverage):
    return coverage.survey()


def test_file_is_in_step_with_the_code(coverage):
    with open(DOC, encoding="utf-8") as fh:
        committed = fh.read()
    assert committed == coverage.render(), "docs/api-coverage.md is out of date: run python scripts/api_coverage.py"


def test_counts_are_consistent(survey):
    import torch
    for namespace, (present, missing, left_out) in survey.items():
        names = present + missing + [n for group in left_out.values() for n in group]
        assert len(names) == len(set(names)), namespace
    assert "FloatTensor" in survey["torch"][0] and "from_dlpack" in survey["torch"][0]
    assert any("cuda" in group for group in survey["torch.Tensor"][2].values())
    assert "quantile" not in [n for group in survey["torch"][2].values() for n in group]
    assert all(hasattr(torch.Tensor, n) and not hasattr(hookgrad.Tensor, n) for n in survey["torch.Tensor"][1])
    assert all(hasattr(hookgrad.Tensor, n) for n in survey["torch.Tensor"][0])


def _absent(survey, namespace, ours):
    """The names of ``namespace`` that hookgrad lacks: the missing ones, or (once none is missing) those
    left out on purpose that hookgrad has no object for either; their errors point to the list alike."""
    present, missing, left_out = survey[namespace]
    return missing or [n for group in left_out.values() for n in group if not hasattr(ours, n)]


def test_missing_tensor_methods_point_to_the_list(survey):
    with open(DOC, encoding="utf-8") as fh:
        doc = fh.read()
    x = hookgrad.ones(2)
    missing = _absent(survey, "torch.Tensor", x)
    assert missing
    for name in missing:
        assert not hasattr(x, name)
        with pytest.raises(AttributeError) as info:
            getattr(x, name)
        message = str(info.value)
        assert message.startswith(f"hookgrad has no torch.Tensor.{name}; see docs/api-coverage.md"), message
        assert f"'Tensor' object has no attribute '{name}'" in message  # Python's own wording too
        assert f"`{name}`" in doc
    with pytest.raises(AttributeError, match="^'Tensor' object has no attribute '_private'$"):
        x._private
    # a name torch lacks too gets Python's own words only, as under torch
    with pytest.raises(AttributeError, match="^'Tensor' object has no attribute 'astype'$"):
        x.astype


def test_tensor_names_torch_has_are_listed_as_absent():
    import torch

    from hookgrad._torch_tensor_absent import TORCH_TENSOR_NAMES_ABSENT
    torch_names = {n for n in dir(torch.Tensor) if not n.startswith("_")}
    lacking = {n for n in torch_names if not hasattr(hookgrad.Tensor, n)}
    assert lacking <= TORCH_TENSOR_NAMES_ABSENT <= torch_names


def test_missing_functions_point_to_the_list(survey):
    absent = _absent(survey, "torch", hookgrad)
    assert absent
    for name in absent[:50]:
        with pytest.raises(AttributeError, match=f"hookgrad has no torch.{name}; see docs/api-coverage.md"):
            getattr(hookgrad, name)


def test_missing_names_under_hookgrad_run_point_to_the_list(tmp_path, survey):
    name = _absent(survey, "torch.Tensor", hookgrad.ones(2))[0]
    script = tmp_path / "s.py"
    script.write_text(textwrap.dedent(f"""
        import torch
        torch.ones(2).{name}
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.path.join(ROOT, "src"),
                                                                  os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, "-m", "hookgrad", "run", str(script)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode != 0
    assert f"AttributeError: hookgrad has no torch.Tensor.{name}; see docs/api-coverage.md" in proc.stderr


def test_check_mode(coverage):
    assert coverage.main(["--check"]) == 0
