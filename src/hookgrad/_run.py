"""``hookgrad run SCRIPT [ARGS...]``: run an unmodified PyTorch script with hookgrad standing in for torch.

How it works: a finder at the front of ``sys.meta_path`` answers every import of ``torch`` or
``torch.X.Y`` with the module ``hookgrad`` or ``hookgrad.X.Y`` (the same module object, so
``torch.nn.Module is hookgrad.nn.Module``); the script then runs as ``__main__``,
with ``sys.argv``, ``sys.path[0]`` and ``__file__`` set as ``python SCRIPT ARGS`` would set them.
While the aliasing lasts, hookgrad's classes carry torch's ``__module__``/``__qualname__``
(``<class 'torch.Tensor'>``; see ``_torch_identity.py``): the same finder sees each hookgrad module
load and renames its classes.

Parts of torch that hookgrad lacks fail loudly, never silently: importing a missing submodule
raises ``ModuleNotFoundError("hookgrad has no torch.fft; ...")`` and reading a missing attribute of
an aliased module raises ``AttributeError("hookgrad has no torch.fft.rfft; ...")``.

``hookgrad run --nproc N SCRIPT`` starts N MPI ranks through ``mpiexec`` (the mpich wheel's, else the
one on PATH), each running ``hookgrad run SCRIPT``; ``torch.distributed`` is ``hookgrad.distributed``
there, and each rank sees torchrun's RANK, WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE.
"""
from __future__ import annotations

import argparse
import builtins
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import io
import os
import runpy
import sys
import traceback
import types
import zipfile
from typing import Sequence

HINT = "see docs/api-coverage.md"  # the generated list of torch's names and which ones hookgrad has
_TORCH, _OURS = "torch", "hookgrad"
# other packages' torch bindings, which need torch's own tensors: hookgrad's versions stand in
_BINDINGS = {"safetensors.torch": "hookgrad._safetensors"}


def missing_message(torch_name: str) -> str:
    return f"hookgrad has no {torch_name}; {HINT}"


def _torch_name(module_name: str) -> str:
    return _TORCH + module_name[len(_OURS):]


def _ours_name(torch_name: str) -> str:
    return _OURS + torch_name[len(_TORCH):]


# torch's class identities worn by hookgrad's classes while torch_aliases is active (None outside)
_identities = None


def _guard_attributes(module: types.ModuleType) -> None:
    """Make a missing attribute of ``module`` raise an AttributeError naming the torch API."""
    namespace = module.__dict__
    if namespace.get("__hookgrad_run_guard__"):
        return
    original = namespace.get("__getattr__")
    own_name = module.__name__  # (the root module answers to torch's name while the aliases last)
    prefix = _torch_name(own_name)

    def __getattr__(name):
        if original is not None:
            try:
                value = original(name)
            except AttributeError:
                pass
            except ModuleNotFoundError as exc:
                # a lazily imported submodule that is not there: still a missing attribute
                if exc.name not in (f"{own_name}.{name}", f"{prefix}.{name}"):
                    raise
            else:
                if isinstance(value, types.ModuleType) and value.__name__.startswith(_OURS + "."):
                    _alias(value)
                elif _identities is not None and isinstance(value, type):
                    _identities.attribute_loaded(own_name, name, value)
                return value
        renamed = _identities.lookup(prefix, name) if _identities is not None else None
        if renamed is not None:  # a class torch defines here and hookgrad elsewhere (torch._C.Generator)
            return renamed
        if name.startswith("__") and name.endswith("__"):
            # dunder probes (__path__, __file__, ...) keep Python's own answer
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
        # Python's wording, as under torch, then where hookgrad's coverage is listed
        raise AttributeError(f"module {prefix!r} has no attribute {name!r} ({missing_message(f'{prefix}.{name}')})")

    namespace["__getattr__"] = __getattr__
    namespace["__hookgrad_run_guard__"] = True


def _alias(module: types.ModuleType) -> None:
    """Register ``module`` (a hookgrad module) under its torch name too."""
    name = module.__name__
    if name != _OURS and not name.startswith(_OURS + "."):
        return
    sys.modules.setdefault(_torch_name(name), module)
    _guard_attributes(module)


def _alias_loaded() -> None:
    for name, module in list(sys.modules.items()):
        if module is not None and (name == _OURS or name.startswith(_OURS + ".")):
            _alias(module)


class _AliasLoader(importlib.abc.Loader):
    """Hands back the already-imported hookgrad module for a torch name."""

    def __init__(self, target: str):
        self.target = target
        self._original_spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self._original_spec = module.__spec__
        return module

    def exec_module(self, module):
        # the import system stamped our alias spec on the module; give it its own back
        module.__spec__ = self._original_spec
        _alias(module)
        _alias_loaded()


class _RenamingLoader(importlib.abc.Loader):
    """Runs a hookgrad module with its own loader, then gives its classes torch's identities."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        # the module keeps its own loader, as if this one had never been there
        module.__loader__ = module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        if _identities is not None:
            _identities.module_loaded(module)


class TorchAliasFinder(importlib.abc.MetaPathFinder):
    """Resolves ``torch`` and ``torch.*`` to ``hookgrad`` and ``hookgrad.*``; hookgrad's own modules,
    as they load, take torch's class identities."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith(_OURS + "."):
            return self._renaming_spec(fullname, path, target)
        if fullname in _BINDINGS:
            return importlib.machinery.ModuleSpec(fullname, _AliasLoader(_BINDINGS[fullname]))
        if fullname != _TORCH and not fullname.startswith(_TORCH + "."):
            return None
        ours = _ours_name(fullname)
        try:
            found = importlib.util.find_spec(ours)
        except ModuleNotFoundError:
            found = None
        if found is None:
            # name=None keeps Python from turning this into a vaguer "cannot import name" error
            raise ModuleNotFoundError(missing_message(fullname), name=None)
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(ours), is_package=found.submodule_search_locations
                                              is not None)

    def _renaming_spec(self, fullname, path, target):
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _RenamingLoader(spec.loader)
        return spec


class _TorchDistribution(importlib.metadata.Distribution):
    """The installed-package record of ``torch`` where no real torch is installed: libraries that check
    ``importlib.metadata.version("torch")`` (or a requirement such as ``torch>=2.0``) find hookgrad's
    version, which starts with the torch release whose API it follows."""

    def read_text(self, filename):
        if filename == "METADATA":
            from .version import __version__
            return (f"Metadata-Version: 2.1\nName: {_TORCH}\nVersion: {__version__}\n"
                    f"Summary: hookgrad standing in for torch under hookgrad run\n")
        return None

    def locate_file(self, path):
        return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), str(path))


class TorchMetadataFinder(importlib.abc.MetaPathFinder):
    """Answers package-metadata lookups for ``torch`` when no installed distribution does. It sits at
    the end of ``sys.meta_path``, so an installed torch's own record comes first."""

    def find_spec(self, fullname, path=None, target=None):
        return None

    def find_distributions(self, context=importlib.metadata.DistributionFinder.Context()):
        name = getattr(context, "name", None)
        if name is None or name.replace("_", "-").lower() != _TORCH:
            return iter(())
        for finder in sys.meta_path:
            find = getattr(finder, "find_distributions", None)
            if finder is self or find is None:
                continue
            if next(iter(find(context)), None) is not None:
                return iter(())  # a real torch is installed: its record answers
        return iter((_TorchDistribution(),))


class torch_aliases:
    """Context manager: while active, ``import torch`` gives hookgrad; on exit, the previous state returns."""

    def __enter__(self):
        self._saved = {n: m for n, m in sys.modules.items() if n == _TORCH or n.startswith(_TORCH + ".")
                       or n in _BINDINGS}
        for name in self._saved:
            del sys.modules[name]
        self._finder = TorchAliasFinder()
        sys.meta_path.insert(0, self._finder)
        self._metadata_finder = TorchMetadataFinder()
        sys.meta_path.append(self._metadata_finder)
        importlib.import_module(_OURS)
        global _identities
        from ._torch_identity import TorchIdentities
        self._outer_identities = _identities
        if _identities is None:
            _identities = TorchIdentities()
            _identities.apply_loaded()
        _alias_loaded()
        # ``torch.__name__`` is "torch" (pyro's patches check it before walking torch's attributes)
        root = sys.modules[_OURS]
        self._root_name = root.__name__
        root.__name__ = _TORCH
        return self

    def __exit__(self, *exc):
        sys.modules[_OURS].__name__ = self._root_name
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        if self._metadata_finder in sys.meta_path:
            sys.meta_path.remove(self._metadata_finder)
        global _identities
        if self._outer_identities is None and _identities is not None:
            _identities.restore()
            _identities = None
        for name in [n for n in sys.modules if n == _TORCH or n.startswith(_TORCH + ".") or n in _BINDINGS]:
            del sys.modules[name]
        sys.modules.update(self._saved)
        return False


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hookgrad run",
        description="Run a PyTorch script with hookgrad standing in for torch: `import torch` (and torch.nn, "
                    "torch.optim, torch.utils.data, ...) resolve to hookgrad. Parts of torch that hookgrad "
                    f"lacks raise an error naming them ({HINT}).",
        usage="hookgrad run [-h] [--nproc N [--hostfile FILE]] (SCRIPT | -m MODULE | -c COMMAND) [ARGS ...]")
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module as a script, like python -m")
    parser.add_argument("-c", dest="command", metavar="COMMAND", help="run the program passed as a string, like python -c")
    parser.add_argument("--nproc", type=int, metavar="N",
                        help="start N processes (MPI ranks, through mpiexec) that each run the script, for "
                             "torch.distributed / DistributedDataParallel training (needs hookgrad[distributed])")
    parser.add_argument("--hostfile", metavar="FILE",
                        help="with --nproc: spread the ranks over the machines listed in FILE (mpiexec's hostfile)")
    parser.add_argument("script", nargs="?", help="path of the script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script as sys.argv[1:]")
    return parser


_VALUED_OPTIONS = ("--nproc", "--hostfile")


def _split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """Our options are those before the script (or -m MODULE); everything after belongs to the script."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-m", "-c"):
            return argv[:i + 2], argv[i + 2:]
        if arg in _VALUED_OPTIONS:
            i += 2
            continue
        if not arg.startswith("-"):
            return argv[:i + 1], argv[i + 1:]
        i += 1
    return argv, []


def find_mpiexec() -> str | None:
    """The mpiexec of the mpich wheel (installed beside this Python) or else the one on PATH."""
    import shutil
    import sysconfig
    for folder in (os.path.dirname(sys.executable), sysconfig.get_path("scripts")):
        candidate = os.path.join(folder, "mpiexec")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("mpiexec")


def launch_ranks(nproc: int, hostfile: str | None, script: str | None, module: str | None,
                 args: Sequence[str]) -> int:
    """Run ``hookgrad run`` in ``nproc`` MPI processes through mpiexec; returns mpiexec's exit code
    (non-zero when any rank failed: a rank's uncaught error aborts the whole job)."""
    import subprocess
    mpiexec = find_mpiexec()
    if mpiexec is None:
        print("hookgrad run --nproc: no mpiexec found: pip install 'hookgrad[distributed]' (mpi4py and mpich), "
              "or put your MPI's mpiexec on PATH", file=sys.stderr)
        return 2
    command = [mpiexec, "-n", str(nproc)]
    if hostfile:
        command += ["-hostfile", hostfile]
    command += [sys.executable, "-m", "hookgrad", "run"]
    command += ["-m", module] if module is not None else [script]
    command += list(args)
    return subprocess.call(command)


def _export_rank_environment() -> None:
    """Under MPI, give the script torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE)."""
    sources = {"RANK": ("PMI_RANK", "OMPI_COMM_WORLD_RANK"), "WORLD_SIZE": ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"),
               "LOCAL_RANK": ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK"),
               "LOCAL_WORLD_SIZE": ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE")}
    for name, candidates in sources.items():
        for candidate in candidates:
            if os.environ.get(candidate) and name not in os.environ:
                os.environ[name] = os.environ[candidate]
                break


def script_filename(path: str) -> str:
    """The script's ``__file__`` as ``python SCRIPT`` sets it: the path joined to the working directory
    (not normalised: ``python ./a.py`` names ``/cwd/./a.py``), so tracebacks show absolute paths."""
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)


def _exec_as_main(code, **module_globals) -> None:
    """Run compiled ``code`` as the ``__main__`` module, with ``module_globals`` besides Python's own."""
    main = types.ModuleType("__main__")
    main.__dict__.update(__package__=None, __spec__=None, __builtins__=builtins, __annotations__={},
                         **module_globals)
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def _run_file_as_main(path: str) -> None:
    """Run a source file as ``__main__`` with the globals ``python SCRIPT`` gives it."""
    filename = script_filename(path)
    with io.open_code(filename) as f:
        source = f.read()
    _exec_as_main(compile(source, filename, "exec", dont_inherit=True), __file__=filename, __cached__=None,
                  __loader__=importlib.machinery.SourceFileLoader("__main__", filename))


def _run_command_as_main(command: str) -> None:
    """Run a program given as a string as ``__main__``, as ``python -c`` does."""
    _exec_as_main(compile(command, "<string>", "exec", dont_inherit=True),
                  __loader__=importlib.machinery.BuiltinImporter)


def run_script(path: str | None, args: Sequence[str] = (), module: str | None = None,
               command: str | None = None) -> int:
    """Run ``path`` (or ``module``, or the program text ``command``) as ``__main__`` with torch resolved to
    hookgrad; returns the exit code."""
    saved_argv = sys.argv[:]
    entry = os.getcwd() if module is not None or command is not None else os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, entry)
    try:
        with torch_aliases():
            if command is not None:
                sys.argv = ["-c", *args]
                _run_command_as_main(command)
            elif module is not None:
                sys.argv = [module, *args]
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            else:
                sys.argv = [path, *args]
                if os.path.isfile(path) and not zipfile.is_zipfile(path):
                    _run_file_as_main(path)
                else:  # a directory or zip archive with a __main__.py
                    runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    finally:
        sys.argv = saved_argv
        if entry in sys.path:
            sys.path.remove(entry)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ours, rest = _split_argv(argv)
    parser = make_parser()
    opts = parser.parse_args(ours)
    if opts.module is None and opts.command is None and opts.script is None:
        parser.error("a SCRIPT (or -m MODULE, or -c COMMAND) is required")
    if opts.module is not None and opts.command is not None:
        parser.error("give -m MODULE or -c COMMAND, not both")
    if (opts.module is not None or opts.command is not None) and opts.script is not None:
        rest = [opts.script, *rest]
    if opts.command is not None:
        opts.script = None
    if opts.module is None and opts.command is None and not os.path.exists(opts.script):
        print(f"hookgrad run: can't open file {script_filename(opts.script)!r}: [Errno 2] No such file or directory",
              file=sys.stderr)
        return 2
    if opts.hostfile is not None and opts.nproc is None:
        parser.error("--hostfile needs --nproc N")
    if opts.nproc is not None:
        if opts.nproc < 1:
            parser.error("--nproc must be at least 1")
        if opts.command is not None:
            parser.error("--nproc runs a SCRIPT or -m MODULE, not -c COMMAND")
        if opts.module is not None:
            return launch_ranks(opts.nproc, opts.hostfile, None, opts.module, rest)
        return launch_ranks(opts.nproc, opts.hostfile, opts.script, None, rest)
    _export_rank_environment()
    try:
        code = run_script(opts.script, rest, module=opts.module, command=opts.command)
    except Exception as exc:  # what `python SCRIPT` would print, exit code 1 included
        tb = _from_the_script_on(exc.__traceback__)
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        code = 1
    if code and _is_mpi_rank():
        # one rank failing must end the job: the other ranks may be waiting for it in a collective
        from .distributed.distributed_c10d import abort_job
        abort_job(f"the script ended with exit code {code}", code)
    return code


def _is_mpi_rank() -> bool:
    size = os.environ.get("PMI_SIZE") or os.environ.get("OMPI_COMM_WORLD_SIZE") or "1"
    return size.isdigit() and int(size) > 1


# Frames of the launcher itself: the command line, this module and runpy.
_LAUNCHER_FILES = {os.path.abspath(f) for f in (__file__, runpy.__file__, os.path.join(os.path.dirname(__file__), "cli.py"),
                                                os.path.join(os.path.dirname(__file__), "__main__.py"))}
_LAUNCHER_FILES.add(runpy._run_code.__code__.co_filename)    # "<frozen runpy>" where runpy is frozen


def _from_the_script_on(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback without its leading launcher frames, so that it starts at the user's code as
    under ``python SCRIPT`` (None when the error arose before the script ran, e.g. a SyntaxError,
    whose message names the file and line itself)."""
    while tb is not None and (tb.tb_frame.f_code.co_filename in _LAUNCHER_FILES
                              or os.path.abspath(tb.tb_frame.f_code.co_filename) in _LAUNCHER_FILES):
        tb = tb.tb_next
    return tb


if __name__ == "__main__":
    sys.exit(main())
