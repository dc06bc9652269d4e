"""Checks that run inside an MPI job (``mpiexec -n 2 python tests/_distributed_worker.py OUT``).

Every function named ``check_*`` runs on every rank, in order; a check passes on a rank when it
returns without raising. The results go to ``OUT/rank{N}.json`` ({check name: "ok" or the
traceback}); tests/test_distributed.py launches the job once and turns each check into a test.
Expected values are computed with NumPy from the data every rank can generate for every rank.
"""
from __future__ import annotations

import json
import os
import sys
import traceback

import numpy as np

import hookgrad
import hookgrad.distributed as dist
from hookgrad.nn.parallel import DistributedDataParallel as DDP
from hookgrad.distributed.algorithms.ddp_comm_hooks import default_hooks

ReduceOp = dist.ReduceOp
DTYPES = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128", "int8", "int16", "int32",
          "int64", "uint8", "bool"]
OPS = ["SUM", "PRODUCT", "MIN", "MAX", "AVG", "BAND", "BOR", "BXOR"]


def rank_data(rank: int, dtype: str, shape=(2, 3), salt: int = 0) -> np.ndarray:
    """Small values, exact in every dtype, different on every rank."""
    rng = np.random.default_rng(1000 * rank + 17 * DTYPES.index(dtype) + salt)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype in ("uint8",):
        return rng.integers(0, 6, size=shape).astype(np.uint8)
    if dtype.startswith("int"):
        return rng.integers(-3, 4, size=shape).astype(dtype)
    values = rng.integers(-4, 5, size=shape) / 2.0
    if dtype.startswith("complex"):
        return (values + 1j * rng.integers(-4, 5, size=shape) / 2.0).astype(dtype)
    return values.astype(np.float32 if dtype == "bfloat16" else dtype)


def as_tensor(values: np.ndarray, dtype: str):
    return hookgrad.tensor(values, dtype=getattr(hookgrad, dtype))


def as_numpy(tensor) -> np.ndarray:
    if tensor.dtype == hookgrad.bfloat16:
        return tensor.float().numpy()
    return tensor.numpy()


def expected_reduction(stack: np.ndarray, op: str, dtype: str) -> np.ndarray:
    if dtype == "bool":
        return {"SUM": stack.any(0), "MAX": stack.any(0), "BOR": stack.any(0), "PRODUCT": stack.all(0),
                "MIN": stack.all(0), "BAND": stack.all(0), "BXOR": np.logical_xor.reduce(stack, 0)}[op]
    work = stack.astype(np.float32) if dtype in ("float16", "bfloat16") else stack
    result = {"SUM": lambda: work.sum(0, dtype=work.dtype), "PRODUCT": lambda: work.prod(0, dtype=work.dtype),
              "MIN": lambda: work.min(0), "MAX": lambda: work.max(0), "AVG": lambda: work.sum(0) / len(stack),
              "BAND": lambda: np.bitwise_and.reduce(work, 0), "BOR": lambda: np.bitwise_or.reduce(work, 0),
              "BXOR": lambda: np.bitwise_xor.reduce(work, 0)}[op]()
    return result.astype(np.float16) if dtype == "float16" else result


def expected_error(op: str, dtype: str):
    """The exception class torch raises for this op and dtype, or None."""
    integral = dtype.startswith(("int", "uint")) or dtype == "bool"
    if op in ("MIN", "MAX") and dtype.startswith("complex"):
        return ValueError
    if op in ("BAND", "BOR", "BXOR") and not integral:
        return RuntimeError
    if op == "AVG" and integral:
        return RuntimeError
    return None


def same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    want = np.asarray(want)
    if want.dtype == bool or got.dtype == bool:
        ok = np.array_equal(got.astype(bool), want.astype(bool))
    else:
        ok = got.shape == want.shape and np.array_equal(got.astype(np.complex128), want.astype(np.complex128))
    assert ok, f"{what}: got {got!r}, want {want!r}"


RANK = WORLD = None


def everyone(dtype: str, shape=(2, 3), salt: int = 0) -> np.ndarray:
    return np.stack([rank_data(r, dtype, shape, salt) for r in range(WORLD)])


# ---- collectives against NumPy ---------------------------------------------------------------------
def check_all_reduce_every_dtype_and_op():
    for dtype in DTYPES:
        for op in OPS:
            t = as_tensor(rank_data(RANK, dtype), dtype)
            error = expected_error(op, dtype)
            if error is not None:
                try:
                    dist.all_reduce(t, op=getattr(ReduceOp, op))
                except error:
                    continue
                raise AssertionError(f"all_reduce {op} on {dtype} did not raise {error.__name__}")
            version = t._version
            dist.all_reduce(t, op=getattr(ReduceOp, op))
            same(as_numpy(t), expected_reduction(everyone(dtype), op, dtype), f"all_reduce {op} {dtype}")
            assert t._version > version, "an in-place collective bumps the version"


def check_reduce_and_reduce_scatter_every_dtype_and_op():
    for dtype in DTYPES:
        for op in OPS:
            if expected_error(op, dtype) is not None:
                continue
            reduce_op = getattr(ReduceOp, op)
            want = expected_reduction(everyone(dtype, salt=1), op, dtype)
            t = as_tensor(rank_data(RANK, dtype, salt=1), dtype)
            dist.reduce(t, dst=1, op=reduce_op)
            same(as_numpy(t), want if RANK == 1 else rank_data(RANK, dtype, salt=1), f"reduce {op} {dtype}")
            # rank r gets row r of the reduction
            inputs = [as_tensor(rank_data(RANK, dtype, salt=1)[i:i + 1], dtype) for i in range(WORLD)]
            out = as_tensor(np.zeros((1, 3), dtype=rank_data(0, dtype).dtype), dtype)
            dist.reduce_scatter(out, inputs, op=reduce_op)
            same(as_numpy(out), want[RANK:RANK + 1], f"reduce_scatter {op} {dtype}")
            out = as_tensor(np.zeros((1, 3), dtype=rank_data(0, dtype).dtype), dtype)
            dist.reduce_scatter_tensor(out, as_tensor(rank_data(RANK, dtype, salt=1), dtype), op=reduce_op)
            same(as_numpy(out), want[RANK:RANK + 1], f"reduce_scatter_tensor {op} {dtype}")


def check_data_movement_every_dtype():
    for dtype in DTYPES:
        mine, all_ = rank_data(RANK, dtype), everyone(dtype)
        t = as_tensor(mine, dtype)
        dist.broadcast(t, src=1)
        same(as_numpy(t), all_[1], f"broadcast {dtype}")
        outs = [as_tensor(np.zeros_like(mine), dtype) for _ in range(WORLD)]
        dist.all_gather(outs, as_tensor(mine, dtype))
        for r in range(WORLD):
            same(as_numpy(outs[r]), all_[r], f"all_gather {dtype}")
        big = as_tensor(np.zeros((WORLD * 2, 3), dtype=mine.dtype), dtype)
        dist.all_gather_into_tensor(big, as_tensor(mine, dtype))
        same(as_numpy(big), all_.reshape(WORLD * 2, 3), f"all_gather_into_tensor {dtype}")
        gathered = [as_tensor(np.zeros_like(mine), dtype) for _ in range(WORLD)] if RANK == 0 else None
        dist.gather(as_tensor(mine, dtype), gathered, dst=0)
        if RANK == 0:
            for r in range(WORLD):
                same(as_numpy(gathered[r]), all_[r], f"gather {dtype}")
        got = as_tensor(np.zeros((1, 3), dtype=mine.dtype), dtype)
        pieces = [as_tensor(mine[i:i + 1], dtype) for i in range(WORLD)] if RANK == 1 else None
        dist.scatter(got, pieces, src=1)
        same(as_numpy(got), all_[1][RANK:RANK + 1], f"scatter {dtype}")
        outs = [as_tensor(np.zeros((1, 3), dtype=mine.dtype), dtype) for _ in range(WORLD)]
        dist.all_to_all(outs, [as_tensor(mine[i:i + 1], dtype) for i in range(WORLD)])
        for r in range(WORLD):
            same(as_numpy(outs[r]), all_[r][RANK:RANK + 1], f"all_to_all {dtype}")
        single = as_tensor(np.zeros_like(mine), dtype)
        dist.all_to_all_single(single, as_tensor(mine, dtype))
        same(as_numpy(single), np.concatenate([all_[r][RANK:RANK + 1] for r in range(WORLD)]),
             f"all_to_all_single {dtype}")
        if RANK == 0:
            dist.send(as_tensor(mine, dtype), dst=1, tag=5)
        else:
            box = as_tensor(np.zeros_like(mine), dtype)
            assert dist.recv(box, src=0, tag=5) == 0
            same(as_numpy(box), all_[0], f"send/recv {dtype}")


def check_uneven_all_to_all_single():
    # rank r sends r + 1 rows to each peer
    rows = [[r + 1] * WORLD for r in range(WORLD)]
    send = hookgrad.arange(float(sum(rows[RANK]) * 2)).reshape(-1, 2) + 100 * RANK
    recv_sizes = [rows[r][RANK] for r in range(WORLD)]
    out = hookgrad.zeros(sum(recv_sizes), 2)
    dist.all_to_all_single(out, send, output_split_sizes=recv_sizes, input_split_sizes=rows[RANK])
    want = []
    for r in range(WORLD):
        theirs = np.arange(float(sum(rows[r]) * 2)).reshape(-1, 2) + 100 * r
        start = sum(rows[r][:RANK])
        want.append(theirs[start:start + rows[r][RANK]])
    same(out.numpy(), np.concatenate(want), "uneven all_to_all_single")


def check_non_contiguous_and_scalar_tensors():
    base = hookgrad.arange(6.0).reshape(2, 3) * (RANK + 1)
    t = base.t()                      # a transposed view: written back through the view
    dist.all_reduce(t)
    same(base.numpy(), np.arange(6.0).reshape(2, 3) * sum(r + 1 for r in range(WORLD)), "non-contiguous all_reduce")
    s = hookgrad.tensor(float(RANK + 1))
    dist.all_reduce(s, op=ReduceOp.MAX)
    assert s.item() == WORLD and s.dim() == 0


def check_async_work_and_futures():
    t = hookgrad.ones(1000) * (RANK + 1)
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, dist.Work)
    work.wait()
    assert work.is_completed() and work.is_success() and work.exception() is None
    assert float(t[0]) == sum(r + 1 for r in range(WORLD))
    t = hookgrad.ones(3)
    fut = dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] * 10)
    assert fut.wait().tolist() == [10.0 * WORLD] * 3
    works = [dist.broadcast(hookgrad.full((4,), float(RANK)), src=0, async_op=True) for _ in range(3)]
    while not all(w.is_completed() for w in works):
        pass
    outs = [hookgrad.zeros(2) for _ in range(WORLD)]
    dist.all_gather(outs, hookgrad.full((2,), float(RANK)), async_op=True).wait()
    assert [o.tolist() for o in outs] == [[float(r)] * 2 for r in range(WORLD)]
    peer = 1 - RANK
    box = hookgrad.zeros(2)
    sends = dist.batch_isend_irecv([dist.P2POp(dist.isend, hookgrad.full((2,), float(RANK)), peer),
                                    dist.P2POp(dist.irecv, box, peer)])
    for w in sends:
        w.wait()
    assert box.tolist() == [float(peer)] * 2
    dist.barrier()
    dist.barrier(async_op=True).wait()


def check_object_collectives():
    objs = [{"rank": RANK}, [RANK] * 2]
    dist.broadcast_object_list(objs, src=1)
    assert objs == [{"rank": 1}, [1, 1]]
    gathered = [None] * WORLD
    dist.all_gather_object(gathered, ("r", RANK))
    assert gathered == [("r", r) for r in range(WORLD)]
    box = [None] * WORLD if RANK == 0 else None
    dist.gather_object({"x": RANK}, box, dst=0)
    if RANK == 0:
        assert box == [{"x": r} for r in range(WORLD)]
    out = [None]
    dist.scatter_object_list(out, [f"to {r}" for r in range(WORLD)] if RANK == 0 else None, src=0)
    assert out == [f"to {RANK}"]
    if RANK == 0:
        dist.send_object_list(["hello", 3], dst=1)
    else:
        got = [None, None]
        assert dist.recv_object_list(got, src=0) == 0 and got == ["hello", 3]


def check_groups_and_ranks():
    assert dist.is_initialized() and dist.get_world_size() == WORLD and dist.get_rank() == RANK
    assert dist.get_backend() == "gloo"
    solo = dist.new_group([1])
    if RANK == 1:
        assert dist.get_rank(solo) == 0 and dist.get_world_size(solo) == 1
        t = hookgrad.ones(2)
        dist.all_reduce(t, group=solo)
        assert t.tolist() == [1.0, 1.0]
        assert dist.get_process_group_ranks(solo) == [1] and dist.get_global_rank(solo, 0) == 1
    else:
        assert solo is dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(solo) == -1 and dist.all_reduce(hookgrad.ones(1), group=solo) is None
    pair = dist.new_group([1, 0])
    t = hookgrad.full((1,), float(RANK))
    dist.broadcast(t, src=1, group=pair)
    assert t.item() == 1.0
    dist.destroy_process_group(pair)


def check_misuse_gets_clear_errors():
    def raises(exc, fn, *args, match="", **kwargs):
        try:
            fn(*args, **kwargs)
        except exc as e:
            assert match in str(e), str(e)
            return
        raise AssertionError(f"{fn.__name__} did not raise {exc.__name__}")
    raises(TypeError, dist.all_reduce, [1, 2], match="Expected parameter `tensor` of type torch.Tensor")
    raises(TypeError, dist.all_reduce, hookgrad.ones(1), op="sum")
    raises(RuntimeError, dist.broadcast, hookgrad.ones(2), src=5, match="invalid root rank")
    raises(RuntimeError, dist.all_gather, [hookgrad.ones(2)] * 3, hookgrad.ones(2), match="expected length 2, got 3")
    raises(ValueError, dist.send, hookgrad.ones(1), dst=RANK, match="should not be the same as the rank")
    if RANK == 0:
        raises(ValueError, dist.gather, hookgrad.ones(1), None, dst=0, match="must be specified on destination")
    else:
        raises(ValueError, dist.gather, hookgrad.ones(1), [hookgrad.ones(1)] * 2, dst=0, match="must NOT be specified")
    raises(ValueError, dist.init_process_group, "gloo", match="twice")
    raises(ValueError, dist.reduce_scatter_tensor, hookgrad.zeros(3), hookgrad.ones(5), match="world_size")
    # shapes that differ across ranks: every rank raises instead of reducing garbage or hanging
    raises(RuntimeError, dist.all_reduce, hookgrad.ones(2 + RANK), match="Detected mismatch between collectives")
    raises(RuntimeError, dist.broadcast if RANK else dist.all_reduce, hookgrad.ones(2),
           match="Detected mismatch between collectives")
    # and the group still works after all of that
    t = hookgrad.ones(2)
    dist.all_reduce(t)
    assert t.tolist() == [float(WORLD)] * 2


# ---- DistributedDataParallel -----------------------------------------------------------------------
X = np.random.default_rng(0).standard_normal((16, 5))
Y = np.random.default_rng(1).standard_normal((16, 3))


class Net(hookgrad.nn.Module):
    def __init__(self, unused: bool = False):
        super().__init__()
        self.fc1 = hookgrad.nn.Linear(5, 8)
        self.act = hookgrad.nn.Tanh()
        self.fc2 = hookgrad.nn.Linear(8, 3)
        self.spare = hookgrad.nn.Linear(3, 3) if unused else None

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def make_net(unused=False, perturb=False):
    hookgrad.manual_seed(7)
    net = Net(unused).double()
    if perturb:                     # DDP must replace these by rank 0's values
        with hookgrad.no_grad():
            for p in net.parameters():
                p.add_(RANK)
    return net


def loss_of(model, rows):
    x, y = hookgrad.tensor(X[rows]), hookgrad.tensor(Y[rows])
    return ((model(x) - y) ** 2).mean()


def reference(steps=20, micro=1, unused=False):
    """One process on the full batch: ``micro`` accumulation steps of the batch's rows per update."""
    net = make_net(unused)
    opt = hookgrad.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    for _ in range(steps):
        opt.zero_grad()
        for m in range(micro):
            rows = np.arange(m, 16, micro)
            (loss_of(net, rows) / micro).backward()
        opt.step()
    return net


def train_ddp(ddp, steps=20, micro=1):
    opt = hookgrad.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    for _ in range(steps):
        opt.zero_grad()
        for m in range(micro):
            # this rank's share of micro-batch m: every WORLD-th of its rows
            rows = np.arange(m, 16, micro)[RANK::WORLD]
            if m < micro - 1:
                with ddp.no_sync():
                    (loss_of(ddp, rows) / micro).backward()
            else:
                (loss_of(ddp, rows) / micro).backward()
        opt.step()
    return ddp.module


def max_diff(a, b):
    pa, pb = dict(a.named_parameters()), dict(b.named_parameters())
    assert pa.keys() == pb.keys()
    worst = 0.0
    for name in pa:
        ga, gb = pa[name].grad, pb[name].grad
        assert (ga is None) == (gb is None), f"{name}: grad None on one side only"
        worst = max(worst, float((pa[name] - pb[name]).abs().max()))
    return worst


def check_ddp_matches_one_process_on_the_full_batch():
    want = reference()
    for cap in (None, 0.0002):          # one bucket (default cap), then one per parameter or so
        ddp = DDP(make_net(perturb=True), bucket_cap_mb=cap)
        if cap is not None:
            assert len(ddp._buckets) >= 3
        got = train_ddp(ddp)
        assert max_diff(got, want) < 1e-10, max_diff(got, want)


def check_ddp_no_sync_accumulation():
    want = reference(micro=2)
    got = train_ddp(DDP(make_net(), bucket_cap_mb=0.0002), micro=2)
    assert max_diff(got, want) < 1e-10, max_diff(got, want)
    # inside no_sync the gradients stay local: they differ across ranks
    ddp = DDP(make_net())
    with ddp.no_sync():
        loss_of(ddp, np.arange(RANK, 16, WORLD)).backward()
    grads = [None] * WORLD
    dist.all_gather_object(grads, ddp.module.fc1.weight.grad.numpy())
    assert not np.allclose(grads[0], grads[1])


def check_ddp_unused_parameter():
    want = reference(unused=True)
    ddp = DDP(make_net(unused=True), find_unused_parameters=True, bucket_cap_mb=0.0002)
    got = train_ddp(ddp)
    assert got.spare.weight.grad is None
    assert max_diff(got, want) < 1e-10
    # without find_unused_parameters the next forward says what went wrong
    ddp = DDP(make_net(unused=True), bucket_cap_mb=0.0002)
    loss_of(ddp, np.arange(RANK, 16, WORLD)).backward()
    try:
        ddp(hookgrad.tensor(X[:2]))
    except RuntimeError as e:
        assert "Expected to have finished reduction in the prior iteration" in str(e)
        assert "find_unused_parameters=True" in str(e)
    else:
        raise AssertionError("an unused parameter without find_unused_parameters did not raise")


def check_ddp_comm_hooks():
    want = reference()
    ddp = DDP(make_net(), bucket_cap_mb=0.0002)
    ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    assert max_diff(train_ddp(ddp), want) < 1e-10
    try:
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    except RuntimeError as e:
        assert "can only be called once" in str(e)
    else:
        raise AssertionError("a second register_comm_hook did not raise")

    seen = []

    def summing_hook(state, bucket):
        seen.append((bucket.index(), len(bucket.parameters()), bucket.is_last()))
        state["calls"] += 1
        assert [tuple(g.shape) for g in bucket.gradients()] == [tuple(p.shape) for p in bucket.parameters()]
        buffer = bucket.buffer()
        return dist.all_reduce(buffer, async_op=True).get_future().then(lambda f: f.value()[0] / WORLD)
    state = {"calls": 0}
    ddp = DDP(make_net(), bucket_cap_mb=0.0002)
    ddp.register_comm_hook(state, summing_hook)
    assert max_diff(train_ddp(ddp), want) < 1e-10
    assert state["calls"] == 20 * len(ddp._buckets)
    assert [s[0] for s in seen[:len(ddp._buckets)]] == list(range(len(ddp._buckets)))
    assert seen[len(ddp._buckets) - 1][2] and not seen[0][2]

    ddp = DDP(make_net(), bucket_cap_mb=0.0002)
    ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    got = train_ddp(ddp, steps=5)
    close = reference(steps=5)
    assert 0 < max_diff(got, close) < 1e-2, max_diff(got, close)


def check_ddp_user_hooks_fire_on_every_rank():
    net = make_net()
    counts = {"forward_pre": 0, "forward": 0, "full_backward": 0, "tensor": 0, "post_accumulate": 0}
    net.fc1.register_forward_pre_hook(lambda m, a: counts.__setitem__("forward_pre", counts["forward_pre"] + 1))
    net.fc2.register_forward_hook(lambda m, a, o: counts.__setitem__("forward", counts["forward"] + 1))
    net.fc2.register_full_backward_hook(lambda m, gi, go: counts.__setitem__("full_backward",
                                                                            counts["full_backward"] + 1))
    net.fc1.weight.register_hook(lambda g: counts.__setitem__("tensor", counts["tensor"] + 1))
    seen_grads = []
    net.fc1.bias.register_post_accumulate_grad_hook(lambda p: seen_grads.append(p.grad.clone()))
    ddp = DDP(net)
    wrapper_calls = []
    ddp.register_forward_hook(lambda m, a, o: wrapper_calls.append(RANK))
    train_ddp(ddp, steps=3)
    assert counts == {"forward_pre": 3, "forward": 3, "full_backward": 3, "tensor": 3, "post_accumulate": 0}
    assert len(seen_grads) == 3 and wrapper_calls == [RANK] * 3
    # the user's post-accumulate hook sees the local gradient; .grad ends as the average
    local = seen_grads[-1].numpy()
    all_local = [None] * WORLD
    dist.all_gather_object(all_local, local)
    np.testing.assert_allclose(net.fc1.bias.grad.numpy(), np.mean(all_local, axis=0), rtol=0, atol=1e-14)
    everyone_counts = [None] * WORLD
    dist.all_gather_object(everyone_counts, counts)
    assert all(c == counts for c in everyone_counts)


def check_ddp_wrapper_state():
    hookgrad.manual_seed(RANK)
    net = hookgrad.nn.Sequential(hookgrad.nn.Linear(3, 3), hookgrad.nn.BatchNorm1d(3))
    with hookgrad.no_grad():
        net[1].running_mean.fill_(float(RANK))
    ddp = DDP(net)
    assert ddp.module is net
    assert list(ddp.state_dict())[:2] == ["module.0.weight", "module.0.bias"]
    values = [None] * WORLD
    dist.all_gather_object(values, [t.numpy() for t in net.state_dict().values()])
    for theirs in values[1:]:
        for a, b in zip(values[0], theirs):
            assert np.array_equal(a, b), "rank 0's state was not broadcast"
    try:
        DDP(hookgrad.nn.Linear(2, 2), device_ids=[0])
    except ValueError as e:
        assert "device_ids" in str(e)
    else:
        raise AssertionError("device_ids on a CPU module did not raise")
    # different models on different ranks are refused at construction
    try:
        DDP(hookgrad.nn.Linear(2, 2 + RANK))
    except RuntimeError as e:
        assert "DDP expects same model across all ranks" in str(e)
    else:
        raise AssertionError("different models across ranks did not raise")


def check_distributed_sampler_splits_the_data():
    from hookgrad.utils.data import DataLoader, DistributedSampler, TensorDataset
    data = TensorDataset(hookgrad.arange(10.0))
    sampler = DistributedSampler(data, seed=3)
    assert sampler.num_replicas == WORLD and sampler.rank == RANK and len(sampler) == 5
    sampler.set_epoch(1)
    mine = [float(v) for (batch,) in DataLoader(data, batch_size=2, sampler=sampler) for v in batch]
    shares = [None] * WORLD
    dist.all_gather_object(shares, mine)
    assert sorted(sum(shares, [])) == [float(i) for i in range(10)]


CHECKS = [name for name in list(globals()) if name.startswith("check_")]


def main(out_dir: str) -> int:
    global RANK, WORLD
    dist.init_process_group("gloo", init_method="env://")
    RANK, WORLD = dist.get_rank(), dist.get_world_size()
    results = {}
    for name in CHECKS:
        try:
            globals()[name]()
        except Exception:  # noqa: BLE001 - reported per check, the job goes on
            results[name] = traceback.format_exc()
        else:
            results[name] = "ok"
        dist.barrier()
    with open(os.path.join(out_dir, f"rank{RANK}.json"), "w") as f:
        json.dump(results, f)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
