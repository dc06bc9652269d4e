"""``torch.distributed``: hookgrad runs in one process and has no process groups.

``is_available()`` is False, as on a torch build without distributed support. The names that hook
libraries import for type checks (``DTensor``, ``FSDPModule``) exist and match nothing; functions that
need a process group raise torch's "not initialized" error.
"""
from __future__ import annotations

import enum

__all__ = ["is_available", "is_initialized", "get_rank", "get_world_size", "all_reduce", "barrier", "ReduceOp",
           "init_process_group"]

_NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."


def is_available() -> bool:
    return False


def is_initialized() -> bool:
    return False


class ReduceOp(enum.Enum):
    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


def _no_group(*args, **kwargs):
    raise ValueError(_NOT_INITIALIZED)


get_rank = get_world_size = all_reduce = all_gather = broadcast = barrier = _no_group


def init_process_group(*args, **kwargs):
    raise RuntimeError("hookgrad has no torch.distributed backends; it runs in a single process")
