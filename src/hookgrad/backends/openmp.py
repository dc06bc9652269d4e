"""torch.backends.openmp: whether OpenMP parallelism is built in - here, whether NumPy's BLAS
was built with OpenMP (hookgrad itself starts no threads)."""
from __future__ import annotations

from .mkl import _blas_config

__all__ = ["is_available"]


def is_available() -> bool:
    config = _blas_config()
    text = " ".join(str(config.get(key, "")) for key in ("openblas configuration", "name")).lower()
    return "openmp" in text or "use_openmp" in text
