"""``torch.distributed.fsdp``: ``FSDPModule`` exists for type checks; hookgrad does not shard models
(data parallelism is ``DistributedDataParallel``)."""
from .fully_sharded_data_parallel import FullyShardedDataParallel


class FSDPModule:
    """The class ``fully_shard`` mixes into a module; no hookgrad module is one."""


class MixedPrecisionPolicy:
    def __init__(self, param_dtype=None, reduce_dtype=None, output_dtype=None, cast_forward_inputs=True):
        self.param_dtype, self.reduce_dtype, self.output_dtype = param_dtype, reduce_dtype, output_dtype
        self.cast_forward_inputs = cast_forward_inputs


class OffloadPolicy:
    """The policy of keeping parameters where they are (``fully_shard``'s default)."""

    def __eq__(self, other):
        return type(other) is type(self) and vars(other) == vars(self)

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


class CPUOffloadPolicy(OffloadPolicy):
    def __init__(self, pin_memory: bool = True):
        self.pin_memory = pin_memory


def fully_shard(module, *args, **kwargs):
    raise RuntimeError("hookgrad has no fully_shard (FSDP): it does not shard models; for data-parallel "
                       "training use torch.nn.parallel.DistributedDataParallel")


__all__ = ["FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy", "CPUOffloadPolicy", "FullyShardedDataParallel",
           "fully_shard"]
