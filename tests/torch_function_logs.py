"""Logging overrides for the torch-function tests: a Tensor subclass and a TorchFunctionMode that record
each function they see (its torch name and the class names in ``types``) into a list."""


def func_name(T, func):
    return T.overrides.resolve_name(func) or getattr(func, "__name__", repr(func))


def logging_subclass(T, log):
    class LoggingTensor(T.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            log.append((func_name(T, func), [t.__name__ for t in types]))
            return super().__torch_function__(func, types, args, kwargs)
    return LoggingTensor


def logging_mode(T, log, tag="mode"):
    class LoggingMode(T.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            log.append((tag, func_name(T, func), [t.__name__ for t in types]))
            return func(*args, **(kwargs or {}))
    return LoggingMode
