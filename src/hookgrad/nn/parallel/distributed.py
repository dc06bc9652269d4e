"""``DistributedDataParallel`` exists for type checks; it needs a process group, which hookgrad lacks."""
from __future__ import annotations

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    def __init__(self, module, *args, **kwargs) -> None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
