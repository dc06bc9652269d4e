"""torch.testing for hookgrad: ``assert_close`` (with torch's default tolerances, error classes
and message layout), the deprecated ``assert_allclose``, and ``make_tensor``."""
from ._comparison import assert_allclose, assert_close
from ._creation import make_tensor

__all__ = ["assert_allclose", "assert_close", "make_tensor"]
