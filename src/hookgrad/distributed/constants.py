"""``torch.distributed.constants``: the default timeout of a process group's collectives (30 minutes,
as torch's); there is no NCCL here, so its own default is None, as in a torch build without NCCL."""
from datetime import timedelta

__all__ = ["default_pg_timeout", "default_pg_nccl_timeout"]

_DEFAULT_PG_TIMEOUT = timedelta(minutes=30)
default_pg_timeout = _DEFAULT_PG_TIMEOUT
default_pg_nccl_timeout = None
