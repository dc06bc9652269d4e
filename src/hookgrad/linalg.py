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

# torch.linalg's functions write into out= (a tuple of tensors for those returning several); computing
# first and copying in is what hookgrad's out= does everywhere (see _out.py)
_TAKING_OUT = ("cholesky", "cholesky_ex", "cond", "cross", "det", "eig", "eigh", "eigvals", "eigvalsh",
               "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lu", "lu_factor",
               "lu_factor_ex", "lu_solve", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot",
               "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals",
               "tensorinv", "tensorsolve", "vecdot", "vector_norm")


def _with_out(fn, name):
    import functools
    import inspect

    from . import _out

    # torch names the op behind each in its messages: linalg.inv is linalg_inv_ex
    op_name = {"inv": "linalg_inv_ex", "cholesky": "linalg_cholesky_ex", "solve": "linalg_solve_ex"}.get(
        name, f"linalg_{name}")

    # (only the names are copied: the function installed below consults overrides itself, with out= among
    # the arguments it hands over)
    @functools.wraps(fn, updated=())
    def taking_out(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        return _out.call_with_out(fn, op_name, args, dict(kwargs, out=out))

    signature = inspect.signature(fn)
    if "out" in signature.parameters:  # (it writes out= itself)
        return fn
    out_parameter = inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)
    parameters = list(signature.parameters.values())
    at = next((i for i, p in enumerate(parameters) if p.kind is inspect.Parameter.VAR_KEYWORD), len(parameters))
    taking_out.__signature__ = signature.replace(parameters=parameters[:at] + [out_parameter] + parameters[at:])
    del taking_out.__wrapped__
    taking_out.__wrapped_op__ = fn   # op hooks and dispatch modes report the op itself, not this wrapper
    return taking_out


for _name in _TAKING_OUT:
    globals()[_name] = _with_out(globals()[_name], _name)
del _name

from ._C import _torch_function as _tf  # noqa: E402

_tf.install_namespace(globals(), __all__)  # each function consults __torch_function__ overrides and modes
