"""``torch.__future__``: switches for behaviours that torch plans to make the default.

Both concern what converting a module (``module.to(...)``, ``.float()``, ``_apply``) does to its
parameters. Overwriting (a new Parameter object in place of the old one) is implemented; swapping
the tensors' contents (``torch.utils.swap_tensors``) is not: with it switched on, converting a
module or loading a state dict raises NotImplementedError instead of silently copying.
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
    """Converting a module or loading a state dict swaps tensor contents (not implemented: such a
    conversion or load raises NotImplementedError while this is on)."""
    global _swap_module_params_on_conversion
    _swap_module_params_on_conversion = value


def get_swap_module_params_on_conversion() -> bool:
    return _swap_module_params_on_conversion


def refuse_swap(action: str) -> None:
    """Raise for ``action`` (a module conversion or state-dict load) while swapping is switched on."""
    if _swap_module_params_on_conversion:
        raise NotImplementedError(
            f"{action} with torch.__future__.set_swap_module_params_on_conversion(True): swapping "
            "tensors (torch.utils.swap_tensors) is not implemented in hookgrad")
