"""torch.func against torch: jvp, jacfwd, jacrev with several argnums and tree inputs/outputs,
hessian, linearize, functional_call (strict, tie_weights), stack_module_state; argument errors."""
import numpy as np
import pytest

from difftest import catch, differential

A = np.cos(np.arange(6.0)).reshape(2, 3)
B = np.sin(np.arange(3.0)) + 0.5


def f2(T, x, y):
    return T.tanh(x @ y) * x.sum(1)


def tree_f(T, d, y):
    return {"a": d["w"] * y.sum(), "b": (T.sin(d["w"]) ** 2).sum() + (d["b"] * y).sum()}


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
@differential(rtol=1e-10, atol=1e-12)
def test_jacobians(T, transform):
    J = getattr(T.func, transform)
    x, y = T.tensor(A), T.tensor(B)
    tree = {"w": T.tensor(A[0]), "b": T.tensor(B)}
    f = lambda x, y: f2(T, x, y)  # noqa: E731
    aux = J(lambda x, y: (f2(T, x, y), {"note": x.sum()}), has_aux=True)(x, y)
    return [J(f)(x, y), J(f, argnums=1)(x, y), J(f, argnums=(0, 1))(x, y), J(f, argnums=(1,))(x, y),
            # torch's jacfwd returns zeros for a negative argnums (its jvp matches positions after wrapping
            # them); hookgrad differentiates the argument asked for, so only jacrev is compared here
            J(f, argnums=-1)(x, y) if transform == "jacrev" else None, J(lambda x, y: (f2(T, x, y), y * 2), argnums=(0, 1))(x, y),
            J(lambda d, y: tree_f(T, d, y))(tree, y), J(lambda d, y: tree_f(T, d, y), argnums=(0, 1))(tree, y),
            aux, J(lambda x: x.sum() * 0 + 1.0)(x),
            J(J(lambda x: (x ** 3).sum()))(T.tensor(B))]


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
@differential
def test_jacobian_errors(T, transform):
    J = getattr(T.func, transform)
    x, y = T.tensor(A), T.tensor(B)
    f = lambda x, y: f2(T, x, y)  # noqa: E731
    return [catch(J(f, argnums=2), x, y), catch(J(f, argnums=()), x, y), catch(J(f, argnums=(0, 0)), x, y),
            catch(J(f, argnums=[0]), x, y), catch(J(lambda x: 3.0), x), catch(J(lambda x: x, has_aux=True), x)]


@differential(rtol=1e-10, atol=1e-12)
def test_hessian(T):
    x, y = T.tensor(A), T.tensor(B)
    return [T.func.hessian(lambda x: (T.sin(x) * x ** 2).sum())(x),
            T.func.hessian(lambda x, y: ((x @ y) ** 2).sum() + (y ** 3).sum(), argnums=(0, 1))(x, y),
            T.func.hessian(lambda x, y: ((x @ y) ** 2).sum(), argnums=1)(x, y)]


@differential(rtol=1e-10, atol=1e-12)
def test_jvp(T):
    x, y = T.tensor(A), T.tensor(B)
    tx, ty = T.ones(2, 3, dtype=T.float64) * 0.5, T.tensor([1.0, -2.0, 3.0], dtype=T.float64)
    f = lambda x, y: f2(T, x, y)  # noqa: E731
    tree = {"w": T.tensor(A[0]), "b": T.tensor(B)}
    tangent_tree = {"w": T.tensor(B), "b": T.tensor(A[1])}
    return [T.func.jvp(f, (x, y), (tx, ty)), T.func.jvp(lambda x: (x * 2, x.sum()), (x,), (tx,)),
            T.func.jvp(lambda d, y: tree_f(T, d, y), (tree, y), (tangent_tree, ty)),
            T.func.jvp(lambda x, y: x * 2, (x, y), (tx, ty)), T.func.jvp(lambda x: T.ones(2), (x,), (tx,)),
            T.func.jvp(lambda x: (x ** 2, {"aux": x.sum()}), (x,), (tx,), has_aux=True),
            T.func.jvp(lambda x: T.func.jvp(lambda z: z ** 3, (x,), (tx,))[1], (x,), (tx,))]


@differential
def test_jvp_errors(T):
    x, y = T.tensor(A), T.tensor(B)
    return [catch(T.func.jvp, lambda x: x, x, x), catch(T.func.jvp, lambda x, y: x, (x, y), (x,)),
            catch(T.func.jvp, lambda x: x, (x,), (y,)), catch(T.func.jvp, lambda x: x, (), ()),
            catch(T.func.jvp, lambda x: 3.0, (x,), (x,)), catch(T.func.jvp, lambda x: x, (x,), (x,), has_aux=True),
            catch(T.func.jvp, lambda x: x, (x,), ([x],))]


@differential(rtol=1e-10, atol=1e-12)
def test_linearize(T):
    x, y = T.tensor(A), T.tensor(B)
    out, jvp_fn = T.func.linearize(lambda x, y: f2(T, x, y), x, y)
    t1 = (T.ones(2, 3, dtype=T.float64), T.zeros(3, dtype=T.float64))
    t2 = (T.zeros(2, 3, dtype=T.float64), T.tensor([1.0, -2.0, 3.0], dtype=T.float64))
    return [out, jvp_fn(*t1), jvp_fn(*t2), jvp_fn(*t1), catch(jvp_fn, t1[0]), catch(jvp_fn, t1[0], t1[0]),
            catch(jvp_fn, t1[0], t2[1].float())]


def tied_model(T):
    T.manual_seed(0)
    m = T.nn.Sequential(T.nn.Linear(3, 3), T.nn.Tanh(), T.nn.Linear(3, 3)).double()
    with T.no_grad():
        m[0].weight.copy_(T.tensor(np.cos(np.arange(9.0)).reshape(3, 3)))
        m[0].bias.fill_(0.1)
        m[2].bias.fill_(-0.2)
    m[2].weight = m[0].weight
    return m


@differential(rtol=1e-10, atol=1e-12)
def test_functional_call_tie_weights_and_strict(T):
    m = tied_model(T)
    x = T.tensor(np.linspace(-1, 1, 6).reshape(2, 3))
    w = T.eye(3, dtype=T.float64) * 2
    fc = T.func.functional_call
    full = {n: p for n, p in m.named_parameters()}
    return [fc(m, {"0.weight": w}, (x,)), fc(m, {"0.weight": w}, (x,), tie_weights=False),
            fc(m, {"0.weight": w, "2.weight": w}, x), catch(fc, m, {"0.weight": w, "2.weight": w * 2}, (x,)),
            fc(m, {"0.weight": w, "2.weight": w * 2}, (x,), tie_weights=False),
            catch(fc, m, {"0.weight": w}, (x,), strict=True), fc(m, full, (x,), strict=True),
            catch(fc, m, {**full, "extra": w}, (x,), strict=True),
            catch(fc, m, {"0.weight": w}, (x,), strict=True, tie_weights=False),
            catch(fc, m, ({"0.weight": w}, {"0.weight": w}), (x,)),
            fc(m, ({"0.weight": w}, {"0.bias": T.zeros(3, dtype=T.float64)}), (x,)),
            m[0].weight, m(x)]


@differential(rtol=1e-10, atol=1e-12)
def test_stack_module_state_with_vmap(T):
    models = []
    for i in range(3):
        m = T.nn.Sequential(T.nn.Linear(3, 2), T.nn.BatchNorm1d(2)).double()
        with T.no_grad():
            m[0].weight.copy_(T.tensor(np.cos(np.arange(6.0) + i).reshape(2, 3)))
            m[0].bias.fill_(0.1 * i)
        models.append(m)
    params, buffers = T.func.stack_module_state(models)
    base = models[0]
    x = T.tensor(np.linspace(-1, 1, 12).reshape(4, 3))
    base.eval()

    def run(p, b, x):
        return T.func.functional_call(base, (p, b), (x,))

    out = T.func.vmap(run, in_dims=(0, 0, None))(params, buffers, x)
    out.sum().backward()
    frozen = [T.nn.Linear(2, 2) for _ in range(2)]
    frozen[1].weight.requires_grad_(False)
    return [{k: (v.shape, v.requires_grad, v.is_leaf) for k, v in params.items()},
            {k: (v.shape, v.requires_grad) for k, v in buffers.items()}, params, out, params["0.weight"].grad,
            catch(T.func.stack_module_state, []), catch(T.func.stack_module_state, [T.nn.Linear(2, 2), T.nn.Tanh()]),
            catch(T.func.stack_module_state, [T.nn.Linear(2, 2), T.nn.Linear(2, 2).eval()]),
            catch(T.func.stack_module_state, frozen)]


@differential(rtol=1e-10, atol=1e-12)
def test_nested_transforms(T):
    x, t = T.tensor(B), T.tensor([1.0, 0.5, -1.0], dtype=T.float64)
    f = lambda x: T.sin(x) * x.sum()  # noqa: E731
    xr = T.tensor(B, requires_grad=True)
    jvp_of_outer = T.func.jvp(f, (xr,), (t,))[1]
    (outer_grad,) = T.autograd.grad(jvp_of_outer.sum(), xr)
    return [T.func.grad(lambda x: T.func.jvp(f, (x,), (t,))[1].sum())(x),
            T.func.jacrev(lambda x: T.func.jvp(f, (x,), (t,))[1])(x),
            T.func.jacrev(T.func.jacrev(lambda x: (x ** 3).prod()))(x),
            T.func.jacfwd(T.func.grad(lambda x: (x ** 3).prod()))(x),
            T.func.vmap(T.func.jacrev(f))(T.stack([x, x * 2])),
            jvp_of_outer.requires_grad, outer_grad]
