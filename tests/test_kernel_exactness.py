"""Kernels rewritten for speed give torch's values bit for bit, signs of zero included
(values compare equal across -0.0 and +0.0, so the signs are compared as well)."""
from __future__ import annotations

import numpy as np
import pytest

from difftest import differential


def _with_signs(T, t):
    return [t, T.signbit(t)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(2, 3, 8, 8), (1, 2, 7, 9), (3, 4, 6), (2, 1, 4, 2)])
@pytest.mark.parametrize("values", ["finite", "with_inf_nan"])
@differential(rtol=0, atol=0)
def test_max_pool_2x2_gradient_places_values_as_torch(T, dtype, shape, values):
    rng = np.random.default_rng(sum(shape))
    x = rng.integers(-2, 3, size=shape).astype(dtype)  # many ties: torch's first-winner rule
    x[x == 0] = -0.0 * (rng.random(int((x == 0).sum())) < 0.5)
    out_shape = shape[:-2] + (shape[-2] // 2, shape[-1] // 2)
    choices = [-0.0, 0.0, 1.5, -2.0] + ([np.inf, -np.inf, np.nan] if values == "with_inf_nan" else [])
    g = rng.choice(np.array(choices, dtype=dtype), size=out_shape)
    xt = T.tensor(x, requires_grad=True)
    y = T.nn.functional.max_pool2d(xt, 2)
    y.backward(T.tensor(g))
    return _with_signs(T, y) + _with_signs(T, xt.grad)


@differential(rtol=0, atol=0)
def test_max_pool_2x2_on_a_non_contiguous_input(T):
    x = T.tensor(np.random.default_rng(1).standard_normal((2, 8, 6, 3)).astype("float32"))
    x = x.permute(0, 3, 1, 2).requires_grad_()  # (2, 3, 8, 6), channels last in memory
    y = T.nn.functional.max_pool2d(x, 2)
    y.backward(-T.ones_like(y))
    return _with_signs(T, y) + _with_signs(T, x.grad)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@differential(rtol=0, atol=0)
def test_relu_gradient_passes_where_the_result_is_nan(T, dtype):
    # torch's threshold_backward zeroes where result <= 0: a NaN result lets its gradient through
    x = T.tensor([float("nan"), 1.0, -1.0, 0.0, -0.0, float("-nan")], dtype=getattr(T, dtype), requires_grad=True)
    g = T.tensor([2.0, -3.0, float("inf"), float("nan"), -5.0, 7.0], dtype=getattr(T, dtype))
    y = T.relu(x)
    y.backward(g)
    out = _with_signs(T, y) + _with_signs(T, x.grad)
    x.grad = None
    (gx,) = T.autograd.grad(T.relu(x), x, g.clone().requires_grad_(), create_graph=True)
    (ggx,) = T.autograd.grad(gx.sum(), x, allow_unused=True, materialize_grads=True)
    return out + [gx, ggx]

