"""Settings modules in torch's style (``torch._dynamo.config``, ``torch.compiler.config``): a module
whose settings are plain attributes with defaults; assigning a name that is not a setting raises
torch's AttributeError, and ``patch`` changes settings for a ``with`` block or a decorated function."""
from __future__ import annotations

import contextlib
import copy
import functools
import sys
import types


def _torch_name(module_name: str) -> str:
    return "torch" + module_name[len("hookgrad"):] if module_name.startswith("hookgrad") else module_name


class ConfigModule(types.ModuleType):
    """The class a settings module takes on through ``install(__name__, defaults)``."""

    def __setattr__(self, name, value):
        if not name.startswith("_") and name not in self.__dict__["_defaults"]:
            raise AttributeError(f"{_torch_name(self.__name__)}.{name} does not exist")
        super().__setattr__(name, value)

    def get_config_copy(self) -> dict:
        return {name: copy.deepcopy(getattr(self, name)) for name in self._defaults}

    to_dict = get_config_copy

    def load_config(self, values: dict) -> None:
        for name, value in values.items():
            setattr(self, name, value)

    def patch(self, arg=None, value=None, **changes):
        """``config.patch(name, value)``, ``config.patch({name: value})`` or ``config.patch(name=value)``:
        a context manager that is also a decorator."""
        if isinstance(arg, str):
            changes[arg] = value
        elif isinstance(arg, dict):
            changes.update(arg)
        return _Patch(self, changes)


class _Patch(contextlib.ContextDecorator):
    def __init__(self, module: ConfigModule, changes: dict):
        self.module, self.changes, self.saved = module, changes, []

    def __enter__(self):
        for name in self.changes:  # checked on entry, as torch does
            if name not in self.module._defaults:
                raise AttributeError(f"{_torch_name(self.module.__name__)}.{name} does not exist")
        self.saved.append({name: getattr(self.module, name) for name in self.changes})
        for name, value in self.changes.items():
            setattr(self.module, name, value)
        return self

    def __exit__(self, *exc):
        for name, value in self.saved.pop().items():
            setattr(self.module, name, value)
        return False


def install(module_name: str, defaults: dict) -> None:
    """Turn the module ``module_name`` into a settings module with ``defaults``."""
    module = sys.modules[module_name]
    module.__dict__["_defaults"] = dict(defaults)
    for name, value in defaults.items():
        module.__dict__[name] = copy.deepcopy(value)
    module.__class__ = ConfigModule
