"""``torch.autocast`` on a CPU-only NumPy library.

What torch does on a CPU machine, and what happens here:

- ``device_type='cuda'`` (and the other accelerators): torch warns that the device is not
  available and disables autocast; so does hookgrad - the block runs in full precision, as in
  torch on this machine.
- ``enabled=False``, or a dtype CPU autocast does not support (torch warns and disables): the
  block runs unchanged, as in torch.
- ``device_type='cpu'`` enabled with bfloat16 (the default) or float16: matrix products, linear
  layers, convolutions and attention run in the low-precision dtype, losses and most linear
  algebra in float32, cat/stack on the widest input type - torch's CPU op lists, applied by the
  public functions' wrappers (see ``hookgrad._autocast``). bfloat16 arithmetic is computed in
  float32 and rounded once per op, which is what torch's CPU kernels do too; results agree with
  torch's to bfloat16 precision, not bit for bit.
"""
from __future__ import annotations

import functools
import warnings

from .. import _autocast, _dtype
from ..autograd.grad_mode import run_inside

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled"]

_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                 "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")
_CPU_DTYPES = ("bfloat16", "float16")


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast exists for ``device_type``: on this CPU-only library, only 'cpu'."""
    return device_type == "cpu"


def is_autocast_enabled(device_type=None) -> bool:
    """Whether an enabled autocast block is active for ``device_type`` (no argument: CUDA's, never)."""
    if device_type is None or device_type != "cpu":
        return False
    return _autocast.STATE.enabled


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
        self.fast_dtype = _autocast.STATE.dtype if dtype is None else dtype
        self._cache_enabled = _autocast.STATE.cache_enabled if cache_enabled is None else cache_enabled
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
        if self.device != "cpu":
            return self
        state = _autocast.STATE
        self._prev = (state.enabled, state.dtype, state.cache_enabled)
        state.enabled = bool(self._enabled)
        if self._enabled:
            state.dtype = getattr(_dtype, _dtype_name(self.fast_dtype))
        state.cache_enabled = bool(self._cache_enabled)
        state.depth += 1
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if self.device != "cpu":
            return False
        state = _autocast.STATE
        state.depth -= 1
        if state.depth == 0:
            state.cache.clear()  # the casts of weights live as long as the outermost block
        state.enabled, state.dtype, state.cache_enabled = self._prev
        return False

    def __call__(self, func):
        return autocast_decorator(self, func)


# ---- torch.* functions on the autocast state (what torch.autocast itself uses) -----------------
def _cpu_only(device_type: str) -> bool:
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError("Expected one of " + ", ".join(_DEVICE_TYPES) + " device")
    return device_type == "cpu"


def get_autocast_dtype(device_type: str):
    """The dtype autocast casts to on ``device_type`` (CPU: bfloat16 unless set; others: torch's defaults)."""
    if _cpu_only(device_type):
        return _autocast.STATE.dtype
    return _dtype.float16


def set_autocast_dtype(device_type: str, dtype) -> None:
    if _cpu_only(device_type):
        _autocast.STATE.dtype = getattr(_dtype, _dtype_name(dtype))


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    if not isinstance(device_type, str):
        raise TypeError("set_autocast_enabled(): argument 'device_type' must be str, not "
                        f"{type(device_type).__name__}")
    if _cpu_only(device_type):
        _autocast.STATE.enabled = bool(enabled)


def get_autocast_cpu_dtype():
    return _autocast.STATE.dtype


def set_autocast_cpu_dtype(dtype) -> None:
    set_autocast_dtype("cpu", dtype)


def is_autocast_cpu_enabled() -> bool:
    return _autocast.STATE.enabled


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _autocast.STATE.enabled = bool(enabled)


def get_autocast_gpu_dtype():
    return _dtype.float16


def set_autocast_gpu_dtype(dtype) -> None:
    """No GPU here: accepted and forgotten, as torch's CPU build keeps it for a device it lacks."""


def clear_autocast_cache() -> None:
    _autocast.STATE.cache.clear()


def autocast_increment_nesting() -> int:
    _autocast.STATE.depth += 1
    return _autocast.STATE.depth


def autocast_decrement_nesting() -> int:
    _autocast.STATE.depth -= 1
    return _autocast.STATE.depth


def is_autocast_cache_enabled() -> bool:
    return _autocast.STATE.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    _autocast.STATE.cache_enabled = bool(enabled)


_TORCH_FUNCTIONS = ["get_autocast_dtype", "set_autocast_dtype", "set_autocast_enabled", "get_autocast_cpu_dtype",
                    "set_autocast_cpu_dtype", "is_autocast_cpu_enabled", "set_autocast_cpu_enabled",
                    "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "clear_autocast_cache",
                    "autocast_increment_nesting", "autocast_decrement_nesting", "is_autocast_cache_enabled",
                    "set_autocast_cache_enabled"]


# -- decorators for custom autograd Functions under autocast --------------------------------------
__all__ += ["autocast_decorator", "custom_fwd", "custom_bwd"]


def autocast_decorator(autocast_instance, func):
    """``func`` run inside ``autocast_instance`` at each call."""
    return run_inside(func, lambda: autocast_instance)


def _cast(value, device_type: str, dtype):
    """``value`` with its floating tensors (other than float64) on ``device_type`` cast to ``dtype``,
    through lists, tuples and dicts."""
    import collections.abc
    import numpy as np
    from .._tensor import Tensor
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not _dtype.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        items = (_cast(v, device_type, dtype) for v in value)
        return type(value)(items) if isinstance(value, (list, tuple)) else items
    return value


def _check_device_type(device_type) -> None:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorate a custom Function's ``forward``: it records whether autocast was on (for
    ``custom_bwd``); with ``cast_inputs``, inside an autocast region, its floating inputs are cast
    to that dtype and it runs with autocast off."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        in_autocast = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = False
        if in_autocast:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorate a custom Function's ``backward``: it runs with the autocast state its forward had."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
