"""GradientFlow: per-layer gradient norms, step by step, from full backward hooks and
post-accumulate-grad hooks."""
from __future__ import annotations

import math
from typing import Any, Iterable

from ._common import HookTool, fmt, format_table, label, norm, plot_line, pyplot, select_modules

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
        self._read_at_step: list[tuple[str, Any]] = []
        try:
            for name, module in self.modules:
                self._register(module.register_full_backward_hook, self._module_hook(name))
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
            if not self.enabled:
                return
            calls = self._pending_modules.get(name)
            if calls is None:
                calls = self._pending_modules[name] = {"grad_output": [], "grad_input": []}
            calls["grad_output"].append(norm(grad_output))
            calls["grad_input"].append(norm(grad_input))
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
        return {"step": self.steps, "modules": modules, "params": params}

    def step(self) -> None:
        """End the current step: what the hooks saw since the last ``step()`` becomes one record."""
        self.history.append(self._pending_record())
        self._pending_modules.clear()
        self._pending_params.clear()
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

    def plot(self, path: str, title: str = "Gradient flow") -> str:
        """Save a figure (needs matplotlib): per-layer norms of grad_output (top) and of the layer's
        parameter gradients (bottom) against the step, log scale, one line per layer."""
        plt = pyplot()
        panels = [("grad_output", "‖∂loss/∂output‖₂ of the layer"), ("param", "‖∂loss/∂parameters‖₂ of the layer")]
        fig, axes = plt.subplots(len(panels), 1, figsize=(10, 7.5), sharex=True)
        for ax, (key, ylabel) in zip(axes, panels):
            for name, values in self.series(key).items():
                plot_line(ax, list(range(len(values))), values, f"{label(name)} ({self.types[name]})", log=True)
            if ax.lines:
                ax.set_yscale("log")
                ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
            else:
                ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
            ax.set_ylabel(ylabel + "\n(log scale)", fontsize=9)
            ax.grid(True, which="major", alpha=0.3)
        axes[-1].set_xlabel("training step")
        axes[0].set_title(title + "\n(faint: every step; solid: moving average)", fontsize=11)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return path


def _combine(norms: list[float | None]) -> float | None:
    """The norm of several tensors together, from their separate norms (None entries skipped)."""
    present = [v for v in norms if v is not None]
    return math.sqrt(sum(v * v for v in present)) if present else None
