"""Linear maps with a NumPy kernel and a NumPy adjoint, recorded as one node each.

Pooling given its window choice, padding, adaptive averaging and embedding lookups are all linear
in the tensor that gets the gradient. Each is described once by a pair of kernels ``(fwd, adj)``;
the backward of the op is the adjoint, itself recorded with the forward as *its* backward, so
gradients of any order come for free. Each op declares its pair of node classes once, with
torch's names (``linear_map_nodes``).
"""
from __future__ import annotations

import functools

import numpy as np

from ..._dtype import narrow_to, widen
from ..._meta import MetaArray, meta_like
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node
from ..._ops._base import GRAD, edge
from ..._ops._declare import ZeroGradNode, backward_results, node_class, record_op


class LinearMapNode(Node):
    """Backward of a linear map: applies the adjoint kernel (recorded, so it is differentiable too)."""

    # args: the op's arguments as torch's node reports them (read by the class's ``saved_values``)
    # constant_input: (shape, dtype) of the forward's input when this node is an adjoint that also
    # has an edge to it (see apply)
    __slots__ = ("fwd", "adj", "args", "constant_input")
    adjoint = None  # the node class of the adjoint map
    saves_input = False  # torch keeps the input (pooling): version-checked, and an input of the backward
    uses_saved_indices = False  # the node saved integer indices (embedding) that its backward unpacks and uses
    constant_in_input = None  # create_graph: the result's node when the gradient does not need grad

    def apply(self, grads):
        g = grads[0]
        if len(self.next_functions) == 2:
            # an adjoint recorded under create_graph over (grad_output, self): its gradient in the
            # forward's input is zero, materialized as torch's, so a pass reaches that input's history
            shape, dtype = self.constant_input
            return self._apply_adjoint(g)[0], (wrap(np.zeros(shape, dtype)) if self.next_functions[1][0] is not None
                                               else None)
        return self._apply_adjoint(g)

    def _apply_adjoint(self, g):
        adj = self.adj
        x = None
        if self.uses_saved_indices:
            adj = self.adjoint_with_saved_indices()
        elif self.saves_input:
            saved = self.saved()
            x = saved[0]
            if len(saved) > 1:  # max pooling's indices, as unpacked now
                adj = functools.partial(self.adjoint_at_saved, self, indices=saved[1])
        # the adjoint's node carries the op's args on, for the forward class it records in turn
        out = linear_map(g, adj, self.fwd, self.adjoint, args=getattr(self, "args", None))
        if self.saves_input:
            node = out._grad_fn
            if x is not None and x._requires_grad and node is not None and node.__class__ is self.adjoint:
                # torch's backward node of a pooling backward has edges to the gradient and to the
                # input (whose gradient is zeros): a second pass runs the input's history too
                node.next_functions = node.next_functions + (edge(x),)
                node.constant_input = (x._ndarray.shape, x._ndarray.dtype)
            return backward_results(self.constant_in_input, (g, x), (out,))
        return (out,)

    def adjoint_with_saved_indices(self):
        """The adjoint kernel over the indices as unpacked now, as torch's backward reads them: a freed
        graph raises, saved-tensor unpack hooks run and what they return is used."""
        (indices,) = self.saved()
        data = indices._ndarray
        if data.dtype.kind not in "iu":
            raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar "
                               f"types: Long, Int; but got {indices.type()} instead (while checking arguments for "
                               "embedding_backward)")
        if data is self.adj.keywords["idx"]:
            return self.adj
        return functools.partial(self.adj.func, **{**self.adj.keywords, "idx": data})


def saved_arg(i: int):
    """A ``saved_values`` entry: the ``i``-th of the ``args`` the op recorded."""
    return lambda node: node.args[i]


def linear_map_nodes(name: str, adj_name: str, saves_input: bool = False, saved_values=None, saved_names=None):
    """The node class ``name`` of a linear map, and (as its ``adjoint``) the class ``adj_name`` of its
    backward. ``saves_input``: the node keeps the op's input, as torch's does. ``saved_values``:
    torch's other saved values, as ``Node.saved_values`` (mostly ``saved_arg`` entries);
    ``saved_names``: the tensors the caller saves itself, when not the input."""
    fwd_cls = node_class(name, LinearMapNode, saves_input=saves_input, saved_values=saved_values or {},
                         saved_names=saved_names or (("self",) if saves_input else ()))
    adj_cls = node_class(adj_name, LinearMapNode)
    fwd_cls.adjoint, adj_cls.adjoint = adj_cls, fwd_cls
    if saves_input:
        fwd_cls.constant_in_input = node_class(adj_name, ZeroGradNode)
    return fwd_cls


def linear_map(x: Tensor, fwd, adj, node_cls, value=None, args=None) -> Tensor:
    """``fwd(x)`` as a recorded ``node_cls`` op; its gradient is ``adj(grad)``.

    ``value``: the forward result when the caller already has it (max pooling finds it on the way).
    ``args``: what the node class's ``saved_values`` read.
    """
    # bfloat16: the kernel runs in float32 and its result is rounded once (as torch's)
    result = wrap(narrow_to(fwd(widen(x._ndarray)), x._ndarray.dtype) if value is None else value)
    if x._ndarray.__class__ is MetaArray and result._ndarray.__class__ is not MetaArray:
        result._ndarray = meta_like(result._ndarray)   # a kernel that built its result in a new array
    if GRAD.enabled and x._requires_grad:
        node = record_op(node_cls, (x,), result)
        node.fwd, node.adj = fwd, adj
        if args is not None:
            node.args = args
        if node_cls.saves_input:
            node.save(x)
    return result


# ---- bilinear's product: torch's _trilinear, one node ----------------------------------------------
class TrilinearBackward0(Node):
    """``out[n, o] = sum_ij i1[n, i] i2[o, i, j] i3[n, j]`` as ``bilinear`` calls torch's _trilinear
    (its expand and sum dims are that call's constants). Gradients in hookgrad einsums, so that
    they are differentiable again."""

    __slots__ = ()
    saved_names = ("i1", "i2", "i3")
    saved_values = {"expand1": lambda n: (1, 3), "expand2": lambda n: (0,), "expand3": lambda n: (1, 2),
                    "sumdim": lambda n: (2, 3)}

    def apply(self, grads):
        x1, w, x2 = self.saved()
        g = grads[0]
        nf = self.next_functions
        import hookgrad  # (this module is imported while hookgrad is)
        einsum = hookgrad.einsum
        return (einsum("no,oij,nj->ni", g, w, x2) if nf[0][0] is not None else None,
                einsum("no,ni,nj->oij", g, x1, x2) if nf[1][0] is not None else None,
                einsum("no,ni,oij->nj", g, x1, w) if nf[2][0] is not None else None)


def bilinear_product(x1: Tensor, weight: Tensor, x2: Tensor) -> Tensor:
    """(N, in1), (out, in1, in2), (N, in2) -> (N, out), recorded as one TrilinearBackward0."""
    a, w, b = x1._ndarray, weight._ndarray, x2._ndarray
    o, i1, i2 = w.shape
    # (x1 @ W_o) . x2 for every o: one matmul against the weight folded to (in1, out*in2)
    t = np.matmul(a, np.ascontiguousarray(w.transpose(1, 0, 2)).reshape(i1, o * i2)).reshape(-1, o, i2)
    result = wrap((t * b[:, None, :]).sum(-1))
    if GRAD.enabled and (x1._requires_grad or weight._requires_grad or x2._requires_grad):
        node = record_op(TrilinearBackward0, (x1, weight, x2), result)
        wants = [f is not None for f, _ in node.next_functions]
        # as torch: each operand is kept only for the other two's gradients
        node.save(x1 if wants[1] or wants[2] else None, weight if wants[0] or wants[2] else None,
                  x2 if wants[0] or wants[1] else None)
    return result
