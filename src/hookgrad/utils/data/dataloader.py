"""DataLoader: iterate over a dataset in batches, with PyTorch's options and argument checks.

With ``num_workers=0`` batches are loaded in the calling process. With ``num_workers > 0`` they are
loaded by that many worker processes, as in PyTorch: each worker holds a copy of the dataset, is
seeded with ``base_seed + worker_id`` (``base_seed`` drawn from the loader's generator for each
epoch), runs ``worker_init_fn(worker_id)``, and gets batch indices round robin; batches come back
in sampler order (or as they finish with ``in_order=False``). Batches travel between processes by
pickle (hookgrad tensors are NumPy arrays). ``pin_memory`` has no effect: there is no accelerator.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import itertools
import multiprocessing
import os
import queue
import sys
import warnings
from typing import Any, Callable, List

from . import _worker
from ._collate import default_collate, default_convert
from ._fetch import make_fetcher
from ._worker import get_worker_info
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

_collate_fn_t = Callable[[List[Any]], Any]  # the type of a collate function, as torch names it
_worker_init_fn_t = Callable[[int], None]

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]


class _DatasetKind:
    """The two kinds of dataset a DataLoader tells apart (the values torch uses)."""

    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        return make_fetcher(kind, auto_collation, collate_fn, drop_last, dataset)


class _InfiniteConstantSampler(Sampler):
    """Yields None forever: the index 'sampler' of an iterable-style dataset."""

    def __iter__(self):
        while True:
            yield None


def _draw_base_seed(generator) -> int:
    """A non-negative int64 from ``generator`` (the global generator when None), drawn once per
    iterator as torch does, whether or not there are workers."""
    import hookgrad
    return int(hookgrad.empty((), dtype=hookgrad.int64).random_(generator=generator).item())


def _cpu_count():
    if hasattr(os, "sched_getaffinity"):
        try:
            return len(os.sched_getaffinity(0))
        except OSError:
            pass
    return os.cpu_count()


@contextlib.contextmanager
def _workers_see_hookgrad_as_torch(context):
    """While a spawn or forkserver worker starts from a script run by ``hookgrad run`` (torch is
    hookgrad here), make the worker's main module ``hookgrad._worker_main``, which installs the aliases
    before re-running the script; a fork worker inherits them anyway."""
    main = sys.modules.get("__main__")
    aliased = sys.modules.get("torch") is sys.modules.get("hookgrad")
    if context.get_start_method() == "fork" or not aliased or main is None:
        yield
        return
    from . import _spawn_main_key
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name != "__main__" and not spec.name.endswith(".__main__"):
        target = "module:" + spec.name
    elif getattr(main, "__file__", None):
        target = "path:" + os.path.abspath(main.__file__)
    else:
        yield  # an interactive session: nothing to re-run in the worker
        return
    saved_spec, saved_env = spec, os.environ.get(_spawn_main_key)
    main.__spec__ = importlib.util.find_spec("hookgrad._worker_main")
    os.environ[_spawn_main_key] = target
    try:
        yield
    finally:
        main.__spec__ = saved_spec
        if saved_env is None:
            os.environ.pop(_spawn_main_key, None)
        else:
            os.environ[_spawn_main_key] = saved_env


class _BaseDataLoaderIter:
    """What ``iter(loader)`` returns: an iterator over batches that also knows its length."""

    def __init__(self, loader):
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as the "
                          f"device,ignore pin_memory_device='{loader.pin_memory_device}'.", stacklevel=3)
        if loader.pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device "
                          "pinned memory won't be used.", stacklevel=3)
        self._pin_memory = False
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = _draw_base_seed(loader.generator)
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)  # StopIteration ends the epoch

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if (self._dataset_kind == _DatasetKind.Iterable and self._IterableDataset_len_called is not None
                and self._num_yielded > self._IterableDataset_len_called):
            message = (f"Length of IterableDataset {self._dataset} was reported to be "
                       f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but "
                       f"{self._num_yielded} samples have been fetched. ")
            if self._num_workers > 0:
                message += ("For multiprocessing data-loading, this could be caused by not properly configuring "
                            "the IterableDataset replica at each worker. Please see "
                            "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for "
                            "examples.")
            warnings.warn(message, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError("{} cannot be pickled", self.__class__.__name__)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = make_fetcher(self._dataset_kind, self._auto_collation, self._collate_fn,
                                     self._drop_last, self._dataset)

    def _next_data(self):
        return self._fetcher.fetch(self._next_index())


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Loads batches in ``num_workers`` processes.

    Task ``k`` (the k-th index of the sampler) goes to the next active worker in round robin; at
    most ``prefetch_factor * num_workers`` tasks are outstanding. Results that arrive early wait
    in ``_task_info`` until their turn (unless ``in_order=False``). An iterable-style dataset is
    replicated in every worker; a worker whose copy is exhausted reports so and gets no more tasks.
    """

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        context = loader.multiprocessing_context or multiprocessing.get_context()
        self._shutdown = False
        self._workers = []
        self._index_queues = []
        self._workers_status = [True] * self._num_workers
        self._result_queue = context.Queue()
        self._done_event = context.Event()
        fetcher_factory = functools.partial(make_fetcher, self._dataset_kind, self._auto_collation,
                                            self._collate_fn, self._drop_last)
        try:
            for worker_id in range(self._num_workers):
                index_queue = context.Queue()
                index_queue.cancel_join_thread()
                process = context.Process(
                    target=_worker.worker_loop,
                    args=(fetcher_factory, self._dataset, index_queue, self._result_queue, self._done_event,
                          self._base_seed, loader.worker_init_fn, worker_id, self._num_workers),
                    daemon=True)
                with _workers_see_hookgrad_as_torch(context):
                    process.start()
                self._index_queues.append(index_queue)
                self._workers.append(process)
        except BaseException:
            self._shutdown_workers()
            raise
        self._data_queue = self._result_queue
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0  # the task index of the next index sent to a worker
        self._rcvd_idx = 0  # the task index of the next batch to return
        self._task_info = {}  # task index -> (worker id,) while outstanding, (worker id, data) once here
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:  # persistent workers: start their next epoch, wait until all have
            for index_queue in self._index_queues:
                index_queue.put(_worker.ResumeIteration())
            waiting = self._num_workers
            while waiting > 0:
                task_index, _ = self._get_data()
                if isinstance(task_index, _worker.ResumeIteration):
                    waiting -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout):
        try:
            return True, self._data_queue.get(timeout=timeout)
        except Exception as error:
            failed = [w for worker_id, w in enumerate(self._workers)
                      if self._workers_status[worker_id] and not w.is_alive()]
            for w in failed:
                self._mark_worker_as_unavailable(self._workers.index(w))
            if failed:
                pids = ", ".join(str(w.pid) for w in failed)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from error
            if isinstance(error, queue.Empty):
                return False, None
            raise

    def _get_data(self):
        if self._timeout > 0:
            success, data = self._try_get_data(self._timeout)
            if success:
                return data
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        while True:
            success, data = self._try_get_data(_worker.STATUS_CHECK_INTERVAL)
            if success:
                return data

    def _next_data(self):
        while True:
            # skip the tasks of workers whose iterable ended before they produced them
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    worker_id = info[0]
                    if len(info) == 2 or self._workers_status[worker_id]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            if len(self._task_info[self._rcvd_idx]) == 2:  # already arrived
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

            task_index, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _worker.IterableEnded):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if task_index != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(task_index)[0]
                    return self._process_data(data, worker_id)
                self._task_info[task_index] += (data,)
            else:
                worker_id = self._task_info.pop(task_index)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _try_put_index(self):
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker with room, if any
            worker_id = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_id]:
                if self._in_order:
                    break
                if self._workers_num_tasks[worker_id] < max_tasks // sum(self._workers_status):
                    break
        else:
            return
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._workers_num_tasks[worker_id] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data, worker_id):
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, _worker.WorkerError):
            data.reraise()
        return data

    def _mark_worker_as_unavailable(self, worker_id, shutdown=False):
        # the worker exits when it reads None; the parent never waits on a worker's queue
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self):
        if self._shutdown:
            return
        self._shutdown = True
        try:
            self._done_event.set()
            for worker_id, process in enumerate(self._workers):
                if self._persistent_workers or self._workers_status[worker_id]:
                    try:
                        self._mark_worker_as_unavailable(worker_id, shutdown=True)
                    except (ValueError, OSError):
                        pass  # the queue is closed; the worker sees the done event instead
            for w in self._workers:
                w.join(timeout=_worker.STATUS_CHECK_INTERVAL)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
            self._result_queue.cancel_join_thread()
            self._result_queue.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=_worker.STATUS_CHECK_INTERVAL)

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:  # noqa: BLE001 - at interpreter exit the modules may be gone
            pass


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
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
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
            self._dataset_kind = _DatasetKind.Iterable
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
            self._dataset_kind = _DatasetKind.Map

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
            if self._dataset_kind == _DatasetKind.Iterable:
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
        self._IterableDataset_len_called = None  # what len(loader) reported, to warn when exceeded
        self._iterator = None  # the reused iterator of persistent workers
        self.check_worker_number_rationality()

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context):
        if context is not None:
            if self.num_workers <= 0:
                raise ValueError("multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError("multiprocessing_context option should specify a valid start method in "
                                     f"{methods!r}, but got multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={context}")
        self.__multiprocessing_context = context

    def check_worker_number_rationality(self):
        """Warn when more workers are asked for than there are CPUs for this process."""
        if not self.num_workers:
            return
        suggested = _cpu_count()
        if suggested is not None and self.num_workers <= suggested:
            return
        if suggested is None:
            advice = "DataLoader is not able to compute a suggested max number of worker in current system."
        else:
            cpuset = "" if hasattr(os, "sched_getaffinity") else " (`cpuset` is not taken into account)"
            advice = (f"Our suggested max number of worker in current system is {suggested}{cpuset}, which is "
                      "smaller than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {advice} "
                      "Please be aware that excessive worker creation might get DataLoader running slow or even "
                      "freeze, lower the worker number to avoid potential slowness/freeze if necessary.",
                      stacklevel=2)

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

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
        if self._dataset_kind == _DatasetKind.Iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    length = length // self.batch_size
                else:
                    length = -(-length // self.batch_size)
            return length
        return len(self._index_sampler)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()
