"""Keep freed array memory in the process heap instead of handing it back to the OS at once.

A training step allocates the same large activation and gradient buffers every step and frees
them at the end of it. With glibc's defaults each buffer above 128 KiB is its own ``mmap``: it is
unmapped when freed and the next step's buffer of the same size must be page-faulted in again,
page by page, zero-filled by the kernel. On the virtual machines this project is benchmarked on a
page fault is expensive, and those faults took 40% of a CNN training step (27 ms -> 16 ms with the
heap kept; peak resident memory unchanged, because a step needs the same buffers again).

``keep_freed_memory()`` raises two glibc limits with ``mallopt``: arrays up to 32 MiB come from the
heap (``M_MMAP_THRESHOLD``), and up to 64 MiB of free memory at the top of the heap stays mapped
(``M_TRIM_THRESHOLD``) for the next step to reuse. ``import hookgrad`` calls it once; the setting is
process-wide, so it helps every library in the process (PyTorch's CPU tensors too). Set the
environment variable ``HOOKGRAD_KEEP_HEAP=0`` before the import to leave malloc alone. Elsewhere
than glibc (macOS, musl, Windows) it does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's largest accepted value on 64-bit systems
TRIM_THRESHOLD_BYTES = 64 << 20

_applied = False


def keep_freed_memory() -> bool:
    """Apply the two malloc limits; True when they are in force (glibc only)."""
    global _applied
    if _applied:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018 - present only in glibc, whose mallopt codes these are
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    _applied = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
    return _applied


def apply_default() -> bool:
    """What ``import hookgrad`` does: keep freed memory unless ``HOOKGRAD_KEEP_HEAP=0``."""
    if os.environ.get("HOOKGRAD_KEEP_HEAP", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    return keep_freed_memory()
