"""``torch._functorch``: the modules behind ``torch.func`` and the ``functorch`` package that PyTorch
still ships (``import functorch`` reads ``deprecated``, ``make_functional`` and ``python_key`` from here).
The transforms themselves are hookgrad.func's."""
