"""The backward graph: Node (one per recorded op), AccumulateGrad (one per leaf), saved tensors,
and the hook registries that live on nodes.

A Node's ``next_functions`` are edges ``(node, output_nr)`` to the nodes that produced its
forward inputs (``(None, 0)`` for inputs that need no grad). ``apply(grads)`` receives one
gradient per forward output (``None`` where none flowed) and returns one per edge.

Every autograd hook kind has one registry (an ordered dict keyed by the handle id, created on
first registration), one ``register_*`` method that returns a
:class:`~hookgrad.utils.hooks.RemovableHandle`, and one dispatch point in the engine; the engine
runs them per node in the order of the rows below (torch's):

======================  ===================================  ===============================  ===================================
kind                    registry                             registered with                  dispatched in (``autograd.engine``)
======================  ===================================  ===============================  ===================================
tensor hook             ``Tensor._backward_hooks``, seen by  ``Tensor.register_hook``         ``_call_tensor_pre_hooks``
                        the producing node as
                        ``Node._tensor_pre_hooks`` (a leaf's
                        by its AccumulateGrad)
retain_grad             ``Node._retains_grad_hooks``         ``Tensor.retain_grad``           ``_call_tensor_pre_hooks`` (last)
node pre-hook           ``Node._pre_hooks``                  ``Node.register_prehook``        ``_call_pre_hooks``
node post-hook          ``Node._post_hooks``                 ``Node.register_hook``           ``_call_post_hooks``
post-accumulate-grad    ``Tensor._post_accumulate_grad_      ``Tensor.register_post_          ``AccumulateGrad.apply``
hook                    hooks``                              accumulate_grad_hook``
module post-backward    ``_module_post_backward_hooks``      ``hookgrad.hooks.register_       ``AccumulateGrad.apply`` (after
hook                    (this module)                        module_post_backward_hook``      the post-accumulate hooks)
op backward hook        ``_op_backward_hooks`` (this         ``hookgrad.hooks.register_       ``_run_node`` (after the node
                        module)                              op_hook``                        post-hooks)
multi-grad hook         tensor hooks on each tensor          ``register_multi_grad_hook``     through the tensor hooks
                                                             (returns one handle for all)
saved-tensor hooks      ``_saved_hooks_stack`` (a context,   ``saved_tensors_hooks``          ``SavedTensor`` (pack when saved,
                        not a registry)                                                       unpack in ``Node.saved``)
======================  ===================================  ===============================  ===================================

Op forward hooks (``_op_forward_hooks``, this module) run after every op function returns: while one
is registered, ``hookgrad.hooks._ops`` swaps a hooked variant into each op function's code.
Module backward hooks are built from these (identity nodes with a post-hook-like callback, and
node post-hooks for the legacy kind): see ``hookgrad.nn.modules.module``.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import operator
import re
import weakref
from collections import OrderedDict
from typing import Any, Callable

from .._late import LateNames
from ..utils.hooks import RemovableHandle, note_registration
from . import grad_mode
from .grad_mode import InferenceCounter as _InferenceCounter

__all__ = ["Node", "AccumulateGrad", "SavedTensor", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks", "register_multi_grad_hook", "GradientEdge", "get_gradient_edge"]

_sequence = itertools.count()
_next_seq = _sequence.__next__
# AccumulateGrad runs as soon as it is ready, like torch's (its sequence number is the maximum).
ACCUMULATE_SEQ = 1 << 62

# The Tensor and the engine are layers above this one (see hookgrad/_late.py).
_above = LateNames(Tensor="hookgrad._tensor", wrap="hookgrad._tensor",
                   legacy_type_names="hookgrad._tensor:_LEGACY_TYPE_NAMES",
                   accumulate_into_grad="hookgrad.autograd.engine",
                   check_hook_result="hookgrad.autograd.engine:_check_hook_result",
                   call_as_caller="hookgrad._C._torch_function",
                   overrides_may_see="hookgrad._C._torch_function",
                   torch_function_live="hookgrad._C._torch_function:LIVE")

_FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")


# The backward passes now running, innermost last: the engine pushes and pops its GraphTasks here,
# so that a node's formula can ask which of its inputs' gradients the pass needs
_running_tasks: list = []


_NODE_INTERNALS: list = []
# the underscored names torch's nodes list in dir() (hookgrad's own machinery stays out of it)
_TORCH_NODE_UNDERSCORED = frozenset({"_input_metadata", "_register_hook_dict", "_sequence_nr", "_set_sequence_nr"})


def _node_internals() -> frozenset:
    """The underscored names Node itself defines for its machinery (slots such as ``_saved``,
    helpers such as ``_add_post_hook``), which ``dir(node)`` leaves out as torch's nodes have none."""
    if not _NODE_INTERNALS:
        names = set(_NodeBase.__slots__) | set(vars(_NodeBase))
        _NODE_INTERNALS.append(frozenset(n for n in names if n.startswith("_") and not n.startswith("__")
                                         and n not in _TORCH_NODE_UNDERSCORED))
    return _NODE_INTERNALS[0]


class _NodeBase:
    """What every node is and does (``Node`` below is its public face).

    Subclasses implement ``apply(grads) -> tuple`` with hookgrad Tensor ops (so that
    ``create_graph=True`` records the backward itself). Tensors needed by the backward are stored
    with ``save(...)`` and read with ``saved()``, which checks they were not modified in place.
    """

    __slots__ = ("next_functions", "_seq", "_pre_hooks", "_post_hooks", "_tensor_pre_hooks",
                 "_retains_grad_hooks", "_has_hooks", "_metadata", "_saved", "_anomaly_trace", "_freed_undefined",
                 "_input_dtypes", "__weakref__")

    # built-in formulas are skipped when no gradient arrived at all (every output stays undefined);
    # custom Functions and AccumulateGrad run regardless, as in torch
    runs_without_grads = False
    # how many forward outputs (gradient slots); multi-output nodes override it per instance
    _num_outputs = 1
    # AccumulateGrad: its leaf's own tensor hooks run as this node's tensor pre-hooks
    is_sink = False
    # ops on a tensor list (cat, stack): one formula yields every input's gradient, needed or not
    grads_for_every_input = False

    # torch's names of what ``save`` keeps, in order: each becomes the properties ``_saved_<name>``
    # (the tensor) and ``_raw_saved_<name>`` (the SavedTensor, where pack/unpack hooks can be set)
    saved_names = ()
    # the order in which torch's node unpacks (and so version-checks) what it saved, when that is not
    # the order it packed them: indices into the saved tuple
    unpack_order = None
    # torch's other ``_saved_<name>`` values (sizes, strides, dims, scalars, tensors the backward
    # does not need here): ``name -> fn(node)`` computing the value from what the node keeps. A
    # class declaring ``saved_values`` or ``saved_names`` states its whole set; otherwise it has its
    # base's. Values are computed when read: recording an op stores at most the argument a value
    # needs that the node does not keep already (a dim as the caller wrote it, a layout).
    saved_values = {}
    # the ``_saved_*`` / ``_raw_saved_*`` attribute names instances list in ``dir()``
    _listed_saved_attrs = frozenset()
    # whether release_variables is overridden (frees more than ``_saved``): the engine calls it
    # only for such nodes and for nodes that saved something
    _releases_more_than_saved = False
    # a custom Function's ctx.saved_tensors names its node when unpacking (torch's saved_for), so a
    # saved input detached in place since is still handed back; built-in nodes name none and refuse
    unpacks_for_itself = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._releases_more_than_saved = cls.release_variables is not _NodeBase.release_variables
        own_names, own_values = "saved_names" in cls.__dict__, "saved_values" in cls.__dict__
        if not (own_names or own_values):
            return
        names = cls.__dict__.get("saved_names", ()) if own_names else cls.saved_names
        values = cls.__dict__.get("saved_values", {}) if own_values else cls.saved_values
        attrs = set()
        # properties made once per class (a __getattr__ would slow every attribute access on nodes)
        for i, name in enumerate(names):
            setattr(cls, "_saved_" + name, property(_saved_accessor(i, raw=False)))
            setattr(cls, "_raw_saved_" + name, property(_saved_accessor(i, raw=True)))
            attrs.update(("_saved_" + name, "_raw_saved_" + name))
        for name, compute in values.items():
            setattr(cls, "_saved_" + name, property(compute))
            attrs.add("_saved_" + name)
        # what a base class saves and this one does not is hidden, as torch's classes are unrelated
        for base_attr in cls._listed_saved_attrs - attrs:
            setattr(cls, base_attr, property(_not_saved(base_attr)))
        cls._listed_saved_attrs = frozenset(attrs)

    def __dir__(self):
        listed = self._listed_saved_attrs
        hidden = _node_internals()
        return [n for n in super().__dir__()
                if n in listed or not (n.startswith("_saved_") or n.startswith("_raw_saved_") or n in hidden)]

    def __init__(self, next_functions: tuple):
        self.next_functions = next_functions
        self._seq = _next_seq()
        self._pre_hooks = None
        self._post_hooks = None
        self._tensor_pre_hooks = None
        self._retains_grad_hooks = None
        # set when any of the four registries above is made: the engine's one test for a plain node
        self._has_hooks = False
        self._metadata = None
        self._saved = ()
        # the forward inputs' NumPy dtypes when they differ (a float32 tensor against a float64 one):
        # the engine casts each gradient to its input's dtype, as torch's validate_outputs does
        self._input_dtypes = None
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
        # Python's default repr, as torch's nodes have: the class (not name(), which for AccumulateGrad is
        # "torch::autograd::AccumulateGrad"), with its module where that is one of torch's (a custom
        # Function's backward class lives in torch.autograd.function)
        cls = type(self)
        module = cls.__module__
        shown = f"{module}.{cls.__qualname__}" if module.startswith("torch.") else cls.__qualname__
        return f"<{shown} object at {id(self):#x}>"

    def __call__(self, *grads):
        """Run this node's backward directly on gradients (no hooks), as torch allows; one gradient per
        output of the forward."""
        if len(grads) != self._num_outputs:
            raise TypeError(f"expected {self._num_outputs} arguments, got {len(grads)} instead")
        out = self.apply(list(grads))
        return out[0] if len(out) == 1 else out

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_outputs) -> new grad_outputs or None`` runs before this node's backward."""
        handle = self._add_hook("_pre_hooks", fn)
        note_registration(self._pre_hooks, handle.id, holder=self)
        return handle

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs) -> new grad_inputs or None`` runs after the backward."""
        handle = self._add_post_hook(fn)
        note_registration(self._post_hooks, handle.id, holder=self)
        return handle

    def _add_post_hook(self, fn: Callable) -> RemovableHandle:
        """``register_hook`` without noting where: for hooks the machinery adds on every call."""
        return self._add_hook("_post_hooks", fn)

    def _add_hook(self, registry: str, fn: Callable) -> RemovableHandle:
        """Append ``fn`` to the hook dict in slot ``registry``, made (and the node marked hooked) on first use."""
        hooks = getattr(self, registry)
        if hooks is None:
            hooks = OrderedDict()
            setattr(self, registry, hooks)
            self._has_hooks = True
        handle = RemovableHandle(hooks)
        hooks[handle.id] = fn
        return handle

    def _register_hook_dict(self, tensor) -> None:
        """Attach a tensor's hook dict so its hooks run before this node (torch's internal API)."""
        self._add_tensor_hooks(tensor._output_nr, tensor._tensor_hooks)

    def _add_tensor_hooks(self, output_nr: int, hooks: dict) -> None:
        if self._tensor_pre_hooks is None:
            self._tensor_pre_hooks = []
            self._has_hooks = True
        self._tensor_pre_hooks.append((output_nr, hooks))

    # -- saved tensors ------------------------------------------------------------------------
    def save(self, *tensors, output=None) -> None:
        """Keep ``tensors`` (and this node's ``output``, last) for the backward, with their versions."""
        # spelled out for one and two tensors: this runs for most recorded ops
        n = len(tensors)
        if n == 0:
            saved = ()
        elif n == 1:
            t = tensors[0]
            saved = (None if t is None else SavedTensor(t),)
        elif n == 2:
            t, u = tensors
            saved = (None if t is None else SavedTensor(t), None if u is None else SavedTensor(u))
        else:
            saved = tuple([None if t is None else SavedTensor(t) for t in tensors])
        if output is not None:
            saved += (SavedTensor(output, True),)
        self._saved = saved

    def saved(self) -> tuple:
        """The saved tensors, after checking none was modified in place since."""
        saved = self._saved
        if saved is None:
            # a node that kept no tensor at all (what it saved was needed by no gradient) finds
            # nothing freed, as torch's undefined saved variables; a number kept as a tensor is
            undefined = getattr(self, "_freed_undefined", None)
            if undefined is None or not all(undefined) or self.saved_a_number():
                raise RuntimeError(_FREED_MESSAGE)
            return (None,) * len(undefined)
        n = len(saved)
        if n == 1:
            s = saved[0]
            return (None if s is None else s.unpack(self),)
        if n == 2:
            s, t = saved
            return (None if s is None else s.unpack(self), None if t is None else t.unpack(self))
        order = self.unpack_order
        if order is None:
            return tuple([None if s is None else s.unpack(self) for s in saved])
        values = [None] * n
        for i in order:
            s = saved[i]
            if s is not None:
                values[i] = s.unpack(self)
        return tuple(values)

    def saved_a_number(self) -> bool:
        """Whether a None in what this node saved stands for a number torch keeps as a tensor (freed
        with the rest): nodes that do so say when."""
        return False

    def release_variables(self) -> None:
        # (the engine runs these steps itself for nodes that do not override this method)
        saved = self._saved
        if saved:
            if None in saved:  # what was never saved still reads as None, as in torch
                self._freed_undefined = tuple(map(_is_none, saved))
            self._saved = None

    def _should_compute_output(self, index: int) -> bool:
        """Whether the running pass needs the gradient of input ``index`` (torch's
        ``task_should_compute_output``): the input has an edge and, in a pass that wants only some
        gradients (``autograd.grad``, ``backward(inputs=...)``), that edge leads toward one of them.
        Formulas with costly per-input work compute only these (what a create_graph pass records
        and saves, and what dispatch modes and profiles see, follow)."""
        nxt = self.next_functions[index][0]
        if nxt is None:
            return False
        if not _running_tasks:
            return True
        exec_info = _running_tasks[-1].exec_info
        return exec_info is None or nxt in exec_info

    def apply(self, grads: list) -> tuple:
        raise NotImplementedError(f"{self.name()} has no backward")


class _VirtualBase(type):
    """torch's ``autograd.graph.Node`` is a virtual base class: every node is an instance of it
    (and every node class a subclass), yet it is in no node class's MRO. The node classes here
    derive from ``Node`` (so they are easy to find); their MRO leaves it out and the checks below
    answer for it."""

    def mro(cls):
        order = super().mro()
        if _PUBLIC_NODE and cls is not _PUBLIC_NODE[0]:
            order = [klass for klass in order if klass is not _PUBLIC_NODE[0]]
        return order

    def __instancecheck__(cls, obj):
        if _PUBLIC_NODE and cls is _PUBLIC_NODE[0]:
            return isinstance(obj, _NodeBase)
        return super().__instancecheck__(obj)

    def __subclasscheck__(cls, sub):
        if _PUBLIC_NODE and cls is _PUBLIC_NODE[0]:
            return isinstance(sub, type) and (issubclass(sub, _NodeBase) or
                                              any(issubclass(sub, v) for v in _VIRTUAL_NODE_CLASSES))
        return super().__subclasscheck__(sub)

    def register(cls, subclass):
        """Count ``subclass`` as a node class in ``issubclass`` (what torch registers by hand, such as
        ``torch._C._functions.DelayedError``, whose instances make nodes when called)."""
        _VIRTUAL_NODE_CLASSES.append(subclass)
        return subclass


_PUBLIC_NODE: list = []
_VIRTUAL_NODE_CLASSES: list = []


class Node(_NodeBase, metaclass=_VirtualBase):
    """A recorded operation in the backward graph (``grad_fn``): its ``name()``, ``next_functions``,
    ``metadata`` and hooks (``register_hook``, ``register_prehook``). Node classes derive from it; as
    in torch it is a virtual base class, absent from their ``mro()``."""

    __slots__ = ()


_PUBLIC_NODE.append(Node)


def node_classes() -> list:
    """Every subclass of Node made so far, each once. Node classes are also made by factories and
    never stored in a module, so walking the subclasses is the only way to find them all."""
    found, pending, seen = [], list(Node.__subclasses__()), set()
    while pending:
        cls = pending.pop()
        if cls in seen:
            continue
        seen.add(cls)
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found
_is_none = functools.partial(operator.is_, None)


def saved_tensor(node, index: int, freed_if_undefined=False):
    """The ``index``-th tensor ``node`` saved, unpacked (what its ``_saved_<name>`` returns).
    ``freed_if_undefined``: the slot holds a value kept elsewhere (a number), freed with the rest."""
    if freed_if_undefined and node._saved is None:
        raise RuntimeError(_FREED_MESSAGE)
    return _saved_accessor(index, raw=False)(node)


def _not_saved(attr: str):
    def get(node):
        raise AttributeError(f"'{type(node).__name__}' object has no attribute '{attr}'")
    return get


def _saved_accessor(index: int, raw: bool):
    def get(node):
        if node._saved is None:
            undefined = getattr(node, "_freed_undefined", None)  # per slot: was it None?
            if undefined is not None and (index >= len(undefined) or undefined[index]):
                return None
            if raw:   # torch hands out the freed SavedTensor: its data is None, register_hooks refuses
                return SavedTensor.of_freed()
            raise RuntimeError(_FREED_MESSAGE)
        saved = node._saved[index] if index < len(node._saved) else None
        if saved is None:
            # torch keeps an undefined SavedVariable there: the raw one is a SavedTensor too
            return SavedTensor.of_none() if raw else None
        if raw:
            return saved
        return saved.unpack(node, saved_for=True)
    return get


def refuse_inference_saves(*tensors) -> None:
    """Raise torch's error if one of ``tensors`` (those an op is about to save) is an inference
    tensor. Ops with side effects call it before them, as torch saves inputs before it computes."""
    for t in tensors:
        if t is not None and t._version_counter.__class__ is _InferenceCounter:
            raise RuntimeError(
                "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
                "mode in computation tracked by autograd. To work around this, you can make a clone to get a "
                "normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
                "`torch.inference_mode()`.")


_NOTHING = object()


class SavedTensor:
    """A tensor kept for the backward: its value, or what the pack hook made of it.

    An op's own output is kept as its array and version counter rather than as the Tensor, so that
    output -> grad_fn -> saved output is no reference cycle; unpacking rebuilds a Tensor whose
    grad_fn is the node (what double backward needs). Under saved-tensor hooks, what the unpack
    hook returns takes the autograd identity of the original (its grad_fn, or its leaf's
    accumulator), as in torch: gradients through it reach the original.
    """

    __slots__ = ("tensor", "version", "counter", "unpack_hook", "packed", "is_output",
                 "grad_fn", "output_nr", "accumulator", "requires_grad")

    def __init__(self, tensor=_NOTHING, is_output=False):
        if tensor is _NOTHING:  # (made by the autograd machinery only, as in torch)
            raise RuntimeError("Trying to create a SavedTensor object from Python is forbidden.")
        counter = self.counter = tensor._version_counter
        if counter.__class__ is _InferenceCounter:
            refuse_inference_saves(tensor)
        self.version = counter[0]
        self.is_output = is_output
        if not _saved_hooks_stack or _saved_hooks_stack[-1] is None:
            self.unpack_hook = None
            if is_output:
                self.tensor = tensor._ndarray
                self.grad_fn = None
                # 0 unless the op says otherwise (group norm saves its outputs 1 and 2): an in-place op
                # renumbers its output only after saving it
                self.output_nr = 0
            else:
                self.tensor = tensor
                # a saved non-leaf that loses its history by detach_() cannot be used (torch refuses
                # too); an op's own output saved as an input and detached by the op itself is not
                self.grad_fn = tensor._grad_fn_value
        else:
            pack, self.unpack_hook = _saved_hooks_stack[-1]
            self.tensor = None
            self._remember_identity(tensor)
            self.packed = _call_pack_hook(pack, tensor)

    def _remember_identity(self, tensor) -> None:
        self.output_nr = tensor._output_nr
        self.requires_grad = tensor._requires_grad
        self.grad_fn = self.accumulator = None
        if self.is_output:
            return  # its node is the one unpacking it
        fn = tensor.grad_fn
        if fn is not None:
            self.grad_fn = fn
        elif tensor._requires_grad:
            # held strongly, as torch does: a leaf saved by a custom Function without being its input
            # stays alive (the accumulator holds it) for the unpacked value to stand in for
            self.accumulator = tensor._edge()[0]  # None for a view made under no_grad

    def _unpack_with_hook(self, node):
        value = _above.call_as_caller(self.unpack_hook, self.packed)
        Tensor = _above.Tensor
        if not isinstance(value, Tensor):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got "
                            f"result of type {type(value).__name__}")
        if not self.is_output and self.grad_fn is None and not self.requires_grad and not value._requires_grad:
            return value  # nothing autograd-related to restore: torch hands the hook's tensor back as it is
        out = _above.wrap(value._ndarray)
        out._version_counter = value._version_counter
        if self.is_output:
            # as without hooks: an in-place op on a view gave the output the view's new history
            fn = None if self.grad_fn is None else self.grad_fn()
            if fn is None:
                fn, output_nr = node, self.output_nr
            else:
                output_nr = 0
            out._grad_fn_value, out._output_nr, out._requires_grad = fn, output_nr, fn is not None
        elif self.grad_fn is not None:
            out._grad_fn_value, out._output_nr, out._requires_grad = self.grad_fn, self.output_nr, True
        elif self.requires_grad:
            if self.accumulator is not None:
                out._accumulator = weakref.ref(self.accumulator)
            out._requires_grad = True
        # (a view made under no_grad has no accumulator: no gradient reaches it, so none reaches its
        # stand-in; it still requires grad, as torch's unpacked variable does)
        return out

    @property
    def data(self):
        """What is stored: the packed object under hooks, else the original input, or for the
        node's own output a detached tensor sharing its data and version counter."""
        if self.unpack_hook is not None:
            return self.packed
        if self.is_output:
            out = _above.wrap(self.tensor)
            out._version_counter = self.counter
            return out
        return self.tensor

    @classmethod
    def of_none(cls) -> "SavedTensor":
        """What a custom Function's ``save_for_backward(None)`` shows in ``_raw_saved_tensors``."""
        saved = object.__new__(cls)
        saved.tensor = saved.unpack_hook = saved.grad_fn = saved.accumulator = None
        saved.is_output = False
        saved.counter, saved.version = [0], 0
        return saved

    @classmethod
    def of_freed(cls) -> "SavedTensor":
        """What ``_raw_saved_<name>`` shows once a backward freed the node's saved tensors."""
        saved = cls.of_none()
        saved.counter = None   # marks it freed
        return saved

    def register_hooks(self, *hooks) -> None:
        """``register_hooks(pack_hook, unpack_hook)``: pack the saved value now with ``pack_hook``;
        the backward unpacks it with ``unpack_hook``."""
        if len(hooks) != 2 or not all(callable(h) for h in hooks):
            raise TypeError("register_hooks(): incompatible function arguments. The following argument types are "
                            "supported:\n    1. (self: torch._C._autograd.SavedTensor, arg0: collections.abc."
                            "Callable, arg1: collections.abc.Callable) -> None\n\nInvoked with: "
                            + ", ".join(repr(a) for a in (self, *hooks)))
        pack_hook, unpack_hook = hooks
        if self.unpack_hook is not None:
            raise RuntimeError("Calling register_hooks on a saved tensor whose hooks have already been set. "
                               "Hint: only one pair of hooks is allowed at a time.")
        if self.counter is None:
            raise RuntimeError("Calling register_hooks on a saved tensor after it has been freed. Saved intermediate "
                               "values of the graph are freed when you call .backward() or autograd.grad(). Specify "
                               "retain_graph=True if you need to backward through the graph a second time or if you "
                               "need to access saved variables after calling backward.")
        if self.tensor is None:
            raise RuntimeError("Calling register_hooks on a saved tensor with value None is forbidden")
        value = self.unpack()
        view_history = self.grad_fn if self.is_output else None  # (an in-place op on a view's, held weakly)
        self._remember_identity(value)  # what the unpack hook returns takes the original's place
        if view_history is not None:
            self.grad_fn = view_history
        # as torch: grad mode off, a saved original is handed over as a detached alias, and the
        # hook may not modify it in place
        packed = _call_pack_hook(pack_hook, value if self.is_output else value.detach())
        self.packed, self.unpack_hook, self.tensor = packed, unpack_hook, None

    def unpack(self, node=None, saved_for=False):
        """The saved tensor (version-checked). ``saved_for``: ``node`` reads it as its owner (a
        ``_saved_*`` attribute), which torch allows even after an in-place detach."""
        if self.unpack_hook is not None:
            return self._unpack_with_hook(node)
        # torch looks for an in-place detach before it compares versions
        if not self.is_output and self.grad_fn is not None and self.tensor._grad_fn_value is None and not saved_for \
                and self.grad_fn is not node and not (node is not None and node.unpacks_for_itself):
            raise RuntimeError("Trying to use a saved tensor that has been detached in-place, i.e. with .detach_()."
                               "This is not supported, please use out-of-place `.detach()` instead")
        if self.counter[0] != self.version:
            if self.is_output:
                desc, where = f"[{_type_name(self.tensor)} {list(self.tensor.shape)}]", f", which is output 0 of {_forward_name(node)},"
            else:
                t = self.tensor
                fn = t.grad_fn
                desc = f"[{t.type()} {list(t.shape)}]"
                where = f", which is output {t._output_nr} of {_forward_name(fn)}," if fn is not None else ""
            from .anomaly_mode import is_anomaly_enabled
            hint = ("the backtrace further above shows the operation that failed to compute its gradient. The "
                    "variable in question was changed in there or anywhere later. Good luck!") if is_anomaly_enabled() \
                else ("enable anomaly detection to find the operation that failed to compute its gradient, with "
                      "torch.autograd.set_detect_anomaly(True, check_nan=False).")
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                f"operation: {desc}{where} is at version {self.counter[0]}; "
                f"expected version {self.version} instead. Hint: {hint}")
        if self.is_output:
            out = _above.wrap(self.tensor)
            out._version_counter = self.counter
            # an in-place op on a view keeps the view's new history (torch's weak grad_fn, see
            # views.apply_inplace): double backward then runs the op's node through CopySlices, once;
            # once that history is gone, the node itself stands in
            fn = None if self.grad_fn is None else self.grad_fn()
            if fn is None:
                fn = node
                out._output_nr = self.output_nr
            out._grad_fn_value = fn
            out._requires_grad = fn is not None
            return out
        return self.tensor


def _forward_name(node) -> str:
    """The op a node belongs to as torch's in-place error names it: "Exp" for ExpBackward0."""
    return re.sub(r"Backward\d*$", "", node.name())


def _type_name(array) -> str:
    return _above.legacy_type_names.get(array.dtype.name, "torch.Tensor")


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
        # a leaf whose requires_grad was switched off after the graph was built keeps its .grad (its
        # post-accumulate hooks still run), as in torch
        if grad is not None and var._requires_grad:
            _above.accumulate_into_grad(var, grad)
        hooks = var._post_accumulate_hooks
        if hooks:
            _run_post_accumulate_hooks(var, hooks)
        if _module_post_backward_hooks:
            _above.call_as_caller(_after_accumulate[0], self)
        return ()


# hookgrad.hooks' module post-backward hooks ({handle id: (module ref, fn)}) and what runs them,
# set by hookgrad.hooks: told of every AccumulateGrad that ran, after its post-accumulate hooks
_module_post_backward_hooks: OrderedDict = OrderedDict()
_after_accumulate: list = [None]

# hookgrad.hooks' op hooks: the registries ({handle id: hook}; empty: nothing runs) and the
# backward dispatch, set by hookgrad.hooks: [unused, op_ran(node, grad_inputs, grad_outputs) ->
# grad_inputs after the engine ran a node, unused] (forward op hooks need no dispatch point here:
# hookgrad.hooks swaps hooked code into the op functions while one is registered)
_op_forward_hooks: OrderedDict = OrderedDict()
_op_backward_hooks: OrderedDict = OrderedDict()
_op_dispatch: list = [None, None, 0]


def _run_post_accumulate_hooks(var, hooks) -> None:
    """As torch does: a hook may return the tensor itself; any other tensor (checked like a tensor
    hook's result) is passed to the later hooks, and refused once they have all run."""
    arg = var
    replaced = False
    call = _above.call_as_caller  # under the state backward() was called under, as other hooks
    for hook in tuple(hooks.values()):
        result = call(hook, arg)
        if result is None or result is arg:
            continue
        arg = _above.check_hook_result(hook, arg, result)
        replaced = True
    if replaced:
        raise RuntimeError("Tensor post accumulate grad hooks should return None.")


# ---- saved-tensor hooks -------------------------------------------------------------------------
# The hooks in force (innermost last) and the message that forbids registering any (None: allowed).
# A backward pass works on a copy: engine.execute snapshots both and restores them after each node.
_saved_hooks_stack: list = []
_saved_hooks_disabled: list = [None]
# bumped on every change, so that the engine notices a node's changes with one comparison
_saved_hooks_changes: list = [0]

_PACK_MODIFIED_INPUT = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook cannot be "
    "modified by in-place operations as this can lead to unexpected side-effects. Please open an issue if you "
    "need to perform in-place operations on the input to a pack hook.")


def saved_tensor_hooks_active() -> bool:
    """Whether a tensor saved now goes through a pack hook."""
    return bool(_saved_hooks_stack) and _saved_hooks_stack[-1] is not None


def _call_pack_hook(pack, tensor):
    """Run a pack hook as torch does: grad mode off, no saved-tensor hooks for what it saves itself,
    and its input must come back unchanged."""
    version = tensor._version_counter[0]
    prev = grad_mode.STATE.enabled
    grad_mode.STATE.enabled = False
    _saved_hooks_stack.append(None)
    try:
        packed = _above.call_as_caller(pack, tensor)  # (a pass's create_graph formulas save tensors too)
    finally:
        _saved_hooks_stack.pop()
        grad_mode.STATE.enabled = prev
    if tensor._version_counter[0] != version:
        raise RuntimeError(_PACK_MODIFIED_INPUT)
    return packed


def _hooks_state():
    return list(_saved_hooks_stack), _saved_hooks_disabled[0], _saved_hooks_changes[0]


def _restore_hooks_state(state) -> None:
    stack, disabled, changes = state
    _saved_hooks_stack[:] = stack
    _saved_hooks_disabled[0] = disabled
    _saved_hooks_changes[0] = changes


class saved_tensors_hooks:
    """Context manager: ``pack_hook(tensor)`` runs when an op saves a tensor for backward, and
    ``unpack_hook(packed)`` when the backward needs it back."""

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _saved_hooks_disabled[0] is not None:
            raise RuntimeError(_saved_hooks_disabled[0])
        _saved_hooks_stack.append((self.pack_hook, self.unpack_hook))
        _saved_hooks_changes[0] += 1

    def __exit__(self, *exc):
        if not _saved_hooks_stack:
            raise RuntimeError("saved_tensors_hooks exited more often than entered: no saved-tensor hooks are "
                               "in force here (a backward pass works on its own copy of them)")
        _saved_hooks_stack.pop()
        _saved_hooks_changes[0] += 1
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are copied off the device (a plain copy here: every tensor is on the CPU)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        # as torch's: without pinned memory a CPU tensor is kept as it is (``cpu()`` of a CPU tensor is
        # the tensor itself), so a later in-place change shows in what is unpacked; pinned memory copies
        def pack(t):
            if not pin_memory:
                return (t.device, t.cpu())
            packed = t.new_empty(t.size())
            packed.copy_(t)
            return (t.device, packed)

        def unpack(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack, unpack)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Inside, registering saved-tensor hooks raises RuntimeError(error_message); entering it while
    hooks are in force raises that error at once. Usable as a decorator too."""
    previous = _saved_hooks_disabled[0]
    try:
        _saved_hooks_disabled[0] = error_message
        _saved_hooks_changes[0] += 1
        if _saved_hooks_stack:
            raise RuntimeError(error_message)
        yield
    finally:
        _saved_hooks_disabled[0] = previous
        _saved_hooks_changes[0] += 1


# ---- anomaly mode's forward traces ----------------------------------------------------------
class _AnomalyState:
    __slots__ = ("enabled", "check_nan")

    def __init__(self):
        self.enabled = False
        self.check_nan = True


_anomaly_state = _AnomalyState()


_PACKAGE_DIR = __file__[:-len("autograd/graph.py")]  # .../hookgrad/


def _is_runner_frame(frame) -> bool:
    return frame.filename.startswith(_PACKAGE_DIR) or frame.filename.startswith("<frozen runpy>")


def _record_forward_trace(node) -> None:
    import traceback
    frames = traceback.extract_stack()[:-3]
    # the user's stack, as torch shows it: without hookgrad's own frames at the top (the op that
    # made the node) nor, under ``hookgrad run``, the runner's frames below the script
    end = len(frames)
    while end > 0 and frames[end - 1].filename.startswith(_PACKAGE_DIR):
        end -= 1
    start = 0
    while start < end and _is_runner_frame(frames[start]):
        start += 1
    if start == end:  # a stack made only of hookgrad frames: keep it whole
        start, end = 0, len(frames)
    node._anomaly_trace = "".join(traceback.format_list(frames[start:end]))
    node.metadata["traceback_"] = node._anomaly_trace
    # a node made while another node's backward runs (a backward that builds a graph) records that
    # node as its parent: an error's report walks up the chain
    from .engine import current_task
    task = current_task()
    if task is not None and task.current_node is not None:
        node.metadata["parent_"] = task.current_node


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
    edge = GradientEdge(*tensor._edge())
    # the shape and dtype of the gradient that enters there (torch reads them off the node): what
    # autograd.grad / backward check a given gradient against, or make ones of, for an edge as output
    edge._gradient_meta = (tensor._ndarray.shape, tensor._ndarray.dtype)
    return edge


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
    """Call ``fn`` with the gradients of ``tensors``.

    ``mode="all"``: once the gradients of every tensor this pass will compute have arrived, with a
    list holding ``None`` for the others. ``mode="any"``: with the first gradient computed (just
    that tensor), once per pass.
    """
    from . import engine

    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    if mode == "any":
        fired_in = set()

        def any_hook(grad):
            task = _task_or_fail(engine)
            if task.id in fired_in:
                return None
            fired_in.add(task.id)
            fn(grad)

        return _MultiHandle(t.register_hook(any_hook) for t in tensors if t.requires_grad)

    nodes = [_grad_fn_or_accumulator(t) for t in tensors]
    arrived = {}   # per pass (task id): how many gradients have arrived
    buffers = {}   # per pass: the gradients so far
    # how many to wait for: counted when a pass's first gradient arrives (one count for all
    # passes, as in torch, so that overlapping passes behave the same)
    expected = [None]

    def make_hook(index):
        def hook(grad):
            task = _task_or_fail(engine)
            key = task.id
            so_far = arrived.get(key, 0)
            arrived[key] = so_far + 1
            buffer = buffers.setdefault(key, [None] * len(tensors))
            if so_far == 0:
                expected[0] = sum(map(task.will_execute_node, nodes))
            buffer[index] = grad
            if so_far == expected[0] - 1:
                fn(buffer)
                del arrived[key], buffers[key]
            return None
        return hook

    return _MultiHandle(t.register_hook(make_hook(i)) for i, t in enumerate(tensors))


def _task_or_fail(engine):
    task = engine.current_task()
    if task is None:
        raise AssertionError("expected this hook to be called inside a backward call")
    return task


def _grad_fn_or_accumulator(tensor):
    """The node where ``tensor``'s gradient arrives: its grad_fn, or its leaf's AccumulateGrad."""
    if isinstance(tensor, GradientEdge):
        return tensor.node
    # requires_grad read first, as torch does (what a non-tensor's AttributeError names)
    if tensor.requires_grad and tensor.grad_fn is None:
        if _above.torch_function_live[0] and _above.overrides_may_see((tensor,)):
            # torch's route, which overrides see: the node behind a view made under grad mode. A
            # subclass's view comes back re-wrapped by an alias, so that node is the view's own,
            # one no pass runs (a leaf's hooks then count as not awaited, as in torch)
            with grad_mode.enable_grad():
                node = tensor.view_as(tensor).grad_fn.next_functions[0][0]
        else:
            node = tensor._edge()[0]  # None for a view made under no_grad: no gradient reaches it
    else:
        node = tensor.grad_fn
    if node is None:
        raise AssertionError("Expected gradient function to be set")
    return node


def saved_dim(dim):
    """An int argument (dim, index, offset, ...) as torch's nodes report it: as passed, a negative
    one read as unsigned 64-bit (torch's generated accessors convert int64 that way), tuples
    likewise, None as None."""
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        return tuple(d + 2 ** 64 if d < 0 else d for d in dim)
    return dim + 2 ** 64 if dim < 0 else dim


# torch.autograd.graph's names for in-place changes to saved tensors (they build on the hooks above)
from .saved_mutation import allow_mutation_on_saved_tensors, increment_version  # noqa: E402
__all__ += ["allow_mutation_on_saved_tensors", "increment_version"]


# ---- debug logging of a backward pass -------------------------------------------------------------
# torch's "autograd" logging artifact: with its logger at DEBUG, every node of the graph a backward
# pass starts from logs one line as it runs. The logger keeps torch's name so the usual
# ``logging.getLogger("torch.autograd")`` configuration reaches it.
import logging as _logging  # noqa: E402

engine_log = _logging.getLogger("torch.autograd.graph")


def _dtype_abbreviation(dtype) -> str:
    abbreviations = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int64": "i64",
                     "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "b8",
                     "complex64": "c64", "complex128": "c128"}
    name = str(dtype).rsplit(".", 1)[-1]
    return abbreviations.get(name, name)


def log_nodes_as_they_run(roots) -> Callable[[], None] | None:
    """When the engine logger is at DEBUG, give every node reachable from the root edges ``roots`` a
    prehook logging ``Executing: <node> with grad_outputs: [...]``; returns the undo, or None when
    not logging."""
    if not engine_log.isEnabledFor(_logging.DEBUG):  # (cached by the logger: every backward asks)
        return None
    from .. import _C

    def describe(t) -> str:
        if t is None:
            return "None"
        return f"{_dtype_abbreviation(t.dtype)}[{', '.join(map(str, t.shape))}]"

    def log_execution(grad_outputs):
        node = _C._current_autograd_node()
        engine_log.debug(f"Executing: {node} with grad_outputs: [{','.join(describe(g) for g in grad_outputs)}]")

    seen, order, pending = set(), [], [n for n, _ in roots if n is not None]
    while pending:
        node = pending.pop(0)
        if node in seen:
            continue
        seen.add(node)
        order.append(node)
        pending.extend(fn for fn, _ in node.next_functions if fn is not None)
    handles = [node.register_prehook(log_execution) for node in order]

    def undo():
        for handle in handles:
            handle.remove()
    return undo
