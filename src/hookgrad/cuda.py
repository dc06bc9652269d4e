"""``hookgrad.cuda``: there is no GPU backend, so scripts that ask get a clear, truthful answer."""
from __future__ import annotations


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def manual_seed(seed) -> None:
    """Seeding CUDA is a no-op: nothing runs there."""


manual_seed_all = manual_seed


def synchronize(device=None) -> None:
    """Nothing is asynchronous on the CPU."""


def empty_cache() -> None:
    """No device memory to release."""


def is_bf16_supported(including_emulation=True) -> bool:
    return False


def current_device() -> int:
    raise RuntimeError("hookgrad runs on the CPU only: no CUDA device is available")


from .amp import _cuda_amp as amp  # noqa: E402 - torch.cuda.amp's deprecated autocast and GradScaler

__path__: list = []  # a package to the import system, so that ``import hookgrad.cuda.amp`` resolves
