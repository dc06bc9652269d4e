"""``torch.utils.benchmark``: time Python statements the way torch's ``Timer`` does (a warm-up,
then blocks of runs sized so that the timer's overhead does not matter) and report a
``Measurement`` (median, interquartile range, runs) printed as torch prints it."""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import enum
import math
import textwrap
import timeit as _timeit
from typing import Any

import numpy as np

__all__ = ["Timer", "Measurement", "TaskSpec", "Language", "Compare", "select_unit", "unit_to_english",
           "trim_sigfig", "ordered_unique", "set_torch_threads", "timer"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


def timer() -> float:
    """The clock Timer uses: nothing runs asynchronously on the CPU, so no device to synchronize."""
    return _timeit.default_timer()


@contextlib.contextmanager
def set_torch_threads(n: int):
    import hookgrad
    prior = hookgrad.get_num_threads()
    try:
        hookgrad.set_num_threads(n)
        yield
    finally:
        hookgrad.set_num_threads(prior)


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What was timed: the statement, its setup and the labels of the measurement."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


def select_unit(t: float):
    """The unit ("ns", "us", "ms" or "s") to print the time ``t`` (seconds) in, and its scale."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3) if t > 0 else -3, "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[unit]


def unit_to_english(u: str) -> str:
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    magnitude = int(math.ceil(math.log10(abs(x))))
    scale = 10 ** (magnitude - n)
    return float(np.round(x / scale) * scale)


def ordered_unique(elements) -> list:
    return list(dict.fromkeys(elements))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The times of one statement: ``raw_times[i]`` for ``number_per_run`` runs each."""

    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None

    def __post_init__(self) -> None:
        self._sorted_times: tuple = ()
        self._warnings: tuple = ()
        self._median = self._mean = self._p25 = self._p75 = -1.0

    def __getattr__(self, name: str) -> Any:
        if name in _TASKSPEC_FIELDS:
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    @property
    def times(self) -> list:
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self) -> int:
        self._lazy_init()
        n = len(self._sorted_times)
        middle = self._sorted_times[n // 4:int(math.ceil(3 * n / 4))]
        std = float(np.std(middle)) if middle else 0.0
        interval = max(1.645 * std / math.sqrt(len(middle)) if middle else 0.0, _MIN_CONFIDENCE_INTERVAL)
        figures = int(math.floor(math.log10(self._median / interval)))
        return min(max(figures, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self) -> None:
        if self.raw_times and not self._sorted_times:
            self._sorted_times = tuple(sorted(self.times))
            values = np.asarray(self._sorted_times, dtype=np.float64)
            self._median = float(np.quantile(values, 0.5))
            self._mean = float(values.mean())
            self._p25 = float(np.quantile(values, 0.25))
            self._p75 = float(np.quantile(values, 0.75))
            if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
                self._add_warning("This suggests significant environmental influence.")
            elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
                self._add_warning("This could indicate system fluctuation.")

    def _add_warning(self, message: str) -> None:
        relative = self.iqr / self.median * 100
        self._warnings += (f"  WARNING: Interquartile range is {relative:.1f}% of the median measurement.\n"
                           f"           {message}",)

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str:
        return "Unspecified env" if self.task_spec.env is None else self.task_spec.env

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        lines = [object.__repr__(self).replace(f"{__name__}.Measurement",
                                                "torch.utils.benchmark.utils.common.Measurement"),
                 self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._p25 / scale:.2f} to {self._p75 / scale:.2f})")
        threads = self.task_spec.num_threads
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} thread{'s' if threads > 1 else ''}")
        lines.extend(self._warnings)
        return "\n".join(line for line in "\n".join(lines).strip().splitlines())

    @staticmethod
    def merge(measurements) -> list:
        groups: dict = collections.defaultdict(list)
        for m in measurements:
            groups[m.task_spec].append(m)
        return [Measurement(number_per_run=1, raw_times=[t for m in group for t in m.times], task_spec=spec)
                for spec, group in groups.items()]


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


class Timer:
    """Time ``stmt`` after ``setup`` (strings of Python; ``globals`` supplies their names, with
    ``torch`` always available)."""

    def __init__(self, stmt: str = "pass", setup: str = "pass", global_setup: str = "", timer=timer,
                 globals: dict | None = None, label: str | None = None, sub_label: str | None = None,
                 description: str | None = None, env: str | None = None, num_threads: int = 1,
                 language=Language.PYTHON):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("C++ statements need torch's compiled timer; hookgrad times Python only")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely this code can simply be "
                             "moved to `setup`.")
        import hookgrad
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", hookgrad)
        stmt = textwrap.dedent(stmt)
        stmt = (stmt[1:] if stmt and stmt[0] == "\n" else stmt).rstrip()
        setup = textwrap.dedent(setup)
        setup = (setup[1:] if setup and setup[0] == "\n" else setup).rstrip()
        self._timer = _timeit.Timer(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup, label=label,
                                   sub_label=sub_label, description=description, env=env, num_threads=num_threads)

    def _timeit(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> Measurement:
        """Run ``stmt`` ``number`` times (after a warm-up of a hundredth of that)."""
        with set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))
            return Measurement(number_per_run=number, raw_times=[self._timeit(number=number)],
                               task_spec=self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _measure(self, number, stop, min_run_time, max_run_time=None, callback=None) -> list:
        total, times, can_stop = 0.0, [], False
        with set_torch_threads(self._task_spec.num_threads):
            while total < min_run_time or not can_stop:
                spent = self._timeit(number)
                times.append(spent)
                total += spent
                if callback:
                    callback(number, spent)
                can_stop = stop(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        # the smallest power of ten of runs whose time dwarfs the timer's own overhead
        with set_torch_threads(self._task_spec.num_threads):
            overhead = float(np.median([self._timeit(0) for _ in range(5)]))
            number = 1
            while True:
                taken = self._timeit(number)
                if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                    break
                if taken > min_run_time or number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of runs until ``min_run_time`` seconds have been spent."""
        number = self._estimate_block_size(min_run_time)
        times = self._measure(number, lambda times: True, min_run_time, callback=callback)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback=None) -> Measurement:
        """Blocks of runs until the interquartile range is within ``threshold`` of the median."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop(times):
            return len(times) > 3 and Measurement(number_per_run=number, raw_times=times,
                                                  task_spec=self._task_spec).meets_confidence(threshold=threshold)

        times = self._measure(number, stop, min_run_time, max_run_time, callback=callback)
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def collect_callgrind(self, *args, **kwargs):
        raise NotImplementedError("collect_callgrind needs valgrind and torch's compiled bindings; not in hookgrad")


class Compare:
    """A table of measurements: one row per sub_label (or statement), one column per description,
    grouped by label; times in the unit that suits the smallest median."""

    def __init__(self, results):
        self._results = list(results)
        self._trim = False
        self._colorize = False

    def extend_results(self, results) -> None:
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim = True

    def colorize(self, rowwise: bool = False) -> None:
        self._colorize = True

    def highlight_warnings(self) -> None:
        """Kept for torch's API; warnings are not marked in this plain table."""

    def __str__(self) -> str:
        blocks = []
        merged = Measurement.merge(self._results)
        for label in ordered_unique(m.label for m in merged):
            group = [m for m in merged if m.label == label]
            columns = ordered_unique(m.description for m in group)
            rows = ordered_unique(m.as_row_name for m in group)
            unit, scale = select_unit(min(m.median for m in group))
            cells = {(m.as_row_name, m.description): m.median / scale for m in group}
            header = [""] + [c or "" for c in columns]
            body = [[r] + [(f"{cells[(r, c)]:.{3 if self._trim else 1}f}" if (r, c) in cells else "")
                           for c in columns] for r in rows]
            widths = [max(len(str(line[i])) for line in [header] + body) for i in range(len(header))]
            lines = [f"[{'-' * 10} {label or ''} {'-' * 10}]"]
            lines += ["  |  ".join(str(v).rjust(w) for v, w in zip(line, widths)) for line in [header] + body]
            lines.append(f"\nTimes are in {unit_to_english(unit)}s ({unit}).")
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks) + "\n"

    def print(self) -> None:
        print(str(self))
