"""What runs inside a DataLoader worker process, and what the worker sends back.

A worker receives ``(task_index, sampler_index)`` pairs on its own index queue, fetches and collates
that batch from its copy of the dataset, and puts ``(task_index, batch)`` on the shared result
queue. Batches travel by pickle: hookgrad tensors are NumPy arrays underneath.
"""
from __future__ import annotations

import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

# How often (seconds) a waiting parent checks that its workers are alive, and how often a waiting
# worker checks that its parent is alive and whether the loader is shutting down.
STATUS_CHECK_INTERVAL = 1.0
WORKER_POLL_INTERVAL = 0.1

_current_info: Optional["WorkerInfo"] = None


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: its ``id`` (0 to ``num_workers - 1``),
    ``num_workers``, the ``seed`` it was seeded with, and its own copy of the ``dataset``."""

    id: int
    num_workers: int
    seed: int
    dataset: Any
    rng: Any = None
    worker_method: Optional[str] = "multiprocessing"


def get_worker_info() -> Optional[WorkerInfo]:
    """The ``WorkerInfo`` of the DataLoader worker process this runs in; None in the main process."""
    return _current_info


@dataclass(frozen=True)
class IterableEnded:
    """Sent by a worker whose copy of an iterable-style dataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class ResumeIteration:
    """Sent to persistent workers at the start of each new epoch (and echoed back)."""

    seed: Optional[int] = None


class WorkerError:
    """An exception raised in a worker, carried to the main process and raised there again with
    the worker's traceback in its message (torch's "Caught X in DataLoader worker process N")."""

    def __init__(self, where: str):
        exc_type, exc, tb = sys.exc_info()
        self.exc_type = exc_type
        self.exc_text = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self):
        message = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_text}"
        if self.exc_type is KeyError:
            message = _VerbatimMessage(message)  # KeyError would repr() its argument
        try:
            error = self.exc_type(message)
        except Exception:  # noqa: BLE001 - an exception class that needs other arguments
            raise RuntimeError(message) from None
        raise error


class _VerbatimMessage(str):
    """A string whose repr is itself, so that a KeyError's message prints readably."""

    __slots__ = ()

    def __repr__(self):
        return self


_MASK32 = 0xFFFFFFFF


def numpy_seed_state(base_seed: int, worker_id: int) -> list:
    """The four 32-bit words a worker seeds NumPy's global RNG with: a hash of (base_seed,
    worker_id), the same words torch's workers use (NumPy's SeedSequence mixing), so that
    ``np.random`` in workers is decorrelated across workers and reproducible from ``base_seed``."""
    entropy = [worker_id, base_seed & _MASK32, base_seed >> 32, 0]
    multiplier = [0x43B0D7E5]

    def hashmix(value):
        value = (value ^ multiplier[0]) & _MASK32
        multiplier[0] = (multiplier[0] * 0x931E8875) & _MASK32
        value = (value * multiplier[0]) & _MASK32
        return (value ^ (value >> 16)) & _MASK32

    def mix(x, y):
        value = ((0xCA01F9DD * x) - (0x4973F715 * y)) & _MASK32
        return (value ^ (value >> 16)) & _MASK32

    pool = [hashmix(word) for word in entropy]
    for src in range(4):
        for dst in range(4):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    out_multiplier = 0x8B51F9DD
    state = []
    for word in pool:
        word = (word ^ out_multiplier) & _MASK32
        out_multiplier = (out_multiplier * 0x58F38DED) & _MASK32
        word = (word * out_multiplier) & _MASK32
        state.append((word ^ (word >> 16)) & _MASK32)
    return state


class _ParentWatch:
    """Tells a worker whether the process that started it is still alive."""

    def __init__(self):
        self._parent = os.getppid()

    def parent_alive(self) -> bool:
        return os.getppid() == self._parent


def worker_loop(fetcher_factory, dataset, index_queue, result_queue, done_event, base_seed,
                init_fn, worker_id, num_workers):
    """The body of one worker process."""
    global _current_info
    try:
        import hookgrad
        hookgrad.set_num_threads(1)
        seed = base_seed + worker_id
        random.seed(seed)
        hookgrad.manual_seed(seed)
        np.random.seed(numpy_seed_state(base_seed, worker_id))
        _current_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)

        where = f"in DataLoader worker process {worker_id}"
        init_error, fetcher = None, None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = fetcher_factory(dataset)
        except Exception:  # noqa: BLE001 - reported with the first task, as torch does
            init_error = WorkerError(where)

        iteration_ended = False
        watch = _ParentWatch()
        while watch.parent_alive():
            try:
                task = index_queue.get(timeout=WORKER_POLL_INTERVAL)
            except queue.Empty:
                if done_event.is_set():
                    break  # shutting down, and the exit request may never come (see _shutdown_workers)
                continue
            if isinstance(task, ResumeIteration):
                result_queue.put((task, None))
                iteration_ended = False
                fetcher = fetcher_factory(dataset)
                continue
            if task is None:  # the parent asks this worker to exit
                break
            if done_event.is_set() or iteration_ended:
                continue  # the parent is shutting down, or this worker's iterable has ended
            task_index, sampler_index = task
            if init_error is not None:
                result, init_error = init_error, None
            else:
                try:
                    if fetcher is None:  # worker_init_fn failed; that error was sent with the first task
                        raise UnboundLocalError("cannot access local variable 'fetcher' where it is not "
                                                "associated with a value")
                    result = fetcher.fetch(sampler_index)
                except StopIteration:
                    if not fetcher.iterable:
                        result = WorkerError(where)
                    else:
                        result = IterableEnded(worker_id)
                        iteration_ended = True
                except Exception:  # noqa: BLE001 - carried to the parent
                    result = WorkerError(where)
            result_queue.put((task_index, result))
            del result, task
    except KeyboardInterrupt:
        pass  # the parent handles the interrupt and shuts the workers down
    if done_event.is_set():
        result_queue.cancel_join_thread()
        result_queue.close()
