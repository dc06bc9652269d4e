"""``torch.__config__``: how the framework was built, as text. hookgrad is built from NumPy and SciPy, so
``show()`` names those and the BLAS NumPy links; libraries search the text for build switches
(torch_geometric looks for ``USE_MKL=OFF``), which hookgrad never writes."""
from __future__ import annotations

import os
import platform

__all__ = ["show", "parallel_info"]


def show() -> str:
    import numpy
    import scipy

    from .version import __version__
    return (f"hookgrad {__version__} built with:\n  - Python {platform.python_version()}\n"
            f"  - NumPy {numpy.__version__}\n  - SciPy {scipy.__version__}\n"
            "  - CPU only (no CUDA, no compiler)\n")


def parallel_info() -> str:
    from . import get_num_interop_threads, get_num_threads
    lines = ["hookgrad parallel settings:", f"\tget_num_threads() : {get_num_threads()}",
             f"\tget_num_interop_threads() : {get_num_interop_threads()}", "Environment variables:"]
    lines += [f"\t{name} : {os.environ.get(name, '[not set]')}" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")]
    return "\n".join(lines) + "\n"


def _cxx_flags() -> str:
    """No C++ is compiled: no flags."""
    return ""
