"""``torch._C._autograd``: the saved-tensor-hooks switch that ``disable_saved_tensors_hooks`` flips."""
from __future__ import annotations


def _saved_tensors_hooks_is_enabled() -> bool:
    """False inside ``torch.autograd.graph.disable_saved_tensors_hooks``, True elsewhere."""
    from ..autograd.graph import _saved_hooks_disabled
    return _saved_hooks_disabled[0] is None
