"""``torch.overrides``: the ``__torch_function__`` protocol's public helpers and function modes.

Every public hookgrad function, Tensor method, operator and property consults the protocol itself
(see ``hookgrad._C._torch_function``); what is here serves code that implements it (a tensor-like
library's own functions call ``has_torch_function``/``handle_torch_function``), code that
intercepts calls (``TorchFunctionMode``), and tools that list or name the overridable functions.
"""
from __future__ import annotations

import contextlib
import functools
import warnings

from ._C import _torch_function as _tf
from ._C._torch_function import (_get_function_stack_at, _is_torch_function_mode_enabled,  # noqa: F401
                                 _len_torch_function_stack, _pop_torch_function_stack,
                                 _push_on_torch_function_stack)
from ._tensor import Tensor

__all__ = ["get_ignored_functions", "get_overridable_functions", "get_testing_overrides", "handle_torch_function",
           "has_torch_function", "resolve_name", "is_tensor_like", "is_tensor_method_or_property",
           "wrap_torch_function", "enable_reentrant_dispatch", "redispatch_function",
           "has_torch_function_unary", "has_torch_function_variadic", "TorchFunctionMode"]


def _get_overloaded_args(relevant_args, get_type_fn=None) -> list:
    """The arguments whose ``__torch_function__`` to call, in calling order (subclasses before their
    bases, otherwise left to right), one per type; plain tensors count, Parameters do not. None
    while overrides are switched off."""
    get_type = type if get_type_fn is None else get_type_fn
    if not _tf._is_torch_function_enabled():
        return []
    found: list = []
    kinds: list = []
    for arg in relevant_args:
        kind = get_type(arg)
        handler = getattr(kind, "__torch_function__", None)
        if kind in kinds or handler is None or handler is _tf._disabled_torch_function_impl:
            continue
        _tf.insert_before_bases(found, kinds, arg, kind)
    return found


def has_torch_function(relevant_args) -> bool:
    """Whether a call with ``relevant_args`` must go to ``handle_torch_function``: a function mode is
    active, or some argument's class overrides (plain Tensors and Parameters do not)."""
    if _tf.take_skip():
        return False
    current = _tf.state()
    if current == _tf.ALL_DISABLED:
        return False
    if _tf._local.modes:
        return True
    if current != _tf.ENABLED:
        return False
    for arg in relevant_args:
        kind = type(arg)
        if kind is not Tensor and _tf._overloads(kind, Tensor, False):
            return True
    return False


def has_torch_function_unary(arg) -> bool:
    return has_torch_function((arg,))


def has_torch_function_variadic(*args) -> bool:
    return has_torch_function(args)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Call ``public_api``'s override: the current function mode's ``__torch_function__`` first, then
    those of the overloaded ``relevant_args``' classes, until one returns something other than
    ``NotImplemented``; TypeError when all do."""
    overloaded = _get_overloaded_args(relevant_args)
    types = tuple(map(type, overloaded))
    if _is_torch_function_mode_enabled():
        with _pop_mode_temporarily() as mode:
            result = mode.__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    for arg in overloaded:
        method = arg.__torch_function__
        if getattr(method, "__self__", None) is arg:
            warnings.warn("Defining your `__torch_function__ as a plain method is deprecated and will be an error "
                          "in future, please define it as a classmethod.", DeprecationWarning, stacklevel=2)
        result = method(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    message = (f"no implementation found for '{public_api.__module__}.{public_api.__name__}' on types that "
               f"implement __torch_function__: {[type(arg) for arg in overloaded]}")
    if _is_torch_function_mode_enabled():
        message += f" nor in mode {_get_current_function_mode()}"
    raise TypeError(message)


def redispatch_function(func, types, args, kwargs):
    """Call ``func`` without consulting the overrides for this one call (the calls it makes consult
    them as usual)."""
    return _tf._skip_one_hop_torch_function(func, types, args, kwargs)


def is_tensor_like(inp) -> bool:
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


def _tensor_methods() -> set:
    return set(_tensor_entries())


def is_tensor_method_or_property(func) -> bool:
    """Whether ``func`` is a Tensor method or a property getter (``Tensor.shape.__get__``)."""
    try:
        if func in _tensor_methods():
            return True
    except TypeError:
        return False
    return getattr(func, "__name__", None) == "__get__"


def wrap_torch_function(dispatcher):
    """Decorator: the decorated function consults the overrides of the arguments ``dispatcher`` names
    (``dispatcher`` takes the same arguments and returns a sequence of them)."""
    def decorator(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return decorator


# ---- the lists of overridable functions and their names -------------------------------------------------
def _namespaces() -> list:
    """``(torch's name, module)`` of each namespace whose functions consult overrides."""
    import hookgrad
    _tf.install_tensor_entry_points()  # listing them: Tensor's entry points are the ones to list
    import hookgrad.nn.functional
    import hookgrad.nn.init
    return [("torch", hookgrad), ("torch.functional", None), ("torch.nn.functional", hookgrad.nn.functional),
            ("torch.linalg", hookgrad.linalg), ("torch.fft", hookgrad.fft), ("torch.special", hookgrad.special),
            ("torch.nn.init", hookgrad.nn.init)]


def _namespace_entries() -> dict:
    """``{namespace's torch name: {name: function}}`` for the functions that consult overrides."""
    from ._C._torch_function_tables import TORCH_PYTHON_LEVEL
    import hookgrad
    entries: dict = {}
    for prefix, module in _namespaces():
        if module is None:  # torch.functional: torch's functions written in Python
            entries[prefix] = {name: getattr(hookgrad, name) for name in sorted(TORCH_PYTHON_LEVEL)
                               if _tf.has_dispatch(getattr(hookgrad, name, None))}
            continue
        names = getattr(module, "__all__", None) or dir(module)
        if module is hookgrad:
            names = [n for n in dir(module) if not n.startswith("_")]
        entries[prefix] = {name: getattr(module, name) for name in names
                           if _tf.has_dispatch(getattr(module, name, None))}
    return entries


def _tensor_entries() -> dict:
    """``{function or property accessor: its name under torch.Tensor}``."""
    _tf.install_tensor_entry_points()
    entries: dict = {}
    for name, value in vars(Tensor).items():
        if isinstance(value, property):
            if name in _DISPATCHING_PROPERTIES():
                entries[value.__get__] = f"{name}.__get__"
                if value.fset is not None:
                    entries[value.__set__] = f"{name}.__set__"
        elif _tf.has_dispatch(value):
            entries[value] = name
    return entries


@functools.lru_cache(maxsize=None)
def _DISPATCHING_PROPERTIES() -> frozenset:
    return frozenset(name for name, value in vars(Tensor).items()
                     if isinstance(value, property) and value.__get__ in _tf.SELF_LEVEL)


def get_overridable_functions() -> dict:
    """``{namespace: [functions]}``: every function that consults ``__torch_function__``, by namespace
    (``torch``, ``torch.nn.functional``, ``torch.Tensor`` (methods and property accessors), ...)."""
    import hookgrad
    result: dict = {}
    modules = dict(_namespaces())
    import hookgrad.functional
    for prefix, functions in _namespace_entries().items():
        key = modules[prefix] if modules[prefix] is not None else hookgrad.functional
        result.setdefault(key, []).extend(functions.values())
    # (torch leaves the underscore attributes' accessors out of this list, though it hands them over)
    result[hookgrad.Tensor] = [func for func, name in _tensor_entries().items()
                               if not (name.startswith("_") and not name.startswith("__") and "." in name)]
    return result


def get_ignored_functions() -> set:
    """Public functions that do not consult ``__torch_function__`` (torch's list, as far as hookgrad has them)."""
    import hookgrad
    from ._C._torch_function_tables import FUNCTIONAL_NEVER, TORCH_NEVER
    ignored = {getattr(hookgrad, name) for name in TORCH_NEVER if hasattr(hookgrad, name)}
    ignored |= {getattr(hookgrad.nn.functional, name) for name in FUNCTIONAL_NEVER
                if hasattr(hookgrad.nn.functional, name)}
    ignored |= {Tensor.as_subclass, Tensor._make_subclass, Tensor.__torch_function__, Tensor.__hash__,
                Tensor.__iter__, Tensor.__init_subclass__}
    return ignored


def get_testing_overrides() -> dict:
    """``{function: a dummy of it}`` for every overridable function (each dummy returns -1), to test an
    override of each."""
    def dummy(*args, **kwargs):
        return -1
    return {func: dummy for functions in get_overridable_functions().values() for func in functions}


_names_by_function: dict = {}


def resolve_name(f):
    """torch's name of a function handed to ``__torch_function__`` (``torch.add``, ``torch.Tensor.add``,
    ``torch.Tensor.shape.__get__``, ``torch.nn.functional.relu``, an operator's ``aten.add.Tensor``),
    or None for a function that is not one of torch's."""
    from .ops import OpOverload, OpOverloadPacket
    if isinstance(f, (OpOverload, OpOverloadPacket)):
        return str(f)
    if not _names_by_function:
        # later namespaces win for a function shared by several, as in torch (torch.conv2d is
        # torch.nn.functional.conv2d)
        for prefix, functions in _namespace_entries().items():
            for name, func in functions.items():
                _names_by_function[func] = f"{prefix}.{name}"
        for func, name in _tensor_entries().items():
            _names_by_function[func] = f"torch.Tensor.{name}"
    try:
        return _names_by_function.get(f)
    except TypeError:  # unhashable
        return None


# ---- function modes -----------------------------------------------------------------------------------
class TorchFunctionMode:
    """Overrides every overridable function inside ``with mode:`` (factory functions too, which take no
    tensor). Its ``__torch_function__(func, types, args, kwargs)`` runs with the mode taken off the
    stack, so the calls it makes go to the next mode (or to the functions themselves). Modes nest."""

    inner: "TorchFunctionMode"

    def __init__(self) -> None:
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _pop_mode()
        _tf.release_tensor_entry_points()

    @classmethod
    def push(cls, *args, **kwargs):
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just `with Mode()`",
                      stacklevel=2)
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that calls each function as it is (a base for modes that change only some)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        return func(*args, **kwargs)


def _get_current_function_mode():
    depth = _len_torch_function_stack()
    return _get_function_stack_at(depth - 1) if depth > 0 else None


def _get_current_function_mode_stack() -> list:
    return [_get_function_stack_at(i) for i in range(_len_torch_function_stack())]


def _push_mode(mode) -> None:
    _push_on_torch_function_stack(mode)


def _pop_mode():
    return _pop_torch_function_stack()


@contextlib.contextmanager
def _pop_mode_temporarily():
    old = _pop_mode()
    try:
        yield old
    finally:
        _push_mode(old)


@contextlib.contextmanager
def _enable_torch_function():
    with _tf._EnableTorchFunction():
        yield


@contextlib.contextmanager
def enable_reentrant_dispatch():
    # the dispatch-mode state that torch restores here is not kept per call in hookgrad
    yield
