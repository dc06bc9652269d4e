"""``torch.nn.utils.parametrizations``: weight_norm, spectral_norm and orthogonal as parametrizations.

Each registers a small module through :func:`~hookgrad.nn.utils.parametrize.register_parametrization`,
so the weight is recomputed from the originals on every read and gradients reach the originals.
``orthogonal``'s three maps are compositions of existing ops: ``matrix_exp`` by scaling and
squaring a Taylor series (accurate to rounding), ``cayley`` through ``linalg.solve``,
``householder`` as the product of the reflections.
"""
from __future__ import annotations

import enum
import math

import numpy as np

import hookgrad
from ..._tensor import Tensor
from ..modules.module import Module
from . import parametrize
from ._norms import norm_except_dim, normalized, reshape_to_matrix, weight_norm_value

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _matrix_exp(A: Tensor) -> Tensor:
    """exp(A) for (batches of) square matrices: Taylor series of A / 2**s, squared s times."""
    norm = float(np.abs(A.detach().numpy()).sum(-2).max()) if A.numel() else 0.0
    squarings = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    B = A / (2.0 ** squarings)
    identity = hookgrad.eye(A.shape[-1], dtype=A.dtype).expand(*A.shape)
    result, term = identity, identity
    for k in range(1, 20):  # ||B|| <= 1/2: the tail after 19 terms is below 1e-20
        term = term @ B / k
        result = result + term
    for _ in range(squarings):
        result = result @ result
    return result


def _householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first k columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T, v_i = column i of the strictly
    lower triangular A with a 1 on the diagonal (LAPACK's orgqr)."""
    n, k = A.shape[-2], A.shape[-1]
    identity = hookgrad.eye(n, dtype=A.dtype)
    Q = identity.expand(*A.shape[:-2], n, n)
    for i in range(k):
        v = (A[..., :, i] + identity[:, i]).unsqueeze(-1)
        Q = Q - tau[..., i, None, None] * ((Q @ v) @ v.mT)
    return Q[..., :k]


def _qr_q_positive(A: Tensor) -> Tensor:
    """Q of A's QR decomposition with R's diagonal made non-negative (no gradient)."""
    q, r = np.linalg.qr(A.detach().numpy())
    signs = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    return hookgrad.tensor(q * np.expand_dims(signs, -2), dtype=A.dtype)


def _geqrf(Q: Tensor):
    """LAPACK's geqrf of (a batch of) matrices: the reflectors below R's diagonal, and tau."""
    import scipy.linalg
    data = Q.detach().numpy()
    flat = data.reshape(-1, *data.shape[-2:])
    pieces = [scipy.linalg.qr(m, mode="raw")[0] for m in flat]
    A = np.stack([np.asarray(qr) for qr, _ in pieces]).reshape(data.shape)
    tau = np.stack([t for _, t in pieces]).reshape(*data.shape[:-2], -1)
    return A, tau


def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.shape[-2], Q.shape[-1]
    eps = 10.0 * n * hookgrad.finfo(Q.dtype).eps
    return hookgrad.allclose(Q.mH @ Q, hookgrad.eye(k, dtype=Q.dtype), atol=eps)


class _OrthMaps(enum.Enum):
    matrix_exp = enum.auto()
    cayley = enum.auto()
    householder = enum.auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X, n, k = X.mT, k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = hookgrad.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH  # skew-symmetric
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _matrix_exp(A)
            else:
                identity = hookgrad.eye(n, dtype=A.dtype)
                Q = hookgrad.linalg.solve(identity - 0.5 * A, identity + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            # the diagonal's integer part picks each column's sign, as torch does
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with hookgrad.no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape "
                                 f"{Q.shape}.")
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transposed_input = n < k
            if n < k:
                Q, n, k = Q.mT, k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                              "parametrizations when use_trivialization=False.")
                A, tau = _geqrf(Q)
                # reflectors whose diagonal sign makes the product Q itself (see forward's .int())
                diag = np.sign(np.diagonal(A, axis1=-2, axis2=-1))
                diag = np.where(tau == 0.0, -diag, diag)
                idx = np.arange(min(A.shape[-2:]))
                A[..., idx, idx] = diag
                A = hookgrad.tensor(A, dtype=Q.dtype)
                return A.mT if transposed_input else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _qr_q_positive(Q)
            else:
                noise = hookgrad.randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype)
                Q = _qr_q_positive(hookgrad.cat([Q, noise], dim=-1))
            self.base = Q
            neg_identity = hookgrad.zeros_like(Q_init)
            neg_identity.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_identity


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain ``module.<name>`` (a matrix or batch of matrices) to be orthogonal."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    parametrize.register_parametrization(module, name, _Orthogonal(weight, orth_enum,
                                                                   use_trivialization=use_trivialization),
                                         unsafe=True)
    return module


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_norm_value(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int = 0):
    """Split ``module.<name>`` into a magnitude ``original0`` (g) and a direction ``original1`` (v)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                 error_msgs) -> None:
        # state dicts saved with the legacy weight_norm name the pieces <name>_g / <name>_v
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = reshape_to_matrix(weight.detach(), self.dim)
            h, w = weight_mat.shape
            self.register_buffer("_u", normalized(weight_mat.new_empty(h).normal_(0, 1), self.eps))
            self.register_buffer("_v", normalized(weight_mat.new_empty(w).normal_(0, 1), self.eps))
            self._power_method(weight_mat, 15)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # updates the buffers in place, so the estimate carries over between calls
        with hookgrad.no_grad():
            for _ in range(n_power_iterations):
                # updated in place, then assigned back as torch's does: each assignment of a buffer
                # runs the global buffer registration hooks
                self._u = self._u.copy_(normalized(hookgrad.mv(weight_mat, self._v), self.eps))
                self._v = self._v.copy_(normalized(hookgrad.mv(weight_mat.H, self._u), self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalized(weight, self.eps)
        weight_mat = reshape_to_matrix(weight, self.dim)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = hookgrad.vdot(u, hookgrad.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> Module:
    """Divide ``module.<name>`` by its largest singular value, estimated by power iteration."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        nn = hookgrad.nn
        dim = 1 if isinstance(module, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
