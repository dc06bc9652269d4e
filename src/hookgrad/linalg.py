"""``hookgrad.linalg``: norms, determinants, inverses and solves (all differentiable)."""
from ._ops.linalg import det, inv, linalg_norm as norm, matrix_norm, slogdet, solve
from ._ops.reduce import vector_norm


def inv_ex(a, *, check_errors=False):
    from collections import namedtuple
    from ._ops.creation import zeros
    return namedtuple("inv_ex", ["inverse", "info"])(inv(a), zeros(a.shape[:-2], dtype="int32"))


def cross(a, b, dim=-1):
    return a.roll(-1, dim) * b.roll(-2, dim) - a.roll(-2, dim) * b.roll(-1, dim)


__all__ = ["det", "inv", "inv_ex", "norm", "matrix_norm", "vector_norm", "slogdet", "solve", "cross"]
