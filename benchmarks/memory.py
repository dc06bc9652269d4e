"""Memory of MLP training: peak RSS of 100 steps, per framework, each in a fresh subprocess.

For each framework a child process imports it, builds the MLP 784-256-10 training step of the
benchmark suite (same weights, same batch of 64, SGD, CrossEntropyLoss) and records its resident
set size (RSS) at that point: the baseline, which includes the imports and the model. It then
resets the kernel's peak-RSS counter (``/proc/self/clear_refs``; where that is not allowed the
process-lifetime peak is used and the report says so), runs the steps, and reports

* peak: the highest RSS during the steps minus the baseline;
* growth: RSS after step 100 minus RSS after step 20 (should be close to zero: memory that
  grows step after step is a leak, e.g. graphs kept alive by reference cycles).

Usage: python benchmarks/memory.py [--steps 100] [--json]
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _rss_kib() -> int:
    rss = _status_kib("VmRSS")
    if rss is None:  # not Linux: fall back to the lifetime peak, the best we can read
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def child(framework: str, steps: int, mark: int) -> dict:
    T = importlib.import_module(framework)
    importlib.import_module(f"{framework}.nn")
    importlib.import_module(f"{framework}.optim")
    from hookgrad._bench import build_mlp_step

    step = build_mlp_step(T)
    base = _rss_kib()
    peak_reset = _reset_peak()
    rss = []
    for _ in range(steps):
        step()
        rss.append(_rss_kib())
    peak = _status_kib("VmHWM") if peak_reset else None
    if peak is None:
        peak = max([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss] + rss)
    mark = min(mark, steps)
    return {
        "framework": framework,
        "version": getattr(T, "__version__", "unknown"),
        "steps": steps,
        "baseline_kib": base,
        "peak_kib": peak,
        "peak_delta_kib": peak - base,
        "peak_counter_reset": peak_reset,
        "rss_at_mark_kib": rss[mark - 1],
        "rss_at_end_kib": rss[-1],
        "growth_kib": rss[-1] - rss[mark - 1],
        "mark_step": mark,
    }


def measure(framework: str, steps: int, mark: int) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", framework,
         "--steps", str(steps), "--mark", str(mark)],
        capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"framework": framework, "status": "unavailable", "reason": tail}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["status"] = "ok"
    return result


def _mib(kib: float) -> str:
    return f"{kib / 1024:.1f} MiB"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--mark", type=int, default=20, help="growth is measured from this step")
    p.add_argument("--json", action="store_true")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--subject", default="hookgrad", help=argparse.SUPPRESS)
    p.add_argument("--baseline", default="torch", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error("--steps must be at least 1")

    if args.child:
        print(json.dumps(child(args.child, args.steps, args.mark)))
        return 0

    results = [measure(fw, args.steps, args.mark) for fw in (args.subject, args.baseline)]
    report = {"workload": f"MLP 784-256-10 SGD step, batch 64, {args.steps} steps",
              "results": results}
    s, b = results
    if s["status"] == b["status"] == "ok" and b["peak_delta_kib"] > 0:
        report["peak_delta_ratio"] = s["peak_delta_kib"] / b["peak_delta_kib"]
    if args.json:
        print(json.dumps(report, indent=1))
        return 0

    print(f"memory: {report['workload']}, one fresh process per framework")
    print(f"{'framework':<12} {'after setup':>12} {'peak delta':>12} "
          f"{'growth ' + str(args.mark) + '->' + str(args.steps):>16}")
    for r in results:
        if r["status"] != "ok":
            print(f"{r['framework']:<12} unavailable: {r['reason']}")
            continue
        note = "" if r["peak_counter_reset"] else "  (peak counter not resettable: lifetime peak)"
        print(f"{r['framework']:<12} {_mib(r['baseline_kib']):>12} {_mib(r['peak_delta_kib']):>12} "
              f"{r['growth_kib']:>+12d} KiB{note}")
    if "peak_delta_ratio" in report:
        print(f"peak delta ratio {args.subject}/{args.baseline}: {report['peak_delta_ratio']:.2f}")
    print("peak delta: highest RSS during the steps minus RSS after imports and model "
          "construction; growth: RSS change between the two marks (flat is good).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
