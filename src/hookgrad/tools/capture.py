"""ActivationCapture: keep module outputs (detached copies) or their statistics, one entry per call."""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Iterable, NamedTuple

import numpy as np

from ._common import HookTool, check_choice, fmt, format_table, iter_tensors, label, pyplot, plot_line, select_modules, to_numpy

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

    def plot(self, path: str, title: str = "Activations") -> str:
        """Save a figure (needs matplotlib). Mode "stats": per-layer standard deviation (log scale)
        and fraction of zeros of the outputs against the step. Mode "tensor": a histogram of each
        layer's latest output."""
        plt = pyplot()
        if self.mode == "tensor":
            fig = self._plot_histograms(plt, title)
        else:
            fig, axes = plt.subplots(2, 1, figsize=(10, 7.5), sharex=True)
            for ax, key, ylabel, log in ((axes[0], "std", "std of the layer's output\n(log scale)", True),
                                         (axes[1], "frac_zero", "fraction of output\nvalues exactly 0", False)):
                for name, (steps, values) in self.per_step(key).items():
                    plot_line(ax, steps, values, f"{label(name)} ({self.types[name]})", log=log)
                if log and ax.lines:
                    ax.set_yscale("log")
                if ax.lines:
                    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
                ax.set_ylabel(ylabel, fontsize=9)
                ax.grid(True, alpha=0.3)
            axes[1].set_ylim(-0.02, 1.02)
            axes[1].set_xlabel("training step")
            axes[0].set_title(title + "\n(faint: every step; solid: moving average)", fontsize=11)
            fig.tight_layout()
        fig.savefig(path, dpi=120)
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
