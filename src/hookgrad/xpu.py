"""``torch.xpu``: Intel's GPU back end. hookgrad has none: ``is_available()`` is False, nothing is
counted, and the calls that need the back end raise torch's AssertionError (what torch built
without XPU raises)."""
from __future__ import annotations

_NOT_COMPILED = "Torch not compiled with XPU enabled"


def _needs_xpu(*args, **kwargs):
    raise AssertionError(_NOT_COMPILED)


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def is_initialized() -> bool:
    return False


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def is_tf32_supported() -> bool:
    return False


def manual_seed(seed) -> None:
    """Seeding a device that is not there does nothing (as in torch built without XPU)."""


def manual_seed_all(seed) -> None:
    """Seeding devices that are not there does nothing."""


def seed() -> None:
    """Nothing to seed."""


def seed_all() -> None:
    """Nothing to seed."""


def empty_cache() -> None:
    """No device memory to release."""


def memory_allocated(device=None) -> int:
    return 0


def max_memory_allocated(device=None) -> int:
    return 0


def memory_reserved(device=None) -> int:
    return 0


def max_memory_reserved(device=None) -> int:
    return 0


init = _needs_xpu
current_device = set_device = synchronize = get_device_name = get_device_properties = _needs_xpu
get_device_capability = get_rng_state = set_rng_state = get_rng_state_all = set_rng_state_all = _needs_xpu
current_stream = set_stream = initial_seed = mem_get_info = _needs_xpu
