"""``torch.xpu``: Intel's GPU back end. hookgrad has none: ``is_available()`` is False, nothing is
counted, and the calls that need the back end raise torch's AssertionError (what torch built
without XPU raises)."""
from __future__ import annotations

from ._absent_device import (device_count, empty_cache, is_available, is_bf16_supported, is_initialized,  # noqa: F401
                             is_tf32_supported, manual_seed, manual_seed_all, max_memory_allocated,
                             max_memory_reserved, memory_allocated, memory_reserved, seed, seed_all)

_NOT_COMPILED = "Torch not compiled with XPU enabled"


def _needs_xpu(*args, **kwargs):
    raise AssertionError(_NOT_COMPILED)


init = _needs_xpu
current_device = set_device = synchronize = get_device_name = get_device_properties = _needs_xpu
get_device_capability = get_rng_state = set_rng_state = get_rng_state_all = set_rng_state_all = _needs_xpu
current_stream = set_stream = initial_seed = mem_get_info = _needs_xpu
