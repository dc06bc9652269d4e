"""float32 log and sine/cosine evaluated step by step as torch's AVX2 normal sampler evaluates them.

torch fills float32 ``normal_`` tensors of 16 or more elements with Cephes-style polynomial
approximations (the single-precision ``log`` and ``sincos`` of the SSE/AVX "mathfun" family).  They
differ from correctly rounded results by an ulp or two, so reproducing torch's samples bit for bit
means doing the same float32 operations in the same order, with the multiply-adds that torch's
compiled kernel fuses (``_mad``, one rounding) fused here too.  Valid for the arguments that sampler
passes: ``log`` of (0, 1] and ``sincos`` of [0, 2*pi).
"""
from __future__ import annotations

import numpy as np

__all__: list = []  # internal: the public names are declared in creation.py

_F = np.float32


def _mad(a, b, c):
    """float32 ``a * b + c`` with one rounding (the float32 product is exact in float64)."""
    return (np.asanyarray(a, np.float64) * np.asanyarray(b, np.float64) + np.asanyarray(c, np.float64)).astype(_F)

_SQRT_HALF = _F(0.707106781186547524)
_LOG_POLY = [_F(c) for c in (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
                             1.4249322787E-1, -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1,
                             3.3333331174E-1)]
_LOG_Q1 = _F(-2.12194440e-4)
_LOG_Q2 = _F(0.693359375)
_MIN_NORMAL = _F(1.17549435e-38)

_FOUR_OVER_PI = _F(1.27323954473516)
_DP1, _DP2, _DP3 = _F(-0.78515625), _F(-2.4187564849853515625e-4), _F(-3.77489497744594108e-8)
_SIN_POLY = [_F(c) for c in (-1.9515295891E-4, 8.3321608736E-3, -1.6666654611E-1)]
_COS_POLY = [_F(c) for c in (2.443315711809948E-005, -1.388731625493765E-003, 4.166664568298827E-002)]


def log_f32(x: np.ndarray) -> np.ndarray:
    x = np.maximum(np.asanyarray(x, dtype=_F), _MIN_NORMAL)
    bits = x.view(np.int32)
    exponent = ((bits >> 23) & 0x1FF) - 127
    x = ((bits & ~0x7F800000) | _F(0.5).view(np.int32)).view(_F)  # mantissa scaled into [0.5, 1)
    e = exponent.astype(_F) + _F(1.0)
    small = x < _SQRT_HALF
    tmp = np.where(small, x, _F(0.0))
    x = x - _F(1.0)
    e = e - np.where(small, _F(1.0), _F(0.0))
    x = x + tmp
    z = x * x
    y = np.full_like(x, _LOG_POLY[0])
    for c in _LOG_POLY[1:]:
        y = _mad(y, x, c)
    y = _mad(y * x, z, e * _LOG_Q1)
    y = _mad(-z, _F(0.5), y)
    x = x + y
    return _mad(e, _LOG_Q2, x)


def cos_sin_f32(x: np.ndarray):
    """(cos x, sin x) for x >= 0."""
    x = np.asanyarray(x, dtype=_F)
    j = (x * _FOUR_OVER_PI).astype(np.int32)  # truncation toward zero
    j = (j + 1) & ~1
    y = j.astype(_F)
    sin_sign = (j & 4) != 0
    swapped = (j & 2) != 0  # octants where sine and cosine trade polynomials
    cos_sign = ((j - 2) & 4) == 0
    x = _mad(y, _DP1, x)
    x = _mad(y, _DP2, x)
    x = _mad(y, _DP3, x)
    z = x * x
    c = np.full_like(x, _COS_POLY[0])
    c = _mad(c, z, _COS_POLY[1])
    c = _mad(c, z, _COS_POLY[2])
    c = _mad(c * z, z, -(z * _F(0.5)))
    c = c + _F(1.0)
    s = np.full_like(x, _SIN_POLY[0])
    s = _mad(s, z, _SIN_POLY[1])
    s = _mad(s, z, _SIN_POLY[2])
    s = _mad(s * z, x, x)
    sin = np.where(swapped, c, s)
    cos = np.where(swapped, s, c)
    return np.where(cos_sign, -cos, cos), np.where(sin_sign, -sin, sin)
