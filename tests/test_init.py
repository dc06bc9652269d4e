"""Differential tests of nn.init: deterministic initialisers exactly; random ones by their
range and statistics (the two frameworks draw different numbers); errors and warnings."""
from __future__ import annotations

import math

import numpy as np
import pytest

from difftest import catch, differential, warns


def _arr(t):
    return np.array(t.detach().tolist(), dtype=np.float64)


@pytest.mark.parametrize("name,param", [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None),
                                        ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
                                        ("leaky_relu", 1), ("selu", None), ("conv_transpose3d", None)])
@differential
def test_calculate_gain(T, name, param):
    return T.nn.init.calculate_gain(name, param)


@differential
def test_calculate_gain_errors(T):
    g = T.nn.init.calculate_gain
    return catch(g, "softmax"), catch(g, "leaky_relu", True), catch(g, "leaky_relu", "x")


@pytest.mark.parametrize("shape", [(3, 4), (5, 2, 3), (4, 3, 2, 2), (2, 2, 1, 1, 3)])
@differential
def test_fan_in_fan_out(T, shape):
    return T.nn.init._calculate_fan_in_and_fan_out(T.empty(*shape))


@differential
def test_fan_errors(T):
    f = T.nn.init._calculate_fan_in_and_fan_out
    return catch(f, T.empty(3)), catch(T.nn.init._calculate_correct_fan, T.empty(2, 2), "fan_avg")


@differential
def test_deterministic_initialisers(T):
    init = T.nn.init
    w = T.empty(2, 3)
    out = [init.constant_(w, 0.5).clone(), init.ones_(w).clone(), init.zeros_(w).clone(), init.eye_(w).clone(),
           init.eye_(T.empty(3, 2))]
    return out, init.constant_(w, 2) is w


@differential
def test_initialisers_on_parameter_keep_identity_and_leaf(T):
    p = T.nn.Parameter(T.empty(3, 4))
    r = T.nn.init.xavier_uniform_(p)
    T.nn.init.zeros_(p)
    return r is p, p.requires_grad, p.is_leaf, p.grad_fn is None, p


@differential
def test_initialiser_int_tensor(T):
    t = T.zeros(2, 2, dtype=T.int64)
    T.nn.init.constant_(t, 3)
    T.nn.init.eye_(T.zeros(2, 2, dtype=T.int64))
    return t


@pytest.mark.parametrize("dims,groups", [(3, 1), (4, 1), (5, 1), (4, 2)])
@differential
def test_dirac(T, dims, groups):
    shape = {3: (4, 2, 3), 4: (4, 2, 3, 3), 5: (2, 2, 3, 1, 3)}[dims]
    return T.nn.init.dirac_(T.empty(*shape), groups=groups)


@differential
def test_shape_errors(T):
    init = T.nn.init
    return (catch(init.eye_, T.empty(2, 2, 2)), catch(init.dirac_, T.empty(2, 2)),
            catch(init.dirac_, T.empty(3, 2, 2), groups=2), catch(init.orthogonal_, T.empty(3)),
            catch(init.sparse_, T.empty(3), 0.5), catch(init.xavier_uniform_, T.empty(4)),
            catch(init.kaiming_normal_, T.empty(2, 2), mode="bad"))


@differential
def test_kaiming_zero_element_warns(T):
    t = T.empty(0, 3)
    return warns(T.nn.init.kaiming_uniform_, t)[1], warns(T.nn.init.kaiming_normal_, t)[1]


@differential
def test_trunc_normal_far_mean_warns(T):
    res, w = warns(T.nn.init.trunc_normal_, T.empty(50), mean=10.0, std=1.0, a=-2.0, b=2.0)
    return w, bool(((_arr(res) >= -2) & (_arr(res) <= 2)).all())


@differential
def test_deprecated_aliases_warn(T):
    init = T.nn.init
    return [warns(f, T.empty(2, 2))[1] for f in (init.uniform, init.normal, init.xavier_uniform,
                                                  init.xavier_normal, init.kaiming_uniform, init.kaiming_normal,
                                                  init.orthogonal, init.eye)], warns(init.constant, T.empty(2), 1.0)[1]


# ------------------------------------------------------------------------------------------
# random initialisers: ranges and statistics
# ------------------------------------------------------------------------------------------
def _stats(arr):
    return float(arr.min()), float(arr.max()), float(arr.mean()), float(arr.std())


@differential
def test_uniform_range(T):
    t = T.nn.init.uniform_(T.empty(200, 50), -0.5, 1.5)
    lo, hi, mean, std = _stats(_arr(t))
    return lo >= -0.5, hi <= 1.5, abs(mean - 0.5) < 0.05, abs(std - 2 / math.sqrt(12)) < 0.05, t.dtype


@differential
def test_normal_stats(T):
    t = T.nn.init.normal_(T.empty(200, 50, dtype=T.float64), 1.0, 2.0)
    lo, hi, mean, std = _stats(_arr(t))
    return abs(mean - 1.0) < 0.1, abs(std - 2.0) < 0.1, t.dtype


@pytest.mark.parametrize("a,b", [(-2.0, 2.0), (-0.1, 0.1), (0.5, 3.0)])
@differential
def test_trunc_normal_bounds(T, a, b):
    t = T.nn.init.trunc_normal_(T.empty(100, 40), 0.0, 1.0, a, b)
    arr = _arr(t)
    return bool(((arr >= a) & (arr <= b)).all()), bool(arr.std() > 0)


@differential
def test_xavier_bounds(T):
    t = T.empty(30, 70)
    T.nn.init.xavier_uniform_(t, gain=2.0)
    bound = 2.0 * math.sqrt(6.0 / 100)
    arr = _arr(t)
    n = T.nn.init.xavier_normal_(T.empty(300, 100))
    return bool(np.abs(arr).max() <= bound), bool(np.abs(arr).max() > 0.8 * bound), \
        abs(_arr(n).std() - math.sqrt(2.0 / 400)) < 0.005


@pytest.mark.parametrize("mode", ["fan_in", "fan_out", "FAN_OUT"])
@differential
def test_kaiming_uniform_bound(T, mode):
    t = T.empty(40, 10, 3, 3)
    T.nn.init.kaiming_uniform_(t, a=math.sqrt(5), mode=mode)
    fan = 90 if mode == "fan_in" else 360
    bound = math.sqrt(3.0) * math.sqrt(2.0 / (1 + 5)) / math.sqrt(fan)
    arr = _arr(t)
    return bool(np.abs(arr).max() <= bound + 1e-7), bool(np.abs(arr).max() > 0.9 * bound)


@differential
def test_kaiming_normal_std(T):
    t = T.nn.init.kaiming_normal_(T.empty(400, 100), nonlinearity="relu", mode="fan_out")
    return abs(_arr(t).std() - math.sqrt(2.0) / math.sqrt(400)) < 0.003


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 2, 2), (6, 6)])
@differential
def test_orthogonal(T, shape):
    t = T.nn.init.orthogonal_(T.empty(*shape), gain=2.0)
    flat = _arr(t).reshape(shape[0], -1)
    if flat.shape[0] <= flat.shape[1]:
        gram = flat @ flat.T
    else:
        gram = flat.T @ flat
    return bool(np.allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-4)), t.dtype


@differential
def test_sparse(T):
    t = T.nn.init.sparse_(T.empty(10, 6), sparsity=0.3, std=0.1)
    arr = _arr(t)
    return [int((arr[:, c] == 0).sum()) for c in range(6)]


@differential
def test_random_initialisers_do_not_record_history(T):
    p = T.nn.Parameter(T.empty(4, 4))
    init = T.nn.init
    for f in (init.uniform_, init.normal_, init.trunc_normal_, init.xavier_uniform_, init.xavier_normal_,
              init.kaiming_uniform_, init.kaiming_normal_, init.orthogonal_):
        f(p)
    return p.grad_fn is None, p.is_leaf, p.requires_grad


def test_manual_seed_makes_init_reproducible():
    import hookgrad

    hookgrad.manual_seed(0)
    a = hookgrad.nn.init.normal_(hookgrad.empty(5))
    hookgrad.manual_seed(0)
    b = hookgrad.nn.init.normal_(hookgrad.empty(5))
    assert a.tolist() == b.tolist()


def test_generator_argument():
    import hookgrad

    if not hasattr(hookgrad, "Generator"):
        pytest.skip("no hookgrad.Generator")
    g1 = hookgrad.Generator().manual_seed(3)
    g2 = hookgrad.Generator().manual_seed(3)
    a = hookgrad.nn.init.uniform_(hookgrad.empty(4), generator=g1)
    b = hookgrad.nn.init.uniform_(hookgrad.empty(4), generator=g2)
    assert a.tolist() == b.tolist()
