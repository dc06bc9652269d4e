"""Linear maps with a NumPy kernel and a NumPy adjoint, recorded as one node each.

Pooling given its window choice, padding, adaptive averaging and embedding lookups are all linear
in the tensor that gets the gradient. Each is described once by a pair of kernels ``(fwd, adj)``;
the backward of the op is the adjoint, itself recorded with the forward as *its* backward, so
gradients of any order come for free.
"""
from __future__ import annotations

from ..._dtype import narrow_to, widen
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node
from ..._ops._base import GRAD, edge, record


class LinearMapNode(Node):
    """Backward of a linear map: applies the adjoint kernel (recorded, so it is differentiable too)."""

    __slots__ = ("_name", "fwd", "adj", "adj_name")

    def name(self) -> str:
        return self._name

    def apply(self, grads):
        return (linear_map(grads[0], self.adj, self.fwd, self.adj_name, self._name),)


def linear_map(x: Tensor, fwd, adj, name: str, adj_name: str, value=None) -> Tensor:
    """``fwd(x)`` as a recorded op named ``name``; its gradient is ``adj(grad)`` (named ``adj_name``).

    ``value``: the forward result when the caller already has it (max pooling finds it on the way).
    """
    # bfloat16: the kernel runs in float32 and its result is rounded once (as torch's)
    result = wrap(narrow_to(fwd(widen(x._data)), x._data.dtype) if value is None else value)
    if GRAD.enabled and x._requires_grad:
        node = LinearMapNode((edge(x),))
        node._name, node.fwd, node.adj, node.adj_name = name, fwd, adj, adj_name
        record(node, result)
    return result
