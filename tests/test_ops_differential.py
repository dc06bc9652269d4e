"""Every differentiable op: forward values and gradients compared with torch (broadcasting shapes
included) in each dtype its registry row names, and float64 finite-difference gradchecks (first and
second order) on hookgrad, where the row asks for them."""
import numpy as np
import pytest

import hookgrad
from difftest import assert_same, check_functional, normalize
from op_cases import (BINARY, DOUBLE_BACKWARD, FUNCTIONAL, FUNCTIONAL_VS_TORCH, GRAD_FN, MATRIX, UNARY, columns,
                      option)

import torch

rng = np.random.default_rng(0)


def _inputs(shapes, positive=False, low=-2.0, high=2.0, dtype=np.float64):
    arrays = []
    for s in shapes:
        if np.dtype(dtype).kind in "iub":  # integers and truth values: drawn as such
            a = rng.integers(0 if positive else -3, 4, size=s)
            arrays.append(a > 0 if np.dtype(dtype) == np.bool_ else a.astype(dtype))
            continue
        a = rng.uniform(low, high, size=s).astype(dtype)
        if positive:
            a = np.abs(a) + 0.5
        arrays.append(a)
    return arrays


def _rows(table, rows):
    """(name, dtype) for every row of ``table`` and every dtype its ``dtypes`` column names."""
    return [(name, dtype) for name in sorted(rows) for dtype in option(table, rows[name], "dtypes")]


TOLERANCE = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-6, atol=1e-8)}


SHAPES_UNARY = [(2, 3, 4)]
SHAPES_BINARY = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1, 3), (2, 1)), ((), (2, 2)), ((3, 1), (1, 3))]


def _run(fn, T, arrays, dtype):
    floating = dtype.startswith("float")
    ts = [T.tensor(a, dtype=getattr(T, dtype), requires_grad=floating) for a in arrays]
    out = fn(T, *ts)
    if not out.requires_grad:
        return [out], None
    seed = np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)) if out.numel() else np.zeros(tuple(out.shape))
    out.backward(T.tensor(seed, dtype=out.dtype))
    return [out] + [t.grad for t in ts], out.grad_fn.name() if out.grad_fn else None


def _same_as_torch(table, row, arrays, dtype):
    _, _, options = columns(table, row)
    want, want_name = _run(row[0], torch, arrays, dtype)
    got, got_name = _run(row[0], hookgrad, arrays, dtype)
    tolerance = {**TOLERANCE.get(dtype, {}), **{k: options[k] for k in ("rtol", "atol") if k in options}}
    assert_same(normalize(got), normalize(want), **tolerance)
    if GRAD_FN in options["facts"]:
        assert got_name == want_name


@pytest.mark.parametrize("name,dtype", _rows("unary", UNARY))
def test_unary_matches_torch(name, dtype):
    _same_as_torch("unary", UNARY[name], _inputs(SHAPES_UNARY, dtype=dtype, **_draw(UNARY[name][1])), dtype)


@pytest.mark.parametrize("name,dtype", _rows("binary", BINARY))
@pytest.mark.parametrize("shapes", SHAPES_BINARY, ids=str)
def test_binary_matches_torch_broadcasting(name, dtype, shapes):
    _same_as_torch("binary", BINARY[name], _inputs(shapes, dtype=dtype, **_draw(BINARY[name][1])), dtype)


def _draw(options):
    return {"positive": options.get("positive", False)}


def _gradcheck(fn, arrays):
    ts = [hookgrad.tensor(a, dtype=hookgrad.float64, requires_grad=True) for a in arrays]
    assert hookgrad.autograd.gradcheck(lambda *xs: fn(hookgrad, *xs), ts, eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", sorted(n for n in UNARY if option("unary", UNARY[n], "gradcheck")))
def test_unary_gradcheck(name):
    fn, opts = UNARY[name]
    _gradcheck(fn, _inputs([(2, 3, 3)], **_draw(opts)))


@pytest.mark.parametrize("name", sorted(n for n in BINARY if option("binary", BINARY[n], "gradcheck")))
def test_binary_gradcheck(name):
    fn, opts = BINARY[name]
    _gradcheck(fn, _inputs([(2, 3), (3,)], **_draw(opts)))


@pytest.mark.parametrize("name,dtype", _rows("matrix", MATRIX))
def test_matrix_ops_match_torch(name, dtype):
    _same_as_torch("matrix", MATRIX[name], _inputs(MATRIX[name][1], dtype=dtype), dtype)


@pytest.mark.parametrize("name", sorted(n for n in MATRIX if option("matrix", MATRIX[n], "gradcheck")))
def test_matrix_ops_gradcheck(name):
    fn, shapes = MATRIX[name][:2]
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


# ---- nn.functional: FUNCTIONAL (gradcheck, gradgradcheck) and FUNCTIONAL_VS_TORCH (against torch) ----
@pytest.mark.parametrize("name", sorted(n for n in FUNCTIONAL if option("functional", FUNCTIONAL[n], "gradcheck")))
def test_functional_gradcheck(name):
    fn, inputs, _ = columns("functional", FUNCTIONAL[name])
    assert hookgrad.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)


def functional_gradgradcheck(fn, inputs, **kw):
    """gradcheck of the map inputs -> (create_graph) gradients of ``fn`` against a fixed random cotangent.

    Grad mode is switched on inside, because gradcheck evaluates the function under no_grad for its
    finite differences, and the first gradients must still be built with a graph there.
    """
    outs = fn(*inputs)
    cot = hookgrad.tensor(np.random.default_rng(7).standard_normal(tuple(outs.shape)), dtype=hookgrad.float64)

    def first_grads(*args):
        with hookgrad.enable_grad():
            out = fn(*args)
            diff = [a for a in args if a.requires_grad]
            grads = hookgrad.autograd.grad(out, diff, cot, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return hookgrad.autograd.gradcheck(first_grads, inputs, **kw)


@pytest.mark.parametrize("name", sorted(n for n in FUNCTIONAL if option("functional", FUNCTIONAL[n], "gradgradcheck")))
def test_functional_gradgradcheck(name):
    fn, inputs, _ = columns("functional", FUNCTIONAL[name])
    assert functional_gradgradcheck(fn, inputs, eps=1e-6, atol=1e-4, rtol=1e-3)


FUNCTIONAL_TOLERANCE = {"float64": dict(rtol=1e-6, atol=1e-7), "float32": dict(rtol=2e-5, atol=2e-6)}


@pytest.mark.parametrize("name,dtype", _rows("functional_vs_torch", FUNCTIONAL_VS_TORCH))
def test_functional_matches_torch(name, dtype):
    fn, arrays, options = columns("functional_vs_torch", FUNCTIONAL_VS_TORCH[name])
    arrays = [a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays]
    tolerance = {**FUNCTIONAL_TOLERANCE[dtype], **{k: options[k] for k in ("rtol", "atol") if k in options}}
    check_functional(fn, *arrays, grad_fn=GRAD_FN in options["facts"], **tolerance)
