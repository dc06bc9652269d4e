"""Devices. hookgrad computes on the CPU with NumPy; ``device`` keeps torch's API and the seam
where another array backend could be plugged in.

As in torch, naming any device type torch knows is fine (``device("mps")``, ``device("cuda", 1)``,
so that scripts can build their device variables); putting a tensor there raises the error torch
raises on a machine without that device (``require_cpu``).
"""
from __future__ import annotations

import re

# The device types torch 2.13 accepts in a device string, in the order its error message lists them.
DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")

NO_ACCELERATOR = "Cannot access accelerator device when none is available."
_DEVICE_STRING = re.compile(r"([A-Za-z_]+)(?::([1-9][0-9]*|0))?")


class device:
    """``hookgrad.device("cpu")``, ``device("cuda:1")``, ``device("mps")``: a device name. Only the
    CPU holds tensors; see ``require_cpu``."""

    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, int) and not isinstance(type, bool):
            # a bare index names the current accelerator, which a CPU-only build lacks
            if type < 0:
                raise RuntimeError("Device index must not be negative")
            raise RuntimeError(NO_ACCELERATOR)
        text = str(type)
        if not text:
            raise RuntimeError("Device string must not be empty")
        parsed = _DEVICE_STRING.fullmatch(text)
        if parsed is None:   # torch's grammar: letters and underscores, then ':' and an index without leading 0
            raise RuntimeError(f"Invalid device string: '{text}'")
        type, idx = parsed.groups()
        if idx is not None:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: "
                                   f"{text}")
            if int(idx) > 2 ** 31 - 1:
                raise RuntimeError(f"Could not parse device index '{idx}' in device string '{text}'")
            index = int(idx)
        if type not in DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of device "
                               f"string: {type}")
        if index is not None and index < 0:
            raise RuntimeError(f"Device index must not be negative, got {index}")
        self.type = type
        self.index = index

    def __eq__(self, other):
        # as torch's: a device equals a device of the same type and index only (not a string)
        return isinstance(other, device) and other.type == self.type and other.index == self.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __enter__(self):
        # ``with device:`` pushes a DeviceContext function mode that makes it the factories' default
        # (as torch does); hookgrad has only the CPU, so any other device gets torch's no-such-device error
        if self.type != "meta":
            require_cpu(self)
        from .overrides import _push_mode
        from .utils._device import DeviceContext
        _push_mode(DeviceContext(self))
        return self

    def __exit__(self, *exc_info):
        from .overrides import _pop_mode
        from ._C._torch_function import release_tensor_entry_points
        _pop_mode()
        release_tensor_entry_points()
        return False


def require_cpu(where) -> device:
    """``where`` as a device, when it is the CPU; for any other device the error torch gives on a
    machine without it (AssertionError for CUDA and XPU, RuntimeError for the rest)."""
    dev = where if isinstance(where, device) else device(where)
    if dev.type == "cpu":
        return dev
    note = "; hookgrad computes on the CPU only"
    if dev.type in ("cuda", "hip"):
        raise AssertionError("Torch not compiled with CUDA enabled" + note)
    if dev.type == "xpu":
        raise AssertionError("Torch not compiled with XPU enabled" + note)
    raise RuntimeError(f"PyTorch is not linked with support for {dev.type} devices" + note)


CPU = device("cpu")
