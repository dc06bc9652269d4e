"""Every differentiable op: forward values and gradients compared with torch (broadcasting shapes
included), and a float64 finite-difference gradcheck on hookgrad."""
import numpy as np
import pytest

import hookgrad
from difftest import assert_same, normalize
from op_cases import BINARY, DOUBLE_BACKWARD, MATRIX, UNARY

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


@pytest.mark.parametrize("name", sorted(n for n in UNARY if n not in ("index_mask", "to64", "max", "amax", "amin", "max1", "min1k",
                                                   "min", "masked_select")))
def test_unary_gradcheck(name):
    fn, opts = UNARY[name]
    _gradcheck(fn, _inputs([(2, 3, 3)], **opts))


@pytest.mark.parametrize("name", sorted(n for n in BINARY if n not in ("maximum", "minimum", "where", "clamp_t")))
def test_binary_gradcheck(name):
    fn, opts = BINARY[name]
    _gradcheck(fn, _inputs([(2, 3), (3,)], **opts))


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
