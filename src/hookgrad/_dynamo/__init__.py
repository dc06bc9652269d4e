"""``torch._dynamo``: torch's bytecode compiler, which hookgrad does not have. Code that guards on
it (``torch._dynamo.is_compiling()``), marks functions (``disable``, ``allow_in_graph``,
``mark_dynamic``) or sets its ``config`` runs unchanged: nothing is ever compiled."""
from __future__ import annotations

from ..compiler import (allow_in_graph, assume_constant_result, disable, is_compiling, list_backends, reset,
                        set_stance, substitute_in_graph)
from . import config, eval_frame
from .eval_frame import OptimizedModule

__all__ = ["allow_in_graph", "assume_constant_result", "config", "disable", "disallow_in_graph", "forbid_in_graph",
           "graph_break", "is_compiling", "list_backends", "mark_dynamic", "maybe_mark_dynamic", "mark_static",
           "mark_static_address", "optimize", "reset", "run", "set_stance", "substitute_in_graph", "explain",
           "export", "lookup_backend", "register_backend", "OptimizedModule", "eval_frame"]


def disallow_in_graph(fn):
    return fn


def forbid_in_graph(fn):
    return fn


def graph_break() -> None:
    """Eager code has no graph to break."""


def mark_dynamic(t, index, *, min=None, max=None, specialize_on=None) -> None:
    """Shapes are never specialized here: every dimension is already dynamic."""


def maybe_mark_dynamic(t, index) -> None:
    """See ``mark_dynamic``."""


def mark_static(t, index=None) -> None:
    """Nothing is compiled, so nothing is specialized either."""


def mark_static_address(t, guard=True) -> None:
    """No CUDA graphs: addresses do not matter."""


def optimize(backend="inductor", *, nopython=False, **kwargs):
    """The eager stand-in for ``torch._dynamo.optimize(backend)``: a decorator returning the function."""
    return lambda fn: fn


def run(fn=None):
    return fn if fn is not None else (lambda f: f)


_backends: dict = {}


def register_backend(compiler_fn=None, name=None, tags=()):
    """Record a compiler back end by name; hookgrad never calls it."""
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name=name, tags=tags)
    _backends[name or compiler_fn.__name__] = compiler_fn
    return compiler_fn


def lookup_backend(compiler_fn):
    if isinstance(compiler_fn, str):
        if compiler_fn not in _backends:
            raise KeyError(compiler_fn)  # torch raises its InvalidBackend here
        return _backends[compiler_fn]
    return compiler_fn


def explain(fn, *args, **kwargs):
    raise NotImplementedError("torch._dynamo.explain traces bytecode into graphs; hookgrad has no compiler")


def export(fn, *args, **kwargs):
    raise NotImplementedError("torch._dynamo.export traces bytecode into graphs; hookgrad has no compiler "
                              "(see docs/api-coverage.md)")
