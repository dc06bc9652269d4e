"""``GraphModule``: a Module whose ``forward`` is the Python code generated from a Graph."""
from __future__ import annotations

from ..nn.modules.module import Module
from .graph import Graph

__all__ = ["GraphModule"]


def _copy_attr(from_obj, to_module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        source = getattr(from_obj, item) if from_obj is not None else None
        child = getattr(to_module, item, None)
        if child is None:
            child = Module()
            setattr(to_module, item, child)
        from_obj, to_module = source, child
    value = getattr(from_obj, field)
    if isinstance(value, Module) or type(value).__name__ == "Parameter":
        setattr(to_module, field, value)
    elif hasattr(value, "_ndarray") and field in getattr(from_obj, "_buffers", {}):
        to_module.register_buffer(field, value)
    else:
        setattr(to_module, field, value)


class GraphModule(Module):
    """Holds the submodules and attributes a Graph refers to, and runs the Graph as ``forward``.

    Each GraphModule gets a class of its own, so that its generated ``forward`` is an ordinary method.
    """

    def __new__(cls, *args, **kwargs):
        for t in cls.__mro__:
            if t.__qualname__ != "GraphModuleImpl":
                base = t
                break

        class GraphModuleImpl(base):  # noqa: N801 - one class per instance, as torch makes them
            pass

        return super().__new__(GraphModuleImpl)

    def __init__(self, root, graph: Graph, class_name: str = "GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but that target was not "
                                           f"provided in ``root``!")
                    *prefix, field = node.target.split(".")
                    owner = self
                    for item in prefix:
                        if not hasattr(owner, item):
                            setattr(owner, item, Module())
                        owner = getattr(owner, item)
                    setattr(owner, field, root[node.target])
        else:
            raise RuntimeError(f"Unsupported type {root} passed for root!")
        self.graph = graph

    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        return self._code

    def recompile(self):
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        namespace = dict(python_code.globals)
        exec(compile(self._code, f"<eval_with_key>.{id(self)}", "exec"), namespace)  # noqa: S102 - our own code
        type(self).forward = namespace["forward"]
        return python_code

    def add_submodule(self, target: str, m: Module) -> bool:
        """Install ``m`` at dotted path ``target``, creating empty parents; False if a parent is not a Module."""
        *prefix, field = target.split(".")
        owner = self
        for item in prefix:
            child = getattr(owner, item, None)
            if child is None:
                child = Module()
                owner.add_module(item, child)
            if not isinstance(child, Module):
                return False
            owner = child
        owner.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        *prefix, field = target.split(".")
        owner = self
        for item in prefix:
            owner = getattr(owner, item, None)
            if not isinstance(owner, Module):
                return False
        if not isinstance(getattr(owner, field, None), Module):
            return False
        delattr(owner, field)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove the submodules no node calls or reads (parents of used paths are kept)."""
        used = set()
        for node in self._graph.nodes:
            if node.op in ("call_module", "get_attr"):
                parts = node.target.split(".")
                used.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
                if node.op == "call_module":
                    module = self.get_submodule(node.target)
                    used.update(f"{node.target}.{name}" for name, _ in module.named_modules() if name)
        for name, _ in sorted(self.named_modules(), key=lambda item: -item[0].count(".")):
            if name and name not in used:
                self.delete_submodule(name)

    def print_readable(self, print_output: bool = True, **kwargs) -> str:
        text = f"class {type(self).__name__}(hookgrad.nn.Module):" + self._code.replace("\n", "\n    ")
        if print_output:
            print(text)
        return text

    def __str__(self) -> str:
        return super().__str__() + "\n\n" + self._code + "\n# To see more debug info, please use " \
                                                          "`graph_module.print_readable()`"

    def __reduce__(self):
        raise TypeError("hookgrad cannot pickle a GraphModule; pickle the original module instead")
