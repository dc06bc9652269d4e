"""``torch._utils``: the private helpers third-party code reaches for (flattening tensors into one
buffer, device indices, re-raising a worker's exception, ``classproperty``)."""
from __future__ import annotations

import sys
import traceback

__all__ = ["_flatten_dense_tensors", "_unflatten_dense_tensors", "_get_device_index", "_get_available_device_type",
           "ExceptionWrapper", "KeyErrorMessage", "classproperty", "_import_dotted_name"]


def _flatten_dense_tensors(tensors):
    """One contiguous 1-D tensor holding every tensor's elements in order (differentiable)."""
    import hookgrad
    tensors = list(tensors)
    if len(tensors) == 1:
        return tensors[0].contiguous().reshape(-1)
    return hookgrad.cat([t.contiguous().reshape(-1) for t in tensors], 0)


def _unflatten_dense_tensors(flat, tensors):
    """Views of ``flat`` shaped like ``tensors`` (the inverse of ``_flatten_dense_tensors``)."""
    from ._C._nn import unflatten_dense_tensors
    return unflatten_dense_tensors(flat, tensors)


def _get_device_index(device, optional: bool = False, allow_cpu: bool = False) -> int:
    """The index of ``device`` (a device, a string or an int); -1 for the CPU where ``allow_cpu``."""
    from ._device import device as device_type
    if isinstance(device, str):
        device = device_type(device)
    index = None
    if isinstance(device, device_type):
        if not allow_cpu and device.type == "cpu":
            raise ValueError(f"Expected a non cpu device, but got: {device}")
        index = -1 if device.type == "cpu" else device.index
    if isinstance(device, int):
        index = device
    if index is None:
        if optional:
            raise RuntimeError("hookgrad runs on the CPU only: there is no current accelerator device")
        raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")
    return index


def _get_available_device_type():
    """None: no accelerator (CUDA, MPS, XPU) is available to hookgrad."""
    return None


class KeyErrorMessage(str):
    """A string whose repr is itself, so that a KeyError shows a multi-line message readably."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception and its formatted traceback, carried from a worker and raised again in the parent."""

    def __init__(self, exc_info=None, where: str = "in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        message = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            message = KeyErrorMessage(message)
        try:
            exception = self.exc_type(message)
        except Exception:  # noqa: BLE001 - a class that cannot take one message
            raise RuntimeError(message) from None
        raise exception


class _ClassProperty:
    def __init__(self, getter):
        self.getter = getter

    def __get__(self, instance, owner=None):
        return self.getter.__get__(instance, owner if owner is not None else type(instance))()


def classproperty(func):
    """A read-only property of the class itself."""
    if not isinstance(func, (classmethod, staticmethod)):
        func = classmethod(func)
    return _ClassProperty(func)


def _import_dotted_name(name: str):
    parts = name.split(".")
    obj = __import__(parts[0])
    for part in parts[1:]:
        obj = getattr(obj, part)
    return obj
