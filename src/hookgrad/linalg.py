"""``hookgrad.linalg``: norms, determinants, inverses, solves and decompositions (all differentiable)."""
from ._ops.decompositions import (LinAlgError, cond, householder_product, inv_ex, lstsq, lu_factor,
                                  lu_factor_ex, matrix_norm, matrix_rank, multi_dot, norm, pinv,
                                  solve_ex, solve_triangular, svdvals, eigh, eigvalsh, cholesky_ex,
                                  tensorinv, tensorsolve, vecdot)
from ._ops.decompositions import linalg_cholesky as cholesky
from ._ops.decompositions import linalg_diagonal as diagonal
from ._ops.decompositions import linalg_lu as lu
from ._ops.decompositions import linalg_lu_solve as lu_solve
from ._ops.decompositions import linalg_qr as qr
from ._ops.decompositions import linalg_svd as svd
from ._ops.decompositions import linalg_vander as vander
from ._ops.decompositions import ldl_factor, ldl_factor_ex, ldl_solve
from ._ops.decompositions import linalg_cross as cross
from ._ops.decompositions import matrix_exp, matrix_power
from ._ops.decompositions import linalg_slogdet as slogdet
from ._ops.linalg import det, inv, matmul, solve
from ._ops.reduce import vector_norm
from ._ops.complex import linalg_eig as eig, linalg_eigvals as eigvals


__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigvals", "eigh", "eigvalsh",
           "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve",
           "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm", "pinv",
           "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv",
           "tensorsolve", "vander", "vecdot", "vector_norm"]

from . import _argcheck  # noqa: E402

# torch.linalg's functions are built-ins: they take NumPy's axis=/keepdims= for dim=/keepdim=
_argcheck.accept_numpy_names(globals(), __all__)

from ._C import _torch_function as _tf  # noqa: E402

_tf.install_namespace(globals(), __all__)  # each function consults __torch_function__ overrides and modes
