"""torch.backends.cudnn: not built here. The flags scripts set (``enabled``, ``benchmark``,
``deterministic``, ``allow_tf32``) are settable with torch's checks and change nothing."""
from __future__ import annotations

import sys

from . import _flag_module, _temporarily

__all__ = ["is_available", "version", "flags", "is_acceptable"]


def is_available() -> bool:
    return False


def version():
    return None


def is_acceptable(tensor) -> bool:
    return False


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Context manager setting the flags for a block and restoring them after."""
    module = sys.modules[__name__]
    return _temporarily(module, enabled=enabled, benchmark=benchmark, deterministic=deterministic,
                        allow_tf32=allow_tf32)


_flag_module(__name__, {"enabled": (True, "set_enabled_cudnn"),
                        "benchmark": (False, "set_benchmark_cudnn"),
                        "deterministic": (False, "set_deterministic_cudnn"),
                        "allow_tf32": (True, "set_allow_tf32_cudnn")})
benchmark_limit = 10
