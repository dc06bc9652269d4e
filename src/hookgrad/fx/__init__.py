"""``torch.fx``: symbolic tracing of modules and functions into a Graph of Nodes, a GraphModule that
runs (and prints) the generated code, and an Interpreter to run a graph step by step."""
from ._symbolic_trace import PH, Tracer, symbolic_trace, wrap
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Attribute, Proxy, TraceError

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Interpreter", "Transformer", "Node",
           "Proxy", "Attribute", "TraceError", "map_arg", "PH"]
