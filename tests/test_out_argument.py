"""``out=`` on the functions that take it in torch beyond the common ones (sorting, indexing, index
reductions, torch.special), differentially: the values written, the returned object's identity,
torch's dtype checks (class and message), the resize warning (and the line it names), and the refusal
of autograd through out=."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from difftest import differential


def _x(T):
    return T.tensor(np.array([[3.0, 1.0, 2.5], [0.5, 5.0, 4.0]]), dtype=T.float32)


# name -> (how to call it with out=, how many outputs it writes)
CASES = {
    "sort": (lambda T, x, out: T.sort(x, 1, descending=True, out=out), 2),
    "topk": (lambda T, x, out: T.topk(x, 2, out=out), 2),
    "take": (lambda T, x, out: T.take(x, T.tensor([0, 5, 2]), out=out), 1),
    "cummax": (lambda T, x, out: T.cummax(x, 1, out=out), 2),
    "cummin": (lambda T, x, out: T.cummin(x, 0, out=out), 2),
    "kthvalue": (lambda T, x, out: T.kthvalue(x, 2, out=out), 2),
    "mode": (lambda T, x, out: T.mode(x, out=out), 2),
    "argmax": (lambda T, x, out: T.argmax(x, out=out), 1),
    "argmin": (lambda T, x, out: T.argmin(x, dim=1, keepdim=True, out=out), 1),
    "expit": (lambda T, x, out: T.special.expit(x, out=out), 1),
    "gammaln": (lambda T, x, out: T.special.gammaln(x + 1, out=out), 1),
    "entr": (lambda T, x, out: T.special.entr(x / 6, out=out), 1),
    "erfcx": (lambda T, x, out: T.special.erfcx(x, out=out), 1),
    "i0e": (lambda T, x, out: T.special.i0e(x, out=out), 1),
    "i1": (lambda T, x, out: T.special.i1(x, out=out), 1),
    "i1e": (lambda T, x, out: T.special.i1e(x, out=out), 1),
    "ndtr": (lambda T, x, out: T.special.ndtr(x, out=out), 1),
    "ndtri": (lambda T, x, out: T.special.ndtri(x / 6, out=out), 1),
    "log_ndtr": (lambda T, x, out: T.special.log_ndtr(x, out=out), 1),
    "gammainc": (lambda T, x, out: T.special.gammainc(x + 1, x, out=out), 1),
    "gammaincc": (lambda T, x, out: T.special.gammaincc(x + 1, x, out=out), 1),
    "bessel_j0": (lambda T, x, out: T.special.bessel_j0(x, out=out), 1),
    "multigammaln": (lambda T, x, out: T.special.multigammaln(x + 2, 2, out=out), 1),
    "special.xlogy": (lambda T, x, out: T.special.xlogy(x, x + 1, out=out), 1),
    "special.xlogy scalar": (lambda T, x, out: T.special.xlogy(2.0, x, out=out), 1),
    "xlog1py": (lambda T, x, out: T.special.xlog1py(x, x, out=out), 1),
    "zeta": (lambda T, x, out: T.special.zeta(x + 2, x + 1, out=out), 1),
    "modified_bessel_k1": (lambda T, x, out: T.special.modified_bessel_k1(x + 1, out=out), 1),
    "spherical_bessel_j0": (lambda T, x, out: T.special.spherical_bessel_j0(x, out=out), 1),
}


def _outcome(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("ok", fn())
        except Exception as exc:  # noqa: BLE001 - the class and message are the point
            result = (type(exc).__name__, str(exc))
    return result, [(w.category.__name__, os.path.basename(w.filename), str(w.message)[:60]) for w in caught]


def _outs(T, count, dtypes, size=0):
    made = tuple(T.full((size,), 7.0).to(dtype) for dtype in dtypes[:count])
    return made if count > 1 else made[0]


@pytest.mark.parametrize("name", sorted(CASES))
@differential
def test_out_writes_in_place_and_returns_it(T, name):
    call, count = CASES[name]
    x = _x(T)
    plain = call(T, x, None)
    dtypes = [r.dtype for r in plain] if count > 1 else [plain.dtype]
    results = []
    for size in (0, 6):  # empty outs are resized silently, others with torch's warning
        out = _outs(T, count, dtypes, size)
        (status, returned), caught = _outcome(lambda: call(T, x, out))
        same = [r is o for r, o in zip(returned, out)] if count > 1 else returned is out
        results.append((status, same, type(returned).__name__, out, caught))  # torch.return_types.sort_out, ...
    return plain, results


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", ["float64", "int64", "int32", "bool"])
@differential
def test_out_dtype_checks(T, name, dtype):
    call, count = CASES[name]
    x = _x(T)
    plain = call(T, x, None)
    dtypes = [r.dtype for r in plain] if count > 1 else [plain.dtype]
    checked = []
    for position in range(count):  # each out of a tuple in turn gets the other dtype
        wanted = list(dtypes)
        wanted[position] = getattr(T, dtype)
        out = _outs(T, count, wanted)
        checked.append(_outcome(lambda: call(T, x, out)))
    return checked


@pytest.mark.parametrize("name", sorted(CASES))
@differential
def test_out_refuses_autograd(T, name):
    call, count = CASES[name]
    x = _x(T).requires_grad_()
    plain = call(T, x.detach(), None)
    dtypes = [r.dtype for r in plain] if count > 1 else [plain.dtype]
    out = _outs(T, count, dtypes)
    outcome = _outcome(lambda: call(T, x, out))
    with T.no_grad():
        allowed = call(T, x, _outs(T, count, dtypes))
    written = allowed if count > 1 else (allowed,)
    return outcome, [(o.requires_grad, o.grad_fn is None) for o in written]


def _m(T):
    return T.tensor(np.array([[3.0, 1.0, 2.5], [0.5, 5.0, 4.0], [1.5, 2.0, 0.25]]), dtype=T.float32)


# the fixed-dtype kernels' own wording of a wrong out dtype (values and indices halves in turn)
EXACT = {
    "max": lambda T, m, out: T.max(m, 1, out=out), "min": lambda T, m, out: T.min(m, 0, out=out),
    "median": lambda T, m, out: T.median(m, 1, out=out), "nanmedian": lambda T, m, out: T.nanmedian(m, 1, out=out),
    "amax": lambda T, m, out: T.amax(m, 1, out=out), "amin": lambda T, m, out: T.amin(m, 0, out=out),
    "norm": lambda T, m, out: T.norm(m, out=out), "where": lambda T, m, out: T.where(m > 1, m, -m, out=out),
    "mm": lambda T, m, out: T.mm(m, m, out=out), "bmm": lambda T, m, out: T.bmm(m[None], m[None], out=out),
    "mv": lambda T, m, out: T.mv(m, m[0], out=out), "matmul": lambda T, m, out: T.matmul(m, m, out=out),
    "addmm": lambda T, m, out: T.addmm(m, m, m, out=out), "addmv": lambda T, m, out: T.addmv(m[0], m, m[1], out=out),
    "baddbmm": lambda T, m, out: T.baddbmm(m[None], m[None], m[None], out=out),
    "addbmm": lambda T, m, out: T.addbmm(m, m[None], m[None], out=out),
    "dot": lambda T, m, out: T.dot(m[0], m[1], out=out), "vdot": lambda T, m, out: T.vdot(m[0], m[1], out=out),
    "inner": lambda T, m, out: T.inner(m, m, out=out), "tensordot": lambda T, m, out: T.tensordot(m, m, 1, out=out),
    "outer": lambda T, m, out: T.outer(m[0], m[1], out=out), "addr": lambda T, m, out: T.addr(m, m[0], m[1], out=out),
    "linalg.inv": lambda T, m, out: T.linalg.inv(m, out=out),
    "linalg.matrix_norm": lambda T, m, out: T.linalg.matrix_norm(m, out=out),
}


@pytest.mark.parametrize("name", sorted(EXACT))
@differential
def test_out_dtype_wording_of_fixed_dtype_kernels(T, name):
    call = EXACT[name]
    m = _m(T)
    plain = call(T, m, None)
    pair = isinstance(plain, tuple)
    dtypes = [r.dtype for r in plain] if pair else [plain.dtype]
    checked = []
    for position in range(len(dtypes)):
        for dtype in (T.float64, T.int32):
            wanted = list(dtypes)
            wanted[position] = dtype
            out = _outs(T, len(dtypes), wanted)
            checked.append(_outcome(lambda: call(T, m, out)))
    return plain, checked
