"""Which input dtypes an op refuses, with torch's exception class and wording.

torch's CPU kernels are compiled for a set of dtypes; outside it they raise ``NotImplementedError``
('"abs_cpu" not implemented for 'Bool''), and a few ops check their inputs first and raise
``RuntimeError``. NumPy computes almost anything, so each such op here states what torch refuses
(tests/test_dtype_sweep.py compares every registry op's works/raises outcome per dtype with torch's).
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as _dtype_module
from .._dtype import _LOWPREC_NP, is_lowprec_storage_np, scalar_type_name

__all__: list = []  # declares no op: the helpers here are the ops' own

BOOL = frozenset(("bool",))
INTEGRAL = frozenset(("bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"))
HALF = frozenset(("float16", "bfloat16"))


_NUMPY_DTYPES: dict = {}


def numpy_dtypes(refused: frozenset) -> frozenset:
    """``refused`` (dtype names) as the NumPy dtypes they name, made once per set: a NumPy dtype
    is looked up by hash, where reading its ``.name`` runs Python code in NumPy on every op call."""
    found = _NUMPY_DTYPES.get(refused)
    if found is None:
        from .._dtype import to_dtype
        found = _NUMPY_DTYPES[refused] = frozenset(
            np.dtype(to_dtype(name).np) for name in refused if to_dtype(name).np is not None)
    return found


def refuse_kernel(data, refused, kernel: str) -> None:
    """torch's NotImplementedError when the NumPy array ``data`` has a dtype in ``refused``."""
    if data.dtype in numpy_dtypes(refused):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{scalar_type_name(data.dtype)}'")


# the NumPy dtypes refuse_lowprec refuses (filled as ml_dtypes' types load): callers on hot paths test
# ``array.dtype in LOWPREC`` first and call refuse_lowprec only then
LOWPREC = _LOWPREC_NP


def refuse_float8(data, kernel: str) -> None:
    """``refuse_lowprec`` for an op torch has a complex32 kernel of (index_add, tril, var, rsub):
    float8 and float4 only."""
    dt = getattr(data, "dtype", data)
    if dt != _dtype_module.complex32.np:
        refuse_lowprec(dt, kernel)


def refuse_lowprec(data, kernel: str) -> None:
    """torch's NotImplementedError for an op it has no kernel of for float8 and float4_e2m1fn_x2
    (storage types: it converts, copies, views and compares them, and computes almost nothing on
    them). ``data``: the operand's NumPy array or dtype."""
    dt = getattr(data, "dtype", data)
    if is_lowprec_storage_np(dt):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{scalar_type_name(dt)}'")
