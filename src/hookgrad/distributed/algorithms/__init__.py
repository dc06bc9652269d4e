"""``torch.distributed.algorithms``: DistributedDataParallel's communication hooks."""
from .join import Join, Joinable, JoinHook  # noqa: E402,F401
