"""``torch.distributed.tensor``: ``DTensor`` exists for type checks; hookgrad never makes one."""


class DTensor:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("hookgrad has no distributed tensors")

    def to_local(self):
        raise RuntimeError("hookgrad has no distributed tensors")


def distribute_tensor(tensor, device_mesh=None, placements=None, **kwargs):
    raise RuntimeError("hookgrad has no distributed tensors")


from .placement_types import Partial, Placement, Replicate, Shard  # noqa: E402

__all__ = ["DTensor", "distribute_tensor", "Placement", "Shard", "Replicate", "Partial"]
