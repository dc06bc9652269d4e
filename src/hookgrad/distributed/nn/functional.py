"""``torch.distributed.nn.functional``: the collectives of ``torch.distributed`` as autograd ops.

Each returns new tensors (the inputs are never written) and has the adjoint collective as its
backward: broadcast <-> reduce (SUM), gather <-> scatter, all_gather <-> reduce_scatter (SUM),
all_to_all <-> all_to_all, all_reduce <-> all_reduce with the same op (torch's rule; exact for
SUM). The backward collectives are autograd ops too, so double backward works. Like torch, the
functions for which torch names a replacement in ``_functional_collectives`` warn FutureWarning.
"""
from __future__ import annotations

import warnings

import hookgrad

from ...autograd.function import Function
from .. import distributed_c10d as dist
from ..distributed_c10d import ReduceOp, group

__all__ = ["broadcast", "gather", "scatter", "reduce", "reduce_scatter", "all_gather", "all_to_all",
           "all_to_all_single", "all_reduce"]


def _deprecated(name: str, replacement: str) -> None:
    warnings.warn(f"torch.distributed.nn.functional.{name} is deprecated, use "
                  f"torch.distributed._functional_collectives.{replacement} instead.", FutureWarning, stacklevel=3)


def broadcast(tensor, src, group=group.WORLD):
    """``src``'s ``tensor`` on every rank; the gradient is summed back onto ``src`` (zeros elsewhere)."""
    _deprecated("broadcast", "broadcast")
    return _Broadcast.apply(src, group, tensor)


def gather(tensor, dst=0, group=group.WORLD):
    """Every rank's ``tensor``, as a tuple indexed by rank (meaningful on ``dst``; zeros elsewhere)."""
    return _Gather.apply(dst, group, tensor)


def scatter(tensors, src=0, group=group.WORLD):
    """Rank i's share, ``tensors[i]`` of rank ``src``."""
    return _Scatter.apply(src, group, *tensors)


def reduce(tensor, dst, op=ReduceOp.SUM, group=group.WORLD):
    """The reduction of every rank's ``tensor`` (the result on ``dst``; other ranks get their input back)."""
    return _Reduce.apply(dst, op, group, tensor)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=group.WORLD):
    """Rank i gets the reduction over ranks of ``input_list[i]`` (written into ``output`` and returned)."""
    _deprecated("reduce_scatter", "reduce_scatter_single")
    return _ReduceScatter.apply(op, group, output, *input_list)


def all_gather(tensor, group=group.WORLD):
    """Every rank's ``tensor`` on every rank, as a tuple indexed by rank."""
    _deprecated("all_gather", "all_gather_single")
    return _AllGather.apply(group, tensor)


def all_to_all(output_tensor_list, input_tensor_list, group=group.WORLD):
    """Rank i sends ``input_tensor_list[j]`` to rank j; returns what each rank sent here, by rank."""
    return _AllToAll.apply(group, output_tensor_list, *input_tensor_list)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=group.WORLD):
    """``all_to_all`` of one tensor split along dim 0 (evenly, or by the split sizes)."""
    _deprecated("all_to_all_single", "all_to_all_single")
    return _AllToAllSingle.apply(group, output, output_split_sizes, input_split_sizes, input)


def all_reduce(tensor, op=ReduceOp.SUM, group=group.WORLD):
    """The reduction of every rank's ``tensor``, on every rank."""
    _deprecated("all_reduce", "all_reduce")
    return _AllReduce.apply(op, group, tensor)


# ---- the autograd ops -----------------------------------------------------------------------------
class _Broadcast(Function):
    @staticmethod
    def forward(ctx, src, group, tensor):
        ctx.src, ctx.group, ctx.rank = src, group, dist.get_rank(group=group)
        out = tensor.clone()
        dist.broadcast(out, src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        summed = _Reduce.apply(ctx.src, ReduceOp.SUM, ctx.group, grad_output)
        if ctx.rank != ctx.src:
            summed.zero_()  # only src's input reached the others
        return None, None, summed


class _Reduce(Function):
    @staticmethod
    def forward(ctx, dst, op, group, tensor):
        ctx.dst, ctx.group = dst, group
        out = tensor.clone()
        dist.reduce(out, dst, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return None, None, None, _Broadcast.apply(ctx.dst, ctx.group, grad_output)


class _Gather(Function):
    @staticmethod
    def forward(ctx, dst, group, tensor):
        ctx.dst, ctx.group = dst, group
        received = [hookgrad.zeros_like(tensor) for _ in range(dist.get_world_size(group=group))]
        here = dist.get_rank(group=group) == dst
        dist.gather(tensor.contiguous(), received if here else None, dst, group=group)
        return tuple(received)

    @staticmethod
    def backward(ctx, *grad_outputs):
        return None, None, _Scatter.apply(ctx.dst, ctx.group, *grad_outputs)


class _Scatter(Function):
    @staticmethod
    def forward(ctx, src, group, *tensors):
        ctx.src, ctx.group = src, group
        if any(t.shape != tensors[0].shape for t in tensors):
            raise AssertionError("scatter: every tensor to scatter must have the same shape")
        out = hookgrad.zeros_like(tensors[0])
        here = dist.get_rank(group=group) == src
        dist.scatter(out, list(tensors) if here else None, src, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None) + _Gather.apply(ctx.src, ctx.group, grad_output)


class _ReduceScatter(Function):
    @staticmethod
    def forward(ctx, op, group, output, *inputs):
        ctx.group = group
        output = output.contiguous()
        dist.reduce_scatter(output, [t.contiguous() for t in inputs], op=op, group=group)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None, None) + _AllGather.apply(ctx.group, grad_output)


class _AllGather(Function):
    @staticmethod
    def forward(ctx, group, tensor):
        ctx.group = group
        tensor = tensor.contiguous()
        received = [hookgrad.empty_like(tensor) for _ in range(dist.get_world_size(group=group))]
        dist.all_gather(received, tensor, group=group)
        return tuple(received)

    @staticmethod
    def backward(ctx, *grad_outputs):
        # rank i's input went to every rank's output i: its gradient is the sum over ranks of those
        # (all_to_all then a sum, as torch does on CPU backends)
        arrived = _AllToAll.apply(ctx.group, [hookgrad.empty_like(g) for g in grad_outputs], *grad_outputs)
        return None, hookgrad.stack(arrived).sum(0)


class _AllToAll(Function):
    @staticmethod
    def forward(ctx, group, output_tensor_list, *tensors):
        ctx.group = group
        ctx.input_shapes = [t.shape for t in tensors]
        dist.all_to_all(output_tensor_list, [t.contiguous() for t in tensors], group=group)
        return tuple(output_tensor_list)

    @staticmethod
    def backward(ctx, *grad_outputs):
        sent_back = [hookgrad.empty(shape, dtype=grad_outputs[0].dtype) for shape in ctx.input_shapes]
        return (None, None) + _AllToAll.apply(ctx.group, sent_back, *grad_outputs)


class _AllToAllSingle(Function):
    @staticmethod
    def forward(ctx, group, output, output_split_sizes, input_split_sizes, input):
        ctx.group, ctx.input_shape = group, input.shape
        ctx.splits_back = (input_split_sizes, output_split_sizes)  # the backward sends along the same routes back
        dist.all_to_all_single(output, input, output_split_sizes=output_split_sizes,
                               input_split_sizes=input_split_sizes, group=group)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        received, sent = ctx.splits_back
        grad_input = hookgrad.empty(ctx.input_shape, dtype=grad_output.dtype)
        return (None, None, None, None,
                _AllToAllSingle.apply(ctx.group, grad_input, received, sent, grad_output.contiguous()))


class _AllReduce(Function):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.op, ctx.group = op, group
        out = tensor.clone(memory_format=hookgrad.contiguous_format)
        dist.all_reduce(out, op=op, group=group)
        return out

    @staticmethod
    def backward(ctx, grad_output):
        return None, None, _AllReduce.apply(ctx.op, ctx.group, grad_output)
