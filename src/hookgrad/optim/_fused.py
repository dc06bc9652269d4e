"""``y += alpha * x`` rounded once, as torch's ``y.add_(x, alpha=alpha)`` computes it on the CPU.

torch's vectorized add with an ``alpha`` is a fused multiply-add: ``alpha * x`` is not rounded
before the sum. NumPy has no fused multiply-add, and rounding the product first changes the last
bit of about one element in ten (SGD's update ``p - lr * g`` with lr = 0.01 on float32). BLAS's
``axpy`` is the same operation; OpenBLAS computes it with fused multiply-adds, in one pass and
without a temporary, about twice as fast as NumPy's two passes. Whether the loaded BLAS rounds
once is checked on first use (a build without FMA instructions would round twice, as torch's own
kernels on such a CPU do not); where it does not, or for other dtypes, the product is rounded
first, as before.
"""
from __future__ import annotations

import numpy as np

from .. import _threads

_UNSET = object()
_axpy_by_dtype: dict = {}


def _probe_rounds_once(axpy, dtype) -> bool:
    """Whether ``axpy`` rounds a*x + y once: with a = x = 1 + 2^-k and y = -1, a*x + y is
    2^(1-k) + 2^-2k exactly, which the product rounded first loses (its last term falls below
    the precision). 37 elements: a vectorized body and a scalar tail."""
    k = 12 if dtype == np.float32 else 27
    one_plus = dtype.type(1 + 2.0 ** -k)
    x = np.full(37, one_plus, dtype=dtype)
    y = np.full(37, -1, dtype=dtype)
    out = axpy(x, y, a=one_plus)
    return bool(np.all(out == dtype.type(2.0 ** (1 - k) + 2.0 ** (-2 * k))))


def _axpy_for(dtype):
    """SciPy's BLAS axpy for float32/float64 when it rounds once, else None (imported on first use)."""
    axpy = _axpy_by_dtype.get(dtype, _UNSET)
    if axpy is not _UNSET:
        return axpy
    axpy = None
    if dtype in (np.float32, np.float64):
        try:
            from scipy.linalg import blas
        except ImportError:  # pragma: no cover - SciPy is a dependency
            blas = None
        if blas is not None:
            axpy = blas.saxpy if dtype == np.float32 else blas.daxpy
            if not _probe_rounds_once(axpy, np.dtype(dtype)):
                axpy = None
            _threads.include_loaded_libraries()  # SciPy's BLAS: one thread for such small work
    _axpy_by_dtype[np.dtype(dtype)] = axpy
    return axpy


def add_scaled_(y: np.ndarray, x: np.ndarray, alpha: float) -> None:
    """``y += alpha * x`` in place, rounded once where BLAS allows (see the module's docstring)."""
    axpy = _axpy_by_dtype.get(y.dtype, _UNSET)
    if axpy is _UNSET:
        axpy = _axpy_for(y.dtype)
    if axpy is None or alpha == 0 or x.dtype != y.dtype or not y.size:
        # (alpha == 0: BLAS skips the update, torch adds 0 * x, which is NaN for an inf or NaN x)
        y += x * alpha
        return
    if _threads._current != 1:
        _threads.use_threads_for(y.size)
    # the wrapper's arguments (x, y, n, a) all by position: a keyword costs it 0.2-0.3 us more
    if y.flags.c_contiguous:
        flat = y.reshape(-1)
        xs = x.reshape(-1)  # (a copy only if x is not contiguous)
        if axpy(xs, flat, xs.size, alpha) is flat:
            return
    if y.__class__ is not np.ndarray:   # a meta tensor's array (zero strides): no values to add into
        return
    target = np.ascontiguousarray(y)  # the wrapper wants one contiguous vector
    flat = target.reshape(-1)
    xs = x.reshape(-1)
    flat[...] = axpy(xs, flat, xs.size, alpha)
    y[...] = target
