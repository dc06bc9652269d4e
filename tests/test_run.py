"""``python -m hookgrad run``: unmodified PyTorch scripts run on hookgrad.

The example programs in examples/real/ run once on real torch and once under ``hookgrad run``
(a few steps each, all processes started together); the numbers they print must agree to float32
tolerance. Small scripts check the import aliasing, argv, exit codes, and that a torch API
hookgrad lacks fails with an error naming it.
"""
from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import textwrap

import pytest

import hookgrad

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
EXAMPLES = os.path.join(ROOT, "examples", "real")
STEPS = "4"
SCRIPTS = {
    "mnist_cnn.py": ["Conv2d", "MaxPool2d", "Linear", "CrossEntropyLoss"],
    "char_lstm.py": ["Embedding", "Linear", "CrossEntropyLoss"],
    "tiny_transformer.py": ["Embedding", "Linear", "LayerNorm", "Dropout", "CrossEntropyLoss", "GELU"],
    "gradient_penalty.py": ["Linear", "Tanh", "Sequential"],
}
TIMEOUT = 240


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.join(ROOT, "src"), env.get("PYTHONPATH")) if p)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _start(args):
    return subprocess.Popen([sys.executable, *args], cwd=ROOT, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def example_runs():
    """Start every example on both frameworks at once; tests collect the results they need."""
    runs = {}
    for script in SCRIPTS:
        path = os.path.join(EXAMPLES, script)
        runs[script] = (_start([path, "--steps", STEPS]), _start(["-m", "hookgrad", "run", path, "--steps", STEPS]))
    yield runs
    for procs in runs.values():
        for proc in procs:
            if proc.poll() is None:
                proc.kill()


NUMBER = re.compile(r"([A-Za-z_]+)\s+(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)")


def parse(output: str):
    """Each printed line as (first word, [(name, value), ...]); the free-text sample line is left out."""
    lines = []
    for line in output.splitlines():
        if not line.strip() or line.startswith("sample:"):
            continue
        lines.append((line.split()[0], [(k, float(v)) for k, v in NUMBER.findall(line)]))
    return lines


def _result(proc):
    out, err = proc.communicate(timeout=TIMEOUT)
    return proc.returncode, out, err


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_example_matches_torch(script, example_runs):
    torch_proc, ours_proc = example_runs[script]
    rc_t, out_t, err_t = _result(torch_proc)
    rc_h, out_h, err_h = _result(ours_proc)
    assert rc_t == 0, err_t
    assert rc_h == 0, f"hookgrad run failed:\n{err_h[-3000:]}"
    want, got = parse(out_t), parse(out_h)
    assert len(want) >= int(STEPS), out_t
    assert [w[0] for w in got] == [w[0] for w in want], f"\n{out_h}\n!=\n{out_t}"
    for (word, g_vals), (_, w_vals) in zip(got, want):
        assert [k for k, _ in g_vals] == [k for k, _ in w_vals], f"{word}: {g_vals} != {w_vals}"
        for (name, g), (_, w) in zip(g_vals, w_vals):
            if name == "step":
                assert g == w
            elif "accuracy" in name:
                assert abs(g - w) <= 0.02, f"{word} {name}: {g} != {w}"
            else:
                assert abs(g - w) <= 2e-4 * max(1.0, abs(w)), f"{word} {name}: {g} != {w}\n{out_h}\n{out_t}"


# ---- the runner itself --------------------------------------------------------------------------------
def _run_source(tmp_path, source, *args, name="script.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    proc = subprocess.run([sys.executable, "-m", "hookgrad", "run", str(path), *args], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


def test_imports_resolve_to_hookgrad(tmp_path):
    rc, out, err = _run_source(tmp_path, """
        import sys
        import torch
        import torch.nn as nn
        import torch.optim
        import torch.utils.data
        from torch.nn.modules.module import Module
        from torch import autograd
        import hookgrad
        assert torch is hookgrad and nn is hookgrad.nn and Module is hookgrad.nn.Module
        assert torch.optim is hookgrad.optim and autograd is hookgrad.autograd
        assert torch.utils.data.DataLoader is hookgrad.utils.data.DataLoader
        assert hookgrad.nn.__spec__.name == "hookgrad.nn"
        x = torch.ones(2, requires_grad=True)
        (g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
        g.sum().backward()
        print(__name__, sys.argv[1:], x.grad.tolist())
    """, "--flag", "value")
    assert rc == 0, err
    assert out.strip() == "__main__ ['--flag', 'value'] [6.0, 6.0]"


def test_script_directory_is_importable_and_exit_code_passes_through(tmp_path):
    (tmp_path / "helper.py").write_text("import torch\nVALUE = torch.tensor([1.0, 2.0]).sum().item()\n")
    rc, out, err = _run_source(tmp_path, """
        import sys
        import helper
        print(helper.VALUE)
        sys.exit(3)
    """)
    assert (rc, out.strip()) == (3, "3.0"), err


@pytest.mark.parametrize("snippet,kind,name", [
    ("torch.qint8", "AttributeError", "torch.qint8"),
    ("import torch.export", "ModuleNotFoundError", "torch.export"),
    ("torch.totally_missing_op(torch.ones(2))", "AttributeError", "torch.totally_missing_op"),
    ("import torch.nn.functional as F\nF.no_such_function", "AttributeError", "torch.nn.functional.no_such_function"),
    ("torch.autograd.no_such_thing", "AttributeError", "torch.autograd.no_such_thing"),
])
def test_unsupported_api_fails_naming_it(tmp_path, snippet, kind, name):
    rc, out, err = _run_source(tmp_path, "import torch\n" + snippet + "\nprint('unreachable')\n")
    assert rc != 0 and "unreachable" not in out
    assert f"hookgrad has no {name}; see docs/api-coverage.md" in err, err
    module, _, attribute = name.rpartition(".")
    first = (f"AttributeError: module '{module}' has no attribute '{attribute}' (" if kind == "AttributeError"
             else f"{kind}: hookgrad has no")   # torch's wording first
    assert first in err, err


def test_missing_script_and_usage(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "hookgrad", "run", str(tmp_path / "nope.py")], env=_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "nope.py" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "hookgrad", "run", "--help"], env=_env(), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and "hookgrad run" in proc.stdout


def test_run_module_flag(tmp_path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text("import sys, torch\nprint(torch.__name__, torch is sys.modules['hookgrad'], "
                                  "sys.argv[1:])\n")
    proc = subprocess.run([sys.executable, "-m", "hookgrad", "run", "-m", "mypkg.train", "a"], cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "torch True ['a']"


def test_in_process_run_restores_torch(tmp_path):
    import torch  # the real one, imported before
    from hookgrad._run import run_script
    path = tmp_path / "s.py"
    path.write_text("import torch\nimport torch.nn\nRESULT = torch.__name__\nprint(RESULT)\n")
    assert run_script(str(path), []) == 0
    assert sys.modules["torch"] is torch and sys.modules["torch.nn"] is torch.nn
    assert str(tmp_path) not in sys.path


def test_missing_lazy_submodule_is_a_clear_attribute_error(tmp_path):
    rc, out, err = _run_source(tmp_path, """
        import torch
        print(hasattr(torch, "ao"), hasattr(torch, "export"), hasattr(torch, "fft"), hasattr(torch, "nn"),
              torch.cuda.is_available())
    """)
    assert rc == 0, err
    assert out.strip() == "False False True True False"


def test_a_traceback_starts_at_the_script(tmp_path):
    (tmp_path / "helper.py").write_text("def fail():\n    raise ValueError('bad value')\n")
    rc, out, err = _run_source(tmp_path, """
        import torch
        import helper
        helper.fail()
    """)
    assert rc == 1
    lines = err.splitlines()
    assert lines[0] == "Traceback (most recent call last):", err
    assert lines[1].startswith('  File "') and "helper.fail()" in lines[2], err
    assert lines[-1] == "ValueError: bad value"
    assert "runpy" not in err and "_run.py" not in err and "cli.py" not in err


def test_a_syntax_error_names_the_script_line(tmp_path):
    rc, out, err = _run_source(tmp_path, "import torch\nx = (1,\n")
    assert rc == 1 and "SyntaxError" in err and "runpy" not in err, err


def test_sizes_and_dtypes_print_as_torch_under_run(tmp_path):
    rc, out, err = _run_source(tmp_path, """
        import torch
        x = torch.zeros(2, 3, dtype=torch.float64)
        print(x.shape)
        print(x.dtype, torch.int64)
        print(repr(x[0]))
        print(str(x.shape) == "torch.Size([2, 3])")
    """)
    assert rc == 0, err
    assert out.splitlines() == ["torch.Size([2, 3])", "torch.float64 torch.int64",
                                "tensor([0., 0., 0.], dtype=torch.float64)", "True"]
    # imported as itself, hookgrad names itself
    assert repr(hookgrad.zeros(2, 3).shape) == "hookgrad.Size([2, 3])" and repr(hookgrad.float64) == "hookgrad.float64"


def test_run_command_flag(tmp_path):
    """``hookgrad run -c CODE`` is ``python -c CODE`` with torch resolved to hookgrad."""
    code = "import sys, torch, hookgrad; assert torch is hookgrad; print(__name__, sys.argv, torch.ones(2).sum().item())"
    proc = subprocess.run([sys.executable, "-m", "hookgrad", "run", "-c", code, "a", "-b"], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout.strip()) == (0, "__main__ ['-c', 'a', '-b'] 2.0"), proc.stderr
    proc = subprocess.run([sys.executable, "-m", "hookgrad", "run", "-c", "import torch\n1/0"], cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr.startswith("Traceback") and 'File "<string>", line 2' in proc.stderr


def test_torch_package_metadata_without_torch_installed(tmp_path):
    """Where no torch is installed, libraries asking importlib.metadata for torch's version (or checking a
    requirement such as torch>=2.0) find hookgrad's, which starts with the torch release it follows; where
    torch is installed, its own record answers."""
    import numpy
    import scipy
    site = tmp_path / "site"
    site.mkdir()
    for package in (numpy, scipy):  # a Python path with NumPy and SciPy but no torch
        folder = os.path.dirname(package.__file__)
        os.symlink(folder, site / os.path.basename(folder))
        libs = folder + ".libs"
        if os.path.isdir(libs):
            os.symlink(libs, site / os.path.basename(libs))
    env = dict(_env(), PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "src"), str(site)]))
    code = ("import importlib.metadata as m, torch\n"
            "print(m.version('torch'), m.distribution('torch').metadata['Name'])")
    proc = subprocess.run([sys.executable, "-S", "-m", "hookgrad", "run", "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    import hookgrad
    assert (proc.returncode, proc.stdout.strip()) == (0, f"{hookgrad.__version__} torch"), proc.stderr
    proc = subprocess.run([sys.executable, "-m", "hookgrad", "run", "-c",
                           "import importlib.metadata as m; print(m.version('torch'))"], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=120)
    import torch
    assert proc.stdout.strip() == importlib.metadata.version("torch") == torch.__version__, proc.stderr
