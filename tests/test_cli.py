"""``hookgrad`` / ``python -m hookgrad``: the subcommands, dispatch to run and bench, bad options."""
from __future__ import annotations

import os
import subprocess
import sys
import types

import pytest

import hookgrad
from hookgrad import cli

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def run_module(*argv):
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "hookgrad", *argv], capture_output=True, text=True, env=env,
                          timeout=120)


def test_help_lists_the_subcommands():
    proc = run_module("--help")
    assert proc.returncode == 0
    for command in ("demo", "run", "bench"):
        assert command in proc.stdout


def test_demo_help():
    proc = run_module("demo", "--help")
    assert proc.returncode == 0
    for option in ("--epochs", "--seed", "--out", "--no-plots", "--inject-nan", "Exit codes"):
        assert option in proc.stdout


@pytest.mark.parametrize("argv, message", [
    ([], "the following arguments are required: COMMAND"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["demo", "--epochs", "0"], "argument --epochs: expected a positive integer, got 0"),
    (["demo", "--inject-nan", "sideways"], "argument --inject-nan: invalid choice"),
    (["demo", "--colour"], "unrecognized arguments: --colour"),
])
def test_bad_options_give_argparse_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "bench"])
def test_run_and_bench_dispatch_their_arguments(command, monkeypatch):
    calls = []
    fake = types.ModuleType(f"hookgrad._{command}")
    fake.main = lambda argv: calls.append(argv) or 7
    monkeypatch.setitem(sys.modules, f"hookgrad._{command}", fake)
    assert cli.main([command, "--help", "x.py", "-k"]) == 7
    assert calls == [["--help", "x.py", "-k"]]


def test_missing_subcommand_module_is_reported(monkeypatch, capsys):
    monkeypatch.setitem(cli.DELEGATED, "run", ("hookgrad._no_such_module", "", ""))
    assert cli.main(["run", "script.py"]) == 2
    assert "not available in this installation" in capsys.readouterr().err


def test_a_missing_dependency_inside_the_subcommand_is_not_hidden(monkeypatch, tmp_path):
    (tmp_path / "hookgrad_fake_cmd.py").write_text("import a_module_that_does_not_exist\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli.DELEGATED, "run", ("hookgrad_fake_cmd", "", ""))
    with pytest.raises(ModuleNotFoundError, match="a_module_that_does_not_exist"):
        cli.main(["run"])


def test_console_script_points_at_main():
    text = open(os.path.join(os.path.dirname(SRC), "pyproject.toml")).read()
    assert 'hookgrad = "hookgrad.cli:main"' in text
    assert callable(cli.main)


def test_version():
    proc = run_module("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"hookgrad {hookgrad.__version__}"


@pytest.mark.parametrize("command", ["demo", "run", "bench"])
def test_every_help_names_the_program_hookgrad(command):
    proc = run_module(command, "--help")
    assert proc.returncode == 0, proc.stderr
    assert f"usage: hookgrad {command}" in proc.stdout and "python -m hookgrad" not in proc.stdout


def test_bench_without_torch_says_how_to_install_it(monkeypatch, capsys):
    real_find_spec = cli.importlib.util.find_spec
    monkeypatch.setattr(cli.importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real_find_spec(name, *a))
    assert cli.main(["bench", "--quick"]) == 1
    err = capsys.readouterr().err
    assert "pip install 'hookgrad[bench]'" in err and "https://download.pytorch.org/whl/cpu" in err


def test_project_urls_point_at_the_repository():
    text = open(os.path.join(os.path.dirname(SRC), "pyproject.toml")).read()
    urls = text.split("[project.urls]", 1)[1].split("[", 1)[0]
    for key in ("Homepage", "Documentation", "Issues"):
        assert f'{key} = "https://github.com/hookgrad/hookgrad' in urls
