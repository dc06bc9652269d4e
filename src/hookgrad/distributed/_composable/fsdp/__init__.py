"""``torch.distributed._composable.fsdp``: the older home of the FSDP names."""
from ...fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard  # noqa: F401
