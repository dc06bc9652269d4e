"""Every code block of the README runs here, as written or with the set-up declared below, and the
demo output it quotes is what the demo prints (so the README stays true).

Blocks by kind:
- ```python blocks that start with ``import hookgrad`` run as they are, in an empty folder.
- other ```python blocks need a set-up named in PYTHON_SETUP (keyed by their first line).
- ``` blocks of commands: ``make`` targets must exist in the Makefile (they are not run: ``make
  test`` is this suite); ``pip install torch==...`` must pin the version pyproject.toml pins;
  ``python3 -m venv`` is not run; ``python -m hookgrad ...`` commands run, with the files they name
  created first (COMMAND_SETUP).
- the ``` block that starts with ``epoch`` is the demo's output: the demo runs and must print it
  (times, speeds and the output folder aside).
- the ``` block that starts with ``src/hookgrad/`` is a directory tree, not code.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
BLOCKS = [(info.strip(), body) for info, body in re.findall(r"```([^\n]*)\n(.*?)```", README, re.S)]
PYTHON = [body for info, body in BLOCKS if info == "python"]
PLAIN = [body for info, body in BLOCKS if info == ""]


def _run_defined_tests(namespace: dict) -> None:
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert tests, "the block defines no test function"
    for test in tests:
        test()


# first line of a block -> (what the set-up is, how to run the block's namespace afterwards)
PYTHON_SETUP = {
    "from difftest import differential, catch":
        ("runs with tests/ on sys.path (as the suite does); then each test function it defines is called",
         _run_defined_tests),
}


# blocks that quote a line of the code as it stands (the Design section's op declaration and its
# test row): first line -> the file that must contain the block verbatim
QUOTED_SOURCE = {
    'exp = unary("exp", _rounded_once(np.exp), lambda g, r: g * r, node="ExpBackward0", saves="result", inplace=True, on_arrays=True)':
        "src/hookgrad/_ops/pointwise.py",
    '"exp": (lambda T, x: x.exp(), {}),': "tests/op_cases.py",
}


def _kind(body: str) -> str:
    first = body.lstrip().splitlines()[0] if body.strip() else ""
    if first.startswith("epoch "):
        return "demo output"
    if first.startswith("src/hookgrad/"):
        return "tree"
    return "commands"


def test_every_block_is_accounted_for():
    for body in PYTHON:
        first = body.lstrip().splitlines()[0]
        assert first.startswith("import hookgrad") or first in PYTHON_SETUP or first in QUOTED_SOURCE, \
            f"README python block needs a declared set-up in tests/test_readme.py: {first!r}"
    kinds = [_kind(body) for body in PLAIN]
    assert kinds.count("demo output") == 1 and "commands" in kinds


@pytest.mark.parametrize("index", range(len(PYTHON)))
def test_python_block_runs(index, tmp_path, monkeypatch, capsys):
    body = PYTHON[index]
    first = body.lstrip().splitlines()[0]
    if first in QUOTED_SOURCE:
        assert textwrap.dedent(body).strip() in (ROOT / QUOTED_SOURCE[first]).read_text()
        return
    monkeypatch.chdir(tmp_path)          # blocks that save files save them here
    namespace = {"__name__": "readme"}
    exec(compile(body, f"README python block {index}", "exec"), namespace)
    first = body.lstrip().splitlines()[0]
    if first in PYTHON_SETUP:
        PYTHON_SETUP[first][1](namespace)
    else:
        assert capsys.readouterr().out


# ---- command blocks ----------------------------------------------------------------------------
COMMAND_SETUP = {
    "train.py": "import argparse, torch\n"
                "p = argparse.ArgumentParser(); p.add_argument('--epochs', type=int)\n"
                "print('epochs', p.parse_args().epochs, torch.__name__)\n",
    "mypackage/__init__.py": "",
    "mypackage/train.py": "import torch\nprint('module', torch.__name__)\n",
}


def _commands() -> list[str]:
    lines = []
    for body in PLAIN:
        if _kind(body) != "commands":
            continue
        for line in body.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                lines.append(line)
    return lines


def test_make_targets_exist():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([\w.-]+):", makefile, re.M))
    used = [shlex.split(c)[1] for c in _commands() if c.startswith("make ")]
    assert used and set(used) <= targets, (used, targets)


def test_pip_lines_pin_what_pyproject_pins():
    pins = re.findall(r'"torch==([\d.]+)"', (ROOT / "pyproject.toml").read_text())
    lines = [c for c in _commands() if " pip install " in f" {c}" or c.startswith(".venv/bin/pip")]
    assert lines
    for line in lines:
        version = re.search(r"torch==([\d.]+)", line).group(1)
        assert version in pins and "--index-url https://download.pytorch.org/whl/cpu" in line


def test_every_command_is_known():
    for line in _commands():
        assert line.split()[0] in ("make", "python", "python3", ".venv/bin/pip"), line


def test_hookgrad_commands_run(tmp_path):
    for name, text in COMMAND_SETUP.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    ran = 0
    for line in _commands():
        words = shlex.split(line)
        if words[:3] != ["python", "-m", "hookgrad"]:
            continue
        proc = subprocess.run([sys.executable, *words[1:]], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, f"{line}\n{proc.stderr}"
        ran += 1
    assert ran >= 2


# ---- the demo output it quotes -------------------------------------------------------------------
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]\d+)?")


def _close(got: str, want: str) -> bool:
    """Equal numbers as printed, up to one unit in the last printed digit (a rounding flip)."""
    g, w = float(got), float(want)
    digits = want.split("e")[0]
    unit = 10.0 ** -(len(digits.split(".")[1]) if "." in digits else 0)
    if "e" in want:
        unit *= 10.0 ** int(want.split("e")[1])
    return abs(g - w) <= unit * 1.001


def _same_line(got: str, want: str) -> bool:
    if NUMBER.sub("#", got) != NUMBER.sub("#", want):
        return False
    return all(_close(g, w) for g, w in zip(NUMBER.findall(got), NUMBER.findall(want)))


def test_quoted_demo_output_is_what_the_demo_prints(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    import hookgrad
    from hookgrad.demo import run_demo
    quoted = next(body for body in PLAIN if _kind(body) == "demo output").splitlines()
    run_demo(hookgrad, ["--no-progress", "--out", str(tmp_path)])
    printed = capsys.readouterr().out.splitlines()

    # the progress bar's last line against the plain last-epoch line
    bar = quoted[0]
    last = next(line for line in printed if line.startswith("epoch 8/8:"))
    assert re.search(r"(\d+)/\1 \[", bar), bar
    for key, name in (("acc", "training accuracy"), ("held_out", "held-out accuracy"), ("loss", "loss")):
        want = re.search(rf"\b{key}=([\d.]+)", bar).group(1)
        got = re.search(rf"{name} ([\d.]+)", last).group(1)
        assert _close(got, want), (key, got, want)

    summary = printed[printed.index("") + 1:]
    quoted = quoted[2:]
    assert len(summary) == len(quoted), "\n".join(summary)
    for got, want in zip(summary, quoted):
        if want.startswith("held-out accuracy"):        # the time is the machine's
            got, want = got.split(" s)")[0].rsplit(",", 1)[0], want.split(" s)")[0].rsplit(",", 1)[0]
        if want.startswith("outputs in"):               # printed as an absolute path
            continue
        assert _same_line(got, want), f"README says\n{want}\nthe demo printed\n{got}"


def test_readme_names_the_images_it_shows():
    for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README):
        assert (ROOT / image).is_file(), image


def test_the_make_demo_recipe_is_the_command_quoted():
    makefile = (ROOT / "Makefile").read_text()
    recipe = textwrap.dedent(makefile.split("demo: ", 1)[1].split("\n\n", 1)[0])
    assert "-m hookgrad demo" in recipe
