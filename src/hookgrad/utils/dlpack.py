"""DLPack: zero-copy exchange of CPU tensors with NumPy, torch and any other DLPack library.

``from_dlpack(x)`` takes an object with ``__dlpack__``/``__dlpack_device__`` (a NumPy array, a torch
tensor, ...) or a DLPack capsule, and returns a hookgrad tensor over the same memory;
``to_dlpack(t)`` hands out a capsule, and ``Tensor.__dlpack__`` lets ``np.from_dlpack(t)`` and
``torch.from_dlpack(t)`` share a hookgrad tensor's memory. NumPy does the DLPack work.
"""
from __future__ import annotations

import numpy as np

__all__ = ["from_dlpack", "to_dlpack"]

_CPU = 1  # kDLCPU in DLPack's device-type enumeration


class _Capsule:
    """Presents a bare DLPack capsule through the protocol that ``np.from_dlpack`` reads."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (_CPU, 0)


def from_dlpack(ext_tensor):
    """A hookgrad tensor sharing memory with ``ext_tensor`` (a DLPack producer or capsule)."""
    from .._tensor import Tensor, wrap
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if type(ext_tensor).__name__ == "PyCapsule":
        ext_tensor = _Capsule(ext_tensor)
    elif not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack(): expected an object with __dlpack__ or a DLPack capsule, got "
                        f"{type(ext_tensor).__name__}")
    if hasattr(ext_tensor, "__dlpack_device__"):
        device_type = ext_tensor.__dlpack_device__()[0]
        if int(device_type) != _CPU:
            raise RuntimeError(f"hookgrad runs on the CPU only: cannot take a DLPack tensor from device type "
                               f"{int(device_type)}")
    return wrap(np.from_dlpack(ext_tensor))


def to_dlpack(tensor):
    """A DLPack capsule of ``tensor``'s memory (for a consumer's ``from_dlpack``)."""
    return tensor.__dlpack__()


def tensor_dlpack(self, stream=-1, *, max_version=None, dl_device=None, copy=None):
    """``Tensor.__dlpack__``: export this tensor's memory (it must not require grad, as in torch;
    a stream means nothing on the CPU)."""
    if self.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if stream is not None and type(stream) is not int:
        raise TypeError("stream must be ``int`` or ``none``")
    kwargs = {}
    if max_version is not None:
        kwargs["max_version"] = max_version
    if dl_device is not None:
        kwargs["dl_device"] = dl_device
    if copy is not None:
        kwargs["copy"] = copy
    return self._ndarray.__dlpack__(**kwargs)


def tensor_dlpack_device(self):
    """``Tensor.__dlpack_device__``: (kDLCPU, 0)."""
    return (_CPU, 0)


_warned_readonly = [False]


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """``torch.frombuffer``: a 1-D tensor over the memory of an object with the buffer protocol.
    A writable buffer is shared, as in torch. torch also shares a read-only buffer (and lets the
    tensor write into it, warning once); NumPy cannot write there, so hookgrad copies it instead,
    with torch's warning."""
    import warnings
    from .. import _dtype
    from .._tensor import wrap
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    dt = _dtype.to_dtype(dtype)
    length, item = view.nbytes, dt.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % item:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({item})")
        count = (length - offset) // item
    elif offset + count * item > length:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset ({offset} bytes) must "
                         f"not be greater than actual buffer length ({length} bytes)")
    data = np.frombuffer(view, dtype=dt.np, count=count, offset=offset)
    if not data.flags.writeable:
        if not _warned_readonly[0]:
            _warned_readonly[0] = True
            warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors. "
                          "This means you can write to the underlying (supposedly non-writable) buffer using the "
                          "tensor. You may want to copy the buffer to protect its data or make it writable before "
                          "converting it to a tensor. This type of warning will be suppressed for the rest of "
                          "this program.", UserWarning, stacklevel=2)
        data = data.copy()
    out = wrap(data)
    if requires_grad:
        out.requires_grad_(True)
    return out
