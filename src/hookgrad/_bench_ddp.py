"""``hookgrad bench ddp``: data-parallel scaling, 1 rank against N ranks (DistributedDataParallel on MPI).

The workloads are the bench's MLP and CNN training steps (same models, weights and SGD step) at one
global batch (256 by default). With 1 rank, one process trains on the whole batch without DDP; with
N ranks (started through mpiexec), every rank trains its 1/N of the batch under
DistributedDataParallel. Every rank runs one BLAS thread, so N ranks use N cores.

Reported per workload and rank count: the median step time (rank 0's clock, with the ranks lined up
by a barrier before each timed sample), the throughput in samples per second, the scaling
efficiency (throughput with N ranks over N times the throughput with 1), and the overlap: the share
of the gradient all-reduce time that was hidden behind backward. Each bucket's all-reduce time is
measured by itself (the same buffer, after a barrier, with nothing else running); a step hides the
time of the buckets whose reduction was already complete when its backward ended (DDP records which),
and the overlap is the mean hidden share. The report also gives two raw timings: how long the
reduction went on after the last rank's backward ended (the ranks share one clock on one machine),
and rank 0's whole wait at the end of backward, which adds the time it waited for a slower rank. On
a busy machine both are mostly scheduling delay, which is why the overlap is counted per bucket.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

__all__ = ["main"]

FAMILIES = ("mlp", "cnn")
DEFAULT_BUCKET_CAP_MB = 0.0001


# ---- inside one rank -----------------------------------------------------------------------------------
def _workload(hookgrad, family: str, batch: int, rank: int, world: int):
    from ._bench import _WeightStore, _cnn, _bench_data, _mlp
    ws = _WeightStore()
    model = ws.apply(hookgrad, _mlp(hookgrad) if family == "mlp" else _cnn(hookgrad), family)
    shape = (batch, 784) if family == "mlp" else (batch, 1, 28, 28)
    x = _bench_data(f"ddp/{family}/x{batch}", shape)
    y = _bench_data(f"ddp/{family}/y{batch}", (batch,), "int")
    share = slice(rank * batch // world, (rank + 1) * batch // world)
    return model, hookgrad.tensor(x[share]), hookgrad.tensor(y[share])


def _standalone_allreduce_s(ddp, repeats: int) -> list:
    """Each bucket's all-reduce time alone (median of ``repeats``), with nothing to hide behind."""
    from .distributed import distributed_c10d as dist
    buffers = [np.ones(b.numel, dtype=b.dtype) for b in ddp._buckets]
    times = [[] for _ in buffers]
    for _ in range(repeats):
        for i, buffer in enumerate(buffers):
            dist.barrier()
            started = time.perf_counter()
            dist._wait_all([dist._start_allreduce_sum(buffer)])
            times[i].append(time.perf_counter() - started)
    return [statistics.median(t) for t in times]


def run_rank(family: str, batch: int, seconds: float, warmup: int, bucket_cap_mb: float | None) -> dict | None:
    import hookgrad
    import hookgrad.distributed as dist
    from hookgrad.nn.parallel import DistributedDataParallel

    hookgrad.set_num_threads(1)
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    model, x, y = _workload(hookgrad, family, batch, rank, world)
    ddp = DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb) if world > 1 else None
    trained = ddp if ddp is not None else model
    opt = hookgrad.optim.SGD(trained.parameters(), lr=0.01)
    crit = hookgrad.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        crit(trained(x), y).backward()
        opt.step()

    for _ in range(warmup):
        step()
    # calibrate on rank 0 so that one sample lasts about 0.2 s; everyone uses its count
    dist.barrier()
    started = time.perf_counter()
    step()
    once = time.perf_counter() - started
    counts = [max(1, int(0.2 / max(once, 1e-6)))]
    dist.broadcast_object_list(counts, src=0)
    samples, waits, early = [], [], []
    deadline = time.perf_counter() + seconds
    while True:
        dist.barrier()
        started = time.perf_counter()
        for _ in range(counts[0]):
            step()
            if ddp is not None:
                waits.append(ddp._last_pass_times)
                early.append(list(ddp._last_buckets_reduced_early))
        samples.append((time.perf_counter() - started) / counts[0])
        # rank 0's clock decides for everyone, so that all ranks run the same number of steps
        go_on = [len(samples) < 5 or (time.perf_counter() < deadline and len(samples) < 60)]
        dist.broadcast_object_list(go_on, src=0)
        if not go_on[0]:
            break
    per_bucket_s = _standalone_allreduce_s(ddp, 20) if ddp is not None else None
    allreduce_s = sum(per_bucket_s) if ddp is not None else None
    exposed = None
    if ddp is not None:
        # perf_counter is the machine's monotonic clock, shared by the ranks of one machine: the
        # communication exposed in a step is how long the reduction went on after the LAST rank's
        # backward ended (rank 0 waiting for a slower rank is skew, not communication)
        everyone = [None] * world
        dist.all_gather_object(everyone, waits)
        exposed = [max(0.0, done - max(times[i][0] for times in everyone)) for i, (_, done) in enumerate(waits)]
    result = None
    if rank == 0:
        step_s = statistics.median(samples)
        result = {"family": family, "ranks": world, "batch": batch, "step_s": step_s,
                  "throughput": batch / step_s, "samples": len(samples), "steps_per_sample": counts[0]}
        if ddp is not None:
            exposed_s = statistics.median(exposed)
            wait_s = statistics.median(done - end for end, done in waits)
            hidden = [sum(per_bucket_s[i] for i in done) / allreduce_s for done in early] if allreduce_s > 0 else [0.0]
            result.update(buckets=len(ddp._buckets), allreduce_s=allreduce_s, bucket_allreduce_s=per_bucket_s,
                          exposed_wait_s=exposed_s, end_wait_s=wait_s, overlap=statistics.mean(hidden),
                          overlap_from_exposed=min(1.0, max(0.0, 1.0 - exposed_s / allreduce_s)) if allreduce_s > 0
                          else None,
                          gradient_bytes=sum(b.numel * b.dtype.itemsize for b in ddp._buckets))
    dist.destroy_process_group()
    return result


# ---- the launcher ---------------------------------------------------------------------------------------
def _launch(ranks: int, family: str, batch: int, seconds: float, warmup: int, bucket_cap_mb) -> dict:
    from ._run import find_mpiexec
    mpiexec = find_mpiexec()
    if mpiexec is None:
        raise RuntimeError("no mpiexec: pip install 'hookgrad[distributed]' (mpi4py and mpich)")
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        env[var] = "1"
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "result.json")
        command = [mpiexec, "-n", str(ranks), sys.executable, "-m", "hookgrad._bench_ddp", "--worker", out,
                   "--family", family, "--batch", str(batch), "--seconds", str(seconds), "--warmup", str(warmup)]
        if bucket_cap_mb is not None:
            command += ["--bucket-cap-mb", str(bucket_cap_mb)]
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        if done.returncode != 0 or not os.path.exists(out):
            raise RuntimeError(f"{ranks}-rank {family} run failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        with open(out) as f:
            return json.load(f)


def run(families=FAMILIES, ranks: int = 2, batch: int = 256, seconds: float = 3.0, warmup: int = 3,
        progress=None, bucket_cap_mb: float | None = None) -> dict:
    from ._bench import machine_info
    rows = []
    for family in families:
        one = _launch(1, family, batch, seconds, warmup, None)
        if progress:
            progress(f"{family}: 1 rank {one['step_s'] * 1e3:.1f} ms/step")
        many = _launch(ranks, family, batch, seconds, warmup, bucket_cap_mb)
        many["efficiency"] = many["throughput"] / (ranks * one["throughput"])
        if progress:
            progress(f"{family}: {ranks} ranks {many['step_s'] * 1e3:.1f} ms/step")
        rows.append({"family": family, "one": one, "many": many})
    return {"machine": machine_info(), "ranks": ranks, "batch": batch, "bucket_cap_mb": bucket_cap_mb, "rows": rows}


def format_report(rep: dict) -> str:
    m = rep["machine"]
    n = rep["ranks"]
    lines = [f"DistributedDataParallel scaling: 1 against {n} ranks (MPI, one BLAS thread per rank), global batch "
             f"{rep['batch']}, bucket_cap_mb {rep['bucket_cap_mb'] if rep['bucket_cap_mb'] is not None else 'default'}",
             f"machine: {m.get('cpu', '?')}, {m.get('usable_cpus', '?')} usable cores, load average {m.get('loadavg')}",
             "",
             f"{'workload':<10} {'1 rank':>10} {f'{n} ranks':>10} {'samples/s 1':>12} {f'samples/s {n}':>12} "
             f"{'efficiency':>10} {'all-reduce':>10} {'overlap':>8} {'exposed':>9} {'end wait':>9} {'buckets':>7}"]
    for row in rep["rows"]:
        one, many = row["one"], row["many"]
        overlap = "-" if many.get("overlap") is None else f"{many['overlap'] * 100:.0f}%"
        lines.append(f"{row['family'].upper():<10} {one['step_s'] * 1e3:>8.1f}ms {many['step_s'] * 1e3:>8.1f}ms "
                     f"{one['throughput']:>12.0f} {many['throughput']:>12.0f} {many['efficiency']:>10.2f} "
                     f"{many['allreduce_s'] * 1e3:>8.2f}ms {overlap:>8} {many['exposed_wait_s'] * 1e3:>7.2f}ms "
                     f"{many['end_wait_s'] * 1e3:>7.2f}ms {many['buckets']:>7}")
    lines.append("")
    lines.append("efficiency = samples/s with N ranks / (N x samples/s with 1 rank); all-reduce = the buckets' "
                 "all-reduce time measured alone; overlap = the share of that time whose buckets were already reduced "
                 "when rank 0's backward ended; exposed = how long the reduction went on after the last rank's "
                 "backward ended; end wait = rank 0's whole wait at the end of backward (waiting for a slower rank "
                 "included)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="hookgrad bench ddp",
        description="DistributedDataParallel on MPI: the bench's MLP and CNN training steps on 1 rank and on N "
                    "ranks at the same global batch; throughput, scaling efficiency and the share of the "
                    "all-reduce hidden behind backward (needs hookgrad[distributed]).")
    p.add_argument("--ranks", type=int, default=2, help="ranks to compare with one (default 2)")
    p.add_argument("--batch", type=int, default=256, help="global batch size (default 256)")
    p.add_argument("--only", choices=FAMILIES, help="one workload only")
    p.add_argument("--seconds", type=float, default=3.0, help="timed seconds per run (default 3)")
    p.add_argument("--bucket-cap-mb", type=float, default=DEFAULT_BUCKET_CAP_MB,
                   help=f"DDP's bucket_cap_mb (default {DEFAULT_BUCKET_CAP_MB}: about one bucket per parameter. "
                        f"The bench's models hold 0.08 MB (CNN) and 0.8 MB (MLP) of gradients, which DDP's own "
                        f"default puts in one bucket that can only be sent once backward is over; 0 means DDP's "
                        f"default)")
    p.add_argument("--quick", action="store_true", help="a smoke run: short timing")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--worker", metavar="OUT", help=argparse.SUPPRESS)
    p.add_argument("--family", choices=FAMILIES, help=argparse.SUPPRESS)
    p.add_argument("--warmup", type=int, default=3, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        result = run_rank(args.family, args.batch, args.seconds, args.warmup, args.bucket_cap_mb or None)
        if result is not None:
            with open(args.worker, "w") as f:
                json.dump(result, f)
        return 0
    if args.ranks < 2:
        p.error("--ranks must be at least 2")
    if args.batch % args.ranks:
        p.error(f"--batch {args.batch} must divide evenly over {args.ranks} ranks")
    seconds, warmup = (0.3, 1) if args.quick else (args.seconds, 3)
    families = (args.only,) if args.only else FAMILIES
    rep = run(families, args.ranks, args.batch, seconds, warmup,
              progress=lambda msg: print(msg, file=sys.stderr, flush=True), bucket_cap_mb=args.bucket_cap_mb or None)
    print(json.dumps(rep, indent=1) if args.json else format_report(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
