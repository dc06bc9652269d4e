"""What a device back end that hookgrad does not have answers (``torch.cuda``, ``torch.xpu``,
``torch.mps``, ``torch.accelerator``), as torch built without it answers: not available, no
devices, nothing allocated; seeding and emptying caches have nothing to act on."""
from __future__ import annotations


def is_available() -> bool:
    return False


def is_initialized() -> bool:
    return False


def device_count() -> int:
    return 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def is_tf32_supported() -> bool:
    return False


def manual_seed(seed) -> None:
    """Seeding a device that is not there does nothing."""


def manual_seed_all(seed) -> None:
    """Seeding devices that are not there does nothing."""


def seed() -> None:
    """No device generator to seed."""


def seed_all() -> None:
    """No device generators to seed."""


def empty_cache() -> None:
    """No device memory to release."""


# memory counters of no devices: all zero
def memory_allocated(device=None) -> int:
    return 0


max_memory_allocated = memory_reserved = max_memory_reserved = memory_allocated
