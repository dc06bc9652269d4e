"""``Graph``: the ordered list of Nodes of a traced program, and the Python source it compiles to."""
from __future__ import annotations

import builtins
import keyword
import operator
import re

from .node import Node, _format_arg, map_arg

__all__ = ["Graph", "PythonCode"]

_INFIX = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/", operator.floordiv: "//",
          operator.mod: "%", operator.pow: "**", operator.matmul: "@", operator.and_: "&", operator.or_: "|",
          operator.xor: "^", operator.lshift: "<<", operator.rshift: ">>", operator.lt: "<", operator.le: "<=",
          operator.gt: ">", operator.ge: ">=", operator.eq: "==", operator.ne: "!="}
_PREFIX = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}
_RESERVED = set(dir(builtins)) | set(keyword.kwlist) | {"self", "hookgrad", "torch", "inf", "nan"}


class PythonCode:
    """Generated source of ``forward`` and the globals it needs."""

    def __init__(self, src: str, globals_: dict):
        self.src = src
        self.globals = globals_


class _InsertPoint:
    """Where ``create_node`` puts new nodes while a ``with graph.inserting_before/after(...)`` block runs
    (or from then on, used without ``with``); leaving the block restores the previous place."""

    def __init__(self, graph: "Graph", insert) -> None:
        self.graph = graph
        self.previous, graph._insert = graph._insert, insert

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info) -> None:
        self.graph._insert = self.previous


class Graph:
    """Nodes in execution order; ``create_node`` and the helpers add them, ``python_code`` compiles them."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._nodes: list[Node] = []
        self._insert = self._nodes.append  # the insert point: by default the end of the graph
        self._used_names: dict[str, int] = {}
        self.owning_module = owning_module
        self._tracer = None

    @property
    def nodes(self) -> list:
        return list(self._nodes)

    def _unique_name(self, candidate: str) -> str:
        base = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate) or "_"
        if base[0].isdigit():
            base = f"_{base}"
        if base not in self._used_names and base not in _RESERVED:
            self._used_names[base] = 1
            return base
        i = self._used_names.get(f"{base}#", 1)
        while f"{base}_{i}" in self._used_names:
            i += 1
        name = f"{base}_{i}"
        self._used_names[f"{base}#"] = i + 1
        self._used_names[name] = 1
        return name

    @staticmethod
    def _name_for(op: str, target) -> str:
        # torch's rule: a callable's __name__ or the string target ("__add__" as "add"), camelCase to
        # snake_case; dots and other characters a name cannot hold become "_" in _unique_name
        if callable(target) and not isinstance(target, str):
            text = getattr(target, "__name__", "fn")
        else:
            text = str(target)
            if text.startswith("__") and text.endswith("__"):
                text = text[2:-2]
        return re.sub(r"(?<=[a-z])([A-Z])", r"_\1", text).lower()

    def create_node(self, op: str, target, args=None, kwargs=None, name: str | None = None, type_expr=None) -> Node:
        name = self._unique_name(name if name is not None else self._name_for(op, target))
        node = Node(self, name, op, target, tuple(args or ()), dict(kwargs or {}), type_expr)
        self._insert(node)
        return node

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """New nodes go right before ``n`` (before every node when ``n`` is None)."""
        if n is None:
            return _InsertPoint(self, lambda node: self._nodes.insert(0, node))
        if n.graph is not self:
            raise AssertionError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """New nodes go right after ``n`` (after every node when ``n`` is None), each after the last one added."""
        if n is None:
            return _InsertPoint(self, self._nodes.append)
        if n.graph is not self:
            raise AssertionError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    def placeholder(self, name: str, type_expr=None, default_value=None) -> Node:
        return self.create_node("placeholder", name, () if default_value is None else (default_value,), {},
                                name=name, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr=None) -> Node:
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args=None, kwargs=None, type_expr=None) -> Node:
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args=None, kwargs=None, type_expr=None) -> Node:
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None) -> Node:
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None) -> Node:
        return self.create_node("output", "output", (result,), {}, type_expr=type_expr)

    def erase_node(self, to_erase: Node) -> None:
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} users in "
                               f"the graph: {to_erase.users}!")
        to_erase._set_arguments((), {})
        self._nodes.remove(to_erase)

    def node_copy(self, node: Node, arg_transform=lambda n: n) -> Node:
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        copy = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        copy.meta = dict(node.meta)
        return copy

    def graph_copy(self, g: "Graph", val_map: dict) -> object:
        for node in g._nodes:
            if node.op == "output":
                return map_arg(node.args[0], lambda n: val_map[n])
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def lint(self) -> None:
        seen = set()
        for node in self._nodes:
            for used in node.all_input_nodes:
                if used not in seen:
                    raise RuntimeError(f"Argument '{used}' of Node '{node}' was used before it has been defined!")
            seen.add(node)

    def eliminate_dead_code(self, is_impure_node=None) -> bool:
        """Erase the nodes nobody uses, last first, unless they have side effects (``Node.is_impure`` or
        the given predicate): True when something was erased."""
        self.lint()
        has_side_effect = is_impure_node if is_impure_node is not None else Node.is_impure
        changed = False
        for node in reversed(self._nodes):
            if not node.users and not has_side_effect(node):
                self.erase_node(node)
                changed = True
        return changed

    def __str__(self) -> str:
        lines = ["graph():"]
        lines += ["    " + node.format_node() for node in self._nodes]
        return "\n".join(lines)

    # ---- code generation ----------------------------------------------------------------------
    def python_code(self, root_module: str = "self") -> PythonCode:
        import hookgrad
        globals_: dict = {"hookgrad": hookgrad, "inf": float("inf"), "nan": float("nan")}
        names_of: dict[int, str] = {}

        def global_name(obj) -> str:
            if id(obj) in names_of:
                return names_of[id(obj)]
            qualified = _qualified_path(obj)
            if qualified is not None:
                names_of[id(obj)] = qualified
                return qualified
            base = re.sub(r"[^0-9a-zA-Z_]", "_", getattr(obj, "__name__", type(obj).__name__))
            name, i = f"_{base}", 0
            while name in globals_:
                i += 1
                name = f"_{base}_{i}"
            globals_[name] = obj
            names_of[id(obj)] = name
            return name

        def text(arg) -> str:
            if isinstance(arg, Node):
                return arg.name
            if isinstance(arg, tuple) and not hasattr(arg, "_fields"):
                return "(" + ", ".join(text(a) for a in arg) + ("," if len(arg) == 1 else "") + ")"
            if isinstance(arg, list):
                return "[" + ", ".join(text(a) for a in arg) + "]"
            if isinstance(arg, dict):
                return "{" + ", ".join(f"{k!r}: {text(v)}" for k, v in arg.items()) + "}"
            if isinstance(arg, slice):
                return f"slice({text(arg.start)}, {text(arg.stop)}, {text(arg.step)})"
            if arg is None or isinstance(arg, (bool, int, float, str)):
                return repr(arg)
            return global_name(arg)

        params, body = [], []
        for node in self._nodes:
            if node.op == "placeholder":
                params.append(node.name + (f" = {text(node.args[0])}" if node.args else ""))
                continue
            args = ", ".join([text(a) for a in node.args] + [f"{k} = {text(v)}" for k, v in node.kwargs.items()])
            if node.op == "output":
                body.append(f"return {text(node.args[0])}")
            elif node.op == "get_attr":
                body.append(f"{node.name} = {_attr_path(root_module, node.target)}")
            elif node.op == "call_module":
                body.append(f"{node.name} = {_attr_path(root_module, node.target)}({args})")
            elif node.op == "call_method":
                rest = ", ".join([text(a) for a in node.args[1:]] + [f"{k} = {text(v)}"
                                                                      for k, v in node.kwargs.items()])
                body.append(f"{node.name} = {text(node.args[0])}.{node.target}({rest})")
            elif node.target in _INFIX and len(node.args) == 2 and not node.kwargs:
                body.append(f"{node.name} = {text(node.args[0])} {_INFIX[node.target]} {text(node.args[1])}")
            elif node.target in _PREFIX and len(node.args) == 1:
                body.append(f"{node.name} = {_PREFIX[node.target]}{text(node.args[0])}")
            elif node.target is operator.getitem and len(node.args) == 2:
                body.append(f"{node.name} = {text(node.args[0])}[{text(node.args[1])}]")
            elif node.target is getattr and len(node.args) == 2 and isinstance(node.args[1], str) \
                    and node.args[1].isidentifier():
                body.append(f"{node.name} = {text(node.args[0])}.{node.args[1]}")
            else:
                body.append(f"{node.name} = {global_name(node.target)}({args})")
        if not body or not body[-1].startswith("return"):
            body.append("return None")
        src = f"\n\ndef forward({', '.join([root_module] + params)}):\n" + "".join(f"    {line}\n" for line in body)
        return PythonCode(src, globals_)


def _attr_path(root: str, target: str) -> str:
    out = root
    for part in target.split("."):
        out = f"{out}.{part}" if part.isidentifier() and not keyword.iskeyword(part) else f"getattr({out}, {part!r})"
    return out


def _qualified_path(obj) -> str | None:
    """``hookgrad.relu`` / ``hookgrad.nn.functional.relu`` when ``obj`` is reachable that way."""
    import hookgrad
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str) or not getattr(obj, "__module__", "") or \
            not str(getattr(obj, "__module__", "")).startswith("hookgrad"):
        return None
    for path, space in (("hookgrad", hookgrad), ("hookgrad.nn.functional", hookgrad.nn.functional),
                        ("hookgrad.linalg", hookgrad.linalg)):
        if space.__dict__.get(name) is obj:
            return f"{path}.{name}"
    return None


_ = _format_arg  # re-exported helper for Node.format_node
