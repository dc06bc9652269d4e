"""``torch.signal.windows``: SciPy-style window functions (``M`` points, ``sym=True`` for filter
design, ``sym=False`` for a periodic window in spectral analysis).

The points are computed in float64 with NumPy/SciPy and cast to the requested dtype once.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import scipy.special

import hookgrad

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _checks(name: str, M: int, dtype, layout):
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not hookgrad.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (hookgrad.float32, hookgrad.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")


def _window(values: np.ndarray, dtype, device, requires_grad: bool):
    out = hookgrad.from_numpy(np.ascontiguousarray(values, dtype=np.float64)).to(dtype)
    if device is not None:
        out = out.to(device)
    return out.requires_grad_(requires_grad)


def _points(start: float, step: float, M: int) -> np.ndarray:
    # torch.linspace(start, start + (M - 1) * step, M)
    return np.linspace(start, start + (M - 1) * step, M)


def _prepare(name, M, dtype, layout):
    dtype = hookgrad.get_default_dtype() if dtype is None else dtype
    _checks(name, M, dtype, layout)
    return dtype


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True, dtype=None,
                layout=hookgrad.strided, device=None, requires_grad: bool = False):
    dtype = _prepare("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _window(np.zeros(0), dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _points(-center / tau, 1.0 / tau, M)
    return _window(np.exp(-np.abs(k)), dtype, device, requires_grad)


def cosine(M: int, *, sym: bool = True, dtype=None, layout=hookgrad.strided, device=None,
           requires_grad: bool = False):
    dtype = _prepare("cosine", M, dtype, layout)
    if M == 0:
        return _window(np.zeros(0), dtype, device, requires_grad)
    step = np.pi / (M + 1 if not sym and M > 1 else M)
    return _window(np.sin(_points(0.5 * step, step, M)), dtype, device, requires_grad)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=hookgrad.strided, device=None,
             requires_grad: bool = False):
    dtype = _prepare("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _window(np.zeros(0), dtype, device, requires_grad)
    scale = 1.0 / (std * np.sqrt(2.0))
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    k = _points(start * scale, scale, M)
    return _window(np.exp(-k ** 2), dtype, device, requires_grad)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=hookgrad.strided, device=None,
           requires_grad: bool = False):
    dtype = _prepare("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _window(np.ones(M), dtype, device, requires_grad)
    step = 2.0 * beta / (M if not sym else M - 1)
    end = min(beta, -beta + (M - 1) * step)
    k = np.linspace(-beta, end, M)
    values = scipy.special.i0(np.sqrt(np.maximum(beta * beta - k ** 2, 0.0))) / scipy.special.i0(beta)
    return _window(values, dtype, device, requires_grad)


def general_cosine(M, *, a: Iterable, sym: bool = True, dtype=None, layout=hookgrad.strided, device=None,
                   requires_grad: bool = False):
    dtype = _prepare("general_cosine", M, dtype, layout)
    if M <= 1:
        return _window(np.ones(M), dtype, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    a = list(a)
    if not a:
        raise ValueError("Coefficients cannot be empty")
    k = _points(0.0, 2 * np.pi / (M if not sym else M - 1), M)
    values = sum((-1) ** i * w * np.cos(i * k) for i, w in enumerate(a))
    return _window(values, dtype, device, requires_grad)


def general_hamming(M, *, alpha: float = 0.54, sym: bool = True, dtype=None, layout=hookgrad.strided,
                    device=None, requires_grad: bool = False):
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M, *, sym: bool = True, dtype=None, layout=hookgrad.strided, device=None, requires_grad: bool = False):
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M, *, sym: bool = True, dtype=None, layout=hookgrad.strided, device=None, requires_grad: bool = False):
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym: bool = True, dtype=None, layout=hookgrad.strided, device=None, requires_grad: bool = False):
    dtype = _prepare("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M, *, sym: bool = True, dtype=None, layout=hookgrad.strided, device=None, requires_grad: bool = False):
    dtype = _prepare("bartlett", M, dtype, layout)
    if M <= 1:
        return _window(np.ones(M), dtype, device, requires_grad)
    k = _points(-1.0, 2.0 / (M if not sym else M - 1), M)
    return _window(1.0 - np.abs(k), dtype, device, requires_grad)


def nuttall(M, *, sym: bool = True, dtype=None, layout=hookgrad.strided, device=None, requires_grad: bool = False):
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)
