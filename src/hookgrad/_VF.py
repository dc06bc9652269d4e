"""``torch._VF``: the module through which torch's Python code calls its operator functions, those it
keeps out of the ``torch`` namespace (``unique_dim``) included; the same table as
``torch._C._VariableFunctions``."""
from __future__ import annotations


def __getattr__(name):
    from ._C import _VariableFunctions
    return getattr(_VariableFunctions, name)
