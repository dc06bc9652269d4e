"""``torch.testing._internal.logging_tensor``: a tensor subclass that logs every operator run on it.

``LoggingTensor`` wraps a tensor (``elem``) in a wrapper subclass; its ``__torch_dispatch__``
unwraps the arguments, runs the operator on the wrapped tensors, wraps the tensor results again and
logs the operator's name on the ``LoggingTensor`` logger. ``capture_logs`` collects those lines.
The wrapper is made with ``torch.Tensor._make_wrapper_subclass``; where that is not available the
constructor fails with its error.
"""
from __future__ import annotations

import contextlib
import logging

import hookgrad as torch
from hookgrad.utils._pytree import tree_map
from hookgrad.utils._python_dispatch import TorchDispatchMode

_LOGGER_NAME = "LoggingTensor"


def _unwrapped(value, cls):
    return value.elem if isinstance(value, cls) else value


class LoggingTensor(torch.Tensor):
    """A wrapper subclass logging the operators it goes through; ``requires_grad=`` makes the wrapper
    itself a leaf requiring grad (its wrapped tensor is then detached)."""

    context = contextlib.nullcontext

    @staticmethod
    def __new__(cls, elem, *args, **kwargs):
        wrapper = torch.Tensor._make_wrapper_subclass(
            cls, elem.size(), strides=elem.stride(), storage_offset=elem.storage_offset(), dtype=elem.dtype,
            layout=elem.layout, device=elem.device, requires_grad=kwargs.get("requires_grad", False))
        wrapper.elem = elem.detach() if wrapper.requires_grad else elem
        return wrapper

    def __repr__(self):
        return super().__repr__(tensor_contents=f"{self.elem}")

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}

        def rewrap(value):
            return cls(value) if isinstance(value, torch.Tensor) else value

        with cls.context():
            result = func(*tree_map(lambda v: _unwrapped(v, cls), args),
                          **tree_map(lambda v: _unwrapped(v, cls), kwargs))
            result = tree_map(rewrap, result)
        logging.getLogger(_LOGGER_NAME).info(f"{func.__module__}.{func.__name__}", args, kwargs, result)
        return result


class LoggingTensorReentrant(LoggingTensor):
    """Runs the operators on the wrapped tensors with dispatch to Python enabled again."""

    context = torch.overrides.enable_reentrant_dispatch


class LoggingTensorMode(TorchDispatchMode):
    """The same logging for every operator, as a dispatch mode."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        logging.getLogger(_LOGGER_NAME).info(f"{func.__module__}.{func.__name__}", args, kwargs, result)
        return result


class LoggingTensorHandler(logging.Handler):
    """Formats each logged operator call as ``$out = op($in, ...)``, tensors named by first appearance."""

    def __init__(self, log_list, use_shortid_for_all_tensors=False, with_type=False, tracebacks_list=None):
        super().__init__()
        self.log_list = log_list
        self.use_shortid_for_all_tensors = use_shortid_for_all_tensors
        self.with_type = with_type
        self.tracebacks_list = tracebacks_list
        self.memo = {}
        self.next_id = 0

    def _shortid(self, tensor) -> int:
        key = id(tensor)
        if key not in self.memo:
            self.memo[key] = self.next_id
            self.next_id += 1
        return self.memo[key]

    def _fmt(self, value, with_type=False) -> str:
        track = (LoggingTensor,) if not self.use_shortid_for_all_tensors else (torch.Tensor,)
        if isinstance(value, track):
            text = f"${self._shortid(value)}"
            if with_type:
                text += f": {str(value.dtype).rsplit('.', 1)[-1]}[{', '.join(map(str, value.shape))}]"
            return text
        if isinstance(value, (list, tuple)):
            return f"[{', '.join(self._fmt(v) for v in value)}]"
        return repr(value)

    def emit(self, record):
        name, args, kwargs, result = record.msg, *record.args
        fmt_args = ", ".join([self._fmt(a) for a in args] + [f"{k}={self._fmt(v)}" for k, v in kwargs.items()])
        results = result if isinstance(result, (tuple, list)) else (result,)
        fmt_results = ", ".join(self._fmt(r, self.with_type) for r in results)
        self.log_list.append(f"{fmt_results} = {name}({fmt_args})")
        if self.tracebacks_list is not None:
            self.tracebacks_list.append(getattr(record, "traceback", None))


def log_input(name: str, var) -> None:
    logging.getLogger(_LOGGER_NAME).info("input", (name,), {}, var)


@contextlib.contextmanager
def capture_logs(is_mode=False, python_tb=False, script_tb=False, cpp_tb=False):
    """Collect the formatted operator lines logged inside the block."""
    logger = logging.getLogger(_LOGGER_NAME)
    lines = []
    handler = LoggingTensorHandler(lines, with_type=True, use_shortid_for_all_tensors=is_mode)
    logger.addHandler(handler)
    previous_level, previous_propagate = logger.level, logger.propagate
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous_level)
        logger.propagate = previous_propagate


@contextlib.contextmanager
def capture_logs_with_logging_tensor_mode(python_tb=False, script_tb=False, cpp_tb=False):
    with LoggingTensorMode(), capture_logs(True) as logs:
        yield logs
