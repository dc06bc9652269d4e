"""``torch.autocast`` on a CPU-only NumPy library.

What torch does on a CPU machine, and what happens here:

- ``device_type='cuda'`` (and the other accelerators): torch warns that the device is not
  available and disables autocast; so does hookgrad - the block runs in full precision, as in
  torch on this machine.
- ``enabled=False``, or a dtype CPU autocast does not support (torch warns and disables): the
  block runs unchanged, as in torch.
- ``device_type='cpu'`` enabled with bfloat16 (the default) or float16: torch runs matmuls,
  linear layers and convolutions in the low-precision dtype. hookgrad has no bfloat16 and no
  per-op autocast lists, so entering such a block raises NotImplementedError instead of
  silently computing something else; pass ``enabled=False`` to run the same code in float32.
"""
from __future__ import annotations

import functools
import warnings

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled"]

_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                 "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
_CPU_DTYPES = ("bfloat16", "float16")
_enabled_depth = {"cpu": 0}


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast exists for ``device_type``: on this CPU-only library, only 'cpu'."""
    return device_type == "cpu"


def is_autocast_enabled(device_type=None) -> bool:
    """Whether an enabled autocast block is active (never, here: see the module docstring)."""
    if device_type is None or device_type != "cpu":
        return False
    return _enabled_depth["cpu"] > 0


def _dtype_name(dtype) -> str:
    return str(dtype).split(".")[-1]


class autocast:
    """Context manager and decorator with torch's signature; see the module docstring."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in _DEVICE_TYPES:
            raise RuntimeError("Expected one of " + ", ".join(_DEVICE_TYPES) + " device")
        self.device = device_type
        self.fast_dtype = dtype
        self._cache_enabled = True if cache_enabled is None else cache_enabled
        if enabled and device_type == "cuda":
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", UserWarning,
                          stacklevel=2)
            enabled = False
        elif enabled and device_type != "cpu":
            warnings.warn(f"User provided device_type of '{device_type}', but the device is not available. "
                          "Disabling autocast.", UserWarning, stacklevel=2)
            enabled = False
        elif enabled and dtype is not None and _dtype_name(dtype) not in _CPU_DTYPES:
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\nCPU "
                          "Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                          UserWarning, stacklevel=2)
            enabled = False
        self._enabled = enabled

    def __enter__(self):
        if self._enabled:
            wanted = _dtype_name(self.fast_dtype) if self.fast_dtype is not None else "bfloat16"
            raise NotImplementedError(
                f"autocast(device_type='cpu', dtype={wanted}) is not supported by hookgrad: it has no per-op "
                "low-precision casting (and no bfloat16), and running the block in float32 would silently give "
                "other results than torch. Use autocast(..., enabled=False) to run it in full precision.")
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def run(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return run
