"""``torch._C._linalg``: torch's names of the ``torch.linalg`` functions, answered by hookgrad.linalg's
(see ``_aliases``)."""
from ._aliases import module_hooks

__getattr__, __dir__ = module_hooks("_linalg", "hookgrad.linalg")
