"""torch.autograd.functional against torch: jacobian, hessian, vjp, jvp, hvp, vhp with tensor and
tuple inputs/outputs, create_graph (results differentiable again), strict mode, argument errors."""
import numpy as np
import pytest

from difftest import catch, differential

A = np.cos(np.arange(6.0)).reshape(2, 3)
B = np.sin(np.arange(3.0)) + 0.5


def single(T, x):
    return (x ** 3).sum(0) * T.tanh(x[0])


def several(T, x, y):
    return x @ y * 2 + x.sum(), T.exp(y).prod() * x[0, 0]


def scalar(T, x):
    return (T.sin(x) * x ** 2).sum()


def scalar2(T, x, y):
    return (x @ y).pow(2).sum() + (y ** 3).sum()


def linear_fn(T, x):
    return x * 2.0


@pytest.mark.parametrize("vectorize", [False, True])
@differential(rtol=1e-10, atol=1e-12)
def test_jacobian(T, vectorize):
    F = T.autograd.functional
    x, y = T.tensor(A), T.tensor(B)
    return [F.jacobian(lambda x: single(T, x), x, vectorize=vectorize),
            F.jacobian(lambda x, y: several(T, x, y), (x, y), vectorize=vectorize),
            F.jacobian(lambda x: (single(T, x),), (x,), vectorize=vectorize),
            F.jacobian(lambda x: (single(T, x), x.sum()), x, vectorize=vectorize),
            F.jacobian(lambda x, y: x.sum() * 2, (x, y), vectorize=vectorize),
            x.requires_grad, F.jacobian(lambda x: x.sum(), x, strategy="forward-mode", vectorize=True)]


@differential(rtol=1e-10, atol=1e-12)
def test_jacobian_create_graph(T):
    F = T.autograd.functional
    x = T.tensor(A, requires_grad=True)
    jac = F.jacobian(lambda x: single(T, x), x, create_graph=True)
    plain = F.jacobian(lambda x: single(T, x), x)
    (g,) = T.autograd.grad(jac.sum(), x)
    return jac.requires_grad, plain.requires_grad, g


@differential
def test_jacobian_errors(T):
    F = T.autograd.functional
    x, y = T.tensor(A), T.tensor(B)
    return [catch(F.jacobian, lambda x: x, [x]), catch(F.jacobian, lambda x: x, (x, 3)),
            catch(F.jacobian, lambda x: 3, x), catch(F.jacobian, lambda x: x, x, strategy="sideways"),
            catch(F.jacobian, lambda x, y: x * 2, (x, y), strict=True),
            catch(F.jacobian, lambda x: T.ones(2), x, strict=True),
            catch(F.jacobian, lambda x: x * 2, x, strict=True, create_graph=True),
            catch(F.jacobian, lambda x: x ** 2, x, strict=True, vectorize=True),
            catch(F.jacobian, lambda x: x, x, strategy="forward-mode"),
            catch(F.jacobian, lambda x: x, x, strategy="forward-mode", vectorize=True, create_graph=True),
            catch(F.jacobian, lambda x: x, x, strategy="forward-mode", vectorize=True, strict=True),
            catch(F.jacobian, lambda x, y: x ** 2, (x, y), strict=True)]


@differential(rtol=1e-10, atol=1e-12)
def test_hessian(T):
    F = T.autograd.functional
    x, y = T.tensor(A), T.tensor(B)
    xr = T.tensor(A, requires_grad=True)
    h = F.hessian(lambda x: scalar(T, x), xr, create_graph=True)
    (g,) = T.autograd.grad(h.sum(), xr)
    return [F.hessian(lambda x: scalar(T, x), x), F.hessian(lambda x, y: scalar2(T, x, y), (x, y)),
            F.hessian(lambda x: scalar(T, x), (x,)), F.hessian(lambda x: scalar(T, x), x, vectorize=True),
            F.hessian(lambda x: scalar(T, x), x, outer_jacobian_strategy="forward-mode", vectorize=True),
            g, catch(F.hessian, lambda x: x, x), catch(F.hessian, lambda x: (x.sum(),), x),
            catch(F.hessian, lambda x: x.sum() * 2, x, strict=True),
            catch(F.hessian, lambda x: scalar(T, x), x, outer_jacobian_strategy="bad"),
            F.hessian(lambda x: x.sum() * 2, x)]


@differential(rtol=1e-10, atol=1e-12)
def test_vjp_jvp(T):
    F = T.autograd.functional
    x, y = T.tensor(A), T.tensor(B)
    vx, vy = T.ones(2, 3, dtype=T.float64) * 0.5, T.tensor([1.0, -2.0, 3.0], dtype=T.float64)
    fn2 = lambda x, y: several(T, x, y)  # noqa: E731
    out2 = fn2(x, y)
    u = (T.linspace(-1, 1, 2, dtype=T.float64), T.tensor(2.0, dtype=T.float64))
    return [F.vjp(lambda x: single(T, x), x, T.tensor([1.0, 2.0, 3.0], dtype=T.float64)),
            F.vjp(fn2, (x, y), u), F.vjp(lambda x: scalar(T, x), x), F.vjp(lambda x, y: scalar2(T, x, y), (x, y)),
            F.jvp(lambda x: single(T, x), x, vx), F.jvp(fn2, (x, y), (vx, vy)),
            F.jvp(lambda x: x * 3, T.tensor(2.0, dtype=T.float64)),
            F.jvp(lambda x, y: x.sum() * 2, (x, y), (vx, vy)), out2[0].shape]


@differential(rtol=1e-10, atol=1e-12)
def test_hvp_vhp(T):
    F = T.autograd.functional
    x, y = T.tensor(A), T.tensor(B)
    vx, vy = T.ones(2, 3, dtype=T.float64) * 0.5, T.tensor([1.0, -2.0, 3.0], dtype=T.float64)
    return [F.hvp(lambda x: scalar(T, x), x, vx), F.vhp(lambda x: scalar(T, x), x, vx),
            F.hvp(lambda x, y: scalar2(T, x, y), (x, y), (vx, vy)), F.vhp(lambda x, y: scalar2(T, x, y), (x, y), (vx, vy)),
            F.hvp(lambda x: x ** 3, T.tensor(2.0, dtype=T.float64)), F.vhp(lambda x: x.sum() * 2, x, vx)]


@differential(rtol=1e-10, atol=1e-12)
def test_create_graph_products(T):
    F = T.autograd.functional
    x = T.tensor(A, requires_grad=True)
    v = T.ones(2, 3, dtype=T.float64, requires_grad=True)
    out = []
    for fn in (F.jvp, F.hvp, F.vhp):
        value, product = fn(lambda x: scalar(T, x) if fn is not F.jvp else x ** 3, x, v, create_graph=True)
        out.append((value.requires_grad, product.requires_grad, T.autograd.grad(product.sum(), (x, v))))
        value, product = fn(lambda x: scalar(T, x) if fn is not F.jvp else x ** 3, x, v)
        out.append((value.requires_grad, product.requires_grad))
    value, product = F.vjp(lambda x: x ** 3, x, v, create_graph=True)
    out.append(T.autograd.grad(product.sum(), (x, v)))
    return out


@differential
def test_product_errors(T):
    F = T.autograd.functional
    x, y = T.tensor(A), T.tensor(B)
    v = T.ones(2, 3, dtype=T.float64)
    return [catch(F.vjp, lambda x: x, x), catch(F.vjp, lambda x: x, x, T.ones(3)),
            catch(F.vjp, lambda x, y: (x, y), (x, y), (v,)), catch(F.vjp, lambda x, y: (x, y), (x, y), (v, v)),
            catch(F.vjp, lambda x: x, x, (v, v)),
            catch(F.jvp, lambda x: x, x), catch(F.jvp, lambda x: x, x, T.ones(2)),
            catch(F.jvp, lambda x: T.ones(2, 3), x, v, strict=True),
            catch(F.jvp, lambda x, y: x * 2, (x, y), (v, T.ones(3, dtype=T.float64)), strict=True),
            catch(F.vjp, lambda x, y: x * 2, (x, y), v, strict=True),
            catch(F.hvp, lambda x: x, x, v), catch(F.hvp, lambda x: (x.sum(),), x, v),
            catch(F.vhp, lambda x: x, x, v), catch(F.hvp, lambda x: x.sum(), x),
            catch(F.hvp, lambda x: x.sum() * 2, x, v, strict=True),
            catch(F.vhp, lambda x: x.sum() * 2, x, v, strict=True),
            catch(F.hvp, lambda x: (x ** 2).sum(), x, v, strict=True),
            catch(F.vjp, lambda x: x, "x")]
