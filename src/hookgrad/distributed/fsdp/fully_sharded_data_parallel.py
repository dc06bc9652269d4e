"""``torch.distributed.fsdp.fully_sharded_data_parallel``: the module libraries import the first FSDP
wrapper from, to unwrap models (accelerate's ``extract_model_from_parallel``)."""


class FullyShardedDataParallel:
    """The first FSDP wrapper, for ``isinstance`` checks: hookgrad never makes one."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("hookgrad has no FullyShardedDataParallel: it does not shard models; for "
                           "data-parallel training use torch.nn.parallel.DistributedDataParallel")
