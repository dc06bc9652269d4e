"""Numerics that exist for speed (GELU's erf through SciPy), checked value by value against torch."""
import math

import numpy as np
import pytest
import torch

import hookgrad
from difftest import catch, differential, run_both, assert_same

EDGES = [float("inf"), float("-inf"), float("nan"), -0.0, 0.0, -40.0, -10.0, -5.0, -1e-30, 1e-30, 1e-3,
         0.5, 5.0, 40.0, 3.4e38, -3.4e38]


def _gelu_case(T, values, dtype, approximate):
    rows = []
    for v in values:  # one element at a time: torch's exact (non-vectorized) kernel path
        x = T.tensor([v], dtype=getattr(T, dtype), requires_grad=True)
        y = T.nn.functional.gelu(x, approximate=approximate)
        y.backward(T.ones_like(y))
        rows += [y, x.grad]
        if v == 0:  # the sign of a zero comes through
            rows.append(math.copysign(1.0, y.item()))
    return rows


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_edge_values_match_torch(approximate, dtype):
    got, want = run_both(_gelu_case, EDGES, dtype, approximate)
    tol = dict(rtol=1e-6, atol=1e-7) if dtype == "float32" else dict(rtol=1e-12, atol=1e-14)
    assert_same(got, want, **tol)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_gelu_arrays_match_torch(approximate, dtype):
    x = np.random.default_rng(3).standard_normal((64, 33)) * 4
    g = np.random.default_rng(4).standard_normal((64, 33))

    def case(T):
        xt = T.tensor(x, dtype=getattr(T, dtype), requires_grad=True)
        y = T.nn.functional.gelu(xt, approximate=approximate)
        y.backward(T.tensor(g, dtype=getattr(T, dtype)))
        return [y, xt.grad, y.grad_fn is not None and y.grad_fn.name()]

    got, want = run_both(lambda T: case(T))
    if dtype == "float16":
        tol = dict(rtol=2e-3, atol=2e-3)
    elif dtype == "float32":
        # torch's vectorized float32 kernel rounds differently where 1 + erf (or 1 + tanh) cancels,
        # for x < -3: absolute differences up to a few float32 ulps of the O(10) intermediate terms
        tol = dict(rtol=1e-5, atol=5e-6)
    else:
        tol = dict(rtol=1e-12, atol=1e-14)
    assert_same(got, want, **tol)


def test_gelu_float32_is_computed_in_float32_and_accurate():
    from scipy.special import ndtr
    x = np.linspace(-9, 9, 20001).astype(np.float32)
    y = hookgrad.nn.functional.gelu(hookgrad.tensor(x))
    assert y.dtype == hookgrad.float32
    exact = x.astype(np.float64) * ndtr(x.astype(np.float64))
    # within float32 rounding of the formula 0.5 x (1 + erf(x / sqrt 2)) (cancellation for x < 0)
    assert np.max(np.abs(y.numpy() - exact)) < 1e-6


def test_gelu_double_backward_gradcheck():
    x = hookgrad.tensor(np.random.default_rng(0).standard_normal(12) * 3, dtype=hookgrad.float64,
                        requires_grad=True)
    for approximate in ("none", "tanh"):
        fn = lambda t: hookgrad.nn.functional.gelu(t, approximate=approximate)  # noqa: E731
        assert hookgrad.autograd.gradcheck(fn, (x,))
        assert hookgrad.autograd.gradgradcheck(fn, (x,))


@differential
def test_gelu_bad_input(T):
    return [catch(T.nn.functional.gelu, T.tensor([1, 2])),
            catch(T.nn.functional.gelu, T.tensor([1.0]), approximate="fast")]


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_gelu_scalar_empty_and_strided_inputs(approximate, dtype):
    base = np.random.default_rng(5).standard_normal((4, 6)) * 3

    def case(T):
        dt = getattr(T, dtype)
        out = []
        for x in (T.tensor(-1.5, dtype=dt), T.zeros(0, 3, dtype=dt), T.tensor(base, dtype=dt)[:, ::2]):
            x.requires_grad_()
            y = T.nn.functional.gelu(x, approximate=approximate)
            y.sum().backward()
            out += [y, x.grad]
        return out

    got, want = run_both(lambda T: case(T))
    tol = {"float16": dict(rtol=2e-3, atol=2e-3), "float32": dict(rtol=1e-5, atol=1e-6),
           "float64": dict(rtol=1e-12, atol=1e-14)}[dtype]
    assert_same(got, want, **tol)


def _gelu_input(T, dtype="float32"):
    values = np.random.default_rng(6).standard_normal((5, 7)) * 3
    return T.tensor(values, dtype=getattr(T, dtype), requires_grad=True)


@differential(rtol=1e-5, atol=1e-6)
def test_gelu_backward_twice_with_retained_graph(T):
    # the backward may reuse the forward's Phi(x): a second pass over the same graph sees it again
    x = _gelu_input(T)
    g = T.tensor(np.random.default_rng(7).standard_normal((5, 7)), dtype=T.float32)
    y = T.nn.functional.gelu(x * 1.5)
    y.backward(g, retain_graph=True)
    first = x.grad.clone()
    y.backward(g)
    return [first, x.grad]


@differential(rtol=1e-5, atol=1e-6)
def test_gelu_backward_sees_what_the_unpack_hook_returns(T):
    x = _gelu_input(T)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t * 2 - 1):
        y = T.nn.functional.gelu(x * 1.0)
    y.sum().backward()
    return [y, x.grad]


@differential
def test_gelu_backward_after_its_input_changed_in_place(T):
    x = _gelu_input(T)
    h = x * 1.0
    y = T.nn.functional.gelu(h)
    h.add_(1.0)
    return [catch(y.sum().backward)]


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_gelu_backward_reusing_the_forward_cdf_in_other_dtypes(dtype):
    def case(T):
        x = _gelu_input(T, dtype)
        y = T.nn.functional.gelu(x)
        y.backward(T.ones_like(y))
        return [y, x.grad]

    got, want = run_both(case)
    tol = dict(rtol=2e-3, atol=2e-3) if dtype == "float16" else dict(rtol=1e-12, atol=1e-14)
    assert_same(got, want, **tol)


# ---- row reductions through BLAS and halving trees (softmax, layer norm, group norm) ----------
def _rows(T, shape, dtype, seed=8, scale=3.0):
    values = np.random.default_rng(seed).standard_normal(shape) * scale
    return T.tensor(values, dtype=getattr(T, dtype), requires_grad=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(4, 7), (3, 8), (2, 3, 9), (16, 64), (5, 127), (2, 4100), (6, 5, 33)])
def test_softmax_family_on_rows_of_every_length(shape, dtype):
    def case(T):
        out = []
        for fn in (T.softmax, T.log_softmax):
            for dim in (-1, 0):
                x = _rows(T, shape, dtype)
                y = fn(x, dim)
                y.backward(T.tensor(np.random.default_rng(9).standard_normal(shape), dtype=x.dtype))
                out += [y, x.grad]
        x = _rows(T, shape, dtype).detach()
        out.append(T.softmax(x.transpose(0, -1), -1))  # a non-contiguous input
        return out

    got, want = run_both(case)
    # float32: log_softmax's gradient subtracts a sum of the row's gradients (about 64 in size for a
    # row of 4100), which either framework rounds in its own order
    tol = dict(rtol=1e-5, atol=1e-6 * max(1, shape[-1] // 100)) if dtype == "float32" else dict(rtol=1e-12, atol=1e-14)
    assert_same(got, want, **tol)


@differential(rtol=1e-5, atol=1e-6)
def test_softmax_rows_with_nan_inf_and_masked_entries(T):
    x = np.random.default_rng(10).standard_normal((6, 9)).astype(np.float32)
    x[0, 3] = np.nan
    x[1, 8] = np.inf
    x[2, :] = -np.inf
    x[3, ::2] = -np.inf
    x[4, 0] = 3e38
    t = T.tensor(x)
    return [T.softmax(t, -1), T.log_softmax(t, -1)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("normalized", [(9,), (128,), (4, 6), (3, 2, 5)])
def test_layer_norm_over_trailing_axes(normalized, dtype):
    shape = (3, 5) + normalized

    def case(T):
        out = []
        for affine in (True, False):
            ln = T.nn.LayerNorm(normalized, elementwise_affine=affine, dtype=getattr(T, dtype))
            if affine:
                with T.no_grad():
                    ln.weight.copy_(T.tensor(np.linspace(0.5, 1.5, ln.weight.numel()).reshape(normalized)))
                    ln.bias.copy_(T.tensor(np.linspace(-0.2, 0.3, ln.bias.numel()).reshape(normalized)))
            x = _rows(T, shape, dtype)
            y = ln(x)
            y.backward(T.tensor(np.random.default_rng(11).standard_normal(shape), dtype=x.dtype))
            out += [y, x.grad] + [p.grad for p in ln.parameters()]
            out.append(ln(_rows(T, shape, dtype).transpose(0, 1)))  # non-contiguous input
        return out

    got, want = run_both(case)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    assert_same(got, want, **tol)


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_group_norm_rows(groups):
    def case(T):
        gn = T.nn.GroupNorm(groups, 4)
        x = _rows(T, (3, 4, 5, 6), "float32")
        y = gn(x)
        y.backward(T.tensor(np.random.default_rng(12).standard_normal((3, 4, 5, 6)), dtype=x.dtype))
        return [y, x.grad, gn.weight.grad, gn.bias.grad]

    got, want = run_both(case)
    assert_same(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n", [8, 9, 33, 100, 127])
@differential
def test_softmax_row_maximum_at_every_position(T, n):
    # exp overflows float32 unless each row is shifted by its true maximum, wherever it sits
    x = T.tensor(np.eye(n, dtype=np.float32) * 200.0 - 50.0)
    return [T.softmax(x, -1), T.log_softmax(x, -1)]
