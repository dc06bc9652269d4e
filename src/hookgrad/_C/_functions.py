"""``torch._C._functions``: the two graph-building helpers PyTorch's autograd tests call.

``DelayedError(message, num_inputs)(*tensors)`` hands back new tensors sharing the inputs' data
(with their own version counters) whose node, ``torch::autograd::Error``, raises
``RuntimeError(message)`` only if a backward pass reaches it. ``UndefinedGrad()(*tensors)`` does the
same with a node, ``UndefinedGradBackward``, that passes undefined gradients on. As in torch, the
node is attached whenever an input requires grad, whatever the grad mode.
"""
from __future__ import annotations

from .._tensor import Tensor, wrap
from ..autograd.graph import AccumulateGrad, Node  # noqa: F401 - AccumulateGrad: torch's name here too


class Error(Node):
    """Raises its message when the backward pass runs it."""

    __slots__ = ("message", "_num_outputs")
    runs_without_grads = True

    def __init__(self, message, next_functions):
        super().__init__(next_functions)
        self.message = message

    def name(self) -> str:
        return "torch::autograd::Error"

    def apply(self, grads):
        raise RuntimeError(self.message)


class UndefinedGradBackward(Node):
    """Passes an undefined gradient to each input."""

    __slots__ = ("_num_outputs",)
    runs_without_grads = True

    def name(self) -> str:
        return "torch::autograd::UndefinedGradBackward"

    def apply(self, grads):
        return (None,) * len(self.next_functions)


def _wrap_outputs(inputs, make_node):
    """Aliases of ``inputs`` (same data, own version counter), all outputs of one node made by
    ``make_node(next_functions)`` when any input requires grad."""
    for t in inputs:
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"expected a Tensor argument, but got {type(t).__name__}")
    outputs = tuple(None if t is None else wrap(t._ndarray) for t in inputs)
    if any(t is not None and t.requires_grad for t in inputs):
        node = make_node(tuple(t._edge() if t is not None else (None, 0) for t in inputs))
        node._num_outputs = len(outputs)
        for i, out in enumerate(outputs):
            if out is not None:
                out._grad_fn_value = node
                out._output_nr = i
                out._requires_grad = True
    return outputs[0] if len(outputs) == 1 else outputs


def _check_count(inputs, expected):
    if len(inputs) != expected:
        raise TypeError(f"expected {expected} arguments, got {len(inputs)} instead")


class DelayedError:
    """``DelayedError(message, num_inputs)``: called on ``num_inputs`` tensors, see the module doc."""

    def __init__(self, message: str, num_inputs: int):
        self.message, self.num_inputs = message, num_inputs

    def __call__(self, *inputs):
        _check_count(inputs, self.num_inputs)
        message = self.message
        return _wrap_outputs(inputs, lambda edges: Error(message, edges))


class UndefinedGrad:
    """``UndefinedGrad()``: called on one tensor, see the module doc."""

    def __call__(self, *inputs):
        _check_count(inputs, 1)
        return _wrap_outputs(inputs, UndefinedGradBackward)


# torch registers these as node classes (a call makes a node)
Node.register(DelayedError)
Node.register(UndefinedGrad)
