"""The model graph for ``SummaryWriter.add_graph``, built from a ``hookgrad.fx`` trace.

torch traces with TorchScript and names nodes after ATen ops; hookgrad has no TorchScript, so the
graph shows the fx nodes instead: one node per module call, function call and method call, grouped
under the module path (``Net/Sequential[seq]/Linear[0]/...``), with input and output nodes and,
when example inputs are given, each node's output shape.
"""
from __future__ import annotations


def _module_scope(root, target: str) -> str:
    """``Net/Sequential[seq]/Linear[0]`` for the submodule at ``seq.0`` of a ``Net``."""
    scope = [type(root).__name__]
    module = root
    for part in target.split("."):
        module = getattr(module, part)
        scope.append(f"{type(module).__name__}[{part}]")
    return "/".join(scope)


def _op_name(node, root) -> str:
    if node.op == "call_module":
        return type(root.get_submodule(node.target)).__name__
    if node.op == "call_function":
        return getattr(node.target, "__qualname__", None) or str(node.target)
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.op in ("placeholder", "output"):
        return "IO Node"
    return node.op


def _output_shapes(traced, example_inputs) -> dict:
    """Node name -> shape of the tensor it produced, from one run of the traced module."""
    import hookgrad
    from hookgrad.fx import Interpreter
    shapes = {}

    class ShapeRecorder(Interpreter):
        def run_node(self, node):
            result = super().run_node(node)
            if isinstance(result, hookgrad.Tensor):
                shapes[node.name] = tuple(result.shape)
            return result

    with hookgrad.no_grad():
        ShapeRecorder(traced).run(*example_inputs)
    return shapes


def graph(model, input_to_model=None, verbose=False):
    """(GraphDef, RunMetadata) of ``model`` for the graph plugin."""
    import hookgrad
    from hookgrad import fx
    from tensorboard.compat.proto.attr_value_pb2 import AttrValue
    from tensorboard.compat.proto.config_pb2 import RunMetadata
    from tensorboard.compat.proto.graph_pb2 import GraphDef
    from tensorboard.compat.proto.node_def_pb2 import NodeDef
    from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.compat.proto.versions_pb2 import VersionDef

    try:
        traced = fx.symbolic_trace(model)
    except Exception as error:  # control flow on values, unsupported calls: say why, loudly
        raise NotImplementedError(
            "SummaryWriter.add_graph: torch builds the graph with the TorchScript tracer, which hookgrad "
            f"does not have, and hookgrad.fx could not trace {type(model).__name__}: "
            f"{type(error).__name__}: {error}") from error
    if verbose:
        print(traced.graph)
    shapes = {}
    if input_to_model is not None:
        inputs = input_to_model if isinstance(input_to_model, (list, tuple)) else (input_to_model,)
        if isinstance(input_to_model, hookgrad.Tensor):
            inputs = (input_to_model,)
        shapes = _output_shapes(traced, inputs)

    names = {}
    for node in traced.graph.nodes:
        if node.op == "placeholder":
            names[node] = f"input/{node.name}"
        elif node.op == "output":
            names[node] = f"output/{node.name}"
        elif node.op == "call_module":
            names[node] = f"{_module_scope(model, node.target)}/{node.name}"
        else:
            names[node] = f"{type(model).__name__}/{node.name}"
    nodes = []
    for node in traced.graph.nodes:
        attrs = {}
        if node.name in shapes:
            dims = [TensorShapeProto.Dim(size=size) for size in shapes[node.name]]
            attrs["_output_shapes"] = AttrValue(list=AttrValue.ListValue(shape=[TensorShapeProto(dim=dims)]))
        if node.op == "call_module":
            attrs["attr"] = AttrValue(s=repr(traced.get_submodule(node.target)).encode("utf-8"))
        nodes.append(NodeDef(name=names[node], op=_op_name(node, traced),
                             input=[names[source] for source in node.all_input_nodes],
                             device="/device:CPU:0", attr=attrs))
    graph_def = GraphDef(node=nodes, versions=VersionDef(producer=22))
    step_stats = RunMetadata(step_stats=StepStats(dev_stats=[DeviceStepStats(device="/device:CPU:0")]))
    return graph_def, step_stats
