"""torch's kernels never warn about NaN, infinities or overflow; NumPy's do unless told not to.
Every op of the registry, forward and backward, on inputs holding NaN, +-inf, 0 and +-1e300 (cast
to the row's dtype), must run without a RuntimeWarning -- first checked on torch itself for a sample,
so the expectation is torch's."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import hookgrad
import op_cases

_SPECIAL = [np.nan, np.inf, -np.inf, 0.0, 1e300, -1e300]


def _poisoned(shape, shift, seed=0):
    a = np.random.default_rng(seed).uniform(-2, 2, shape)
    flat = a.reshape(-1)
    for i, value in enumerate(_SPECIAL[:flat.size]):
        flat[(i * 7 + shift) % flat.size] = value
    return a


def _backward(out):
    out = out[0] if isinstance(out, (tuple, list)) else out
    if getattr(out, "requires_grad", False):
        out.backward(out.new_ones(out.shape))


def _floating(T, a, dtype="float64"):
    return T.tensor(a, dtype=getattr(T, dtype), requires_grad=True)


def _cases():
    for name, row in op_cases.UNARY.items():
        for dtype in ("float32", "float64"):
            yield f"unary:{name}:{dtype}", lambda T, fn=row[0], d=dtype, s=0: fn(T, _floating(T, _poisoned((3, 4), s), d))
    for name, row in op_cases.BINARY.items():
        for dtype in ("float32", "float64"):
            yield f"binary:{name}:{dtype}", lambda T, fn=row[0], d=dtype: fn(
                T, _floating(T, _poisoned((3, 4), 0), d), _floating(T, _poisoned((3, 4), 3, seed=1), d))
    for name, row in op_cases.MATRIX.items():
        yield f"matrix:{name}", lambda T, fn=row[0], shapes=row[1]: fn(
            T, *[_floating(T, _poisoned(s, i, seed=i)) for i, s in enumerate(shapes)])
    for name, (fn, arrays, _options) in op_cases.FUNCTIONAL_VS_TORCH.items():
        yield f"functional:{name}", lambda T, fn=fn, arrays=arrays: fn(
            T, T.nn.functional, *[_floating(T, _poisoned(a.shape, i, seed=i)) if a.dtype.kind == "f" else T.tensor(a)
                                  for i, a in enumerate(arrays)])


CASES = dict(_cases())


def _numpy_warnings(T, case):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            _backward(case(T))
        except Exception:  # noqa: BLE001 - an op may refuse such input; only warnings matter here
            pass
    return [f"{w.category.__name__}: {w.message}" for w in caught if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("name", sorted(CASES)[::25])
def test_torch_itself_does_not_warn(name):
    assert _numpy_warnings(torch, CASES[name]) == []


@pytest.mark.parametrize("group", ["unary", "binary", "matrix", "functional"])
def test_no_floating_point_warnings_forward_or_backward(group):
    noisy = {name: found for name, case in CASES.items() if name.startswith(group + ":")
             for found in [_numpy_warnings(hookgrad, case)] if found}
    assert noisy == {}, f"{len(noisy)} ops warn: " + "; ".join(f"{k}: {v[0]}" for k, v in sorted(noisy.items())[:20])
