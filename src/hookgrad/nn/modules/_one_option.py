"""The shared body of layers that pass their input and one option to one ``nn.functional`` function."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = []


class _OneOptionLayer(Module):
    """``forward(input)`` is ``F.<_function>(input, <option>)``, where the option is the attribute named
    by ``__constants__[0]``; the repr shows ``name=value``. A subclass sets ``__constants__`` and
    ``_function`` and writes an ``__init__`` with torch's parameter name that passes the value here."""

    __constants__: list
    _function: str

    def __init__(self, value) -> None:
        super().__init__()
        setattr(self, self.__constants__[0], value)

    def forward(self, input):
        return getattr(F, self._function)(input, getattr(self, self.__constants__[0]))

    def extra_repr(self) -> str:
        name = self.__constants__[0]
        return f"{name}={getattr(self, name)}"
