"""Matrix decompositions and what is built on them: svd, qr, eigh, cholesky, lu, triangular solves,
lstsq, pinv, matrix_exp and the ``torch.linalg`` functions composed of them.

Forwards run in NumPy/SciPy over any leading batch dimensions; backwards are written with hookgrad
ops (so ``create_graph=True`` and double backward work) and follow the published formulas:
svd/eigh (Townsend; Giles), qr (Walter & Lehmann; Liao et al.), cholesky (Murray), lu
(the triangular-factor identities), pinv (Golub & Pereyra), matrix_exp (the block-matrix identity
``exp([[X^T, G], [0, X^T]])`` whose top-right block is the adjoint).
"""
from __future__ import annotations

import warnings
from .. import return_types

import numpy as np
import scipy.linalg as sla

from .. import _dtype
from .._tensor import Tensor, wrap
from ..autograd._warn_once import warn_once
from ..autograd.graph import Node, saved_dim
from ._base import GRAD, as_tensor_arg, quiet_fp, sum_to_shape
from . import _dtype_rules as _rules
from ._declare import formula_node, module_all, op, record_op


class _LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a linear-algebra routine could not complete on its input."""


# torch's class is torch._C._LinAlgError, exported as torch.linalg.LinAlgError
LinAlgError = _LinAlgError


def _result_type(name, fields):
    return return_types.make(name, fields)


_SVD = _result_type("linalg_svd", ["U", "S", "Vh"])
_SVD_LEGACY = _result_type("svd", ["U", "S", "V"])
_QR = _result_type("linalg_qr", ["Q", "R"])
_QR_LEGACY = _result_type("qr", ["Q", "R"])
_EIGH = _result_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
_CHOLESKY_EX = _result_type("linalg_cholesky_ex", ["L", "info"])
_LU_FACTOR = _result_type("linalg_lu_factor", ["LU", "pivots"])
_LU_FACTOR_EX = _result_type("linalg_lu_factor_ex", ["LU", "pivots", "info"])
_LU = _result_type("linalg_lu", ["P", "L", "U"])
_LU_UNPACK = _result_type("lu_unpack", ["P", "L", "U"])
_LSTSQ = _result_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
_INV_EX = _result_type("linalg_inv_ex", ["inverse", "info"])
_SOLVE_EX = _result_type("linalg_solve_ex", ["result", "info"])
_TRIANGULAR_SOLVE = _result_type("triangular_solve", ["solution", "cloned_coefficient"])
_SLOGDET = _result_type("linalg_slogdet", ["sign", "logabsdet"])




def _warn_once(key, message, stacklevel=3):
    """A deprecation notice given once per process (torch's TORCH_WARN_ONCE)."""
    warn_once(key, message, stacklevel=stacklevel)


# ---- shared checks and helpers ----------------------------------------------------------------
_TYPE_NAMES = {"i": "Long", "u": "Byte", "b": "Bool"}


# how torch refuses float16/bfloat16 inputs, per function: its kernel's NotImplementedError, or a
# RuntimeError of the function's own check
_HALF_REFUSALS = {
    "linalg.svd": "linalg_svd_cpu", "linalg.cond": "linalg_svd_cpu", "linalg.qr": "geqrf_cpu", "geqrf": "geqrf_cpu",
    "linalg.eigh": "linalg_eigh_cpu", "cholesky_solve": "cholesky_solve_cpu",
    "cholesky_inverse": "cholesky_inverse_out_cpu", "linalg.solve_triangular": "triangular_solve_cpu",
    "linalg.lu_solve": "linalg.lu_solve_cpu", "linalg.solve_ex": "lu_cpu",
    "torch.linalg.householder_product": "orgqr_cpu",
}
_HALF_CHECKS = {
    "linalg.inv_ex": lambda a: f"linalg.inv: Low precision dtypes not supported. Got {_scalar_name(a)}",
    "torch.linalg.lstsq": lambda a: "This function doesn't handle types other than float and double",
    "linalg.pinv": lambda a: f"linalg.pinv({_scalar_name(a)}{list(a.shape)}): expected a tensor with 2 or more "
                             "dimensions of float, double, cfloat or cdouble types",
}


def _scalar_name(a):
    from .._dtype import scalar_type_name
    return scalar_type_name(a._ndarray.dtype)


def _refuse_half(a, name):
    if a._ndarray.dtype.name not in _rules.HALF:
        return
    if name in _HALF_REFUSALS:
        _rules.refuse_kernel(a._ndarray, _rules.HALF, _HALF_REFUSALS[name])
    if name in _HALF_CHECKS:
        raise RuntimeError(_HALF_CHECKS[name](a))


# functions whose kernel refuses integer and bool inputs (torch's NotImplementedError, before its
# floating-point check)
_INTEGER_KERNELS = {"linalg.eigh": "linalg_eigh_cpu", "linalg.solve_triangular": "triangular_solve_cpu",
                    "torch.linalg.householder_product": "orgqr_cpu", "ormqr": "ormqr_cpu"}


def _float_input(a, name, arg="input"):
    a = as_tensor_arg(a)
    kind = a._ndarray.dtype.kind
    _refuse_half(a, name)
    if name in _INTEGER_KERNELS:
        _rules.refuse_kernel(a._ndarray, _rules.INTEGRAL, _INTEGER_KERNELS[name])
    if kind not in "fc" and not _dtype.is_bfloat16_np(a._ndarray.dtype):
        names = {np.dtype(np.int32): "Int", np.dtype(np.int16): "Short", np.dtype(np.int8): "Char"}
        got = names.get(a._ndarray.dtype, _TYPE_NAMES.get(kind, str(a._ndarray.dtype)))
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as {arg}. Got {got}")
    return a


def _matrix(a, name, arg="A"):
    a = _float_input(a, name, "input")
    if a._ndarray.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if a._ndarray.dtype.kind == "c" and GRAD.enabled and a._requires_grad:
        # these backward formulas are written for real matrices: refuse rather than differentiate wrongly
        raise NotImplementedError(f"hookgrad: {name} has no gradient for complex matrices (linalg.eig, eigvals, "
                                  "det, inv, solve and matmul have)")
    return a


def _real_np(np_dtype):
    """The type of a complex matrix's singular values or Hermitian eigenvalues (real parts' type)."""
    return np.empty(0, np_dtype).real.dtype


def _square(a, name, arg="A"):
    a = _matrix(a, name, arg)
    if a._ndarray.shape[-1] != a._ndarray.shape[-2]:
        raise RuntimeError(f"{name}: {arg} must be batches of square matrices, but they are "
                           f"{a._ndarray.shape[-2]} by {a._ndarray.shape[-1]} matrices")
    return a


def _per_matrix(fn, *arrays):
    """``fn`` applied to each matrix of the (already broadcast) batched ``arrays``; results stacked."""
    batch = arrays[0].shape[:-2]
    flat = [x.reshape((-1,) + x.shape[-2:]) for x in arrays]
    outs = [fn(*mats) for mats in zip(*flat)]
    if not isinstance(outs[0] if outs else None, tuple):
        outs = [(o,) for o in outs] if outs else []
    if not outs:  # an empty batch: run once on zeros to learn the shapes
        probe = fn(*[np.eye(*x.shape[-2:], dtype=x.dtype) for x in arrays])
        probe = probe if isinstance(probe, tuple) else (probe,)
        results = tuple(np.zeros(batch + np.shape(p), dtype=np.asanyarray(p).dtype) for p in probe)
    else:
        results = tuple(np.stack([o[i] for o in outs]).reshape(batch + np.shape(outs[0][i]))
                        for i in range(len(outs[0])))
    return results if len(results) > 1 else results[0]


def _zero_if_none(g, like):
    return g if g is not None else wrap(np.zeros(like._ndarray.shape, dtype=like._ndarray.dtype))


def _eye_like(n, a):
    return wrap(np.eye(n, dtype=a._ndarray.dtype))


def _diag(v):
    """A batch of diagonal matrices from ``v`` (a product with the identity: twice differentiable)."""
    return v.unsqueeze(-1) * _eye_like(v.shape[-1], v)


# ---- svd --------------------------------------------------------------------------------------
class LinalgSvdBackward0(Node):
    __slots__ = ("full_matrices", "_num_outputs")
    saved_names = ("U", "S", "Vh")

    def apply(self, grads):
        U, S, Vh = self.saved()
        gU, gS, gVh = grads
        m, n = U.shape[-2], Vh.shape[-1]
        k = S.shape[-1]
        if self.full_matrices:  # the extra columns/rows are not determined by A: only the first k count
            U, Vh = U[..., :, :k], Vh[..., :k, :]
            gU = gU[..., :, :k] if gU is not None else None
            gVh = gVh[..., :k, :] if gVh is not None else None
        return (svd_backward(U, S, Vh, gU, gS, gVh),)


def svd_backward(U, S, Vh, gU, gS, gVh):
    """The gradient of a reduced SVD ``A = U diag(S) Vh`` (real), from any of gU, gS, gVh."""
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:
        gS = _zero_if_none(gS, S)
        return (U * gS.unsqueeze(-2)) @ Vh
    V = Vh.mT
    S2 = S * S
    with quiet_fp():
        # E[i, j] = S_j^2 - S_i^2 (1 on the diagonal, where the skew parts vanish)
        E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + _eye_like(S.shape[-1], S)
    inner = None
    if gU is not None:
        UtgU = U.mT @ gU
        inner = (UtgU - UtgU.mT) * S.unsqueeze(-2)
    if gVh is not None:
        VtgV = Vh @ gVh.mT
        term = S.unsqueeze(-1) * (VtgV - VtgV.mT)
        inner = term if inner is None else inner + term
    inner = inner / E
    if gS is not None:
        inner = inner + _diag(gS)
    if m > n and gU is not None:
        gA = U @ inner
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - U @ (U.mT @ gUSinv)
        return gA @ Vh
    if m < n and gVh is not None:
        gA = inner @ Vh
        gVSinv = gVh.mT / S.unsqueeze(-2)
        gA = gA + gVSinv.mT - (gVSinv.mT @ V) @ Vh
        return U @ gA
    return U @ inner @ Vh


def _check_svd_driver(driver):
    if driver is not None:  # hookgrad's tensors are CPU tensors
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")


def _svd_arrays(a, full_matrices):
    with quiet_fp():
        try:
            return np.linalg.svd(a._ndarray, full_matrices=full_matrices)
        except np.linalg.LinAlgError:
            raise LinAlgError("linalg.svd: The algorithm failed to converge because the input matrix is "
                              "ill-conditioned or has too many repeated singular values (error code: 1).") from None


def linalg_svd(a, full_matrices=True, *, driver=None):
    """torch.linalg.svd: ``(U, S, Vh)`` with ``A = U diag(S) Vh``."""
    a = _matrix(a, "linalg.svd")
    _check_svd_driver(driver)
    u, s, vh = _svd_arrays(a, full_matrices)
    U, S, Vh = wrap(u), wrap(s.astype(_real_np(a._ndarray.dtype), copy=False)), wrap(vh)
    if GRAD.enabled and a._requires_grad:
        node = record_op(LinalgSvdBackward0, (a,), U, S, Vh)
        node._num_outputs = 3
        node.full_matrices = full_matrices
        node.save(U, S, Vh)
    return _SVD(U, S, Vh)


def svdvals(a, *, driver=None):
    """torch.linalg.svdvals: the singular values, in descending order."""
    a = _matrix(a, "linalg.svd")
    _check_svd_driver(driver)
    if not (GRAD.enabled and a._requires_grad):
        with quiet_fp():
            return wrap(np.linalg.svd(a._ndarray, compute_uv=False).astype(_real_np(a._ndarray.dtype), copy=False))
    return linalg_svd(a, full_matrices=False).S


@op("svd")
def svd_legacy(a, some=True, compute_uv=True):
    """torch.svd / Tensor.svd: ``(U, S, V)`` (V, not its transpose), reduced unless ``some=False``."""
    if not compute_uv:
        a = _matrix(a, "linalg.svd")
        S = svdvals(a)
        m, n = a._ndarray.shape[-2:]
        batch = a._ndarray.shape[:-2]
        zeros = lambda r, c: wrap(np.zeros(batch + (r, c), dtype=a._ndarray.dtype))
        return _SVD_LEGACY(zeros(m, m), S, zeros(n, n))
    U, S, Vh = linalg_svd(a, full_matrices=not some)
    return _SVD_LEGACY(U, S, Vh.mT)


# ---- qr ---------------------------------------------------------------------------------------
class LinalgQrBackward0(Node):
    __slots__ = ("mode", "_num_outputs")
    saved_names = ("Q", "R")

    def apply(self, grads):
        if self.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                               "Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
                               "through linalg.qr.")
        Q, R = self.saved()
        m, n = Q.shape[-2], R.shape[-1]
        if self.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        gQ, gR = grads
        gQ = _zero_if_none(gQ, Q)
        gR = _zero_if_none(gR, R)
        if m >= n:
            return (_qr_backward_tall(Q, R, gQ, gR),)
        # wide: A = [X | Y], R = [U | V] with X = Q U square and Y = Q V
        A = Q @ R
        U, Y = R[..., :, :m], A[..., :, m:]
        gV = gR[..., :, m:]
        gX = _qr_backward_tall(Q, U, gQ + Y @ gV.mT, gR[..., :, :m])
        from .shape import cat
        return (cat([gX, Q @ gV], -1),)


def _qr_backward_tall(Q, R, gQ, gR):
    """Gradient of ``A = QR`` for m >= n (Q m-by-n with orthonormal columns, R upper triangular)."""
    M = R @ gR.mT - gQ.mT @ Q
    copyltu = M.tril(-1) + M.tril(-1).mT + _diag(M.diagonal(0, -2, -1))
    X = gQ + Q @ copyltu
    return solve_triangular(R, X.mT, upper=True).mT


def linalg_qr(a, mode="reduced"):
    """torch.linalg.qr: ``(Q, R)``; mode ``'reduced'``, ``'complete'`` or ``'r'`` (Q empty)."""
    a = _matrix(a, "linalg.qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
                           f"(default), 'r', or 'complete'")
    with quiet_fp():
        if mode == "r":
            r = np.linalg.qr(a._ndarray, mode="r")
            q = np.zeros((0,), dtype=a._ndarray.dtype)
        else:
            q, r = np.linalg.qr(a._ndarray, mode=mode)
    Q, R = wrap(np.ascontiguousarray(q)), wrap(np.ascontiguousarray(r))
    if GRAD.enabled and a._requires_grad:
        node = record_op(LinalgQrBackward0, (a,), Q, R)
        node._num_outputs = 2
        node.mode = mode
        node.save(Q, R)
    return _QR(Q, R)


@op("qr")
def qr_legacy(a, some=True):
    """torch.qr / Tensor.qr: reduced unless ``some=False``."""
    Q, R = linalg_qr(a, "reduced" if some else "complete")
    return _QR_LEGACY(Q, R)


# ---- eigh -------------------------------------------------------------------------------------
class LinalgEighBackward0(Node):
    __slots__ = ("_num_outputs",)
    saved_names = ("eigenvalues", "eigenvectors")

    def apply(self, grads):
        L, V = self.saved()
        gL, gV = grads
        if gV is None:
            gL = _zero_if_none(gL, L)
            return ((V * gL.unsqueeze(-2)) @ V.mT,)
        with quiet_fp():
            # E[i, j] = L_j - L_i, infinite on the diagonal so that those terms vanish
            E = L.unsqueeze(-2) - L.unsqueeze(-1) + wrap(np.diag(np.full(L.shape[-1], np.inf, dtype=L._ndarray.dtype)))
        VtgV = V.mT @ gV
        inner = (VtgV - VtgV.mT) * 0.5 / E
        if gL is not None:
            inner = inner + _diag(gL)
        return (V @ inner @ V.mT,)


def _check_uplo(UPLO):
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


def eigh(a, UPLO="L"):
    """torch.linalg.eigh: ascending eigenvalues and orthonormal eigenvectors of a symmetric matrix (only
    the ``UPLO`` triangle is read)."""
    a = _square(a, "linalg.eigh")
    with quiet_fp():
        try:
            w, v = np.linalg.eigh(a._ndarray, UPLO=_check_uplo(UPLO))
        except np.linalg.LinAlgError:
            raise LinAlgError("linalg.eigh: The algorithm failed to converge because the input matrix is "
                              "ill-conditioned or has too many repeated eigenvalues (error code: 1).") from None
    L, V = wrap(w.astype(_real_np(a._ndarray.dtype), copy=False)), wrap(v)
    if GRAD.enabled and a._requires_grad:
        node = record_op(LinalgEighBackward0, (a,), L, V)
        node._num_outputs = 2
        node.save(L, V)
    return _EIGH(L, V)


def eigvalsh(a, UPLO="L"):
    """torch.linalg.eigvalsh: the ascending eigenvalues of a symmetric matrix."""
    a = _square(a, "linalg.eigh")
    if not (GRAD.enabled and a._requires_grad):
        with quiet_fp():
            return wrap(np.linalg.eigvalsh(a._ndarray, UPLO=_check_uplo(UPLO)).astype(_real_np(a._ndarray.dtype), copy=False))
    return eigh(a, UPLO).eigenvalues


# ---- cholesky ---------------------------------------------------------------------------------
class LinalgCholeskyExBackward0(Node):
    __slots__ = ("upper", "_num_outputs")
    saved_names = ("L",)

    def apply(self, grads):
        (L,) = self.saved()
        gL = grads[0]
        if self.upper:
            L, gL = L.mT, gL.mT
        return (cholesky_backward(L, gL),)


def cholesky_backward(L, gL):
    """Gradient of ``A = L L^T`` as a symmetric matrix: sym(L^-T phi(L^T gL) L^-1)."""
    P = L.mT @ gL
    phi = P.tril(-1) + _diag(P.diagonal(0, -2, -1) * 0.5)
    S = solve_triangular(L.mT, phi, upper=True)
    S = solve_triangular(L, S, upper=False, left=False)
    return (S + S.mT) * 0.5


def _cholesky_arrays(data, upper, name, raise_errors=True):
    """The lower (or upper) factor and LAPACK's info per matrix (the order of the first non-positive
    leading minor, 0 when the factorization succeeded)."""
    batch = data.shape[:-2]
    flat = data.reshape((-1,) + data.shape[-2:])
    factors = np.zeros_like(flat)
    info = np.zeros(len(flat), dtype=np.int32)
    for i, m in enumerate(flat):
        try:
            factors[i] = np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            info[i] = _first_bad_minor(m)
    if raise_errors and info.any():
        first = int(np.flatnonzero(info)[0])
        where = f"(Batch element {first}): " if batch else ""
        raise LinAlgError(f"{name}: {where}The factorization could not be completed because the input is not "
                          f"positive-definite (the leading minor of order {info[first]} is not positive-definite).")
    factors = factors.reshape(data.shape)
    if upper:
        factors = np.ascontiguousarray(np.swapaxes(factors, -1, -2))
    return factors, info.reshape(batch)


def _first_bad_minor(m):
    for k in range(1, m.shape[-1] + 1):
        try:
            np.linalg.cholesky(m[:k, :k])
        except np.linalg.LinAlgError:
            return k
    return m.shape[-1]


def _cholesky(a, upper, name, check_errors):
    _rules.refuse_kernel(as_tensor_arg(a)._ndarray, _rules.HALF, "cholesky_cpu")
    a = _square(a, name)
    with quiet_fp():
        factors, info = _cholesky_arrays(np.tril(a._ndarray), upper, name, check_errors)
    # np.linalg.cholesky reads the lower triangle; torch does too
    Lt = wrap(factors)
    if GRAD.enabled and a._requires_grad:
        node = record_op(LinalgCholeskyExBackward0, (a,), Lt)
        node._num_outputs = 2
        node.upper = upper
        node.save(output=Lt)
    return Lt, wrap(info)


def linalg_cholesky(a, *, upper=False):
    """torch.linalg.cholesky: the lower (``upper=True``: upper) triangular factor of an SPD matrix."""
    return _cholesky(a, upper, "linalg.cholesky", True)[0]


def cholesky_ex(a, *, upper=False, check_errors=False):
    """torch.linalg.cholesky_ex: ``(L, info)`` with info the order of the first non-positive leading minor."""
    return _CHOLESKY_EX(*_cholesky(a, upper, "linalg.cholesky_ex", check_errors))


@op("cholesky")
def cholesky_legacy(a, upper=False):
    """torch.cholesky / Tensor.cholesky (deprecated in torch): ``upper`` positional."""
    _warn_once("cholesky", "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                  "PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)"
                  "\nand\nU = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH"
                  "\nThis transform will produce equivalent results for all valid (symmetric positive definite) "
                  "inputs.")
    return _cholesky(a, upper, "linalg.cholesky", True)[0]


@op(method=True)
def cholesky_solve(b, L, upper=False):
    """torch.cholesky_solve: X with ``A X = B`` where ``A = L L^T`` (or ``U^T U``)."""
    b, L = _float_input(b, "cholesky_solve"), _float_input(L, "cholesky_solve")
    if upper:
        return solve_triangular(L, solve_triangular(L.mT, b, upper=False), upper=True)
    return solve_triangular(L.mT, solve_triangular(L, b, upper=False), upper=True)


@op(method=True)
def cholesky_inverse(L, upper=False):
    """torch.cholesky_inverse: the inverse of ``L L^T`` (or ``U^T U``) from its factor."""
    L = _square(L, "cholesky_inverse", "input")
    eye = wrap(np.broadcast_to(np.eye(L.shape[-1], dtype=L._ndarray.dtype), L._ndarray.shape).copy())
    return cholesky_solve(eye, L, upper)


# ---- triangular solves ------------------------------------------------------------------------
class LinalgSolveTriangularBackward0(Node):
    __slots__ = ("upper", "left", "unitriangular", "a_shape", "b_shape")
    saved_names = ("self", "result")

    def apply(self, grads):
        A, X = self.saved()
        g = grads[0]
        from ._base import sum_to_shape
        gB = solve_triangular(A.mT, g, upper=not self.upper, left=self.left, unitriangular=self.unitriangular)
        gA = None
        if self._should_compute_output(0):
            gA = -(gB @ X.mT) if self.left else -(X.mT @ gB)
            gA = gA.triu(1 if self.unitriangular else 0) if self.upper else gA.tril(-1 if self.unitriangular else 0)
            gA = sum_to_shape(gA, self.a_shape)
        return gA, sum_to_shape(gB, self.b_shape) if self._should_compute_output(1) else None


def solve_triangular(a, b, *, upper, left=True, unitriangular=False):
    """torch.linalg.solve_triangular: X with ``A X = B`` (``left=False``: ``X A = B``), A triangular."""
    a, b = _square(a, "linalg.solve_triangular"), _float_input(b, "linalg.solve_triangular")
    if b._ndarray.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    if a._ndarray.dtype != b._ndarray.dtype:
        raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same dtype, but found "
                           f"A of type {a.dtype} and B of type {b.dtype} instead".replace("hookgrad.", ""))
    n = a._ndarray.shape[-1]
    inner = b._ndarray.shape[-2] if left else b._ndarray.shape[-1]
    if inner != n:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {b._ndarray.shape[-2]}x{b._ndarray.shape[-1]})")
    batch = np.broadcast_shapes(a._ndarray.shape[:-2], b._ndarray.shape[:-2])
    ad = np.broadcast_to(a._ndarray, batch + a._ndarray.shape[-2:])
    bd = np.broadcast_to(b._ndarray, batch + b._ndarray.shape[-2:])

    def one(m, rhs):
        if left:
            return sla.solve_triangular(m, rhs, lower=not upper, unit_diagonal=unitriangular, check_finite=False)
        return sla.solve_triangular(m, rhs.T, lower=not upper, trans="T", unit_diagonal=unitriangular,
                                    check_finite=False).T
    with quiet_fp():
        if n == 0 or 0 in bd.shape:
            out = np.zeros(batch + b._ndarray.shape[-2:], dtype=b._ndarray.dtype)
        else:
            out = _per_matrix(one, ad, bd)
    result = wrap(np.ascontiguousarray(out, dtype=b._ndarray.dtype))
    if GRAD.enabled and (a._requires_grad or b._requires_grad):
        node = record_op(LinalgSolveTriangularBackward0, (a, b), result)
        node.upper, node.left, node.unitriangular = upper, left, unitriangular
        node.a_shape, node.b_shape = a._ndarray.shape, b._ndarray.shape
        node.save(a, output=result)
    return result


@op(method=True)
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """torch.triangular_solve (deprecated in torch): ``(solution, cloned_coefficient)``."""
    _warn_once("triangular_solve", "torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular"
                  "and will be removed in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments "
                  "reversed and does not return a copy of one of the inputs.\nX = torch.triangular_solve(B, A)."
                  "solution\nshould be replaced with\nX = torch.linalg.solve_triangular(A, B).")
    coeff = A.mT if transpose else A
    X = solve_triangular(coeff, b, upper=upper != transpose, unitriangular=unitriangular)
    return _TRIANGULAR_SOLVE(X, A.clone())


# ---- lu ---------------------------------------------------------------------------------------
def _lu_backward(L, U, P, gL, gU):
    """Gradient of ``A = P L U`` (L unit lower m-by-k, U upper k-by-n, k = min(m, n))."""
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    gL = _zero_if_none(gL, L)
    gU = _zero_if_none(gU, U)
    from .shape import cat
    if m == n:
        return P @ _lu_square(L, U, gL, gU)
    if m < n:  # A = P L [U1 | U2]
        U1, U2, gU1, gU2 = U[..., :, :k], U[..., :, k:], gU[..., :, :k], gU[..., :, k:]
        gA2 = solve_triangular(L.mT, gU2, upper=True, unitriangular=True)
        gA1 = _lu_square(L, U1, gL - gA2 @ U2.mT, gU1)
        return P @ cat([gA1, gA2], -1)
    # m > n: P^T A = [L1; L2] U
    L1, L2, gL1, gL2 = L[..., :k, :], L[..., k:, :], gL[..., :k, :], gL[..., k:, :]
    gA2 = solve_triangular(U.mT, gL2, upper=False, left=False)
    gA1 = _lu_square(L1, U, gL1, gU - L2.mT @ gA2)
    return P @ cat([gA1, gA2], -2)


def _lu_square(L, U, gL, gU):
    inner = (L.mT @ gL).tril(-1) + (gU @ U.mT).triu()
    X = solve_triangular(L.mT, inner, upper=True, unitriangular=True)
    return solve_triangular(U.mT, X, upper=False, left=False)


class LinalgLuBackward0(Node):
    __slots__ = ("pivot", "_num_outputs")
    saved_names = ("L", "P", "U")

    def apply(self, grads):
        L, P, U = self.saved()
        return (_lu_backward(L, U, P, grads[1], grads[2]),)


class LinalgLuFactorExBackward0(Node):
    __slots__ = ("pivot", "_num_outputs", "P")
    saved_names = ("LU", "pivots")

    def apply(self, grads):
        LU, _pivots = self.saved()
        g = _zero_if_none(grads[0], LU)
        m, n = LU.shape[-2:]
        k = min(m, n)
        L = LU[..., :, :k].tril(-1) + _eye_like(max(m, 1), LU)[:, :k]
        U = LU[..., :k, :].triu()
        return (_lu_backward(L, U, self.P, g[..., :, :k].tril(-1), g[..., :k, :].triu()),)


def _lu_input(a, name):
    a = as_tensor_arg(a)
    _rules.refuse_kernel(a._ndarray, _rules.HALF, "lu_cpu")
    if a._ndarray.dtype.kind not in "fc":
        raise NotImplementedError(f'"lu_cpu" not implemented for \'{_TYPE_NAMES.get(a._ndarray.dtype.kind, "Long")}\'')
    return _matrix(a, name)


def _lu_arrays(data):
    """``(P, L, U, pivots)`` per matrix (pivots 1-based, as LAPACK's getrf) with ``A = P L U``."""
    m, n = data.shape[-2:]
    k = min(m, n)

    def one(mat):
        if k == 0:
            return (np.eye(m, dtype=mat.dtype), np.zeros((m, 0), mat.dtype), np.zeros((0, n), mat.dtype),
                    np.zeros(0, np.int32))
        lu, piv = sla.lu_factor(mat, check_finite=False) if m == n else _rect_getrf(mat)
        perm = np.arange(m)
        for i, p in enumerate(piv[:k]):
            perm[i], perm[p] = perm[p], perm[i]
        P = np.zeros((m, m), dtype=mat.dtype)
        P[perm, np.arange(m)] = 1
        L = np.tril(lu[:, :k], -1) + np.eye(m, k, dtype=mat.dtype)
        U = np.triu(lu[:k, :])
        return P, L, U, (piv[:k] + 1).astype(np.int32)
    with quiet_fp(), warnings.catch_warnings():
        warnings.simplefilter("ignore", sla.LinAlgWarning)
        return _per_matrix(one, data)


def _rect_getrf(mat):
    """getrf on a rectangular matrix: packed LU and 0-based row interchanges."""
    getrf, = sla.get_lapack_funcs(("getrf",), (mat,))
    lu, piv, _info = getrf(mat)
    return lu, piv


def linalg_lu(a, *, pivot=True):
    """torch.linalg.lu: ``(P, L, U)`` with ``A = P L U``."""
    a = _lu_input(a, "linalg.lu")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    p, l, u, _piv = _lu_arrays(a._ndarray)
    P, L, U = wrap(p), wrap(l), wrap(u)
    if GRAD.enabled and a._requires_grad:
        node = record_op(LinalgLuBackward0, (a,), P, L, U)
        node._num_outputs = 3
        node.pivot = pivot
        node.save(L, P, U)
        P._requires_grad, P._grad_fn_value = False, None  # a permutation has no gradient (torch: P does not require grad)
    return _LU(P, L, U)


def _lu_factor(a, pivot, name):
    a = _lu_input(a, name)
    if not pivot:
        raise RuntimeError(f"{name}: LU without pivoting is not implemented on the CPU")
    p, l, u, piv = _lu_arrays(a._ndarray)
    m, n = a._ndarray.shape[-2:]
    k = min(m, n)
    packed = np.zeros(a._ndarray.shape, dtype=a._ndarray.dtype)
    packed[..., :, :k] += np.tril(l, -1)
    packed[..., :k, :] += u
    LU, pivots = wrap(packed), wrap(piv)
    info = np.zeros(a._ndarray.shape[:-2], dtype=np.int32)
    diag = np.abs(np.diagonal(u, 0, -2, -1)) == 0
    if diag.size:
        info = np.where(diag.any(-1), diag.argmax(-1) + 1, 0).astype(np.int32)
    if GRAD.enabled and a._requires_grad:
        node = record_op(LinalgLuFactorExBackward0, (a,), LU)
        node._num_outputs = 3
        node.pivot = pivot
        node.P = wrap(p)
        node.save(LU, pivots)
    return LU, pivots, wrap(info)


def lu_factor(a, *, pivot=True):
    """torch.linalg.lu_factor: the packed ``LU`` and 1-based ``pivots`` (LAPACK's getrf)."""
    LU, pivots, info = _lu_factor(a, pivot, "linalg.lu_factor")
    return _LU_FACTOR(LU, pivots)


def lu_factor_ex(a, *, pivot=True, check_errors=False):
    """torch.linalg.lu_factor_ex: ``(LU, pivots, info)``."""
    LU, pivots, info = _lu_factor(a, pivot, "linalg.lu_factor_ex")
    if check_errors and info._ndarray.any():
        first = int(np.flatnonzero(info._ndarray.reshape(-1))[0])
        raise RuntimeError(f"torch.linalg.lu_factor_ex: U[{int(info._ndarray.reshape(-1)[first])},"
                          f"{int(info._ndarray.reshape(-1)[first])}] is zero and using it on lu_solve would result "
                          f"in a division by zero. If you still want to perform the factorization, consider "
                          f"calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return _LU_FACTOR_EX(LU, pivots, info)


def _permutation_from_pivots(pivots, m, dtype):
    piv = pivots._ndarray.reshape((-1, pivots._ndarray.shape[-1])) - 1
    Ps = []
    for row in piv:
        perm = np.arange(m)
        for i, p in enumerate(row):
            perm[i], perm[p] = perm[p], perm[i]
        P = np.zeros((m, m), dtype=dtype)
        P[perm, np.arange(m)] = 1
        Ps.append(P)
    return np.stack(Ps).reshape(pivots._ndarray.shape[:-1] + (m, m)) if Ps else np.zeros(
        pivots._ndarray.shape[:-1] + (m, m), dtype=dtype)


@op(method=False)
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """torch.lu_unpack: ``(P, L, U)`` from ``lu_factor``'s packed result."""
    LU = _matrix(LU_data, "lu_unpack", "LU_data")
    m, n = LU._ndarray.shape[-2:]
    k = min(m, n)
    P = wrap(_permutation_from_pivots(LU_pivots, m, LU._ndarray.dtype)) if unpack_pivots else wrap(
        np.zeros((0,), LU._ndarray.dtype))
    if not unpack_data:
        empty = wrap(np.zeros((0,), LU._ndarray.dtype))
        return _LU_UNPACK(P, empty, empty)
    L = LU[..., :, :k].tril(-1) + _eye_like(m, LU)[:, :k]
    U = LU[..., :k, :].triu()
    return _LU_UNPACK(P, L, U)


def linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """torch.linalg.lu_solve: X with ``A X = B`` from A's ``lu_factor`` (``adjoint``: ``A^T X = B``;
    ``left=False``: ``X A = B``)."""
    LU = _square(LU, "linalg.lu_solve", "LU")
    P, L, U = lu_unpack(LU, pivots)
    if left and not adjoint:  # A X = B: X = U^-1 L^-1 P^T B
        return solve_triangular(U, solve_triangular(L, P.mT @ B, upper=False, unitriangular=True), upper=True)
    if left:  # A^T X = B: X = P L^-T U^-T B
        return P @ solve_triangular(L.mT, solve_triangular(U.mT, B, upper=False), upper=True, unitriangular=True)
    if not adjoint:  # X P L U = B
        Y = solve_triangular(L, solve_triangular(U, B, upper=True, left=False), upper=False, left=False,
                             unitriangular=True)
        return Y @ P.mT
    # X U^T L^T P^T = B
    Y = solve_triangular(U.mT, solve_triangular(L.mT, B @ P, upper=True, left=False, unitriangular=True),
                         upper=False, left=False)
    return Y


@op("lu_solve")
def lu_solve_legacy(b, LU_data, LU_pivots):
    """torch.lu_solve / Tensor.lu_solve (deprecated in torch): ``(b, LU_data, LU_pivots)``."""
    return linalg_lu_solve(LU_data, LU_pivots, b)


@op("lu")
def lu_legacy(a, pivot=True, get_infos=False):
    """torch.lu / Tensor.lu: ``(LU, pivots)`` or ``(LU, pivots, infos)``."""
    LU, pivots, info = _lu_factor(a, pivot, "linalg.lu_factor")
    return (LU, pivots, info) if get_infos else (LU, pivots)


# ---- pinv and lstsq ---------------------------------------------------------------------------
def pinv_backward(g, P, A):
    """Gradient of ``P = pinv(A)`` (Golub & Pereyra): ``-P^T g P^T + (I - A P) g^T P P^T + P^T P g^T (I - P A)``."""
    Pt = P.mT
    gt = g.mT
    gA = -(Pt @ g @ Pt)
    gA = gA + (gt - A @ (P @ gt)) @ (P @ Pt)
    gA = gA + (Pt @ P) @ (gt - (gt @ P) @ A)
    return gA


LinalgPinvBackward0 = formula_node("LinalgPinvBackward0", ("self", "result"), lambda g, A, P: pinv_backward(g, P, A))


def _tolerances(atol, rtol, smax, shape, dtype):
    atol_v = 0.0 if atol is None else (atol._ndarray if isinstance(atol, Tensor) else np.asanyarray(atol))
    if rtol is None:
        rtol_v = np.finfo(dtype).eps * max(shape[-2:]) if (atol is None or np.all(atol_v == 0)) else 0.0
    else:
        rtol_v = rtol._ndarray if isinstance(rtol, Tensor) else np.asanyarray(rtol)
    return np.maximum(atol_v, rtol_v * smax)


def pinv(a, *, atol=None, rtol=None, hermitian=False):
    """torch.linalg.pinv: the pseudo-inverse, dropping singular values below ``max(atol, rtol * smax)``."""
    a = _matrix(a, "linalg.pinv")
    data = a._ndarray
    with quiet_fp():
        if data.size == 0:
            out = np.zeros(data.shape[:-2] + data.shape[:-3:-1], dtype=data.dtype)
        elif hermitian:
            w, v = np.linalg.eigh(data)
            aw = np.abs(w)
            tol = _tolerances(atol, rtol, aw.max(-1), data.shape, data.dtype)
            keep = aw > np.expand_dims(tol, -1)
            winv = np.where(keep, 1 / np.where(keep, w, 1), 0)
            out = (v * winv[..., None, :]) @ np.swapaxes(v, -1, -2)
        else:
            u, s, vh = np.linalg.svd(data, full_matrices=False)
            tol = _tolerances(atol, rtol, s.max(-1), data.shape, data.dtype)
            keep = s > np.expand_dims(tol, -1)
            sinv = np.where(keep, 1 / np.where(keep, s, 1), 0)
            out = (np.swapaxes(vh, -1, -2) * sinv[..., None, :]) @ np.swapaxes(u, -1, -2)
    result = wrap(np.ascontiguousarray(out.astype(data.dtype, copy=False)))
    if GRAD.enabled and a._requires_grad:
        node = record_op(LinalgPinvBackward0, (a,), result)
        node.save(a, output=result)
    return result


@op(method=True)
def pinverse(a, rcond=1e-15):
    """torch.pinverse / Tensor.pinverse: pinv with a relative cut-off ``rcond``."""
    return pinv(a, rtol=rcond)


class LinalgLstsqBackward0(Node):
    __slots__ = ("_num_outputs", "b_vector")
    saved_names = ("self", "b", "solution")

    def apply(self, grads):
        A, B, X = self.saved()
        g = grads[0]
        if g is None:
            return None, None
        P = pinv(A)
        gA = gB = None
        if self.b_vector:
            g, B = g.unsqueeze(-1), B.unsqueeze(-1)
        from ._base import sum_to_shape
        if self._should_compute_output(0):
            gA = sum_to_shape(pinv_backward(g @ B.mT, P, A), A.shape)
        if self._should_compute_output(1):
            gB = P.mT @ g
            gB = sum_to_shape(gB, B.shape)
            if self.b_vector:
                gB = gB.squeeze(-1)
        return gA, gB


def lstsq(a, b, rcond=None, *, driver=None):
    """torch.linalg.lstsq: the least-squares solution of ``A X = B`` with torch's
    ``(solution, residuals, rank, singular_values)`` (rank for gelsy/gelsd/gelss, singular values for
    gelsd/gelss, residuals when m > n and every matrix has full rank; empty otherwise)."""
    a, b = _matrix(a, "torch.linalg.lstsq"), _float_input(b, "torch.linalg.lstsq")
    driver = "gelsy" if driver is None else driver
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if a._ndarray.dtype != b._ndarray.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {a.dtype} and other's dtype {b.dtype}".replace("hookgrad.", ""))
    vector = b._ndarray.ndim == a._ndarray.ndim - 1  # torch's rule for lstsq (solve's is stricter)
    bd = b._ndarray[..., None] if vector else b._ndarray
    m, n = a._ndarray.shape[-2:]
    if bd.shape[-2] != m:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    batch = np.broadcast_shapes(a._ndarray.shape[:-2], bd.shape[:-2])
    ad = np.broadcast_to(a._ndarray, batch + (m, n))
    bd = np.broadcast_to(bd, batch + bd.shape[-2:])
    eps = np.finfo(a._ndarray.dtype).eps
    cut = eps * max(m, n) if rcond is None else rcond

    def one(mat, rhs):
        x, _res, rank, sv = np.linalg.lstsq(mat, rhs, rcond=cut)
        return x, np.int64(rank), sv
    with quiet_fp():
        if ad.size == 0 or bd.size == 0:
            x = np.zeros(batch + (n, bd.shape[-1]), a._ndarray.dtype)
            rank = np.zeros(batch, np.int64)
            sv = np.zeros(batch + (min(m, n),), a._ndarray.dtype)
        else:
            x, rank, sv = _per_matrix(lambda mat, rhs: _lstsq_pair(one, mat, rhs), ad, bd)
            rank = rank.reshape(batch)
            sv = sv.reshape(batch + (min(m, n),))
    dt = a._ndarray.dtype
    if driver == "gels":  # QR based: assumes full rank
        pass
    full_rank = m > n and bool(np.all(rank == n))
    residuals = (np.sum((ad @ x - bd) ** 2, axis=-2) if full_rank and driver != "gelsy"
                 else np.zeros((0,), dt))
    if vector:
        x = x[..., 0]
        if residuals.size:
            residuals = residuals[..., 0]
    solution = wrap(np.ascontiguousarray(x.astype(dt, copy=False)))
    rank_t = wrap(rank.astype(np.int64)) if driver != "gels" else wrap(np.zeros((0,), np.int64))
    sv_t = wrap(sv.astype(dt)) if driver in ("gelsd", "gelss") else wrap(np.zeros((0,), dt))
    if GRAD.enabled and (a._requires_grad or b._requires_grad):
        node = record_op(LinalgLstsqBackward0, (a, b), solution)
        node._num_outputs = 4
        node.b_vector = vector
        node.save(a, b, output=solution)
    return _LSTSQ(solution, wrap(np.asanyarray(residuals, dtype=dt)), rank_t, sv_t)


def _lstsq_pair(one, mat, rhs):
    x, rank, sv = one(mat, rhs)
    return x, np.array([[rank]]), sv[None, :]


# ---- matrix functions -------------------------------------------------------------------------
def _matrix_exp_backward(g, A):
    n = A.shape[-1]
    from .shape import cat
    # d/dA <G, exp(A)> is the top-right block of exp([[A^T, G], [0, A^T]])
    zero = wrap(np.zeros(A.shape, dtype=A._ndarray.dtype))
    At = A.mT
    block = cat([cat([At, g], -1), cat([zero, At], -1)], -2)
    return matrix_exp(block)[..., :n, n:]


LinalgMatrixExpBackward0 = formula_node("LinalgMatrixExpBackward0", ("self",), _matrix_exp_backward)


@op(method=True)
def matrix_exp(a):
    """torch.linalg.matrix_exp: the matrix exponential (SciPy's Pade approximation)."""
    a = _square(a, "linalg.matrix_exp")
    with quiet_fp():
        data = sla.expm(a._ndarray) if a._ndarray.size else a._ndarray.copy()
    result = wrap(np.ascontiguousarray(np.asanyarray(data, dtype=a._ndarray.dtype)))
    if GRAD.enabled and a._requires_grad:
        node = record_op(LinalgMatrixExpBackward0, (a,), result)
        node.save(a)
    return result


@op(method=True)
def matrix_power(a, n):
    """torch.linalg.matrix_power: ``A^n`` by repeated squaring (negative n through the inverse)."""
    from .linalg import inv, matmul
    a = _square(a, "linalg.matrix_power", "A") if a._ndarray.dtype.kind in "fc" else a
    if a._ndarray.ndim < 2 or a._ndarray.shape[-1] != a._ndarray.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{a._ndarray.shape[-2] if a._ndarray.ndim >= 2 else 1} by {a._ndarray.shape[-1]} matrices")
    if not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}")
    if n == 0:
        return wrap(np.broadcast_to(np.eye(a._ndarray.shape[-1], dtype=a._ndarray.dtype), a._ndarray.shape).copy())
    if n < 0:
        a, n = inv(a), -n
    result, base = None, a
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result.clone() if result is a else result


def matrix_rank(a, *, atol=None, rtol=None, hermitian=False, tol=None):
    """torch.linalg.matrix_rank: the number of singular values above ``max(atol, rtol * smax)``."""
    a = _matrix(a, "linalg.matrix_rank")
    if tol is not None:
        atol, rtol = tol, 0.0
    with quiet_fp():
        if a._ndarray.size == 0:
            return wrap(np.zeros(a._ndarray.shape[:-2], dtype=np.int64))
        s = np.abs(np.linalg.eigvalsh(a._ndarray)) if hermitian else np.linalg.svd(a._ndarray, compute_uv=False)
        tol_v = _tolerances(atol, rtol, s.max(-1), a._ndarray.shape, a._ndarray.dtype)
        return wrap(np.asanyarray((s > np.expand_dims(tol_v, -1)).sum(-1), dtype=np.int64))


def cond(a, p=None):
    """torch.linalg.cond: ``||A||_p ||A^-1||_p`` (p=None or +-2: the ratio of extreme singular values)."""
    a = _matrix(a, "linalg.cond")
    if p is None or p in (2, -2):
        s = svdvals(a)
        smax, smin = s[..., 0], s[..., -1]
        return smin / smax if p == -2 else smax / smin
    if a._ndarray.shape[-1] != a._ndarray.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but they are "
                           f"{a._ndarray.shape[-2]} by {a._ndarray.shape[-1]} matrices")
    from .linalg import inv
    return matrix_norm(a, p) * matrix_norm(inv(a), p)


_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, float("inf"), float("-inf"))


def matrix_norm(a, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """torch.linalg.matrix_norm: Frobenius, nuclear, and the 1, 2 and inf operator norms (and their minima)."""
    from .reduce import vector_norm
    a = _float_input(a, "linalg.matrix_norm")
    if ord not in _MATRIX_ORDS:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord in ("nuc", 2, -2) and a._ndarray.dtype.name in _rules.HALF:  # these go through an SVD
        raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got {_scalar_name(a)}")
    if dtype is not None:
        a = a.to(dtype)
    dim = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    d0, d1 = (d % a.ndim for d in dim)
    if ord == "fro":
        return vector_norm(a, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        moved = a.movedim((d0, d1), (-2, -1))
        s = svdvals(moved)
        out = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
        if keepdim:
            out = out.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
        return out
    # 1: the largest column sum; inf: the largest row sum (and their minima for -1, -inf)
    sum_dim, red_dim = (d0, d1) if abs(ord) == 1 else (d1, d0)
    sums = a.abs().sum(sum_dim, keepdim=True)
    out = sums.amax(red_dim, keepdim=True) if ord > 0 else sums.amin(red_dim, keepdim=True)
    if not keepdim:
        out = out.squeeze((d0, d1))
    return out


def norm(a, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm: a vector norm, or a matrix norm over two dims (or of a 2-D input with ``ord`` set)."""
    from .reduce import vector_norm
    if isinstance(dim, int):
        dim = (dim,)
    a = as_tensor_arg(a)
    # torch names the norm the call goes to: a matrix norm only for an order over two dims
    matrix = ord is not None and (dim is None and a.ndim == 2 or dim is not None and len(dim) == 2)
    a = _float_input(a, "linalg.matrix_norm" if matrix else "linalg.vector_norm")
    if ord is None:
        if dim is not None and len(dim) == 2:
            return matrix_norm(a, "fro", dim, keepdim, dtype=dtype)
        return vector_norm(a, 2, dim, keepdim, dtype=dtype)
    if dim is None and a.ndim == 2 or dim is not None and len(dim) == 2:
        return matrix_norm(a, ord, dim if dim is not None else (-2, -1), keepdim, dtype=dtype)
    if dim is None and a.ndim != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                           f"Got {a.ndim}D.")
    return vector_norm(a, ord, dim, keepdim, dtype=dtype)


# ---- inverses and solves with info ------------------------------------------------------------
def _singular_info(a):
    with quiet_fp():
        _LU, _piv, info = _lu_factor(a.detach(), True, "linalg.inv")
    return info


def inv_ex(a, *, check_errors=False):
    """torch.linalg.inv_ex: ``(inverse, info)``; info is the order of the first zero pivot (0: invertible)."""
    from .linalg import inv
    a = _square(a, "linalg.inv_ex")
    info = _singular_info(a)
    if info._ndarray.any():
        if check_errors:
            inv(a)
        nan = wrap(np.full(a._ndarray.shape, np.nan, dtype=a._ndarray.dtype))
        with quiet_fp():
            good = info._ndarray == 0
            data = np.where(good[..., None, None], np.linalg.inv(np.where(good[..., None, None], a._ndarray,
                                                                       np.eye(a._ndarray.shape[-1]))), np.nan)
        return _INV_EX(wrap(data.astype(a._ndarray.dtype)) if not a._requires_grad else nan, info)
    return _INV_EX(inv(a), info)


def solve_ex(a, b, *, left=True, check_errors=False):
    """torch.linalg.solve_ex: ``(result, info)``."""
    from .linalg import solve
    a = _square(a, "linalg.solve_ex")
    info = _singular_info(a)
    if info._ndarray.any() and not check_errors:
        shape = np.broadcast_shapes(a._ndarray.shape[:-2], b._ndarray.shape[:-2 if b.ndim >= a.ndim else -1])
        return _SOLVE_EX(wrap(np.full(shape + b._ndarray.shape[-2 if b.ndim >= a.ndim else -1:], np.nan,
                                      dtype=a._ndarray.dtype)), info)
    if not left:
        return _SOLVE_EX(solve(a.mT, b.mT).mT, info)
    return _SOLVE_EX(solve(a, b), info)


def linalg_slogdet(A):
    """torch.linalg.slogdet: torch.slogdet's results as the named tuple ``linalg_slogdet``."""
    from .linalg import slogdet
    return _SLOGDET(*slogdet(A))


@op()
def logdet(a):
    """torch.logdet: ``log(det(A))``; nan for a negative determinant, -inf for a singular matrix."""
    from .linalg import slogdet
    a = _square(a, "linalg.slogdet")
    sign, logabs = slogdet(a)
    from .pointwise import where
    nan = wrap(np.asanyarray(np.nan, dtype=a._ndarray.dtype))
    return where(sign < 0, nan, logabs)


# ---- products built from matmul ---------------------------------------------------------------
def vecdot(x, y, *, dim=-1):
    """torch.linalg.vecdot: ``sum(conj(x) * y, dim)`` over broadcast shapes."""
    x, y = _float_input(x, "linalg.vecdot", "x"), _float_input(y, "linalg.vecdot", "y")
    if x._ndarray.dtype != y._ndarray.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{x.dtype} and y of type {y.dtype} instead".replace("hookgrad.", ""))
    return (x.conj() * y).sum(dim) if x._ndarray.dtype.kind == "c" else (x * y).sum(dim)


def multi_dot(tensors):
    """torch.linalg.multi_dot: a chain of matrix products in the cheapest order (first and last may be 1-D)."""
    from .linalg import matmul
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        nd = t.ndim
        if (i in (0, len(tensors) - 1) and nd not in (1, 2)) or (0 < i < len(tensors) - 1 and nd != 2):
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {nd}D" if 0 < i < len(tensors) - 1
                               else f"multi_dot(): the {'first' if i == 0 else 'last'} tensor must be 1D or 2D "
                                    f"but got {nd}D")
    first_vec, last_vec = tensors[0].ndim == 1, tensors[-1].ndim == 1
    mats = list(tensors)
    if first_vec:
        mats[0] = mats[0].unsqueeze(0)
    if last_vec:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i in range(len(mats) - 1):
        if mats[i].shape[-1] != mats[i + 1].shape[-2]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {tuple(tensors[i].shape)} and "
                               f"{tuple(tensors[i + 1].shape)} cannot be multiplied")
    out = _chain(mats, _chain_order([m.shape[-2] for m in mats] + [mats[-1].shape[-1]]), 0, len(mats) - 1, matmul)
    if first_vec and last_vec:
        return out.reshape(())
    if first_vec:
        return out.squeeze(0)
    if last_vec:
        return out.squeeze(-1)
    return out


def _chain_order(dims):
    """The classic dynamic programme for the cheapest parenthesisation of a matrix chain."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(mats, split, i, j, matmul):
    if i == j:
        return mats[i]
    k = split[i][j]
    return matmul(_chain(mats, split, i, k, matmul), _chain(mats, split, k + 1, j, matmul))


@op(method=False)
def chain_matmul(*matrices, out=None):
    """torch.chain_matmul (deprecated in torch): multi_dot of 2-D matrices."""
    _warn_once("chain_matmul", "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than "
                  "multiple parameters.", stacklevel=2)   # torch's comes from its Python wrapper
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices)


@op(method=True)
def trace(a):
    """torch.trace: the sum of a 2-D matrix's diagonal."""
    if a.ndim != 2:
        raise RuntimeError("trace: expected a matrix, but got tensor with dim " + str(a.ndim))
    _rules.refuse_kernel(a._ndarray, _rules.BOOL, "trace")
    return a.diagonal().sum()


@op(method=True)
def kron(a, b):
    """torch.kron: the Kronecker product over the trailing dims of both (the shorter one padded with 1s)."""
    nd = max(a.ndim, b.ndim)
    a = a.reshape((1,) * (nd - a.ndim) + tuple(a.shape))
    b = b.reshape((1,) * (nd - b.ndim) + tuple(b.shape))
    # interleave: a[i0, 1, i1, 1, ...] * b[1, j0, 1, j1, ...]
    a_shape, b_shape = [], []
    for sa, sb in zip(a.shape, b.shape):
        a_shape += [sa, 1]
        b_shape += [1, sb]
    prod = a.reshape(a_shape) * b.reshape(b_shape)
    return prod.reshape(tuple(sa * sb for sa, sb in zip(a.shape, b.shape)))


def householder_product(a, tau):
    """torch.linalg.householder_product: the first n columns of ``H_1 ... H_k`` with
    ``H_i = I - tau_i v_i v_i^T`` (v_i: column i of A below the diagonal, with 1 on it)."""
    a = _matrix(a, "torch.linalg.householder_product")
    m, n = a.shape[-2:]
    k = tau.shape[-1]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if k > n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    lower = a.tril(-1) + _eye_like(m, a)[:, :n]
    Q = wrap(np.broadcast_to(np.eye(m, n, dtype=a._ndarray.dtype), a._ndarray.shape).copy())
    for i in range(k - 1, -1, -1):  # apply H_k first: Q = H_i Q
        v = lower[..., :, i:i + 1]
        t = tau[..., i:i + 1].unsqueeze(-1)
        Q = Q - t * (v @ (v.mT @ Q))
    return Q


@op("orgqr", method=True)
def orgqr(a, tau):
    """torch.orgqr: householder_product under its LAPACK name."""
    return householder_product(a, tau)


def tensorinv(a, ind=2):
    """torch.linalg.tensorinv: the inverse of ``a`` seen as a matrix over its first ``ind`` dims."""
    from .linalg import inv
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = tuple(a.shape[:ind]), tuple(a.shape[ind:])
    r, c = int(np.prod(rows)), int(np.prod(cols))
    if r != c:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {c} != {r}")
    return inv(a.reshape(r, c)).reshape(cols + rows)


def tensorsolve(a, b, dims=None):
    """torch.linalg.tensorsolve: X with ``tensordot(A, X, X.ndim) = B``."""
    from .linalg import solve
    if dims is not None:
        nd = a.ndim
        moved = [d % nd for d in dims]
        rest = [d for d in range(nd) if d not in moved]
        a = a.permute(rest + moved)
    out_shape = tuple(a.shape[b.ndim:])
    r, c = int(np.prod(b.shape)), int(np.prod(out_shape))
    if r != c:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {c} != {r}")
    return solve(a.reshape(r, c), b.reshape(r)).reshape(out_shape)


def linalg_diagonal(a, *, offset=0, dim1=-2, dim2=-1):
    """torch.linalg.diagonal: Tensor.diagonal with the matrix dims as defaults (keyword-only)."""
    return a.diagonal(offset, dim1, dim2)


def linalg_vander(x, *, N=None):
    """torch.linalg.vander: columns ``x^0, x^1, ..., x^(N-1)`` (increasing powers)."""
    x = as_tensor_arg(x)
    if x.ndim == 0:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = x.shape[-1] if N is None else N
    if n <= 0:
        raise RuntimeError("N must be greater than 1.")
    from .shape import cat
    ones = wrap(np.ones(tuple(x.shape) + (1,), dtype=x._ndarray.dtype))
    if n == 1:
        return ones
    return cat([ones, x.unsqueeze(-1).expand(tuple(x.shape) + (n - 1,)).cumprod(-1)], -1)


# ---- ldl (no derivative in torch either) -------------------------------------------------------
_LDL_FACTOR = _result_type("linalg_ldl_factor", ["LD", "pivots"])
_LDL_FACTOR_EX = _result_type("linalg_ldl_factor_ex", ["LD", "pivots", "info"])


def _ldl(a, hermitian, name):
    a = _square(a, name)
    data = a._ndarray

    def one(m):
        sytrf, = sla.get_lapack_funcs(("sytrf",), (m,))
        ld, ipiv, info = sytrf(m, lower=1)
        return np.tril(ld), ipiv.astype(np.int32), np.int32(info)
    with quiet_fp():
        if data.size == 0:
            return (wrap(data.copy()), wrap(np.zeros(data.shape[:-1], np.int32)),
                    wrap(np.zeros(data.shape[:-2], np.int32)))
        ld, piv, info = _per_matrix(lambda m: _scalar_last(one(m)), data)
    # torch's LD and pivots carry no gradient (its derivative is not implemented)
    return wrap(np.ascontiguousarray(ld)), wrap(piv), wrap(info.reshape(data.shape[:-2]))


def _scalar_last(parts):
    ld, piv, info = parts
    return ld, piv, np.array([[info]])


def ldl_factor_ex(a, *, hermitian=False, check_errors=False):
    """torch.linalg.ldl_factor_ex: LAPACK sytrf's compact ``LD``, ``pivots`` (1-based; negative for the
    2x2 blocks) and ``info``."""
    LD, pivots, info = _ldl(a, hermitian, "torch.linalg.ldl_factor_ex")
    if check_errors and info._ndarray.any():
        raise LinAlgError(f"torch.linalg.ldl_factor_ex: The factorization could not be completed because the "
                          f"input is singular (D[{int(info._ndarray.reshape(-1)[np.flatnonzero(info._ndarray)[0]])}] is zero).")
    return _LDL_FACTOR_EX(LD, pivots, info)


def ldl_factor(a, *, hermitian=False):
    """torch.linalg.ldl_factor: ``(LD, pivots)``."""
    LD, pivots, info = _ldl(a, hermitian, "torch.linalg.ldl_factor")
    if info._ndarray.any():
        raise LinAlgError(f"torch.linalg.ldl_factor: The factorization could not be completed because the input "
                          f"is singular (D[{int(info._ndarray.reshape(-1)[np.flatnonzero(info._ndarray)[0]])}] is zero).")
    return _LDL_FACTOR(LD, pivots)


def ldl_solve(LD, pivots, B, *, hermitian=False):
    """torch.linalg.ldl_solve: X with ``A X = B`` from A's ``ldl_factor``."""
    LD, B = _square(LD, "torch.linalg.ldl_solve", "LD"), _float_input(B, "torch.linalg.ldl_solve", "B")
    batch = np.broadcast_shapes(LD._ndarray.shape[:-2], B._ndarray.shape[:-2])
    ld = np.broadcast_to(LD._ndarray, batch + LD._ndarray.shape[-2:])
    piv = np.broadcast_to(pivots._ndarray, batch + pivots._ndarray.shape[-1:])
    b = np.broadcast_to(B._ndarray, batch + B._ndarray.shape[-2:])

    def one(m, p, rhs):
        sytrs, = sla.get_lapack_funcs(("sytrs",), (m,))
        x, _info = sytrs(m, p[0], rhs, lower=1)
        return x
    with quiet_fp():
        out = _per_matrix(one, ld, piv[..., None, :], b) if b.size else np.zeros(b.shape, b.dtype)
    return wrap(np.ascontiguousarray(out))


# ---- cross products, Vandermonde matrices, Householder representations ----------------------------
class LinalgCrossBackward0(Node):
    """Each input's gradient is a cross product of the other with the incoming one (summed back over
    the dimensions it was broadcast along)."""
    __slots__ = ("dim", "dim_arg")
    saved_names = ("other", "self")   # in torch's packing order
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg)}

    def apply(self, grads):
        other, x = self.saved()
        g, d = grads[0], self.dim
        ga = gb = None
        if self._should_compute_output(0):
            ga = sum_to_shape(cross_product(other.conj(), g, d, d), x._ndarray.shape)
        if self._should_compute_output(1):
            gb = sum_to_shape(cross_product(g, x.conj(), d, d), other._ndarray.shape)
        return ga, gb


def cross_product(a: Tensor, b: Tensor, d: int, dim_arg) -> Tensor:
    """The cross product along dimension ``d`` (already checked to have length 3), the inputs broadcast
    against each other: one LinalgCrossBackward0 node, as torch records ``cross`` and ``linalg.cross``."""
    from .pointwise import check_broadcast
    _rules.refuse_lowprec(a._ndarray, "cross")
    check_broadcast(a, b)
    result = wrap(np.cross(a._ndarray, b._ndarray, axis=d))
    if GRAD.enabled and (a._requires_grad or b._requires_grad):
        node = record_op(LinalgCrossBackward0, (a, b), result)
        node.dim, node.dim_arg = d, dim_arg
        node.save(b, a)
    return result


def linalg_cross(input, other, *, dim=-1):
    """torch.linalg.cross: the cross product of 3-vectors along ``dim`` (inputs broadcast); torch's
    argument names (``linalg.cross(x, other=y)``)."""
    a, b = as_tensor_arg(input), as_tensor_arg(other)
    _rules.refuse_kernel(a._ndarray, _rules.BOOL, "cross")
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if a._ndarray.dtype != b._ndarray.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(a._ndarray.dtype)} but found "
                           f"{_dtype.scalar_type_name(b._ndarray.dtype)}")
    if a.shape[dim] != 3 or b.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {a.shape[dim]} and "
                           f"{b.shape[dim]}")
    return cross_product(a, b, dim % a.ndim, dim)


def _int64():
    from .. import int64
    return int64


_GEQRF = _result_type("geqrf", ["a", "tau"])


@op()
def geqrf(a):
    """torch.geqrf: LAPACK's geqrf (Householder vectors below the diagonal, R on and above it, and tau).
    Like torch, it has no derivative: its results do not require grad."""
    a = _matrix(a, "geqrf")

    def one(m):
        qr_raw, tau = sla.qr(m, mode="raw")[0]
        return np.ascontiguousarray(qr_raw), tau
    with quiet_fp():
        if a._ndarray.size == 0:
            k = min(a._ndarray.shape[-2:])
            return _GEQRF(wrap(a._ndarray.copy()), wrap(np.zeros(a._ndarray.shape[:-2] + (k,), a._ndarray.dtype)))
        packed, tau = _per_matrix(lambda m: _pair_vector(one(m)), a._ndarray)
    return _GEQRF(wrap(packed), wrap(tau.reshape(a._ndarray.shape[:-2] + (-1,))))


def _pair_vector(parts):
    packed, tau = parts
    return packed, tau[None, :]


@op()
def ormqr(a, tau, other, left=True, transpose=False):
    """torch.ormqr: ``Q @ other`` (or ``Q^T``, or on the right) with Q the full Householder product of
    ``(a, tau)`` (what geqrf returns)."""
    a, other = _matrix(a, "ormqr"), _matrix(other, "ormqr")
    m = a.shape[-2]
    from .shape import cat
    k = tau.shape[-1]
    # pad to m Householder vectors with tau = 0 (identity reflections): the full m-by-m Q
    if a.shape[-1] < m:
        a = cat([a, wrap(np.zeros(tuple(a.shape[:-1]) + (m - a.shape[-1],), a._ndarray.dtype))], -1)
    else:
        a = a[..., :, :m]
    if k < m:
        tau = cat([tau, wrap(np.zeros(tuple(tau.shape[:-1]) + (m - k,), tau._ndarray.dtype))], -1)
    Q = householder_product(a, tau)
    Q = Q.mT if transpose else Q
    return Q @ other if left else other @ Q


__all__ = module_all(globals())
