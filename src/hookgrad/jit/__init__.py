"""``torch.jit``: hookgrad has no TorchScript compiler, so, like ``torch.compile``, the entry points
hand back the function or module they were given and the code runs eagerly.

``ScriptModule`` and ``ScriptFunction`` exist so that ``isinstance(m, torch.jit.ScriptModule)``
checks (common in hook libraries) answer False for ordinary modules, as in torch.
"""
from __future__ import annotations

import contextlib

__all__ = ["script", "trace", "trace_module", "ignore", "unused", "export", "is_scripting", "is_tracing",
           "ScriptModule", "ScriptFunction", "RecursiveScriptModule", "TracerWarning", "Final", "Attribute",
           "annotate", "fork", "wait", "optimized_execution", "interface", "freeze", "save", "load"]

from typing import Final  # noqa: E402,F401 - torch.jit.Final is typing's Final


class ScriptModule:
    """The type of a compiled TorchScript module; hookgrad never builds one."""

    def __init__(self, *args, **kwargs):
        # torch's TypeError (its C++ class takes no Python arguments)
        raise TypeError("hookgrad has no TorchScript: torch.jit.script returns the module unchanged")


class RecursiveScriptModule(ScriptModule):
    pass


class ScriptFunction:
    """The type of a compiled TorchScript function; hookgrad never builds one (a TypeError, as torch's
    class without a Python constructor gives)."""

    def __init__(self, *args, **kwargs):
        raise TypeError("ScriptFunction: No constructor defined! (hookgrad has no TorchScript: torch.jit.script "
                        "returns the function unchanged)")


class TracerWarning(Warning):
    pass


def script(obj=None, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Returns ``obj`` unchanged: the code runs eagerly."""
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    """Returns ``func`` unchanged (no graph is recorded); the example inputs are not run."""
    return func


def trace_module(mod, inputs, *args, **kwargs):
    return mod


def _marker(fn=None, **kwargs):
    # usable as @ignore and as @ignore(drop=True)
    if fn is None:
        return lambda f: f
    return fn


ignore = unused = export = interface = _marker


def is_scripting() -> bool:
    return False


def is_tracing() -> bool:
    return False


def annotate(the_type, the_value):
    return the_value


def Attribute(value, type):  # noqa: A002,N802 - torch's signature
    return value


class _Forked:
    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value


def fork(func, *args, **kwargs):
    """Runs ``func`` now; ``wait`` on the result gives its value."""
    from ..futures import Future
    fut = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def wait(future):
    return future.wait()


@contextlib.contextmanager
def optimized_execution(should_optimize):
    yield


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    return mod


def save(m, f, _extra_files=None):
    raise RuntimeError("hookgrad has no TorchScript archives; save the state_dict with torch.save instead")


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    raise RuntimeError("hookgrad has no TorchScript archives; load a state_dict with torch.load instead")


# -- the rest of torch.jit's public names -------------------------------------------------------------
__all__ += ["script_if_tracing", "isinstance", "Error", "optimize_for_inference", "set_fusion_strategy",
            "onednn_fusion_enabled", "enable_onednn_fusion", "strict_fusion", "export_opnames", "CompilationUnit",
            "Future"]

import builtins as _builtins  # noqa: E402
import typing as _typing  # noqa: E402


class Error(Exception):
    """torch.jit.Error: the exception TorchScript code raises (never raised by eager code here)."""


def script_if_tracing(fn):
    """``fn`` itself: it would be scripted only while tracing, and nothing is ever traced here."""
    return fn


def isinstance(obj, target_type) -> bool:  # noqa: A001 - torch's name
    """``isinstance`` that also understands parametrized container types (``list[int]``,
    ``dict[str, Tensor]``, ``tuple[int, str]``, ``Optional[T]``) by checking the elements."""
    origin = _typing.get_origin(target_type)
    args = _typing.get_args(target_type)
    if origin is None:
        return True if target_type is _typing.Any else _builtins.isinstance(obj, target_type)
    if origin is _typing.Union or origin is getattr(__import__("types"), "UnionType", None):
        return any(isinstance(obj, arg) for arg in args)
    if origin in (list, _typing.List):
        return _builtins.isinstance(obj, list) and all(isinstance(v, args[0]) for v in obj) if args else \
            _builtins.isinstance(obj, list)
    if origin in (dict, _typing.Dict):
        if not _builtins.isinstance(obj, dict):
            return False
        return not args or all(isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items())
    if origin in (tuple, _typing.Tuple):
        if not _builtins.isinstance(obj, tuple):
            return False
        if not args:
            return True
        if len(args) == 2 and args[1] is Ellipsis:
            return all(isinstance(v, args[0]) for v in obj)
        return len(obj) == len(args) and all(isinstance(v, a) for v, a in zip(obj, args))
    return _builtins.isinstance(obj, origin)


def optimize_for_inference(mod, other_methods=None):
    """The module itself: there is no TorchScript graph to optimize, eager code runs as it is."""
    return mod


_fusion = {"strategy": [("STATIC", 2), ("DYNAMIC", 10)], "onednn": False}


def set_fusion_strategy(strategy):
    """Record the TorchScript fusion strategy and return the previous one (nothing is fused here)."""
    previous, _fusion["strategy"] = _fusion["strategy"], list(strategy)
    return previous


def onednn_fusion_enabled() -> bool:
    return _fusion["onednn"]


def enable_onednn_fusion(enabled: bool) -> None:
    _fusion["onednn"] = bool(enabled)


class strict_fusion:
    """TorchScript's check that a region fuses completely; eager code has no fusion to check."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def export_opnames(m):
    raise RuntimeError("torch.jit.export_opnames lists the operators of a TorchScript module; hookgrad has no "
                       "TorchScript (torch.jit.script returns the module unchanged)")


class CompilationUnit:
    """A unit of TorchScript source; hookgrad cannot compile TorchScript."""

    def __init__(self, lang=None, _frames_up=0):
        raise RuntimeError("hookgrad has no TorchScript compiler: torch.jit.CompilationUnit is not available")


_overloaded_fns: dict = {}


def _overload(func):
    """Mark a typed overload stub of a scripted function (torch_geometric's utilities use it as
    ``typing.overload``): recorded by qualified name and handed back, as torch does."""
    _overloaded_fns.setdefault(f"{func.__module__}.{func.__qualname__}", []).append(func)
    return func


def _overload_method(func):
    """The method form of ``_overload``."""
    return _overload(func)


def _get_fn_overloads(qual_name):
    return _overloaded_fns.get(qual_name)


def __getattr__(name):
    if name == "Future":  # torch.jit.Future is torch.futures.Future
        from ..futures import Future
        return Future
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
