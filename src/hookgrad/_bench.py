"""Side-by-side benchmarks: hookgrad against torch, in one process.

Every workload is written once, against a framework module ``T`` (``torch`` or ``hookgrad``),
and built on both frameworks with identical weights (generated in NumPy and loaded with
``load_state_dict``). Before anything is timed, each workload runs a couple of steps on both
frameworks and checks that the losses (and gradient sums where there is no optimizer step) agree
to a loose tolerance, so the two sides really compute the same thing.

Timing, per workload:

1. warm-up: every step function is called a few times (and for at least ``warmup_s`` seconds);
2. calibration: each step function gets its own inner loop count, so that one sample lasts
   about ``sample_s`` seconds (at least one call);
3. measurement: ``repeats`` rounds (twice as many for workloads judged by their hook overhead,
   a small difference of two noisy times); each round takes one sample of every variant of the
   workload, hookgrad then torch, so the two frameworks are interleaved and share whatever
   the machine was doing at that moment; a library's own variants run back to back, and
   every other round runs in reverse order, so that no sample always comes first. Before each
   switch of library the harness pauses ``settle_s`` (0.15 s): both libraries keep thread
   pools in this one process (torch's own, NumPy's OpenBLAS), and a pool whose workers are
   still spinning after its last call steals cores from the other. Without the pause, on a
   2-core machine, torch's MLP step measured 3.4x slower interleaved with hookgrad than alone,
   and hookgrad's got slower too. The first call of each sample is not timed: after a pause it
   runs with cold caches, which a training loop never sees.

Reported: the median per-call time of each framework, and the median and interquartile range
of the per-round ratio hookgrad/torch. Workloads with hooks also report each framework's own
hook overhead (the hooked step over the same framework's plain step, per round).

Threads: by default two tables are printed. The first has both libraries on one thread each, set
in-process (``torch.set_num_threads(1)`` and ``hookgrad.set_num_threads(1)``, which limits NumPy's
BLAS): the steadiest comparison on a small or shared machine. The second leaves each library at its
default (torch's intra-op pool; hookgrad's BLAS threads chosen per product by its size and by the
cores other processes leave free), as a user gets them out of the box. ``--threads one|default``
prints just one of them; ``--torch-threads N`` still overrides torch's count for the default table.
The header records the load average and warns when it is high.

The garbage collector stays enabled during timing, as in a real training loop; the median is
robust to the occasional collection pause that lands inside a sample.

Entry point: ``main(argv)`` (``python -m hookgrad bench [options]`` or ``benchmarks/run.py``).
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
import zlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

__all__ = ["main", "run_benchmarks", "WORKLOADS", "machine_info", "numpy_weights", "load_weights",
           "build_mlp_step"]

# Loose agreement tolerance for the pre-timing check (float32, different summation orders).
CHECK_RTOL = 2e-3
CHECK_ATOL = 1e-4


# ----------------------------------------------------------------------------------------------
# identical weights on both frameworks
# ----------------------------------------------------------------------------------------------

def numpy_weights(model: Any, tag: str) -> dict[str, np.ndarray]:
    """Deterministic NumPy values for every entry of ``model.state_dict()``.

    Each entry's values depend only on ``tag``, its name and its shape, so they are the same
    whichever framework built the model. Matrices and kernels get U(-1/sqrt(fan_in), +...),
    1-D weights (norm layers) get values near one, biases small values.
    """
    out = {}
    for name, t in model.state_dict().items():
        shape = tuple(t.shape)
        rng = np.random.default_rng(zlib.crc32(f"{tag}/{name}".encode()))
        if not t.is_floating_point():
            out[name] = np.zeros(shape, dtype=np.int64)
            continue
        if len(shape) >= 2:
            fan_in = int(np.prod(shape[1:]))
            bound = 1.0 / math.sqrt(fan_in)
            arr = rng.uniform(-bound, bound, size=shape)
        elif name.endswith("weight"):
            arr = 1.0 + rng.uniform(-0.1, 0.1, size=shape)
        else:
            arr = rng.uniform(-0.05, 0.05, size=shape)
        out[name] = arr.astype(np.float32)
    return out


def load_weights(T: Any, model: Any, weights: dict[str, np.ndarray]) -> None:
    """Copy NumPy arrays into ``model`` through the public ``load_state_dict`` API."""
    model.load_state_dict({k: T.tensor(v) for k, v in weights.items()})


class _WeightStore:
    """Weights generated from the first model built under a tag, reused for the others."""

    def __init__(self) -> None:
        self._by_tag: dict[str, dict[str, np.ndarray]] = {}

    def apply(self, T: Any, model: Any, tag: str) -> Any:
        if tag not in self._by_tag:
            self._by_tag[tag] = numpy_weights(model, tag)
        load_weights(T, model, self._by_tag[tag])
        return model


def _bench_data(tag: str, shape: tuple, kind: str = "normal", high: int = 10) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(tag.encode()))
    if kind == "int":
        return rng.integers(0, high, size=shape).astype(np.int64)
    return rng.standard_normal(shape).astype(np.float32)


# ----------------------------------------------------------------------------------------------
# workloads, written once against T
# ----------------------------------------------------------------------------------------------

def _mlp(T: Any) -> Any:
    nn = T.nn
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def _cnn(T: Any) -> Any:
    nn = T.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10),
    )


def _train_step(T: Any, model: Any, x: Any, y: Any) -> Callable[[], Any]:
    opt = T.optim.SGD(model.parameters(), lr=0.01)
    crit = T.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        out = model(x)
        loss = crit(out, y)
        loss.backward()
        opt.step()
        return loss

    return step


def _losses(step: Callable[[], Any], n: int = 2) -> list[float]:
    return [step().item() for _ in range(n)]


def build_mlp_step(T: Any, ws: _WeightStore | None = None) -> Callable[[], Any]:
    """One MLP 784-256-10 SGD training step on a fixed batch of 64 (also used by memory.py)."""
    ws = ws or _WeightStore()
    model = ws.apply(T, _mlp(T), "mlp")
    x = T.tensor(_bench_data("mlp/x", (64, 784)))
    y = T.tensor(_bench_data("mlp/y", (64,), "int"))
    return _train_step(T, model, x, y)


@dataclass
class Built:
    """What a workload builder returns for one framework."""
    steps: dict[str, Callable[[], Any]]  # variant name -> step; the first is the primary
    check: Callable[[], list[float]]     # values compared across frameworks before timing


def _checked_by_input_grad(step: Callable[[], Any], x: Any) -> Built:
    """A one-step workload whose step differentiates a loss w.r.t. the leaf ``x``: compared across
    frameworks by the loss and the sum and absolute sum of ``x.grad``."""
    def check():
        loss = step()
        return [loss.item(), x.grad.sum().item(), x.grad.abs().sum().item()]

    return Built({"step": step}, check)


def w_mlp(T, ws):
    step = build_mlp_step(T, ws)
    return Built({"step": step}, lambda: _losses(step))


def _hooked_mlp(T, ws, install):
    plain = build_mlp_step(T, ws)
    model = ws.apply(T, _mlp(T), "mlp")
    x = T.tensor(_bench_data("mlp/x", (64, 784)))
    y = T.tensor(_bench_data("mlp/y", (64,), "int"))
    calls = install(model)
    hooked = _train_step(T, model, x, y)

    def check():
        values = _losses(hooked)
        # the number of hook calls per step must match too
        before = calls[0]
        hooked()
        return values + [float(calls[0] - before)]

    return Built({"hooked": hooked, "plain": plain}, check)


def w_mlp_backward_hooks(T, ws):
    def install(model):
        calls = [0]

        def hook(module, grad_input, grad_output):
            calls[0] += 1

        for m in model.modules():  # the Sequential and each of its layers
            m.register_full_backward_hook(hook)
        return calls

    return _hooked_mlp(T, ws, install)


def w_mlp_forward_tensor_hooks(T, ws):
    def install(model):
        calls = [0]

        def tensor_hook(grad):
            calls[0] += 1

        def forward_hook(module, inputs, output):
            calls[0] += 1
            output.register_hook(tensor_hook)

        for m in model.children():  # every layer
            m.register_forward_hook(forward_hook)
        return calls

    return _hooked_mlp(T, ws, install)


def w_elementwise(T, ws):
    x = T.tensor(_bench_data("ew/x", (4, 4)), requires_grad=True)
    c = T.tensor(_bench_data("ew/c", (4, 4)))

    def step():
        x.grad = None
        y = x * c           # 1
        y = y + 0.5         # 2
        y = y.tanh()        # 3
        y = y * x           # 4
        y = y - c           # 5
        y = y.sigmoid()     # 6
        y = y / 1.5         # 7
        y = y.exp()         # 8
        y = y.sin()         # 9
        y = y.relu()        # 10
        loss = y.sum()
        loss.backward()
        return loss

    return _checked_by_input_grad(step, x)


def w_cnn(T, ws):
    model = ws.apply(T, _cnn(T), "cnn")
    x = T.tensor(_bench_data("cnn/x", (64, 1, 28, 28)))
    y = T.tensor(_bench_data("cnn/y", (64,), "int"))
    step = _train_step(T, model, x, y)
    return Built({"step": step}, lambda: _losses(step))


def _fwd_bwd(model, run):
    params = list(model.parameters())

    def step():
        model.zero_grad()
        loss = run()
        loss.backward()
        return loss

    def check():
        loss = step()
        return [loss.item(), sum(p.grad.abs().sum().item() for p in params)]

    return Built({"step": step}, check)


def w_transformer(T, ws):
    # dropout=0 so that both frameworks compute the same function; train mode (no fast path)
    layer = T.nn.TransformerEncoderLayer(d_model=128, nhead=4, dropout=0.0, batch_first=True)
    ws.apply(T, layer, "transformer")
    x = T.tensor(_bench_data("transformer/x", (16, 64, 128)))

    def run():
        out = layer(x)
        return (out * out).mean()

    return _fwd_bwd(layer, run)


def _block_input(T):
    return T.tensor(_bench_data("block/x", (16, 64, 128)))  # batch 16, seq 64, dim 128


def w_block_mha(T, ws):
    """Pre-LayerNorm transformer block with nn.MultiheadAttention (4 heads, GELU MLP 128->512)."""
    layer = T.nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=512, dropout=0.0,
                                         activation="gelu", batch_first=True, norm_first=True)
    ws.apply(T, layer, "block_mha")
    x = _block_input(T)

    def run():
        out = layer(x)
        return (out * out).mean()

    return _fwd_bwd(layer, run)


def _manual_block(T):
    nn, F = T.nn, T.nn.functional

    class Block(nn.Module):
        """The same block with attention written out: qkv projection, softmax(q k^T / sqrt d) v."""

        def __init__(self, dim=128, heads=4, hidden=512):
            super().__init__()
            self.heads = heads
            self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.fc1, self.fc2 = nn.Linear(dim, hidden), nn.Linear(hidden, dim)

        def forward(self, x):
            b, n, d = x.shape
            h = self.heads
            q, k, v = self.qkv(self.norm1(x)).reshape(b, n, 3, h, d // h).permute(2, 0, 3, 1, 4)
            att = F.softmax(q @ k.transpose(-2, -1) * (d // h) ** -0.5, dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(b, n, d))
            return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))

    return Block()


def w_block_manual(T, ws):
    block = ws.apply(T, _manual_block(T), "block_manual")
    x = _block_input(T)

    def run():
        out = block(x)
        return (out * out).mean()

    return _fwd_bwd(block, run)


def w_lstm(T, ws):
    lstm = ws.apply(T, T.nn.LSTM(64, 128), "lstm")
    x = T.tensor(_bench_data("lstm/x", (32, 32, 64)))  # (seq, batch, input)

    def run():
        out, (h, c) = lstm(x)
        return (out * out).mean()

    return _fwd_bwd(lstm, run)


def w_cnn_inference(T, ws):
    model = ws.apply(T, _cnn(T), "cnn")
    x = T.tensor(_bench_data("cnn/x256", (256, 1, 28, 28)))

    def step():
        with T.no_grad():
            return model(x)

    def check():
        out = step()
        return [(out * out).mean().item(), out.abs().sum().item()]

    return Built({"step": step}, check)


def w_conv3d(T, ws):
    conv = ws.apply(T, T.nn.Conv3d(3, 8, 3, padding=1), "conv3d")
    x = T.tensor(_bench_data("conv3d/x", (4, 3, 16, 16, 16)), requires_grad=True)

    def run():
        x.grad = None
        return T.relu(conv(x)).sum()

    built = _fwd_bwd(conv, run)
    check = built.check
    # the input's gradient too: conv3d's backward to its input is half of the work
    built.check = lambda: check() + [x.grad.abs().sum().item()]
    return built


def w_interpolate(T, ws):
    F = T.nn.functional
    x = T.tensor(_bench_data("interpolate/x", (8, 16, 32, 32)), requires_grad=True)
    # weights for the two outputs, so that the gradients are not all ones
    wb = T.tensor(_bench_data("interpolate/wb", (8, 16, 64, 64)))
    wn = T.tensor(_bench_data("interpolate/wn", (8, 16, 64, 64)))

    def step():
        x.grad = None
        bilinear = F.interpolate(x, size=(64, 64), mode="bilinear", align_corners=False)
        nearest = F.interpolate(x, scale_factor=2, mode="nearest")
        loss = (bilinear * wb).sum() + (nearest * wn).sum()
        loss.backward()
        return loss

    return _checked_by_input_grad(step, x)


def w_lstm_packed(T, ws):
    rnn_utils = T.nn.utils.rnn
    lstm = ws.apply(T, T.nn.LSTM(64, 128), "lstm_packed")
    x = T.tensor(_bench_data("lstm_packed/x", (32, 16, 64)))  # (max len, batch, input)
    # varied lengths from 32 down to 4, in decreasing order as enforce_sorted wants
    lengths = T.tensor(np.linspace(32, 4, 16).round().astype(np.int64))

    def run():
        packed = rnn_utils.pack_padded_sequence(x, lengths)
        out, (h, c) = lstm(packed)
        padded, _ = rnn_utils.pad_packed_sequence(out)
        return (padded * padded).sum() / lengths.sum() + (h * c).mean()

    return _fwd_bwd(lstm, run)


N_CALLS = 1000


def w_module_call(T, ws):
    class Ident(T.nn.Module):
        def forward(self, x):
            return x

    m = Ident()
    x = T.tensor(_bench_data("call/x", (4,)))
    forward = m.forward

    def call():
        for _ in range(N_CALLS):
            m(x)

    def direct():
        for _ in range(N_CALLS):
            forward(x)

    def check():
        return [float(m(x) is x), float(forward(x) is x)]

    return Built({"call": call, "forward": direct}, check)


@dataclass
class Workload:
    number: int
    name: str
    title: str
    build: Callable[[Any, _WeightStore], Built]
    target: float | None = None          # limit for the median ratio hookgrad/torch
    own_overhead_target: float | None = None  # limit for hookgrad's hooked/plain ratio


WORKLOADS = [
    Workload(1, "mlp", "MLP 784-256-10 train step, batch 64", w_mlp, target=0.9),
    Workload(2, "mlp_backward_hooks", "MLP step, full backward hook on every module",
             w_mlp_backward_hooks, own_overhead_target=1.05),
    Workload(3, "mlp_forward_tensor_hooks", "MLP step, forward hook + tensor hook per layer",
             w_mlp_forward_tensor_hooks, own_overhead_target=1.10),
    Workload(4, "elementwise", "10 elementwise ops on 4x4, fwd+bwd", w_elementwise, target=1.2),
    Workload(5, "cnn", "CNN train step, batch 64 of 28x28", w_cnn, target=0.9),
    Workload(6, "transformer", "TransformerEncoderLayer d128 h4 seq64 b16, fwd+bwd",
             w_transformer, target=1.1),
    Workload(7, "lstm", "LSTM in64 h128 seq32 b32, fwd+bwd", w_lstm, target=1.3),
    Workload(8, "cnn_inference", "CNN inference (no_grad), batch 256", w_cnn_inference,
             target=0.9),
    Workload(9, "module_call", f"module __call__ x{N_CALLS}, no hooks (vs forward)",
             w_module_call),
    Workload(10, "block_mha", "pre-LN block, nn.MultiheadAttention, GELU MLP, fwd+bwd",
             w_block_mha, target=1.1),
    Workload(11, "block_manual", "pre-LN block, hand-written attention, fwd+bwd",
             w_block_manual, target=1.1),
    Workload(12, "conv3d", "Conv3d 3->8 k3, batch 4 of 16^3, ReLU, sum, fwd+bwd", w_conv3d,
             target=1.5),
    Workload(13, "interpolate", "interpolate bilinear + nearest, 8x16x32x32 -> 64x64, fwd+bwd",
             w_interpolate, target=1.5),
    Workload(14, "lstm_packed", "LSTM in64 h128 over packed batch 16, lengths 32..4, fwd+bwd",
             w_lstm_packed, target=1.5),
]


# ----------------------------------------------------------------------------------------------
# machine description
# ----------------------------------------------------------------------------------------------

def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _numpy_blas() -> str:
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg["Build Dependencies"]["blas"]
        text = f"{blas.get('name')} {blas.get('version')}"
        extra = blas.get("openblas configuration")
        return f"{text} ({extra})" if extra else text
    except Exception as exc:  # noqa: BLE001 - old NumPy or a build without the dict
        return f"unknown ({type(exc).__name__})"


def _git_commit() -> str | None:
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here,
                             capture_output=True, text=True, timeout=5)
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=here, capture_output=True, text=True, timeout=5)
        return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def machine_info(frameworks: dict[str, Any] | None = None) -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numpy_blas": _numpy_blas(),
        "thread_env": {k: os.environ[k] for k in
                       ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
                       if k in os.environ},
        "git_commit": _git_commit(),
        "loadavg": _loadavg(),
    }
    for label, T in (frameworks or {}).items():
        if T is None:
            continue
        info[f"{label}_version"] = getattr(T, "__version__", "unknown")
        if T.__name__ == "torch":
            info["torch_num_threads"] = T.get_num_threads()
            info["torch_num_interop_threads"] = T.get_num_interop_threads()
    return info


# ----------------------------------------------------------------------------------------------
# timing
# ----------------------------------------------------------------------------------------------

@dataclass
class Settings:
    repeats: int = 25
    warmup_calls: int = 3
    warmup_s: float = 0.2
    sample_s: float = 0.2  # long enough that the pause before each sample (cold caches) weighs little
    calibration_calls: int = 3
    settle_s: float = 0.15  # OpenBLAS workers spin ~2**28 cycles (~0.1 s) before parking
    torch_threads_set: bool = False  # True when --torch-threads changed torch's default
    threads: str = "default"  # "one": both libraries limited to one thread in-process


def _warm_and_calibrate(fn: Callable[[], Any], s: Settings) -> int:
    t0 = time.perf_counter()
    calls = 0
    while calls < s.warmup_calls or time.perf_counter() - t0 < s.warmup_s:
        fn()
        calls += 1
    best = math.inf
    for _ in range(s.calibration_calls):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return max(1, int(round(s.sample_s / max(best, 1e-9))))


def _sample(fn: Callable[[], Any], number: int) -> float:
    fn()  # untimed: after the settle pause, caches and branch predictors are cold
    perf = time.perf_counter
    t0 = perf()
    for _ in range(number):
        fn()
    return (perf() - t0) / number


def _summary(values: list[float]) -> dict[str, float]:
    q25, q50, q75 = np.percentile(np.asarray(values, dtype=np.float64), [25, 50, 75])
    return {"median": float(q50), "q25": float(q25), "q75": float(q75),
            "iqr": float(q75 - q25), "n": len(values)}


def _close(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(
        math.isfinite(x) and math.isfinite(y) and abs(x - y) <= CHECK_ATOL + CHECK_RTOL * abs(y)
        for x, y in zip(a, b))


def _reason(exc: BaseException) -> str:
    first = str(exc).splitlines()[0][:160] if str(exc) else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def run_workload(w: Workload, subject: Any, baseline: Any, s: Settings,
                 subject_error: str | None = None) -> dict[str, Any]:
    res: dict[str, Any] = {"number": w.number, "name": w.name, "title": w.title,
                           "target": w.target, "own_overhead_target": w.own_overhead_target}
    ws = _WeightStore()
    try:
        base = w.build(baseline, ws)
    except Exception as exc:  # noqa: BLE001
        res.update(status="error", reason=f"baseline failed to build: {_reason(exc)}")
        return res
    if subject is None:
        res.update(status="unavailable", reason=subject_error or "subject not importable")
        return res
    try:
        subj = w.build(subject, ws)
        subj_check = subj.check()
    except Exception as exc:  # noqa: BLE001 - missing pieces must not crash the run
        res.update(status="unavailable", reason=_reason(exc))
        return res
    base_check = base.check()
    res["check"] = {"subject": subj_check, "baseline": base_check,
                    "rtol": CHECK_RTOL, "atol": CHECK_ATOL}
    if not _close(subj_check, base_check):
        res.update(status="mismatch",
                   reason=f"check values differ: subject {subj_check} vs baseline {base_check}")
        return res

    variants = list(base.steps)
    sides = (("subject", subj), ("baseline", base))
    try:
        numbers = {(side, v): _warm_and_calibrate(b.steps[v], s)
                   for v in variants for side, b in sides}
        times: dict[tuple[str, str], list[float]] = {k: [] for k in numbers}
        # one library's variants back to back (their ratio, the hook overhead, then compares samples
        # taken a moment apart), then the other library's; odd rounds run in reverse order
        # (A B C D, D C B A, ...), so that no sample always comes first
        order = [(side, b, v) for side, b in sides for v in variants]
        # a hook overhead is a small difference of two noisy times: twice the rounds for its median
        rounds = s.repeats * (2 if w.own_overhead_target is not None else 1)
        for r in range(rounds):
            previous = None
            for side, b, v in (order if r % 2 == 0 else order[::-1]):
                if s.settle_s and side != previous:
                    time.sleep(s.settle_s)  # let the other library's idle workers park
                previous = side
                times[(side, v)].append(_sample(b.steps[v], numbers[(side, v)]))
    except Exception as exc:  # noqa: BLE001
        res.update(status="error", reason=f"failed while timing: {_reason(exc)}")
        return res

    primary = variants[0]
    res["status"] = "ok"
    res["variants"] = variants
    res["numbers"] = {f"{side}/{v}": n for (side, v), n in numbers.items()}
    res["times"] = {side: {v: _summary(times[(side, v)]) for v in variants}
                    for side, _ in sides}
    res["samples"] = {side: {v: times[(side, v)] for v in variants} for side, _ in sides}
    ratios = [a / b for a, b in zip(times[("subject", primary)], times[("baseline", primary)])]
    res["ratio"] = _summary(ratios)
    if len(variants) > 1:
        second = variants[1]
        res["own_overhead"] = {
            side: _summary([a / b for a, b in zip(times[(side, primary)], times[(side, second)])])
            for side, _ in sides}
        for side, _ in sides:  # the intrinsic cost: fastest hooked sample over fastest plain one
            res["own_overhead"][side]["best"] = min(times[(side, primary)]) / min(times[(side, second)])
    if w.target is not None:
        res["pass"] = res["ratio"]["median"] <= w.target
    elif w.own_overhead_target is not None:
        res["pass"] = res["own_overhead"]["subject"]["median"] <= w.own_overhead_target
    else:
        res["pass"] = None
    return res


def _import(name: str) -> tuple[Any, str | None]:
    try:
        T = importlib.import_module(name)
        for sub in ("nn", "optim"):
            importlib.import_module(f"{name}.{sub}")
        return T, None
    except Exception as exc:  # noqa: BLE001
        return None, f"cannot import {name}: {_reason(exc)}"


def select(only: list[str] | None) -> list[Workload]:
    if not only:
        return list(WORKLOADS)
    wanted = [n.strip() for item in only for n in item.split(",") if n.strip()]
    chosen = []
    for n in wanted:
        match = [w for w in WORKLOADS if w.name == n or str(w.number) == n]
        if not match:
            names = ", ".join(f"{w.number}={w.name}" for w in WORKLOADS)
            raise SystemExit(f"unknown workload {n!r}; choose from {names}")
        if match[0] not in chosen:
            chosen.append(match[0])
    return chosen


def run_benchmarks(workloads: list[Workload], subject_name: str = "hookgrad",
                   baseline_name: str = "torch", settings: Settings | None = None,
                   progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    s = settings or Settings()
    baseline, err = _import(baseline_name)
    if baseline is None:
        raise SystemExit(err)
    subject, subject_error = _import(subject_name)
    restore = _limit_threads(s.threads, (subject, baseline))
    try:
        return _run_all(workloads, subject_name, baseline_name, subject, subject_error, baseline, s,
                        progress)
    finally:
        restore()


def _limit_threads(mode: str, frameworks) -> Callable[[], None]:
    """With mode "one", each framework to one thread (``set_num_threads(1)``: torch's intra-op
    pool; hookgrad's BLAS); returns what puts the previous counts back."""
    if mode != "one":
        return lambda: None
    before = []
    for T in frameworks:
        if T is not None and hasattr(T, "set_num_threads"):
            before.append((T, T.get_num_threads()))
            T.set_num_threads(1)

    def restore():
        for T, n in before:
            T.set_num_threads(n)

    return restore


def _run_all(workloads, subject_name, baseline_name, subject, subject_error, baseline, s,
             progress) -> dict[str, Any]:
    report: dict[str, Any] = {
        "subject": subject_name, "baseline": baseline_name,
        "machine": machine_info({"subject": subject, "baseline": baseline}),
        "threads_in_use": {label: T.get_num_threads() for label, T in
                           (("subject", subject), ("baseline", baseline))
                           if T is not None and hasattr(T, "get_num_threads")},
        "settings": {"repeats": s.repeats, "warmup_calls": s.warmup_calls,
                     "warmup_s": s.warmup_s, "sample_s": s.sample_s, "settle_s": s.settle_s,
                     "torch_threads_set": s.torch_threads_set, "threads": s.threads,
                     "gc": "enabled"},
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "workloads": [],
    }
    for w in workloads:
        if progress:
            progress(f"[{w.number}] {w.name} ...")
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            # the hooked root module sees an input that does not require grad; both frameworks
            # warn about it (the cost of the check stays in the timing, only the text is hidden)
            warnings.filterwarnings("ignore", message="Full backward hook is firing")
            res = run_workload(w, subject, baseline, s, subject_error)
        res["wall_s"] = round(time.perf_counter() - t0, 2)
        report["workloads"].append(res)
    report["loadavg_end"] = _loadavg()
    return report


# ----------------------------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------------------------

def _fmt_time(sec: float) -> str:
    if sec >= 1.0:
        return f"{sec:.3f} s"
    if sec >= 1e-3:
        return f"{sec * 1e3:.3f} ms"
    return f"{sec * 1e6:.2f} us"


def _fmt_ratio(r: dict[str, float]) -> str:
    return f"{r['median']:.2f} [{r['q25']:.2f}-{r['q75']:.2f}]"


def format_report(rep: dict[str, Any]) -> str:
    m = rep["machine"]
    sname, bname = rep["subject"], rep["baseline"]
    if sname == bname:
        sname = f"{sname}(subject)"
    if rep["settings"].get("threads") == "one":
        threads_note = "both libraries set to one thread in-process"
    elif rep["settings"].get("torch_threads_set"):
        threads_note = "set by --torch-threads"
    else:
        threads_note = "defaults, not changed"
    in_use = rep.get("threads_in_use", {})
    title = ("ONE THREAD EACH" if rep["settings"].get("threads") == "one"
             else "EACH LIBRARY'S DEFAULT THREADS")
    lines = [
        f"== {title}: " + ", ".join(f"{rep[k]} {v}" for k, v in in_use.items()) + " ==",
        f"hookgrad benchmarks: {sname} vs {bname}, one process, interleaved "
        f"({rep['settings']['repeats']} rounds, twice that for hook overheads; "
        f"{rep['settings'].get('settle_s', 0)} s pause before each switch of library; "
        f"started {rep['started_utc']})",
        f"machine: {m['cpu']}, {m['logical_cpus']} logical CPUs ({m['usable_cpus']} usable), "
        f"{m['platform']}",
        f"python {m['python']}, numpy {m['numpy']} [{m['numpy_blas']}], "
        f"{bname} {m.get('baseline_version')}, {sname} {m.get('subject_version')}, "
        f"commit {m.get('git_commit')}",
        f"torch threads: {m.get('torch_num_threads')} intra-op / "
        f"{m.get('torch_num_interop_threads')} inter-op "
        f"({threads_note}); "
        f"thread env: {m['thread_env'] or 'none set'}",
    ]
    cpus = m.get("usable_cpus") or m.get("logical_cpus") or 1
    loads = [x for x in (m.get("loadavg"), rep.get("loadavg_end")) if x]
    if loads:
        lines.append(f"load average (1/5/15 min) at start {loads[0]}"
                     + (f", at end {loads[-1]}" if len(loads) > 1 else ""))
        if max(x[0] for x in loads) > 0.75 * cpus:
            lines.append(f"WARNING: the machine was busy (load above {0.75 * cpus:.1f} on {cpus} "
                         "CPUs): timings are unreliable; multi-threaded pools (torch's and "
                         "OpenBLAS's) suffer most. For stable numbers on a small or shared "
                         "machine run with OMP_NUM_THREADS=1.")
    lines.append("")
    hdr = (f"{'#':>2}  {'workload':<26} {sname:>12} {bname:>12}  "
           f"{'ratio [IQR]':<18} {'target':<14} result")
    lines += [hdr, "-" * len(hdr)]
    for r in rep["workloads"]:
        head = f"{r['number']:>2}  {r['name']:<26}"
        if r["status"] != "ok":
            lines.append(f"{head} {r['status']}: {r['reason']}")
            continue
        primary = r["variants"][0]
        ts, tb = r["times"]["subject"][primary], r["times"]["baseline"][primary]
        if r["target"] is not None:
            target = f"<= {r['target']:.1f}"
        elif r["own_overhead_target"] is not None:
            target = f"own <= +{(r['own_overhead_target'] - 1) * 100:.0f}%"
        else:
            target = "-"
        result = "-" if r["pass"] is None else ("PASS" if r["pass"] else "FAIL")
        lines.append(f"{head} {_fmt_time(ts['median']):>12} {_fmt_time(tb['median']):>12}  "
                     f"{_fmt_ratio(r['ratio']):<18} {target:<14} {result}")
        if "own_overhead" in r:
            oo = r["own_overhead"]
            second = r["variants"][1]
            if r["name"] == "module_call":
                per = {side: (r["times"][side][primary]["median"],
                              r["times"][side][second]["median"]) for side in oo}
                lines.append(
                    "      per call: " + "; ".join(
                        f"{lab} {c / N_CALLS * 1e6:.2f} us vs forward {f / N_CALLS * 1e6:.2f} us "
                        f"(+{(c - f) / N_CALLS * 1e6:.2f} us, x{oo[side]['median']:.2f})"
                        for side, lab in (("subject", sname), ("baseline", bname))
                        for c, f in [per[side]]))
            else:
                lines.append(
                    f"      own hook overhead ({primary}/{second}): " + "; ".join(
                        f"{lab} {(oo[side]['median'] - 1) * 100:+.1f}% "
                        f"[{(oo[side]['q25'] - 1) * 100:+.1f}%.."
                        f"{(oo[side]['q75'] - 1) * 100:+.1f}%], best-of-rounds "
                        f"{(oo[side]['best'] - 1) * 100:+.1f}%"
                        for side, lab in (("subject", sname), ("baseline", bname))))
    lines += ["",
              "times: median per call; ratio: median of per-round ratios "
              f"{sname}/{bname} with its interquartile range; own hook overhead: hooked step "
              "over the same framework's plain step, per round (the verdict), and fastest sample "
              "over fastest sample (best-of-rounds: the cost without the machine's noise)."]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------
# profiling one side
# ----------------------------------------------------------------------------------------------

def _short_path(path: str) -> str:
    for marker in ("site-packages/", "/src/", "/lib/python"):
        i = path.rfind(marker)
        if i >= 0:
            return path[i + len(marker):]
    return path


def profile_workload(w: Workload, framework: str = "hookgrad", seconds: float = 2.0,
                     top: int = 25) -> str:
    """cProfile the primary step of ``w`` on one framework; a table of the hotspots.

    Shares are of the total profiled time: ``cum`` includes callees, ``own`` does not.
    """
    import cProfile
    import pstats

    T, err = _import(framework)
    if T is None:
        return f"[{w.number}] {w.name}: {err}"
    try:
        built = w.build(T, _WeightStore())
    except Exception as exc:  # noqa: BLE001
        return f"[{w.number}] {w.name}: unavailable: {_reason(exc)}"
    fn = next(iter(built.steps.values()))
    number = _warm_and_calibrate(fn, Settings(sample_s=seconds))
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(number):
        fn()
    prof.disable()
    raw = pstats.Stats(prof).stats  # (file, line, func) -> (prim calls, calls, own, cum, callers)
    total = sum(v[2] for v in raw.values()) or 1e-12
    rows = []
    for (file, line, func), (_, ncalls, own, cum, _) in raw.items():
        where = func if file == "~" else f"{_short_path(file)}:{line}({func})"
        rows.append((where, ncalls / number, own / total, cum / total))
    out = [f"[{w.number}] {w.name} on {framework}: {number} calls profiled, "
           f"{total / number * 1e3:.3f} ms per call under the profiler"]
    for title, key in (("by cumulative share", 3), ("by own share", 2)):
        out.append(f"  {title}:")
        out.append(f"    {'cum':>6} {'own':>6} {'calls/step':>10}  function")
        for where, calls, own, cum in sorted(rows, key=lambda r: -r[key])[:top]:
            out.append(f"    {cum:6.1%} {own:6.1%} {calls:10.1f}  {where}")
    return "\n".join(out)


# ----------------------------------------------------------------------------------------------
# scaling: how the cost grows with the size of the work
# ----------------------------------------------------------------------------------------------

SCALING_BATCHES = (1, 4, 16, 64, 256, 1024)
SCALING_WIDTHS = (64, 256, 1024, 4096)
SCALING_CNN_BATCHES = (1, 4, 16, 64, 256)


def _mlp_sized(batch: int, width: int) -> Callable[[Any, _WeightStore], Built]:
    def build(T, ws):
        nn = T.nn
        model = ws.apply(T, nn.Sequential(nn.Linear(784, width), nn.ReLU(), nn.Linear(width, 10)),
                         f"mlp{width}")
        x = T.tensor(_bench_data(f"mlp/x{batch}", (batch, 784)))
        y = T.tensor(_bench_data(f"mlp/y{batch}", (batch,), "int"))
        step = _train_step(T, model, x, y)
        return Built({"step": step}, lambda: _losses(step))
    return build


def _cnn_sized(batch: int) -> Callable[[Any, _WeightStore], Built]:
    def build(T, ws):
        model = ws.apply(T, _cnn(T), "cnn")
        x = T.tensor(_bench_data(f"cnn/x{batch}", (batch, 1, 28, 28)))
        y = T.tensor(_bench_data(f"cnn/y{batch}", (batch,), "int"))
        step = _train_step(T, model, x, y)
        return Built({"step": step}, lambda: _losses(step))
    return build


def scaling_workloads() -> list[tuple[str, int, int, Workload]]:
    """(family, batch, width, workload) for every point of the scaling grid."""
    out = []
    for width in SCALING_WIDTHS:
        for batch in SCALING_BATCHES:
            title = f"MLP 784-{width}-10 train step, batch {batch}"
            out.append(("mlp", batch, width, Workload(0, f"mlp_b{batch}_h{width}", title,
                                                      _mlp_sized(batch, width), target=None)))
    for batch in SCALING_CNN_BATCHES:
        out.append(("cnn", batch, 0, Workload(0, f"cnn_b{batch}", f"CNN train step, batch {batch}",
                                              _cnn_sized(batch), target=None)))
    return out


def run_scaling(s: Settings, progress: Callable[[str], None] | None = None,
                families: tuple[str, ...] = ("mlp", "cnn")) -> dict[str, Any]:
    baseline, err = _import("torch")
    if baseline is None:
        raise SystemExit(err)
    subject, subject_error = _import("hookgrad")
    restore = _limit_threads(s.threads, (subject, baseline))
    try:
        rows = []
        info = machine_info({"subject": subject, "baseline": baseline})
        for family, batch, width, w in scaling_workloads():
            if family not in families:
                continue
            if progress:
                progress(f"{w.name} ...")
            res = run_workload(w, subject, baseline, s, subject_error)
            row = {"family": family, "batch": batch, "width": width, "status": res["status"]}
            if res["status"] == "ok":
                row.update(hookgrad=res["times"]["subject"]["step"]["median"],
                           torch=res["times"]["baseline"]["step"]["median"],
                           ratio=res["ratio"]["median"])
            else:
                row["reason"] = res.get("reason")
            rows.append(row)
    finally:
        restore()
    return {"machine": info, "threads": s.threads, "loadavg_end": _loadavg(), "rows": rows,
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def format_scaling(rep: dict[str, Any]) -> str:
    m = rep["machine"]
    lines = [f"scaling, {'one thread each' if rep['threads'] == 'one' else 'default threads'}; "
             f"load average at start {m.get('loadavg')}, at end {rep.get('loadavg_end')}", "",
             f"{'workload':<16} {'batch':>6} {'hookgrad':>11} {'torch':>11} {'ratio':>6}"]
    for r in rep["rows"]:
        name = f"MLP H={r['width']}" if r["family"] == "mlp" else "CNN"
        if r["status"] == "ok":
            lines.append(f"{name:<16} {r['batch']:>6} {_fmt_time(r['hookgrad']):>11} "
                         f"{_fmt_time(r['torch']):>11} {r['ratio']:>6.2f}")
        else:
            lines.append(f"{name:<16} {r['batch']:>6} {r['status']}: {r.get('reason')}")
    by = {(r["family"], r["batch"], r["width"]): r.get("ratio") for r in rep["rows"]}
    widths = [w for w in SCALING_WIDTHS if any(("mlp", b, w) in by for b in SCALING_BATCHES)]
    if widths:
        lines += ["", "ratio hookgrad/torch, MLP 784-H-10 step (rows H, columns batch size)",
                  f"{'H':>6} " + "".join(f"{b:>7}" for b in SCALING_BATCHES)]
        for w in widths:
            lines.append(f"{w:>6} " + "".join(
                f"{by[('mlp', b, w)]:>7.2f}" if by.get(("mlp", b, w)) else f"{'-':>7}"
                for b in SCALING_BATCHES))
    return "\n".join(lines)


def plot_scaling(rep: dict[str, Any], path: str) -> None:
    """Both libraries' step times against the batch size, log-log: one panel for the MLP widths,
    one for the CNN."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    ok = [r for r in rep["rows"] if r["status"] == "ok"]
    series = [("mlp", w, f"MLP H={w}") for w in SCALING_WIDTHS] + [("cnn", 0, "CNN")]
    for i, (family, width, label) in enumerate(series):
        pts = sorted((r["batch"], r["hookgrad"], r["torch"]) for r in ok
                     if r["family"] == family and r["width"] == width)
        if not pts:
            continue
        ax = axes[0] if family == "mlp" else axes[1]
        b, h, t = zip(*pts)
        c = colors[i % len(colors)]
        ax.plot(b, [v * 1e3 for v in h], "o-", color=c, label=f"{label} hookgrad")
        ax.plot(b, [v * 1e3 for v in t], "s--", color=c, alpha=0.7, label=f"{label} torch")
    threads = "one thread each" if rep["threads"] == "one" else "default threads"
    for ax, title in zip(axes, ("MLP 784-H-10 training step", "CNN training step (28x28)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch size")
        ax.set_ylabel("time per step (ms)")
        ax.set_title(f"{title}, {threads}")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_lines():
            ax.legend(fontsize=7, ncol=2)
    fig.suptitle("hookgrad (solid) and torch 2.13 (dashed) on the CPU: time per step against batch size")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def scaling_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="hookgrad bench scaling",
        description="MLP step across batch sizes and hidden widths, CNN step across batch sizes, "
                    "hookgrad against torch, interleaved; a table and optionally a plot.")
    p.add_argument("--plot", metavar="PNG", help="write the log-log plot of both libraries' times")
    p.add_argument("--threads", choices=("one", "default"), default="one",
                   help="one thread each (default) or each library's default")
    p.add_argument("--repeats", type=int, default=7, help="rounds per point (default 7)")
    p.add_argument("--quick", action="store_true", help="a smoke run: tiny samples")
    p.add_argument("--only", choices=("mlp", "cnn"), help="one family only")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = p.parse_args(argv)
    if args.quick:
        s = Settings(repeats=1, warmup_calls=1, warmup_s=0.0, sample_s=0.001,
                     calibration_calls=1, settle_s=0.0)
    else:
        s = Settings(repeats=args.repeats, warmup_s=0.1, sample_s=0.1, settle_s=0.1)
    s.threads = args.threads
    families = (args.only,) if args.only else ("mlp", "cnn")
    rep = run_scaling(s, lambda msg: print(msg, file=sys.stderr, flush=True), families)
    print(json.dumps(rep, indent=1) if args.json else format_scaling(rep))
    if args.plot:
        plot_scaling(rep, args.plot)
    return 1 if any(r["status"] != "ok" for r in rep["rows"]) else 0


# ----------------------------------------------------------------------------------------------
# per-sample gradients: hookgrad.tools.PerSampleGradients against Opacus's GradSampleModule on torch
# ----------------------------------------------------------------------------------------------

def _per_sample_step(T: Any, model: Any, x: Any, y: Any) -> Built:
    """Forward, backward and every parameter's per-sample gradients (``p.grad_sample``), batch 64:
    hookgrad's PerSampleGradients on hookgrad, Opacus's GradSampleModule on torch."""
    crit = T.nn.CrossEntropyLoss()
    if T.__name__ == "torch":
        from opacus import GradSampleModule

        wrapped = GradSampleModule(model, batch_first=True, loss_reduction="mean")

        def clear():
            wrapped.zero_grad(set_to_none=True)     # Opacus's override also drops grad_sample
    else:
        from hookgrad.tools import PerSampleGradients

        wrapped = model
        tool = PerSampleGradients(model, loss_reduction="mean")

        def clear():
            model.zero_grad(set_to_none=True)
            tool.clear()

    params = list(model.parameters())

    def step():
        clear()
        loss = crit(wrapped(x), y)
        loss.backward()
        return loss

    def check():
        loss = step()
        return [loss.item()] + [p.grad_sample.abs().sum().item() for p in params]

    return Built({"step": step}, check)


def w_persample_mlp(T, ws):
    model = ws.apply(T, _mlp(T), "mlp")
    return _per_sample_step(T, model, T.tensor(_bench_data("mlp/x", (64, 784))), T.tensor(_bench_data("mlp/y", (64,), "int")))


def w_persample_cnn(T, ws):
    model = ws.apply(T, _cnn(T), "cnn")
    return _per_sample_step(T, model, T.tensor(_bench_data("cnn/x", (64, 1, 28, 28))),
                            T.tensor(_bench_data("cnn/y", (64,), "int")))


PERSAMPLE_WORKLOADS = [
    Workload(1, "persample_mlp", "MLP 784-256-10, batch 64: fwd+bwd+per-sample grads", w_persample_mlp,
             target=1.5),
    Workload(2, "persample_cnn", "CNN 28x28, batch 64: fwd+bwd+per-sample grads", w_persample_cnn, target=1.5),
]


def persample_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="hookgrad bench persample",
        description="Per-sample gradients at batch 64: hookgrad (PerSampleGradients) against torch with "
                    "Opacus's GradSampleModule, interleaved in one process (needs opacus).")
    p.add_argument("--threads", choices=("one", "default", "both"), default="both",
                   help="one thread each, each library's default, or a table of each (default)")
    p.add_argument("--repeats", type=int, default=15, help="rounds (default 15)")
    p.add_argument("--quick", action="store_true", help="a smoke run: tiny samples")
    p.add_argument("--json", action="store_true", help="print the report(s) as JSON")
    args = p.parse_args(argv)
    if args.quick:
        s = Settings(repeats=2, warmup_calls=1, warmup_s=0.0, sample_s=0.001, calibration_calls=1, settle_s=0.0)
    else:
        s = Settings(repeats=args.repeats)
    reports = []
    for mode in (["one", "default"] if args.threads == "both" else [args.threads]):
        s.threads = mode
        rep = run_benchmarks(PERSAMPLE_WORKLOADS, settings=s,
                             progress=lambda msg: print(msg, file=sys.stderr, flush=True))
        reports.append(rep)
        if not args.json:
            print(format_report(rep) + "\n", flush=True)
    if args.json:
        print(json.dumps(reports[0] if len(reports) == 1 else {"tables": reports}, indent=1))
    return 1 if any(r["status"] in ("mismatch", "error") for rep in reports for r in rep["workloads"]) else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["scaling"]:
        return scaling_main(argv[1:])
    if argv[:1] == ["ddp"]:
        from ._bench_ddp import main as ddp_main
        return ddp_main(argv[1:])
    if argv[:1] == ["persample"]:
        return persample_main(argv[1:])
    p = argparse.ArgumentParser(
        prog="hookgrad bench",
        description="Time the same workloads on hookgrad and torch in one process, interleaved. "
                    "'bench scaling --help': how the cost grows with the batch size; "
                    "'bench ddp --help': data-parallel scaling over MPI ranks; "
                    "'bench persample --help': per-sample gradients against Opacus.")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="workload name or number (comma-separated or repeated); default: all")
    p.add_argument("--repeats", type=int, default=None,
                   help="measurement rounds per workload (default 25, 5 with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="short warm-up and short samples: a smoke run, not a measurement")
    p.add_argument("--json", action="store_true", help="print the full report as JSON")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--profile", action="store_true",
                   help="instead of timing, cProfile hookgrad's side of the selected workloads")
    p.add_argument("--profile-top", type=int, default=25, metavar="N",
                   help="rows per profile table (default 25)")
    p.add_argument("--torch-threads", type=int, default=None, metavar="N",
                   help="call torch.set_num_threads(N) first (default: leave torch's default; "
                        "use on a busy machine, where torch's thread pool degrades badly)")
    p.add_argument("--settle", type=float, default=None, metavar="S",
                   help="pause S seconds before each sample so that the other library's worker "
                        "threads stop spinning (default 0.15; 0 with --quick)")
    p.add_argument("--threads", choices=("one", "default", "both"), default="both",
                   help="one: both libraries on one thread (set in-process); default: each "
                        "library's own default; both (the default): a table of each, one first")
    p.add_argument("--subject", default="hookgrad", help=argparse.SUPPRESS)
    p.add_argument("--baseline", default="torch", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.list:
        for w in WORKLOADS:
            print(f"{w.number}  {w.name:<26} {w.title}")
        return 0
    if args.quick:
        s = Settings(repeats=5, warmup_calls=1, warmup_s=0.0, sample_s=0.002,
                     calibration_calls=1, settle_s=0.0)
    else:
        s = Settings()
    if args.repeats is not None:
        if args.repeats < 1:
            p.error("--repeats must be at least 1")
        s.repeats = args.repeats
    if args.settle is not None:
        s.settle_s = args.settle
    workloads = select(args.only)
    if args.torch_threads is not None:
        import torch
        torch.set_num_threads(args.torch_threads)
        s.torch_threads_set = True
    if args.profile:
        for w in workloads:
            print(profile_workload(w, args.subject, seconds=0.2 if args.quick else 2.0,
                                   top=args.profile_top), flush=True)
        return 0

    def progress(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    modes = ["one", "default"] if args.threads == "both" else [args.threads]
    reports = []
    for mode in modes:
        s.threads = mode
        progress(f"-- {mode} thread{'s' if mode == 'default' else ''} --")
        rep = run_benchmarks(workloads, args.subject, args.baseline, s, progress)
        reports.append(rep)
        if not args.json:
            print(format_report(rep) + ("\n" if mode != modes[-1] else ""), flush=True)
    if args.json:
        print(json.dumps(reports[0] if len(reports) == 1 else {"tables": reports}, indent=1))
    bad = any(r["status"] in ("mismatch", "error") for rep in reports for r in rep["workloads"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
