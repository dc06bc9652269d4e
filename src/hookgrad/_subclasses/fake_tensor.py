"""``torch._subclasses.fake_tensor``: fake tensors do not exist in hookgrad (see the package docstring)."""
from __future__ import annotations

from .._tensor import Tensor


class UnsupportedFakeTensorException(RuntimeError):
    pass


class DynamicOutputShapeException(RuntimeError):
    pass


class FakeTensor(Tensor):
    """torch.compile's tensor with shapes and no data; no hookgrad tensor is one."""

    def __new__(cls, *args, **kwargs):
        raise RuntimeError("hookgrad has no fake tensors (torch._subclasses.FakeTensor): it compiles nothing and "
                           "every tensor holds its data")


class FakeTensorMode:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("hookgrad has no FakeTensorMode: it compiles nothing and every tensor holds its data")


def is_fake(x: object) -> bool:
    """Whether ``x`` is a fake tensor: never, in hookgrad."""
    return isinstance(x, FakeTensor)
