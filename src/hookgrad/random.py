"""``torch.random``: the global generator's seeding and state, and ``fork_rng``."""
from __future__ import annotations

import contextlib

from ._ops.creation import get_rng_state, initial_seed, manual_seed, seed, set_rng_state

__all__ = ["set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng",
           "thread_safe_generator"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """Inside the block, draw random numbers freely; on leaving it (also through an exception) the
    global generator is back in the state it had on entry. ``enabled=False`` forks nothing.

    hookgrad has no accelerator, so only the CPU generator is forked; naming devices is an error,
    as it is for torch on a machine without them."""
    if device_type == "meta" or not enabled:
        yield
        return
    devices = [] if devices is None else list(devices)
    if devices:
        kind = device_type or "cuda"
        raise RuntimeError(f"fork_rng: no {kind} device to fork the generator of (devices={devices}); "
                           "hookgrad runs on the CPU only")
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


def thread_safe_generator():
    """The generator a DataLoader thread worker should draw from; None (the global generator) here,
    as in torch outside thread workers: hookgrad's workers are processes."""
    return None
