"""``torch.random``: the default CPU generator's seed and state, and ``fork_rng``."""
from __future__ import annotations

import contextlib

from ._ops.creation import (default_generator, get_rng_state, initial_seed, manual_seed, seed,  # noqa: F401
                            set_rng_state)
from ._ops.rng import Generator  # noqa: F401

__all__ = ["fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """Run the block with the generator state restored afterwards (also when the block raises).
    Only the CPU generator exists here, so ``devices`` must name none (accelerator devices raise)."""
    if device_type == "meta" or not enabled:
        yield
        return
    if devices is not None and list(devices):
        raise AssertionError("Torch not compiled with CUDA enabled")  # torch's words on a CPU-only build
    saved = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(saved)


def thread_safe_generator():
    """The generator a DataLoader thread worker should draw from; None (the default generator) here,
    as in torch outside thread workers: hookgrad's workers are processes."""
    return None


__all__ += ["thread_safe_generator"]
