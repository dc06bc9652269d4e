"""``torch.autograd.graph.allow_mutation_on_saved_tensors`` and ``increment_version``.

Inside ``allow_mutation_on_saved_tensors()``, a tensor saved for backward may be changed in place
afterwards: backward still sees the values it had when it was saved. torch clones a saved tensor
just before an in-place op changes it (a dispatch mode sees the op coming); hookgrad has no
dispatcher, so the saved-tensor pack hook keeps a copy of the values, and the unpack hook hands
back the tensor itself when its version counter shows no change since (the common case: the
same object, as in torch), or a tensor made from the copy when the tensor, or a view sharing its
memory, was changed. Gradients are torch's; the copy costs memory for every tensor saved inside
the context. Backward must run inside the same context (torch's AssertionError otherwise), and the
contexts do not nest (torch's RuntimeError).
"""
from __future__ import annotations

import contextlib

import numpy as np

from .._late import LateNames
from .graph import saved_tensors_hooks

_above = LateNames(wrap="hookgrad._tensor")

__all__ = ["allow_mutation_on_saved_tensors", "increment_version"]

_OUTSIDE = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' context in which the graph was "
            "originally recorded.")
_enabled = [False]


class _AllowMutationOnSavedContext:
    """The state of one ``allow_mutation_on_saved_tensors`` block: the saved tensors and, for the
    ones changed since, what backward gets instead."""

    def __init__(self) -> None:
        self.original: dict = {}
        self.cloned: dict = {}
        self._open = True

    def clear(self) -> None:
        self.original.clear()
        self.cloned.clear()
        self._open = False


class _Saved:
    __slots__ = ("key", "version", "values", "__weakref__")

    def __init__(self, key, version, values):
        self.key, self.version, self.values = key, version, values


def increment_version(tensor) -> None:
    """Mark ``tensor`` (or each tensor of an iterable) as changed in place, for code that writes a
    tensor's memory behind autograd's back: a saved copy of it then fails the version check."""
    from .._tensor import Tensor
    tensors = (tensor,) if isinstance(tensor, Tensor) else tuple(tensor)
    for t in tensors:
        t._bump_version()


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    ctx = _AllowMutationOnSavedContext()

    def pack(tensor):
        handle = _Saved(id(tensor), tensor._version, np.array(tensor._data, copy=True))
        ctx.original[handle.key] = tensor
        return handle

    def unpack(handle):
        if not _enabled[0] or not ctx._open or handle.key not in ctx.original:
            raise AssertionError(_OUTSIDE)
        tensor = ctx.original[handle.key]
        if tensor._version == handle.version:
            return tensor
        clone = ctx.cloned.get(handle.key)
        if clone is None:  # changed in place since it was saved: backward gets the saved values
            clone = ctx.cloned[handle.key] = _above.wrap(handle.values)
        return clone

    with saved_tensors_hooks(pack, unpack):
        try:
            if _enabled[0]:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
            _enabled[0] = True
            yield ctx
        finally:
            ctx.clear()
            _enabled[0] = False
