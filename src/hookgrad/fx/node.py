"""A ``Node`` of an fx ``Graph``: one operation, its arguments (other nodes or constants) and users."""
from __future__ import annotations

import operator
from typing import Any, Callable

__all__ = ["Node", "map_arg", "map_aggregate", "Argument", "Target", "has_side_effect"]

Argument = Any
Target = Any

_OPS = ("placeholder", "get_attr", "call_function", "call_module", "call_method", "output")


def map_aggregate(a, fn: Callable):
    """Apply ``fn`` to every leaf of nested tuples, lists, dicts and slices."""
    if isinstance(a, tuple):
        mapped = tuple(map_aggregate(elem, fn) for elem in a)
        return type(a)(*mapped) if hasattr(a, "_fields") else mapped
    if isinstance(a, list):
        return [map_aggregate(elem, fn) for elem in a]
    if isinstance(a, dict):
        return type(a)((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn: Callable):
    """Apply ``fn`` to every Node inside ``a``."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


_RANDOM_FUNCTION_NAMES = ("rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
                          "normal", "poisson", "bernoulli", "multinomial")
_side_effectful_functions: set = {operator.setitem}


def _has_side_effect_function(target) -> bool:
    import hookgrad
    # (looked up when asked: hookgrad is not fully imported when this module is)
    known = set(_side_effectful_functions) | {hookgrad._assert, hookgrad._assert_async}
    known.update(getattr(hookgrad, name) for name in _RANDOM_FUNCTION_NAMES)
    try:
        return target in known
    except TypeError:  # an unhashable target
        return False


def has_side_effect(fn: Callable) -> Callable:
    """Mark ``fn`` so that dead-code elimination keeps its call nodes; returns ``fn``."""
    _side_effectful_functions.add(fn)
    return fn


def _qualified_name(fn) -> str:
    if getattr(fn, "__module__", None) == "_operator" or getattr(operator, getattr(fn, "__name__", ""), None) is fn:
        return f"operator.{fn.__name__}"
    if fn is getattr:
        return "getattr"
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
    if module.startswith("hookgrad"):
        import hookgrad
        for prefix, space in (("hookgrad", hookgrad), ("hookgrad.nn.functional", hookgrad.nn.functional)):
            if getattr(space, getattr(fn, "__name__", ""), None) is fn:
                return f"{prefix}.{fn.__name__}"
    return f"{module}.{name}" if module else name


def _format_arg(arg) -> str:
    if isinstance(arg, Node):
        return f"%{arg.name}"
    if isinstance(arg, tuple) and not hasattr(arg, "_fields"):
        inner = ", ".join(_format_arg(a) for a in arg)
        return f"({inner},)" if len(arg) == 1 else f"({inner})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    return str(arg)


class Node:
    """One operation in a Graph. ``op`` is one of placeholder, get_attr, call_function, call_module,
    call_method or output; ``target`` is what it calls (a name or a callable)."""

    def __init__(self, graph, name: str, op: str, target, args: tuple, kwargs: dict, type_expr=None):
        if op not in _OPS:
            raise ValueError(f"Unknown node op {op!r}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = type_expr
        self.users: dict[Node, None] = {}
        self.meta: dict = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._set_arguments(tuple(args), dict(kwargs))

    def _set_arguments(self, args: tuple, kwargs: dict) -> None:
        for old in self.all_input_nodes:
            old.users.pop(self, None)
        self._args, self._kwargs = args, kwargs
        for new in self.all_input_nodes:
            new.users.setdefault(self, None)

    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, value) -> None:
        self._set_arguments(tuple(value), self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value) -> None:
        self._set_arguments(self._args, dict(value))

    @property
    def all_input_nodes(self) -> list:
        found: dict[Node, None] = {}
        map_arg((self._args, self._kwargs), lambda n: found.setdefault(n, None))
        return list(found)

    @property
    def next(self):
        nodes = self.graph._nodes
        i = nodes.index(self)
        return nodes[i + 1] if i + 1 < len(nodes) else None

    @property
    def prev(self):
        nodes = self.graph._nodes
        i = nodes.index(self)
        return nodes[i - 1] if i > 0 else None

    def prepend(self, x: "Node") -> None:
        """Move ``x`` (new or already in this graph) to right before this node."""
        self._place(x, 0)

    def append(self, x: "Node") -> None:
        """Move ``x`` to right after this node."""
        self._place(x, 1)

    def _place(self, x: "Node", offset: int) -> None:
        """Take ``x`` out of the node list if it is there, then insert it ``offset`` places from this node."""
        nodes = self.graph._nodes
        if x is self:
            return
        if x in nodes:
            nodes.remove(x)
        nodes.insert(nodes.index(self) + offset, x)

    def is_impure(self, impure_random: bool = True) -> bool:
        """Whether dead-code elimination must keep this node although nothing uses its value: placeholders,
        the output, modules marked ``_is_impure``, asserts, ``operator.setitem`` and the random functions."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_module":
            owner = self.graph.owning_module
            if owner is None:
                raise AssertionError("self.graph.owning_module not set for purity check")
            return getattr(owner.get_submodule(self.target), "_is_impure", False)
        if self.op == "call_function":
            return _has_side_effect_function(self.target)
        return False

    def replace_all_uses_with(self, replace_with: "Node") -> list:
        users = list(self.users)
        for user in users:
            swap = lambda n: replace_with if n is self else n  # noqa: E731
            user._set_arguments(map_arg(user.args, swap), map_arg(user.kwargs, swap))
        return users

    def replace_input_with(self, old: "Node", new: "Node") -> None:
        swap = lambda n: new if n is old else n  # noqa: E731
        self._set_arguments(map_arg(self.args, swap), map_arg(self.kwargs, swap))

    def _target_text(self) -> str:
        return _qualified_name(self.target) if callable(self.target) and not isinstance(self.target, str) \
            else str(self.target)

    def format_node(self) -> str:
        if self.op == "output":
            return f"return {_format_arg(self.args[0]).replace('%', '')}"
        head = f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={self._target_text()}]"
        if self.op == "placeholder":
            return head + (f"(default={self.args[0]})" if self.args else "")
        if self.op == "get_attr":
            return head
        return head + f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})"

    def __repr__(self) -> str:
        return self.name
