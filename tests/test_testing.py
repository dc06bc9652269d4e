"""torch.testing.assert_close / assert_allclose / make_tensor against torch: outcome, exception
class and the full message text (framework names normalized)."""
import importlib
import math
import re

import numpy as np
import pytest

from difftest import catch, differential, warns


def outcome(T, *args, **kwargs):
    testing = importlib.import_module(T.__name__ + ".testing")
    try:
        testing.assert_close(*args, **kwargs)
        return "ok"
    except Exception as exc:  # noqa: BLE001 - the class and text are what we compare
        return type(exc).__name__, str(exc)  # hookgrad's text must be torch's, word for word


def CASES(T):
    t = T.tensor
    nan, inf = math.nan, math.inf
    return [
        (t([1., 2., 3.]), t([1., 2.5, 3.1])),
        (t([[1., 2.], [3., 4.]]), t([[1., 2.], [3., 4.1]])),
        (t(1.), t(2.)),
        (t(0.), t(1e-3)),
        (t([1, 2, 3]), t([1, 2, 4])),
        (t([1, 2, 3]), t([1, 2, 6])),
        (t([1., 2.]), t([1, 2])),
        (t([1., 2.]), t([1., 2., 3.])),
        (t([1., nan]), t([1., nan])),
        (t([1., inf]), t([1., inf])),
        (t([1., inf]), t([1., -inf])),
        (t([0., 0.]), t([0., 1e-3])),
        (t([1., 2.], dtype=T.float64), t([1., 2.], dtype=T.float64) + 1e-6),
        (t([1., 2.], dtype=T.float64), t([1., 2.], dtype=T.float64) + 1e-8),
        (t([1., 2.], dtype=T.float16), t([1.001, 2.], dtype=T.float16)),
        (t([1., 2.], dtype=T.float16), t([1.01, 2.], dtype=T.float16)),
        (t([True, False]), t([True, True])),
        (t([1., 2.], requires_grad=True), t([1., 2.])),
        (t([1., 2.]), [1., 2.]),
        (t(np.arange(24.).reshape(2, 3, 4)), t(np.arange(24.).reshape(2, 3, 4) * 1.01)),
        (1.0, 1.0001), (1.0, 1.00000001), (1, 2), (1, 1.0), (True, False), (True, True),
        (None, None), (None, 0), ("a", "b"), (np.float32(1.0), np.float32(1.0)),
        ([1., 2.], [1., 2.5]), ((t(1.), t(2.)), (t(1.),)),
        ({"a": t(1.)}, {"a": t(1.5)}), ({"a": 1}, {"b": 1}),
        ({"w": [t([1., 2.]), t([3.])]}, {"w": [t([1., 2.]), t([3.5])]}),
        (np.array([1., 2.]), np.array([1., 2.1])),
        (np.array([1, 2]), np.array([1, 2])),
    ]


@pytest.mark.parametrize("index", range(37))
@differential
def test_assert_close_defaults(T, index):
    actual, expected = CASES(T)[index]
    return outcome(T, actual, expected)


@pytest.mark.parametrize("kwargs", [
    dict(rtol=1e-3), dict(atol=1e-3), dict(rtol=0.0, atol=0.0), dict(rtol=0.1, atol=0.0), dict(rtol=0.0, atol=0.6),
    dict(equal_nan=True), dict(check_dtype=False), dict(check_device=False), dict(msg="custom text"),
    dict(msg=lambda m: "prefix: " + m), dict(check_stride=True), dict(allow_subclasses=False),
], ids=lambda k: str(k) if "msg" not in k or isinstance(k["msg"], str) else "msg=callable")
@pytest.mark.parametrize("index", [0, 2, 4, 6, 8, 18, 20, 30, 32])
@differential
def test_assert_close_options(T, kwargs, index):
    actual, expected = CASES(T)[index]
    return outcome(T, actual, expected, **kwargs)


@differential
def test_mixed_dtype_tolerances_and_parameters(T):
    a = T.nn.Parameter(T.tensor([1., 2.]))
    b = T.tensor([1., 2.00001])
    return [outcome(T, a, b), outcome(T, b, a), outcome(T, T.tensor([1., 2.]), T.tensor([1., 2.000001], dtype=T.float64),
                                                       check_dtype=False),
            outcome(T, T.tensor([1, 2]), T.tensor([1., 2.0000001]), check_dtype=False),
            outcome(T, T.tensor([1., 2.]).t() if False else T.tensor([[1., 2.], [3., 4.]]).t(),
                    T.tensor([[1., 3.], [2., 4.]]), check_stride=True)]


@differential
def test_assert_allclose_deprecated(T):
    testing = importlib.import_module(T.__name__ + ".testing")
    return [warns(testing.assert_allclose, T.tensor([1., 2.]), T.tensor([1., 2.00001])),
            warns(testing.assert_allclose, T.tensor([1., math.nan]), [1., math.nan]),
            re.sub(r"(torch|hookgrad)\.", "", str(catch(testing.assert_allclose, T.tensor([1., 2.]),
                                                         T.tensor([1., 2.1])).message))]


@differential
def test_make_tensor(T):
    testing = importlib.import_module(T.__name__ + ".testing")
    T.manual_seed(0)
    out = []
    for dtype in (T.float32, T.float64, T.float16, T.int64, T.int32, T.int8, T.uint8, T.bool):
        x = testing.make_tensor(3, 50, dtype=dtype, device="cpu")
        values = x.double() if dtype != T.bool else x.long()
        out.append((x.dtype, tuple(x.shape), float(values.min()) >= (0 if dtype in (T.uint8, T.bool) else -9),
                    float(values.max()) < (2 if dtype == T.bool else 10 if dtype not in (T.float32, T.float64, T.float16) else 9),
                    x.requires_grad, x.is_contiguous()))
    y = testing.make_tensor((4, 5), dtype=T.float32, device="cpu", low=-1, high=1, requires_grad=True,
                            noncontiguous=True)
    z = testing.make_tensor(200, dtype=T.int64, device="cpu", low=-1, high=2, exclude_zero=True)
    w = testing.make_tensor([3], dtype=T.float64, device="cpu", low=2.5, high=2.6)
    big = testing.make_tensor(100, dtype=T.float32, device="cpu", low=-math.inf, high=math.inf)
    out.append((tuple(y.shape), y.requires_grad, y.is_contiguous(), y.is_leaf, float(y.detach().abs().max()) <= 1))
    out.append((bool((z != 0).all()), sorted(set(z.tolist())) <= [-1, 1]))
    out.append((bool((w >= 2.5).all() and (w < 2.6).all()), bool(T.isfinite(big).all())))
    errors = [
        catch(testing.make_tensor, 3, dtype=T.float32, device="cpu", low=2, high=1),
        catch(testing.make_tensor, 3, dtype=T.float32, device="cpu", low=math.nan),
        catch(testing.make_tensor, 3, dtype=T.int64, device="cpu", requires_grad=True),
        catch(testing.make_tensor, 3, dtype=T.uint8, device="cpu", low=300, high=400),
        catch(testing.make_tensor, 2, 2, dtype=T.float32, device="cpu", noncontiguous=True,
              memory_format=T.contiguous_format),
        warns(testing.make_tensor, 3, dtype=T.float32, device="cpu", low=1.0, high=1.0)[1],
    ]
    return out, errors
