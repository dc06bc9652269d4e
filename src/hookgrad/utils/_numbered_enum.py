"""The base of hookgrad's stand-ins for torch's C++ enums bound to Python (``DispatchKey``,
``_ScalingType``, ...); it imports nothing of hookgrad, so any layer may use it."""
from __future__ import annotations

import enum

__all__ = ["NumberedEnum"]


class NumberedEnum(enum.Enum):
    """An enum whose members also convert to their number (``int(m)``, ``m.__index__()``), as torch's
    C++ enums bound to Python do; a member is not equal to its number."""

    def __int__(self):
        return self.value

    __index__ = __int__

    def __repr__(self):
        return f"<{type(self).__name__}.{self.name}: {self.value}>"
