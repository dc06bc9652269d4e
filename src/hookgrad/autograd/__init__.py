"""Automatic differentiation: ``backward``, ``grad``, custom ``Function``s, grad modes, hooks."""
from __future__ import annotations

import sys

import numpy as np

from . import graph, grad_mode
from ._warn_once import warn_once
from . import functional  # noqa: F401
from .anomaly_mode import detect_anomaly, is_anomaly_enabled, is_anomaly_check_nan_enabled, set_detect_anomaly
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .grad_mode import _unsafe_preserve_version_counter  # noqa: F401
from .gradcheck import gradcheck, gradgradcheck
from ._view_tracking import _force_original_view_tracking  # noqa: F401
from .graph import Node, SavedTensor
from .profiler import DeviceType, ProfilerActivity, ProfilerConfig, ProfilerState, kineto_available
from .profiler import ProfilerEvent, _disable_profiler_legacy, _enable_profiler_legacy  # noqa: E402
from .profiler import _profiler_enabled  # noqa: F401
from ._extra_modes import (enforce_grad_layout_policy, is_grad_layout_enforcement_enabled, is_multithreading_enabled,
                           set_multithreading_enabled)
from ._view_tracking import is_view_replay_enabled
from .._late import LateNames
from .. import _dtype

# backward() and grad() run once per pass: names from above are bound once, not imported per call
_above = LateNames(Tensor="hookgrad._tensor", execute="hookgrad.autograd.engine", zeros_like="hookgrad._ops.creation", as_tensor_arg="hookgrad._ops._base", wrap="hookgrad._tensor",
                   stack="hookgrad._ops.shape", torch_function_live="hookgrad._C._torch_function:LIVE",
                   is_tensor_like="hookgrad.overrides", has_torch_function="hookgrad.overrides",
                   handle_torch_function="hookgrad.overrides")

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "detect_anomaly", "set_detect_anomaly",
           "graph", "gradcheck", "gradgradcheck", "Variable", "SavedTensor", "DeviceType", "ProfilerActivity",
           "ProfilerConfig", "ProfilerState", "kineto_available", "enforce_grad_layout_policy",
           "is_multithreading_enabled", "set_multithreading_enabled", "is_view_replay_enabled",
           "handle_torch_function", "has_torch_function", "is_tensor_like"]
__all__ += ["ProfilerEvent"]


def _outputs_tuple(x) -> tuple:
    """``tensors`` / ``outputs``: one tensor or an iterable of them (None is not iterable: TypeError)."""
    return (x,) if isinstance(x, (_above.Tensor, graph.GradientEdge)) else tuple(x)


def _inputs_tuple(x, api: str) -> tuple:
    """``inputs``: a tensor, a GradientEdge, a dict (its values) or an iterable; never empty."""
    from collections.abc import Mapping
    if isinstance(x, (_above.Tensor, graph.GradientEdge)):
        return (x,)
    if type(x) is dict:
        x = tuple(x.values())
    elif isinstance(x, Mapping):
        raise TypeError(f"`inputs` argument to `{api}()` must be a dict, not {type(x).__name__}. "
                        "Other Mapping types are not supported.")
    x = tuple(x)
    if not x:
        raise RuntimeError(f"`inputs` argument to `{api}()` cannot be empty.")
    return x


def _calculate_shape(output, grad, is_grads_batched: bool):
    """(output's shape, gradient's shape) as a shape-mismatch error names them; with
    ``is_grads_batched`` the gradient's first dimension is the batch and is left out."""
    if isinstance(output, graph.GradientEdge):
        if is_grads_batched:
            raise RuntimeError("Batched grads are not supported with GradientEdge")
        return _gradient_stand_in(output).shape, grad.shape
    return output.shape, (grad.shape[1:] if is_grads_batched else grad.shape)


def _gradient_stand_in(edge):
    """For a GradientEdge given as an output: a tensor of the shape and dtype of the gradient that
    enters there (no memory of its own), which the checks below treat as that output."""
    meta = getattr(edge, "_gradient_meta", None)
    if meta is None:
        raise NotImplementedError("a GradientEdge as an output of autograd.grad/backward needs the shape of its "
                                  "gradient, which hookgrad records only for edges made by "
                                  "torch.autograd.graph.get_gradient_edge")
    shape, dtype = meta
    stand_in = _above.wrap(np.broadcast_to(np.zeros((), dtype=dtype), shape))
    stand_in._requires_grad = True
    return stand_in


def _implicit_gradient(output):
    # made as torch's _make_grads makes it, through the torch namespace: while a dispatch mode is active
    # that name is the factory the modes see (aten.ones_like with preserve_format)
    namespace = sys.modules["hookgrad"]
    return namespace.ones_like(output, memory_format=namespace.preserve_format)


def _make_grads(outputs, grads, batched=False):
    """One gradient per output: the given ones checked against their outputs, ones for scalar outputs
    that need grad and got None. Extra gradients are ignored; too few raise (as in torch). ``batched``
    gradients carry one more leading dimension than their outputs."""
    Tensor, as_tensor_arg = _above.Tensor, _above.as_tensor_arg
    outputs = [_gradient_stand_in(o) if isinstance(o, graph.GradientEdge) else o for o in outputs]
    if grads is None:
        grads = (None,) * len(outputs)
    elif isinstance(grads, Tensor):
        grads = (grads,)
    else:
        grads = tuple(grads)
    out = []
    for i, (o, g) in enumerate(zip(outputs, grads)):
        if not isinstance(o, Tensor):
            raise AssertionError("Expected output to be a torch.Tensor")
        if g is None:
            if not o._requires_grad:
                out.append(None)  # refused below: the output needs no grad
                continue
            if o._ndarray.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not _dtype.is_inexact_np(o._ndarray.dtype) or o._ndarray.dtype.kind == "c":
                raise RuntimeError("grad can be implicitly created only for real scalar outputs but got "
                                   f"torch.{str(o.dtype).rsplit('.', 1)[-1]}")
            out.append(_implicit_gradient(o))
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        if batched and g._ndarray.shape[1:] != o._ndarray.shape:
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch "
                "dimension. The sizes of the remaining dimensions are expected to match the shape of corresponding "
                # torch's message strips the batch dimension twice; its words and numbers are kept
                f"output, but a mismatch was detected: grad_output[{i}] has a shape of {g.shape[2:]} and "
                f"output[{i}] has a shape of {o.shape}. If you only want some tensors in `grad_output` to be "
                "considered batched, consider using vmap.".replace("hookgrad.Size", "torch.Size"))
        if not batched and g._ndarray.shape != o._ndarray.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] has a "
                               f"shape of {o.shape}.".replace("hookgrad.Size", "torch.Size"))
        if (g._ndarray.dtype.kind == "c") != (o._ndarray.dtype.kind == "c"):
            raise RuntimeError(f"For complex Tensors, both grad_output and output are required to have the same "
                               f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} and output[{i}] "
                               f"has a dtype of {o.dtype}.")
        if g._ndarray.dtype != o._ndarray.dtype:  # the engine casts a root's gradient to its output's dtype, as torch's
            g = g.to(o.dtype)
        out.append(g)
    if len(out) != len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(out)} gradients")
    return out


def _root_edges(outputs):
    edges = []
    for i, t in enumerate(outputs):
        if isinstance(t, graph.GradientEdge):
            edges.append((t.node, t.output_nr))
            continue
        if not t._requires_grad and t._base_value is not None and t._view_version != t._version_counter[0]:
            t.grad_fn  # a view whose base got history in place: its node regenerates
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        edges.append(t._edge())
    return edges


def _input_edges(inputs, for_backward):
    Tensor = _above.Tensor
    edges = []
    for t in inputs:
        if isinstance(t, graph.GradientEdge):
            edges.append(tuple(t))
            continue
        if not isinstance(t, Tensor):
            raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got {type(t).__name__}")
        if for_backward:
            # backward() keeps the gradients of non-leaf inputs in .grad (and refuses a tensor without grad)
            t.retain_grad()
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        edges.append(t._edge())
    return edges


_CREATE_GRAPH_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter and its "
    "gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid "
    "this. If you have to use this function, make sure to reset the .grad fields of your parameters to None "
    "after use to break the cycle and avoid the leak.")


def _tensor_likes(outputs, inputs) -> tuple:
    """What ``backward``/``grad`` hand to ``__torch_function__``: the tensor-likes among the outputs, then
    among the inputs (GradientEdges are not)."""
    is_tensor_like = _above.is_tensor_like
    return tuple(t for t in (*outputs, *(inputs or ())) if is_tensor_like(t))


# how many torch.func transforms are running their function now (hookgrad.func keeps the count)
TRANSFORMS_ACTIVE = [0]
# per differentiating transform running its function (grad, vjp, jacrev, jacfwd, jvp): its level and
# its inputs (torch wraps them, and what is computed from them, in a GradTrackingTensor of that level)
TRACKED_INPUTS: list = []


def grad_tracking_levels(t) -> list:
    """The levels of the running differentiating transforms whose inputs ``t`` is, or is computed from."""
    levels = []
    for level, inputs in TRACKED_INPUTS:
        if any(t is x for x in inputs) or _reaches(t.grad_fn, inputs):
            levels.append(level)
    return levels


def _reaches(node, inputs) -> bool:
    """Whether the graph from ``node`` reaches one of ``inputs`` (their nodes, or their leaves' sinks)."""
    nodes = {id(x.grad_fn) for x in inputs if x.grad_fn is not None}
    seen, pending = set(), [node]
    while pending:
        n = pending.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        if id(n) in nodes or any(getattr(n, "variable", None) is x for x in inputs):
            return True
        pending.extend(next_node for next_node, _ in n.next_functions)
    return False


def grad_tracking_text(text: str, levels) -> str:
    """``text`` inside torch's GradTrackingTensor text for each of ``levels`` (innermost first)."""
    for lvl in levels:
        text = wrapped_text(f"GradTrackingTensor(lvl={lvl}, value=", text)
    return text


def wrapped_text(head: str, text: str) -> str:
    """``text`` indented under ``head``, closed as torch closes its functorch wrappers' text."""
    inner = "\n".join("    " + line if line else line for line in text.split("\n"))
    return f"{head}\n{inner}\n)"


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None) -> None:
    """Accumulate into ``.grad`` the gradients of ``tensors`` w.r.t. the graph's leaves (or ``inputs``)."""
    if TRANSFORMS_ACTIVE[0]:
        raise RuntimeError("backward() called inside a functorch transform. This is not supported, please use "
                           "functorch.grad or functorch.vjp instead or call backward() outside of functorch "
                           "transforms.")
    if grad_variables is not None:
        import warnings
        warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning, stacklevel=2)
        if grad_tensors is not None:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                               "`backward()`. Please only use `grad_tensors`.")
        grad_tensors = grad_variables
    if inputs is not None:
        inputs = _inputs_tuple(inputs, "backward")
    outputs = _outputs_tuple(tensors)
    if _above.torch_function_live[0]:
        # as torch's: modes and the tensors' classes may take the call over (the pass then runs under the
        # state the override calls it under, which is what its hooks see)
        overloaded = _tensor_likes(outputs, inputs)
        if _above.has_torch_function(overloaded):
            return _above.handle_torch_function(
                backward, overloaded, outputs, grad_tensors=grad_tensors, retain_graph=retain_graph,
                create_graph=create_graph, inputs=inputs)
    grads = _make_grads(outputs, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    roots = _root_edges(outputs)
    input_edges = _input_edges(inputs, True) if inputs is not None else None
    if create_graph:
        warn_once("backward_create_graph", _CREATE_GRAPH_WARNING)
    if roots:
        stop_logging = graph.log_nodes_as_they_run(roots)
        try:
            _above.execute(roots, grads, retain_graph, create_graph, inputs=input_edges, accumulate=True,
                           root_tensors=outputs, input_tensors=inputs, caller=sys._getframe(1))
        finally:
            if stop_logging is not None:
                stop_logging()


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` w.r.t. ``inputs``, returned (``.grad`` is left alone); a dict of
    inputs gives a dict of gradients with the same keys."""
    zeros_like = _above.zeros_like
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _outputs_tuple(outputs)
    ins = _inputs_tuple(inputs, "grad")
    batching = sys.modules.get("hookgrad._functorch.vmap")
    if batching is not None and batching.ACTIVE and batching.any_batched(outs, ins, grad_outputs):
        # inside vmap: one pass over the batched tensors' physical values (torch.func's rule)
        from ..func import _autograd_grad
        return _autograd_grad(outs, ins, grad_outputs, retain_graph=retain_graph, create_graph=create_graph,
                              allow_unused=allow_unused, materialize_grads=materialize_grads)
    if _above.torch_function_live[0]:  # (vmap's batching is no override: it comes first)
        overloaded = _tensor_likes(outs, ins)
        if _above.has_torch_function(overloaded):
            result = _above.handle_torch_function(
                grad, overloaded, outs, ins, grad_outputs=grad_outputs, retain_graph=retain_graph,
                create_graph=create_graph, only_inputs=only_inputs, allow_unused=allow_unused,
                is_grads_batched=is_grads_batched, materialize_grads=materialize_grads)
            return dict(zip(inputs.keys(), result)) if type(inputs) is dict else result
    if not only_inputs:
        import warnings
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.",
                      FutureWarning, stacklevel=2)
    grads = _make_grads(outs, grad_outputs, is_grads_batched)
    if retain_graph is None:
        retain_graph = create_graph
    roots = _root_edges(outs)
    input_edges = _input_edges(ins, False)
    if roots:
        stop_logging = graph.log_nodes_as_they_run(roots)
        try:
            if is_grads_batched:
                captured = _batched_pass(roots, grads, retain_graph, create_graph, input_edges, outs, ins,
                                         sys._getframe(1))
            else:
                captured = _above.execute(roots, grads, retain_graph, create_graph, inputs=input_edges,
                                          accumulate=False, root_tensors=outs, input_tensors=ins,
                                          caller=sys._getframe(1))
        finally:
            if stop_logging is not None:
                stop_logging()
    else:
        captured = [None] * len(ins)
    for i, g in enumerate(captured):
        if g is None and not allow_unused:
            raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the graph. "
                               "Set allow_unused=True if this is the desired behavior.")
    result = []
    for t, g in zip(ins, captured):
        if g is None and materialize_grads:
            if isinstance(t, graph.GradientEdge):
                raise RuntimeError("materialize_grads cannot be used when the given input is a GradientEdge")
            g = zeros_like(t, requires_grad=create_graph)
        result.append(g)
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), result))
    return tuple(result)


def _batched_pass(roots, grads, retain_graph, create_graph, input_edges, outs, ins, caller):
    """autograd.grad(is_grads_batched=True): one pass with the gradients batched over their first
    dimension (see ``_functorch.vmap.batched_gradients_pass``): hooks fire once, with batched tensors."""
    sizes = sorted({g.shape[0] for g in grads if g is not None})
    if len(sizes) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    from .._functorch.vmap import batched_gradients_pass

    def run(batched, node_apply):
        return _above.execute(roots, batched, retain_graph, create_graph, inputs=input_edges, accumulate=False,
                              root_tensors=outs, input_tensors=ins, caller=caller, node_apply=node_apply)
    return batched_gradients_pass(run, grads, sizes[0] if sizes else 1)


def _is_checkpoint_valid() -> bool:
    """Whether reentrant checkpointing can run here (False in a pass toward chosen inputs)."""
    from . import engine
    return engine.is_checkpoint_valid()


def __getattr__(name):
    # Variable lives with the other legacy classes, which need Tensor (itself importing this package)
    if name == "torch":  # torch.autograd imports torch, so the package is reachable from it
        import importlib
        return importlib.import_module("hookgrad")
    if name == "Variable":
        from .variable import Variable
        return Variable
    if name == "forward_ad":  # it works through the op hooks, a layer above this package
        import importlib
        return importlib.import_module(__name__ + ".forward_ad")
    if name in ("handle_torch_function", "has_torch_function", "is_tensor_like"):
        from .. import overrides  # the same functions as torch.overrides', as in torch
        return getattr(overrides, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
