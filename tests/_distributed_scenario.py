"""One 2-rank PyTorch scenario, run on torch (gloo, 2 processes) and under ``hookgrad run --nproc 2``
(MPI); tests/test_distributed.py compares what the ranks record. Usage: ``scenario.py OUT_DIR``.

Records, per rank: collective results, the classes of the errors misuse raises, and
DistributedDataParallel's parameters and gradients after a few steps from identical weights.
"""
import json
import os
import sys
import warnings

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.nn as dist_nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DistributedSampler

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
record = {}


def keep(name, value):
    if isinstance(value, torch.Tensor):
        value = {"dtype": str(value.dtype).replace("torch.", ""), "shape": list(value.shape),
                 "values": value.detach().double().flatten().tolist() if value.dtype != torch.bool
                 else value.flatten().tolist()}
    record[name] = value


def error_class(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return type(exc).__name__
    return None


# ---- collectives -----------------------------------------------------------------------------------
for dtype in (torch.float64, torch.float32, torch.float16, torch.int64, torch.int32, torch.uint8, torch.bool):
    for op in ("SUM", "PRODUCT", "MIN", "MAX"):
        t = (torch.arange(6).reshape(2, 3) % 4 + rank).to(dtype)
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        keep(f"all_reduce {op} {dtype}", t)
t = torch.tensor([1.0, 2.0, 4.0]) * (rank + 1)
dist.all_reduce(t, op=dist.ReduceOp.AVG)
keep("all_reduce AVG", t)
i = torch.tensor([6, 3, 5]) + rank
dist.all_reduce(i, op=dist.ReduceOp.BXOR)
keep("all_reduce BXOR", i)
t = torch.full((2, 2), float(rank + 1))
dist.broadcast(t, src=1)
keep("broadcast", t)
outs = [torch.zeros(3) for _ in range(world)]
dist.all_gather(outs, torch.arange(3.0) + 10 * rank)
keep("all_gather", torch.stack(outs))
out = torch.zeros(2)
dist.reduce_scatter_tensor(out, torch.arange(4.0) * (rank + 1))
keep("reduce_scatter_tensor", out)
t = torch.arange(4.0) + rank
dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
keep("reduce", t)
got = torch.zeros(2)
dist.scatter(got, [torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])] if rank == 0 else None, src=0)
keep("scatter", got)
single = torch.zeros(4)
dist.all_to_all_single(single, torch.arange(4.0) + 100 * rank)
keep("all_to_all_single", single)
objs = [None, None]
dist.all_gather_object(objs, {"rank": rank, "tuple": (rank, "x")})
keep("all_gather_object", [[o["rank"], list(o["tuple"])] for o in objs])
box = [rank, "mine"]
dist.broadcast_object_list(box, src=1)
keep("broadcast_object_list", box)
work = dist.all_reduce(torch.ones(2), async_op=True)
keep("work.wait", work.wait())
keep("work.is_completed", work.is_completed())
fut = dist.all_reduce(torch.ones(2) * (rank + 1), async_op=True).get_future()
keep("future value", fut.wait()[0])
keep("rank and size", [dist.get_rank(), dist.get_world_size(), dist.is_initialized()])

# ---- differentiable collectives (torch.distributed.nn): values, gradients, FutureWarnings ----------
def collective_with_grad(name, fn, n=4, output_defined=True):
    x = (torch.arange(float(n), dtype=torch.float64) * (rank + 1) - 1).requires_grad_()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(x * 1.5)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    weights = [torch.arange(1.0, o.numel() + 1, dtype=torch.float64).reshape(o.shape) * (i + 2 + rank)
               for i, o in enumerate(outs)]
    torch.autograd.backward(outs, weights)
    if output_defined:  # a reduce's output off its dst rank is whatever the backend left there
        keep(f"nn {name}", torch.stack([o.detach().reshape(-1) for o in outs]))
    keep(f"nn {name} grad", x.grad)
    keep(f"nn {name} warnings", sorted({w.category.__name__ for w in caught}))


collective_with_grad("all_reduce", lambda x: dist_nn.all_reduce(x))
collective_with_grad("all_reduce max", lambda x: dist_nn.all_reduce(x, op=dist.ReduceOp.MAX))
collective_with_grad("all_gather", lambda x: dist_nn.all_gather(x))
collective_with_grad("broadcast", lambda x: dist_nn.broadcast(x, src=1))
collective_with_grad("reduce", lambda x: dist_nn.reduce(x, dst=0), output_defined=rank == 0)
collective_with_grad("gather", lambda x: dist_nn.gather(x, dst=1))
collective_with_grad("scatter", lambda x: dist_nn.scatter(list(x.reshape(2, 2).unbind()), src=0))
collective_with_grad("all_to_all", lambda x: dist_nn.all_to_all(
    [torch.zeros(2, dtype=torch.float64) for _ in range(2)], list(x.reshape(2, 2).unbind())))
collective_with_grad("all_to_all_single", lambda x: dist_nn.all_to_all_single(
    torch.zeros(4, dtype=torch.float64), x, [1, 3] if rank == 0 else [3, 1], [1, 3] if rank == 0 else [3, 1]))
collective_with_grad("reduce_scatter", lambda x: dist_nn.reduce_scatter(torch.zeros(2, dtype=torch.float64),
                                                                        list(x.reshape(2, 2).unbind())))

# ---- errors: the same classes --------------------------------------------------------------------
keep("error BAND on float", error_class(dist.all_reduce, torch.ones(2), op=dist.ReduceOp.BAND))
keep("error MAX on complex", error_class(dist.all_reduce, torch.ones(2, dtype=torch.complex64), op=dist.ReduceOp.MAX))
keep("error AVG on int", error_class(dist.all_reduce, torch.ones(2, dtype=torch.int64), op=dist.ReduceOp.AVG))
keep("error not a tensor", error_class(dist.all_reduce, [1.0]))
keep("error send to self", error_class(dist.send, torch.ones(1), dst=rank))
keep("error gather_list", error_class(dist.gather, torch.ones(1), None if rank == 0 else [torch.ones(1)] * 2, dst=0))
keep("error init twice", error_class(dist.init_process_group, "gloo"))

# ---- DistributedDataParallel from identical weights ---------------------------------------------
rng = np.random.default_rng(0)
X, Y = torch.tensor(rng.standard_normal((8, 4))), torch.tensor(rng.standard_normal((8, 2)))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.spare = torch.nn.Linear(4, 6), torch.nn.Linear(6, 2), torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


def net():
    model = Net().double()
    weights = np.random.default_rng(1)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(weights.standard_normal(tuple(p.shape)) + rank))   # DDP takes rank 0's
    return model


for name, options, hook in (("plain", {"find_unused_parameters": True}, None),
                            ("small buckets", {"find_unused_parameters": True, "bucket_cap_mb": 0.0001}, None),
                            ("fp16 hook", {"find_unused_parameters": True}, default_hooks.fp16_compress_hook)):
    model = DDP(net(), **options)
    if hook is not None:
        model.register_comm_hook(None, hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        opt.zero_grad()
        rows = slice(rank * 4, rank * 4 + 4)
        with model.no_sync():
            ((model(X[rows][:2]) - Y[rows][:2]) ** 2).mean().backward()
        ((model(X[rows][2:]) - Y[rows][2:]) ** 2).mean().backward()
        opt.step()
    for pname, p in model.named_parameters():
        keep(f"ddp {name} {pname}", p)
        keep(f"ddp {name} {pname} grad", p.grad if p.grad is not None else "None")
keep("ddp state_dict keys", list(model.state_dict()))

sampler = DistributedSampler(list(range(11)), seed=5)
sampler.set_epoch(2)
keep("sampler", list(sampler))

with open(os.path.join(sys.argv[1], f"rank{rank}.json"), "w") as f:
    json.dump(record, f)
dist.destroy_process_group()
