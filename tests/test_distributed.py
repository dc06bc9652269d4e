"""hookgrad.distributed and DistributedDataParallel on 2 MPI ranks.

The checks that need a running job live in tests/_distributed_worker.py: one ``mpiexec -n 2`` launch
runs all of them (each rank with one BLAS thread) and every check becomes a test here. The failure
tests launch their own small jobs: a rank that raises must end the whole job, non-zero, with that
rank's error, well within the time-out. What needs no job (errors before init, DistributedSampler's
order against torch's) runs in this process.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "tests", "_distributed_worker.py")
TIMEOUT_S = 300

HAVE_MPI = importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="mpi4py is not installed: pip install 'hookgrad[distributed]' "
                                                    "(mpi4py and mpich) to run the MPI tests")


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.join(ROOT, "src"), env.get("PYTHONPATH")) if p)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
        env[var] = "1"
    env.pop("RANK", None)
    env.pop("WORLD_SIZE", None)
    return env


def _mpiexec() -> str:
    from hookgrad._run import find_mpiexec
    found = find_mpiexec()
    if found is None:
        pytest.skip("mpi4py is installed but no mpiexec was found (pip install mpich)")
    return found


def _launch(args: list, timeout: float = TIMEOUT_S, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, env=_env(), timeout=timeout, cwd=cwd)


def _worker_checks() -> list:
    sys.path.insert(0, os.path.dirname(WORKER))
    try:
        import _distributed_worker
    except ImportError:
        return []
    finally:
        sys.path.remove(os.path.dirname(WORKER))
    return _distributed_worker.CHECKS


@pytest.fixture(scope="module")
def job_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("mpi")
    done = _launch([_mpiexec(), "-n", "2", sys.executable, WORKER, str(out)])
    results = []
    for rank in range(2):
        path = out / f"rank{rank}.json"
        assert path.exists(), f"rank {rank} wrote no results (exit {done.returncode}):\n{done.stderr[-4000:]}"
        results.append(json.loads(path.read_text()))
    assert done.returncode == 0, done.stderr[-4000:]
    return results


@needs_mpi
@pytest.mark.parametrize("check", _worker_checks() if HAVE_MPI else ["none"])
def test_on_two_ranks(job_results, check):
    for rank, results in enumerate(job_results):
        assert results.get(check) == "ok", f"rank {rank}, {check}:\n{results.get(check)}"


# ---- a failing rank ends the job -----------------------------------------------------------------------
FAILING_TRAINING = textwrap.dedent("""
    import torch, torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 2))
    if dist.get_rank() == 1:
        model.module.register_forward_hook(lambda m, a, o: 1 / 0 if step == 2 else None)
    for step in range(5):
        model(torch.ones(3, 4)).sum().backward()   # rank 0 waits for rank 1's gradients, forever
    print("finished")
""")


@needs_mpi
@pytest.mark.parametrize("launcher", ["mpiexec", "hookgrad run --nproc"])
def test_a_rank_that_raises_ends_the_job_with_its_error(tmp_path, launcher):
    script = tmp_path / "train.py"
    script.write_text(FAILING_TRAINING)
    if launcher == "mpiexec":
        # plain python on hookgrad's own names
        script.write_text(FAILING_TRAINING.replace("import torch, torch.distributed as dist",
                                                   "import hookgrad as torch, hookgrad.distributed as dist")
                          .replace("from torch.nn.parallel", "from hookgrad.nn.parallel"))
        command = [_mpiexec(), "-n", "2", sys.executable, str(script)]
    else:
        command = [sys.executable, "-m", "hookgrad", "run", "--nproc", "2", str(script)]
    started = time.monotonic()
    done = _launch(command, timeout=120)
    assert done.returncode != 0
    assert "[rank1]" in done.stderr and "ZeroDivisionError" in done.stderr, done.stderr[-3000:]
    assert "finished" not in done.stdout
    assert time.monotonic() - started < 120


@needs_mpi
def test_hookgrad_run_nproc_serves_torch_distributed(tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(textwrap.dedent("""
        import os, torch, torch.distributed as dist
        from torch.utils.data import DistributedSampler
        dist.init_process_group(backend="gloo", init_method="env://")
        t = torch.tensor([float(dist.get_rank() + 1)])
        dist.all_reduce(t)
        import hookgrad
        print(f"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']}: {t.item()} {dist.__name__} "
              f"{DistributedSampler.__module__} {DistributedSampler is hookgrad.utils.data.DistributedSampler}")
        dist.destroy_process_group()
    """))
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:2\n")       # the multi-machine launch line, on this machine
    done = _launch([sys.executable, "-m", "hookgrad", "run", "--nproc", "2", "--hostfile", str(hosts), str(script)],
                   timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    for r in (0, 1):     # the ranks' lines may come in either order
        # hookgrad's sampler, named as torch's under `hookgrad run`
        assert f"rank {r} of 2: 3.0 hookgrad.distributed torch.utils.data.distributed True" in done.stdout, \
            done.stdout


@needs_mpi
def test_ddp_digits_example_trains_on_two_ranks(tmp_path):
    done = _launch([sys.executable, "-m", "hookgrad", "run", "--nproc", "2",
                    os.path.join(ROOT, "examples", "ddp_digits.py"), "--epochs", "2"], timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "held-out accuracy" in done.stdout, done.stdout
    accuracy = float(done.stdout.split("held-out accuracy")[1].split()[0])
    assert accuracy > 0.8, done.stdout


@needs_mpi
def test_world_size_that_mpi_did_not_start_is_refused():
    code = textwrap.dedent("""
        import hookgrad.distributed as dist
        try:
            dist.init_process_group("gloo", world_size=2, rank=0)
        except ValueError as e:
            print("refused:", e)
        dist.init_process_group("mpi")       # a single process is a job of one
        print(dist.get_world_size(), dist.get_rank(), dist.get_backend())
        try:
            dist.init_process_group("nccl")
        except ValueError as e:
            print("twice:", e)
        dist.destroy_process_group()
        try:
            dist.init_process_group("nccl")
        except RuntimeError as e:
            print("nccl:", e)
    """)
    done = _launch([sys.executable, "-c", code], timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("refused: init_process_group: world_size=2, but this MPI job has 1 process")
    assert "mpiexec -n 2" in lines[0] and "hookgrad run --nproc 2" in lines[0]
    assert lines[1] == "1 0 mpi"
    assert lines[2] == "twice: trying to initialize the default process group twice!"
    assert lines[3].startswith("nccl: hookgrad.distributed has no 'nccl' backend")


# ---- in this process ---------------------------------------------------------------------------------
def test_collectives_before_init_process_group_raise_torchs_error():
    import hookgrad
    import hookgrad.distributed as dist
    assert not dist.is_initialized()
    for call in (lambda: dist.all_reduce(hookgrad.ones(1)), lambda: dist.get_rank(), lambda: dist.barrier(),
                 lambda: dist.new_group([0]), lambda: hookgrad.nn.parallel.DistributedDataParallel(
                     hookgrad.nn.Linear(1, 1))):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            call()


def test_distributed_sampler_order_is_torchs():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DistributedSampler as TorchSampler

    from hookgrad.utils.data import DistributedSampler
    for n, replicas in ((10, 2), (23, 3), (7, 4), (1000, 2), (3, 5)):
        for options in ({}, {"drop_last": True}, {"shuffle": False}, {"seed": 1234}):
            for rank in range(replicas):
                ours, theirs = DistributedSampler(range(n), replicas, rank, **options), \
                    TorchSampler(range(n), replicas, rank, **options)
                for epoch in (0, 3):
                    ours.set_epoch(epoch)
                    theirs.set_epoch(epoch)
                    assert list(ours) == list(theirs) and len(ours) == len(theirs), (n, replicas, rank, options)
    with pytest.raises(ValueError, match="Invalid rank 2, rank should be in the interval"):
        DistributedSampler(range(4), 2, 2)
    del torch


def test_reduce_op_names_and_backend_strings():
    import hookgrad.distributed as dist
    assert dist.ReduceOp.SUM == dist.ReduceOp.RedOpType.SUM and dist.ReduceOp.AVG.name == "AVG"
    assert dist.ReduceOp(dist.ReduceOp.MAX) == dist.ReduceOp.MAX
    assert dist.Backend("GLOO") == dist.Backend.GLOO == "gloo" and dist.Backend.MPI == "mpi"
    assert dist.GroupMember.NON_GROUP_MEMBER == -100
    assert dist.all_gather_single is dist.all_gather_into_tensor
    assert dist.reduce_scatter_single is dist.reduce_scatter_tensor
    assert dist.supports_complex(dist.ReduceOp.SUM) and not dist.supports_complex(dist.ReduceOp.MAX)
    assert dist.get_node_local_rank(fallback_rank=3) == int(os.environ.get("LOCAL_RANK", 3))
    assert dist.is_backend_available("gloo") is HAVE_MPI and not dist.is_backend_available("nccl")


@needs_mpi
def test_bench_ddp_reports_scaling_and_overlap():
    done = _launch([sys.executable, "-m", "hookgrad", "bench", "ddp", "--quick", "--only", "cnn", "--batch", "32",
                    "--json"], timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    (row,) = report["rows"]
    one, two = row["one"], row["many"]
    assert one["ranks"] == 1 and two["ranks"] == 2 and two["buckets"] >= 2
    assert two["throughput"] > 0 and 0 <= two["overlap"] <= 1 and len(two["bucket_allreduce_s"]) == two["buckets"] and two["efficiency"] > 0
    assert two["allreduce_s"] > 0 and two["gradient_bytes"] == 4 * sum(
        n for n in (16 * 9 + 16, 32 * 16 * 9 + 32, 32 * 7 * 7 * 10 + 10))


# ---- the same PyTorch scenario on torch (gloo) and on hookgrad (MPI) -----------------------------------
SCENARIO = os.path.join(ROOT, "tests", "_distributed_scenario.py")


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_on_torch(out) -> None:
    env = _env()
    env.pop("PYTHONPATH")
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), WORLD_SIZE="2")
    ranks = [subprocess.Popen([sys.executable, SCENARIO, str(out)], env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(2)]
    for proc in ranks:
        try:
            _, err = proc.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            for p in ranks:
                p.kill()
            raise
        assert proc.returncode == 0, err[-3000:]


def _same(a, b, tol: float) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= tol * max(1.0, abs(b))
    return a == b


@needs_mpi
def test_the_same_scenario_on_torch_gloo_and_hookgrad_mpi(tmp_path):
    pytest.importorskip("torch")
    theirs, ours = tmp_path / "torch", tmp_path / "hookgrad"
    theirs.mkdir()
    ours.mkdir()
    _run_on_torch(theirs)
    done = _launch([sys.executable, "-m", "hookgrad", "run", "--nproc", "2", SCENARIO, str(ours)], timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in range(2):
        want = json.loads((theirs / f"rank{rank}.json").read_text())
        got = json.loads((ours / f"rank{rank}.json").read_text())
        assert got.keys() == want.keys()
        differ = [k for k in want if not _same(got[k], want[k], 1e-12)]
        assert not differ, "\n".join(f"rank {rank} {k}: hookgrad {got[k]} torch {want[k]}" for k in differ)
