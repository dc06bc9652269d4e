"""The gradient through an in-place op on a view (CopySlices) for every layout of the base its
one-copy path and its general path take: empty, 0-d, sliced and strided views of a contiguous
base, a transposed base, a complex base written through its real view, and create_graph."""
import math

import pytest

from difftest import differential

VIEWS = [((0, 3), (slice(None), slice(0, 2))), ((4, 3), (slice(1, 3), 1)),
         ((2, 3, 4), (Ellipsis, slice(None, None, 2))), ((5,), (slice(1, 5, 2),))]


@pytest.mark.parametrize("shape,index", VIEWS)
@differential
def test_inplace_on_a_view_of_a_contiguous_base(T, shape, index):
    a = (T.arange(float(math.prod(shape)), dtype=T.float64).reshape(shape) * 0.37 - 1).requires_grad_()
    b = a * 1.0
    b[index].mul_(3.0)
    log = []
    b.register_hook(lambda g: log.append(g.clone()))
    (b * b).sum().backward()
    return log, a.grad, b._version


@differential
def test_inplace_on_a_zero_dim_view(T):
    a = T.tensor(1.5, dtype=T.float64, requires_grad=True)
    b = a * 1.0
    b.view(()).mul_(3.0)
    (b * b).sum().backward()
    return a.grad


@differential
def test_inplace_on_a_row_of_a_transposed_base(T):
    a = T.arange(12.0, dtype=T.float64).reshape(3, 4).requires_grad_()
    b = (a * 1.0).t()
    b[1].mul_(2.0)
    (b * b).sum().backward()
    return a.grad


@differential
def test_inplace_on_the_real_view_of_a_complex_base(T):
    c = T.tensor([1 + 2j, -0.5 + 1j, 3 - 1j], dtype=T.complex128, requires_grad=True)
    d = c * 1
    T.view_as_real(d)[:, 0].mul_(2)
    (d.abs() ** 2).sum().backward()
    return c.grad


@differential
def test_inplace_on_a_view_double_backward(T):
    a = T.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=T.float64, requires_grad=True)
    b = a * a
    b[:, 1:].mul_(a[:, :2])
    (g,) = T.autograd.grad((b * b).sum(), a, create_graph=True)
    (gg,) = T.autograd.grad(g.sum(), a)
    return g.detach(), gg
