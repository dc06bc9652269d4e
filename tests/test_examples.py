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
