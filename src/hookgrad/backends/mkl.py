"""torch.backends.mkl: whether Intel MKL does the linear algebra - here, whether NumPy's BLAS is
MKL."""
from __future__ import annotations

__all__ = ["is_available"]


def _blas_config() -> dict:
    try:
        import numpy as np
        return dict(np.__config__.CONFIG["Build Dependencies"]["blas"])
    except Exception:  # noqa: BLE001 - older NumPy has no CONFIG dict: nothing known
        return {}


def is_available() -> bool:
    return "mkl" in str(_blas_config().get("name", "")).lower()
