"""``torch.utils._python_dispatch``: dispatch modes intercept every ATen op; hookgrad has no op
dispatcher, so ``TorchDispatchMode`` exists for imports and subclassing, and entering one raises
(a flop counter built on it would otherwise count nothing, silently)."""
from __future__ import annotations

import contextlib

__all__ = ["TorchDispatchMode", "is_traceable_wrapper_subclass", "transform_subclass"]


class TorchDispatchMode:
    def __init__(self, _dispatch_key=None):
        pass

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        raise NotImplementedError("hookgrad has no dispatch modes: its ops do not go through an ATen dispatcher")

    def __exit__(self, *exc):
        return False

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs).__enter__()

    @classmethod
    def is_infra_mode(cls) -> bool:
        return False


def is_traceable_wrapper_subclass(t) -> bool:
    return False


def transform_subclass(t, callback, outer_size=None, outer_stride=None):
    raise NotImplementedError("hookgrad has no tensor wrapper subclasses")


def _get_current_dispatch_mode():
    return None


def _get_current_dispatch_mode_stack() -> list:
    return []


def _len_torch_dispatch_stack() -> int:
    return 0


@contextlib.contextmanager
def _disable_current_modes():
    yield ()
