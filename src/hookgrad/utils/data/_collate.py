"""Turning a list of samples into a batch (``default_collate``) and single samples into tensors
(``default_convert``), with PyTorch's rules:

- tensors are stacked along a new first dimension; NumPy arrays become tensors and are stacked;
- NumPy scalars become a tensor of their dtype; Python floats a float64 tensor, ints an int64
  tensor (bools a bool tensor); strings and bytes are left as a list (the tuple of the batch);
- mappings are collated key by key, namedtuples field by field, other sequences position by
  position (tuples give lists); elements of a sequence must all have the same length.

``collate(batch, collate_fn_map=...)`` lets a caller extend the rules by element type.
"""
from __future__ import annotations

import collections.abc
import copy
import re

import numpy as np

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map"]

_np_str_obj_array_pattern = re.compile(r"[SaUO]")

_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _sequence_like(template, values: list):
    """``values`` in a sequence of ``template``'s type (a copy of ``template`` when it is mutable), or
    the list itself when that type cannot be built from one."""
    try:
        if isinstance(template, collections.abc.MutableSequence):
            clone = copy.copy(template)
            for i, value in enumerate(values):
                clone[i] = value
            return clone
        return type(template)(values)
    except TypeError:
        return values


def _tensor_cls():
    from ..._tensor import Tensor
    return Tensor


def _wrap(array):
    from ..._tensor import wrap
    return wrap(array)


def _as_tensor(array: np.ndarray):
    return _wrap(np.asarray(array))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    if any(t.requires_grad for t in batch) or any(t._ndarray.shape != batch[0]._ndarray.shape for t in batch):
        import hookgrad
        return hookgrad.stack(list(batch), 0)   # also torch's error for tensors of different sizes
    return _wrap(np.stack([t._ndarray for t in batch]))


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if _np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(_ERR.format(elem.dtype))
    return _wrap(np.stack(batch))


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return _wrap(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    return _wrap(np.array(batch, dtype=np.float64))


def collate_int_fn(batch, *, collate_fn_map=None):
    if all(isinstance(b, bool) for b in batch):
        return _wrap(np.array(batch, dtype=np.bool_))
    return _wrap(np.array(batch, dtype=np.int64))


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


def collate(batch, *, collate_fn_map=None):
    """Collate ``batch`` (a sequence of samples), dispatching on the type of its first element."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type, fn in collate_fn_map.items():
            if isinstance(elem, collate_type):
                return fn(batch, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        items = {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem}
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(items)
                return clone
            return elem_type(items)
        except TypeError:
            return items
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        collated = [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        if isinstance(elem, tuple):
            return collated
        return _sequence_like(elem, collated)
    raise TypeError(_ERR.format(elem_type))


class _CollateMap(dict):
    """The default dispatch table. Its first entry, the Tensor class, is put in on first use:
    this package is imported while the Tensor module may still be loading."""

    _ready = False

    def _fill(self):
        if not self._ready:
            self._ready = True
            items = list(dict.items(self))
            dict.clear(self)
            dict.__setitem__(self, _tensor_cls(), collate_tensor_fn)
            dict.update(self, items)

    def _filled(name):  # noqa: N805 - builds the wrapped methods below
        method = getattr(dict, name)

        def wrapper(self, *args, **kwargs):
            self._fill()
            return method(self, *args, **kwargs)

        wrapper.__name__ = name
        return wrapper

    for _name in ("__contains__", "__getitem__", "__iter__", "__len__", "__repr__", "copy", "get",
                  "items", "keys", "values"):
        locals()[_name] = _filled(_name)
    del _name, _filled


default_collate_fn_map = _CollateMap()
default_collate_fn_map[np.ndarray] = collate_numpy_array_fn
default_collate_fn_map[(np.bool_, np.number, np.object_)] = collate_numpy_scalar_fn
default_collate_fn_map[float] = collate_float_fn
default_collate_fn_map[int] = collate_int_fn
default_collate_fn_map[str] = collate_str_fn
default_collate_fn_map[bytes] = collate_str_fn


def default_collate(batch):
    """Collate a list of samples into a batch with the default rules (see the module doc)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """Convert NumPy arrays and scalars inside ``data`` to tensors, leaving everything else."""
    if isinstance(data, _tensor_cls()):
        return data
    if isinstance(data, np.ndarray):
        if _np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return _wrap(data)
    if isinstance(data, (np.bool_, np.number)):
        return _wrap(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        items = {key: default_convert(data[key]) for key in data}
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update(items)
                return clone
            return type(data)(items)
        except TypeError:
            return items
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _sequence_like(data, [default_convert(d) for d in data])
    return data
