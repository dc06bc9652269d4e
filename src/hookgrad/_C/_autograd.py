"""``torch._C._autograd``: the saved-tensor-hooks switch that ``disable_saved_tensors_hooks`` flips, and
``_make_saved_tensor``."""
from __future__ import annotations


def _saved_tensors_hooks_is_enabled() -> bool:
    """False inside ``torch.autograd.graph.disable_saved_tensors_hooks``, True elsewhere."""
    from ..autograd.graph import _saved_hooks_disabled
    return _saved_hooks_disabled[0] is None


def _make_saved_tensor(tensor, is_output, is_inplace_on_view=False):
    """A SavedTensor of ``tensor`` made as an op would save it: the saved-tensor hooks in force pack it
    now, and each ``unpack()`` runs the unpack hook."""
    from .._tensor import Tensor
    from ..autograd.graph import SavedTensor
    if not isinstance(tensor, Tensor) or not isinstance(is_output, bool) or not isinstance(is_inplace_on_view, bool):
        raise TypeError("_make_saved_tensor(): incompatible function arguments. The following argument types are "
                        "supported:\n    1. (tensor: torch.Tensor, is_output: bool, is_inplace_on_view: bool = False) "
                        "-> torch._C._autograd.SavedTensor")
    return SavedTensor(tensor, is_output)


def _unsafe_set_version_counter(tensors, versions) -> None:
    """Overwrite each tensor's version (shared with its views), for code that undoes its own in-place
    bookkeeping."""
    tensors, versions = tuple(tensors), tuple(versions)
    if len(tensors) != len(versions):
        raise RuntimeError(f"Expected as many versions as tensors, got {len(versions)} versions for "
                           f"{len(tensors)} tensors")
    for tensor, version in zip(tensors, versions):
        if version < 0:
            raise RuntimeError(f"Cannot set a version_counter to a value below 0: {version}")
        tensor._version_counter[0] = int(version)


def _get_current_graph_task_keep_graph() -> bool:
    """Whether the running backward pass keeps its graph (``retain_graph``); True outside a pass, as
    torch answers there."""
    from ..autograd.engine import current_task
    task = current_task()
    return True if task is None else bool(task.keep_graph)
