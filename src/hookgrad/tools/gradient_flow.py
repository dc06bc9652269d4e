"""GradientFlow: per-layer gradient norms, step by step, from full backward hooks and
post-accumulate-grad hooks."""
from __future__ import annotations

import math
from typing import Any, Iterable

from ._common import HookTool, _own_warning_done, fmt, format_table, label, log_heatmap, mark_steps, norm, pyplot, select_modules

__all__ = ["GradientFlow"]


class GradientFlow(HookTool):
    """Record, per module and per training step, the 2-norms of ``grad_output`` and ``grad_input``
    (from a full backward hook) and of each parameter's ``.grad`` (from a post-accumulate-grad hook,
    read after accumulation, so gradient accumulation over several backward passes is counted).

    Args:
        model: the module to watch.
        names: which modules: ``None`` for the leaf modules, else fnmatch globs over the qualified
            names of ``model.named_modules()`` (``"*"`` for all, the model itself included).
        optimizer: if given, every ``optimizer.step()`` ends a step; otherwise call ``step()``.
        params: also record parameter gradient norms (default True).

    A module called several times in one step contributes one norm per step, taken over all of its
    calls together (the square root of the sum of the squared norms); ``calls`` says how many.
    ``grad_input`` is None for a module whose inputs do not require grad (a first layer).

    Full backward hooks make a module's inputs and outputs views, so a model that modifies a hooked
    module's output in place (``ReLU(inplace=True)`` right after it) raises while this tool is active;
    narrow ``names`` to avoid such modules.

    Use as a context manager (or call ``close()``): every hook it registered is removed on exit.
    """

    _tool_name = "GradientFlow"

    def __init__(self, model: Any, names: str | Iterable[str] | None = None, *, optimizer: Any = None,
                 params: bool = True) -> None:
        self.modules = select_modules(model, names, self._tool_name)
        super().__init__(optimizer)
        self.types = {name: type(m).__name__ for name, m in self.modules}
        self.history: list[dict[str, Any]] = []
        self.param_owner: dict[str, str] = {}
        self._pending_modules: dict[str, dict[str, list]] = {}
        self._pending_params: dict[str, float] = {}
        self._fired: list[str] = []          # modules in the order their backward hooks fired this step
        self._read_at_step: list[tuple[str, Any]] = []
        try:
            for name, module in self.modules:
                self._register(module.register_full_backward_hook, self._module_hook(name))
                self._quiet_own_backward_warning(module)
                if not params:
                    continue
                for pname, p in module.named_parameters(recurse=False):
                    if not p.requires_grad:
                        continue
                    qualified = f"{name}.{pname}" if name else pname
                    self.param_owner[qualified] = name
                    register = getattr(p, "register_post_accumulate_grad_hook", None)
                    if register is None:  # a framework without the hook: read .grad at step()
                        self._read_at_step.append((qualified, p))
                    else:
                        self._register(register, self._param_hook(qualified))
        except BaseException:
            self.close()
            raise

    def _module_hook(self, name: str):
        def hook(module, grad_input, grad_output):
            _own_warning_done()
            if not self.enabled:
                return
            calls = self._pending_modules.get(name)
            if calls is None:
                calls = self._pending_modules[name] = {"grad_output": [], "grad_input": []}
            calls["grad_output"].append(norm(grad_output))
            calls["grad_input"].append(norm(grad_input))
            self._fired.append(name)
        return hook

    def _param_hook(self, qualified: str):
        def hook(param):
            if not self.enabled:
                return
            self._pending_params[qualified] = norm([param.grad])
        return hook

    # ---- steps and results -------------------------------------------------------------------
    def _pending_record(self) -> dict[str, Any]:
        params = dict(self._pending_params)
        for qualified, p in self._read_at_step:
            if p.grad is not None:
                params[qualified] = norm([p.grad])
        modules = {}
        for name, calls in self._pending_modules.items():
            modules[name] = {key: _combine(calls[key]) for key in ("grad_output", "grad_input")}
            modules[name]["calls"] = len(calls["grad_output"])
            # per call, in the order the backward reached them (the reverse of the forward order)
            modules[name]["per_call"] = {key: list(calls[key]) for key in ("grad_output", "grad_input")}
        return {"step": self.steps, "modules": modules, "params": params, "fired": list(self._fired)}

    def step(self) -> None:
        """End the current step: what the hooks saw since the last ``step()`` becomes one record."""
        self.history.append(self._pending_record())
        self._pending_modules.clear()
        self._pending_params.clear()
        self._fired.clear()
        super().step()

    def records(self) -> list[dict[str, Any]]:
        """Every finished step, plus the unfinished one if hooks have fired since the last step()."""
        pending = self._pending_record()
        return self.history + ([pending] if pending["modules"] or pending["params"] else [])

    def series(self, key: str = "grad_output") -> dict[str, list[float | None]]:
        """Per-step values, one list per module (``key`` "grad_output", "grad_input" or "param",
        the norm of all of a module's own parameter gradients) or per parameter (``key`` "params")."""
        records = self.records()
        if key == "params":
            return {q: [r["params"].get(q) for r in records] for q in self.param_owner}
        if key == "param":
            out = {}
            for name, _ in self.modules:
                mine = [q for q, owner in self.param_owner.items() if owner == name]
                if mine:
                    out[name] = [_combine([r["params"].get(q) for q in mine]) for r in records]
            return out
        if key not in ("grad_output", "grad_input"):
            raise ValueError(f"GradientFlow.series: key must be 'grad_output', 'grad_input', 'param' or "
                             f"'params', got {key!r}")
        return {name: [r["modules"].get(name, {}).get(key) for r in records] for name, _ in self.modules}

    def summary(self) -> list[dict[str, Any]]:
        """One row per watched module: last and mean norms over the recorded steps."""
        out, grad_out, grad_in, param = [], self.series("grad_output"), self.series("grad_input"), self.series("param")
        records = self.records()
        for name, _ in self.modules:
            calls = [r["modules"][name]["calls"] for r in records if name in r["modules"]]
            row = {"module": name, "type": self.types[name], "steps": len(calls),
                   "calls_per_step": max(calls) if calls else 0}
            for key, series in (("grad_output", grad_out), ("grad_input", grad_in), ("param", param)):
                values = [v for v in series.get(name, []) if v is not None]
                row[f"{key}_last"] = values[-1] if values else None
                row[f"{key}_mean"] = sum(values) / len(values) if values else None
            out.append(row)
        return out

    def table(self) -> str:
        """A text table: one row per module, norms as last value and mean over steps."""
        rows = [[label(r["module"]), r["type"], str(r["steps"]), str(r["calls_per_step"]),
                 fmt(r["grad_output_last"]), fmt(r["grad_output_mean"]), fmt(r["grad_input_last"]),
                 fmt(r["param_last"]), fmt(r["param_mean"])] for r in self.summary()]
        headers = ["module", "type", "steps", "calls", "|grad_out| last", "|grad_out| mean",
                   "|grad_in| last", "|param grad| last", "|param grad| mean"]
        return format_table(headers, rows)

    def data_flow(self) -> list[tuple[str, int, int]]:
        """The module calls of one step in forward (data-flow) order, as ``(module, call, calls)``:
        ``call`` counts a module's calls from 0, ``calls`` is how many it had in that step.

        Read from the order in which the backward hooks fired, reversed (the backward visits the
        layers of a chain from the last to the first), in the first step with the most calls.
        Watched modules that never fired follow in declaration order.
        """
        fired = max((r.get("fired", []) for r in self.records()), key=len, default=[])
        counts = {name: fired.count(name) for name in set(fired)}
        seen: dict[str, int] = {}
        rows = []
        for name in reversed(fired):
            rows.append((name, seen.get(name, 0), counts[name]))
            seen[name] = seen.get(name, 0) + 1
        rows += [(name, 0, 0) for name, _ in self.modules if name not in counts]
        return rows

    def call_series(self, key: str = "grad_output") -> list[tuple[str, int, list[float | None]]]:
        """Per-step norms of each module call (``key`` "grad_output" or "grad_input"), one row per
        call in data-flow order (see ``data_flow()``): ``(module, call, values)``. A module called
        three times per step gives three rows; ``series()`` combines them into one."""
        if key not in ("grad_output", "grad_input"):
            raise ValueError(f"GradientFlow.call_series: key must be 'grad_output' or 'grad_input', got {key!r}")
        records = self.records()
        rows = []
        for name, call, calls in self.data_flow():
            values = []
            for r in records:
                reached = r["modules"].get(name, {}).get("per_call", {}).get(key, [])
                # the backward reaches the last call first; a backward stopped early (by an
                # exception) reached only the last calls
                index = calls - 1 - call
                values.append(reached[index] if 0 <= index < len(reached) else None)
            rows.append((name, call, values))
        return rows

    def plot(self, path: str, title: str = "Gradient flow", marks: dict[int, str] | None = None) -> str:
        """Save a figure (needs matplotlib): two heatmaps, layers top to bottom in data-flow order
        against the training step, colour the log10 of a gradient norm.

        Top: ``‖grad_output‖`` of every module call (a module called three times per step has three
        rows). Bottom: the norm of each layer's parameter gradients (one value per step). A row
        that turns dark is a gradient vanishing there, a bright one exploding; NaN/Inf cells are
        red, steps where a call or layer got no gradient grey. ``marks`` maps a step to a label
        (epoch starts, say), drawn as vertical lines.
        """
        plt = pyplot()
        flow = self.data_flow()
        calls_of = {name: calls for name, _, calls in flow}
        top_rows = []
        for name, call, values in self.call_series("grad_output"):
            calls = calls_of.get(name, 0)
            which = f", call {call + 1} of {calls}" if calls > 1 else ""
            top_rows.append((f"{label(name)} ({self.types[name]}{which})", values))
        order = {name: i for i, (name, _, _) in enumerate(flow)}
        param = self.series("param")
        bottom_rows = [(f"{label(name)} ({self.types[name]})", param[name])
                       for name in sorted(param, key=lambda n: order.get(n, len(order)))]
        steps = len(self.records())
        panels = [(top_rows, "‖∂loss/∂output‖₂ per module call"), (bottom_rows, "‖∂loss/∂parameters‖₂ per layer")]
        panels = [(rows, what) for rows, what in panels if rows]
        heights = [max(len(rows), 2) for rows, _ in panels]
        fig, axes = plt.subplots(len(panels), 1, figsize=(11, 1.6 + 0.36 * sum(heights) + 0.9 * len(panels)),
                                 gridspec_kw={"height_ratios": heights}, sharex=True, squeeze=False)
        for ax, (rows, what) in zip(axes[:, 0], panels):
            image = log_heatmap(ax, [values for _, values in rows], [name for name, _ in rows], steps)
            if rows is top_rows:   # a call that passed NaN/Inf on to its input: a red dot on its cell
                dots = [(step, row) for row, (_, _, values) in enumerate(self.call_series("grad_input"))
                        for step, v in enumerate(values) if v is not None and not math.isfinite(v)]
                if dots:
                    ax.scatter(*zip(*dots), s=45, color="red", edgecolors="white", linewidths=0.8, zorder=3)
            bar = fig.colorbar(image, ax=ax, pad=0.01, fraction=0.04)
            bar.set_label("norm (log scale)", fontsize=8)
            low, high = image.get_clim()                # colours are log10: ticks at 1, 2, 5 x 10^k
            ticks = [math.log10(m * 10.0 ** k) for k in range(math.floor(low) - 1, math.ceil(high) + 1)
                     for m in (1, 2, 5) if low <= math.log10(m * 10.0 ** k) <= high]
            bar.set_ticks(ticks, labels=[f"{10 ** t:.2g}" for t in ticks])
            bar.ax.tick_params(labelsize=7)
            ax.set_title(what, fontsize=10, loc="left", pad=14 if marks and ax is axes[0, 0] else 6)
            mark_steps(ax, marks, label_them=ax is axes[0, 0])
        axes[-1, 0].set_xlabel("training step")
        repeated = [f"{label(n)} {c}×" for n, c in calls_of.items() if c > 1]
        note = ("rows top to bottom in data-flow order (first call first); dark: small gradient, bright: large; "
                "red cell: NaN/Inf; red dot: NaN/Inf passed on to the input; grey: no gradient")
        if repeated:
            note += "\nmodules called several times per step get one row per call (" + ", ".join(repeated) + \
                    "); table() and series() give the norm over all of a module's calls in a step"
        fig.suptitle(title, fontsize=12, x=0.01, ha="left")
        fig.text(0.01, 0.005, note, fontsize=7.5, ha="left", va="bottom", color="0.3")
        fig.tight_layout(rect=(0, 0.045 if repeated else 0.03, 1, 1))
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path


def _combine(norms: list[float | None]) -> float | None:
    """The norm of several tensors together, from their separate norms (None entries skipped)."""
    present = [v for v in norms if v is not None]
    return math.sqrt(sum(v * v for v in present)) if present else None
