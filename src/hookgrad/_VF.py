"""``torch._VF``: the operator functions of ``torch._C._VariableFunctions`` under a module's name, the
form torch's own Python layers call when they want the operator's signature (``_VF.einsum(equation,
tensors, path=...)``, ``_VF.lstm``) or one kept out of the ``torch`` namespace (``_VF.unique_dim``)."""
from __future__ import annotations


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(f"module 'torch._VF' has no attribute {name!r}")
    from ._C._variable_functions import _VariableFunctions
    return getattr(_VariableFunctions, name)
