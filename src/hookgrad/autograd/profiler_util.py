"""``torch.autograd.profiler_util``: the events a CPU profile records, their per-name averages, and
torch's summary table."""
from __future__ import annotations

import json
import os
from collections import OrderedDict

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg"]


class _Times:
    """The time figures both event kinds share (microseconds)."""

    @property
    def cpu_time(self) -> float:
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def self_cpu_time(self) -> float:
        return 0.0 if self.count == 0 else self.self_cpu_time_total / self.count

    # there is no accelerator: every device figure is zero, as in torch's CPU-only profiles
    device_time_total = self_device_time_total = cuda_time_total = self_cuda_time_total = 0.0
    cpu_memory_usage = self_cpu_memory_usage = device_memory_usage = self_device_memory_usage = 0

    @property
    def device_time(self) -> float:
        return 0.0

    cuda_time = device_time


class FunctionEvent(_Times):
    """One recorded range: an op, an autograd node, or a ``record_function`` block."""

    def __init__(self, id, name, thread, start_us, end_us=None, input_shapes=None, is_user_annotation=False,
                 sequence_nr=-1):
        self.id = id
        self.name = name
        self.thread = thread
        self.fwd_thread = thread
        self.start_us = start_us
        self.end_us = start_us if end_us is None else end_us
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.is_user_annotation = is_user_annotation
        self.sequence_nr = sequence_nr
        self.cpu_children = []
        self.cpu_parent = None
        self.count = 1
        self.is_async = False
        self.is_remote = False
        self.node_id = -1
        self.stack = []
        self.scope = 0
        self.flops = None
        self.concrete_inputs = []
        self.kwinputs = {}
        self.is_legacy = False

    @property
    def key(self) -> str:
        return self.name

    @property
    def device_type(self):
        from .profiler import DeviceType
        return DeviceType.CPU

    @property
    def cpu_time_total(self) -> float:
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(child.cpu_time_total for child in self.cpu_children)

    def append_cpu_child(self, child) -> None:
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent) -> None:
        self.cpu_parent = parent

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_total:.3f}us "
                f"self_cpu_time={self.self_cpu_time_total:.3f}us input_shapes={self.input_shapes} "
                f"cpu_children={[c.id for c in self.cpu_children]}>")


class FunctionEventAvg(_Times):
    """The events of one name (and input shapes, when grouped by them) added up."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.input_shapes = None
        self.stack = None
        self.scope = None
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_parent = None
        self.is_legacy = False
        self.is_user_annotation = False
        self.flops = 0

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.cpu_parent = other.cpu_parent
            self.is_user_annotation = other.is_user_annotation
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise AssertionError("Expected other to be a FunctionEvent or FunctionEventAvg")
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.count += other.count
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
                f"cpu_time={self.cpu_time_total:.3f}us input_shapes={self.input_shapes}>")


def _format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_share(part: float, whole: float) -> str:
    return "NaN" if whole == 0 else f"{100.0 * part / whole:.2f}%"


class EventList(list):
    """A list of events with torch's summaries: ``key_averages``, ``table``, ``export_chrome_trace``."""

    def __init__(self, *args, **kwargs):
        kwargs.pop("use_device", None)
        kwargs.pop("profile_memory", None)
        kwargs.pop("with_flops", None)
        super().__init__(*args, **kwargs)

    @property
    def self_cpu_time_total(self) -> float:
        return sum(event.self_cpu_time_total for event in self)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0, group_by_overload_name=False):
        """One FunctionEventAvg per event name (per name and input shapes when
        ``group_by_input_shapes``), in order of first appearance. (torch spells the keyword with a
        final s here and without one in ``profile.key_averages``.)"""
        groups = OrderedDict()
        for event in self:
            key = (event.key, str(event.input_shapes)) if group_by_input_shapes else event.key
            groups.setdefault(key, FunctionEventAvg()).add(event)
        if not group_by_input_shapes:
            for average in groups.values():
                average.input_shapes = ""  # as torch: the shapes belong to the grouped view only
        return EventList(groups.values())

    def total_average(self):
        total = FunctionEventAvg()
        for event in self:
            total.cpu_time_total += event.cpu_time_total
            total.self_cpu_time_total += event.self_cpu_time_total
            total.count += event.count
        total.key = "Total"
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        """torch's summary table: name, self and total CPU time (and shares), average, calls, and the
        input shapes when they were recorded."""
        events = list(self)
        if not events:
            return ""
        if sort_by is not None:
            events = sorted(events, key=lambda event: getattr(event, sort_by), reverse=True)
        if top_level_events_only:
            events = [event for event in events if event.cpu_parent is None]
        events = events[:row_limit] if row_limit is not None and row_limit >= 0 else events
        # the shares are of the whole profile's self time, not of the rows shown
        whole = sum(event.self_cpu_time_total for event in self)
        has_shapes = any(event.input_shapes for event in self)

        name_width = min(max((len(event.key) for event in events), default=4) + 4, max_name_column_width)
        shapes_width = 0
        if has_shapes:
            shapes_width = min(max((len(str(event.input_shapes)) for event in events), default=12) + 4,
                               max_shapes_column_width)
        headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
        widths = [name_width] + [12] * 6
        if has_shapes:
            headers.append("Input Shapes")
            widths.append(shapes_width)

        def row(values):
            return "".join(f"{str(v):>{w}}  " for v, w in zip(values, widths))

        def clip(text, width):
            return text if len(text) <= width else text[:width - 3] + "..."

        rule = "".join("-" * w + "  " for w in widths)
        lines = []
        if header is not None:
            lines += ["=" * len(rule), header]
        lines += [rule, row(headers), rule]
        for event in events:
            values = [clip(event.key, name_width),
                      _format_share(event.self_cpu_time_total, whole), _format_time(event.self_cpu_time_total),
                      _format_share(event.cpu_time_total, whole), _format_time(event.cpu_time_total),
                      _format_time(event.cpu_time), event.count]
            if has_shapes:
                values.append(clip(str(event.input_shapes), shapes_width))
            lines.append(row(values))
        lines.append(rule)
        lines.append(f"Self CPU time total: {_format_time(whole)}")
        return "\n".join(lines) + "\n"

    def __str__(self):
        return self.table()

    def export_chrome_trace(self, path) -> None:
        """Write the events as a Chrome trace (chrome://tracing, Perfetto): one complete event each."""
        pid = os.getpid()
        trace = [{"name": event.name, "ph": "X", "ts": event.start_us, "dur": event.cpu_time_total,
                  "tid": event.thread, "pid": pid, "cat": "user_annotation" if event.is_user_annotation else "cpu_op",
                  "args": {"Input Dims": event.input_shapes} if event.input_shapes else {}}
                 for event in self if isinstance(event, FunctionEvent)]
        with open(path, "w", encoding="utf-8") as fh:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, fh)
