"""``torch.cpu``: the device hookgrad runs on. Always available, one device, nothing
asynchronous; ``amp`` holds the deprecated ``torch.cpu.amp.autocast`` and ``GradScaler``."""
from __future__ import annotations

from . import amp

__all__ = ["amp", "current_device", "device_count", "is_available", "is_initialized", "set_device",
           "synchronize"]


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def set_device(device) -> None:
    """There is one CPU device: nothing to switch."""


def synchronize(device=None) -> None:
    """Nothing runs asynchronously on the CPU."""
