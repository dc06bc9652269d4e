"""``torch.accelerator``: the device-agnostic accelerator API. hookgrad runs on the CPU only, so
there is no accelerator: the queries answer truthfully and the calls that need a device raise
torch's RuntimeError."""
from __future__ import annotations

from ._absent_device import device_count, is_available  # noqa: F401

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "current_stream", "device_count",
           "device_index", "empty_cache", "get_memory_info", "is_available", "max_memory_allocated",
           "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats",
           "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx", "set_device_index",
           "set_stream", "synchronize", "get_device_capability", "empty_host_cache"]

_NO_DEVICE = "Cannot access accelerator device when none is available."


def _no_device(*args, **kwargs):
    raise RuntimeError(_NO_DEVICE)


def current_accelerator(check_available: bool = False):
    """None: the CPU is not an accelerator."""
    return None


current_device_index = current_device_idx = _no_device
set_device_index = set_device_idx = _no_device
current_stream = set_stream = synchronize = empty_cache = empty_host_cache = _no_device
memory_allocated = max_memory_allocated = memory_reserved = max_memory_reserved = _no_device
memory_stats = reset_accumulated_memory_stats = reset_peak_memory_stats = _no_device
get_memory_info = get_device_capability = _no_device


class device_index:
    """Context manager that would select an accelerator device; ``None`` selects nothing."""

    def __init__(self, device, /):
        self.idx = device

    def __enter__(self):
        if self.idx is not None:
            _no_device()
        return self

    def __exit__(self, *exc):
        return False
