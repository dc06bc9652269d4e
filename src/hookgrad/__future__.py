"""``torch.__future__``: switches for behaviours that torch plans to make the default.

Both concern what converting a module (``module.to(...)``, ``.float()``, ``_apply``) does to its
parameters: overwriting puts a new Parameter object in place of the old one; swapping keeps the
Parameter object and exchanges its contents with the converted tensor's (``torch.utils.swap_tensors``),
which ``load_state_dict`` then does too.
"""
from __future__ import annotations

_overwrite_module_params_on_conversion = False
_swap_module_params_on_conversion = False


def set_overwrite_module_params_on_conversion(value: bool) -> None:
    """Converting a module assigns new Parameter objects instead of changing the old ones' data."""
    global _overwrite_module_params_on_conversion
    _overwrite_module_params_on_conversion = value


def get_overwrite_module_params_on_conversion() -> bool:
    return _overwrite_module_params_on_conversion


def set_swap_module_params_on_conversion(value: bool) -> None:
    """Converting a module or loading a state dict swaps the new tensors' contents into the
    module's parameters and buffers (``torch.utils.swap_tensors``) instead of replacing their data."""
    global _swap_module_params_on_conversion
    _swap_module_params_on_conversion = value


def get_swap_module_params_on_conversion() -> bool:
    return _swap_module_params_on_conversion

