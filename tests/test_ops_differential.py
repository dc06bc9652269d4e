"""Every differentiable op: forward values and gradients compared with torch (broadcasting shapes
included), and a float64 finite-difference gradcheck on hookgrad."""
import numpy as np
import pytest

import hookgrad
from difftest import assert_same, normalize

import torch

rng = np.random.default_rng(0)


def _inputs(shapes, positive=False, low=-2.0, high=2.0, dtype=np.float64):
    arrays = []
    for s in shapes:
        a = rng.uniform(low, high, size=s).astype(dtype)
        if positive:
            a = np.abs(a) + 0.5
        arrays.append(a)
    return arrays


# name -> (fn(T, *tensors), shapes, options)
UNARY = {
    "neg": (lambda T, x: -x, {}), "exp": (lambda T, x: x.exp(), {}), "log": (lambda T, x: x.log(), {"positive": True}),
    "log1p": (lambda T, x: x.log1p(), {"positive": True}), "expm1": (lambda T, x: x.expm1(), {}),
    "sqrt": (lambda T, x: x.sqrt(), {"positive": True}), "rsqrt": (lambda T, x: x.rsqrt(), {"positive": True}),
    "abs": (lambda T, x: x.abs(), {}), "sin": (lambda T, x: x.sin(), {}), "cos": (lambda T, x: x.cos(), {}),
    "tan": (lambda T, x: (x * 0.5).tan(), {}), "tanh": (lambda T, x: x.tanh(), {}),
    "sigmoid": (lambda T, x: x.sigmoid(), {}), "relu": (lambda T, x: x.relu(), {}),
    "reciprocal": (lambda T, x: x.reciprocal(), {"positive": True}),
    "pow2": (lambda T, x: x ** 2, {}), "pow3": (lambda T, x: x.pow(3), {}), "pow_half": (lambda T, x: x ** 0.5, {"positive": True}),
    "rpow": (lambda T, x: 2 ** x, {}), "sinh": (lambda T, x: x.sinh(), {}), "cosh": (lambda T, x: x.cosh(), {}),
    "atan": (lambda T, x: x.atan(), {}), "asin": (lambda T, x: (x * 0.4).asin(), {}),
    "clamp": (lambda T, x: x.clamp(-0.5, 0.7), {}), "clamp_min": (lambda T, x: x.clamp(min=0.1), {}),
    "clip": (lambda T, x: T.clip(x, max=0.3), {}), "nan_to_num": (lambda T, x: x.nan_to_num(), {}),
    "square": (lambda T, x: x.square(), {}), "rsub": (lambda T, x: 3 - x, {}), "rdiv": (lambda T, x: 3 / x, {"positive": True}),
    "sum": (lambda T, x: x.sum(), {}), "sum0": (lambda T, x: x.sum(0), {}), "sum_keep": (lambda T, x: x.sum(-1, keepdim=True), {}),
    "sum_dims": (lambda T, x: x.sum((0, 1)), {}), "mean": (lambda T, x: x.mean(), {}), "mean1": (lambda T, x: x.mean(1), {}),
    "prod": (lambda T, x: x.prod(), {}), "prod1": (lambda T, x: x.prod(1), {}),
    "max": (lambda T, x: x.max(), {}), "max1": (lambda T, x: x.max(1)[0], {}), "min1k": (lambda T, x: x.min(1, keepdim=True).values, {}),
    "amax": (lambda T, x: x.amax(0), {}), "amin": (lambda T, x: x.amin((0, 1)), {}),
    "var": (lambda T, x: x.var(), {}), "var1": (lambda T, x: x.var(1, keepdim=True), {}), "std": (lambda T, x: x.std(0), {}),
    "var_c0": (lambda T, x: x.var(1, correction=0), {}),
    "norm": (lambda T, x: x.norm(), {}), "norm1": (lambda T, x: x.norm(p=1, dim=1), {}), "norm_dim": (lambda T, x: x.norm(dim=0), {}),
    "vnorm3": (lambda T, x: T.linalg.vector_norm(x, 3, dim=-1), {}),
    "logsumexp": (lambda T, x: x.logsumexp(1), {}), "softmax": (lambda T, x: x.softmax(1), {}),
    "log_softmax": (lambda T, x: x.log_softmax(0), {}), "cumsum": (lambda T, x: x.cumsum(1), {}), "cumprod": (lambda T, x: x.cumprod(1), {}),
    "view": (lambda T, x: x.view(-1), {}), "reshape": (lambda T, x: x.reshape(x.shape[0], -1), {}),
    "flatten": (lambda T, x: x.flatten(), {}), "unflatten": (lambda T, x: x.unflatten(1, (x.shape[1], 1)), {}),
    "squeeze": (lambda T, x: x.unsqueeze(0).squeeze(0), {}), "permute": (lambda T, x: x.permute(1, 0, 2), {}),
    "transpose": (lambda T, x: x.transpose(0, 2), {}), "mT": (lambda T, x: x.mT, {}), "T2": (lambda T, x: x[0].T, {}),
    "t": (lambda T, x: x[0].t(), {}), "expand": (lambda T, x: x[:, :1].expand(-1, 4, -1), {}),
    "repeat": (lambda T, x: x.repeat(2, 1, 1), {}), "flip": (lambda T, x: x.flip(0, 2), {}), "roll": (lambda T, x: x.roll(1, 1), {}),
    "tril": (lambda T, x: x.tril(), {}), "triu": (lambda T, x: x.triu(1), {}), "movedim": (lambda T, x: x.movedim(0, -1), {}),
    "narrow": (lambda T, x: x.narrow(1, 1, 2), {}), "split": (lambda T, x: x.split(2, 1)[1], {}), "chunk": (lambda T, x: x.chunk(2, 0)[0], {}),
    "unbind": (lambda T, x: x.unbind(1)[2], {}), "index_int": (lambda T, x: x[1], {}), "index_slice": (lambda T, x: x[:, 1:3, ::2], {}),
    "index_none": (lambda T, x: x[None, ..., 0], {}), "index_list": (lambda T, x: x[[0, 1, 0]], {}),
    "index_mask": (lambda T, x: x[x > 0], {}), "index_tensor": (lambda T, x: x[:, T.tensor([2, 0, 2])], {}),
    "gather": (lambda T, x: x.gather(1, T.tensor([[[0], [1], [0]]]).expand(x.shape[0], 3, 1).contiguous()), {}),
    "index_select": (lambda T, x: x.index_select(1, T.tensor([0, 2, 2])), {}),
    "masked_fill": (lambda T, x: x.masked_fill(x > 0.5, 1.5), {}), "clone": (lambda T, x: x.clone(), {}),
    "diagonal": (lambda T, x: x.diagonal(0, 1, 2), {}), "to64": (lambda T, x: x.float().double(), {}),
    "where_scalar": (lambda T, x: T.where(x > 0, x, 0.0), {}), "frac": (lambda T, x: x.frac(), {}),
}

BINARY = {
    "add": (lambda T, a, b: a + b, {}), "sub": (lambda T, a, b: a - b, {}), "mul": (lambda T, a, b: a * b, {}),
    "div": (lambda T, a, b: a / b, {"positive": True}), "pow": (lambda T, a, b: a ** b, {"positive": True}),
    "add_alpha": (lambda T, a, b: a.add(b, alpha=2.5), {}), "sub_alpha": (lambda T, a, b: T.sub(a, b, alpha=0.5), {}),
    "maximum": (lambda T, a, b: T.maximum(a, b), {}), "minimum": (lambda T, a, b: T.minimum(a, b), {}),
    "where": (lambda T, a, b: T.where(a > b, a, b), {}), "lerp": (lambda T, a, b: a.lerp(b, 0.3), {}),
    "atan2": (lambda T, a, b: T.atan2(a, b), {}), "clamp_t": (lambda T, a, b: a.clamp(min=b), {}),
}

SHAPES_UNARY = [(2, 3, 4)]
SHAPES_BINARY = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1, 3), (2, 1)), ((), (2, 2)), ((3, 1), (1, 3))]


def _run(fn, T, arrays, dtype):
    ts = [T.tensor(a, dtype=getattr(T, dtype), requires_grad=True) for a in arrays]
    out = fn(T, *ts)
    seed = np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)) if out.numel() else np.zeros(tuple(out.shape))
    out.backward(T.tensor(seed, dtype=out.dtype))
    return [out] + [t.grad for t in ts], out.grad_fn.name() if out.grad_fn else None


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_matches_torch(name):
    fn, opts = UNARY[name]
    arrays = _inputs(SHAPES_UNARY, **opts)
    want, want_name = _run(fn, torch, arrays, "float32")
    got, got_name = _run(fn, hookgrad, arrays, "float32")
    assert_same(normalize(got), normalize(want), rtol=1e-4, atol=1e-5)
    assert got_name == want_name


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", SHAPES_BINARY, ids=str)
def test_binary_matches_torch_broadcasting(name, shapes):
    fn, opts = BINARY[name]
    arrays = _inputs(shapes, **opts)
    want, want_name = _run(fn, torch, arrays, "float32")
    got, got_name = _run(fn, hookgrad, arrays, "float32")
    assert_same(normalize(got), normalize(want), rtol=1e-4, atol=1e-5)
    assert got_name == want_name


def _gradcheck(fn, arrays):
    ts = [hookgrad.tensor(a, dtype=hookgrad.float64, requires_grad=True) for a in arrays]
    assert hookgrad.autograd.gradcheck(lambda *xs: fn(hookgrad, *xs), ts, eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", sorted(n for n in UNARY if n not in ("index_mask", "to64", "max", "amax", "amin", "max1", "min1k")))
def test_unary_gradcheck(name):
    fn, opts = UNARY[name]
    _gradcheck(fn, _inputs([(2, 3, 3)], **opts))


@pytest.mark.parametrize("name", sorted(n for n in BINARY if n not in ("maximum", "minimum", "where", "clamp_t")))
def test_binary_gradcheck(name):
    fn, opts = BINARY[name]
    _gradcheck(fn, _inputs([(2, 3), (3,)], **opts))


MATRIX = {
    "mm": (lambda T, a, b: a @ b, [(3, 4), (4, 2)]),
    "mv": (lambda T, a, b: a @ b, [(3, 4), (4,)]),
    "vm": (lambda T, a, b: a @ b, [(4,), (4, 2)]),
    "dot": (lambda T, a, b: T.dot(a, b), [(4,), (4,)]),
    "bmm": (lambda T, a, b: T.bmm(a, b), [(2, 3, 4), (2, 4, 5)]),
    "matmul_3d_2d": (lambda T, a, b: a @ b, [(2, 3, 4), (4, 5)]),
    "matmul_bcast": (lambda T, a, b: a @ b, [(2, 1, 3, 4), (3, 4, 2)]),
    "outer": (lambda T, a, b: T.outer(a, b), [(3,), (4,)]),
    "einsum": (lambda T, a, b: T.einsum("bij,bjk->bik", a, b), [(2, 3, 4), (2, 4, 5)]),
    "einsum_sum": (lambda T, a, b: T.einsum("ij,kj->i", a, b), [(3, 4), (2, 4)]),
    "addmm": (lambda T, a, b: T.addmm(b[0], a, b), [(3, 3), (3, 2)]),
    "cat": (lambda T, a, b: T.cat([a, b], 1), [(2, 3), (2, 2)]),
    "stack": (lambda T, a, b: T.stack([a, b], 1), [(2, 3), (2, 3)]),
    "inv": (lambda T, a, b: T.linalg.inv(a + 3 * T.eye(3, dtype=a.dtype)) * b.sum(), [(3, 3), (2,)]),
    "det": (lambda T, a, b: T.linalg.det(a + 3 * T.eye(3, dtype=a.dtype)) * b.sum(), [(3, 3), (2,)]),
    "slogdet": (lambda T, a, b: T.linalg.slogdet(a + 3 * T.eye(3, dtype=a.dtype))[1] * b.sum(), [(3, 3), (2,)]),
    "solve": (lambda T, a, b: T.linalg.solve(a + 3 * T.eye(3, dtype=a.dtype), b), [(3, 3), (3,)]),
    "solve_mat": (lambda T, a, b: T.linalg.solve(a + 3 * T.eye(3, dtype=a.dtype), b), [(3, 3), (3, 2)]),
    "scatter": (lambda T, a, b: a.scatter(0, T.tensor([[1, 0, 2]]), b), [(3, 3), (1, 3)]),
    "scatter_add": (lambda T, a, b: a.scatter_add(1, T.tensor([[0, 0], [2, 1], [1, 1]]), b), [(3, 3), (3, 2)]),
    "index_add": (lambda T, a, b: a.index_add(0, T.tensor([0, 2, 0]), b), [(3, 2), (3, 2)]),
    "masked_fill_t": (lambda T, a, b: a.masked_fill(a > 0, b.sum()), [(3, 3), (2,)]),
}


@pytest.mark.parametrize("name", sorted(MATRIX))
def test_matrix_ops_match_torch(name):
    fn, shapes = MATRIX[name]
    arrays = _inputs(shapes)
    want, _ = _run(fn, torch, arrays, "float64")
    got, _ = _run(fn, hookgrad, arrays, "float64")
    assert_same(normalize(got), normalize(want), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", sorted(MATRIX))
def test_matrix_ops_gradcheck(name):
    fn, shapes = MATRIX[name]
    _gradcheck(fn, _inputs(shapes))


DOUBLE_BACKWARD = {
    "tanh_mul": lambda T, x: (x.tanh() * x).sum(),
    "exp_pow": lambda T, x: (x.exp() * x ** 3).sum(),
    "softmax": lambda T, x: (x.softmax(-1) * x).sum(),
    "log_softmax": lambda T, x: (x.log_softmax(-1) ** 2).sum(),
    "matmul": lambda T, x: ((x @ x.t()).sigmoid()).sum(),
    "norm": lambda T, x: x.norm() * x.sum(),
    "var": lambda T, x: x.var(1).sum() * x.mean(),
    "index": lambda T, x: (x[0] * x[:, 1:2]).sum() + x[[1, 1]].pow(2).sum(),
    "max": lambda T, x: x.max(1)[0].pow(2).sum(),
    "cat_split": lambda T, x: T.cat([x, x * 2], 0).split(1, 0)[2].pow(2).sum(),
}


@pytest.mark.parametrize("name", sorted(DOUBLE_BACKWARD))
def test_double_backward_matches_torch(name):
    fn = DOUBLE_BACKWARD[name]
    arr = _inputs([(3, 4)])[0]

    def scenario(T):
        x = T.tensor(arr, requires_grad=True)
        (g,) = T.autograd.grad(fn(T, x), x, create_graph=True)
        (gg,) = T.autograd.grad((g * g).sum(), x)
        return g, gg

    assert_same(normalize(scenario(hookgrad)), normalize(scenario(torch)), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["tanh_mul", "softmax", "matmul", "var"])
def test_gradgradcheck(name):
    fn = DOUBLE_BACKWARD[name]
    x = hookgrad.tensor(_inputs([(2, 3)])[0], requires_grad=True)
    assert hookgrad.autograd.gradgradcheck(lambda t: fn(hookgrad, t), (x,))


def test_softmax_with_dtype_sends_grad_back_in_input_dtype():
    def run(T):
        x = T.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
        y = T.softmax(x, 1, dtype=T.float64) * T.tensor([[1.0, 0.0, 2.0]], dtype=T.float64)
        z = T.log_softmax(x, 1, dtype=T.float64).sum()
        (y.sum() + z).backward()
        return y, x.grad
    assert_same(normalize(run(hookgrad)), normalize(run(torch)))
