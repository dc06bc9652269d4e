"""``torch.autograd.profiler``: a CPU profiler of hookgrad's ops, autograd nodes and
``record_function`` ranges, with torch's events, averages and summary table.

While a profile records, hookgrad's op entry points are timed: the ``hookgrad.X`` functions and
``Tensor`` methods every op declaration makes (and the operators), the ``nn.functional``
functions, and the ``apply`` of autograd nodes (what the engine runs in a backward pass). Op events
are named as torch names them (``aten::<op>``; a backward node as
``autograd::engine::evaluate_function: <node>`` around ``<node>``). Calls hookgrad makes to its own
functions without going through those entry points are inside their caller's time, not events of
their own; nothing is timed while no profile records. There is no Kineto, accelerator or memory
profiling: device times and memory figures are zero.
"""
from __future__ import annotations

import enum
import functools
import inspect
import threading
import time

from .grad_mode import run_inside
from .profiler_util import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg", "ProfilerActivity",
           "ProfilerState", "ProfilerConfig", "DeviceType", "kineto_available", "ProfilerEvent"]


class _IntLike(enum.Enum):
    """An enum that converts to int, like torch's C++ enums."""

    def __int__(self):
        return self.value

    def __index__(self):
        return self.value


class ProfilerActivity(_IntLike):
    """The kinds of activity a profile can record (members in torch's order)."""

    CPU = 0
    XPU = 1
    MTIA = 4
    CUDA = 2
    HPU = 3
    PrivateUse1 = 5


class ProfilerState(_IntLike):
    """The profiler's state as torch's C++ enum numbers it."""

    Disabled = 0
    CPU = 1
    CUDA = 2
    NVTX = 3
    ITT = 4
    PRIVATEUSE1 = 5
    KINETO = 6
    KINETO_GPU_FALLBACK = 7
    KINETO_PRIVATEUSE1_FALLBACK = 8
    KINETO_PRIVATEUSE1 = 9


class DeviceType(_IntLike):
    """torch's C++ device-type numbering (an event's ``device_type``)."""

    CPU = 0
    CUDA = 1
    MKLDNN = 2
    OPENGL = 3
    OPENCL = 4
    IDEEP = 5
    HIP = 6
    FPGA = 7
    MAIA = 8
    XLA = 9
    Vulkan = 10
    Metal = 11
    XPU = 12
    MPS = 13
    MTIA = 19
    Meta = 14
    HPU = 15
    VE = 16
    Lazy = 17
    IPU = 18
    PrivateUse1 = 20


class ProfilerConfig:
    """What a profile is asked to record (torch's ``ProfilerConfig``)."""

    def __init__(self, state, report_input_shapes, profile_memory, with_stack, with_flops, with_modules,
                 experimental_config=None, trace_id=""):
        self.state = state
        self.report_input_shapes = report_input_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        self.trace_id = trace_id


def kineto_available() -> bool:
    """False: hookgrad's profiler is its own, not Kineto."""
    return False


# ---- recording ---------------------------------------------------------------------------------
class _Recorder:
    """The events of one running profile, on the thread that started it."""

    def __init__(self, record_shapes: bool):
        self.record_shapes = record_shapes
        self.thread = threading.get_ident()
        self.events: list[FunctionEvent] = []
        self.stack: list[FunctionEvent] = []
        self.origin_ns = time.perf_counter_ns()

    def now_us(self) -> float:
        return (time.perf_counter_ns() - self.origin_ns) / 1000.0

    def begin(self, name, args=None, user=False):
        shapes = _input_shapes(args) if self.record_shapes and args is not None else []
        event = FunctionEvent(len(self.events), name, self.thread, self.now_us(), input_shapes=shapes,
                              is_user_annotation=user)
        if self.stack:
            parent = self.stack[-1]
            parent.append_cpu_child(event)
            event.set_cpu_parent(parent)
        self.events.append(event)
        self.stack.append(event)
        return event

    def end(self, event) -> None:
        event.end_us = self.now_us()
        # ranges close in order; a range left open by an exception is closed with its parent
        while self.stack:
            top = self.stack.pop()
            if top is event:
                break
            top.end_us = event.end_us


def _input_shapes(args) -> list:
    from .._tensor import Tensor
    return [list(a.shape) if isinstance(a, Tensor) else [] for a in args]


_active: list = []  # the _Recorders of the profiles recording now (nested profiles each record)


class _Fanout:
    """Begins and ends one range in every recorder of this thread."""

    __slots__ = ("recorders",)

    def __init__(self, recorders):
        self.recorders = recorders

    def begin(self, name, args=None, user=False):
        return [rec.begin(name, args, user) for rec in self.recorders]

    def end(self, events) -> None:
        for rec, event in zip(self.recorders, events):
            rec.end(event)


def _recorder():
    if not _active:
        return None
    thread = threading.get_ident()
    if len(_active) == 1:
        return _active[0] if _active[0].thread == thread else None
    recorders = [rec for rec in _active if rec.thread == thread]
    return _Fanout(recorders) if recorders else None


# ---- timing the entry points while a profile records ------------------------------------------
_OPERATOR_OPS = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub", "__rsub__": "rsub",
    "__isub__": "sub_", "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_", "__truediv__": "div",
    "__rtruediv__": "div", "__itruediv__": "div_", "__floordiv__": "floor_divide", "__rfloordiv__": "floor_divide",
    "__mod__": "remainder", "__rmod__": "remainder", "__pow__": "pow", "__rpow__": "pow", "__ipow__": "pow_",
    "__matmul__": "matmul", "__rmatmul__": "matmul", "__neg__": "neg", "__abs__": "abs", "__invert__": "bitwise_not",
    "__and__": "bitwise_and", "__or__": "bitwise_or", "__xor__": "bitwise_xor", "__eq__": "eq", "__ne__": "ne",
    "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge", "__setitem__": "index_put_",
}


def _getitem_name(args) -> str:
    key = args[1] if len(args) > 1 else None
    if isinstance(key, int):
        return "aten::select"
    if isinstance(key, slice):
        return "aten::slice"
    return "aten::index"


def _timed(fn, name):
    """``fn``, recording an event around each call from the profiling thread."""
    name_of = name if callable(name) else None

    @functools.wraps(fn)
    def timed(*args, **kwargs):
        rec = _recorder()
        if rec is None:
            return fn(*args, **kwargs)
        event = rec.begin(name_of(args) if name_of else name, args)
        try:
            return fn(*args, **kwargs)
        finally:
            rec.end(event)
    return timed


def _timed_node_apply(apply):
    @functools.wraps(apply)
    def timed(node, grads):
        rec = _recorder()
        if rec is None:
            return apply(node, grads)
        name = node.name()
        outer = rec.begin(f"autograd::engine::evaluate_function: {name}")
        inner = rec.begin(name)
        try:
            return apply(node, grads)
        finally:
            rec.end(inner)
            rec.end(outer)
    return timed


def _entry_points():
    """(owner, attribute, replacement) for every entry point to time."""
    import hookgrad
    from .. import _tensor
    from .._ops._declare import declared
    from ..nn import functional as F
    from . import graph
    Tensor = _tensor.Tensor
    found = {}
    for decl in declared():
        for name in decl.functions:
            if getattr(hookgrad, name, None) is decl.fn:
                found[(hookgrad, name)] = f"aten::{name}"
        for name in tuple(decl.methods) + tuple(decl.inplace):
            if inspect.isfunction(Tensor.__dict__.get(name)):
                found[(Tensor, name)] = f"aten::{name}"
    for name, aten in _OPERATOR_OPS.items():
        if inspect.isfunction(Tensor.__dict__.get(name)):
            found[(Tensor, name)] = f"aten::{aten}"
    if inspect.isfunction(Tensor.__dict__.get("__getitem__")):
        found[(Tensor, "__getitem__")] = _getitem_name
    for name in getattr(F, "__all__", dir(F)):
        value = getattr(F, name, None)
        if not name.startswith("_") and inspect.isfunction(value) and value.__module__.startswith(("hookgrad", "torch.")):
            found[(F, name)] = f"aten::{name}"
    patches = [(owner, attr, _timed(getattr(owner, attr), name)) for (owner, attr), name in found.items()]
    for cls in [graph.Node] + graph.node_classes():
        if inspect.isfunction(cls.__dict__.get("apply")):
            patches.append((cls, "apply", _timed_node_apply(cls.__dict__["apply"])))
    return patches


_patched: list = []


def _install() -> None:
    for owner, attr, replacement in _entry_points():
        original = owner.__dict__[attr] if isinstance(owner, type) else getattr(owner, attr)
        _patched.append((owner, attr, original))
        setattr(owner, attr, replacement)


def _uninstall() -> None:
    while _patched:
        owner, attr, original = _patched.pop()
        setattr(owner, attr, original)


def _start(record_shapes: bool) -> _Recorder:
    rec = _Recorder(record_shapes)
    if not _active:
        _install()
    _active.append(rec)
    return rec


def _stop(rec: _Recorder) -> EventList:
    if rec in _active:
        _active.remove(rec)
        if not _active:
            _uninstall()
    end = rec.now_us()
    for event in rec.stack:
        event.end_us = end
    rec.stack.clear()
    for event in rec.events:
        if event.name.startswith("ProfilerStep#"):
            event.name = "ProfilerStep*"  # torch's profiles name every step range so (one row in averages)
    return EventList(sorted(rec.events, key=lambda e: (e.start_us, e.id)))


# ---- the public API ---------------------------------------------------------------------------
class record_function:
    """A named range in the profile (a context manager or a decorator); nothing while no profile
    records."""

    def __init__(self, name: str, args=None):
        self.name = name
        self.args = args
        self._event = None
        self._recorder = None

    def __enter__(self):
        rec = _recorder()
        if rec is not None:
            self._recorder, self._event = rec, rec.begin(self.name, user=True)
        return self

    def __exit__(self, *exc):
        if self._event is not None:
            self._recorder.end(self._event)
            self._recorder = self._event = None
        return False

    def __call__(self, fn):
        return run_inside(fn, functools.partial(record_function, self.name, self.args))


class profile:
    """``torch.autograd.profiler.profile``: records while its block runs; then ``key_averages()``,
    ``table()``, ``events()``/``function_events`` and ``export_chrome_trace()`` report it."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.use_device = use_device
        self.acc_events = acc_events
        self.entered = False
        self._function_events = None
        self._recorder = None
        if not use_cpu:
            raise AssertionError("Device-only events supported only with Kineto (use_kineto=True)")

    def config(self) -> ProfilerConfig:
        return ProfilerConfig(ProfilerState.CPU, self.record_shapes, self.profile_memory, self.with_stack,
                              self.with_flops, self.with_modules)

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self._start_trace()
        self.entered = True
        return self

    def _start_trace(self):
        self._recorder = _start(self.record_shapes)

    def _stop_trace(self):
        events = _stop(self._recorder)
        self._recorder = None
        if self.acc_events and self._function_events is not None:
            events = EventList(list(self._function_events) + list(events))
        self._function_events = events

    def __exit__(self, *exc):
        if not self.enabled:
            return False
        self._stop_trace()
        return False

    @property
    def function_events(self) -> EventList:
        """The recorded events (empty before a recording finished, as in torch)."""
        if self._function_events is None:
            self._function_events = EventList()
        return self._function_events


    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False):
        return self.function_events.table(sort_by=sort_by, row_limit=row_limit,
                                          max_src_column_width=max_src_column_width,
                                          max_name_column_width=max_name_column_width,
                                          max_shapes_column_width=max_shapes_column_width, header=header,
                                          top_level_events_only=top_level_events_only)

    def total_average(self):
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self.function_events.self_cpu_time_total

    def export_chrome_trace(self, path) -> None:
        self.function_events.export_chrome_trace(path)

    def __str__(self):
        if self._function_events is None:
            return "<unfinished torch.autograd.profile>"
        return str(self._function_events)

    __repr__ = __str__


# ---- the legacy profiler's raw events ----------------------------------------------------------------
class ProfilerEvent:
    """One raw event of the legacy profiler (``torch.autograd._disable_profiler_legacy()`` returns them,
    per thread): a ``mark`` (``__start_profile``, ``__stop_profile``), or the ``push`` that opens a
    range and the ``pop`` that closes it (same ``handle()``). Made by the profiler only, as torch's."""

    __slots__ = ("_kind", "_name", "_thread", "_start_us", "_handle", "_shapes", "_sequence_nr")

    def __init__(self, *args, **kwargs):
        raise TypeError("hookgrad.autograd.ProfilerEvent: No constructor defined!")

    @classmethod
    def _made(cls, kind, name, thread, start_us, handle, shapes=(), sequence_nr=-1):
        event = object.__new__(cls)
        event._kind, event._name, event._thread, event._start_us = kind, name, thread, start_us
        event._handle, event._shapes, event._sequence_nr = handle, [list(s) for s in shapes], sequence_nr
        return event

    def kind(self) -> str:
        return self._kind

    def name(self) -> str:
        return self._name

    def thread_id(self) -> int:
        return self._thread

    def fwd_thread_id(self) -> int:
        return 0

    def start_us(self) -> float:
        return self._start_us

    def cpu_elapsed_us(self, other: "ProfilerEvent") -> float:
        return other._start_us - self._start_us

    def cuda_elapsed_us(self, other: "ProfilerEvent") -> float:
        raise RuntimeError("Events were not recorded for CUDA")

    def handle(self) -> int:
        return self._handle

    def shapes(self) -> list:
        return [list(s) for s in self._shapes]

    def sequence_nr(self) -> int:
        return self._sequence_nr

    def device(self) -> int:
        return -1  # a CPU event

    def node_id(self) -> int:
        return -1

    def is_remote(self) -> bool:
        return False

    def is_async(self) -> bool:
        return False

    def has_cuda(self) -> bool:
        return False

    def cpu_memory_usage(self) -> int:
        return 0

    def cuda_memory_usage(self) -> int:
        return 0

    def scope(self) -> int:
        return 0

    def flops(self) -> int:
        return 0

    def correlation_id(self) -> int:
        return 0

    def stack(self) -> list:
        return []

    def __repr__(self):
        return f"<ProfilerEvent {self._kind} {self._name!r} handle={self._handle}>"


_legacy: list = []  # the recorder of the legacy profiler while it runs


def _enable_profiler_legacy(config) -> None:
    """Start the legacy profiler (torch.autograd._enable_profiler_legacy): ``config`` a ProfilerConfig."""
    if _legacy:
        raise RuntimeError("Profiler is already enabled on this thread")
    _legacy.append(_start(bool(getattr(config, "report_input_shapes", False))))


def _disable_profiler_legacy() -> list:
    """Stop the legacy profiler: its raw events, one list per thread (here: the one that recorded)."""
    if not _legacy:
        raise RuntimeError("Profiler is not enabled")
    rec = _legacy.pop()
    thread = 1  # torch numbers the threads it records from 1
    stop_us = rec.now_us()
    ranges = _stop(rec)
    # every range as a push at its start and a pop at its end, in time order (a pop before a push at
    # the same instant: an inner range closes before the next one opens)
    edges = []
    for handle, event in enumerate(sorted(ranges, key=lambda e: (e.start_us, e.id)), start=1):
        edges.append((event.start_us, 1, handle, "push", event))
        edges.append((event.end_us, 0, handle, "pop", event))
    edges.sort(key=lambda edge: (edge[0], edge[1], edge[2] if edge[1] else -edge[2]))
    events = [ProfilerEvent._made("mark", "__start_profile", thread, 0.0, 0)]
    for when, _, handle, kind, event in edges:
        events.append(ProfilerEvent._made(kind, event.name if kind == "push" else "", thread, when, handle,
                                          event.input_shapes if kind == "push" else ()))
    events.append(ProfilerEvent._made("mark", "__stop_profile", thread, stop_us, 0))
    return [events]


class _AnnotationRanges:
    """What emit_nvtx and emit_itt share: an ``enabled`` switch and entering once per object (torch
    leaves ``entered`` set on exit, so an object enters once)."""

    _tool = ""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled = enabled
        self.entered = False
        self.record_shapes = record_shapes

    def __enter__(self):
        if not self.enabled:
            return None
        if self.entered:
            raise RuntimeError(f"{self._tool} annotation context manager is not reentrant")
        self.entered = True
        self._open()
        return self

    def _open(self):
        pass

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False


class emit_nvtx(_AnnotationRanges):
    """``torch.autograd.profiler.emit_nvtx``: NVTX ranges for the NVIDIA profilers. They need CUDA;
    as on a CPU-only torch, entering it raises the CUDA-less AssertionError (``enabled=False`` makes
    it a no-op)."""

    _tool = "NVTX"

    def _open(self):
        from .. import cuda
        cuda.synchronize()  # raises: no CUDA here


class emit_itt(_AnnotationRanges):
    """``torch.autograd.profiler.emit_itt``: Intel ITT ranges for VTune. Outside VTune the ranges
    go nowhere (as torch's do), so entering and leaving only check that it is not re-entered."""

    _tool = "ITT"


__all__ += ["emit_nvtx", "emit_itt"]


def _profiler_enabled() -> bool:
    """``torch.autograd._profiler_enabled()``: whether a profile records on this thread now."""
    return _recorder() is not None
