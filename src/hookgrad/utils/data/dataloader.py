"""DataLoader: iterate over a dataset in batches, with PyTorch's options and argument checks.

Loading runs in the calling process. ``num_workers > 0`` is accepted and gives the same batches
in the same order as PyTorch's workers do with ``in_order=True``; worker-only options
(``worker_init_fn``, ``prefetch_factor``, ``pin_memory``...) are accepted and have no effect.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, List

import numpy as np

from ._collate import default_collate, default_convert
from .dataset import IterableDataset, Subset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

_collate_fn_t = Callable[[List[Any]], Any]  # the type of a collate function, as torch names it

__all__ = ["DataLoader", "get_worker_info"]


def get_worker_info():
    """Always None: data is loaded in the main process."""
    return None


def _tensor_rows(dataset):
    """For a TensorDataset, or Subsets of one, whose tensors need no grad: (arrays, index map)
    so that a batch can be gathered with one fancy-indexing call per tensor. Else None."""
    index_maps = []
    while type(dataset) is Subset:
        index_maps.append(dataset.indices)
        dataset = dataset.dataset
    if type(dataset) is not TensorDataset or any(t.requires_grad for t in dataset.tensors):
        return None
    return [t._data for t in dataset.tensors], index_maps


def _gather(rows, indices):
    from ..._tensor import wrap
    arrays, index_maps = rows
    for mapping in index_maps:
        indices = [mapping[i] for i in indices]
    index = np.asarray(indices, dtype=np.intp)
    return [wrap(a[index]) for a in arrays]


class _InfiniteConstantSampler(Sampler):
    """Yields None forever: the index 'sampler' of an iterable-style dataset."""

    def __iter__(self):
        while True:
            yield None


class _LoaderIterator:
    """What ``iter(loader)`` returns: an iterator over batches that also knows its length."""

    __slots__ = ("_loader", "_batches")

    def __init__(self, loader, batches):
        self._loader, self._batches = loader, batches

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._batches)

    def __len__(self) -> int:
        return len(self._loader)


class DataLoader:
    """Combines a dataset and a sampler and yields collated batches."""

    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers: int = 0, collate_fn=None, pin_memory: bool = False, drop_last: bool = False,
                 timeout: float = 0, worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = "iterable"
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified batch_sampler "
                                 f"option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = "map"

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")

        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, "
                                 "sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive "
                             "with drop_last")

        if sampler is None:
            if self._dataset_kind == "iterable":
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)

        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator

        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self.__initialized = True

    def __setattr__(self, attr, value):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last",
                                           "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is "
                             "initialized")
        super().__setattr__(attr, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._dataset_kind == "iterable":
            length = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    length = length // self.batch_size
                else:
                    length = -(-length // self.batch_size)
            return length
        return len(self._index_sampler)

    def __iter__(self):
        batches = self._iter_iterable() if self._dataset_kind == "iterable" else self._iter_map()
        # torch's iterator draws its workers' base seed when it is made (before the sampler draws)
        import hookgrad
        self._base_seed = int(hookgrad.empty((), dtype=hookgrad.int64).random_(generator=self.generator).item())
        return _LoaderIterator(self, batches)

    def _iter_map(self):
        dataset, collate_fn = self.dataset, self.collate_fn
        if self._auto_collation:
            # Fast path, same result as collating samples one by one: gather whole batches.
            rows = _tensor_rows(dataset) if collate_fn is default_collate else None
            if rows is not None:
                for indices in self.batch_sampler:
                    indices = list(indices)
                    yield _gather(rows, indices) if indices else collate_fn([])
                return
            getitems = getattr(dataset, "__getitems__", None)
            for indices in self.batch_sampler:
                if getitems is not None:
                    data = getitems(indices)
                else:
                    data = [dataset[i] for i in indices]
                yield collate_fn(data)
        else:
            for index in self.sampler:
                yield collate_fn(dataset[index])

    def _iter_iterable(self):
        it = iter(self.dataset)
        collate_fn = self.collate_fn
        if not self._auto_collation:
            for item in it:
                yield collate_fn(item)
            return
        for indices in self.batch_sampler:
            data = list(itertools.islice(it, len(indices)))
            if not data or (self.drop_last and len(data) < len(indices)):
                return
            yield collate_fn(data)
            if len(data) < len(indices):
                return
