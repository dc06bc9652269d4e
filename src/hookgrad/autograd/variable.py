"""``torch.autograd.variable``: where torch keeps the legacy ``Variable`` class."""
from .._legacy import Variable

__all__ = ["Variable"]
