"""ActivationCapture: keep module outputs (detached copies) or their statistics, one entry per call."""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Iterable, NamedTuple

import numpy as np

from ._common import (HookTool, check_choice, fmt, format_table, iter_tensors, label, mark_steps, pyplot,
                      select_modules, to_numpy)

__all__ = ["ActivationCapture", "Activation"]

STAT_KEYS = ("mean", "std", "min", "max", "frac_zero")


class Activation(NamedTuple):
    """One module call: ``order`` (0, 1, ... over all watched calls), ``step`` (steps completed
    before it), ``module`` (qualified name) and ``value``: in mode "tensor" a detached copy of the
    output (a tuple of copies when the output holds several tensors), in mode "stats" a dict of
    statistics (a tuple of dicts likewise)."""

    order: int
    step: int
    module: str
    value: Any


class ActivationCapture(HookTool):
    """Capture what modules return, per call, with forward hooks.

    Args:
        model: the module to watch.
        names: ``None`` for the leaf modules, else fnmatch globs over qualified names from
            ``model.named_modules()`` (``"features.*"``, ``["conv?", "fc*"]``; ``""`` is the model).
        mode: ``"tensor"`` keeps a detached copy of each output; ``"stats"`` keeps only its
            statistics (mean, population std, min, max, fraction of exact zeros, shape), which
            costs little memory over a long run.
        optimizer: if given, every ``optimizer.step()`` ends a step; otherwise call ``step()``.

    A module called twice in one forward pass gives two entries. ``capture[name]`` lists the values
    of one module in call order, ``records`` holds every entry in call order.
    """

    _tool_name = "ActivationCapture"

    def __init__(self, model: Any, names: str | Iterable[str] | None = None, mode: str = "tensor", *,
                 optimizer: Any = None) -> None:
        check_choice(mode, ("tensor", "stats"), "mode", self._tool_name)
        self.modules = select_modules(model, names, self._tool_name)
        super().__init__(optimizer)
        self.mode = mode
        self.types = {name: type(m).__name__ for name, m in self.modules}
        self.records: list[Activation] = []
        self._by_name: dict[str, list[Any]] = defaultdict(list)
        try:
            for name, module in self.modules:
                self._register(module.register_forward_hook, self._hook(name))
        except BaseException:
            self.close()
            raise

    def _hook(self, name: str):
        keep = _copy if self.mode == "tensor" else _stats

        def hook(module, args, output):
            if not self.enabled:
                return
            found = [keep(t) for _, t in iter_tensors(output, "output")]
            if not found:
                return
            value = found[0] if len(found) == 1 else tuple(found)
            self.records.append(Activation(len(self.records), self.steps, name, value))
            self._by_name[name].append(value)
        return hook

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.modules]

    def __getitem__(self, name: str) -> list[Any]:
        if name not in self.types:
            raise KeyError(f"ActivationCapture watches no module named {name!r}; it watches {self.names}")
        return list(self._by_name.get(name, []))

    def __len__(self) -> int:
        return len(self.records)

    def clear(self) -> None:
        """Forget every captured entry (hooks stay)."""
        self.records.clear()
        self._by_name.clear()

    def _stats_of(self, value: Any) -> dict[str, Any]:
        first = value[0] if isinstance(value, tuple) else value
        return first if self.mode == "stats" else _stats(first)

    def latest_stats(self, name: str) -> dict[str, Any] | None:
        """Statistics of the latest output of module ``name`` (its first tensor), None before any call."""
        values = self[name]
        return self._stats_of(values[-1]) if values else None

    def table(self) -> str:
        """Per module: number of calls, output shape and the statistics of its latest output."""
        rows = []
        for name in self.names:
            s = self.latest_stats(name)
            if s is None:
                rows.append([label(name), self.types[name], "0", "-", "-", "-", "-", "-", "-"])
                continue
            rows.append([label(name), self.types[name], str(len(self._by_name[name])), "x".join(map(str, s["shape"])) or "scalar",
                         fmt(s["mean"], ".4g"), fmt(s["std"], ".4g"), fmt(s["min"], ".4g"), fmt(s["max"], ".4g"),
                         fmt(s["frac_zero"], ".3f")])
        return format_table(["module", "type", "calls", "shape", "mean", "std", "min", "max", "zero frac"], rows)

    def per_step(self, key: str) -> dict[str, tuple[list[int], list[float]]]:
        """For each module, (steps, value of statistic ``key`` averaged over the calls in that step)."""
        if key not in STAT_KEYS:
            raise ValueError(f"ActivationCapture.per_step: key must be one of {STAT_KEYS}, got {key!r}")
        sums: dict[str, dict[int, list[float]]] = defaultdict(dict)
        for rec in self.records:
            v = self._stats_of(rec.value)[key]
            if v is None:
                continue
            acc = sums[rec.module].setdefault(rec.step, [0.0, 0])
            acc[0] += v
            acc[1] += 1
        out = {}
        for name in self.names:
            steps = sorted(sums.get(name, {}))
            out[name] = (steps, [sums[name][s][0] / sums[name][s][1] for s in steps])
        return out

    def call_series(self, key: str) -> list[tuple[str, int, list[int], list[float]]]:
        """Statistic ``key`` of every module call, one row per call in forward (data-flow) order:
        ``(module, call, steps, values)``, ``call`` counting a module's calls within a step from 0.
        A module called three times per step gives three rows; nothing is averaged (``per_step``
        averages a step's calls instead). The row order is the call order of the step with the most
        calls (the first such step)."""
        if key not in STAT_KEYS:
            raise ValueError(f"ActivationCapture.call_series: key must be one of {STAT_KEYS}, got {key!r}")
        series: dict[tuple[str, int], tuple[list[int], list[float]]] = {}
        by_step: dict[int, list[tuple[str, int]]] = defaultdict(list)
        counter: dict[tuple[int, str], int] = defaultdict(int)
        for rec in self.records:
            call = counter[(rec.step, rec.module)]
            counter[(rec.step, rec.module)] += 1
            by_step[rec.step].append((rec.module, call))
            v = self._stats_of(rec.value)[key]
            if v is None:
                continue
            steps, values = series.setdefault((rec.module, call), ([], []))
            steps.append(rec.step)
            values.append(v)
        busiest = max(by_step.values(), key=len, default=[])
        order = busiest + sorted(k for k in series if k not in set(busiest))
        return [(name, call, *series[(name, call)]) for name, call in order if (name, call) in series]

    def plot(self, path: str, title: str = "Activations", marks: dict[int, str] | None = None) -> str:
        """Save a figure (needs matplotlib). Mode "stats": small multiples, one row per module call
        in data-flow order (a module called twice per step has two rows) and one column per
        statistic (standard deviation of the output, log scale; fraction of exact zeros), against
        the step, each with its last value written beside it. ``marks`` maps a step to a label
        (epoch starts, say). Mode "tensor": a histogram of each layer's latest output."""
        plt = pyplot()
        if self.mode == "tensor":
            fig = self._plot_histograms(plt, title)
            fig.savefig(path, dpi=120)
            plt.close(fig)
            return path
        columns = [("std", "std of the output (log scale)", True), ("frac_zero", "fraction of outputs exactly 0", False)]
        data = {key: self.call_series(key) for key, _, _ in columns}
        rows = [(name, call) for name, call, _, _ in data["std"]]
        calls = defaultdict(int)
        for name, _ in rows:
            calls[name] += 1
        fig, axes = plt.subplots(max(len(rows), 1), len(columns), figsize=(11, 1.0 + 0.62 * max(len(rows), 1)),
                                 sharex=True, sharey="col", squeeze=False)
        for col, (key, heading, log) in enumerate(columns):
            values_of = {(name, call): (steps, values) for name, call, steps, values in data[key]}
            for row, (name, call) in enumerate(rows):
                ax = axes[row, col]
                steps, values = values_of.get((name, call), ([], []))
                points = [(s, v) for s, v in zip(steps, values) if math.isfinite(v) and (v > 0 or not log)]
                if points:
                    ax.plot(*zip(*points), linewidth=1.1, color=f"C{col}")
                if values:
                    ax.annotate(fmt(values[-1], ".3g"), xy=(1.0, 0.5), xycoords="axes fraction", xytext=(4, 0),
                                textcoords="offset points", fontsize=8, va="center", ha="left")
                if log and points:
                    ax.set_yscale("log")
                ax.tick_params(labelsize=7)
                ax.grid(True, alpha=0.3)
                mark_steps(ax, marks, label_them=row == 0, color="0.6")
                if col == 0:
                    which = f"\ncall {call + 1} of {calls[name]}" if calls[name] > 1 else ""
                    ax.set_ylabel(f"{label(name)}\n({self.types[name]}){which}", fontsize=8, rotation=0,
                                  ha="right", va="center", labelpad=8)
            axes[0, col].set_title(heading, fontsize=10, pad=14 if marks else 6)
            if not log:
                axes[0, col].set_ylim(-0.05, 1.05)
            axes[-1, col].set_xlabel("training step", fontsize=9)
        fig.suptitle(title, fontsize=12, x=0.01, ha="left")
        fig.text(0.01, 0.004, "one row per module call, top to bottom in data-flow order; each point is that call's "
                 "value in one step (nothing averaged); number at the right: the last step's value",
                 fontsize=7.5, ha="left", va="bottom", color="0.3")
        fig.tight_layout(rect=(0, 0.02, 0.97, 1))
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path

    def _plot_histograms(self, plt, title: str):
        names = [n for n in self.names if self._by_name.get(n)]
        cols = min(3, max(1, len(names)))
        rows = max(1, math.ceil(len(names) / cols))
        fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), squeeze=False)
        for ax in axes.flat[len(names):]:
            ax.axis("off")
        for ax, name in zip(axes.flat, names):
            last = self._by_name[name][-1]
            data = to_numpy(last[0] if isinstance(last, tuple) else last).astype(np.float64).ravel()
            ax.hist(data[np.isfinite(data)], bins=50)
            ax.set_title(f"{label(name)} ({self.types[name]})", fontsize=9)
            ax.set_xlabel("output value", fontsize=8)
            ax.set_ylabel("count", fontsize=8)
        fig.suptitle(title)
        fig.tight_layout()
        return fig


def _copy(t: Any) -> Any:
    return t.detach().clone()


def _stats(t: Any) -> dict[str, Any]:
    a = to_numpy(t)
    shape = tuple(int(s) for s in a.shape)
    if a.size == 0:
        return {"shape": shape, "mean": None, "std": None, "min": None, "max": None, "frac_zero": None}
    a64 = a.astype(np.float64, copy=False)
    return {"shape": shape, "mean": float(a64.mean()), "std": float(a64.std()), "min": float(a64.min()),
            "max": float(a64.max()), "frac_zero": float(np.count_nonzero(a == 0)) / a.size}
