"""``Parameter`` (a tensor that a Module registers as a parameter) and ``Buffer`` (a tensor
marker that a Module registers as a buffer)."""
from __future__ import annotations

from typing import Any

import hookgrad
from hookgrad._tensor import Tensor

__all__ = ["Parameter", "Buffer", "is_lazy"]


def _alias(cls, data: Tensor) -> Tensor:
    """A new leaf of class ``cls`` sharing ``data``'s memory and version counter."""
    out = object.__new__(cls)
    src = data.detach()
    for slot in ("_data", "_requires_grad", "_grad_fn", "_grad", "_output_nr", "_version_counter",
                 "_base", "_view_version", "_backward_hooks", "_post_accumulate_grad_hooks",
                 "_accumulator", "_retains_grad"):
        setattr(out, slot, getattr(src, slot))
    return out


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning one to a Module attribute registers it.

    ``Parameter(data, requires_grad=True)`` shares ``data``'s memory and is always a leaf.
    Its repr is ``Parameter containing:`` followed by the tensor's.
    """

    __slots__ = ()

    def __new__(cls, data: Any = None, requires_grad: bool = True):
        if data is None:
            data = hookgrad.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        out = _alias(cls, data)
        out.requires_grad_(requires_grad)
        return out

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Everything happened in __new__; Tensor.__init__ would reinitialise the data.
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        # As in PyTorch: a fresh parameter with cloned data; grad and Python attributes are not kept.
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self) -> str:
        text = super().__repr__()
        # The core's formatter may already add the header (it does for this class).
        return text if text.startswith("Parameter containing:") else "Parameter containing:\n" + text

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        # Like PyTorch, a pickled parameter keeps its data, requires_grad and Python attributes,
        # not its hooks.
        return (_rebuild_parameter, (self._data.copy(), self._requires_grad, dict(self.__dict__), type(self)))


def _rebuild_parameter(data, requires_grad, state=None, cls=Parameter):
    from hookgrad._tensor import wrap

    out = cls(wrap(data), requires_grad)
    if state:
        out.__dict__.update(state)
    return out


class _BufferMeta(type):
    """``isinstance(t, Buffer)`` holds for any tensor made by ``Buffer(...)`` (a plain Tensor)."""

    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer and isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False):
            return True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """Marks a tensor as a buffer: ``module.name = Buffer(t)`` calls ``register_buffer`` with
    ``persistent``. Like PyTorch, ``Buffer(t)`` returns a plain (detached) Tensor, not a Buffer
    instance; ``isinstance(x, Buffer)`` recognises it."""

    __slots__ = ()

    def __new__(cls, data: Any = None, *, persistent: bool = True):
        if data is None:
            data = hookgrad.empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


def is_lazy(param: Any) -> bool:
    """hookgrad has no lazy (uninitialized) parameters."""
    return False
