"""``torch.distributed.nn``: collectives that autograd differentiates through (``functional``).

torch exports ``RemoteModule`` here only when its RPC framework is available; hookgrad has no RPC,
so, as on a torch built without it, there is none."""
from .functional import *  # noqa: F401,F403
from .functional import __all__  # noqa: F401
