"""``torch.utils._contextlib``: make a context-manager class usable as a decorator too, with
generator functions kept lazy (the context is entered around each resumption, as torch does for
``no_grad`` and friends)."""
from __future__ import annotations

import functools
import inspect
import sys

__all__ = ["context_decorator", "_DecoratorContextManager", "_NoParamDecoratorContextManager"]


def _wrap_generator(ctx_factory, func):
    @functools.wraps(func)
    def generator_context(*args, **kwargs):
        gen = func(*args, **kwargs)
        try:
            with ctx_factory():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with ctx_factory():
                        gen.close()
                    raise
                except BaseException:
                    with ctx_factory():
                        response = gen.throw(*sys.exc_info())
                else:
                    with ctx_factory():
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value

    return generator_context


def context_decorator(ctx, func):
    """Decorate ``func`` so that each call (each resumption, for a generator) runs inside ``ctx()``.
    ``ctx`` is a zero-argument factory of context managers."""
    if inspect.isclass(func):
        raise RuntimeError("Cannot decorate classes; it is ambiguous whether or not only the constructor or "
                           "all methods should have the context manager applied; additionally, decorating a "
                           "class at definition-site will prevent use of the identifier as a conventional type.")
    if not callable(ctx):
        raise RuntimeError(f"context_decorator expects a callable returning a context manager, got {ctx!r}")
    if inspect.isgeneratorfunction(func):
        return _wrap_generator(ctx, func)

    @functools.wraps(func)
    def decorate_context(*args, **kwargs):
        with ctx():
            return func(*args, **kwargs)

    return decorate_context


class _DecoratorContextManager:
    """Base for context managers that may also decorate functions (``@ctx()``)."""

    def __call__(self, orig_func):
        if inspect.isclass(orig_func):
            raise RuntimeError("Cannot decorate classes")
        return context_decorator(self.clone, orig_func)

    def __enter__(self):
        raise NotImplementedError

    def __exit__(self, exc_type, exc_value, traceback):
        raise NotImplementedError

    def clone(self):
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also allows the bare form ``@ctx`` (without parentheses)."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)
