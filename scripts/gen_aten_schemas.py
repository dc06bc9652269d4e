"""Generate src/hookgrad/data/aten_schemas.json: torch's ATen operator schemas and tags, as data.

    python scripts/gen_aten_schemas.py           # rewrite the table from the installed torch
    python scripts/gen_aten_schemas.py --check   # exit 1 if the table differs from the installed torch

hookgrad parses the schema strings itself (hookgrad/_function_schema.py) and needs no torch at run
time; torch is read here once, and by tests/test_dispatch_aten.py to check the parsed schemas.
The file (loaded by hookgrad/_aten_schema_table.py) holds, per ATen overload, the schema as
``str(schema)`` prints it and, after a tab, its tags; the names and values of ``torch.Tag``; and, per
type as a schema writes it (``int[1]?``), the ``str()`` and ``kind()`` of the type object torch's
parser makes of it.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUT = os.path.join(ROOT, "src", "hookgrad", "data", "aten_schemas.json")


def _overloads():
    import torch
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        name = schema.name.removeprefix("aten::")
        packet = getattr(torch.ops.aten, name, None)
        overload = getattr(packet, schema.overload_name or "default", None) if packet is not None else None
        tags = [tag.name for tag in overload.tags] if overload is not None else []
        yield schema, tags


def render() -> str:
    import torch
    sys.path.insert(0, os.path.join(ROOT, "src"))
    from hookgrad._function_schema import split_schema

    lines, types = [], {}
    seen = set()
    for schema, tags in _overloads():
        text = str(schema)
        if text in seen:
            continue
        seen.add(text)
        if "\t" in text or "\n" in text:
            raise ValueError(f"a schema with a tab or newline cannot be stored one a line: {text!r}")
        lines.append(text + ("\t" + " ".join(tags) if tags else ""))
        _, _, arguments, returns, _ = split_schema(text)
        parsed = list(arguments) + list(returns)
        for argument, part in zip(list(schema.arguments) + list(schema.returns), parsed):
            types[part.type_text] = (str(argument.type), argument.type.kind())
    table = {
        "torch": torch.__version__,
        "tags": {name: int(value) for name, value in torch.Tag.__members__.items()},
        "types": dict(sorted(types.items())),
        "schemas": lines,
    }
    return json.dumps(table, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    options = parser.parse_args()
    text = render()
    if options.check:
        with open(OUTPUT, encoding="utf-8") as file:
            if file.read() != text:
                print(f"{OUTPUT} is out of date: run python scripts/gen_aten_schemas.py")
                return 1
        return 0
    with open(OUTPUT, "w", encoding="utf-8") as file:
        file.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
