"""The built-in DistributedDataParallel communication hooks, with torch's names and signatures.

A hook is ``hook(state, bucket) -> Future`` whose value is the bucket's reduced (averaged) flat
gradient; register one with ``ddp_model.register_comm_hook(state, hook)``. Here ``state`` is the
process group (None for the default one).
"""
from __future__ import annotations

import hookgrad

from ... import distributed_c10d as dist

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook", "fp16_compress_wrapper",
           "bf16_compress_wrapper"]


def _group_size(process_group) -> int:
    return dist.get_world_size(process_group)


def _average(process_group, tensor):
    """Divide first (so that half precision does not overflow), then sum over the group."""
    tensor.div_(_group_size(process_group))
    return dist.all_reduce(tensor, group=process_group, async_op=True).get_future().then(lambda fut: fut.value()[0])


def allreduce_hook(process_group, bucket):
    """Average the bucket with one all-reduce: the same result as DDP without a hook."""
    return _average(process_group, bucket.buffer())


def _compress_hook(dtype, process_group, bucket):
    buffer = bucket.buffer()
    compressed = buffer.to(dtype)

    def decompress(fut):
        restored = bucket.buffer()
        restored.copy_(fut.value())
        return restored
    return _average(process_group, compressed).then(decompress)


def fp16_compress_hook(process_group, bucket):
    """Send the bucket as float16 (half the bytes), divided by the group size; cast back after."""
    return _compress_hook(hookgrad.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """As ``fp16_compress_hook`` with bfloat16 (needs ml_dtypes)."""
    return _compress_hook(hookgrad.bfloat16, process_group, bucket)


def _compress_wrapper(dtype, hook):
    def wrapped(hook_state, bucket):
        original = bucket.buffer()
        bucket.set_buffer(original.to(dtype))
        reduced = hook(hook_state, bucket)

        def decompress(fut):
            original.copy_(fut.value())
            return original
        return reduced.then(decompress)
    return wrapped


def fp16_compress_wrapper(hook):
    """Run ``hook`` on a float16 copy of the bucket and cast its result back."""
    return _compress_wrapper(hookgrad.float16, hook)


def bf16_compress_wrapper(hook):
    return _compress_wrapper(hookgrad.bfloat16, hook)
