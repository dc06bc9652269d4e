"""Automatic differentiation: ``backward``, ``grad``, custom ``Function``s, grad modes, hooks."""
from __future__ import annotations

from . import graph, grad_mode
from .anomaly_mode import detect_anomaly, is_anomaly_enabled, is_anomaly_check_nan_enabled, set_detect_anomaly
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import gradcheck, gradgradcheck
from .graph import Node

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "is_grad_enabled", "detect_anomaly", "set_detect_anomaly",
           "graph", "gradcheck", "gradgradcheck", "Variable"]


def _tensors(x):
    from .._tensor import Tensor
    if x is None:
        return ()
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _make_grads(outputs, grads, is_grads_batched=False):
    from .._tensor import Tensor
    from .._ops.creation import ones_like
    from .._ops._base import as_tensor_arg
    from .. import _dtype
    if grads is None:
        grads = (None,) * len(outputs)
    elif isinstance(grads, Tensor):
        grads = (grads,)
    else:
        grads = tuple(grads)
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs" if not grads else
                           f"got {len(grads)} tensors and {len(outputs)} gradients")
    out = []
    for i, (o, g) in enumerate(zip(outputs, grads)):
        if g is None:
            if o.requires_grad and o._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not _dtype.is_inexact_np(o._data.dtype):
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {o.dtype}")
            out.append(ones_like(o))
            continue
        if not isinstance(g, Tensor):
            g = as_tensor_arg(g)
        if g._data.shape != o._data.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] has a "
                               f"shape of {o.shape}.".replace("hookgrad.Size", "torch.Size"))
        if g._data.dtype.kind != o._data.dtype.kind and not (_dtype.is_inexact_np(g._data.dtype)
                                                              and _dtype.is_inexact_np(o._data.dtype)):
            raise TypeError(f"For complex Tensors, both grad_output and output are required to have the same dtype. "
                            f"Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} and output[{i}] has a "
                            f"dtype of {o.dtype}.")
        out.append(g)
    return out


def _root_edges(outputs):
    edges = []
    for i, t in enumerate(outputs):
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        edges.append(t._edge())
    return edges


def _input_edges(inputs, for_backward):
    edges = []
    for t in inputs:
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        if for_backward and t.grad_fn is not None:
            t.retain_grad()
        edges.append(t._edge())
    return edges


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None,
             inputs=None) -> None:
    """Accumulate into ``.grad`` the gradients of ``tensors`` w.r.t. the graph's leaves (or ``inputs``)."""
    from . import engine
    if grad_variables is not None:
        grad_tensors = grad_variables
    outputs = _tensors(tensors)
    if inputs is not None:
        inputs = _tensors(inputs)
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    grads = _make_grads(outputs, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    roots = _root_edges(outputs)
    input_edges = _input_edges(inputs, True) if inputs is not None else None
    engine.execute(roots, grads, retain_graph, create_graph, inputs=input_edges, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` w.r.t. ``inputs``, returned (``.grad`` is left alone)."""
    from . import engine
    from .._ops.creation import zeros_like
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _tensors(outputs)
    ins = _tensors(inputs)
    if not ins:
        raise RuntimeError("grad requires non-empty inputs.")
    grads = _make_grads(outs, grad_outputs)
    if retain_graph is None:
        retain_graph = create_graph
    roots = _root_edges(outs)
    input_edges = _input_edges(ins, False)
    captured = engine.execute(roots, grads, retain_graph, create_graph, inputs=input_edges, accumulate=False)
    result = []
    for t, g in zip(ins, captured):
        if g is None:
            if materialize_grads:
                g = zeros_like(t)
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
        result.append(g)
    return tuple(result)



def __getattr__(name):
    # Variable lives with the other legacy classes, which need Tensor (itself importing this package)
    if name == "Variable":
        from .variable import Variable
        return Variable
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
