"""torch.backends.cpu: the SIMD level of the kernels that do the work (NumPy's here)."""
from __future__ import annotations

__all__ = ["get_cpu_capability"]


def get_cpu_capability() -> str:
    """"AVX512" or "AVX2" when NumPy's kernels can use that instruction set on this machine,
    else "DEFAULT" (other architectures included)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # NumPy 1.x keeps it under numpy.core
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as features
        except ImportError:
            return "DEFAULT"
    if features.get("AVX512F") and features.get("AVX512_SKX"):
        return "AVX512"
    if features.get("AVX2") and features.get("FMA3"):
        return "AVX2"
    return "DEFAULT"
