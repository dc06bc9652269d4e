"""Devices. hookgrad computes on the CPU with NumPy; ``device`` keeps torch's API and the seam
where another array backend could be plugged in."""
from __future__ import annotations


class device:
    """``hookgrad.device("cpu")``; any other type raises, naming what is available."""

    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        type = str(type)
        if ":" in type:
            type, idx = type.split(":", 1)
            index = int(idx)
        if type != "cpu":
            raise RuntimeError(f"hookgrad supports only the 'cpu' device, got {type!r}")
        self.type = type
        self.index = index

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and other.type == self.type

    def __hash__(self):
        return hash(self.type)

    def __repr__(self):
        return f"device(type='{self.type}')"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


CPU = device("cpu")
