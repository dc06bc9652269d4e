"""Pieces the tools share: tensor inspection through public methods only, module selection by
qualified-name globs, and the base class that owns hook handles and step counting.

Nothing here imports a framework. A tensor is recognised by what it can do (``detach``, ``shape``,
``dtype``), a module by ``named_modules``, so the same code serves hookgrad and torch.
"""
from __future__ import annotations

import contextlib
import fnmatch
import math
import re
import sys
import warnings
from typing import Any, Callable, Iterable, Iterator

import numpy as np

ROOT_LABEL = "(model)"

# Both frameworks warn with this text on every backward pass through a module with full backward
# hooks whose inputs need no gradient (a first layer). Tools hide it for modules whose backward
# hooks are all their own; the user keeps seeing it wherever one of theirs is involved.
_OWN_HOOK_WARNING = ("ignore", re.compile("Full backward hook is firing when gradients are computed with respect "
                                          "to module outputs", re.I), UserWarning, None, 0)


def is_tensor(x: Any) -> bool:
    """True for a framework tensor (anything that looks like one: detach, shape and dtype)."""
    return hasattr(x, "detach") and hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, np.ndarray)


def iter_tensors(obj: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    """Yield ``(path, tensor)`` for every tensor in a nest of tuples, lists and dicts.

    ``path`` names where it sits, e.g. ``output``, ``output[1]``, ``output['logits']``.
    """
    if is_tensor(obj):
        yield prefix, obj
    elif isinstance(obj, (tuple, list)):
        for i, item in enumerate(obj):
            yield from iter_tensors(item, f"{prefix}[{i}]")
    elif isinstance(obj, dict):
        for key, item in obj.items():
            yield from iter_tensors(item, f"{prefix}[{key!r}]")


def to_numpy(t: Any) -> np.ndarray:
    """A NumPy copy-free view (where possible) of a tensor's values, without autograd history."""
    t = t.detach()
    if hasattr(t, "cpu"):
        t = t.cpu()
    try:
        return np.asarray(t.numpy())
    except (TypeError, RuntimeError):  # dtypes NumPy lacks (bfloat16): go through float32
        return np.asarray(t.float().numpy())


def norm(tensors: Iterable[Any]) -> float | None:
    """The 2-norm of all given tensors taken together; None when there are none (all None)."""
    total, seen = 0.0, False
    for t in tensors:
        if t is None or not is_tensor(t):
            continue
        a = to_numpy(t)
        if a.dtype.kind not in "fc":
            continue
        seen = True
        total += float(np.sum(np.square(a, dtype=np.float64)))
    return math.sqrt(total) if seen else None


def nonfinite_counts(t: Any) -> tuple[int, int, int]:
    """(number of NaN, number of +-Inf, number of elements) of a floating tensor; zeros otherwise."""
    a = to_numpy(t)
    if a.dtype.kind not in "fc":
        return 0, 0, a.size
    return int(np.isnan(a).sum()), int(np.isinf(a).sum()), a.size


def describe(t: Any) -> str:
    """``float32[32, 10]``: dtype and shape of a tensor, as the tables print it."""
    dtype = str(t.dtype).rsplit(".", 1)[-1]
    return f"{dtype}[{', '.join(str(int(s)) for s in t.shape)}]"


def label(name: str) -> str:
    """How tables and plots print a qualified module name (the root has the empty name)."""
    return name if name else ROOT_LABEL


def check_model(model: Any, tool: str) -> None:
    if not (hasattr(model, "named_modules") and hasattr(model, "register_forward_hook")):
        raise TypeError(f"{tool} expects a module (an nn.Module of hookgrad or torch), got {type(model).__name__}")


def select_modules(model: Any, names: str | Iterable[str] | None, tool: str) -> list[tuple[str, Any]]:
    """The ``(qualified name, module)`` pairs a tool watches.

    ``names=None`` picks the leaf modules (those without children; the model itself when it has
    none). Otherwise ``names`` is one fnmatch glob or a list of them, matched against every
    qualified name from ``model.named_modules()``; the model itself has the name ``""``, so ``"*"``
    selects every module including the model and its containers. A module reachable under two
    names is watched once, under the first.
    """
    check_model(model, tool)
    everything = list(model.named_modules())
    if names is None:
        chosen = [(n, m) for n, m in everything if next(iter(m.children()), None) is None]
        return chosen or everything[:1]
    patterns = [names] if isinstance(names, str) else list(names)
    if not patterns or not all(isinstance(p, str) for p in patterns):
        raise TypeError(f"{tool}: names must be a glob string or a non-empty list of them, got {names!r}")
    chosen = [(n, m) for n, m in everything if any(fnmatch.fnmatchcase(n, p) for p in patterns)]
    if not chosen:
        known = ", ".join(repr(n) for n, _ in everything[:12])
        raise ValueError(f"{tool}: no module name matches {patterns!r}; names are: {known}"
                         + (", ..." if len(everything) > 12 else ""))
    return chosen


def check_choice(value: Any, allowed: tuple[str, ...], what: str, tool: str) -> None:
    if value not in allowed:
        raise ValueError(f"{tool}: {what} must be one of {', '.join(map(repr, allowed))}, got {value!r}")


class HookTool:
    """Base of the tools: owns the handles of every hook it registers and removes them all on
    ``close()`` (also on leaving a ``with`` block, exception or not). Counts steps.

    ``enabled`` (or the ``paused()`` block) switches recording off without removing hooks.
    ``optimizer``: when given, a step post-hook on it calls ``step()`` after every
    ``optimizer.step()``; otherwise call ``step()`` yourself once per training step.
    """

    _tool_name = "tool"

    def __init__(self, optimizer: Any = None) -> None:
        self._handles: list[Any] = []
        self._closed = False
        self.steps = 0
        self.enabled = True
        if optimizer is not None:
            if not hasattr(optimizer, "register_step_post_hook"):
                raise TypeError(f"{self._tool_name}: optimizer has no register_step_post_hook: {optimizer!r}")
            self._register(optimizer.register_step_post_hook, lambda opt, args, kwargs: self.step())

    def _register(self, register: Callable[..., Any], hook: Callable[..., Any], **kwargs: Any) -> Any:
        if self._closed:
            raise RuntimeError(f"{self._tool_name} is closed")
        try:
            hook._hook_tool = self._tool_name      # whose hook it is: HookTrace and the quieting read it
        except AttributeError:                     # a bound method takes no attributes
            pass
        handle = register(hook, **kwargs)
        self._handles.append(handle)
        return handle

    def step(self) -> None:
        """Mark the end of a training step."""
        self.steps += 1

    def _quiet_own_backward_warning(self, module: Any) -> None:
        """Hide the framework's "Full backward hook is firing when gradients are computed with
        respect to module outputs" warning for ``module`` when it concerns only tools' hooks: all of
        the module's calls so far had no input requiring grad, and every backward hook on it (and
        no global one) belongs to a tool. The tool's full backward hook must call
        ``_own_warning_done()`` first thing: the framework warns between the two hooks."""
        calls = [0, 0]     # forward calls, of which with no input requiring grad

        def count_calls(mod, args):
            _own_warning_done()
            calls[0] += 1
            calls[1] += not any(is_tensor(a) and a.requires_grad for a in args)

        def arm(mod, grad_output):
            if calls[0] and calls[0] == calls[1] and _only_tool_backward_hooks(mod):
                _own_warning_hidden()

        self._register(module.register_forward_pre_hook, count_calls)
        self._register(module.register_full_backward_pre_hook, arm)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Within this block the hooks stay registered but record and check nothing."""
        before, self.enabled = self.enabled, False
        try:
            yield
        finally:
            self.enabled = before

    @property
    def hook_count(self) -> int:
        """How many hooks this tool has registered and not yet removed."""
        return len(self._handles)

    def close(self) -> None:
        """Remove every hook this tool registered. Calling it again does nothing."""
        _own_warning_done()
        handles, self._handles = self._handles, []
        for handle in reversed(handles):
            handle.remove()
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


def _own_warning_hidden() -> None:
    # straight into the list: warnings.filterwarnings() would also reset every module's record
    # of warnings already shown, so that "once"-style warnings elsewhere would show again
    if _OWN_HOOK_WARNING not in warnings.filters:
        warnings.filters.insert(0, _OWN_HOOK_WARNING)


def _own_warning_done() -> None:
    while _OWN_HOOK_WARNING in warnings.filters:
        warnings.filters.remove(_OWN_HOOK_WARNING)


def _only_tool_backward_hooks(module: Any) -> bool:
    """True when every backward hook and backward pre-hook on ``module`` was registered by a tool
    and the framework has no global backward hooks (read from the registries both frameworks keep
    under PyTorch's names; anything unreadable counts as a user's hook)."""
    home = None
    for klass in type(module).__mro__:
        if "register_full_backward_hook" in vars(klass):
            home = sys.modules.get(klass.__module__)
            break
    for attr in ("_global_backward_hooks", "_global_backward_pre_hooks"):
        if home is None or not hasattr(home, attr) or getattr(home, attr):
            return False
    for attr in ("_backward_hooks", "_backward_pre_hooks"):
        hooks = getattr(module, attr, None)
        if hooks is None or not all(getattr(h, "_hook_tool", None) for h in hooks.values()):
            return False
    return True


def fmt(value: float | None, spec: str = ".3e") -> str:
    """A number for a table cell; ``-`` where there is none."""
    return "-" if value is None else format(value, spec)


def format_table(headers: list[str], rows: list[list[str]]) -> str:
    """A plain-text table with aligned columns (text left, everything else right)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    left = [not rows or not _numeric(rows[0][i]) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if lft else c.rjust(w) for c, w, lft in zip(cells, widths, left)).rstrip()

    out = [line(headers), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    return "\n".join(out)


def _numeric(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return cell == "-"
    return True


def pyplot():
    """matplotlib's pyplot on a file-only backend; a clear ImportError when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError("plotting needs matplotlib, an optional dependency: pip install matplotlib") from exc
    if matplotlib.get_backend().lower() not in ("agg", "pdf", "svg", "cairo"):
        try:
            matplotlib.use("Agg", force=False)
        except Exception:  # noqa: BLE001 - an interactive backend already in use is fine too
            pass
    import matplotlib.pyplot as plt

    return plt


def log_heatmap(ax: Any, rows: list[list[float | None]], labels: list[str], steps: int) -> Any:
    """Draw one row per series (steps along x), coloured by log10 of the value; returns the image
    for a colour bar. Missing values (None) are grey, NaN/Inf red, zeros take the lowest colour.
    The colour range spans the 1st to 99th percentile, so one outlier does not wash out the rest."""
    from matplotlib.colors import ListedColormap

    data = np.full((max(len(rows), 1), max(steps, 1)), np.nan)
    bad = np.zeros(data.shape, dtype=bool)
    for i, values in enumerate(rows):
        for j, v in enumerate(values[:steps]):
            if v is None:
                continue
            if not math.isfinite(v):
                bad[i, j] = True
            else:
                data[i, j] = math.log10(v) if v > 0 else -np.inf
    finite = data[np.isfinite(data)]
    low, high = (np.percentile(finite, [1, 99]) if finite.size else (0.0, 1.0))
    if high - low < 1e-6:
        low, high = low - 0.5, high + 0.5
    data[np.isneginf(data)] = low
    cmap = pyplot().get_cmap("viridis").with_extremes(bad="0.85")
    extent = (-0.5, data.shape[1] - 0.5, data.shape[0] - 0.5, -0.5)
    image = ax.imshow(np.ma.masked_invalid(data), aspect="auto", interpolation="nearest", cmap=cmap,
                      vmin=low, vmax=high, extent=extent)
    if bad.any():
        ax.imshow(np.ma.masked_where(~bad, bad.astype(float)), aspect="auto", interpolation="nearest",
                  cmap=ListedColormap(["red"]), vmin=0, vmax=1, extent=extent)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=8)
    for i in range(1, len(labels)):
        ax.axhline(i - 0.5, color="white", linewidth=0.4)
    return image


def mark_steps(ax: Any, marks: dict[int, str] | None, label_them: bool = True, color: str = "white") -> None:
    """Vertical lines at the given steps (epoch starts, say), labelled above the axes."""
    for step, text in sorted((marks or {}).items()):
        ax.axvline(step - 0.5, color=color, linewidth=0.9, linestyle=(0, (4, 2)))
        if label_them:
            ax.annotate(text, xy=(step - 0.5, 1.0), xycoords=("data", "axes fraction"), xytext=(2, 2),
                        textcoords="offset points", fontsize=7, ha="left", va="bottom", color="0.25")
