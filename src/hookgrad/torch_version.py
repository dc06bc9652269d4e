"""``TorchVersion``: the version string that compares with tuples and other version strings.

Code written for torch gates features on ``torch.__version__ >= (1, 13)`` or
``LooseVersion(torch.__version__) >= "1.9"``; hookgrad's version string states the torch API level it
implements first, then hookgrad's own release as the local label (``2.13.0+hookgrad.0.1.0``).
"""
from __future__ import annotations

import re

__all__ = ["TorchVersion"]

_RELEASE = re.compile(r"^\s*v?(\d+(?:\.\d+)*)(?:(a|b|rc|alpha|beta|dev|\.dev)(\d*))?")


def _key(version) -> tuple | None:
    """(release numbers, pre-release rank) or None if ``version`` is not a version."""
    if isinstance(version, (tuple, list)):
        version = ".".join(str(v) for v in version)
    if not isinstance(version, str):
        return None
    match = _RELEASE.match(version)
    if match is None:
        return None
    numbers = [int(n) for n in match.group(1).split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    pre = match.group(2)
    rank = (0, 0) if pre is None else (-1, int(match.group(3) or 0))
    return tuple(numbers), rank


class TorchVersion(str):
    """A ``str`` that compares as a version against strings and tuples (``v >= (1, 13)``)."""

    __slots__ = ()

    def _compare(self, other, op):
        mine, theirs = _key(str(self)), _key(other)
        if mine is None or theirs is None:
            return getattr(str, op)(self, other) if isinstance(other, str) else NotImplemented
        return getattr(mine, op)(theirs)

    def __lt__(self, other):
        return self._compare(other, "__lt__")

    def __le__(self, other):
        return self._compare(other, "__le__")

    def __gt__(self, other):
        return self._compare(other, "__gt__")

    def __ge__(self, other):
        return self._compare(other, "__ge__")

    def __eq__(self, other):
        if isinstance(other, str) and str.__eq__(self, other):
            return True
        return self._compare(other, "__eq__")

    def __hash__(self):
        return str.__hash__(self)
