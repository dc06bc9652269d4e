"""Names and behaviours Hugging Face transformers and TransformerLens reach for at import or in a forward
pass, each checked against torch as a differential scenario; the join context manager's protocol on two
MPI ranks."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from difftest import catch, differential

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _joinable_class(T, group_of):
    from importlib import import_module
    join = import_module(f"{T.__name__}.distributed.algorithms.join")

    class Counter(join.Joinable):
        def __init__(self, group):
            super().__init__()
            self.group = group

        def join_hook(self, **kwargs):
            return join.JoinHook()

        @property
        def join_device(self):
            return T.device("cpu")

        @property
        def join_process_group(self):
            return group_of(self.group)

    return join, Counter


@differential
def test_join_refuses_no_joinables_and_mixed_groups(T):
    """Join's argument checks come before any communication; the default hook does nothing; a Joinable
    must be constructed through Joinable.__init__ for notify_join_context; outside a Join it is silent."""
    join, Counter = _joinable_class(T, lambda group: group)
    out = [catch(lambda: join.Join([])), catch(lambda: join.Join([Counter("a"), Counter("b")]))]
    hook = join.JoinHook()
    out.append([hook.main_hook(), hook.post_hook(True)])
    out.append(catch(lambda: Counter.__init__.__isabstractmethod__))
    joinable = Counter("a")
    out.append([joinable._join_config.enable, joinable._join_config.is_first_joinable,
                join.Join.notify_join_context(joinable)])

    class Unconstructed(Counter):
        def __init__(self):
            pass

    out.append(catch(lambda: join.Join.notify_join_context(Unconstructed())))
    out.append(catch(lambda: join.Joinable()))
    out.append(sorted(join.__all__))
    return out


_JOIN_SCRIPT = textwrap.dedent("""
    import sys

    import torch
    import torch.distributed as dist
    from torch.distributed.algorithms.join import Join, Joinable, JoinHook

    class Shadow(JoinHook):
        def __init__(self, owner):
            self.owner = owner

        def main_hook(self):  # stands in for the all-reduce a rank with inputs still makes
            self.owner.shadowed += 1
            dist.all_reduce(torch.zeros(1))

        def post_hook(self, is_last_joiner):
            self.owner.last = is_last_joiner

    class Worker(Joinable):
        def __init__(self):
            super().__init__()
            self.shadowed, self.last, self.total = 0, None, []

        def join_hook(self, **kwargs):
            return Shadow(self)

        @property
        def join_device(self):
            return torch.device("cpu")

        @property
        def join_process_group(self):
            return dist.group.WORLD

        def step(self, value):
            Join.notify_join_context(self)
            t = torch.tensor([value])
            dist.all_reduce(t)
            self.total.append(t.item())

    dist.init_process_group("mpi")
    rank = dist.get_rank()
    lines = []
    worker = Worker()
    with Join([worker]):
        for i in range(3 + 2 * rank):
            worker.step(float(i + 1))
    stop = Worker()
    try:
        with Join([stop], throw_on_early_termination=True):
            for i in range(2 + rank):
                stop.step(1.0)
        lines.append(f"{rank} no error")
    except RuntimeError as error:
        lines.append(f"{rank} raised {error}")
    lines.append(f"{rank} {worker.shadowed} {worker.last} {worker.total}")
    with open(f"{sys.argv[1]}.{rank}", "w") as out:  # (the ranks' standard outputs interleave)
        out.write("\\n".join(lines) + "\\n")
""")


@pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None, reason="mpi4py is not installed")
def test_join_shadows_the_longer_rank_on_two_ranks(tmp_path):
    """Rank 0 runs out after 3 steps, rank 1 has 5: rank 0's main hook shadows rank 1's last 2
    all-reduces (so rank 1 sees only its own values there), rank 1 is the last joiner; with
    throw_on_early_termination both ranks raise torch's errors when rank 0 runs out. The script drops
    the Work of notify_join_context's asynchronous all-reduce, as torch allows: its buffer must live on
    until MPI has finished with it."""
    from hookgrad._run import find_mpiexec
    if find_mpiexec() is None:
        pytest.skip("no mpiexec")
    script = tmp_path / "join_script.py"
    script.write_text(_JOIN_SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.path.join(ROOT, "src"),
                                                                   os.environ.get("PYTHONPATH")) if p))
    report = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "hookgrad", "run", "--nproc", "2", str(script), str(report)],
                          capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = sorted((tmp_path / "report.0").read_text().splitlines() + (tmp_path / "report.1").read_text().splitlines())
    assert lines == ["0 2 False [2.0, 4.0, 6.0]", "0 raised Rank 0 exhausted all inputs.",
                     "1 0 True [2.0, 4.0, 6.0, 4.0, 5.0]",
                     "1 raised Detected at least one rank that exhausted inputs. Throwing across all ranks."], lines


@differential
def test_placement_types_compare_and_split_like_torch(T):
    """Shard/Replicate/Partial are values: equality, hashing, the is_* predicates, and the chunk
    arithmetic of Shard.local_shard_size_and_offset (as torch.chunk splits a dimension)."""
    from importlib import import_module
    placement = import_module(f"{T.__name__}.distributed.tensor.placement_types")
    Shard, Replicate, Partial = placement.Shard, placement.Replicate, placement.Partial
    out = [Shard(0) == Shard(0), Shard(0) == Shard(1), Replicate() == Replicate(), Partial() == Partial("sum"),
           Partial("sum") == Partial("max"), len({Shard(1), Shard(1), Replicate()}),
           [p.is_shard() for p in (Shard(2), Replicate(), Partial())], Shard(2).is_shard(dim=2),
           Shard(2).is_shard(dim=1), Replicate().is_replicate(), Partial().is_partial(), Shard(0).is_replicate(),
           placement._StridedShard(1, split_factor=2) == placement._StridedShard(1, split_factor=2),
           placement._StridedShard(1, split_factor=2).is_shard(), placement._StridedShard(1, split_factor=2) == Shard(1),
           isinstance(placement._StridedShard(1, split_factor=2), Shard)]
    sizes = [Shard.local_shard_size_and_offset(size, chunks, rank)
             for size in (0, 1, 5, 7, 8, 10) for chunks in (1, 2, 3, 4) for rank in range(chunks)]
    out.append([tuple(int(v) for v in pair) for pair in sizes])
    out.append(Shard(0)._local_shard_size_and_offset(10, 3, 2))
    out.append([repr(Shard(1)), repr(Replicate())])
    return out


@differential
def test_transform_getitem_to_index_gathers(T):
    """Under TransformGetItemToIndex, t[i, j] with integer and tensor indices is an advanced-indexing
    gather (integers as 0-d tensors): the values, shapes and gradients of plain indexing; slices index as
    usual; outside the mode nothing changes."""
    from importlib import import_module
    mode = import_module(f"{T.__name__}._dynamo._trace_wrapped_higher_order_op").TransformGetItemToIndex
    x = T.tensor(np.arange(24.0).reshape(2, 3, 4), requires_grad=True)
    with mode():
        picks = [x[1], x[1, 2], x[0, T.tensor(1)], x[T.tensor([1, 0]), 2], x[1, 2, 3], x[:, 1]]
    picks.append(x[1, 2])
    total = sum(p.sum() for p in picks)
    total.backward()
    return [(p, p.shape) for p in picks], x.grad


@differential
def test_flex_attention_mask_combinators(T):
    """and_masks/or_masks combine mask functions element-wise with broadcasting; noop_mask keeps all;
    non-callables are refused."""
    from importlib import import_module
    flex = import_module(f"{T.__name__}.nn.attention.flex_attention")
    b, h = T.tensor(0), T.tensor(0)
    q, kv = T.arange(4).view(4, 1), T.arange(4).view(1, 4)

    def causal(b, h, q, kv):
        return q >= kv

    def near(b, h, q, kv):
        return (q - kv).abs() <= 1

    return [flex.and_masks(causal, near)(b, h, q, kv), flex.or_masks(causal, near)(b, h, q, kv),
            flex.noop_mask(b, h, q, kv), flex.and_masks()(b, h, q, kv), flex.or_masks()(b, h, q, kv),
            catch(lambda: flex.and_masks(causal, 3)), catch(lambda: flex.or_masks(None)),
            flex._DEFAULT_SPARSE_BLOCK_SIZE, flex.AuxRequest(), flex.AuxRequest(lse=True).lse]


@differential
def test_cuda_graph_names_without_cuda(T):
    """A build without CUDA names CUDAGraph and the graph helpers but cannot make one; a StreamContext
    over no stream does nothing."""
    out = [catch(lambda: T.cuda.CUDAGraph()), catch(lambda: T.cuda.graph_pool_handle()),
           isinstance(T.cuda.graph, type)]
    with T.cuda.StreamContext(None) as entered:
        out.append(entered)
    out.append(catch(lambda: T.cuda.graph(None)))
    return out


@differential
def test_fsdp_offload_policies(T):
    """The FSDP2 policies are plain values (equality and defaults); the first FSDP wrapper class exists."""
    from importlib import import_module
    fsdp = import_module(f"{T.__name__}.distributed.fsdp")
    return [fsdp.CPUOffloadPolicy().pin_memory, fsdp.CPUOffloadPolicy(pin_memory=False).pin_memory,
            fsdp.CPUOffloadPolicy() == fsdp.CPUOffloadPolicy(), fsdp.CPUOffloadPolicy() == fsdp.OffloadPolicy(),
            issubclass(fsdp.CPUOffloadPolicy, fsdp.OffloadPolicy), isinstance(fsdp.FullyShardedDataParallel, type),
            fsdp.MixedPrecisionPolicy().cast_forward_inputs]


def test_safetensors_storage_ptr_and_size_match_torch():
    """storage_ptr is equal for tensors sharing memory and differs otherwise; storage_size is the byte
    size of the whole storage (a view reports its base's), as safetensors.torch gives for torch."""
    pytest.importorskip("safetensors")
    import torch
    import safetensors.torch as real

    import hookgrad
    from hookgrad import _safetensors as ours

    def facts(T, module):
        base = T.arange(12, dtype=T.float32)
        view, other = base[2:6], T.zeros(3, dtype=T.float64)
        return [module.storage_ptr(base) == module.storage_ptr(view), module.storage_ptr(base) == module.storage_ptr(other),
                module.storage_size(base), module.storage_size(view), module.storage_size(other),
                module.storage_size(T.zeros(0))]

    assert facts(hookgrad, ours) == facts(torch, real)


@differential
def test_recurrent_modules_call_their_op_through_torch_function(T):
    """RNN/LSTM/GRU and their cells call one public op (torch's module calls _VF.lstm, gru_cell, ...):
    a __torch_function__ subclass sees that op and gets its outputs back as the subclass (torchview
    records recurrent layers this way)."""
    calls = []

    class Recorder(T.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(getattr(func, "__name__", ""))
            return super().__torch_function__(func, types, args, kwargs or {})

    T.manual_seed(0)
    x = T.tensor(np.random.default_rng(0).standard_normal((2, 4, 3)), dtype=T.float32).as_subclass(Recorder)
    out = []
    for make in (lambda: T.nn.LSTM(3, 4, batch_first=True), lambda: T.nn.GRU(3, 4, num_layers=2),
                 lambda: T.nn.RNN(3, 4, nonlinearity="relu", bidirectional=True), lambda: T.nn.RNN(3, 4)):
        calls.clear()
        result = make()(x)
        flat = [result[0]] + (list(result[1]) if isinstance(result[1], tuple) else [result[1]])
        out.append([[type(t).__name__ for t in flat], [n for n in calls if n in ("lstm", "gru", "rnn_tanh",
                                                                                   "rnn_relu")]])
    for make, state in ((lambda: T.nn.LSTMCell(3, 4), None), (lambda: T.nn.GRUCell(3, 4), None),
                        (lambda: T.nn.RNNCell(3, 4, nonlinearity="relu"), None), (lambda: T.nn.RNNCell(3, 4), None)):
        calls.clear()
        result = make()(x[:, 0])
        flat = list(result) if isinstance(result, tuple) else [result]
        out.append([[type(t).__name__ for t in flat], [n for n in calls if n.endswith("_cell")]])
    return out


@differential
def test_jit_annotations_names_and_checks(T):
    """torch.jit.annotations re-exports typing's names and classifies annotations; a bare container
    (Tuple, List, Dict, Optional) is refused with torch's RuntimeError."""
    import typing
    from importlib import import_module
    annotations = import_module(f"{T.__name__}.jit.annotations")
    checks = (annotations.is_tuple, annotations.is_list, annotations.is_dict, annotations.is_optional,
              annotations.is_union)
    out = [annotations.Tuple is typing.Tuple, annotations.List is typing.List, annotations.Optional is typing.Optional]
    for ann in (typing.Tuple[int, str], tuple, typing.List[int], typing.Dict[str, int], typing.Optional[int],
                typing.Union[int, str], int | None, int, list, typing.Tuple[()]):
        out.append([check(ann) for check in checks])
    for bare, check in ((typing.Tuple, annotations.is_tuple), (typing.List, annotations.is_list),
                        (typing.Dict, annotations.is_dict), (typing.Optional, annotations.is_optional)):
        out.append(catch(lambda: check(bare)))
    return out
