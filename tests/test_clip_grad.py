"""nn.utils against torch: clip_grad_norm_ (all norm types, non-finite totals), clip_grad_value_,
get_total_norm / clip_grads_with_norm_, parameters_to_vector and vector_to_parameters."""
import numpy as np
import pytest

from difftest import catch, differential, warns

RNG = np.random.default_rng(7)
ARRAYS = [RNG.standard_normal((3, 4)).astype(np.float32), RNG.standard_normal(5).astype(np.float32) * 3,
          RNG.standard_normal((2, 2, 2)).astype(np.float32) * 0.1]


GRADS = [RNG.standard_normal(a.shape).astype(np.float32) * (i + 1) for i, a in enumerate(ARRAYS)]


def params_with_grads(T, scale=1.0, skip=None):
    params = [T.tensor(a, requires_grad=True) for a in ARRAYS]
    for i, (p, g) in enumerate(zip(params, GRADS)):
        if i != skip:
            p.grad = T.tensor(g * np.float32(scale))
    return params


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.0, 0.5, float("inf"), "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
@differential(rtol=1e-5, atol=1e-6)
def test_clip_grad_norm(T, norm_type, max_norm):
    params = params_with_grads(T, skip=1)
    total = T.nn.utils.clip_grad_norm_(params, max_norm=max_norm, norm_type=norm_type)
    return total, [p.grad for p in params]


@differential
def test_clip_grad_norm_single_tensor_and_generator(T):
    p = params_with_grads(T)[0]
    total = T.nn.utils.clip_grad_norm_(p, 1.0)
    params = params_with_grads(T)
    total2 = T.nn.utils.clip_grad_norm_((q for q in params), 0.1)
    empty = warns(T.nn.utils.clip_grad_norm_, (q for q in []), 1.0)
    none = T.nn.utils.clip_grad_norm_([T.zeros(2, requires_grad=True)], 1.0)
    return total, p.grad, total2, [q.grad for q in params], empty, none


@differential
def test_clip_grad_norm_non_finite(T):
    params = params_with_grads(T)
    g = GRADS[0].copy()
    g[0, 0] = np.inf
    params[0].grad = T.tensor(g)
    err = catch(T.nn.utils.clip_grad_norm_, params, 1.0, error_if_nonfinite=True)
    total = T.nn.utils.clip_grad_norm_(params, 1.0)
    nan_params = params_with_grads(T)
    g = GRADS[1].copy()
    g[0] = np.nan
    nan_params[1].grad = T.tensor(g)
    nan_err = catch(T.nn.utils.clip_grad_norm_, nan_params, 1.0, 2.0, True)
    return err, total, [p.grad for p in params], nan_err


@differential
def test_clip_grad_norm_float64(T):
    p = T.tensor(ARRAYS[0].astype(np.float64), requires_grad=True)
    p.grad = T.tensor(ARRAYS[0].astype(np.float64) * 10)
    total = T.nn.utils.clip_grad_norm_([p], 2.0)
    return total, p.grad


@differential
def test_total_norm_then_clip(T):
    params = params_with_grads(T)
    total = T.nn.utils.get_total_norm([p.grad for p in params], norm_type=2.0)
    T.nn.utils.clip_grads_with_norm_(params, 0.3, total)
    return total, [p.grad for p in params]


@pytest.mark.parametrize("clip_value", [0.1, 1, 5.0])
@differential
def test_clip_grad_value(T, clip_value):
    params = params_with_grads(T, scale=2.0, skip=2)
    grads_before = [p.grad for p in params]
    result = T.nn.utils.clip_grad_value_(params, clip_value)
    same_objects = all(p.grad is g for p, g in zip(params, grads_before))
    return result, [p.grad for p in params], same_objects


@differential
def test_clip_grad_value_keeps_nan(T):
    p = T.tensor(np.zeros(3, dtype=np.float32), requires_grad=True)
    p.grad = T.tensor(np.array([np.nan, -7.0, 0.25], dtype=np.float32))
    T.nn.utils.clip_grad_value_(p, 0.5)
    return p.grad


@differential
def test_parameters_to_vector_and_back(T):
    params = [T.tensor(a, requires_grad=True) for a in ARRAYS]
    vec = T.nn.utils.parameters_to_vector(params)
    (vec * T.arange(vec.numel(), dtype=T.float32)).sum().backward()
    new = T.tensor(np.linspace(-1, 1, vec.numel(), dtype=np.float32))
    T.nn.utils.vector_to_parameters(new, params)
    new.mul_(2)  # the parameters now share memory with the vector
    return (vec, vec.requires_grad, [p.grad for p in params], params,
            catch(T.nn.utils.vector_to_parameters, [1.0, 2.0], params))
