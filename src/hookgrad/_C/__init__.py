"""The few private ``torch._C`` entry points that PyTorch's hook tests and hook-aware libraries call,
with torch's behaviour; every other ``torch._C`` name is missing (and says so under ``hookgrad run``).

* ``_will_engine_execute_node(grad_fn)``: inside a backward pass, whether the pass runs that node.
* ``_current_autograd_node()``: the node whose backward (or whose saved-tensor unpacking) is
  running now; None outside the engine.
* ``_WeakTensorRef(tensor).expired()``: whether the tensor has been freed.
* ``_is_view_replay_enabled()`` / ``_set_view_replay_enabled(mode)``: hookgrad regenerates a view's
  history after an in-place change with one as_strided node (torch's CPU default); turning view
  replay on raises NotImplementedError rather than being ignored.
* ``_autograd._saved_tensors_hooks_is_enabled()``.
* ``_DisableTorchDispatch()``: a context in which dispatch modes (and the flop counter) see nothing.
* ``_current_graph_task_id()``: the running backward pass's number (-1 outside one);
  ``_current_graph_task_execution_order()``: the nodes the running pass will execute, in order.
* ``_functions.DelayedError`` / ``_functions.UndefinedGrad`` (see ``_functions``).
"""
from __future__ import annotations

import weakref

from . import _autograd, _functions  # noqa: F401


def _will_engine_execute_node(node) -> bool:
    from ..autograd.engine import current_task
    from ..autograd.graph import Node
    if not isinstance(node, Node):
        raise RuntimeError(f"_will_engine_execute_node expects an grad_fn, but got {type(node).__name__}")
    task = current_task()
    if task is None:
        raise RuntimeError("_get_should_execute_nodes should only be called during the backward pass")
    return task.will_execute_node(node)


def _current_autograd_node():
    from ..autograd.engine import current_task
    task = current_task()
    return None if task is None else task.current_node


def _current_graph_task_id() -> int:
    from ..autograd.engine import current_task
    task = current_task()
    return -1 if task is None else task.id


def _current_graph_task_execution_order() -> list:
    """The nodes of the running pass in the order its engine will run them, starting from its
    roots (computed from the pass's remaining dependency counts, as torch does)."""
    from ..autograd import is_multithreading_enabled
    from ..autograd.engine import current_task
    task = current_task()
    if task is None:
        raise RuntimeError("_current_graph_task_execution_order should only be called during the backward pass")
    if is_multithreading_enabled():
        raise RuntimeError("_current_graph_task_execution_order expects the current backward to be executed with "
                           "multithreading disabled, e.g. by running:\n\n>>> with torch.autograd."
                           "set_multithreading_enabled(False):\n...     torch.autograd.grad(...)\n")
    return task.execution_order()


class _WeakTensorRef:
    """A weak reference to a tensor that only answers whether it is gone."""

    def __init__(self, tensor):
        self._ref = weakref.ref(tensor)

    def expired(self) -> bool:
        return self._ref() is None


def _is_view_replay_enabled() -> bool:
    from ..autograd._view_tracking import is_view_replay_enabled
    return is_view_replay_enabled()


def _set_view_replay_enabled(mode: bool) -> None:
    from ..autograd._view_tracking import set_view_replay_enabled
    set_view_replay_enabled(mode)


class _DisableTorchDispatch:
    """``torch._C._DisableTorchDispatch()``: while entered (in this thread), dispatch modes and the
    flop counter see none of the ops that run."""

    _state = __import__("threading").local()

    def __enter__(self):
        _DisableTorchDispatch._state.depth = getattr(_DisableTorchDispatch._state, "depth", 0) + 1
        return self

    def __exit__(self, *exc_info):
        _DisableTorchDispatch._state.depth -= 1
        return False

    @staticmethod
    def active() -> bool:
        return getattr(_DisableTorchDispatch._state, "depth", 0) > 0


# ---- names Lightning and torchmetrics reach ---------------------------------------------------------
# Where a name is also defined further up this module, that definition wins (``_fallback``).
class _TensorMetaType(type):
    def __instancecheck__(cls, obj) -> bool:
        from .._tensor import Tensor
        return isinstance(obj, type) and issubclass(obj, Tensor)


class _TensorMeta(type, metaclass=_TensorMetaType):
    """``torch._C._TensorMeta``, the metaclass of torch's tensor classes: hookgrad's tensor classes
    are ordinary classes, so it answers isinstance for them (``isinstance(torch.Tensor,
    torch._C._TensorMeta)``) without being their ``type``."""


from .._zip_archive import PyTorchFileReader  # noqa: E402,F401  (torch.PyTorchFileReader is torch._C's)


class _fallback:
    """Definitions kept only for names nothing above defines."""

    @staticmethod
    def _log_api_usage_once(event) -> None:
        # torch logs API usage to its internal telemetry; hookgrad keeps none
        if not isinstance(event, str):
            raise TypeError(f"_log_api_usage_once(): incompatible function arguments; got {type(event).__name__}")

    @staticmethod
    def _parse_to(*args, **kwargs):
        """``torch._C._nn._parse_to``: the (device, dtype, non_blocking, memory_format) that
        ``Module.to(*args, **kwargs)`` reads from its arguments."""
        from ..nn.modules.module import _parse_to as parse
        return parse(*args, **kwargs)


globals().setdefault("_log_api_usage_once", _fallback._log_api_usage_once)
if "_nn" not in globals():  # the torch._C._nn namespace
    import sys as _sys
    import types as _types
    _nn = _types.ModuleType(__name__ + "._nn", "torch._C._nn: the nn functions' C namespace")
    _nn._parse_to = _fallback._parse_to
    _sys.modules[_nn.__name__] = _nn
