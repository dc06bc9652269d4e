"""Module classes: ``Module``, the containers, and the layers."""
from .module import Module  # noqa: F401  (first: everything else subclasses it)
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential  # noqa: F401

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]

# ---------------------------------------------------------------------------------------------
# Layers: import each layer file's classes below and add their names to __all__
# (e.g. ``from .linear import Identity, Linear`` and ``__all__ += ["Identity", "Linear"]``).
# ---------------------------------------------------------------------------------------------
from ._sequence_layers import *  # noqa
from ._layers import *  # noqa
