"""torch.linalg's decompositions and the functions built on them, against torch: result types, the
outputs that carry no gradient (info, pivots, rank, residuals), errors, second derivatives."""
import warnings

import numpy as np
import pytest

import hookgrad
import torch
from difftest import assert_same, catch, differential, normalize, warns
from op_cases import LINALG, _spd

R = np.random.default_rng


def arr(*shape, seed=0):
    return R(seed).uniform(-2, 2, shape)


def both(fn, *arrays, grad=False):
    """``fn`` run on torch and on hookgrad with the same float64 inputs; both records normalized."""
    out = []
    for T in (torch, hookgrad):
        ts = [T.tensor(a, requires_grad=grad) for a in arrays]
        out.append(normalize(fn(T, *ts)))
    return out


# ---- second derivatives: every differentiable row of the registry block ----------------------------
SECOND_ORDER = sorted(n for n in LINALG if n not in ("linalg_lu_wide", "linalg_lu_tall"))


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_gradgradcheck(name):
    fn, shapes = LINALG[name]
    ts = [hookgrad.tensor(arr(*s, seed=3), requires_grad=True) for s in shapes]
    assert hookgrad.autograd.gradgradcheck(lambda *xs: fn(hookgrad, *xs), ts, eps=1e-6, atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("name", ["linalg_svd", "linalg_qr_wide", "linalg_eigh", "linalg_cholesky", "linalg_lu",
                                  "solve_triangular", "pinv_wide", "lstsq", "matrix_exp"])
def test_double_backward_matches_torch(name):
    fn, shapes = LINALG[name]
    arrays = [arr(*s, seed=4) for s in shapes]

    def run(T):
        ts = [T.tensor(a, requires_grad=True) for a in arrays]
        out = fn(T, *ts)
        grads = T.autograd.grad((out * out).sum(), ts, create_graph=True)
        second = T.autograd.grad(sum((g * g).sum() for g in grads), ts)
        return list(grads) + list(second)
    assert_same(normalize(run(hookgrad)), normalize(run(torch)), rtol=1e-6, atol=1e-8)


# ---- result types -----------------------------------------------------------------------------------
RESULT_TYPES = {
    "svd": lambda T, a: T.linalg.svd(a), "svd_legacy": lambda T, a: T.svd(a), "qr": lambda T, a: T.linalg.qr(a),
    "qr_legacy": lambda T, a: T.qr(a), "eigh": lambda T, a: T.linalg.eigh(a),
    "cholesky_ex": lambda T, a: T.linalg.cholesky_ex(_spd(T, a)), "lu": lambda T, a: T.linalg.lu(a),
    "lu_factor": lambda T, a: T.linalg.lu_factor(a), "lu_factor_ex": lambda T, a: T.linalg.lu_factor_ex(a),
    "lu_unpack": lambda T, a: T.lu_unpack(*T.linalg.lu_factor(a)), "lstsq": lambda T, a: T.linalg.lstsq(a, a),
    "inv_ex": lambda T, a: T.linalg.inv_ex(a), "solve_ex": lambda T, a: T.linalg.solve_ex(a, a),
    "triangular_solve": lambda T, a: T.triangular_solve(a, a),
}


@pytest.mark.parametrize("name", sorted(RESULT_TYPES))
def test_result_type_and_fields(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = RESULT_TYPES[name](hookgrad, hookgrad.tensor(arr(3, 3)))
        want = RESULT_TYPES[name](torch, torch.tensor(arr(3, 3)))
    assert type(got).__name__ == type(want).__name__
    assert [f for f in type(want)._fields] == list(type(got)._fields) if hasattr(type(want), "_fields") else True
    assert len(got) == len(want)


# ---- outputs without gradients -----------------------------------------------------------------------
@differential(rtol=1e-7, atol=1e-9)
def test_lu_pivots_and_factors(T):
    a = T.tensor(arr(2, 4, 4))
    tall, wide = T.tensor(arr(5, 3)), T.tensor(arr(3, 5))
    return (list(T.linalg.lu_factor(a)), list(T.linalg.lu_factor_ex(tall)), list(T.linalg.lu(wide)),
            list(T.lu_unpack(*T.linalg.lu_factor(a))), list(T.lu(a)), list(T.lu(a, get_infos=True)))


@differential(rtol=1e-7, atol=1e-9)
def test_singular_info(T):
    sing = T.tensor([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 1.0]]])
    return (T.linalg.lu_factor_ex(sing).info, T.linalg.inv_ex(sing[1:]).info, T.linalg.inv_ex(sing).info,
            T.linalg.solve_ex(sing[1:], sing[1:]).info, catch(T.linalg.lu_factor_ex, sing, check_errors=True),
            catch(T.linalg.inv, sing), catch(T.linalg.inv_ex, sing, check_errors=True))


@differential(rtol=1e-7, atol=1e-9)
def test_cholesky_ex_info_and_errors(T):
    bad = T.tensor([[[4.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, 1.0]], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0],
                                                                           [0.0, 0.0, -2.0]]])
    return (T.linalg.cholesky_ex(bad).info, catch(T.linalg.cholesky, bad), catch(T.linalg.cholesky_ex, bad,
                                                                                check_errors=True))


def test_cholesky_error_wording():
    bad = [[1.0, 2.0], [2.0, 1.0]]
    for T in (torch, hookgrad):
        with pytest.raises(T.linalg.LinAlgError) as info:
            T.linalg.cholesky(T.tensor(bad))
        assert str(info.value) == ("linalg.cholesky: The factorization could not be completed because the input is "
                                   "not positive-definite (the leading minor of order 2 is not positive-definite).")
    assert issubclass(hookgrad.linalg.LinAlgError, RuntimeError)


@differential(rtol=1e-6, atol=1e-8)
def test_lstsq_outputs_per_driver(T):
    tall, b = T.tensor(arr(2, 5, 3)), T.tensor(arr(2, 5, 2, seed=1))
    out = []
    for driver in ("gels", "gelsy", "gelsd", "gelss"):
        r = T.linalg.lstsq(tall, b, driver=driver)
        out.append([r.solution, r.residuals, r.rank, r.singular_values])
    r = T.linalg.lstsq(T.tensor(arr(3, 3)), T.tensor(arr(3)[:, None]), driver="gelsd")
    return out, [r.solution, r.residuals, r.rank, r.singular_values]


@differential(rtol=1e-7, atol=1e-9)
def test_matrix_rank_and_cond(T):
    low = T.tensor(arr(4, 2) @ arr(2, 5, seed=1))
    sym = T.tensor(np.diag([3.0, -2.0, 1e-3, 0.0]))
    return (T.linalg.matrix_rank(low), T.linalg.matrix_rank(sym, hermitian=True),
            T.linalg.matrix_rank(sym, atol=0.01), T.linalg.matrix_rank(sym, rtol=0.5),
            T.linalg.matrix_rank(T.tensor(arr(2, 3, 3))), T.linalg.cond(T.tensor(arr(3, 3)), "nuc"),
            T.linalg.cond(T.tensor(arr(2, 3, 3)), -1), T.linalg.cond(T.tensor(arr(3, 3)), float("-inf")),
            T.linalg.cond(T.tensor(arr(3, 3)), "fro"))


@differential(rtol=1e-7, atol=1e-9)
def test_shapes_of_modes(T):
    a = T.tensor(arr(2, 4, 3))
    U, S, Vh = T.linalg.svd(a)  # full_matrices by default
    legacy = T.svd(a, some=False)
    no_uv = T.svd(a, compute_uv=False)
    qr_r = T.linalg.qr(a, mode="r")
    qc = T.linalg.qr(a, mode="complete")
    return ([x.shape for x in (U, S, Vh)], [x.shape for x in legacy], [x.shape for x in no_uv], no_uv.U,
            qr_r.Q.shape, qr_r.R.abs(), [x.shape for x in qc], T.linalg.svdvals(a), T.linalg.eigvalsh(a[:, :3]))


@differential(rtol=1e-7, atol=1e-9)
def test_eigh_reads_one_triangle_and_its_gradient_is_torchs(T):
    a = T.tensor(arr(3, 3), requires_grad=True)
    out = []
    for uplo in ("L", "U"):
        w, v = T.linalg.eigh(a, UPLO=uplo)
        g, = T.autograd.grad(w.sum() * 2 + (v * v)[0].sum() + w.pow(2).sum(), a)
        out += [w, g]
    return out, catch(T.linalg.eigh, a, UPLO="X")


@differential(rtol=1e-7, atol=1e-9)
def test_pinv_tolerances(T):
    a = T.tensor(np.diag([4.0, 1e-3, 1e-9]) @ arr(3, 3))
    sym = T.tensor(np.diag([4.0, -1e-2, 1e-9]))
    return (T.linalg.pinv(a), T.linalg.pinv(a, atol=1e-2), T.linalg.pinv(a, rtol=1e-2),
            T.linalg.pinv(sym, hermitian=True), T.linalg.pinv(sym, hermitian=True, atol=0.1), T.pinverse(a, 1e-2))


@differential
def test_logdet_of_negative_and_singular(T):
    return (T.logdet(T.tensor([[0.0, 1.0], [1.0, 0.0]])), T.logdet(T.tensor([[1.0, 2.0], [2.0, 4.0]])),
            T.tensor([[2.0, 0.0], [0.0, 3.0]]).logdet())


@differential
def test_vander_multi_dot_kron_trace_values(T):
    x = T.tensor([1.0, 2.0, 3.0])
    return (T.linalg.vander(x), T.linalg.vander(T.tensor([[1, 2], [3, 4]]), N=3), T.kron(T.eye(2), x),
            T.trace(T.arange(9.0).reshape(3, 3)), T.linalg.multi_dot([x, x]),
            T.linalg.matrix_power(T.tensor([[1, 1], [0, 1]]), 5))


@differential
def test_errors(T):
    rect, ints = T.tensor(arr(2, 3)), T.tensor([[1, 2], [3, 4]])
    return [catch(f) for f in (
        lambda: T.linalg.cholesky(rect), lambda: T.linalg.eigh(rect), lambda: T.linalg.matrix_exp(rect),
        lambda: T.linalg.svd(T.tensor([1.0, 2.0])), lambda: T.linalg.svd(ints), lambda: T.linalg.qr(rect, "full"),
        lambda: T.linalg.solve_triangular(T.eye(3, dtype=T.float64), rect, upper=True),
        lambda: T.linalg.lstsq(rect, T.tensor(arr(3, 1))), lambda: T.linalg.multi_dot([rect]),
        lambda: T.linalg.householder_product(rect, T.tensor(arr(2))), lambda: T.linalg.tensorinv(rect, 1),
        lambda: T.linalg.matrix_power(rect, 2), lambda: T.linalg.lu_factor(ints),
        lambda: T.linalg.inv(T.zeros(2, 2)), lambda: T.linalg.svd(rect, driver="gesvd"),
        lambda: T.linalg.svdvals(rect, driver="gesvd"))]


@differential
def test_qr_backward_errors(T):
    a = T.tensor(arr(4, 3), requires_grad=True)
    r_only = catch(lambda: T.linalg.qr(a, mode="r").R.sum().backward())
    complete_tall = catch(lambda: T.linalg.qr(a, mode="complete").Q.sum().backward())
    return r_only, complete_tall


def test_deprecation_warnings_and_aliases():
    a = arr(3, 3)
    from hookgrad.autograd import _warn_once
    for name, fn in [("cholesky", lambda T: T.cholesky(_spd(T, T.tensor(a)))),
                     ("triangular_solve", lambda T: T.triangular_solve(T.tensor(a), T.tensor(a))),
                     ("chain_matmul", lambda T: T.chain_matmul(T.tensor(a), T.tensor(a)))]:
        _warn_once._already_warned.discard(name)  # torch warns once per process, like these
        assert warns(fn, hookgrad)[1] == ["UserWarning"], name
        assert warns(fn, hookgrad)[1] == [], name
    for name in ("svd", "qr", "cholesky", "pinverse", "matrix_exp", "matrix_power", "logdet", "lu", "lu_solve",
                 "cholesky_solve", "cholesky_inverse", "triangular_solve", "trace", "kron", "orgqr", "ormqr", "geqrf",
                 "cross", "vander"):
        assert hasattr(hookgrad.Tensor, name) == hasattr(torch.Tensor, name), name
        assert hasattr(hookgrad, name) == hasattr(torch, name), name
    for name in ("lu_unpack", "chain_matmul"):
        assert hasattr(hookgrad, name) and not hasattr(hookgrad.Tensor, name)


def test_linalg_namespace_against_torch():
    missing = sorted(n for n in dir(torch.linalg) if not n.startswith("_") and n != "common_notes"
                     and not hasattr(hookgrad.linalg, n))
    assert missing == []
    assert not hasattr(hookgrad.linalg, "__all__") or set(hookgrad.linalg.__all__) >= {
        n for n in dir(torch.linalg) if not n.startswith("_") and n != "common_notes"} - set(missing)


def test_grad_fn_names():
    a = torch.tensor(arr(3, 3), requires_grad=True)
    h = hookgrad.tensor(arr(3, 3), requires_grad=True)
    for fn in (lambda T, x: T.linalg.svd(x).S, lambda T, x: T.linalg.qr(x).R, lambda T, x: T.linalg.eigh(x)[0],
               lambda T, x: T.linalg.cholesky(_spd(T, x)), lambda T, x: T.linalg.lu(x).U,
               lambda T, x: T.linalg.lu_factor(x).LU, lambda T, x: T.linalg.solve_triangular(x, x, upper=True),
               lambda T, x: T.linalg.lstsq(x, x).solution, lambda T, x: T.linalg.pinv(x),
               lambda T, x: T.linalg.matrix_exp(x)):
        assert fn(hookgrad, h).grad_fn.name() == fn(torch, a).grad_fn.name()


@differential(rtol=1e-7, atol=1e-9)
def test_ldl_factor_and_solve(T):
    a = arr(2, 4, 4)
    sym = T.tensor(a + np.swapaxes(a, -1, -2))
    b = T.tensor(arr(2, 4, 3, seed=1))
    r = T.linalg.ldl_factor_ex(sym)
    LD, pivots = T.linalg.ldl_factor(sym[0])
    return (list(r), LD, pivots, T.linalg.ldl_solve(r.LD, r.pivots, b), T.linalg.ldl_solve(LD, pivots, b[0]),
            type(r).__name__, type(T.linalg.ldl_factor(sym)).__name__, catch(T.linalg.ldl_factor, sym[0, :3]))


@differential(rtol=1e-7, atol=1e-9)
def test_geqrf_vander_cross_defaults(T):
    a = T.tensor(arr(2, 4, 3))
    g = T.geqrf(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default_dim = T.cross(T.tensor(arr(3, 4)), T.tensor(arr(3, 4, seed=1)))
    return (type(g).__name__, g.a, g.tau, T.vander(T.tensor([1, 2, 3])), T.vander(T.tensor([0.5, 2.0]), 4, True),
            T.vander(T.tensor([1.0, 2.0]), N=0).shape, default_dim,
            catch(T.linalg.cross, T.tensor(arr(2, 4)), T.tensor(arr(2, 4))),
            catch(T.linalg.cross, T.tensor(arr(2, 3)), T.tensor(arr(3))))


@differential(rtol=1e-7, atol=1e-9)
def test_solve_on_the_right_and_its_shapes(T):
    """left=False solves X A = B (with its gradients); B is a vector only when 1-d or shaped as A without its
    last dim; incompatible shapes and batches raise torch's errors."""
    a = T.tensor(arr(2, 3, 3), requires_grad=True)
    b = T.tensor(arr(2, 4, 3, seed=1), requires_grad=True)
    x = T.linalg.solve(a, b, left=False)
    (x * T.tensor(arr(2, 4, 3, seed=2))).sum().backward()
    eye = T.eye(2, dtype=T.float64) * 2
    cases = [(eye.expand(3, 2, 2), T.ones(2, 2, dtype=T.float64), True),   # B a matrix broadcast over the batch
             (eye.expand(2, 2, 2), T.ones(2, 2, dtype=T.float64), True),   # B a batch of vectors
             (eye, T.ones(3, dtype=T.float64), True), (eye, T.ones(2, 3, dtype=T.float64), False),
             (eye, T.ones(2, dtype=T.float64), False), (eye.expand(2, 2, 2), T.ones(3, 2, 1, dtype=T.float64), True),
             (eye, T.ones((), dtype=T.float64), True)]
    return (x, a.grad, b.grad, x.grad_fn.name(),
            [catch(T.linalg.solve, a_, b_, left=left) for a_, b_, left in cases],
            [_error_text(T.linalg.solve, a_, b_, left=left) for a_, b_, left in cases])


def _error_text(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the wording is what is compared
        return str(exc)
    return None
