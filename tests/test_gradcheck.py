"""gradcheck and gradgradcheck are as strict as torch's: a backward formula computed off the graph
(a first gradient that does not depend on the grad_output, under create_graph) fails
gradgradcheck, and an output without a graph that still depends on the inputs fails gradcheck."""
from __future__ import annotations

from difftest import differential


def _off_graph_square(T):
    class OffGraphSquare(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return (2 * x * grad).detach()  # the mistake: no graph for double backward

    return OffGraphSquare


@differential
def test_gradgradcheck_fails_a_backward_computed_off_the_graph(T):
    x = T.tensor([0.5, -1.25, 2.0], dtype=T.float64, requires_grad=True)
    fn = _off_graph_square(T).apply
    return [T.autograd.gradcheck(fn, (x,), raise_exception=False),
            T.autograd.gradgradcheck(fn, (x,), raise_exception=False)]


@differential
def test_gradgradcheck_passes_ops_with_graph_building_backwards(T):
    x = T.tensor([[1.0, 2.0, 0.5], [3.0, -4.0, 0.25]], dtype=T.float64, requires_grad=True)
    checks = [lambda t: T.diag_embed(t[0]), lambda t: t.diagonal(1), lambda t: t.trace() if t.shape[0] == t.shape[1] else t[:, :2].trace(),
              lambda t: T.zeros(2, 3, dtype=T.float64).index_put((T.tensor([0, 1]), T.tensor([1, 2])), t[0, :2]),
              lambda t: T.zeros(2, 3, dtype=T.float64).index_put((T.tensor([0, 0]), T.tensor([1, 1])), t[1, :2],
                                                                 accumulate=True),
              lambda t: t @ T.diag_embed(t[0]) @ t.mT]
    return [T.autograd.gradgradcheck(f, (x,), raise_exception=False) for f in checks]


@differential
def test_gradcheck_of_outputs_without_a_graph(T):
    x = T.tensor([0.5, 1.5], dtype=T.float64, requires_grad=True)

    def one_detached(t):  # checked on the outputs that have a graph only
        return (t * 2).detach(), t * 3

    def all_detached_but_dependent(t):
        return (t * 2).detach()

    def all_detached_constant(t):
        return T.ones(2, dtype=T.float64)

    return [T.autograd.gradcheck(f, (x,), raise_exception=False)
            for f in (one_detached, all_detached_but_dependent, all_detached_constant)]


@differential
def test_diagonal_double_backward_node(T):
    x = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=T.float64, requires_grad=True)
    v = T.tensor([0.5, -2.0], dtype=T.float64, requires_grad=True)
    (g,) = T.autograd.grad(x.diagonal(1), x, v, create_graph=True)
    (gv,) = T.autograd.grad((g * T.arange(6.0, dtype=T.float64).reshape(2, 3)).sum(), v)
    return g, g.grad_fn.name(), gv


@differential
def test_repeat_interleave_double_backward(T):
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=T.float64, requires_grad=True)
    return [T.autograd.gradgradcheck(lambda t: (t.repeat_interleave(2, dim=1) ** 2), (x,), raise_exception=False),
            T.autograd.gradgradcheck(lambda t: t.repeat_interleave(T.tensor([1, 3]), dim=0) * t.sum(),
                                     (x,), raise_exception=False)]
