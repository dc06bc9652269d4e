"""The ``hookgrad`` command (also ``python -m hookgrad``).

    hookgrad demo [options]     train a small CNN on the bundled digits with the hook tools attached
    hookgrad run SCRIPT [ARGS]  run a PyTorch script with hookgrad standing in for torch
    hookgrad bench [options]    time hookgrad against torch side by side
    hookgrad --version

Every help text calls the program ``hookgrad``; ``python -m hookgrad`` is the same program.

``run`` and ``bench`` live in ``hookgrad._run`` and ``hookgrad._bench`` (each with ``main(argv)``),
imported only when asked for; their options are theirs (``hookgrad run --help``).
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from typing import Sequence

from . import demo

DELEGATED = {
    "run": ("hookgrad._run", "run a PyTorch script with hookgrad standing in for torch",
            "hookgrad run SCRIPT [ARGS...]"),
    "bench": ("hookgrad._bench", "time hookgrad against torch side by side (needs torch)",
              "hookgrad bench [OPTIONS]"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hookgrad",
        description="hookgrad: PyTorch's API and hook system on NumPy.",
        epilog="Run 'hookgrad COMMAND --help' for the options of a command. 'python -m hookgrad' is the same "
               "program.")
    parser.add_argument("--version", action="version", version=f"hookgrad {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    commands.required = True
    demo.add_arguments(commands.add_parser(
        "demo", help="train a small CNN on the bundled digits with the hook tools attached",
        description=demo.make_parser().description, epilog=demo.make_parser().epilog))
    for name, (_, text, usage) in DELEGATED.items():
        # Their options are parsed by their own main(); these entries exist for the listing.
        commands.add_parser(name, help=text, description=text, usage=usage, add_help=False)
    return parser


def _version() -> str:
    from . import __version__
    return __version__


# What a subcommand needs beyond hookgrad, and how to get it (checked before it starts).
NEEDS = {"bench": ("torch", "hookgrad bench times hookgrad against torch 2.13, which is not installed: "
                            "pip install 'hookgrad[bench]' (on a machine without a GPU, the CPU-only wheel is "
                            "much smaller: pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu)")}


def _delegate(name: str, argv: list[str]) -> int:
    module_name = DELEGATED[name][0]
    needed = NEEDS.get(name)
    asks_only_for_help = any(a in ("-h", "--help", "--list") for a in argv)
    if needed is not None and not asks_only_for_help and importlib.util.find_spec(needed[0]) is None:
        print(f"{needed[1]}", file=sys.stderr)
        return 1
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        print(f"hookgrad {name}: not available in this installation (the module {module_name} is missing)",
              file=sys.stderr)
        return 2
    entry = getattr(module, "main", None)
    if not callable(entry):
        print(f"hookgrad {name}: {module_name} has no main(argv) function", file=sys.stderr)
        return 2
    code = entry(argv)
    return 0 if code is None else int(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hookgrad`` console script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in DELEGATED:
        return _delegate(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        return demo.main(args)
    raise AssertionError(f"unhandled command {args.command!r}")  # argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
