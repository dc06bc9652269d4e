"""``torch.utils.weak``: weak references keyed by object identity (tensors compare elementwise, so a
plain ``WeakKeyDictionary`` cannot hold them)."""
from __future__ import annotations

import weakref
from collections.abc import MutableMapping

__all__ = ["TensorWeakRef", "WeakIdRef", "WeakIdKeyDictionary", "WeakTensorKeyDictionary"]


class WeakIdRef(weakref.ref):
    """A weak reference that hashes and compares by the identity of its referent (while it lives)."""

    __slots__ = ["_id"]

    def __init__(self, key, callback=None):
        self._id = id(key)
        super().__init__(key, callback)

    def __call__(self):
        return super().__call__()

    def __hash__(self):
        return self._id

    def __eq__(self, other):
        if not isinstance(other, WeakIdRef):
            return NotImplemented
        a, b = self(), other()
        if a is not None and b is not None:
            return a is b
        return self is other


class _StrongIdKey:
    """A lookup key with the same hash and equality as a live WeakIdRef."""

    __slots__ = ["obj", "_id"]

    def __init__(self, obj):
        self.obj, self._id = obj, id(obj)

    def __hash__(self):
        return self._id

    def __eq__(self, other):
        return isinstance(other, WeakIdRef) and other() is self.obj


class WeakIdKeyDictionary(MutableMapping):
    """A dictionary whose keys are held weakly and matched by identity; an entry goes when its key dies."""

    def __init__(self, dict=None, ref_type=WeakIdRef):
        self.data = {}
        self.ref_type = ref_type
        self_ref = weakref.ref(self)

        def remove(k):
            owner = self_ref()
            if owner is not None:
                owner.data.pop(k, None)

        self._remove = remove
        if dict is not None:
            self.update(dict)

    def __getitem__(self, key):
        return self.data[_StrongIdKey(key)]

    def __setitem__(self, key, value):
        lookup = _StrongIdKey(key)
        for existing in (k for k in self.data if k == lookup):
            self.data[existing] = value
            return
        self.data[self.ref_type(key, self._remove)] = value

    def __delitem__(self, key):
        del self.data[_StrongIdKey(key)]

    def __contains__(self, key):
        try:
            return _StrongIdKey(key) in self.data
        except TypeError:
            return False

    def __iter__(self):
        for ref in list(self.data):
            obj = ref()
            if obj is not None:
                yield obj

    def __len__(self):
        return sum(1 for ref in list(self.data) if ref() is not None)

    def __repr__(self):
        return f"<{type(self).__name__} at {id(self):#x}>"

    def copy(self):
        return type(self)({k: v for k, v in self.items()}, ref_type=self.ref_type)


WeakTensorKeyDictionary = WeakIdKeyDictionary


class TensorWeakRef:
    """A weak reference to a tensor: call it to get the tensor, or None once it is gone."""

    __slots__ = ["ref"]

    def __init__(self, tensor):
        from .._tensor import Tensor
        if not isinstance(tensor, Tensor):
            raise AssertionError(f"TensorWeakRef expects a Tensor, got {type(tensor).__name__}")
        self.ref = weakref.ref(tensor)

    def __call__(self):
        return self.ref()
