"""``torch.compiler``: hookgrad runs every model eagerly (``torch.compile`` returns the model as it
is), so nothing is ever being compiled: ``is_compiling()`` is False, and the decorators that steer
the compiler (``disable``, ``allow_in_graph``, ``assume_constant_result``, ...) return the function
unchanged."""
from __future__ import annotations

from . import config

__all__ = ["compile", "config", "assume_constant_result", "reset", "allow_in_graph", "substitute_in_graph",
           "list_backends", "disable", "set_default_backend", "get_default_backend", "set_stance",
           "set_enable_guard_collectives", "cudagraph_mark_step_begin", "wrap_numpy", "is_compiling",
           "is_dynamo_compiling", "is_exporting", "nested_compile_region"]

_default_backend = "inductor"


def compile(*args, **kwargs):
    import hookgrad
    return hookgrad.compile(*args, **kwargs)


def reset() -> None:
    """No compiled code is cached: nothing to clear."""


def _unchanged(fn=None, **kwargs):
    """A compiler directive with no compiler: the function itself (or a decorator giving it back)."""
    if fn is None:
        return lambda f: f
    return fn


def allow_in_graph(fn):
    return fn


def assume_constant_result(fn):
    return fn


def wrap_numpy(fn):
    return fn


def disable(fn=None, recursive=True, *, reason=None):
    return _unchanged(fn)


def substitute_in_graph(original_fn, *, can_constant_fold_through=False, skip_signature_check=False):
    """The substitute would only be traced by a compiler; eagerly the original runs."""
    return lambda substitute: substitute


def nested_compile_region(fn=None, is_pure=False, **kwargs):
    return _unchanged(fn)


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """No compiler back end is available."""
    return []


def set_default_backend(backend) -> None:
    global _default_backend
    _default_backend = backend


def get_default_backend():
    return _default_backend


class set_stance:
    """Context manager and decorator that would change how compiled functions run; eager code is
    the same at every stance."""

    _STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile", "eager_then_compile",
                "aot_eager_then_compile")

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe=False, force_backend=None):
        if stance not in self._STANCES:
            raise RuntimeError(f"invalid torch.compile stance '{stance}'")
        self.stance = stance

    def __call__(self, fn):
        return fn

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def set_enable_guard_collectives(enabled: bool) -> bool:
    return False


def cudagraph_mark_step_begin() -> None:
    """No CUDA graphs here."""


def is_compiling() -> bool:
    return False


def is_dynamo_compiling() -> bool:
    return False


def is_exporting() -> bool:
    return False
