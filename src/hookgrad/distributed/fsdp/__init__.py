"""``torch.distributed.fsdp``: ``FSDPModule`` exists for type checks; hookgrad does not shard models
(data parallelism is ``DistributedDataParallel``)."""


class FSDPModule:
    """The class ``fully_shard`` mixes into a module; no hookgrad module is one."""


class MixedPrecisionPolicy:
    def __init__(self, param_dtype=None, reduce_dtype=None, output_dtype=None, cast_forward_inputs=True):
        self.param_dtype, self.reduce_dtype, self.output_dtype = param_dtype, reduce_dtype, output_dtype
        self.cast_forward_inputs = cast_forward_inputs


def fully_shard(module, *args, **kwargs):
    raise RuntimeError("hookgrad has no fully_shard (FSDP): it does not shard models; for data-parallel "
                       "training use torch.nn.parallel.DistributedDataParallel")


__all__ = ["FSDPModule", "MixedPrecisionPolicy", "fully_shard"]
