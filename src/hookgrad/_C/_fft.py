"""``torch._C._fft``: torch's names of the ``torch.fft`` functions, answered by hookgrad.fft's (see ``_aliases``)."""
from ._aliases import module_hooks

__getattr__, __dir__ = module_hooks("_fft", "hookgrad.fft")
