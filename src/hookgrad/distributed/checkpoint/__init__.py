"""``torch.distributed.checkpoint`` (DCP): sharded checkpoints of distributed tensors, which hookgrad does
not make. The names exist for code that imports them; using them raises."""


def _no_dcp(*args, **kwargs):
    raise RuntimeError("hookgrad has no distributed checkpointing (torch.distributed.checkpoint); save and load "
                       "state dicts with torch.save and torch.load")


class _NoDCP:
    """A DCP class: making one raises (the storage readers/writers and planners)."""
    def __init__(self, *args, **kwargs):
        _no_dcp()


def save(state_dict, *args, **kwargs):
    _no_dcp()


def load(state_dict, *args, **kwargs):
    _no_dcp()


def async_save(state_dict, *args, **kwargs):
    _no_dcp()

__all__ = ["save", "load", "async_save"]
