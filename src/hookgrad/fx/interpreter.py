"""``Interpreter``: runs a GraphModule node by node (subclass it to observe or change each step)."""
from __future__ import annotations

from .node import map_arg

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    def __init__(self, module, garbage_collect_values: bool = True, graph=None):
        self.module = module
        self.graph = graph if graph is not None else module.graph
        self.env: dict = {}

    def run(self, *args, initial_env=None, enable_io_processing: bool = True):
        self.env = dict(initial_env or {})
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            self.env[node] = self.run_node(node)
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n):
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    def fetch_args_kwargs_from_env(self, n):
        return map_arg(n.args, lambda a: self.env[a]), map_arg(n.kwargs, lambda a: self.env[a])

    def placeholder(self, target, args, kwargs):
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not passed in!")

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    def fetch_attr(self, target: str):
        obj = self.module
        for i, part in enumerate(target.split(".")):
            if not hasattr(obj, part):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(target.split('.')[:i + 1])}")
            obj = getattr(obj, part)
        return obj


class Transformer(Interpreter):
    """Builds a new GraphModule by re-recording each node (override a method to change that node)."""

    def __init__(self, module):
        super().__init__(module)
        from .graph import Graph
        from .proxy import Proxy
        self.new_graph = Graph()
        self._proxy = Proxy

    def placeholder(self, target, args, kwargs):
        return self._proxy(self.new_graph.placeholder(target, default_value=args[0] if args else None), None)

    def transform(self):
        from .graph_module import GraphModule
        from ._symbolic_trace import Tracer
        tracer = Tracer()
        tracer.root = self.module
        tracer.graph = self.new_graph
        self.new_graph._tracer = tracer
        result = self.run()
        self.new_graph.output(tracer.create_arg(result))
        return GraphModule(self.module, self.new_graph)

    def get_attr(self, target, args, kwargs):
        return self._proxy(self.new_graph.get_attr(target), None)

    def call_function(self, target, args, kwargs):
        return self.new_graph._tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target, args, kwargs):
        return self.new_graph._tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        return self.new_graph._tracer.create_proxy("call_module", target, args, kwargs)
