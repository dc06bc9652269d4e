"""torch._tensor_str's public face: ``PRINT_OPTS`` (the live print options, readable and settable
attribute by attribute), ``get_printoptions``, ``set_printoptions`` and the ``printoptions``
context manager. The printing itself is in ``_format``."""
from __future__ import annotations

import contextlib

from . import _format
from ._format import get_printoptions, set_printoptions

__all__ = ["PRINT_OPTS", "get_printoptions", "set_printoptions", "printoptions"]

_FIELDS = ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")


class _PrinterOptions:
    """A view of the print options that ``repr(tensor)`` follows: setting an attribute here changes
    how tensors print, as setting torch's ``PRINT_OPTS`` fields does."""

    __slots__ = ()

    def __getattr__(self, name):
        if name in _FIELDS:
            return _format._options[name]
        raise AttributeError(f"'__PrinterOptions' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        if name not in _FIELDS:
            raise AttributeError(f"'__PrinterOptions' object has no attribute '{name}'")
        _format._options[name] = value

    def __repr__(self):
        shown = ", ".join(f"{name}={_format._options[name]!r}" for name in _FIELDS)
        return f"__PrinterOptions({shown})"


_PrinterOptions.__name__ = _PrinterOptions.__qualname__ = "__PrinterOptions"   # torch's class name

PRINT_OPTS = _PrinterOptions()


def _tensor_str(self, indent):
    """The bracketed values of ``repr(self)`` alone, lines after the first indented by ``indent``
    (torch_geometric writes OFF mesh files with it)."""
    from ._dtype import printed_values
    return _format.format_array(printed_values(self._ndarray), indent,
                                zero=2.0 ** -127 if self.dtype.name == "float8_e8m0fnu" else None)


def _str(self, *, tensor_contents=None):
    """The whole ``repr(self)``."""
    return _format.format_tensor(self)


@contextlib.contextmanager
def printoptions(**options):
    """Print with ``options`` (set_printoptions' keywords) inside the block; the earlier options after it."""
    before = get_printoptions()
    set_printoptions(**options)
    try:
        yield
    finally:
        set_printoptions(**before)
