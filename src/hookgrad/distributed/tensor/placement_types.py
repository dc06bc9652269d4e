"""``torch.distributed.tensor.placement_types``: how a distributed tensor lies on each mesh dimension.

hookgrad makes no distributed tensors; the placements are plain values for code that names them."""
from __future__ import annotations

__all__ = ["Placement", "Shard", "Replicate", "Partial"]


class Placement:
    def is_shard(self, dim=None) -> bool:
        return isinstance(self, Shard) and (dim is None or self.dim == dim)

    def is_replicate(self) -> bool:
        return isinstance(self, Replicate)

    def is_partial(self, reduce_op=None) -> bool:
        return isinstance(self, Partial) and (reduce_op is None or self.reduce_op == reduce_op)

    def _fields(self):
        return ()

    def __eq__(self, other):
        return type(other) is type(self) and other._fields() == self._fields()

    def __hash__(self):
        return hash((type(self).__name__, self._fields()))


class Shard(Placement):
    def __init__(self, dim: int):
        self.dim = dim

    def _fields(self):
        return (self.dim,)

    @staticmethod
    def local_shard_size_and_offset(curr_local_size: int, num_chunks: int, rank: int):
        """(size, offset) of chunk ``rank`` when ``curr_local_size`` is split as ``torch.chunk`` splits it."""
        chunk = -(-curr_local_size // num_chunks)
        start = min(chunk * rank, curr_local_size)
        return min(chunk, curr_local_size - start), start

    def _local_shard_size_and_offset(self, curr_local_size: int, num_chunks: int, rank: int):
        return Shard.local_shard_size_and_offset(curr_local_size, num_chunks, rank)

    def __repr__(self):
        return f"Shard(dim={self.dim})"


class _StridedShard(Placement):
    """A shard taken as one chunk from each of ``split_factor`` groups along ``dim`` (not a ``Shard``)."""

    def __init__(self, dim: int, split_factor: int):
        self.dim = dim
        self.split_factor = split_factor

    def _fields(self):
        return (self.dim, self.split_factor)

    def __repr__(self):
        return f"_StridedShard(dim={self.dim}, sf={self.split_factor})"


class Replicate(Placement):
    def __repr__(self):
        return "Replicate()"


class Partial(Placement):
    def __init__(self, reduce_op: str = "sum"):
        self.reduce_op = reduce_op

    def _fields(self):
        return (self.reduce_op,)

    def __repr__(self):
        return f"Partial({self.reduce_op})"
