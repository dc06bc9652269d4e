"""``torch._C._special``: torch's names of the ``torch.special`` functions, answered by hookgrad.special's
(see ``_aliases``)."""
from ._aliases import module_hooks

__getattr__, __dir__ = module_hooks("_special", "hookgrad.special")
