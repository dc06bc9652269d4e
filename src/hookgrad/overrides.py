"""``torch.overrides``: the ``__torch_function__`` protocol helpers that tensor-like libraries import.

``handle_torch_function`` implements the protocol (it calls the ``__torch_function__`` of the
argument types that define one, subclasses first, until one does not return ``NotImplemented``);
hookgrad's own functions do not dispatch on it, so a tensor-like object reaches them only through
code that calls these helpers itself. Function modes (``TorchFunctionMode``) would need every
hookgrad function to consult them: entering one raises.
"""
from __future__ import annotations

import contextlib

from ._tensor import Tensor

__all__ = ["has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
           "handle_torch_function", "is_tensor_like", "is_tensor_method_or_property", "TorchFunctionMode",
           "get_ignored_functions", "get_overridable_functions", "get_testing_overrides", "wrap_torch_function",
           "enable_reentrant_dispatch"]

_TENSOR_HANDLER = getattr(Tensor, "__torch_function__", None)


def _overloaded(args) -> list:
    """Argument types with their own ``__torch_function__`` (subclasses before their bases); none
    inside ``DisableTorchFunction``/``DisableTorchFunctionSubclass``."""
    from ._C._torch_function import _disabled_torch_function_impl, _is_torch_function_enabled
    if not _is_torch_function_enabled():
        return []
    types: list = []
    for arg in args:
        kind = type(arg)
        handler = getattr(kind, "__torch_function__", None)
        # plain tensors and Parameters (no handler of their own) do not overload anything, nor does a
        # subclass that opted out with torch._C._disabled_torch_function_impl
        if handler is None or handler == _TENSOR_HANDLER or handler is _disabled_torch_function_impl or kind in types:
            continue
        position = len(types)
        for i, seen in enumerate(types):
            if issubclass(kind, seen):
                position = i
                break
        types.insert(position, kind)
    return types


def has_torch_function(relevant_args) -> bool:
    return bool(_overloaded(relevant_args))


def has_torch_function_unary(arg) -> bool:
    return has_torch_function((arg,))


def has_torch_function_variadic(*args) -> bool:
    return has_torch_function(args)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call ``__torch_function__`` of the overloaded argument types for ``public_api``."""
    types = _overloaded(relevant_args)
    for kind in types:
        result = kind.__torch_function__(public_api, tuple(types), args, kwargs)
        if result is not NotImplemented:
            return result
    names = ", ".join(repr(t) for t in types)
    raise TypeError(f"no implementation found for '{getattr(public_api, '__module__', '')}."
                    f"{getattr(public_api, '__name__', public_api)}' on types that implement __torch_function__: "
                    f"[{names}]")


def is_tensor_like(inp) -> bool:
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


def is_tensor_method_or_property(func) -> bool:
    return getattr(Tensor, getattr(func, "__name__", ""), None) is func


def wrap_torch_function(dispatcher):
    """Decorator: dispatch ``func`` through ``__torch_function__`` of the arguments ``dispatcher`` names."""
    def decorator(func):
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)
        wrapped.__name__ = func.__name__
        wrapped.__doc__ = func.__doc__
        return wrapped
    return decorator


def get_ignored_functions() -> set:
    return set()


def get_overridable_functions() -> dict:
    return {}


def get_testing_overrides() -> dict:
    return {}


class TorchFunctionMode:
    """Subclassable for imports and isinstance checks; hookgrad's functions cannot be intercepted."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        raise NotImplementedError("hookgrad has no torch function modes: its functions do not dispatch on "
                                  "__torch_function__")

    def __exit__(self, *exc):
        return False

    @classmethod
    def push(cls, *args, **kwargs):
        return cls(*args, **kwargs).__enter__()


@contextlib.contextmanager
def enable_reentrant_dispatch():
    yield


def _get_current_function_mode():
    return None


def _get_current_function_mode_stack() -> list:
    return []


__all__ += ["resolve_name"]

_names_by_function: dict = {}


def _public_functions():
    """``{function: "torch.<namespace>.<name>"}`` over the namespaces torch's overrides cover."""
    if not _names_by_function:
        import hookgrad
        # later namespaces win for a function shared by several: torch names torch.conv2d (which is
        # torch.nn.functional.conv2d) by its nn.functional name
        namespaces = [("torch", hookgrad), ("torch.special", hookgrad.special), ("torch.linalg", hookgrad.linalg),
                      ("torch.nn.functional", hookgrad.nn.functional)]
        for prefix, module in namespaces:
            for name in dir(module):
                if name.startswith("_"):
                    continue
                value = getattr(module, name, None)
                if callable(value) and not isinstance(value, type):
                    _names_by_function[value] = f"{prefix}.{name}"
        for name, value in vars(hookgrad.Tensor).items():
            if not name.startswith("_") or name in ("__add__", "__mul__", "__getitem__"):
                target = value.fget if isinstance(value, property) else value
                if callable(target):
                    _names_by_function[target] = f"torch.Tensor.{name}"
    return _names_by_function


def resolve_name(f):
    """A readable name for a function handed to ``__torch_function__`` (``torch.add``,
    ``torch.Tensor.add``, ``torch.nn.functional.relu``, an operator's ``aten.add.Tensor``), or
    None for a function that is not one of torch's."""
    from .ops import OpOverload, OpOverloadPacket
    if isinstance(f, (OpOverload, OpOverloadPacket)):
        return str(f)
    try:
        return _public_functions().get(f)
    except TypeError:  # unhashable
        return None
