"""``torch.autograd.graph.allow_mutation_on_saved_tensors`` and ``increment_version``.

Inside ``allow_mutation_on_saved_tensors()``, a tensor saved for backward may be changed in place
afterwards: backward still sees the values it had when it was saved. torch clones a saved tensor
just before an in-place op changes it (a dispatch mode sees the op coming); hookgrad has no
dispatcher, so the saved-tensor pack hook keeps a copy of the values, and the unpack hook hands
back the tensor itself when its version counter shows no change since (the common case: the
same object, as in torch), or a tensor made from the copy when the tensor, or a view sharing its
memory, was changed. Gradients are torch's; the copy costs memory for every tensor saved inside
the context. The context object's ``cloned``, ``original`` and ``tid_to_weakhandle`` show what
torch's show (computed from the version counters when read). Backward must run inside the same
context (torch's AssertionError otherwise), and the contexts do not nest (torch's RuntimeError).
"""
from __future__ import annotations

import contextlib
import weakref

import numpy as np

from .._late import LateNames
from .graph import saved_tensors_hooks

_above = LateNames(wrap="hookgrad._tensor")

__all__ = ["allow_mutation_on_saved_tensors", "increment_version"]

_OUTSIDE = ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' context in which the graph was "
            "originally recorded.")
_enabled = [False]


class _Handle:
    """What the graph keeps for one saved tensor (at one version): the values it had then. The
    graph holds it strongly, the context weakly, so the context forgets it with the graph."""

    __slots__ = ("version", "values", "__weakref__")

    def __init__(self, version, values):
        self.version, self.values = version, values


class _AllowMutationOnSavedContext:
    """The state of one ``allow_mutation_on_saved_tensors`` block, shown as torch shows it:
    ``original`` maps each live handle to its tensor while that tensor is unchanged, ``cloned``
    maps it to the values saved once the tensor (or a view of its memory) changed in place, and
    ``tid_to_weakhandle`` maps ``(id, data_ptr, version)`` of each saved tensor to its handle (the
    same tensor saved twice at one version shares a handle). Entries go when their graph goes."""

    def __init__(self) -> None:
        self._tensors: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._clones: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.tid_to_weakhandle: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self._open = True

    def _changed(self, handle) -> bool:
        return self._tensors[handle]._version != handle.version

    @property
    def original(self) -> dict:
        return {h: t for h, t in list(self._tensors.items()) if not self._changed(h)}

    @property
    def cloned(self) -> dict:
        return {h: self._clone(h) for h in list(self._tensors.keys()) if self._changed(h)}

    def _clone(self, handle):
        clone = self._clones.get(handle)
        if clone is None:
            clone = self._clones[handle] = _above.wrap(handle.values)
        return clone

    def clear(self) -> None:
        self._tensors.clear()
        self._clones.clear()
        self.tid_to_weakhandle.clear()
        self._open = False


def increment_version(tensor) -> None:
    """Mark ``tensor`` (or each tensor of an iterable) as changed in place, for code that writes a
    tensor's memory behind autograd's back: a saved copy of it then fails the version check."""
    from .._tensor import Tensor
    tensors = (tensor,) if isinstance(tensor, Tensor) else tuple(tensor)
    from .grad_mode import InferenceCounter
    for t in tensors:
        if t._version_counter.__class__ is not InferenceCounter:  # inference tensors keep no version
            t._bump_version()


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    ctx = _AllowMutationOnSavedContext()

    def pack(tensor):
        tid = (id(tensor), tensor.data_ptr(), tensor._version)
        handle = ctx.tid_to_weakhandle.get(tid)
        if handle is None:
            handle = _Handle(tensor._version, np.array(tensor._ndarray, copy=True))
            ctx.tid_to_weakhandle[tid] = handle
            ctx._tensors[handle] = tensor
        return handle

    def unpack(handle):
        if not _enabled[0] or not ctx._open or handle not in ctx._tensors:
            raise AssertionError(_OUTSIDE)
        if ctx._changed(handle):  # changed in place since it was saved: backward gets the saved values
            return ctx._clone(handle)
        return ctx._tensors[handle]

    with saved_tensors_hooks(pack, unpack):
        try:
            if _enabled[0]:
                raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
            _enabled[0] = True
            yield ctx
        finally:
            ctx.clear()
            _enabled[0] = False
