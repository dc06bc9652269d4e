"""Flatten parameters into one vector and write a vector back into parameters."""
from __future__ import annotations

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _tensor_cls():
    from ..._tensor import Tensor
    return Tensor


def _typename(obj) -> str:
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def parameters_to_vector(parameters):
    """Concatenate the flattened parameters into one 1-D tensor (differentiable, like ``cat``)."""
    import hookgrad
    return hookgrad.cat([p.view(-1) for p in parameters])


def vector_to_parameters(vec, parameters) -> None:
    """Make each parameter's data the matching slice of ``vec`` (shared memory, as in PyTorch)."""
    if not isinstance(vec, _tensor_cls()):
        raise TypeError(f"expected hookgrad.Tensor, but got: {_typename(vec)}")
    pointer = 0
    for param in parameters:
        num = param.numel()
        # slicing the first dimension then viewing gives torch's error for a vector of the wrong shape
        param.data = vec[pointer:pointer + num].view_as(param).data
        pointer += num
