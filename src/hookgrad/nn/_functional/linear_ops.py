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
            return self._apply_adjoint(g)[0], (wrap(np.zeros(shape, dtype)) if self._should_compute_output(1)
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
            node = out._grad_fn_value
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
    """torch's _trilinear: three operands, each unsqueezed at its ``expand`` dims to one common rank,
    multiplied and summed over ``sumdim``. Each operand's gradient is another _trilinear (the
    incoming gradient in that operand's place, its expand dims summed), recorded as this node again
    under create_graph, as torch's _trilinear_backward does."""

    __slots__ = ("expands", "sumdim")
    saved_names = ("i1", "i2", "i3")
    saved_values = {"expand1": lambda n: n.expands[0], "expand2": lambda n: n.expands[1],
                    "expand3": lambda n: n.expands[2], "sumdim": lambda n: n.sumdim}

    def apply(self, grads):
        operands = self.saved()
        g = grads[0]
        out = []
        for i, (fn, _) in enumerate(self.next_functions):
            if fn is None or g is None:
                out.append(None)
                continue
            args = [g if j == i else operands[j] for j in range(3)]
            expands = [self.sumdim if j == i else self.expands[j] for j in range(3)]
            out.append(trilinear(*args, *expands, self.expands[i]))
        return tuple(out)


def _trilinear_subscripts(ndims, expands, sumdim):
    """np.einsum's subscripts for a _trilinear whose unsqueezed operands have ``ndims`` dims."""
    letters = [chr(ord("a") + d) for d in range(ndims)]

    def kept(skipped):
        return "".join(letters[d] for d in range(ndims) if d not in skipped)
    return ",".join(kept(e) for e in expands) + "->" + kept(sumdim)


def trilinear(i1: Tensor, i2: Tensor, i3: Tensor, expand1, expand2, expand3, sumdim) -> Tensor:
    """torch's _trilinear (see TrilinearBackward0), recorded as one node."""
    expands = (tuple(expand1), tuple(expand2), tuple(expand3))
    ndims = i1._ndarray.ndim + len(expands[0])
    arrays = [widen(t._ndarray) for t in (i1, i2, i3)]
    out = np.einsum(_trilinear_subscripts(ndims, expands, tuple(sumdim)), *arrays, optimize=True)
    result = wrap(narrow_to(np.asarray(out, dtype=arrays[0].dtype), i1._ndarray.dtype))
    _record_trilinear(result, (i1, i2, i3), expands, tuple(sumdim))
    return result


def _record_trilinear(result, operands, expands, sumdim):
    if not (GRAD.enabled and any(t._requires_grad for t in operands)):
        return
    node = record_op(TrilinearBackward0, operands, result)
    node.expands, node.sumdim = expands, sumdim
    wants = [f is not None for f, _ in node.next_functions]
    # as torch: each operand is kept only for the other two's gradients
    node.save(*(t if any(wants[j] for j in range(3) if j != i) else None for i, t in enumerate(operands)))


def bilinear_product(x1: Tensor, weight: Tensor, x2: Tensor) -> Tensor:
    """(N, in1), (out, in1, in2), (N, in2) -> (N, out), recorded as one TrilinearBackward0."""
    a, w, b = x1._ndarray, weight._ndarray, x2._ndarray
    o, i1, i2 = w.shape
    # (x1 @ W_o) . x2 for every o: one matmul against the weight folded to (in1, out*in2)
    t = np.matmul(a, np.ascontiguousarray(w.transpose(1, 0, 2)).reshape(i1, o * i2)).reshape(-1, o, i2)
    result = wrap((t * b[:, None, :]).sum(-1))
    _record_trilinear(result, (x1, weight, x2), ((1, 3), (0,), (1, 2)), (2, 3))
    return result
