"""``torch.distributed._tensor``: the older name of ``torch.distributed.tensor``."""
from ..tensor import DTensor  # noqa: F401
