"""The backward graph: Node (one per recorded op), AccumulateGrad (one per leaf), saved tensors,
and the hook registries that live on nodes.

A Node's ``next_functions`` are edges ``(node, output_nr)`` to the nodes that produced its
forward inputs (``(None, 0)`` for inputs that need no grad). ``apply(grads)`` receives one
gradient per forward output (``None`` where none flowed) and returns one per edge.
"""
from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict
from typing import Any, Callable

from ..utils.hooks import RemovableHandle
from . import grad_mode

__all__ = ["Node", "AccumulateGrad", "SavedTensor", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks", "register_multi_grad_hook", "GradientEdge", "get_gradient_edge"]

_sequence = itertools.count()
# AccumulateGrad runs as soon as it is ready, like torch's (its sequence number is the maximum).
ACCUMULATE_SEQ = 1 << 62

_FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")


class Node:
    """A recorded operation in the backward graph.

    Subclasses implement ``apply(grads) -> tuple`` with hookgrad Tensor ops (so that
    ``create_graph=True`` records the backward itself). Tensors needed by the backward are stored
    with ``save(...)`` and read with ``saved()``, which checks they were not modified in place.
    """

    __slots__ = ("next_functions", "_seq", "_pre_hooks", "_post_hooks", "_tensor_pre_hooks",
                 "_retains_grad_hooks", "_metadata", "_saved", "_anomaly_trace", "__weakref__")

    # built-in formulas are skipped when no gradient arrived at all (every output stays undefined);
    # custom Functions and AccumulateGrad run regardless, as in torch
    runs_without_grads = False
    # how many forward outputs (gradient slots); multi-output nodes override it per instance
    _num_outputs = 1
    # AccumulateGrad: its leaf's own tensor hooks run as this node's tensor pre-hooks
    is_sink = False
    # torch's names of what ``save`` keeps, in order: each becomes the properties ``_saved_<name>``
    # (the tensor) and ``_raw_saved_<name>`` (the SavedTensor, where pack/unpack hooks can be set)
    saved_names = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # properties made once per class (a __getattr__ would slow every attribute access on nodes)
        for i, name in enumerate(cls.__dict__.get("saved_names", ())):
            setattr(cls, "_saved_" + name, property(_saved_accessor(i, raw=False)))
            setattr(cls, "_raw_saved_" + name, property(_saved_accessor(i, raw=True)))

    def __init__(self, next_functions: tuple):
        self.next_functions = next_functions
        self._seq = next(_sequence)
        self._pre_hooks = None
        self._post_hooks = None
        self._tensor_pre_hooks = None
        self._retains_grad_hooks = None
        self._metadata = None
        self._saved = ()
        if _anomaly_state.enabled:
            _record_forward_trace(self)
        else:
            self._anomaly_trace = None

    # -- what users see -------------------------------------------------------------------------
    def name(self) -> str:
        return type(self).__name__

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def _sequence_nr(self) -> int:
        return self._seq

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"

    def __call__(self, *grads):
        """Run this node's backward directly on gradients (no hooks), as torch allows."""
        out = self.apply(list(grads))
        return out[0] if len(out) == 1 else out

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_outputs) -> new grad_outputs or None`` runs before this node's backward."""
        if self._pre_hooks is None:
            self._pre_hooks = OrderedDict()
        handle = RemovableHandle(self._pre_hooks)
        self._pre_hooks[handle.id] = fn
        return handle

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs) -> new grad_inputs or None`` runs after the backward."""
        if self._post_hooks is None:
            self._post_hooks = OrderedDict()
        handle = RemovableHandle(self._post_hooks)
        self._post_hooks[handle.id] = fn
        return handle

    def _register_hook_dict(self, tensor) -> None:
        """Attach a tensor's hook dict so its hooks run before this node (torch's internal API)."""
        self._add_tensor_hooks(tensor._output_nr, tensor._backward_hooks)

    def _add_tensor_hooks(self, output_nr: int, hooks: dict) -> None:
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = []
        self._tensor_pre_hooks.append((output_nr, hooks))

    # -- saved tensors ------------------------------------------------------------------------
    def save(self, *tensors, output=None) -> None:
        """Keep ``tensors`` (and this node's ``output``, last) for the backward, with their versions."""
        saved = tuple(SavedTensor(t) if t is not None else None for t in tensors)
        if output is not None:
            saved += (SavedTensor(output, is_output=True),)
        self._saved = saved

    def saved(self) -> tuple:
        """The saved tensors, after checking none was modified in place since."""
        if self._saved is None:
            raise RuntimeError(_FREED_MESSAGE)
        return tuple(s.unpack(self) if s is not None else None for s in self._saved)

    def release_variables(self) -> None:
        if self._saved:
            self._saved = None

    def apply(self, grads: list) -> tuple:
        raise NotImplementedError(f"{self.name()} has no backward")


def _saved_accessor(index: int, raw: bool):
    def get(node):
        if node._saved is None:
            raise RuntimeError(_FREED_MESSAGE)
        saved = node._saved[index] if index < len(node._saved) else None
        if raw or saved is None:
            return saved
        return saved.unpack(node)
    return get


class SavedTensor:
    """A tensor kept for the backward: its value, or what the pack hook made of it.

    An op's own output is kept as its array and version counter rather than as the Tensor, so that
    output -> grad_fn -> saved output is no reference cycle; unpacking rebuilds a Tensor whose
    grad_fn is the node (what double backward needs).
    """

    __slots__ = ("tensor", "version", "counter", "unpack_hook", "packed", "is_output")

    def __init__(self, tensor, is_output=False):
        self.counter = tensor._version_counter
        self.version = self.counter[0]
        self.is_output = is_output
        hooks = _saved_hooks_stack[-1] if _saved_hooks_stack else None
        if hooks is None:
            self.tensor = tensor._data if is_output else tensor
            self.unpack_hook = None
        else:
            pack, self.unpack_hook = hooks
            self.tensor = None
            with _saved_hooks_disabled_while_packing():
                self.packed = pack(tensor)

    @property
    def data(self):
        return self.unpack()

    def register_hooks(self, pack_hook: Callable, unpack_hook: Callable) -> None:
        """Pack the saved value now with ``pack_hook``; the backward unpacks it with ``unpack_hook``."""
        if self.unpack_hook is not None:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already been set. "
                               "Hint: only one pair of hooks is allowed at a time.")
        value = self.unpack()
        self.packed, self.unpack_hook, self.tensor = pack_hook(value), unpack_hook, None

    def unpack(self, node=None):
        if self.unpack_hook is not None:
            value = self.unpack_hook(self.packed)
            from .._tensor import Tensor
            if not isinstance(value, Tensor):
                raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got "
                                f"result of type {type(value).__name__}")
            return value
        if self.counter[0] != self.version:
            if self.is_output:
                desc, where = f"[{_type_name(self.tensor)} {list(self.tensor.shape)}]", f", which is output 0 of {node.name()},"
            else:
                t = self.tensor
                fn = t.grad_fn
                desc = f"[{t.type()} {list(t.shape)}]"
                where = f", which is output {t._output_nr} of {fn.name()}," if fn is not None else ""
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: {desc}{where} is at version {self.counter[0]}; "
                f"expected version {self.version} instead. Hint: enable anomaly detection to find the "
                "operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True).")
        if self.is_output:
            out = _late.tensor.wrap(self.tensor)
            out._version_counter = self.counter
            out._grad_fn = node
            out._requires_grad = node is not None
            return out
        return self.tensor


def _type_name(array) -> str:
    from .._tensor import _LEGACY_TYPE_NAMES
    return _LEGACY_TYPE_NAMES.get(array.dtype.name, "torch.Tensor")


class AccumulateGrad(Node):
    """The sink for a leaf tensor: adds the incoming gradient into ``variable.grad``."""

    __slots__ = ("variable",)
    runs_without_grads = True
    is_sink = True

    def __init__(self, variable):
        super().__init__(())
        self._seq = ACCUMULATE_SEQ
        self.variable = variable

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def apply(self, grads):
        var = self.variable
        grad = grads[0]
        if grad is not None:
            _late.engine.accumulate_into_grad(var, grad)
        hooks = var._post_accumulate_grad_hooks
        if hooks:
            for hook in tuple(hooks.values()):
                if hook(var) is not None:
                    raise RuntimeError("post accumulate grad hooks must return None")
        return ()


class _late:
    """Modules that import this one, bound once the package has loaded (not per call)."""

    def __getattr__(self, name):
        import importlib
        module = importlib.import_module({"engine": "hookgrad.autograd.engine", "tensor": "hookgrad._tensor"}[name])
        setattr(self, name, module)
        return module


_late = _late()


# ---- saved-tensor hooks -------------------------------------------------------------------------
_saved_hooks_stack: list = []
_saved_hooks_disabled: list = []  # error messages; non-empty means registering is forbidden


class _saved_hooks_disabled_while_packing:
    """A pack hook that itself saves tensors must not recurse into pack hooks."""

    def __enter__(self):
        _saved_hooks_stack.append(None)

    def __exit__(self, *exc):
        _saved_hooks_stack.pop()


class saved_tensors_hooks:
    """Context manager: ``pack_hook(tensor)`` runs when an op saves a tensor for backward, and
    ``unpack_hook(packed)`` when the backward needs it back."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _saved_hooks_disabled:
            raise RuntimeError(_saved_hooks_disabled[-1])
        _saved_hooks_stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _saved_hooks_stack.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are copied off the device (a plain copy here: every tensor is on the CPU)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack(t):
            return (t.device, t.detach().clone())

        def unpack(packed):
            return packed[1]

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Inside, registering saved-tensor hooks raises RuntimeError(error_message)."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self):
        _saved_hooks_disabled.append(self.error_message)

    def __exit__(self, *exc):
        _saved_hooks_disabled.pop()
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **kw):
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*a, **kw)
        return wrapper


# ---- anomaly mode's forward traces ----------------------------------------------------------
class _AnomalyState:
    __slots__ = ("enabled", "check_nan")

    def __init__(self):
        self.enabled = False
        self.check_nan = True


_anomaly_state = _AnomalyState()


def _record_forward_trace(node) -> None:
    import traceback
    node._anomaly_trace = "".join(traceback.format_stack()[:-3])
    node.metadata["traceback_"] = node._anomaly_trace


# ---- gradient edges and multi-grad hooks ----------------------------------------------------
class GradientEdge(tuple):
    """``(node, output_nr)``: where a tensor's gradient enters the graph."""

    def __new__(cls, node, output_nr):
        return tuple.__new__(cls, (node, output_nr))

    node = property(lambda self: self[0])
    output_nr = property(lambda self: self[1])


def get_gradient_edge(tensor) -> GradientEdge:
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require gradients")
    return GradientEdge(*tensor._edge())


class _MultiHandle:
    """Removes several handles at once (what ``register_multi_grad_hook`` returns)."""

    def __init__(self, handles):
        self.handles = tuple(handles)

    def remove(self):
        for h in self.handles:
            h.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()

    def __getstate__(self):
        return self.handles

    def __setstate__(self, state):
        self.handles = state


def register_multi_grad_hook(tensors, fn: Callable, *, mode: str = "all"):
    """Call ``fn`` once per backward pass with the gradients of ``tensors``.

    ``mode="all"``: after every tensor's gradient of this pass is computed, with a tuple holding
    ``None`` for tensors the pass does not reach. ``mode="any"``: with the first gradient that
    is computed (just that tensor), once per pass.
    """
    from . import engine

    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    if mode == "any":
        fired_in = []

        def any_hook(grad):
            task = engine.current_task()
            if fired_in and fired_in[0] is task:
                return None
            fired_in[:] = [task]
            fn(grad)

        return _MultiHandle(t.register_hook(any_hook) for t in tensors if t.requires_grad)

    state = {"task": None, "count": 0, "grads": None}

    def make_hook(i):
        def hook(grad):
            task = engine.current_task()
            if state["task"] is not task:
                # a new backward pass: count only the tensors this pass will reach
                state["task"] = task
                state["grads"] = [None] * len(tensors)
                state["count"] = sum(1 for t in tensors if t.requires_grad and task.will_execute(t))
            state["grads"][i] = grad
            state["count"] -= 1
            if state["count"] == 0:
                grads, state["grads"] = tuple(state["grads"]), None
                fn(grads)
            return None
        return hook

    return _MultiHandle(t.register_hook(make_hook(i)) for i, t in enumerate(tensors) if t.requires_grad)
