"""``torch.distributed.algorithms``: DistributedDataParallel's communication hooks."""
