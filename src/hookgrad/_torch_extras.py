"""torch.* names that are process settings, type markers and small eager utilities: the float32
matmul precision, denormal flushing, inter-op threads, the build flags (``has_lapack`` ...),
``get_device_module``, ``layout``/``memory_format``, the ``sym_*`` helpers and ``SymInt``/``SymFloat``/
``SymBool``, ``Stream``/``Event`` on the CPU, ``fork``/``wait`` and torch's eager higher-order control
flow (``cond``, ``while_loop``).
"""
from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from ._memory_format import STRIDED, layout

__all__ = ["get_float32_matmul_precision", "set_float32_matmul_precision", "set_flush_denormal", "init_num_threads",
           "set_num_interop_threads", "get_num_interop_threads", "has_lapack", "has_mkl", "has_openmp",
           "has_spectral", "compiled_with_cxx11_abi", "get_device_module", "set_anomaly_enabled", "layout",
           "memory_format", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn",
           "contiguous_format", "preserve_format", "channels_last", "channels_last_3d",
           "legacy_contiguous_format", "sym_int", "sym_float", "sym_max", "sym_min", "sym_not", "sym_ite",
           "sym_sqrt", "sym_sum", "SymInt", "SymFloat", "SymBool", "Stream", "Event", "fork", "wait", "cond",
           "while_loop", "sym_constrain_range", "sym_constrain_range_for_size", "sym_fresh_size",
           "OutOfMemoryError", "AcceleratorError", "DisableTorchFunction", "DisableTorchFunctionSubclass",
           "_assert_async", "_assert"]

# ---- settings -----------------------------------------------------------------------------------
_PRECISIONS = ("highest", "high", "medium")
_settings = {"matmul_precision": "highest", "interop_threads": None}


def get_float32_matmul_precision() -> str:
    return _settings["matmul_precision"]


def set_float32_matmul_precision(precision) -> None:
    """Recorded for code that reads it back: NumPy's float32 products are always full precision
    ("highest"); "high"/"medium" would only allow a faster, less precise kernel."""
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _settings["matmul_precision"] = precision


def set_flush_denormal(mode) -> bool:
    """Whether denormal flushing could be set: NumPy gives no control of the CPU's flush-to-zero
    mode, so hookgrad answers False (torch's answer on a CPU without the feature) and changes nothing."""
    if not isinstance(mode, bool):
        raise TypeError(f"set_flush_denormal(): argument 'mode' (position 1) must be bool, not {type(mode).__name__}")
    return False


def init_num_threads() -> None:
    """torch sets up its intra-op thread pool here; hookgrad's only threads are BLAS's, set up by NumPy."""
    return None


def set_num_interop_threads(num) -> None:
    """The inter-op thread count, settable once (as in torch). hookgrad runs one op after another;
    the value is recorded and read back by ``get_num_interop_threads``."""
    if isinstance(num, bool) or not isinstance(num, int):
        raise RuntimeError(f"set_num_interop_threads expects an int, but got {type(num).__name__}")
    if num <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    if _settings["interop_threads"] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                           "set_num_interop_threads called")
    _settings["interop_threads"] = num


def get_num_interop_threads() -> int:
    """One unless ``set_num_interop_threads`` recorded another count."""
    value = _settings["interop_threads"]
    return 1 if value is None else value


def set_anomaly_enabled(enabled, check_nan=True) -> None:
    """Anomaly detection on or off for the rest of the program (``detect_anomaly`` without a scope)."""
    from .autograd.graph import _anomaly_state
    _anomaly_state.enabled = builtins.bool(enabled)
    _anomaly_state.check_nan = builtins.bool(check_nan)


# what this library is built on: LAPACK through SciPy; FFTs, MKL and OpenMP are not used
has_lapack = True
has_spectral = False
has_mkl = False
has_openmp = False


def compiled_with_cxx11_abi() -> bool:
    """hookgrad has no C++ part; extensions built against torch's C++ ABI cannot load into it either way."""
    return True


_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia",
                 "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")


def get_device_module(device=None):
    """The ``hookgrad.<device type>`` module: ``hookgrad.cpu`` (the only device) when none is named."""
    import importlib
    if device is None:
        kind = "cpu"
    else:
        kind = getattr(device, "type", None) or str(device).split(":", 1)[0]
        if kind not in _DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device string: "
                               f"{device}")
    if kind in ("cpu", "cuda"):
        return importlib.import_module(f"hookgrad.{kind}")
    raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as 'torch.{kind}'.")


# ---- layouts and memory formats -------------------------------------------------------------------
class memory_format(str):
    """A memory format (what ``clone``/``contiguous`` are asked to produce)."""

    def __repr__(self):
        return str.__str__(self)


strided = STRIDED   # the very object every Tensor.layout is
# the other layouts exist as names (code compares a tensor's layout with them); no hookgrad tensor has them
sparse_coo = layout("torch.sparse_coo")
sparse_csr = layout("torch.sparse_csr")
sparse_csc = layout("torch.sparse_csc")
sparse_bsr = layout("torch.sparse_bsr")
sparse_bsc = layout("torch.sparse_bsc")
_mkldnn = layout("torch._mkldnn")
contiguous_format = memory_format("torch.contiguous_format")
legacy_contiguous_format = contiguous_format  # torch prints it as contiguous_format too
# four distinct formats, as in torch; what each lays out is in _memory_format
preserve_format = memory_format("torch.preserve_format")
channels_last = memory_format("torch.channels_last")
channels_last_3d = memory_format("torch.channels_last_3d")


# ---- symbolic-shape helpers on concrete numbers ------------------------------------------------------
class _ConcreteSym:
    """A number standing where torch's tracing would put a symbol. hookgrad never traces, so these
    only appear when a program makes one; they behave as the number they hold."""

    __slots__ = ("node",)
    _kind = None

    def __init__(self, node):
        self.node = self._kind(node)

    def __repr__(self):
        return repr(self.node)

    def __hash__(self):
        return hash(self.node)

    def __bool__(self):
        return builtins.bool(self.node)

    def __int__(self):
        return builtins.int(self.node)

    def __float__(self):
        return builtins.float(self.node)


def _delegate(name):
    def method(self, *args):
        args = [a.node if isinstance(a, _ConcreteSym) else a for a in args]
        return getattr(self.node, name)(*args)
    method.__name__ = name
    return method


for _name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__add__", "__radd__", "__sub__",
              "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__",
              "__mod__", "__rmod__", "__pow__", "__rpow__", "__neg__", "__abs__"):
    setattr(_ConcreteSym, _name, _delegate(_name))


class _ConcreteSymNumber(_ConcreteSym):
    """SymInt and SymFloat: ordered, so ``sym_max``/``sym_min`` apply."""

    __slots__ = ()

    def __sym_max__(self, other):
        return sym_max(self.node, other)

    def __sym_min__(self, other):
        return sym_min(self.node, other)


class SymInt(_ConcreteSymNumber):
    __slots__ = ()
    _kind = builtins.int

    def __index__(self):
        return self.node


class SymFloat(_ConcreteSymNumber):
    __slots__ = ()
    _kind = builtins.float


class SymBool(_ConcreteSym):
    __slots__ = ()
    _kind = builtins.bool

    def __sym_not__(self):
        return not self.node

    def __sym_ite__(self, then, otherwise):
        return then if self.node else otherwise


_NUMBERS = (np.integer, np.floating, builtins.int, builtins.float)
_FLOATS = (np.floating, builtins.float)


def sym_int(a):
    if isinstance(a, SymInt):
        return a
    if isinstance(a, SymFloat):
        return math.trunc(a.node)
    return builtins.int(a)


def sym_float(a):
    if isinstance(a, SymFloat):
        return a
    return builtins.float(a)


def _sym_extreme(pick, a, b):
    a = a.node if isinstance(a, (SymInt, SymFloat)) else a
    b = b.node if isinstance(b, (SymInt, SymFloat)) else b
    for x in (a, b):
        if not isinstance(x, _NUMBERS):
            raise AssertionError(f"expected {_NUMBERS}, got {type(x)}")
    if isinstance(a, _FLOATS) or isinstance(b, _FLOATS):
        return builtins.float(pick(a, b))
    return pick(a, b)


def sym_max(a, b):
    """max of two numbers; float when either is (unlike ``max``, which keeps the winner's type)."""
    return _sym_extreme(builtins.max, a, b)


def sym_min(a, b):
    return _sym_extreme(builtins.min, a, b)


def sym_not(a):
    if hasattr(a, "__sym_not__"):
        return a.__sym_not__()
    return not a


def sym_ite(b, t, f):
    if not isinstance(b, (SymBool, builtins.bool)):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    if isinstance(b, SymBool):
        return b.__sym_ite__(t, f)
    return t if b else f


def sym_sqrt(a):
    return math.sqrt(a.node if isinstance(a, _ConcreteSym) else a)


def sym_sum(*args):
    """The sum of numbers given as arguments or as one list."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1


def _constrain(size, low, high):
    value = size.node if isinstance(size, _ConcreteSym) else size
    if not low <= value <= high:
        raise RuntimeError(f"Invalid value range for {value} between [{low}, {high}].")


def sym_constrain_range(size, *, min=None, max=None):  # noqa: A002 - torch's keyword names
    """Check that a concrete size lies in [min, max] (torch records the range on a symbol instead)."""
    _constrain(size, _INT64_MIN if min is None else min, _INT64_MAX if max is None else max)


def sym_constrain_range_for_size(size, *, min=None, max=None):  # noqa: A002
    """``sym_constrain_range`` for a size: never below 0."""
    _constrain(size, 0 if min is None else builtins.max(min, 0), _INT64_MAX if max is None else max)


def sym_fresh_size(expr):
    return builtins.int(expr)


class OutOfMemoryError(RuntimeError):
    """Raised by torch when a device allocator runs out of memory (NumPy raises MemoryError instead)."""


class AcceleratorError(RuntimeError):
    """Raised by torch for errors of an accelerator device; hookgrad has none."""


from ._C._torch_function import ALL_DISABLED, SUBCLASSES_DISABLED, StateSwitch  # noqa: E402


class DisableTorchFunction(StateSwitch):
    """Context manager that turns ``__torch_function__`` overrides off for the block (what
    ``torch.overrides.has_torch_function`` and ``torch._C._is_torch_function_enabled`` answer there).
    hookgrad's ops consult no overrides, so they behave alike inside and outside."""

    target = ALL_DISABLED


class DisableTorchFunctionSubclass(StateSwitch):
    """``DisableTorchFunction`` for Tensor subclasses' overrides only."""

    target = SUBCLASSES_DISABLED


# ---- streams and events on the CPU --------------------------------------------------------------------
_NO_EVENTS = "cpu backend doesn't support events."


def _cpu_device(device):
    from ._device import device as _device
    dev = _device("cpu") if device is None else _device(device)
    if dev.type != "cpu":
        raise RuntimeError(f"PyTorch is not linked with support for {dev.type} devices")
    return dev


class Stream:
    """A queue of work on a device. On the CPU every op runs when called, so the stream is always
    idle (``query`` is True, ``synchronize`` returns at once); as in torch, the CPU has no events."""

    def __init__(self, device=None, *, priority=0):
        self.device = _cpu_device(device)
        self.stream_id = 0
        self.device_index = -1
        self.device_type = 0

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def wait_stream(self, stream) -> None:
        raise RuntimeError(_NO_EVENTS)

    def wait_event(self, event) -> None:
        return None

    def record_event(self, event=None):
        raise RuntimeError(_NO_EVENTS)

    def __eq__(self, other):
        return isinstance(other, Stream) and other.device == self.device and other.stream_id == self.stream_id

    def __hash__(self):
        return hash((self.device.type, self.stream_id))

    def __repr__(self):
        return f"torch.Stream device_type=cpu, device_index={self.device_index}, stream_id={self.stream_id}"


class Event:
    """A marker in a stream's work. The CPU backend records none (torch's RuntimeError); an
    unrecorded event is complete: ``query`` is True, ``wait``/``synchronize`` return at once."""

    def __init__(self, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        self.device = _cpu_device(device)
        self.enable_timing = enable_timing

    def record(self, stream=None) -> None:
        raise RuntimeError(_NO_EVENTS)

    def query(self) -> bool:
        return True

    def wait(self, stream=None) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end_event) -> float:
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        raise ValueError("Both events must be recorded before calculating elapsed time.")  # none can be

    def __repr__(self):
        return "torch.Event device_type=cpu, device_index=-1, event_flag=0, event_id=0"


# ---- fork / wait ---------------------------------------------------------------------------------------
def fork(func, *args, **kwargs):
    """Run ``func`` now (eager mode has no asynchronous interpreter) and return a completed Future;
    an exception raised by ``func`` propagates from ``fork``, as in torch's eager mode."""
    from .futures import Future
    result = func(*args, **kwargs)
    future = Future()
    future.set_result(result)
    return future


def wait(future):
    """The value of a Future from ``fork``."""
    return future.wait()


# ---- eager higher-order control flow --------------------------------------------------------------------
def _tensor_leaves(tree):
    from ._tensor import Tensor
    if isinstance(tree, Tensor):
        return [tree]
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in _tensor_leaves(item)]
    if isinstance(tree, dict):
        return [leaf for item in tree.values() for leaf in _tensor_leaves(item)]
    return [None]  # a non-tensor leaf


def _predicate_value(pred):
    from ._tensor import Tensor
    if isinstance(pred, Tensor):
        return builtins.bool(pred.item())
    return builtins.bool(pred)


def _cond_function():
    """``torch.cond``'s autograd op: the branch runs without recording, and the backward replays it
    with recording on (torch's ``CondAutogradOp``)."""
    from . import autograd

    class CondAutogradOp(autograd.Function):
        @staticmethod
        def forward(ctx, branch, *operands):
            ctx.branch = branch
            ctx.save_for_backward(*operands)
            with autograd.grad_mode.no_grad():
                out = branch(*operands)
            ctx.single = not isinstance(out, (tuple, list))
            outs = (out,) if ctx.single else tuple(out)
            # a branch that hands back an operand itself: the op's output is a new tensor, as torch's
            outs = tuple(o.clone() if any(o is x for x in operands) else o for o in outs)
            return outs[0] if ctx.single else outs

        @staticmethod
        def backward(ctx, *grads):
            operands = [x.detach().requires_grad_(x.requires_grad) for x in ctx.saved_tensors]
            with autograd.grad_mode.enable_grad():
                out = ctx.branch(*operands)
            outs = (out,) if ctx.single else tuple(out)
            wanted = [x for x in operands if x.requires_grad]
            pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad and g is not None]
            found = autograd.grad([o for o, _ in pairs], wanted, [g for _, g in pairs],
                                  allow_unused=True) if pairs and wanted else [None] * len(wanted)
            found = iter(found)
            return (None,) + tuple(next(found) if x.requires_grad else None for x in operands)

    return CondAutogradOp


_COND = []


def cond(pred, true_fn, false_fn, operands=()):
    """Run ``true_fn(*operands)`` or ``false_fn(*operands)`` as ``pred`` says (torch's eager semantics:
    a Python bool picks the branch directly; a one-element tensor goes through one autograd op)."""
    from . import autograd
    from ._tensor import Tensor
    if isinstance(pred, (builtins.bool, builtins.int, builtins.float)):
        return true_fn(*operands) if pred else false_fn(*operands)
    if not isinstance(pred, (builtins.bool, Tensor, SymBool)):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if isinstance(pred, Tensor) and pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)) or any(leaf is None for leaf in _tensor_leaves(list(operands))):
        raise RuntimeError("Expect operands to be a tuple of possibly nested dict/list/tuple that only consists of "
                           f"tensor leaves, but got {operands}.")
    branch = true_fn if _predicate_value(pred) else false_fn
    if not autograd.is_grad_enabled() or not any(x.requires_grad for x in _tensor_leaves(list(operands))):
        with autograd.grad_mode.no_grad():
            return branch(*operands)
    if not _COND:
        _COND.append(_cond_function())
    return _COND[0].apply(branch, *operands)


def while_loop(cond_fn, body_fn, carried_inputs):
    """``while cond_fn(*carry): carry = body_fn(*carry)``, eagerly; the body must keep each carried
    tensor's shape and dtype (torch's rule). Gradients flow through the iterations as recorded."""
    from ._tensor import Tensor
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"carried_inputs must be a tuple or list, got {type(carried_inputs)}")
    carry = tuple(carried_inputs)
    while True:
        verdict = cond_fn(*carry)
        if isinstance(verdict, Tensor):
            if verdict.dtype.name != "bool" or verdict.numel() != 1:
                raise RuntimeError("torch.while_loop: cond_fn must return a boolean scalar tensor or a bool, got "
                                   f"{verdict}")
            verdict = builtins.bool(verdict.item())
        elif not isinstance(verdict, builtins.bool):
            raise RuntimeError("torch.while_loop: unsupported cond_fn return type")
        if not verdict:
            return carry
        out = body_fn(*carry)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(out) != len(carry):
            raise RuntimeError(f"body_fn should return the same number of elements as carried_inputs: got "
                               f"{len(out)}, expected {len(carry)}")
        for i, (new, old) in enumerate(zip(out, carry)):
            if isinstance(old, Tensor) and (not isinstance(new, Tensor) or new.shape != old.shape
                                            or new.dtype != old.dtype):
                raise RuntimeError(f"Expected body_fn_output and carried_inputs to have same metadata but found: "
                                   f"pair[{i}] differ ({getattr(new, 'shape', new)}, {getattr(new, 'dtype', None)}"
                                   f" vs {old.shape}, {old.dtype})")
        carry = out


del _name


# ---- assertions -----------------------------------------------------------------------------------
def _assert_async(input, assert_msg=None):
    """torch._assert_async: a RuntimeError unless the one-element ``input`` is nonzero (on a CPU
    tensor torch checks at once, as here)."""
    from ._tensor import Tensor
    if not isinstance(input, Tensor):
        raise TypeError(f"_assert_async(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with " + ("no values" if input.numel() == 0 else
                                                              "more than one value") + " is ambiguous")
    if not bool(input._ndarray.reshape(-1)[0]):
        raise RuntimeError(assert_msg if assert_msg is not None else
                           "Expected Tensor with single nonzero value, but got zero")


def _assert(condition, message):
    """torch._assert: Python's assert, as a function (symbolic tracing records a call to it)."""
    assert condition, message
