"""Fetchers: turn one index from the loader's (batch) sampler into one collated batch. The same
fetcher runs in the main process (``num_workers=0``) and inside each worker process."""
from __future__ import annotations

import numpy as np

from ._collate import default_collate
from .dataset import Subset, TensorDataset


def _tensor_rows(dataset):
    """For a TensorDataset, or Subsets of one, whose tensors need no grad: (arrays, index maps)
    so that a batch can be gathered with one fancy-indexing call per tensor. Else None."""
    index_maps = []
    while type(dataset) is Subset:
        index_maps.append(dataset.indices)
        dataset = dataset.dataset
    if type(dataset) is not TensorDataset or any(t.requires_grad for t in dataset.tensors):
        return None
    return [t._ndarray for t in dataset.tensors], index_maps


def _gather(rows, indices):
    from ..._tensor import wrap
    arrays, index_maps = rows
    for mapping in index_maps:
        indices = [mapping[i] for i in indices]
    index = np.asarray(indices, dtype=np.intp)
    return [wrap(a[index]) for a in arrays]


class MapFetcher:
    """Batches of a map-style dataset: ``dataset[i]`` (or ``dataset.__getitems__``) per index."""

    iterable = False

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last
        # Same result as collating samples one by one: gather whole batches of a TensorDataset.
        self._rows = _tensor_rows(dataset) if auto_collation and collate_fn is default_collate else None

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self._rows is not None:
            indices = list(index)
            return _gather(self._rows, indices) if indices else self.collate_fn([])
        getitems = getattr(self.dataset, "__getitems__", None)
        if getitems:
            data = getitems(index)
        else:
            data = [self.dataset[i] for i in index]
        return self.collate_fn(data)


class IterableFetcher:
    """Batches of an iterable-style dataset: the next samples of one ``iter(dataset)``; raises
    StopIteration once it is exhausted (or the last batch is short and ``drop_last``)."""

    iterable = True

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def make_fetcher(kind, auto_collation, collate_fn, drop_last, dataset):
    """A fetcher for ``dataset`` (``kind`` 0: map-style, 1: iterable-style); a module-level
    function so that ``functools.partial`` of it pickles to spawned workers."""
    fetcher_class = IterableFetcher if kind == 1 else MapFetcher
    return fetcher_class(dataset, auto_collation, collate_fn, drop_last)
