"""Process-wide switches with torch's API: deterministic-algorithms mode and thread counts.

hookgrad's operations are deterministic (NumPy on the CPU, no atomics, no autotuning), so the
deterministic mode only records what was asked, with torch's argument checks; code that reads
it back sees the value it set.

Threads: hookgrad starts none; the only parallel work is inside NumPy's BLAS, whose thread count
hookgrad's BLAS thread policy (``_threads``) chooses per product. ``set_num_threads(n)`` sets the
most threads a large product may use and ``get_num_threads()`` reads it; with the optional
``threadpoolctl`` (``pip install hookgrad[threads]``) the limit also reaches every other BLAS
library loaded in the process.
"""
from __future__ import annotations

from . import _threads as _blas_policy

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_num_threads", "get_num_threads",
           "get_num_interop_threads"]

_deterministic = {"mode": False, "warn_only": False}
_threads: dict = {"controller": None}  # keeps threadpoolctl's limit alive


def use_deterministic_algorithms(mode, *, warn_only=False) -> None:
    """Record deterministic mode (hookgrad's ops are deterministic either way)."""
    if not isinstance(mode, bool):
        raise TypeError("_set_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError("_set_deterministic_algorithms(): argument 'warn_only' must be bool, not "
                        f"{type(warn_only).__name__}")
    _deterministic["mode"] = mode
    _deterministic["warn_only"] = warn_only if mode else False


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _deterministic["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode) -> None:
    """0/'default': off; 1/'warn': deterministic with warnings; 2/'error': deterministic."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`, but "
                               f"got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    elif debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    if debug_mode == 0:
        use_deterministic_algorithms(False)
    else:
        use_deterministic_algorithms(True, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    if not _deterministic["mode"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2


def _threadpoolctl():
    try:
        import threadpoolctl
    except ImportError:
        return None
    return threadpoolctl


def set_num_threads(num) -> None:
    """The most threads NumPy's BLAS may use: hookgrad's thread policy (``_threads``) gives small
    products one thread and large ones up to this many; with threadpoolctl installed every other
    BLAS library loaded in the process (SciPy's own, say) is limited to it too."""
    if isinstance(num, bool) or not isinstance(num, int):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(num).__name__}")
    if num <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _blas_policy.set_max_threads(num)
    tpc = _threadpoolctl()
    if tpc is not None:
        _threads["controller"] = tpc.threadpool_limits(limits=num, user_api="blas")
        _blas_policy.forget_current()  # the limit above may have changed NumPy's count too


def get_num_threads() -> int:
    """The most threads NumPy's BLAS may use (see set_num_threads)."""
    return _blas_policy.max_threads()


def get_num_interop_threads() -> int:
    """hookgrad runs operations one after another: one inter-op thread."""
    return 1
