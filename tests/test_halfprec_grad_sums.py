"""Gradients summed over broadcast dimensions in half precision (bfloat16, float16): a bias's gradient,
a broadcast operand's, an expanded tensor's, a convolution bias's. torch sums them in float32 and
rounds once; a running sum kept in half precision rounds at every step and lands ulps away (what
autocast's bfloat16 linear layers showed in a learning-rate range test). Compared bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

from difftest import differential

pytest.importorskip("ml_dtypes")

DTYPES = ["bfloat16", "float16"]


def _values(T, seed, *shape, dtype="float32", requires_grad=False):
    array = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    tensor = T.tensor(array).to(getattr(T, dtype))
    return tensor.requires_grad_() if requires_grad else tensor


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch_shape", [(64,), (8, 8), (4, 4, 4)])
@differential(rtol=0, atol=0)
def test_linear_bias_gradient_sums_once(T, dtype, batch_shape):
    x = _values(T, 1, *batch_shape, 5, dtype=dtype)
    weight = _values(T, 2, 7, 5, dtype=dtype, requires_grad=True)
    bias = _values(T, 3, 7, dtype=dtype, requires_grad=True)
    T.nn.functional.linear(x, weight, bias).backward(_values(T, 4, *batch_shape, 7, dtype=dtype))
    return weight.grad, bias.grad


@pytest.mark.parametrize("dtype", DTYPES)
@differential(rtol=0, atol=0)
def test_addmm_and_broadcast_operands_sum_once(T, dtype):
    grad = _values(T, 5, 48, 6, dtype=dtype)
    bias = _values(T, 6, 6, dtype=dtype, requires_grad=True)
    T.addmm(bias, _values(T, 7, 48, 3, dtype=dtype), _values(T, 8, 3, 6, dtype=dtype)).backward(grad)
    row = _values(T, 9, 1, 6, dtype=dtype, requires_grad=True)
    column = _values(T, 10, 48, 1, dtype=dtype, requires_grad=True)
    (_values(T, 11, 48, 6, dtype=dtype) * row + column).backward(grad)
    expanded = _values(T, 12, 6, dtype=dtype, requires_grad=True)
    (expanded.expand(48, 6) * 1).backward(grad)
    return bias.grad, row.grad, column.grad, expanded.grad


@pytest.mark.parametrize("dtype", DTYPES)
@differential(rtol=0, atol=0)
def test_conv_bias_gradient_sums_once(T, dtype):
    x = _values(T, 13, 4, 3, 9, 9, dtype=dtype)
    weight = _values(T, 14, 6, 3, 3, 3, dtype=dtype, requires_grad=True)
    bias = _values(T, 15, 6, dtype=dtype, requires_grad=True)
    out = T.nn.functional.conv2d(x, weight, bias)
    out.backward(_values(T, 16, *out.shape, dtype=dtype))
    return bias.grad


@differential(rtol=0, atol=0)
def test_autocast_linear_float32_bias_gradient(T):
    """autocast runs the layer in bfloat16; the float32 bias gets the bfloat16 batch sum, widened."""
    layer = T.nn.Linear(5, 3)
    with T.no_grad():
        layer.weight.copy_(_values(T, 17, 3, 5))
        layer.bias.copy_(_values(T, 18, 3))
    with T.autocast("cpu", dtype=T.bfloat16):
        out = layer(_values(T, 19, 40, 5))
        loss = (out.float() ** 2).sum()
    loss.backward()
    return out.dtype, layer.weight.grad, layer.bias.grad
