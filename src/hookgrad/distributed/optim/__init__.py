"""``torch.distributed.optim``: ``ZeroRedundancyOptimizer`` exists for the type checks libraries make
(PyTorch-Ignite's Checkpoint asks whether an optimizer is one); hookgrad does not shard optimizer
state, so making one is an error that says so. ``DistributedOptimizer`` needs RPC, which hookgrad
does not have (``torch.distributed.rpc.is_available()`` is False), as in a torch built without it."""


class ZeroRedundancyOptimizer:
    """torch's optimizer that shards its state across ranks; no hookgrad optimizer is one."""

    def __init__(self, params, optimizer_class, *args, **kwargs):
        raise RuntimeError("hookgrad has no ZeroRedundancyOptimizer: it does not shard optimizer state across "
                           "ranks; use the optimizer itself (each rank keeps its full state)")


__all__ = ["ZeroRedundancyOptimizer"]
