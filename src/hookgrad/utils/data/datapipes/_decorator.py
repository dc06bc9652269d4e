"""Decorators for DataPipe classes: registering functional forms, marking non-deterministic pipes,
and checking element types at construction and while iterating."""
from __future__ import annotations

import inspect
from functools import wraps
from typing import get_type_hints

from .datapipe import IterDataPipe, MapDataPipe

__all__ = ["functional_datapipe", "guaranteed_datapipes_determinism", "non_deterministic", "argument_validation",
           "runtime_validation", "runtime_validation_disabled"]


class functional_datapipe:
    """Register the decorated DataPipe class as ``dp.<name>(...)`` on every pipe of its kind."""

    def __init__(self, name: str, enable_df_api_tracing=False) -> None:
        self.name = name
        self.enable_df_api_tracing = enable_df_api_tracing

    def __call__(self, cls):
        target = cls.cls if isinstance(cls, non_deterministic) else cls  # a marked class registers too
        if not isinstance(target, type):
            raise TypeError("`functional_datapipe` can only decorate IterDataPipe")
        if issubclass(target, IterDataPipe):
            IterDataPipe.register_datapipe_as_function(self.name, cls,
                                                       enable_df_api_tracing=self.enable_df_api_tracing)
        elif issubclass(target, MapDataPipe):
            MapDataPipe.register_datapipe_as_function(self.name, cls)
        return cls


_determinism = [False]


class _SwitchWhileActive:
    """Sets the switch ``_switch`` (a one-item list) to ``_value`` from construction to the end of
    the ``with`` block, then puts back what it was."""

    _switch: list
    _value: bool

    def __init__(self) -> None:
        self.prev = self._switch[0]
        self._switch[0] = self._value

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        self._switch[0] = self.prev


class guaranteed_datapipes_determinism(_SwitchWhileActive):
    """While active (from construction to the end of its block), constructing a pipe marked
    ``non_deterministic`` raises TypeError."""

    _switch, _value = _determinism, True


class non_deterministic:
    """Mark an IterDataPipe class as non-deterministic (always, or when a function of its
    arguments says so): it refuses to be built under ``guaranteed_datapipes_determinism``."""

    cls = None

    def __init__(self, arg) -> None:
        if isinstance(arg, type):
            if not issubclass(arg, IterDataPipe):
                raise TypeError(f"Only `IterDataPipe` can be decorated with `non_deterministic`, but {arg.__name__} "
                                "is found")
            self.cls = arg
        elif callable(arg):
            self.deterministic_fn = arg
        else:
            raise TypeError(f"{arg} can not be decorated by non_deterministic")

    def __call__(self, *args, **kwargs):
        if self.cls is not None:
            if _determinism[0]:
                raise TypeError(f"{self.cls.__name__} is non-deterministic, but you set "
                                "'guaranteed_datapipes_determinism'. You can turn off determinism for this DataPipe if "
                                "that is acceptable for your application")
            return self.cls(*args, **kwargs)
        if not (isinstance(args[0], type) and issubclass(args[0], IterDataPipe)):
            raise TypeError(f"Only `IterDataPipe` can be decorated, but {args[0].__name__} is found")
        self.cls = args[0]
        return self.deterministic_wrapper_fn

    def deterministic_wrapper_fn(self, *args, **kwargs):
        result = self.deterministic_fn(*args, **kwargs)
        if not isinstance(result, bool):
            raise TypeError("deterministic_fn of `non_deterministic` decorator is required to return a boolean value, "
                            f"but {type(result)} is found")
        if _determinism[0] and result:
            raise TypeError(f"{self.cls.__name__} is non-deterministic with the inputs, but you set "
                            "'guaranteed_datapipes_determinism'. You can turn off determinism for this DataPipe if "
                            "that is acceptable for your application")
        return self.cls(*args, **kwargs)


def argument_validation(f):
    """Check, at each call, the arguments annotated with a DataPipe class itself: they must be
    IterDataPipes, and their element type must fit. torch 2.13's DataPipes carry no element type
    (``IterDataPipe[int]`` is a plain generic alias, which is not checked), so a pipe passed for
    such an argument fails on its missing ``type`` (AttributeError), exactly as there."""
    signature = inspect.signature(f)
    hints = get_type_hints(f)

    @wraps(f)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        for name, value in bound.arguments.items():
            hint = hints.get(name)
            if not (isinstance(hint, type) and issubclass(hint, (IterDataPipe, MapDataPipe))):
                continue
            if not isinstance(value, IterDataPipe):
                raise TypeError(f"Expected argument '{name}' as a IterDataPipe, but found {type(value)}")
            if not value.type.issubtype(hint.type):
                raise TypeError(f"Expected type of argument '{name}' as a subtype of hint {hint.type}, but found "
                                f"{value.type}")
        return f(*args, **kwargs)
    return wrapper


_runtime_validation_enabled = [True]


class runtime_validation_disabled(_SwitchWhileActive):
    """Turn ``runtime_validation`` checks off while active."""

    _switch, _value = _runtime_validation_enabled, False


def runtime_validation(f):
    """Decorate a pipe's ``__iter__`` to check each item against the pipe's element type while
    validation is enabled. As in torch 2.13, DataPipes carry no element type, so with validation
    enabled the first item raises AttributeError; under ``runtime_validation_disabled`` the items
    pass through unchecked."""
    if f.__name__ != "__iter__":
        raise TypeError(f"Can not decorate function {f.__name__} with 'runtime_validation'")

    @wraps(f)
    def wrapper(self):
        if not _runtime_validation_enabled[0]:
            yield from f(self)
            return
        for item in f(self):
            if not self.type.issubtype_of_instance(item):
                raise RuntimeError(f"Expected an instance as subtype of {self.type}, but found {item}({type(item)})")
            yield item
    return wrapper
