"""``torch.mps``: Apple's Metal back end. hookgrad has none: ``is_available()`` is False, no device is
counted, and the calls that need the back end raise torch's RuntimeError."""
from __future__ import annotations

from ._absent_device import device_count, is_available  # noqa: F401

__all__ = ["compile_shader", "load_metallib", "device_count", "get_rng_state", "manual_seed", "seed",
           "set_rng_state", "synchronize", "empty_cache", "set_per_process_memory_fraction",
           "current_allocated_memory", "driver_allocated_memory", "Event", "recommended_max_memory",
           "is_available"]


def _without_mps(what: str):
    def call(*args, **kwargs):
        raise RuntimeError(f"Cannot execute {what}() without MPS backend.")
    call.__name__ = what
    return call


synchronize = _without_mps("deviceSynchronize")
empty_cache = _without_mps("emptyCache")
get_rng_state = set_rng_state = seed = _without_mps("getDefaultGenerator")


def manual_seed(seed) -> None:
    """Like torch on a machine without Metal: seeding nothing is allowed (the seed must still be an int)."""
    int(seed)


set_per_process_memory_fraction = _without_mps("setMemoryFraction")
current_allocated_memory = _without_mps("getCurrentAllocatedMemory")
driver_allocated_memory = _without_mps("getDriverAllocatedMemory")
recommended_max_memory = _without_mps("getRecommendedMaxMemory")
compile_shader = load_metallib = _without_mps("compileShader")


class Event:
    def __init__(self, enable_timing: bool = False):
        raise RuntimeError("Cannot execute MPSEvent() without MPS backend.")
