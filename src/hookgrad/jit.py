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
        raise RuntimeError("hookgrad has no TorchScript: torch.jit.script returns the module unchanged")


class RecursiveScriptModule(ScriptModule):
    pass


class ScriptFunction:
    """The type of a compiled TorchScript function; hookgrad never builds one."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("hookgrad has no TorchScript: torch.jit.script returns the function unchanged")


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
    from .futures import Future
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
