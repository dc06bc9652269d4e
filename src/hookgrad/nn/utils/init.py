"""``torch.nn.utils.skip_init``: build a module without running its parameter initialization."""
from __future__ import annotations

import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with its parameters and buffers left uninitialized (their
    values are whatever the memory held, as after ``to_empty``), to be filled by the caller.

    torch builds the module on the meta device to skip the work; hookgrad has no meta device, so
    the module is built normally and its tensors are then replaced by empty ones of the same
    shapes and dtypes: the same contract, without the saving."""
    from ..modules.module import Module
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    device = kwargs.pop("device", "cpu")
    module = module_cls(*args, **kwargs)
    return module.to_empty(device=device)
