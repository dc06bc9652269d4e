"""``torch._dynamo.eval_frame``: where torch keeps the wrapper type of compiled modules. Libraries test
``isinstance(model, torch._dynamo.eval_frame.OptimizedModule)`` before unwrapping ``_orig_mod`` (accelerate,
peft, transformers); hookgrad never compiles, so no object is one, and ``innermost_fn`` finds no wrapper."""
from __future__ import annotations


class OptimizedModule:
    """The wrapper type torch.compile gives modules. hookgrad's compile returns the module itself,
    so no object is ever an ``OptimizedModule`` (``isinstance`` checks answer False, as wanted)."""

    def __init__(self, *args, **kwargs):
        raise TypeError("hookgrad does not compile modules: torch.compile returns the module itself")


def innermost_fn(fn):
    """The function under compile wrappers: with no compiler, the function itself."""
    return fn
