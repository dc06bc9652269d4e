"""Torch's class identities, worn by hookgrad's classes while ``hookgrad run`` stands in for torch.

Under ``hookgrad run`` a script asks ``type(x)``, ``type(m).__module__``, ``repr(torch.no_grad())``
and gets torch's answers: ``<class 'torch.Tensor'>``, ``torch.nn.modules.linear``,
``<class 'MulBackward0'>``. Libraries decide things from those names too ("is this a built-in
layer": ``type(m).__module__.startswith("torch.nn")``).

What each class is called comes from ``data/torch_identities.json`` (read by
``_torch_identity_table.py``), generated from the installed torch by :func:`generate`
(``python -m hookgrad._torch_identity --write``) and checked against torch by the tests, so it
cannot drift from torch or guess. It lists

* ``CLASSES``: for a hookgrad module, its attributes that are classes with a counterpart in torch at
  the same public path, and that counterpart's ``(__module__, __qualname__)``;
* ``NODE_TYPES``: the names of hookgrad's backward nodes that torch implements as C++ node types,
  with the identity torch gives them (``("builtins", "MulBackward0")``);
* ``FUNCTIONS``: for a hookgrad module, its public functions with a counterpart in torch at the same
  public path, and that counterpart's ``(__module__, __name__)`` (``F.relu`` is
  ``("torch.nn.functional", "relu")``, ``F.logsigmoid`` is ``(None, "log_sigmoid")``). The module is
  None where torch's (``torch._C._nn``) would not lead pickle back to the function: such a function
  takes torch's ``__name__`` and keeps its own ``__module__`` and ``__qualname__``;
* ``EAGER_ANNOTATIONS``: the torch modules (of those identities) that evaluate their annotations;
  hookgrad's modules postpone theirs, so the classes and functions torch defines in these modules
  get their annotations evaluated while they wear torch's identity (``inspect.signature`` then shows
  ``in_features: int`` as torch's does, not ``'int'``).

:class:`TorchIdentities` renames the classes of every hookgrad module already loaded and of each one
loaded later (``_run`` calls :meth:`TorchIdentities.module_loaded`), and gives every class its own
name back when ``hookgrad run``'s aliasing ends. With a plain ``import hookgrad`` nothing here runs:
classes pickle and print under hookgrad's names.

Renamed classes still pickle: under ``hookgrad run`` the module ``torch.nn.modules.linear`` is
``hookgrad.nn.modules.linear``, so pickle finds ``Linear`` where the new name says (the table keeps
only classes for which that holds; the tests check it).
"""
from __future__ import annotations

import io
import json
import pickle
import sys
import types

__all__ = ["TorchIdentities", "generate", "own_name", "dumps_with_own_names"]


class TorchIdentities:
    """Gives hookgrad's classes torch's ``__module__``/``__qualname__`` and takes them back."""

    def __init__(self):
        from ._torch_identity_table import CLASSES, EAGER_ANNOTATIONS, FUNCTIONS, NODE_TYPES
        self._classes = CLASSES
        self._functions = FUNCTIONS
        self._eager = EAGER_ANNOTATIONS
        self._original_annotations: dict = {}   # function -> its own (postponed) annotations
        self._node_types = NODE_TYPES
        self._original: dict[type, tuple[str, str]] = {}
        self._original_functions: dict = {}   # function -> (__module__, __name__, __qualname__)
        self._nodes_seen: set[type] = set()
        self._homes = None

    def apply_loaded(self) -> None:
        for name in list(self._classes) + list(self._functions):
            module = sys.modules.get(name)
            if module is not None:
                self.module_loaded(module)
        self._rename_nodes()

    def module_loaded(self, module: types.ModuleType) -> None:
        """Rename the classes and functions ``module`` defines (called once it has run)."""
        for attribute, identity in self._classes.get(module.__name__, {}).items():
            cls = module.__dict__.get(attribute)
            if isinstance(cls, type):
                self._rename(cls, identity)
        for attribute, identity in self._functions.get(module.__name__, {}).items():
            fn = module.__dict__.get(attribute)
            if isinstance(fn, types.FunctionType):
                self._rename_function(fn, identity)
        self._rename_nodes()

    def attribute_loaded(self, module_name: str, attribute: str, value) -> None:
        """Rename a class a module makes on first use (``torch.FloatTensor``)."""
        identity = self._classes.get(module_name, {}).get(attribute)
        if identity is not None and isinstance(value, type):
            self._rename(value, identity)

    def lookup(self, torch_module: str, name: str):
        """The hookgrad class that torch defines as ``torch_module.name`` (None when there is none),
        so that a renamed class is found where its name says, e.g. ``torch._C.Generator``."""
        if self._homes is None:
            self._homes = {identity: (module, attribute) for module, entries in self._classes.items()
                           for attribute, identity in entries.items()}
        home = self._homes.get((torch_module, name))
        if home is None:
            return None
        import importlib
        return getattr(importlib.import_module(home[0]), home[1], None)

    def restore(self) -> None:
        for cls, (module, qualname) in self._original.items():
            cls.__module__, cls.__qualname__ = module, qualname
        for fn, (module, name, qualname) in self._original_functions.items():
            fn.__module__, fn.__name__, fn.__qualname__ = module, name, qualname
        for fn, annotations in self._original_annotations.items():
            fn.__annotations__ = annotations
        self._original.clear()
        self._original_functions.clear()
        self._original_annotations.clear()
        self._nodes_seen.clear()

    def _rename_function(self, fn, identity) -> None:
        if fn not in self._original_functions:
            self._original_functions[fn] = (fn.__module__, fn.__name__, fn.__qualname__)
        module, name = identity
        fn.__name__ = name
        if module is not None:
            fn.__module__, fn.__qualname__ = module, name
            if module in self._eager:
                self._evaluate_annotations(fn)

    def _evaluate_annotations(self, fn) -> None:
        """Replace ``fn``'s postponed (string) annotations with their values, where they evaluate in
        its module (one that names a type imported only for type checkers stays a string)."""
        wrapped = getattr(fn, "__wrapped__", None)
        if wrapped is not None:   # inspect.signature reads the innermost function's annotations
            self._evaluate_annotations(wrapped)
        own = fn.__annotations__
        if fn in self._original_annotations or not any(isinstance(v, str) for v in own.values()):
            return
        evaluated = {}
        for key, value in own.items():
            if isinstance(value, str):
                try:
                    value = eval(value, getattr(fn, "__globals__", {}))  # noqa: S307 - hookgrad's own source
                except Exception:  # noqa: BLE001 - keep the string, as inspect shows an unresolved one
                    pass
            evaluated[key] = value
        self._original_annotations[fn] = own
        fn.__annotations__ = evaluated

    def _evaluate_class_annotations(self, cls) -> None:
        # inherited methods too (Conv2d's __init__ is its private base's), hookgrad's classes only
        for klass in cls.__mro__:
            if not klass.__module__.startswith(("hookgrad", "torch")):
                continue
            for value in list(vars(klass).values()):
                fn = getattr(value, "__func__", value)   # static and class methods
                if isinstance(fn, types.FunctionType):
                    self._evaluate_annotations(fn)

    def _rename(self, cls: type, identity) -> None:
        if cls not in self._original:
            self._original[cls] = (cls.__module__, cls.__qualname__)
        cls.__module__, cls.__qualname__ = identity
        if identity[0] in getattr(self, "_eager", ()):
            self._evaluate_class_annotations(cls)

    def _rename_nodes(self) -> None:
        """Backward node classes are made in many places (some by factories, never stored in a
        module), so they are found as subclasses of ``Node`` rather than as module attributes."""
        graph = sys.modules.get("hookgrad.autograd.graph")
        function = sys.modules.get("hookgrad.autograd.function")
        node = getattr(graph, "Node", None)
        if node is None:
            return
        # a custom Function's node class takes its name from the Function, not from this table
        custom = getattr(function, "BackwardCFunction", ())
        pending = list(node.__subclasses__())
        while pending:
            cls = pending.pop()
            pending.extend(cls.__subclasses__())  # also below a class seen before: it may have new ones
            if cls in self._nodes_seen:
                continue
            self._nodes_seen.add(cls)
            identity = self._node_types.get(cls.__name__)
            if identity is not None and not (custom and issubclass(cls, custom)):
                self._rename(cls, identity)


def own_name(cls) -> tuple[str, str] | None:
    """hookgrad's own ``(__module__, __qualname__)`` of a class that wears torch's identity now
    (under ``hookgrad run``); None for any other class."""
    from . import _run
    identities = _run._identities
    return None if identities is None else identities._original.get(cls)


class _OwnNamesPickler(pickle._Pickler):
    """Pickles classes under hookgrad's own names, so that what hookgrad's checkpoint format keeps
    loads the same with or without ``hookgrad run``. (The pure-Python pickler: only it lets a class
    be written under another name.)"""

    def save_global(self, obj, name=None):
        own = own_name(obj) if isinstance(obj, type) else None
        if own is None or self.proto < 4:
            return super().save_global(obj, name)
        self.save(own[0])
        self.save(own[1])
        self.write(pickle.STACK_GLOBAL)
        self.memoize(obj)


def dumps_with_own_names(obj, protocol: int = pickle.HIGHEST_PROTOCOL) -> bytes:
    """``pickle.dumps(obj)``, with hookgrad's classes named as without ``hookgrad run``."""
    from . import _run
    if _run._identities is None:
        return pickle.dumps(obj, protocol=protocol)
    buffer = io.BytesIO()
    _OwnNamesPickler(buffer, protocol=max(protocol, 4)).dump(obj)
    return buffer.getvalue()


# ---- generating the table from the installed torch ------------------------------------------------
def _hookgrad_module_names() -> list[str]:
    """Every hookgrad module, imported (those that cannot be imported here are skipped)."""
    import importlib
    import pkgutil

    import hookgrad
    names = ["hookgrad"]
    skip = ("hookgrad.__main__", "hookgrad._worker_main", "hookgrad.testing")
    for info in pkgutil.walk_packages(hookgrad.__path__, "hookgrad.", onerror=lambda name: None):
        if info.name.startswith(skip):
            continue
        try:
            importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - a module needing an absent extra has no classes to list
            continue
        names.append(info.name)
    return names


def _torch_counterpart(torch_module_name: str):
    import importlib
    try:
        return importlib.import_module(torch_module_name)
    except Exception:  # noqa: BLE001 - torch lacks this module (or it needs what is absent)
        return None


def _is_public(module_name: str) -> bool:
    # torch._C is private by name, yet libraries name its classes (torch._C.DispatchKeySet, ScriptMethod)
    return module_name == "hookgrad._C" or not any(part.startswith("_") for part in module_name.split(".")[1:])


def generate() -> tuple[dict, dict, dict, list]:
    """``(CLASSES, NODE_TYPES, FUNCTIONS, EAGER_ANNOTATIONS)`` from the installed torch and this hookgrad (see the module doc)."""
    import torch

    import hookgrad
    from hookgrad.autograd.function import BackwardCFunction
    from hookgrad.autograd.graph import node_classes

    module_names = _hookgrad_module_names()
    found: dict[type, dict[tuple[str, str], set]] = {}   # class -> torch identity -> where it was seen
    found_functions: dict = {}                             # the same for functions
    for name in module_names:
        if not _is_public(name):
            continue
        ours = sys.modules[name]
        theirs = _torch_counterpart("torch" + name[len("hookgrad"):])
        if theirs is None:
            continue
        for attribute in sorted(set(vars(ours)) | set(dir(theirs))):
            if attribute.startswith("__"):
                continue
            cls = vars(ours).get(attribute)
            if cls is None:
                try:
                    cls = getattr(ours, attribute)   # lazily loaded names
                except Exception:  # noqa: BLE001 - hookgrad lacks it
                    continue
            torch_cls = getattr(theirs, attribute, None)
            if isinstance(cls, types.FunctionType) and not attribute.startswith("_"):
                identity = _function_identity(cls, torch_cls)
                if identity is not None:
                    found_functions.setdefault(cls, {}).setdefault(identity, set()).add((name, attribute))
                continue
            if not (isinstance(cls, type) and isinstance(torch_cls, type)):
                continue
            if not cls.__module__.startswith("hookgrad") or cls.__name__ != torch_cls.__name__:
                continue   # not ours, or an alias of another class under this name
            identity = (torch_cls.__module__, torch_cls.__qualname__)
            found.setdefault(cls, {}).setdefault(identity, set()).add((name, attribute))

    from ._run import torch_aliases
    classes: dict[str, dict[str, tuple[str, str]]] = {}
    chosen = []
    for cls, identities in found.items():
        # the identity seen at the most public paths (ties: the first by name) is torch's answer
        identity = max(identities, key=lambda ident: (len(identities[ident]), ident))
        chosen.append((cls, identity, _home(cls, {p for ps in identities.values() for p in ps})))
    functions: dict[str, dict[str, tuple]] = {}
    chosen_functions = []
    for fn, identities in found_functions.items():
        identity = max(identities, key=lambda ident: (len(identities[ident]), ident))
        places = sorted(p for ps in identities.values() for p in ps)
        chosen_functions.append((fn, identity, places[0], fn.__name__))  # its own name, before any renaming
    with torch_aliases():
        for cls, identity, home in chosen:
            if home is not None and _found_under_torch_name(cls, identity):
                classes.setdefault(home[0], {})[home[1]] = identity
        for fn, (module_name, name), home, own_name in chosen_functions:
            leads_back = _function_found_under_torch_name(fn, module_name, name)
            if leads_back or name != own_name:
                functions.setdefault(home[0], {})[home[1]] = (module_name if leads_back else None, name)

    torch_nodes = torch._C._functions
    node_types = {}
    for cls in node_classes():
        torch_cls = getattr(torch_nodes, cls.__name__, None)
        if isinstance(torch_cls, type) and not issubclass(cls, BackwardCFunction):
            node_types[cls.__name__] = (torch_cls.__module__, torch_cls.__qualname__)
    del hookgrad
    import __future__
    import importlib
    identity_modules = {ident[0] for entries in classes.values() for ident in entries.values()}
    identity_modules |= {ident[0] for entries in functions.values() for ident in entries.values() if ident[0]}
    eager = set()
    for module_name in identity_modules:
        module = sys.modules.get(module_name) or _torch_counterpart(module_name)
        if module is not None and getattr(module, "annotations", None) is not __future__.annotations:
            eager.add(module_name)
    return ({m: dict(sorted(v.items())) for m, v in sorted(classes.items())}, dict(sorted(node_types.items())),
            {m: dict(sorted(v.items())) for m, v in sorted(functions.items())}, sorted(eager))


def _function_identity(fn, torch_fn):
    """torch's ``(__module__, __name__)`` for the function at the place ``fn`` is (None when torch has
    no function there)."""
    if torch_fn is None or isinstance(torch_fn, type) or not callable(torch_fn):
        return None
    if not fn.__module__.startswith("hookgrad"):
        return None
    module, name = getattr(torch_fn, "__module__", None), getattr(torch_fn, "__name__", None)
    if not isinstance(module, str) or not isinstance(name, str):
        return None
    return module, name


def _function_found_under_torch_name(fn, module_name: str, name: str) -> bool:
    """Whether, under ``hookgrad run``, ``module_name.name`` is ``fn`` (so pickle finds it there)."""
    import importlib
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return False
    try:
        return getattr(module, name) is fn
    except AttributeError:
        return False


def _found_under_torch_name(cls: type, identity: tuple[str, str]) -> bool:
    """Whether, under ``hookgrad run``, ``identity`` leads back to ``cls`` (as pickle needs): the
    torch module exists there and holds ``cls`` under that name, or lacks the name (the aliasing then
    serves it from this table). Classes for which neither holds keep hookgrad's names. Called
    while ``torch_aliases`` is active."""
    import importlib
    module_name, qualname = identity
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return False
    if "." in qualname:
        return False
    held = module.__dict__.get(qualname)
    if held is None:
        try:
            held = getattr(module, qualname)
        except AttributeError:
            return True
    return held is cls


def _home(cls: type, places: set) -> tuple[str, str] | None:
    """Where the renaming finds ``cls`` in a module's namespace once that module has run: its
    defining module when the class is there under its own name, else the first such place by name."""
    own = (cls.__module__, cls.__name__)
    held = sorted(p for p in places | {own}
                  if p[0] in sys.modules and vars(sys.modules[p[0]]).get(p[1]) is cls)
    if not held:
        return None
    return own if own in held else held[0]


def _json_lines(value, depth: int = 0) -> list:
    """``value`` as JSON lines: a dict one key a line (nested dicts indented), anything else on one line."""
    if not isinstance(value, dict) or not value:
        return [json.dumps(value)]
    pad = " " * (depth + 1)
    lines = ["{"]
    for i, (key, item) in enumerate(value.items()):
        inner = _json_lines(item, depth + 1)
        inner[0] = f"{pad}{json.dumps(key)}: {inner[0]}"
        inner[-1] += "," if i < len(value) - 1 else ""
        lines += inner
    lines.append(" " * depth + "}")
    return lines


def render(classes: dict, node_types: dict, functions: dict, eager: list) -> str:
    """The table file's text: JSON with one identity a line (``_torch_identity_table`` reads it)."""
    import torch
    table = {"torch": torch.__version__.split("+")[0], "classes": classes, "node_types": node_types,
             "functions": functions, "eager_annotations": list(eager)}
    return "\n".join(_json_lines(table)) + "\n"


def table_path() -> str:
    import os
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "torch_identities.json")


if __name__ == "__main__":
    text = render(*generate())
    if "--write" in sys.argv[1:]:
        with open(table_path(), "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
