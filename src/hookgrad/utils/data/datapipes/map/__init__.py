"""Built-in map-style DataPipes and their functional names."""
from __future__ import annotations

from .._columns import _ColumnMapper
from .._decorator import functional_datapipe
from .._shared import _BatchOptions, _ShuffleSettings
from ..datapipe import IterDataPipe, MapDataPipe

__all__ = ["Batcher", "Concater", "Mapper", "SequenceWrapper", "Shuffler", "Zipper"]


class SequenceWrapperMapDataPipe(MapDataPipe):
    """Wrap a sequence (list, tuple, dict...) as a MapDataPipe."""

    def __init__(self, sequence, deepcopy=True):
        if deepcopy:
            import copy
            try:
                sequence = copy.deepcopy(sequence)
            except TypeError:
                pass
        self.sequence = sequence

    def __getitem__(self, index):
        return self.sequence[index]

    def __len__(self):
        return len(self.sequence)


@functional_datapipe("map")
class MapperMapDataPipe(_ColumnMapper, MapDataPipe):
    """``fn`` applied to each item as it is read."""

    def __getitem__(self, index):
        return self._mapped(self.datapipe[index])

    def __len__(self):
        return len(self.datapipe)


@functional_datapipe("batch")
class BatcherMapDataPipe(_BatchOptions, MapDataPipe):
    """Item ``i`` is the batch of items ``i*batch_size`` to ``(i+1)*batch_size - 1``."""

    def __getitem__(self, index):
        batch = []
        start = index * self.batch_size
        for i in range(start, start + self.batch_size):
            try:
                batch.append(self.datapipe[i])
            except IndexError as error:
                if not self.drop_last and batch:
                    return self.wrapper_class(batch)
                raise IndexError(f"Index {index} is out of bound.") from error
        return self.wrapper_class(batch)

    def __len__(self):
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class ShufflerIterDataPipe(_ShuffleSettings, IterDataPipe):
    """The items of a map pipe in a random order (an IterDataPipe; ``shuffle`` of a map pipe)."""

    def __init__(self, datapipe, *, indices=None):
        self.datapipe = datapipe
        self.indices = list(range(len(datapipe))) if indices is None else indices
        self._init_shuffle_settings()
        self._shuffled_indices = self.indices

    def reset(self) -> None:
        if self._enabled and self._seed is None:
            import hookgrad
            self._seed = int(hookgrad.randint(0, 2 ** 63 - 1, (1,)).tolist()[0])
        self._rng.seed(self._seed)
        self._seed = None
        self._shuffled_indices = self._rng.sample(self.indices, len(self.indices))

    def __iter__(self):
        self.reset()
        if not self._enabled:
            for index in self.indices:
                yield self.datapipe[index]
            return
        while self._shuffled_indices:
            yield self.datapipe[self._shuffled_indices.pop()]

    def __len__(self):
        return len(self.datapipe)


MapDataPipe.register_datapipe_as_function("shuffle", ShufflerIterDataPipe)


def _sized_map_pipes(datapipes: tuple) -> tuple:
    """The inputs of concat and zip, checked as torch checks them."""
    if len(datapipes) == 0:
        raise ValueError("Expected at least one DataPipe, but got nothing")
    if not all(isinstance(dp, MapDataPipe) for dp in datapipes):
        raise TypeError("Expected all inputs to be `MapDataPipe`")
    if not all(hasattr(dp, "__len__") for dp in datapipes):
        raise TypeError("Expected all inputs to be `Sized`")
    return datapipes


@functional_datapipe("concat")
class ConcaterMapDataPipe(MapDataPipe):
    """The items of several map pipes, one after the other."""

    def __init__(self, *datapipes):
        self.datapipes = _sized_map_pipes(datapipes)

    def __getitem__(self, index):
        offset = index
        for dp in self.datapipes:
            if offset < len(dp):
                return dp[offset]
            offset -= len(dp)
        raise IndexError(f"Index {index} is out of range.")

    def __len__(self):
        return sum(len(dp) for dp in self.datapipes)


@functional_datapipe("zip")
class ZipperMapDataPipe(MapDataPipe):
    """Item ``i`` is the tuple of item ``i`` of each pipe; as long as the shortest."""

    def __init__(self, *datapipes):
        self.datapipes = _sized_map_pipes(datapipes)

    def __getitem__(self, index):
        return tuple(dp[index] for dp in self.datapipes)

    def __len__(self):
        return min(len(dp) for dp in self.datapipes)


# the short names torch exposes here
SequenceWrapper = SequenceWrapperMapDataPipe
Mapper = MapperMapDataPipe
Batcher = BatcherMapDataPipe
Concater = ConcaterMapDataPipe
Zipper = ZipperMapDataPipe
Shuffler = ShufflerIterDataPipe
