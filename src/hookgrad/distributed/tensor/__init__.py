"""``torch.distributed.tensor``: ``DTensor`` exists for type checks; hookgrad never makes one."""


class DTensor:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("hookgrad has no distributed tensors")

    def to_local(self):
        raise RuntimeError("hookgrad has no distributed tensors")


__all__ = ["DTensor"]
