"""Built-in iterable-style DataPipes and their functional names."""
from __future__ import annotations

from .._columns import _ColumnMapper, call_on_columns
from .._decorator import functional_datapipe
from .._shared import _BatchOptions, _ShuffleSettings
from ..datapipe import DataChunk, IterDataPipe
from ..._collate import default_collate

__all__ = ["Batcher", "Collator", "Concater", "Filter", "IterableWrapper", "Mapper", "Shuffler", "ShardingFilter",
           "UnBatcher", "Zipper"]


def _length_of_source(pipe) -> int:
    """The length of a pipe that yields one item per item of its source: the source's, where it has one."""
    if hasattr(pipe.datapipe, "__len__"):
        return len(pipe.datapipe)
    raise TypeError(f"{type(pipe).__name__} instance doesn't have valid length")


class IterableWrapperIterDataPipe(IterDataPipe):
    """Wrap any iterable as an IterDataPipe (deep-copied per iteration unless ``deepcopy=False``)."""

    def __init__(self, iterable, deepcopy=True):
        self.iterable = iterable
        self.deepcopy = deepcopy

    def __iter__(self):
        source = self.iterable
        if self.deepcopy:
            import copy
            try:
                source = copy.deepcopy(self.iterable)
            except TypeError:
                pass  # not copyable (a generator, a file): iterate it as it is
        yield from source

    def __len__(self):
        return len(self.iterable)


@functional_datapipe("map")
class MapperIterDataPipe(_ColumnMapper, IterDataPipe):
    """Apply ``fn`` to each item (or to its ``input_col`` columns, writing ``output_col``)."""

    def __iter__(self):
        for data in self.datapipe:
            yield self._mapped(data)

    def __len__(self):
        return _length_of_source(self)


@functional_datapipe("filter")
class FilterIterDataPipe(IterDataPipe):
    """Keep the items for which ``filter_fn`` (of the item, or of its ``input_col``) is true."""

    def __init__(self, datapipe, filter_fn, input_col=None):
        self.datapipe, self.filter_fn, self.input_col = datapipe, filter_fn, input_col

    def __iter__(self):
        for data in self.datapipe:
            keep = call_on_columns(self.filter_fn, data, self.input_col)
            if not isinstance(keep, bool):
                raise ValueError(f"Boolean output is required for `filter_fn` of FilterIterDataPipe, got {type(keep)}")
            if keep:
                yield data


@functional_datapipe("batch")
class BatcherIterDataPipe(_BatchOptions, IterDataPipe):
    """Group consecutive items into batches (``wrapper_class``, DataChunk by default)."""

    def __iter__(self):
        batch = []
        for item in self.datapipe:
            batch.append(item)
            if len(batch) == self.batch_size:
                yield self.wrapper_class(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.wrapper_class(batch)

    def __len__(self):
        if not hasattr(self.datapipe, "__len__"):
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


@functional_datapipe("unbatch")
class UnBatcherIterDataPipe(IterDataPipe):
    """Flatten batches ``unbatch_level`` levels deep (-1: all the way)."""

    def __init__(self, datapipe, unbatch_level=1):
        self.datapipe, self.unbatch_level = datapipe, unbatch_level

    def __iter__(self):
        for element in self.datapipe:
            yield from self._dive(element, self.unbatch_level)

    def _dive(self, element, level):
        if level < -1:
            raise ValueError("unbatch_level must be -1 or >= 0")
        if level == -1:
            if isinstance(element, (list, DataChunk)):
                for item in element:
                    yield from self._dive(item, -1)
            else:
                yield element
        elif level == 0:
            yield element
        elif isinstance(element, (list, DataChunk)):
            for item in element:
                yield from self._dive(item, level - 1)
        else:
            raise IndexError(f"unbatch_level {self.unbatch_level} exceeds the depth of the DataPipe")


@functional_datapipe("collate")
class CollatorIterDataPipe(MapperIterDataPipe):
    """Collate each batch (``default_collate`` unless ``collate_fn`` is given)."""

    def __init__(self, datapipe, conversion=default_collate, collate_fn=None):
        super().__init__(datapipe, fn=collate_fn if collate_fn is not None else conversion)


@functional_datapipe("shuffle")
class ShufflerIterDataPipe(_ShuffleSettings, IterDataPipe):
    """Shuffle with a buffer of ``buffer_size`` items (Python's ``random.Random``, seeded per
    iteration: by ``set_seed``, else a seed shared by all DataLoader workers of the epoch, else a
    draw from hookgrad's global generator)."""

    def __init__(self, datapipe, *, buffer_size=10000, unbatch_level=0):
        if buffer_size <= 0:
            raise AssertionError("buffer_size should be larger than 0")
        self.datapipe = datapipe if unbatch_level == 0 else datapipe.unbatch(unbatch_level=unbatch_level)
        self.buffer_size = buffer_size
        self._init_shuffle_settings()
        self._buffer = []

    def reset(self) -> None:
        self._buffer = []
        if self._enabled:
            if self._seed is None:
                from ..._worker import get_worker_info
                info = get_worker_info()
                if info is not None:
                    self._seed = info.seed - info.id  # the same in every worker: shards stay disjoint
                else:
                    import hookgrad
                    self._seed = int(hookgrad.randint(0, 2 ** 63 - 1, (1,)).tolist()[0])
            self._rng.seed(self._seed)
            self._seed = None

    def __iter__(self):
        self.reset()
        if not self._enabled:
            yield from self.datapipe
            return
        for item in self.datapipe:
            if len(self._buffer) == self.buffer_size:
                position = self._rng.randint(0, len(self._buffer) - 1)
                item, self._buffer[position] = self._buffer[position], item
                yield item
            else:
                self._buffer.append(item)
        while self._buffer:
            yield self._buffer.pop(self._rng.randint(0, len(self._buffer) - 1))

    def __len__(self):
        return _length_of_source(self)


@functional_datapipe("sharding_filter")
class ShardingFilterIterDataPipe(IterDataPipe):
    """Keep every ``num_of_instances``-th item starting at ``instance_id``; inside a DataLoader
    worker with no sharding applied, the workers are the instances (as torch's DataLoader
    arranges)."""

    def __init__(self, source_datapipe, sharding_group_filter=None):
        self.source_datapipe = source_datapipe
        self.sharding_group_filter = sharding_group_filter
        self.num_of_instances, self.instance_id = 1, 0
        self._applied = False

    def apply_sharding(self, num_of_instances, instance_id, sharding_group=None):
        if instance_id >= num_of_instances:
            raise ValueError(f"instance_id({instance_id}) should be smaller than num_of_instances({num_of_instances})")
        self.num_of_instances, self.instance_id, self._applied = num_of_instances, instance_id, True

    def _shard(self):
        if not self._applied:
            from ..._worker import get_worker_info
            info = get_worker_info()
            if info is not None:
                return info.num_workers, info.id
        return self.num_of_instances, self.instance_id

    def __iter__(self):
        count, index = self._shard()
        for i, item in enumerate(self.source_datapipe):
            if i % count == index:
                yield item

    def __len__(self):
        count, index = self._shard()
        n = len(self.source_datapipe)
        return n // count + (1 if index < n % count else 0)


@functional_datapipe("concat")
class ConcaterIterDataPipe(IterDataPipe):
    """The items of several pipes, one pipe after the other."""

    def __init__(self, *datapipes):
        if len(datapipes) == 0:
            raise ValueError("Expected at least one DataPipe, but got nothing")
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("Expected all inputs to be `IterDataPipe`")
        self.datapipes = datapipes

    def __iter__(self):
        for dp in self.datapipes:
            yield from dp

    def __len__(self):
        return sum(len(dp) for dp in self.datapipes)


@functional_datapipe("zip")
class ZipperIterDataPipe(IterDataPipe):
    """Tuples of the items of several pipes, until the shortest ends."""

    def __init__(self, *datapipes):
        if not all(isinstance(dp, IterDataPipe) for dp in datapipes):
            raise TypeError("All inputs are required to be `IterDataPipe` for `ZipIterDataPipe`.")
        self.datapipes = datapipes

    def __iter__(self):
        yield from zip(*self.datapipes)

    def __len__(self):
        return min(len(dp) for dp in self.datapipes)


# the short names torch exposes here
IterableWrapper = IterableWrapperIterDataPipe
Mapper = MapperIterDataPipe
Filter = FilterIterDataPipe
Batcher = BatcherIterDataPipe
UnBatcher = UnBatcherIterDataPipe
Collator = CollatorIterDataPipe
Shuffler = ShufflerIterDataPipe
ShardingFilter = ShardingFilterIterDataPipe
Concater = ConcaterIterDataPipe
Zipper = ZipperIterDataPipe
