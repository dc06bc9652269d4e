"""``DistributedSampler``: each rank iterates over its own share of a dataset, as torch's does.

The shuffled order is torch's for the same ``seed + epoch``: torch's ``randperm`` on the CPU is a
Fisher-Yates shuffle driven by a Mersenne Twister seeded like NumPy's legacy ``RandomState``, so
the sampler draws the same 32-bit numbers from ``RandomState`` and shuffles the same way (for data
sets under 2**32 / 20 items, where torch uses this algorithm).
"""
from __future__ import annotations

import math

import numpy as np

from ..._late import LateNames
from .sampler import Sampler

__all__ = ["DistributedSampler"]

_above = LateNames(dist="hookgrad.distributed:distributed_c10d")


def torch_randperm(n: int, seed: int) -> list:
    """``torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()``."""
    if n >= (2 ** 32 - 1) // 20:
        raise ValueError(f"DistributedSampler: data sets of {n} items are beyond the size for which torch's "
                         f"shuffle is reproduced")
    draws = np.random.RandomState(seed & 0xFFFFFFFF).randint(0, 2 ** 32, size=max(n - 1, 0), dtype=np.uint32)
    order = list(range(n))
    for i in range(n - 1):
        j = i + int(draws[i]) % (n - i)
        order[i], order[j] = order[j], order[i]
    return order


class DistributedSampler(Sampler):
    """The indices of rank ``rank`` out of ``num_replicas`` (by default those of the process group):
    shuffled by ``seed + epoch`` (call :meth:`set_epoch` each epoch), padded by repeating indices
    or trimmed with ``drop_last`` so that every rank gets ``len(self)`` of them."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        if num_replicas is None:
            if not _above.dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = _above.dist.get_world_size()
        if rank is None:
            if not _above.dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            rank = _above.dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            # the largest share every rank can have without repeating an index
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        indices = torch_randperm(n, self.seed + self.epoch) if self.shuffle else list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"Number of indices ({len(indices)}) does not match total_size ({self.total_size})")
        indices = indices[self.rank:self.total_size:self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(f"Number of subsampled indices ({len(indices)}) does not match num_samples "
                                 f"({self.num_samples})")
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Shuffle differently in the next pass (the same way on every rank)."""
        self.epoch = epoch
