"""Split inputs into chunks per device and join outputs back (``torch.nn.parallel.scatter_gather``).

hookgrad has one device, the CPU: a "scatter" to ``k`` targets is ``k`` chunks of each tensor along
``dim`` (non-tensors are repeated), and ``gather`` concatenates them again, recorded by autograd.
"""
from __future__ import annotations

import hookgrad
from ..._tensor import Tensor

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def scatter(inputs, target_gpus, dim: int = 0):
    """One piece of ``inputs`` per target: tensors chunked along ``dim``, other objects repeated."""
    count = len(target_gpus)

    def split(obj):
        if isinstance(obj, Tensor):
            return list(obj.chunk(count, dim)) if count else []
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(split, obj))]
        if isinstance(obj, tuple) and obj:
            return list(zip(*map(split, obj)))
        if isinstance(obj, list) and obj:
            return [list(i) for i in zip(*map(split, obj))]
        if isinstance(obj, dict) and obj:
            return [type(obj)(i) for i in zip(*map(split, obj.items()))]
        return [obj] * count

    return split(inputs)


def scatter_kwargs(inputs, kwargs, target_gpus, dim: int = 0):
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def gather(outputs, target_device=None, dim: int = 0):
    """Concatenate the per-target outputs along ``dim`` (recursing into tuples, lists and dicts)."""
    first = outputs[0]
    if isinstance(first, Tensor):
        return hookgrad.cat(list(outputs), dim)
    if first is None:
        return None
    if isinstance(first, dict):
        if not all(len(first) == len(d) for d in outputs):
            raise ValueError("All dicts must have the same number of keys")
        return type(first)((k, gather([d[k] for d in outputs], target_device, dim)) for k in first)
    if _is_namedtuple(first):
        return type(first)._make(map(lambda parts: gather(parts, target_device, dim), zip(*outputs)))
    return type(first)(map(lambda parts: gather(parts, target_device, dim), zip(*outputs)))
