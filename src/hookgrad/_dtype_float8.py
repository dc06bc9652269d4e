"""Conversions into torch's one-byte floats, bit for bit as torch's CPU kernels make them.

torch converts any value to float32 first and then rounds to the nearest float8 (ties to even) with
its own rules at the edges, which differ from ml_dtypes' casts: ``float8_e4m3fn`` saturates (every
finite value beyond 448, and +-inf, becomes +-448; NaN stays NaN), the ``fnuz`` types turn anything
beyond their range (and inf) into their single NaN and have no -0, and ``float8_e8m0fnu`` keeps only
float32's exponent (the sign is dropped, 0 becomes 2**-127, inf and NaN become NaN) rounded to the
nearest power of two. The functions here work on float32 bit patterns with NumPy integer arithmetic
and return the float8 bytes, which ml_dtypes' arrays then hold.
"""
from __future__ import annotations

import numpy as np

__all__: list = []

_U32 = np.uint32


def _finish(result: np.ndarray, sign: np.ndarray) -> np.ndarray:
    return (result | (sign >> _U32(24))).astype(np.uint8)


def _round_normal(bits, exponent_shift: int, mantissa_bits: int):
    """Rounds float32 magnitudes (as bits) in a float8 type's normal range to its bits, ties to even:
    rebias the exponent, add half an ulp minus one plus the ulp's oddness, keep the top bits."""
    drop = 23 - mantissa_bits
    odd = (bits >> _U32(drop)) & _U32(1)
    bias = _U32((exponent_shift << 23) & 0xFFFFFFFF)
    return (bits + bias + _U32((1 << (drop - 1)) - 1) + odd) >> _U32(drop)


def _round_subnormal(bits, denorm_mask: int):
    """Rounds float32 magnitudes below a float8 type's normal range: a float32 addition of a magic
    number puts the rounded subnormal mantissa in the low bits (the FPU rounds, ties to even)."""
    magic = _U32(denorm_mask)
    summed = (bits.view(np.float32) + magic.view(np.float32)).view(_U32)
    return summed - magic


def _e4m3fn(bits, sign):
    result = np.where(bits < _U32(121 << 23), _round_subnormal(bits, 141 << 23),
                      _round_normal(bits, 7 - 127, 3))
    result = np.where(result >= _U32(0x7F), _U32(0x7E), result)  # rounded up to the NaN pattern: 448
    result = np.where(bits >= _U32(1087 << 20), np.where(bits > _U32(0x7F800000), _U32(0x7F), _U32(0x7E)),
                      result)
    return _finish(result, sign)


def _e5m2(bits, sign):
    result = np.where(bits < _U32(113 << 23), _round_subnormal(bits, 134 << 23),
                      _round_normal(bits, 15 - 127, 2))
    result = np.where(bits >= _U32(143 << 23), np.where(bits > _U32(0x7F800000), _U32(0x7F), _U32(0x7C)),
                      result)
    return _finish(result, sign)


def _fnuz(bits, sign, max_bits: int, normal_below: int, denorm_mask: int, exponent_shift: int,
          mantissa_bits: int):
    subnormal = bits < _U32(normal_below)
    result = np.where(subnormal, _round_subnormal(bits, denorm_mask),
                      _round_normal(bits, exponent_shift, mantissa_bits))
    out = _finish(result, sign)
    out[subnormal & (result == 0)] = 0  # no negative zero
    out[bits >= _U32(max_bits)] = 0x80  # the one NaN
    return out


def _e4m3fnuz(bits, sign):
    return _fnuz(bits, sign, 0x87 << 23, 0x78 << 23, 0x8C << 23, 8 - 127, 3)


def _e5m2fnuz(bits, sign):
    return _fnuz(bits, sign, 0x8F << 23, 0x70 << 23, 0x85 << 23, 16 - 127, 2)


def _e8m0fnu(bits, sign):
    exponent = (bits >> _U32(23)) & _U32(0xFF)
    guard = (bits & _U32(0x400000)) != 0
    rest = (bits & _U32(0x3FFFFF)) != 0
    # ties (guard bit alone) go up when float32's implicit bit (the e8m0 "lsb") is 1: normal inputs
    round_up = guard & (rest | (exponent > 0))
    out = np.where((exponent != 0xFF) & round_up, exponent + _U32(1), exponent)
    return out.astype(np.uint8)


_CONVERTERS = {"float8_e4m3fn": _e4m3fn, "float8_e4m3fnuz": _e4m3fnuz, "float8_e5m2": _e5m2,
               "float8_e5m2fnuz": _e5m2fnuz, "float8_e8m0fnu": _e8m0fnu}


def to_float8(values: np.ndarray, target: np.dtype) -> np.ndarray:
    """``values`` (any real NumPy array) as an array of the ml_dtypes float8 type ``target``."""
    values = np.asarray(values)
    if values.dtype == target:
        return values.copy()
    with np.errstate(all="ignore"):  # NaN, inf and overflow are the point here
        f32 = np.ascontiguousarray(values.astype(np.float32)).reshape(-1)
        bits = f32.view(_U32)
        sign = bits & _U32(0x80000000)
        return _CONVERTERS[target.name](bits ^ sign, sign).reshape(values.shape).view(target)
