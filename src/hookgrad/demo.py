"""The hookgrad demo: a small CNN learns the bundled 8x8 handwritten digits while the hook tools
watch it, then writes what they saw.

    python -m hookgrad demo [--epochs N] [--seed S] [--out DIR] [--no-plots] [--inject-nan [PHASE]]

Outputs in ``--out`` (default ``runs/demo``): ``gradient_flow.png`` and ``activations.png``
(unless ``--no-plots`` or matplotlib is missing), ``hook_trace.json`` (open it at
https://ui.perfetto.dev) and ``report.md``.

``--inject-nan`` makes one layer emit NaN halfway through training (mid-epoch) (``forward``: ``conv2``'s output;
``backward``: ``fc1``'s gradient with respect to its input); the non-finite sentinel names the
module, the phase and the step, and the demo stops cleanly.

Exit codes: 0 the run finished (with ``--inject-nan``: the sentinel caught the injected NaN);
1 an error: ``--inject-nan`` was given but nothing was caught, or this hookgrad build lacks what
the demo needs; 2 bad options; 3 training produced non-finite values without ``--inject-nan``.

The training code is written against a framework module ``T`` (``run_demo(T, argv)``): the CLI
passes hookgrad; the same code runs on torch.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .data import load_digits
from .tools._common import fmt, format_table, label

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NONFINITE = 0, 1, 2, 3
NAN_TARGETS = {"forward": "conv2", "backward": "fc1"}
HELD_OUT = 360           # images kept for the held-out accuracy (20% of 1,797)
TRACE_EVENT_LIMIT = 200_000
TRACE_EVERY = 15         # 3 steps per epoch (the first of each among them): about 1 MB for 8 epochs


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--epochs", type=_positive_int, default=8, help="passes over the training images (default 8)")
    parser.add_argument("--seed", type=int, default=0, help="seed for the split, the weights and the batch order (default 0)")
    parser.add_argument("--out", default=os.path.join("runs", "demo"), metavar="DIR",
                        help="folder for the plots, the trace and the report (default runs/demo)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots (no matplotlib needed)")
    parser.add_argument("--inject-nan", nargs="?", const="forward", choices=sorted(NAN_TARGETS), metavar="PHASE",
                        help="halfway through training make a layer emit NaN in the forward pass (default) or "
                             "the backward pass, to watch the sentinel catch it")
    parser.add_argument("--batch-size", type=_positive_int, default=32, help="images per step (default 32)")
    parser.add_argument("--lr", type=_positive_float, default=1e-2,
                        help="initial Adam learning rate, decayed to 0 along a cosine over the epochs (default 0.01)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar, one line per epoch")
    parser.add_argument("--trace-every", type=_positive_int, default=TRACE_EVERY, metavar="N",
                        help=f"keep the hook calls of every N-th step in hook_trace.json (default {TRACE_EVERY}; 1 keeps "
                             "all); phases and steps are kept for every step")
    return parser


def make_parser(prog: str = "hookgrad demo") -> argparse.ArgumentParser:
    return add_arguments(argparse.ArgumentParser(
        prog=prog, description="Train a small CNN on the bundled 8x8 handwritten digits while hookgrad's hook "
                               "tools watch it; write plots, a Perfetto trace and a report.",
        epilog="Exit codes: 0 finished (or the injected NaN was caught), 1 error (an injected NaN went unnoticed), "
               "2 bad options, 3 training produced NaN/Inf on its own."))


@dataclass
class DemoResult:
    exit_code: int
    accuracy: float | None = None
    steps: int = 0
    seconds: float = 0.0
    stopped: str | None = None          # the sentinel's message when training was stopped
    files: dict[str, str] = field(default_factory=dict)


# ---- data and model ------------------------------------------------------------------------------
def split_digits(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(train images, train labels, held-out images, held-out labels); images scaled to 0..1 with a
    channel axis, shape (N, 1, 8, 8)."""
    images, labels = load_digits()
    order = np.random.default_rng(seed).permutation(len(labels))
    x = (images / 16.0).astype(np.float32)[:, None, :, :]
    test, train = order[:HELD_OUT], order[HELD_OUT:]
    return x[train], labels[train], x[test], labels[test]


def build_model(T: Any) -> Any:
    """A small CNN; one ReLU module serves all three activations, so it is called three times per
    forward pass (the tools report each call)."""
    nn = T.nn

    class DigitsCNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
            self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)
            self.pool = nn.MaxPool2d(2)
            self.act = nn.ReLU()
            self.flatten = nn.Flatten()
            self.fc1 = nn.Linear(32 * 2 * 2, 64)
            self.fc2 = nn.Linear(64, 10)

        def forward(self, x):
            x = self.pool(self.act(self.conv1(x)))       # 16 x 4 x 4
            x = self.pool(self.act(self.conv2(x)))       # 32 x 2 x 2
            x = self.act(self.fc1(self.flatten(x)))
            return self.fc2(x)

    return DigitsCNN()


def _inject_nan(model: Any, phase: str, when: int, sentinel: Any) -> Any:
    """Make one layer emit NaN in training step ``when`` (counted from 0); returns the hook handle."""
    layer = getattr(model, NAN_TARGETS[phase])
    if phase == "forward":
        def poison_output(module, args, output):
            return output * float("nan") if module.training and sentinel.steps == when else None
        return layer.register_forward_hook(poison_output, prepend=True)

    def poison_grad(module, grad_input, grad_output):
        if module.training and sentinel.steps == when:
            return tuple(None if g is None else g * float("nan") for g in grad_input)
        return None
    return layer.register_full_backward_hook(poison_grad, prepend=True)


def _accuracy(T: Any, model: Any, x: np.ndarray, y: np.ndarray, batch: int = 512) -> float:
    correct = 0
    with T.no_grad():
        for i in range(0, len(y), batch):
            logits = model(T.tensor(x[i:i + batch]))
            correct += int((logits.argmax(dim=1) == T.tensor(y[i:i + batch])).sum().item())
    return correct / len(y)


class _Progress:
    """tqdm when installed (and wanted), else one printed line per epoch."""

    def __init__(self, enabled: bool, total: int, epoch: int, epochs: int) -> None:
        self.bar = None
        self.desc = f"epoch {epoch}/{epochs}"
        self.steps, self.total = 0, total
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=total, desc=self.desc, unit="step", leave=True, dynamic_ncols=True)

    def update(self, loss: float, acc: float) -> None:
        self.steps += 1
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{loss:.4f}", acc=f"{acc:.3f}", refresh=False)
            self.bar.update(1)

    def close(self, loss: float, acc: float, test_acc: float | None) -> None:
        if self.bar is not None:
            if test_acc is not None:
                self.bar.set_postfix(loss=f"{loss:.4f}", acc=f"{acc:.3f}", held_out=f"{test_acc:.3f}")
            self.bar.close()
        elif self.steps == 0:
            print(f"{self.desc}: stopped before its first step", flush=True)
        else:
            held = "" if test_acc is None else f", held-out accuracy {test_acc:.3f}"
            partial = "" if self.steps == self.total else f" (stopped after {self.steps} of {self.total} steps)"
            print(f"{self.desc}: loss {loss:.4f}, training accuracy {acc:.3f}{held}{partial}", flush=True)


# ---- the run -------------------------------------------------------------------------------------
def run_demo(T: Any, args: argparse.Namespace | Sequence[str] | None = None) -> DemoResult:
    """Train and report on framework ``T`` (hookgrad or torch). ``args``: parsed options or a list of
    command-line words."""
    if args is None or not isinstance(args, argparse.Namespace):
        args = make_parser().parse_args(list(args or []))
    from .tools import ActivationCapture, GradientFlow, HookTrace, NonFiniteError, NonFiniteSentinel

    framework = getattr(T, "__name__", str(T))
    os.makedirs(args.out, exist_ok=True)
    x_train, y_train, x_test, y_test = split_digits(args.seed)
    T.manual_seed(args.seed)
    model = build_model(T)
    optimizer = T.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = T.nn.functional.cross_entropy
    steps_per_epoch = math.ceil(len(y_train) / args.batch_size)
    total_steps = steps_per_epoch * args.epochs
    # halfway through training, in the middle of an epoch
    inject_at = (total_steps + steps_per_epoch) // 2 if args.inject_nan else None
    rng = np.random.default_rng(args.seed + 1)
    result = DemoResult(EXIT_OK)
    history: list[tuple[int, float, float, float | None]] = []   # epoch, loss, train acc, held-out acc
    started = time.perf_counter()

    with warnings.catch_warnings():
        if args.inject_nan:  # NumPy announces the NaN arithmetic the demo asks for
            warnings.filterwarnings("ignore", message="invalid value encountered", category=RuntimeWarning)
        with HookTrace(model, optimizer, max_events=TRACE_EVENT_LIMIT, every=args.trace_every) as trace, \
                GradientFlow(model, optimizer=optimizer) as flow, \
                ActivationCapture(model, mode="stats", optimizer=optimizer) as acts, \
                NonFiniteSentinel(model, optimizer=optimizer) as sentinel:
            poison = _inject_nan(model, args.inject_nan, inject_at, sentinel) if args.inject_nan else None
            try:
                for epoch in range(1, args.epochs + 1):
                    trace.mark(f"epoch {epoch}")
                    for group in optimizer.param_groups:    # cosine decay, one value per epoch
                        group["lr"] = args.lr * 0.5 * (1 + math.cos(math.pi * (epoch - 1) / args.epochs))
                    model.train()
                    order = rng.permutation(len(y_train))
                    progress = _Progress(not args.no_progress, steps_per_epoch, epoch, args.epochs)
                    seen = correct = 0
                    loss_sum = 0.0
                    try:
                        for i in range(0, len(order), args.batch_size):
                            idx = order[i:i + args.batch_size]
                            xb, yb = T.tensor(x_train[idx]), T.tensor(y_train[idx])
                            logits = model(xb)
                            loss = loss_fn(logits, yb)
                            optimizer.zero_grad()
                            loss.backward()
                            optimizer.step()
                            loss_value = float(loss.item())
                            loss_sum += loss_value * len(idx)
                            correct += int((logits.argmax(dim=1) == yb).sum().item())
                            seen += len(idx)
                            result.steps += 1
                            progress.update(loss_sum / seen, correct / seen)
                    finally:
                        with acts.paused():
                            model.eval()
                            test_acc = _accuracy(T, model, x_test, y_test) if seen == len(order) else None
                        progress.close(loss_sum / max(seen, 1), correct / max(seen, 1), test_acc)
                    history.append((epoch, loss_sum / seen, correct / seen, test_acc))
            except NonFiniteError as exc:
                result.stopped = str(exc)
                result.exit_code = EXIT_OK if args.inject_nan else EXIT_NONFINITE
                sys.stdout.flush()
                print(f"\nStopped: {exc}.", file=sys.stderr)
                if args.inject_nan:
                    print(f"(NaN injected on purpose into {NAN_TARGETS[args.inject_nan]!r}, {args.inject_nan} "
                          f"pass, at step {inject_at}: the sentinel found it.)", file=sys.stderr)
            finally:
                if poison is not None:
                    poison.remove()
            if args.inject_nan and result.stopped is None:
                result.exit_code = EXIT_ERROR
                print(f"error: NaN injected at step {inject_at} but the sentinel did not report it", file=sys.stderr)
        result.seconds = time.perf_counter() - started
        if result.stopped is None:
            result.accuracy = history[-1][3] if history else None
        else:
            with acts.paused():
                model.eval()
                result.accuracy = _accuracy(T, model, x_test, y_test)
        marks = {(epoch - 1) * steps_per_epoch: f"epoch {epoch}" if epoch == 1 else str(epoch) for epoch in range(1, args.epochs + 1)
                 if (epoch - 1) * steps_per_epoch < max(result.steps, 1)}
        result.files = _write_outputs(args, framework, result, history, flow, acts, trace, sentinel,
                                      len(y_train), len(y_test), inject_at, marks)
    _print_summary(result, flow, acts)
    return result


# ---- outputs -------------------------------------------------------------------------------------
def _write_outputs(args, framework, result, history, flow, acts, trace, sentinel, n_train, n_test, inject_at, marks):
    files = {}
    if not args.no_plots:
        try:
            files["gradient_flow"] = flow.plot(os.path.join(args.out, "gradient_flow.png"), marks=marks,
                                               title=f"Gradient flow per layer and step ({framework}, digits CNN)")
            files["activations"] = acts.plot(os.path.join(args.out, "activations.png"), marks=marks,
                                             title=f"Layer outputs per call and step ({framework}, digits CNN)")
        except ImportError as exc:
            print(f"note: plots skipped: {exc}", file=sys.stderr)
    files["hook_trace"] = trace.save(os.path.join(args.out, "hook_trace.json"))
    files["report"] = os.path.join(args.out, "report.md")
    with open(files["report"], "w", encoding="utf-8") as f:
        f.write(_report(args, framework, result, history, flow, acts, trace, sentinel, n_train, n_test, inject_at, files))
    return files


def _layer_rows(flow, acts, trace):
    hook_ms: dict[str, float] = {}
    for row in trace.summary():
        hook_ms[row["owner"]] = hook_ms.get(row["owner"], 0.0) + row["total_ms"]
    rows = []
    for r in flow.summary():
        name = r["module"]
        s = acts.latest_stats(name) or {}
        param_ms = sum(ms for owner, ms in hook_ms.items() if owner.startswith(name + "."))
        rows.append({"layer": name, "type": r["type"], "calls": r["calls_per_step"],
                     "grad_out_mean": r["grad_output_mean"], "grad_out_last": r["grad_output_last"],
                     "grad_in_last": r["grad_input_last"], "param_mean": r["param_mean"],
                     "param_last": r["param_last"], "act_std": s.get("std"), "zero_frac": s.get("frac_zero"),
                     "hook_ms": hook_ms.get(name, 0.0) + param_ms})
    return rows


def _report(args, framework, result, history, flow, acts, trace, sentinel, n_train, n_test, inject_at, files):
    lines = ["# hookgrad demo: a small CNN on the UCI handwritten digits", ""]
    version = getattr(sys.modules.get(framework), "__version__", "?")
    lines += [f"- framework: `{framework}` {version}",
              f"- data: UCI ML hand-written digits, 8x8 pixels, {n_train + n_test} images "
              f"({n_train} for training, {n_test} held out), CC BY 4.0",
              "- model: conv(1→16, 3x3) → ReLU → maxpool 2 → conv(16→32, 3x3) → ReLU → maxpool 2 → "
              "linear(128→64) → ReLU → linear(64→10); one ReLU module serves all three activations",
              f"- training: Adam, lr {args.lr} with cosine decay per epoch, batch {args.batch_size}, {args.epochs} epoch(s) planned, "
              f"{result.steps} step(s) run, seed {args.seed}, {result.seconds:.1f} s with all tools attached", ""]
    lines += ["## Result", ""]
    if result.accuracy is not None:
        lines.append(f"**Held-out accuracy: {100 * result.accuracy:.2f}%** ({round(result.accuracy * n_test)}/{n_test}).")
    if result.stopped:
        lines.append("")
        lines.append(f"**Training stopped by the non-finite sentinel:** {result.stopped}.")
        if args.inject_nan:
            lines.append(f"The NaN was injected on purpose (`--inject-nan {args.inject_nan}`) into "
                         f"`{NAN_TARGETS[args.inject_nan]}` at step {inject_at}.")
    elif args.inject_nan:
        lines.append(f"A NaN was injected at step {inject_at} but the sentinel did not report it.")
    else:
        lines.append("")
        lines.append("The non-finite sentinel found no NaN or Inf in any output or gradient.")
    if history:
        lines += ["", "| epoch | training loss | training accuracy | held-out accuracy |", "|---:|---:|---:|---:|"]
        for epoch, loss, acc, test in history:
            lines.append(f"| {epoch} | {loss:.4f} | {acc:.4f} | {'-' if test is None else f'{test:.4f}'} |")
    lines += ["", "## What was measured", "",
              "- **Gradient flow** (`hookgrad.tools.GradientFlow`): a full backward hook on every layer records "
              "the 2-norm of the gradient arriving at its output (`grad_output`) and of the gradient it passes "
              "to its input (`grad_input`); a post-accumulate-grad hook on every parameter records the norm of "
              "its `.grad`. One value per layer and step; a module called several times per step contributes "
              "the norm over all its calls. `conv1` has no `grad_input`: its input, the images, needs no gradient.",
              "- **Activations** (`hookgrad.tools.ActivationCapture`, mode `stats`): a forward hook on every layer "
              "keeps the mean, standard deviation, min, max and fraction of exact zeros of each output, per call.",
              "- **Non-finite sentinel** (`hookgrad.tools.NonFiniteSentinel`): forward, full backward and "
              "post-accumulate-grad hooks on every module check for NaN/Inf and name the first module that "
              "produced them.",
              f"- **Hook trace** (`hookgrad.tools.HookTrace`): every hook call above, timed: {len(trace)} calls, "
              f"{sum(r['total_ms'] for r in trace.summary()):.0f} ms in hooks. `hook_trace.json` opens in "
              "https://ui.perfetto.dev or chrome://tracing: a track of steps, one of phases (forward, backward, "
              "optimizer.step) and the hook calls, each with its step, owner, hook, tool and tensor shapes. "
              + (f"It keeps the hook calls of every {trace.every}th step ({len(trace.events)} of {len(trace)}; "
                 "`--trace-every 1` keeps all) and the phases of every step." if trace.every > 1 else
                 "It keeps every hook call" + (f" up to the first {trace.max_events}." if trace.dropped else ".")), ""]
    lines += ["## Per layer", "",
              "Gradient norms: mean over steps and value at the last step; for a module called several times per "
              "step, of the norm over all its calls. Output std and zero fraction: the module's last call in the "
              "last training step (`act`: its third call, `pool`: its second); `activations.png` plots every call "
              "separately. Hook time: all hooks owned by the layer or its parameters.", "",
              "| layer | type | calls/step | mean ‖grad_out‖ | last ‖grad_out‖ | last ‖grad_in‖ | mean ‖param grad‖ "
              "| last ‖param grad‖ | output std (last call) | zero fraction (last call) | hook time (ms) |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in _layer_rows(flow, acts, trace):
        zero = "-" if r["zero_frac"] is None else f"{r['zero_frac']:.3f}"
        std = "-" if r["act_std"] is None else f"{r['act_std']:.3g}"
        lines.append(f"| `{r['layer']}` | {r['type']} | {r['calls']} | {fmt(r['grad_out_mean'])} | "
                     f"{fmt(r['grad_out_last'])} | {fmt(r['grad_in_last'])} | {fmt(r['param_mean'])} | "
                     f"{fmt(r['param_last'])} | {std} | {zero} | {r['hook_ms']:.1f} |")
    kinds: dict[str, list[float]] = {}
    for row in trace.summary():
        acc = kinds.setdefault(row["kind"], [0, 0.0])
        acc[0] += row["count"]
        acc[1] += row["total_ms"]
    lines += ["", "## Hook calls by kind", "", "| kind | calls | total (ms) | mean (µs) |", "|---|---:|---:|---:|"]
    for kind, (count, total) in kinds.items():
        lines.append(f"| {kind} | {count} | {total:.1f} | {1000 * total / max(count, 1):.1f} |")
    lines += ["", "## Files", ""]
    for key, path in files.items():
        lines.append(f"- `{os.path.basename(path)}`" + {"gradient_flow": ": gradient norms per module call and step, in data-flow order (log colour scale)",
                                                        "activations": ": output std and zero fraction per module call and step",
                                                        "hook_trace": ": Chrome trace of every hook call",
                                                        "report": ": this report"}.get(key, ""))
    return "\n".join(lines) + "\n"


def _print_summary(result: DemoResult, flow, acts) -> None:
    print()
    if result.accuracy is not None:
        print(f"held-out accuracy: {100 * result.accuracy:.2f}%  ({result.steps} steps, {result.seconds:.1f} s)")
    if result.stopped:
        print(f"stopped by the sentinel: {result.stopped}")
    out = os.path.dirname(result.files.get("report", "")) or "."
    print(f"outputs in {os.path.abspath(out)}:")
    for path in result.files.values():
        print(f"  {os.path.basename(path)}")
    rows = []
    for r in flow.summary():
        stats = acts.latest_stats(r["module"]) or {}
        rows.append([label(r["module"]), r["type"], fmt(r["grad_output_mean"]), fmt(r["param_mean"]),
                     fmt(stats.get("frac_zero"), ".3f")])
    print()
    print(format_table(["layer", "type", "mean |grad_out|", "mean |param grad|", "zero frac, last call"], rows))


def main(argv: Sequence[str] | argparse.Namespace | None = None) -> int:
    """Run the demo on hookgrad; returns the exit code."""
    args = argv if isinstance(argv, argparse.Namespace) else make_parser().parse_args(argv)
    try:
        import hookgrad
        import hookgrad.nn  # noqa: F401
        import hookgrad.optim  # noqa: F401
    except ImportError as exc:
        print(f"hookgrad demo: this hookgrad build cannot run the demo ({exc})", file=sys.stderr)
        return EXIT_ERROR
    return run_demo(hookgrad, args).exit_code


if __name__ == "__main__":
    sys.exit(main())
