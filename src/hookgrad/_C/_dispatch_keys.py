"""``DispatchKey`` and ``DispatchKeySet`` with torch's members and set algebra, and the
``_ExcludeDispatchKeyGuard`` context manager.

A key set is torch's 64-bit word: the low bits name back ends (CPU, CUDA, ...), the others name
functionalities (Dense, AutogradFunctionality, Python, AutocastCPU, ...); a per-back-end key such as
``AutogradCPU`` is one functionality bit plus one back-end bit. Each key's bits come from the
generated table, so ``|``, ``&``, ``-``, ``add``, ``remove``, ``has`` and the printed form work out as
torch's do.
"""
from __future__ import annotations

from ..utils._numbered_enum import NumberedEnum
from ._tables import DISPATCH_KEYS


class _KeyEnum(NumberedEnum):
    def __str__(self):
        return f"DispatchKey.{self.name}"


DispatchKey = _KeyEnum("DispatchKey", [(name, value) for name, (value, _bits) in DISPATCH_KEYS.items()],
                       module=__name__)

_BITS = {DispatchKey[name]: bits for name, (_value, bits) in DISPATCH_KEYS.items()}
# the back-end bits are the ones below the first functionality bit (Dense's)
_BACKEND_MASK = _BITS[DispatchKey.Dense] - 1
# functionalities that exist once per back end (Dense, Sparse, AutogradFunctionality, ...)
_PER_BACKEND = {bits & ~_BACKEND_MASK for bits in _BITS.values() if bits & _BACKEND_MASK and bits & ~_BACKEND_MASK}
_NAMED: dict = {}
for _key, _bits in _BITS.items():
    # range markers (StartOfDenseBackends, EndOf...) share bits with a real key: the real one names them
    if _bits and not _key.name.startswith(("StartOf", "EndOf")):
        _NAMED.setdefault(_bits, _key)
_RANGE_START = {_bits: _key for _key, _bits in _BITS.items() if _key.name.startswith("StartOf")}


def _bits_of(value) -> list:
    return [1 << i for i in range(64) if value >> i & 1]


class DispatchKeySet:
    """A set of dispatch keys, as torch's ``torch._C.DispatchKeySet``."""

    __slots__ = ("_repr",)

    def __init__(self, key):
        if not isinstance(key, DispatchKey):
            raise TypeError("__init__(): incompatible constructor arguments. The following argument types are "
                            "supported:\n    1. torch._C.DispatchKeySet(arg0: torch._C.DispatchKey)\n\n"
                            f"Invoked with: {key!r}")
        self._repr = _BITS[key]

    @classmethod
    def from_raw_repr(cls, raw: int) -> "DispatchKeySet":
        made = object.__new__(cls)
        made._repr = int(raw) & (2 ** 64 - 1)
        return made

    def raw_repr(self) -> int:
        return self._repr

    def _checked(self, other) -> "DispatchKeySet":
        if not isinstance(other, DispatchKeySet):
            raise TypeError(f"unsupported operand type: 'DispatchKeySet' and '{type(other).__name__}'")
        return other

    def __or__(self, other):
        return DispatchKeySet.from_raw_repr(self._repr | self._checked(other)._repr)

    def __and__(self, other):
        return DispatchKeySet.from_raw_repr(self._repr & self._checked(other)._repr)

    def __sub__(self, other):
        # as in torch, only the other set's functionalities are taken away; back ends stay
        return DispatchKeySet.from_raw_repr(self._repr & ~(self._checked(other)._repr & ~_BACKEND_MASK))

    def __eq__(self, other):
        return isinstance(other, DispatchKeySet) and self._repr == other._repr

    def __hash__(self):
        return hash(self._repr)

    def add(self, key) -> "DispatchKeySet":
        return self | DispatchKeySet(key)

    def remove(self, key) -> "DispatchKeySet":
        return self - DispatchKeySet(key)  # torch's remove also keeps the back-end bits

    def has(self, key) -> bool:
        bits = _BITS[key]
        return self._repr & bits == bits

    def _keys(self) -> list:
        """The runtime keys in the set, lowest functionality first (torch's order)."""
        keys = []
        backends = _bits_of(self._repr & _BACKEND_MASK)
        for functionality in _bits_of(self._repr & ~_BACKEND_MASK):
            if functionality in _PER_BACKEND:
                keys.extend(_NAMED[functionality | b] for b in backends if (functionality | b) in _NAMED)
            elif functionality in _NAMED:
                keys.append(_NAMED[functionality])
        return keys

    def highestPriorityTypeId(self):  # noqa: N802 - torch's name
        functionalities = _bits_of(self._repr & ~_BACKEND_MASK)
        if not functionalities:
            return DispatchKey.Undefined
        top = functionalities[-1]
        if top not in _PER_BACKEND:
            return _NAMED.get(top, DispatchKey.Undefined)
        backends = _bits_of(self._repr & _BACKEND_MASK)
        if backends:
            return _NAMED.get(top | backends[-1], DispatchKey.Undefined)
        # a per-back-end functionality with no back end: torch answers with its range's start marker
        return _RANGE_START.get(top, DispatchKey.Undefined)

    def __repr__(self):
        return f"DispatchKeySet({', '.join(k.name for k in self._keys())})"


_PYTHON_KEYS = {DispatchKey.Python, DispatchKey.PythonTLSSnapshot, DispatchKey.PythonDispatcher,
                DispatchKey.PreDispatch}
_AUTOCAST_KEYS = {k for k in DispatchKey if k.name.startswith("Autocast")}
_AUTOGRAD_KEYS = {k for k in DispatchKey if k.name.startswith("Autograd")}


class _ExcludeDispatchKeyGuard:
    """Skip the dispatch keys of ``keyset`` for a ``with`` block. hookgrad has no dispatcher, so it honours
    the keys whose effect it has: the Python keys (dispatch modes see none of the ops: as
    ``_DisableTorchDispatch``), the Autocast keys (no autocasting inside) and the Autograd keys (no graph
    is recorded, as below torch's autograd layer). A set naming any other key raises NotImplementedError
    rather than being ignored."""

    def __init__(self, keyset):
        if not isinstance(keyset, DispatchKeySet):
            raise TypeError("__init__(): incompatible constructor arguments. The following argument types are "
                            "supported:\n    1. torch._C._ExcludeDispatchKeyGuard(arg0: torch._C.DispatchKeySet)"
                            f"\n\nInvoked with: {keyset!r}")
        keys = set(keyset._keys())
        unsupported = sorted(k.name for k in keys - _PYTHON_KEYS - _AUTOCAST_KEYS - _AUTOGRAD_KEYS)
        if unsupported:
            raise NotImplementedError(f"hookgrad cannot exclude the dispatch keys {', '.join(unsupported)}: only the "
                                      f"Python, Autocast and Autograd keys have an effect it can switch off")
        self._python = bool(keys & _PYTHON_KEYS)
        self._autocast = bool(keys & _AUTOCAST_KEYS)
        self._autograd = bool(keys & _AUTOGRAD_KEYS)
        self._undo = []

    def __enter__(self):
        if self._python:
            from . import _DisableTorchDispatch
            guard = _DisableTorchDispatch()
            guard.__enter__()
            self._undo.append(guard.__exit__)
        if self._autocast:
            from .. import _autocast
            previous = _autocast.STATE.enabled
            _autocast.STATE.enabled = False
            self._undo.append(lambda *exc: setattr(_autocast.STATE, "enabled", previous))
        if self._autograd:
            from ..autograd import grad_mode
            previous_grad = grad_mode.STATE.enabled
            grad_mode.STATE.enabled = False
            self._undo.append(lambda *exc: setattr(grad_mode.STATE, "enabled", previous_grad))
        return self

    def __exit__(self, *exc_info):
        while self._undo:
            self._undo.pop()(*exc_info)
        return False
