"""``torch._C._VariableFunctions``: torch's table of its ``torch.*`` operator functions.

A name torch exports unchanged as ``torch.X`` answers with hookgrad's ``torch.X`` (the same object, as
in torch). A few of torch's ``torch.X`` are Python wrappers over an operator with another signature
(``einsum(equation, tensors)`` taking a list rather than ``*operands``): those are written out below
with the operator's signature. Names hookgrad lacks stay missing.
"""
from __future__ import annotations

from ._aliases import lookup, present


def _hookgrad():
    import hookgrad
    return hookgrad


class _Table(type):
    """Class-level lookups (``_VariableFunctionsClass.add``) go through the table as well."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lookup("_VariableFunctions", "hookgrad", name)

    def __dir__(cls):
        return sorted(set(type.__dir__(cls)) | set(present("_VariableFunctions", "hookgrad")))


def _atleast(function_name):
    def atleast(tensors):
        function = getattr(_hookgrad(), function_name)
        if isinstance(tensors, (list, tuple)):
            return tuple(function(t) for t in tensors)
        return function(tensors)
    atleast.__name__ = function_name
    return staticmethod(atleast)


class _VariableFunctionsClass(metaclass=_Table):
    def __new__(cls, *args, **kwargs):
        raise TypeError("cannot create 'torch._C._VariableFunctionsClass' instances")

    def __getattr__(self, name):
        return getattr(type(self), name)

    def __dir__(self):
        return dir(type(self))

    atleast_1d = _atleast("atleast_1d")
    atleast_2d = _atleast("atleast_2d")
    atleast_3d = _atleast("atleast_3d")

    @staticmethod
    def block_diag(tensors):
        return _hookgrad().block_diag(*tensors)

    @staticmethod
    def broadcast_tensors(tensors):
        return _hookgrad().broadcast_tensors(*tensors)

    @staticmethod
    def cartesian_prod(tensors):
        return _hookgrad().cartesian_prod(*tensors)

    @staticmethod
    def chain_matmul(matrices):
        return _hookgrad().linalg.multi_dot(list(matrices))

    @staticmethod
    def einsum(equation, tensors, *, path=None):
        return _hookgrad().einsum(equation, *tensors)

    @staticmethod
    def meshgrid(tensors, *, indexing=None):
        if indexing is None:
            return _hookgrad().meshgrid(*tensors)
        return _hookgrad().meshgrid(*tensors, indexing=indexing)

    @staticmethod
    def split(self, split_size, dim=0):
        return tuple(_hookgrad().Tensor.split(self, split_size, dim))

    @staticmethod
    def unique_dim(self, dim, sorted=True, return_inverse=False, return_counts=False):
        # torch.unique's operator for a given dim: always all three results
        return _hookgrad().unique(self, sorted, True, True, dim)

    @staticmethod
    def tensordot(self, other, dims_self, dims_other):
        return _hookgrad().tensordot(self, other, dims=(list(dims_self), list(dims_other)))


# torch's table is the one instance of its class, made by torch itself
_VariableFunctions = object.__new__(_VariableFunctionsClass)
