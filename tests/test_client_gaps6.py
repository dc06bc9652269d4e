"""Behaviours that hook-centric client libraries (surgeon-pytorch, torchopt, laplace-torch, pyro, ...)
rely on, each checked against torch on its own as a differential scenario."""
from __future__ import annotations

import operator

from difftest import catch, differential


class _Net:
    """Built per framework: a conv stem, a linear head and a function call between them."""

    @staticmethod
    def make(T):
        class Net(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = T.nn.Linear(3, 3)
                self.head = T.nn.Linear(3, 2)

            def forward(self, x):
                h = T.tanh(self.stem(x))
                return self.head(h + x)

        return Net()


def _graph_rows(graph, names=True):
    return [(n.op, n.name if names else None, n.target if isinstance(n.target, str) else n.target.__name__,
             [str(a) for a in n.args] if names else len(n.args)) for n in graph.nodes]


@differential
def test_fx_insert_points_and_node_moves(T):
    """Graph.inserting_before/after place new nodes (several in a row keep their order; the previous
    place comes back after the block); Node.prepend/append move existing nodes."""
    module = _Net.make(T)
    traced = T.fx.symbolic_trace(module)
    graph = traced.graph
    by_name = {n.name: n for n in graph.nodes}
    out = []
    with graph.inserting_after(by_name["tanh"]):
        first = graph.call_function(T.relu, (by_name["tanh"],))
        second = graph.call_function(T.sigmoid, (first,))
    by_name["add"].replace_input_with(by_name["tanh"], second)
    with graph.inserting_before(by_name["stem"]):
        graph.call_function(T.abs, (by_name["x"],))
    with graph.inserting_before():
        early = graph.placeholder("scale")
    late = graph.call_function(operator.mul, (by_name["head"], 2))  # back at the end: after the output
    out.append(_graph_rows(graph))
    graph.erase_node(late)
    graph.erase_node(early)
    by_name["output"].prepend(by_name["head"])
    by_name["x"].append(by_name["stem"])
    out.append(_graph_rows(graph))
    out.append(catch(lambda: T.fx.symbolic_trace(_Net.make(T)).graph.inserting_before(by_name["stem"])))
    traced.recompile()
    return out


@differential
def test_fx_dead_code_elimination(T):
    """eliminate_dead_code erases unused module calls, functions and methods, keeps placeholders,
    setitem, asserts, random draws and modules marked _is_impure; a predicate replaces the rule."""
    module = _Net.make(T)
    traced = T.fx.symbolic_trace(module)
    graph = traced.graph
    nodes = {n.name: n for n in graph.nodes}
    output = nodes["output"]
    with graph.inserting_before(output):
        graph.call_module("stem", (nodes["x"],))
        graph.call_method("sum", (nodes["head"],))
        graph.call_function(T.rand, (3,))
        graph.call_function(T.neg, (nodes["x"],))
        graph.call_function(operator.setitem, (nodes["x"], 0, 1.0))
        graph.call_function(T._assert, (True, "kept"))
        graph.placeholder("unused")
    output.args = (nodes["tanh"],)
    # (node names left out: hookgrad names a call of T._assert "assert", torch "_assert")
    rows = [_graph_rows(graph, names=False)]
    changed = graph.eliminate_dead_code()
    rows.append((changed, _graph_rows(graph, names=False), graph.eliminate_dead_code()))
    traced.head._is_impure = True
    with graph.inserting_before(output):
        graph.call_module("head", (nodes["tanh"],))
    rows.append((graph.eliminate_dead_code(), [n.op for n in graph.nodes]))
    rows.append((graph.eliminate_dead_code(lambda n: n.op != "call_function"), _graph_rows(graph, names=False)))
    traced.recompile()
    return rows, [n.op for n in graph.nodes], T.fx.node.Node.is_impure(nodes["x"])
