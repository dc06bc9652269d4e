"""``torch.utils._contextlib``: make a context-manager class usable as a decorator too, with
generator functions kept lazy (the context is entered around each resumption, as torch does for
``no_grad`` and friends)."""
from __future__ import annotations

import functools
import inspect
import sys
import warnings

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
    """Decorate ``func`` so that each call (each resumption, for a generator) runs inside a context:
    ``ctx`` is a factory of context managers, or one context manager that can be entered again
    and again."""
    if callable(ctx) and hasattr(ctx, "__enter__"):
        raise AssertionError(f"Passed in {ctx} is both callable and also a valid context manager (has __enter__), "
                             "making it ambiguous which interface to use.  If you intended to pass a context "
                             "manager factory, rewrite your call as context_decorator(lambda: ctx()); if you "
                             "intended to pass a context manager directly, rewrite your call as "
                             "context_decorator(lambda: ctx)")
    factory = ctx if callable(ctx) else (lambda: ctx)
    if inspect.isclass(func):
        raise RuntimeError("Cannot decorate classes; it is ambiguous whether or not only the constructor or all "
                           "methods should have the context manager applied; additionally, decorating a class at "
                           "definition-site will prevent use of the identifier as a conventional type.  To "
                           "specify which methods to decorate, decorate each of them individually.")
    ctx = factory
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
        func = orig_func
        if inspect.isclass(orig_func):
            warnings.warn("Decorating classes is deprecated and will be disabled in future versions. You should only "
                          "decorate functions or methods. To preserve the current behavior of class decoration, you "
                          "can directly decorate the `__init__` method and nothing else.", FutureWarning, stacklevel=2)

            def func(*args, **kwargs):
                return orig_func(*args, **kwargs)
        return context_decorator(self.clone, func)

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
