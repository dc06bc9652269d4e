"""The layer order is checked, not hoped: no hookgrad module imports, while it is being imported,
a module of a higher layer, and the names a lower layer reaches up for at run time are declared
with ``LateNames`` and really come from above.

The imports are recorded in a fresh interpreter that imports every hookgrad module: each
``import`` statement executed by a module body (not by a function it defines) is an edge from
that module to the module it names and to the packages containing it, whose ``__init__`` runs too.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

# Bottom to top; a module belongs to the layer of its longest matching prefix. A new top-level
# module (a new torch namespace) falls into "namespace" unless listed here.
LAYERS = [
    ("handles and late names", ["hookgrad.utils.hooks", "hookgrad.utils", "hookgrad._late"]),
    ("dtypes and devices", ["hookgrad._dtype", "hookgrad.return_types", "hookgrad._device", "hookgrad._heap", "hookgrad._format",
                            "hookgrad._threads", "hookgrad._memory_format", "hookgrad._meta"]),
    ("autograd graph", ["hookgrad.autograd"]),
    ("tensor", ["hookgrad._tensor"]),
    ("ops", ["hookgrad._ops"]),
    ("autograd engine", ["hookgrad.autograd.engine"]),
    ("namespace", ["hookgrad", "hookgrad.autograd.variable"]),  # torch's path of the legacy Variable class
    ("namespace utilities", ["hookgrad.utils._pytree",  # torch.Size is a pytree node
                             "hookgrad.utils.model_zoo",  # torch.hub's loader
                             "hookgrad.utils._device"]),  # DeviceContext, the mode torch.device pushes
    ("nn", ["hookgrad.nn"]),
    ("optim", ["hookgrad.optim"]),
    ("data", ["hookgrad.utils.data", "hookgrad.data"]),
    ("namespaces on nn", ["hookgrad.fx", "hookgrad.func", "hookgrad.jit", "hookgrad.distributions",
                          "hookgrad.distributed", "hookgrad.multiprocessing", "hookgrad.utils.checkpoint",
                          "hookgrad.testing", "hookgrad._functorch", "hookgrad._dynamo"]),
    ("tools", ["hookgrad.tools", "hookgrad.hooks",
               "hookgrad.autograd.forward_ad",  # pushes tangents through the op hooks
               # dispatch modes and the FLOP counter see the ops through the op hooks
               "hookgrad.utils._python_dispatch", "hookgrad.utils.flop_counter", "hookgrad.utils.module_tracker",
               "hookgrad.utils._aten_calls", "hookgrad.utils._dispatch_backward",
               "hookgrad.testing._internal.logging_tensor"]),  # torch's test helper: a dispatch mode
    ("cli", ["hookgrad.cli", "hookgrad.demo", "hookgrad._run", "hookgrad._bench", "hookgrad.__main__",
             "hookgrad._bench_ddp", "hookgrad._worker_main"]),
]


def layer_of(module: str) -> int:
    best, best_len = None, -1
    for rank, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = rank, len(prefix)
    assert best is not None, module
    return best


def layer_name(module: str) -> str:
    return LAYERS[layer_of(module)][0]


_RECORDER = textwrap.dedent("""
    import builtins, importlib, importlib.util, json, pkgutil, sys

    edges = set()
    real_import = builtins.__import__

    def recording_import(name, globals=None, locals=None, fromlist=(), level=0):
        module = real_import(name, globals, locals, fromlist, level)
        importer = (globals or {}).get("__name__", "")
        if importer.startswith("hookgrad") and sys._getframe(1).f_code.co_name == "<module>":
            package = globals.get("__package__") or importer
            target = importlib.util.resolve_name("." * level + name, package) if level else name
            if target.startswith("hookgrad"):
                names = [f"{target}.{item}" for item in fromlist or () if f"{target}.{item}" in sys.modules]
                if not names or len(names) < len(fromlist or ()):
                    names.append(target)
                for full in names:
                    parts = full.split(".")
                    # the packages on the way are imported too (the root always is, first)
                    for i in range(2, len(parts) + 1):
                        edges.add((importer, ".".join(parts[:i])))
                    if full == "hookgrad":
                        edges.add((importer, full))
        return module

    builtins.__import__ = recording_import
    import hookgrad
    skipped = []
    for info in pkgutil.walk_packages(hookgrad.__path__, "hookgrad.", onerror=lambda name: None):
        if info.name == "hookgrad.__main__":
            continue
        try:
            importlib.import_module(info.name)
        except ImportError as exc:  # an optional extra that is not installed
            if (exc.name or "").startswith("hookgrad"):
                raise
            skipped.append(info.name)
    builtins.__import__ = real_import
    late = {}
    from hookgrad._late import LateNames
    for name, module in list(sys.modules.items()):
        if name.startswith("hookgrad"):
            for attr, value in vars(module).items():
                if isinstance(value, LateNames):
                    late[f"{name}.{attr}"] = value.sources()
    print(json.dumps({"edges": sorted(edges), "skipped": skipped, "late": late,
                      "modules": sorted(m for m in sys.modules if m.startswith("hookgrad"))}))
""")


@pytest.fixture(scope="module")
def recorded():
    out = subprocess.run([sys.executable, "-c", _RECORDER], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_module_imported_and_placed(recorded):
    modules = recorded["modules"]
    assert "hookgrad.nn.modules.module" in modules and "hookgrad.optim.optimizer" in modules
    assert "hookgrad.tools" in modules and "hookgrad.cli" in modules
    for module in modules:
        layer_of(module)


def test_no_module_imports_a_higher_layer(recorded):
    upward = [f"{a} ({layer_name(a)}) imports {b} ({layer_name(b)})"
              for a, b in recorded["edges"] if layer_of(b) > layer_of(a)]
    assert not upward, "imports that point up:\n" + "\n".join(upward)


def test_bottom_layer_imports_nothing_of_ours(recorded):
    for module in ("hookgrad.utils.hooks", "hookgrad._late"):
        assert [b for a, b in recorded["edges"] if a == module] == []


def test_late_names_resolve_and_come_from_above(recorded):
    import importlib

    assert recorded["late"], "no LateNames declared: then this test has nothing to check"
    for where, sources in recorded["late"].items():
        module_name, _, attr = where.rpartition(".")
        late = getattr(importlib.import_module(module_name), attr)
        for local, source in sources.items():
            source_module = source.partition(":")[0]
            assert layer_of(source_module) > layer_of(module_name), (
                f"{where}.{local} comes from {source_module}, which is not above {module_name}: import it")
            assert getattr(late, local) is not None


def test_the_recorder_sees_known_imports(recorded):
    # a recorder that saw nothing would let every order pass
    edges = {tuple(e) for e in recorded["edges"]}
    assert ("hookgrad._tensor", "hookgrad.autograd.graph") in edges
    assert ("hookgrad._tensor", "hookgrad.autograd") in edges  # the package's __init__ runs too
    assert ("hookgrad.nn.modules.module", "hookgrad.nn.modules._backward_hook") in edges
    assert layer_of("hookgrad._tensor") < layer_of("hookgrad.nn") < layer_of("hookgrad.tools")


def test_backward_hook_reexported_where_torch_has_it():
    import hookgrad
    from hookgrad.nn.modules._backward_hook import BackwardHook

    assert hookgrad.utils.hooks.BackwardHook is BackwardHook
    import torch.utils.hooks
    assert hasattr(torch.utils.hooks, "BackwardHook")
