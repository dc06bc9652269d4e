"""``torch.nn.attention``: choose the kernels ``scaled_dot_product_attention`` may use.

``sdpa_kernel(backends)`` enables only the given kernels inside a ``with`` block and restores the
previous choice on leaving. hookgrad has one implementation; the choice decides, as on torch's CPU
build, which calls are allowed (only GPU kernels enabled: torch's RuntimeError).
"""
from __future__ import annotations

import contextlib
import enum

from . import _backends

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """The kernels of scaled dot product attention."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __repr__(self):
        return f"<SDPBackend.{self.name}: {self.value}>"

    def __str__(self):
        return f"SDPBackend.{self.name}"


def _cur_sdpa_kernel_backends(with_priority: bool = False) -> list:
    """The enabled kernels, in priority order when ``with_priority``."""
    order = _backends.priority if with_priority else _backends.DEFAULT_PRIORITY
    return [SDPBackend(b) for b in order if b in _backends.enabled]


def _sdpa_kernel(backends, set_priority: bool = False) -> None:
    values = [int(b) for b in backends]
    _backends.enabled.clear()
    _backends.enabled.update(values)
    if set_priority:
        _backends.priority[:] = values + [b for b in _backends.DEFAULT_PRIORITY if b not in values]


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Enable only ``backends`` (an ``SDPBackend`` or a list of them) within the block."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous = _cur_sdpa_kernel_backends(with_priority=set_priority)
    previous_priority = list(_backends.priority)
    try:
        _sdpa_kernel(backends, set_priority)
        yield {}
    finally:
        _sdpa_kernel(previous, False)
        _backends.priority[:] = previous_priority
