"""``torch.profiler.itt``: Intel ITT (VTune) ranges. hookgrad is built without ITT, as torch is on
most machines: ``is_available()`` is False and the range functions raise torch's RuntimeError."""
from __future__ import annotations

import contextlib

__all__ = ["is_available", "range_push", "range_pop", "mark", "range"]

_NOT_BUILT = "ITT functions not installed. Are you sure you have a ITT build?"


def is_available() -> bool:
    return False


def range_push(msg):
    raise RuntimeError(_NOT_BUILT)


def range_pop():
    raise RuntimeError(_NOT_BUILT)


def mark(msg):
    raise RuntimeError(_NOT_BUILT)


@contextlib.contextmanager
def range(msg, *args, **kwargs):
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
