"""``torch._subclasses``: the names libraries import to recognise fake tensors (torch.compile's
shape-only tensors). hookgrad never makes one: ``is_fake`` is False for every hookgrad value,
``FakeTensor`` matches no tensor, and a ``FakeTensorMode`` cannot be entered."""
from .fake_tensor import (DynamicOutputShapeException, FakeTensor, FakeTensorMode,  # noqa: F401
                          UnsupportedFakeTensorException)

__all__ = ["FakeTensor", "FakeTensorMode", "UnsupportedFakeTensorException", "DynamicOutputShapeException"]
