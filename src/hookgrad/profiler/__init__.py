"""``torch.profiler``: the step-scheduled profiler on top of ``hookgrad.autograd.profiler``.

``profile`` records the CPU time of hookgrad's ops, autograd nodes and ``record_function`` ranges
(see ``hookgrad.autograd.profiler`` for what is timed); with a ``schedule`` it records only the
steps the schedule marks, hands each finished cycle to ``on_trace_ready``, and adds a
``ProfilerStep#N`` range per step, as torch does. Only ``ProfilerActivity.CPU`` is supported.
"""
from __future__ import annotations

import enum
import gzip
import os
import socket
import time
from typing import Any, Callable, Iterable, Optional
from warnings import warn

from ..autograd import profiler as _autograd_profiler
from ..autograd.profiler_util import EventList
from ..autograd.profiler import DeviceType, ProfilerActivity, kineto_available, record_function
from . import itt  # noqa: F401 - torch.profiler.itt, reached as an attribute

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler", "ProfilerAction",
           "ProfilerActivity", "kineto_available", "DeviceType", "record_function"]


class ProfilerAction(enum.Enum):
    """What the profiler does during a step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set:
    """The activities this profiler can record: the CPU only."""
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable:
    """A step -> ProfilerAction function: skip ``skip_first`` steps, then cycles of ``wait`` idle,
    ``warmup`` and ``active`` recording steps (the last one RECORD_AND_SAVE), ``repeat`` times (0:
    forever). ``skip_first_wait`` drops the first cycle's wait."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
                             f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
                             f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    cycle = wait + warmup + active

    def action_at(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        position = step % cycle
        if position < wait:
            return ProfilerAction.NONE
        if position < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if position < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return action_at


def _record_every_step(_step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: Optional[str] = None, use_gzip: bool = False,
                              use_python_export: bool = False):
    """An ``on_trace_ready`` callback writing each trace as ``<worker>.<time>.pt.trace.json[.gz]``
    into ``dir_name`` (created if missing)."""
    def handler(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns()}.pt.trace.json"  # nanoseconds, as torch: no clash between traces
        path = os.path.join(dir_name, name)
        prof.export_chrome_trace(path)
        if use_gzip:
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                dst.write(src.read())
            os.remove(path)
    return handler


class profile(_autograd_profiler.profile):
    """``torch.profiler.profile``: a context manager (or ``start()``/``stop()``), with ``step()``
    moving through the ``schedule``."""

    def __init__(self, *, activities: Optional[Iterable] = None, schedule: Optional[Callable] = None,
                 on_trace_ready: Optional[Callable[..., Any]] = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, use_cuda: Optional[bool] = None, custom_trace_id_callback=None,
                 post_processing_timeout_s=None):
        activities = set(activities) if activities else supported_activities()
        if use_cuda is not None:
            warn("`use_cuda` is deprecated, use `activities` argument instead", FutureWarning, stacklevel=2)
            if use_cuda:
                activities.add(ProfilerActivity.CUDA)
        unsupported = activities - supported_activities()
        if unsupported:
            warn(f"hookgrad records CPU activity only; ignoring {sorted(a.name for a in unsupported)}",
                 stacklevel=2)
        if not activities:
            raise AssertionError("No valid profiler activities found")
        super().__init__(record_shapes=record_shapes, with_flops=with_flops, profile_memory=profile_memory,
                         with_stack=with_stack, with_modules=with_modules, acc_events=acc_events)
        self.activities = activities
        self.record_steps = schedule is not None
        self.schedule = schedule if schedule is not None else _record_every_step
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn = None
        self._recording = False
        self._started = False

    # the transitions torch makes between two steps' actions (None: the profiler stops)
    def _transit(self, prev, current) -> None:
        A = ProfilerAction
        recording = (A.RECORD, A.RECORD_AND_SAVE)
        if prev == A.WARMUP and current in (A.NONE, None):
            if current == A.NONE:
                warn("Incorrect schedule: WARMUP followed by NONE", stacklevel=3)
            self._begin()
            self._end()
        elif prev in recording and current in (A.NONE, A.WARMUP, None):
            if prev == A.RECORD and current is not None:
                warn(f"Incorrect schedule: RECORD followed by {current.name}", stacklevel=3)
            self._end()
            if prev == A.RECORD_AND_SAVE or current is None:
                self._trace_ready()
        elif prev == A.RECORD_AND_SAVE and current in recording:
            self._end()
            self._trace_ready()
            self._begin()
        elif prev in (A.NONE, A.WARMUP) and current in recording:
            self._begin()

    def _begin(self) -> None:
        if not self._recording:
            self._start_trace()
            self._recording = True

    def _end(self) -> None:
        if self._recording:
            self._recording = False
            self._stop_trace()

    def _trace_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def start(self) -> None:
        self._started = True
        self._transit(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def stop(self) -> None:
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit(self.current_action, None)

    def step(self) -> None:
        """The next step begins: move to the schedule's action for it."""
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def events(self):
        """The events of the last finished recording (empty while the first one runs)."""
        if self._function_events is None:
            if not self._started:
                raise AssertionError("Profiler must be initialized before accessing events")
            return EventList()
        return self.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        if self._function_events is None and not self._started:
            raise AssertionError("Profiler must be initialized before getting key averages")
        return self.events().key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False
