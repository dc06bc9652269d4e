"""tensordot and inner build torch's graph (sum for broadcast dims, permute, reshape, mm or dot,
reshape), raise torch's errors, and reshape names its node as torch does (``ReshapeAliasBackward0``
for a non-contiguous tensor its strides still allow to view)."""
from __future__ import annotations

import numpy as np
import pytest

from difftest import catch, differential


def _nodes(fn, out=None):
    """The graph below ``fn``, depth first, as node names (leaves left out)."""
    out = [] if out is None else out
    if fn is not None and type(fn).__name__ != "AccumulateGrad":
        out.append(type(fn).__name__)
        for child, _ in fn.next_functions:
            _nodes(child, out)
    return out


CASES = [((3,), (3,), ([0], [0])), ((2, 3), (3,), ([1], [0])), ((2, 3), (4, 3), ([1], [1])),
         ((2, 3, 4), (3, 4, 5), ([1, 2], [0, 1])), ((2, 3, 4), (4, 3), ([1, 2], [1, 0])), ((2, 3), (4, 5), 0),
         ((2, 3, 4), (4, 5), 1), ((1, 3), (3, 1), ([1], [0])), ((2, 3, 4), (5, 4), ([-1], [-1])),
         ((2, 1), (3, 4), ([1], [0])), ((2, 3), (1, 4), ([1], [0])), ((1, 1), (1, 1), ([1], [0])),
         ((3, 1), (1, 3), ([0], [1])), ((2, 0), (0, 3), ([1], [0])), ((0,), (0,), 1)]


@pytest.mark.parametrize("shapes", CASES, ids=str)
@differential
def test_tensordot_graph_values_and_gradients(T, shapes):
    sa, sb, dims = shapes
    rng = np.random.RandomState(len(sa) * 7 + len(sb))
    a = T.tensor(rng.randn(*sa), requires_grad=True)
    b = T.tensor(rng.randn(*sb), requires_grad=True)
    r = T.tensordot(a, b, dims=dims)
    (r * T.tensor(rng.randn(*r.shape))).sum().backward()
    return r, _nodes(r.grad_fn), a.grad, b.grad


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((), (2,)), ((2,), ()), ((0,), (0,)),
                                    ((2, 3), (4, 3)), ((2, 3, 4), (5, 4))], ids=str)
@differential
def test_inner_is_a_contraction_of_the_last_dims(T, shapes):
    rng = np.random.RandomState(3)
    a = T.tensor(rng.randn(*shapes[0]), requires_grad=True)
    b = T.tensor(rng.randn(*shapes[1]), requires_grad=True)
    r = T.inner(a, b)
    r.sum().backward()
    return r, a.inner(b), _nodes(r.grad_fn), a.grad, b.grad


@differential
def test_contraction_errors(T):
    x, y = T.arange(6.0).reshape(2, 3), T.arange(12.0).reshape(3, 4) / 7
    calls = [lambda: T.tensordot(x, y, dims=2), lambda: T.tensordot(x, y, dims=-1), lambda: T.tensordot(x, y, dims=3),
             lambda: T.tensordot(x, y, dims=([0], [0])), lambda: T.tensordot(x, y, dims=([1, 1], [0, 0])),
             lambda: T.tensordot(x, y, dims=([1], [0, 1])), lambda: T.tensordot(x, y, dims=([5], [0])),
             lambda: T.tensordot(x.double(), y, dims=1), lambda: T.inner(x, T.randn(2, 4)),
             lambda: T.inner(T.randn(3).double(), T.randn(3)),
             lambda: T.tensordot(x, y, dims=1, out=T.empty(2, 4, dtype=T.float64))]
    results = [catch(call) for call in calls]
    return results, T.tensordot(x, y, dims=T.tensor(1)), T.tensordot(x, y, dims=T.tensor([[1], [0]]))


@differential
def test_contraction_messages(T):
    x, y = T.randn(2, 3), T.randn(3, 4)
    messages = []
    for call in (lambda: T.tensordot(x, y, dims=2), lambda: T.tensordot(x, y, dims=([1, 1], [0, 0])),
                 lambda: T.inner(x, T.randn(2, 4)),
                 lambda: T.tensordot(x, y, dims=1, out=T.empty(2, 4, dtype=T.float64))):
        try:
            call()
        except RuntimeError as e:
            messages.append(str(e))
    return messages


@differential
def test_reshape_node_names(T):
    a = T.randn(4, 3, requires_grad=True)
    made = [a.t().reshape(3, 4), a.reshape(4, 3), a.reshape(2, 6), a.t().reshape(3, 1, 4), a.t()[:, :2].reshape(3, 2),
            a.t().reshape(12), a[:, None].reshape(4, 3), a.t().flatten(), a.t().unsqueeze(0).reshape(3, 4)]
    return [_nodes(t.grad_fn)[:2] for t in made], [t._base is a for t in made[:5]]
