"""The README's standalone code examples run (so the README stays true)."""
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
STANDALONE = [b for b in BLOCKS if b.lstrip().startswith("import hookgrad")]


def test_readme_has_standalone_examples():
    assert len(STANDALONE) >= 2


@pytest.mark.parametrize("index", range(len(STANDALONE)))
def test_readme_example_runs(index, capsys):
    exec(compile(STANDALONE[index], f"README block {index}", "exec"), {"__name__": "readme"})
    assert capsys.readouterr().out
