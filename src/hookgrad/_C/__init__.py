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
from . import _profiler  # noqa: F401,E402 - ProfilerConfig's _ExperimentalConfig


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
