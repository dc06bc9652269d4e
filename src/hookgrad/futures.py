"""``torch.futures``: a ``Future`` holds a value (or an error) that arrives later.

hookgrad runs everything eagerly in one process, so a Future is usually completed by the code that
made it; the class still behaves as torch's does for callers that chain ``then`` or wait on it from
another thread.
"""
from __future__ import annotations

import threading
from typing import Callable, Generic, TypeVar

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")
S = TypeVar("S")


class Future(Generic[T]):
    """A value that is set once, with callbacks that run when it is."""

    def __init__(self, *, devices=None):
        self._done = threading.Condition()
        self._finished = False
        self._value = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable] = []

    def done(self) -> bool:
        return self._finished

    def _complete(self, value, error) -> None:
        with self._done:
            if self._finished:
                raise RuntimeError("Future can only be marked completed once.")
            self._value, self._error, self._finished = value, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._done.notify_all()
        for callback in callbacks:
            callback(self)

    def set_result(self, result: T) -> None:
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        if not isinstance(result, BaseException):
            raise TypeError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def wait(self) -> T:
        with self._done:
            while not self._finished:
                self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def value(self) -> T:
        if not self._finished:
            raise RuntimeError("Future's value is not ready yet")
        if self._error is not None:
            raise self._error
        return self._value

    def add_done_callback(self, callback: Callable[["Future[T]"], None]) -> None:
        with self._done:
            if not self._finished:
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback: Callable[["Future[T]"], S]) -> "Future[S]":
        return self._chain(callback, Future())

    def _chain(self, callback, chained: "Future") -> "Future":
        """Completes ``chained`` with what ``callback`` returns once this future is done (its error,
        wrapped as torch wraps it, when it raises)."""
        def run(fut):
            try:
                result = callback(fut)
            except Exception as exc:  # noqa: BLE001 - the error travels to the chained future, as torch wraps it
                chained.set_exception(RuntimeError(f"Got the following error when running the callback: "
                                                   f"{type(exc).__name__}: {exc}"))
            else:
                chained.set_result(result)

        self.add_done_callback(run)
        return chained


def collect_all(futures: list) -> "Future[list]":
    """A Future completed with the list of ``futures`` once all of them are done."""
    combined: Future = Future()
    remaining = [len(futures)]
    lock = threading.Lock()
    if not futures:
        combined.set_result([])
        return combined

    def one_done(_):
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            combined.set_result(list(futures))

    for fut in futures:
        fut.add_done_callback(one_done)
    return combined


def wait_all(futures: list) -> list:
    """Wait for every future; return their values (the first error is raised)."""
    return [fut.wait() for fut in futures]
