"""The per-op fast paths (a float tensor with a tensor of its dtype or a Python number; unary ops on
float16/32/64; backward formulas on arrays when nothing records the backward) compute exactly what
the general paths compute, and behave as torch where they are visible."""
from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import hookgrad
from difftest import differential, warns
from hookgrad._ops import pointwise

FLOATS = ["float16", "float32", "float64"]
# unary ops whose backward also runs on arrays
ARRAY_BACKWARD_OPS = ["neg", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "tan", "tanh",
                      "atan", "reciprocal", "sigmoid", "sin", "cos", "sinh", "cosh"]


def _positive(dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random((3, 5)) * 0.8 + 0.1).astype(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ARRAY_BACKWARD_OPS)
def test_array_backward_is_bit_equal_to_the_recorded_formula(name, dtype):
    x = hookgrad.tensor(_positive(dtype), requires_grad=True)
    upstream = hookgrad.tensor(_positive(dtype, 1))
    getattr(x, name)().backward(upstream)  # nothing records this backward: the array formula
    on_arrays = x.grad
    upstream.requires_grad_()  # so that every formula's result is recorded, neg's too
    (recorded,) = hookgrad.autograd.grad(getattr(x, name)(), x, upstream, create_graph=True)  # Tensor ops
    assert recorded.grad_fn is not None
    assert on_arrays.dtype == recorded.dtype
    np.testing.assert_array_equal(on_arrays.numpy(), recorded.detach().numpy())


def test_array_backward_is_not_used_while_a_profile_records():
    x = hookgrad.tensor([0.5, 1.5], requires_grad=True)
    profiler = importlib.import_module("hookgrad.profiler")
    with profiler.profile() as prof:
        x.tanh().sum().backward()
    names = [e.name for e in prof.events()]
    # the formula's own ops are recorded, as torch's profiler shows them inside TanhBackward0
    assert "aten::mul" in names and "aten::rsub" in names


@differential(rtol=0, atol=0)
def test_binary_ops_with_python_numbers(T):
    x = T.tensor([[0.25, -1.5, 3.0], [2.0, -0.0, 7.5]])
    y = T.tensor([[1.0, 2.0, -3.0], [0.5, 4.0, -2.5]])
    out = [x * 1.5, x + 0.5, x - 2, x / 1.5, 1 - x, 2.5 * x, 3 + x, x * y, x + y, x - y, x / y]
    # 0.0 and -0.0 are equal numbers of different values: the signs of zero results differ
    out += [x * 0.0, x * -0.0, x * 0.0, x + -0.0, x - 0.0, -0.0 - x]
    for dtype in (T.float16, T.float64):
        z = x.to(dtype)
        out += [z * 1.1, z + 1e-3, z / 3, 1 - z, z * z.flip(0)]
    return out


@differential(rtol=0, atol=0)
def test_overflowing_numbers_give_inf_without_warnings(T):
    x = T.tensor([1.0, -2.0])
    return [warns(lambda: [x * 1e300, x + 1e300, x / 1e-300, 1e300 - x, x.half() * 1e10])]


@differential
def test_binary_fast_path_errors(T):
    from difftest import catch
    x = T.tensor([1.0, 2.0, 3.0])
    return [catch(lambda: x * T.ones(2)), catch(lambda: x + T.ones(4, 2)), catch(lambda: x * 2 ** 2000),
            catch(lambda: x / T.zeros(2, 2))]


def test_scalar_operand_cache_stays_bounded():
    x = hookgrad.tensor([1.0, 2.0])
    for _ in range(2000):
        x * float("nan")  # a new NaN object each time: never an equal key
    assert len(pointwise._SCALAR_OPERANDS) <= 256
    assert np.isnan((x * float("nan")).numpy()).all()


def test_sigmoid_half_is_computed_in_float32_and_rounded_once():
    import torch
    values = np.linspace(-12, 12, 4001).astype(np.float16)
    got = hookgrad.tensor(values).sigmoid().numpy()
    want = torch.tensor(values).sigmoid().numpy()
    np.testing.assert_array_equal(got, want)


def test_fast_paths_keep_warnings_quiet_for_inf_and_nan_arithmetic():
    x = hookgrad.tensor([0.0, np.inf, -np.inf, np.nan], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = (x * x / x - x + 1.0).exp().sigmoid().tanh().log()
        y.sum().backward()
    assert x.grad.shape == (4,)


BINARY_CASES = {
    "mul": lambda x, y: x * y, "mul_number": lambda x, y: x * 1.7, "number_mul": lambda x, y: 3 * x,
    "div": lambda x, y: x / y, "div_number": lambda x, y: x / 1.3, "rsub": lambda x, y: 1 - x,
    "rsub_alpha": lambda x, y: hookgrad.rsub(x, 2.5, alpha=3), "mul_broadcast": lambda x, y: x * y[0],
    "div_broadcast": lambda x, y: y / x[:, :1], "mul_self": lambda x, y: x * x,
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", sorted(BINARY_CASES))
def test_binary_backward_on_arrays_is_bit_equal_to_the_recorded_formula(case, dtype):
    fn = BINARY_CASES[case]
    x = hookgrad.tensor(_positive(dtype), requires_grad=True)
    y = hookgrad.tensor(_positive(dtype, 2), requires_grad=True)
    upstream = hookgrad.tensor(_positive(dtype, 1))
    out = fn(x, y)
    out.backward(upstream if out.shape == x.shape else upstream[: out.shape[0]])
    plain = [t.grad for t in (x, y)]
    upstream.requires_grad_()
    out = fn(x, y)
    wanted = [t for t in (x, y) if t.grad is not None]
    recorded = hookgrad.autograd.grad(out, wanted, upstream if out.shape == x.shape else upstream[: out.shape[0]],
                                      create_graph=True, allow_unused=True)
    for got, want in zip([g for g in plain if g is not None], recorded):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.numpy(), want.detach().numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "complex64"])
@pytest.mark.parametrize("n, m", [(5, 7), (300, 4096), (4096, 3)])
@differential(rtol=0, atol=0)
def test_outer_shaped_products(T, dtype, n, m):
    """(n, 1) @ (1, m) skips BLAS (NumPy's matmul runs that shape several times slower than the
    writes it needs); each element is one product, so the result is the product to the bit."""
    rng = np.random.RandomState(n + m)
    a = T.tensor(rng.randn(n, 1) * 3).to(getattr(T, dtype))
    b = T.tensor(rng.randn(1, m) * 3).to(getattr(T, dtype))
    out = T.empty(n, m, dtype=a.dtype)
    T.matmul(a, b, out=out)
    return a @ b, T.mm(a, b), out, a.T.T @ b[:, : m // 2 + 1]


@differential
def test_linear_layer_at_batch_one(T):
    """A linear layer's weight gradient at batch 1 is the outer product of the output gradient and the input."""
    T.manual_seed(0)
    layer = T.nn.Linear(784, 1024)
    x = T.tensor(np.random.RandomState(0).randn(1, 784).astype(np.float32), requires_grad=True)
    layer(x).tanh().sum().backward()
    return layer.weight.grad, layer.bias.grad, x.grad, layer.weight.grad.is_contiguous()
