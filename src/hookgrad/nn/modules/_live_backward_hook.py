"""Live module backward hooks: ``register_full_backward_hook(hook, live=True)`` and friends.

A live hook differs from a default full backward hook (``_backward_hook.BackwardHook``) in two
ways. It is looked up when backward reaches the module, so removing its handle between forward
and backward stops it, and one registered after forward still runs when the call was set up for
live hooks. And the module's inputs and outputs are not replaced by views, so in-place changes
to them are allowed (``nn.ReLU(inplace=True)`` after a hooked layer, or as the hooked layer).

How, without views: before ``forward`` one identity node (``LiveHookInputBackward``) is made with
an edge to each tensor input; it takes the first sequence number of the call, so every node the
call records has a later one. After the forward hooks, the nodes recorded during the call are
walked back from the outputs, and each of their edges that points at an input's gradient edge is
redirected to the identity node: it then receives exactly the gradient the module sends to its
inputs (what the default hooks' input view node receives). The outputs the call computed get a
second identity node (``LiveHookOutputBackward``) as their ``grad_fn``: the same tensors, not
views. An output the call did not compute (an input passed through, a parameter) and the second
of two identical inputs or outputs still get an identity view, as with the default hooks.

Hooks registered without ``live`` on the same module are captured at forward, as torch does, and
run in registration order with the live ones (global hooks first).
"""
from __future__ import annotations

from collections import OrderedDict

from ..._C._torch_function import call_as_caller
from ..._ops._base import edge
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...autograd import graph as _graph
from ...autograd.engine import warn_at_caller
from ._backward_hook import (_HookIdentityNode, _check_replacements, _hook_name, _identity_view, _note_setters,
                             _run_full_backward_hooks)

__all__ = ["LiveBackwardHook", "check_live_registration", "live_hook_ids", "live_snapshot"]

# The handle ids of the hooks registered with live=True (module and global ones; ids are unique
# across every registry). An OrderedDict so that a RemovableHandle can forget an id with its hook.
live_hook_ids: OrderedDict = OrderedDict()


def _module_registries():
    from . import module
    return module


def _has_live(*registries) -> bool:
    return any(hook_id in live_hook_ids for registry in registries for hook_id in registry)


def check_live_registration(module, hook, register: str, legacy: bool = False) -> None:
    """The checks of a live registration (and of a legacy one while live hooks exist): the hook
    is callable, and live and legacy backward hooks are not mixed on one module (or globally)."""
    where = "global module hooks" if module is None else f"module {type(module).__name__}"
    if not callable(hook):
        raise TypeError(f"{register}: the hook must be callable, but got {type(hook).__name__} "
                        f"({hook!r}) ({where})")
    m = _module_registries()
    if legacy:
        if module is None:
            mixed = _has_live(m._global_backward_pre_hooks, m._global_backward_hooks)
        else:
            mixed = _has_live(module._backward_pre_hooks, module._backward_hooks)
    elif module is None:
        mixed = m._global_is_full_backward_hook is False
    else:
        mixed = module._is_full_backward_hook is False
    if mixed:
        raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a "
                           "single Module. Please use only one of them. (live backward hooks cannot be "
                           f"mixed with register_backward_hook: {where}, hook {_hook_name(hook)}, "
                           f"{register})")


def live_snapshot(module):
    """The backward hooks that apply to ``module`` now, as (pre items, full items) of
    ``(handle id, hook, live?)``, global ones first; None when none of them is live."""
    m = _module_registries()
    registries = [m._global_backward_pre_hooks, module._backward_pre_hooks]
    if m._global_is_full_backward_hook is True:
        registries.append(m._global_backward_hooks)
    if module._is_full_backward_hook is True:
        registries.append(module._backward_hooks)
    if not _has_live(*registries):
        return None
    items = [[(hook_id, hook, hook_id in live_hook_ids) for hook_id, hook in registry.items()]
             for registry in registries]
    return items[0] + items[1], [item for full in items[2:] for item in full]


def _current_hooks(snapshot_items, registries):
    """The hooks to run now: those of the snapshot (a live one only while still registered) and
    live ones registered since, after them."""
    present = {}
    for registry in registries:
        present.update(registry)
    hooks = []
    seen = set()
    for hook_id, hook, live in snapshot_items:
        seen.add(hook_id)
        if not live:
            hooks.append(hook)
        elif hook_id in present:
            hooks.append(present[hook_id])
    for hook_id, hook in present.items():
        if hook_id in live_hook_ids and hook_id not in seen:
            hooks.append(hook)
    return hooks


class _LiveHookNode(_HookIdentityNode):
    """The identity node of a live backward hook: missing gradients reach ``on_backward`` as zeros
    and as received (None), as torch's hook function node does for its post-hooks and pre-hooks."""

    __slots__ = ()


class LiveHookInputBackward(_LiveHookNode):
    """Receives what a module with live backward hooks sends to its inputs; runs the full hooks."""

    __slots__ = ()


class LiveHookOutputBackward(_LiveHookNode):
    """Receives the gradients w.r.t. a module's outputs; runs the backward pre-hooks."""

    __slots__ = ()


def _tensor_slots(args):
    """Positions, gradient edges and (shape, dtype) of the tensors among ``args``, and whether one
    of them requires grad."""
    positions, edges, metas = [], [], []
    requires_grad = False
    for i, arg in enumerate(args):
        if isinstance(arg, Tensor):
            positions.append(i)
            edges.append(edge(arg))
            metas.append((arg._ndarray.shape, arg._ndarray.dtype))
            requires_grad = requires_grad or arg._requires_grad
    return positions, edges, metas, requires_grad


class LiveBackwardHook:
    """One module call's backward hooks in live mode; the interface of ``BackwardHook``
    (``setup_input_hook`` before forward, ``setup_output_hook`` after the forward hooks)."""

    __slots__ = ("module", "snapshot", "dispatch", "grad_outputs", "n_inputs", "input_tensors_index",
                 "n_outputs", "output_tensors_index", "input_node", "input_edges", "first_seq",
                 "output_node")

    def __init__(self, module, snapshot, dispatch) -> None:
        self.module = module
        self.snapshot = snapshot
        self.dispatch = dispatch
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = -1
        self.input_tensors_index = self.output_tensors_index = None
        self.input_node = self.output_node = None
        self.input_edges = None
        self.first_seq = None

    # -- the hooks, looked up now ---------------------------------------------------------------
    def pre_hooks(self):
        m = _module_registries()
        return _current_hooks(self.snapshot[0], (m._global_backward_pre_hooks, self.module._backward_pre_hooks))

    def full_hooks(self):
        m = _module_registries()
        registries = []
        if m._global_is_full_backward_hook is True:
            registries.append(m._global_backward_hooks)
        if self.module._is_full_backward_hook is True:
            registries.append(self.module._backward_hooks)
        return _current_hooks(self.snapshot[1], registries)

    # -- forward: set-up --------------------------------------------------------------------------
    def setup_input_hook(self, args):
        self.n_inputs = len(args)
        if not grad_mode.STATE.enabled:
            return args
        positions, edges, metas, requires_grad = _tensor_slots(args)
        if not requires_grad:
            # nodes of this call have later sequence numbers than this one
            self.first_seq = next(_graph._sequence)
            return args
        node = LiveHookInputBackward(tuple(edges), metas, self._input_backward)
        self.input_node, self.first_seq, self.input_tensors_index = node, node._seq, positions
        self.input_edges = {}
        new_args = None
        for slot, (i, e) in enumerate(zip(positions, edges)):
            if e[0] is None:
                continue
            if e in self.input_edges:
                # the same tensor twice: the forward cannot tell the two apart, so the second one
                # goes through a view of the identity node, as with the default hooks
                if new_args is None:
                    new_args = list(args)
                new_args[i] = _identity_view(args[i], node, slot)
            else:
                self.input_edges[e] = slot
        if new_args is None:
            return args
        return tuple(new_args) if type(args) is tuple else type(args)(*new_args)

    def setup_output_hook(self, result):
        is_tuple = isinstance(result, tuple)
        outputs = result if is_tuple else (result,)
        self.n_outputs = len(outputs)
        if not grad_mode.STATE.enabled or self.first_seq is None:
            return result
        positions, edges, metas, requires_grad = _tensor_slots(outputs)
        if not requires_grad:
            return result
        last_seq = next(_graph._sequence)
        if self.input_node is not None:
            self._redirect_input_edges(edges, last_seq)
            # an input passed through as an output: its gradient goes through the input node too
            edges = [(self.input_node, self.input_edges[e]) if e in self.input_edges else e for e in edges]
        node = LiveHookOutputBackward(tuple(edges), metas, self._output_backward)
        self.output_node, self.output_tensors_index = node, positions
        new_outputs = list(outputs)
        adopted = set()
        for slot, i in enumerate(positions):
            t = outputs[i]
            if not t._requires_grad:
                continue
            fn = t.grad_fn
            if id(t) not in adopted and fn is not None and self.first_seq < fn._seq < last_seq:
                # computed by this call: the tensor itself takes the identity node as its grad_fn
                adopted.add(id(t))
                t._grad_fn_value, t._output_nr = node, slot
                t._tensor_hooks = None  # hooks registered from now on belong to the new node
                if t._base_value is not None:
                    t._view_version = t._version_counter[0]
            else:
                new_outputs[i] = _identity_view(t, node, slot)
        if is_tuple:
            return tuple(new_outputs) if type(result) is tuple else type(result)(*new_outputs)
        return new_outputs[0]

    def _redirect_input_edges(self, output_edges, last_seq) -> None:
        """Point the edges of this call's nodes that lead to an input at the input node."""
        first_seq, input_edges, input_node = self.first_seq, self.input_edges, self.input_node
        stack = [fn for fn, _ in output_edges if fn is not None and first_seq < fn._seq < last_seq]
        seen = set(stack)
        while stack:
            node = stack.pop()
            redirected = None
            for j, e in enumerate(node.next_functions):
                nxt = e[0]
                if nxt is None:
                    continue
                slot = input_edges.get(e)
                if slot is not None:
                    if redirected is None:
                        redirected = list(node.next_functions)
                    redirected[j] = (input_node, slot)
                elif first_seq < nxt._seq < last_seq and nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
            if redirected is not None:
                node.next_functions = tuple(redirected)

    # -- backward -------------------------------------------------------------------------------
    @staticmethod
    def _pack(indices, values, size):
        packed = [None] * size
        for idx, val in zip(indices, values):
            packed[idx] = val
        return tuple(packed)

    def _output_backward(self, _materialized, grad_output):
        module = self.module
        self.grad_outputs = original = self._pack(self.output_tensors_index, grad_output, self.n_outputs)
        setters = None
        for pre_hook in self.pre_hooks():
            new = call_as_caller(self.dispatch, "full_backward_pre_hook", module, pre_hook, module, self.grad_outputs)
            if new is None:
                continue
            if len(new) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(new)}, but expected {len(self.grad_outputs)} (module "
                                   f"{type(module).__name__}, hook {_hook_name(pre_hook)})")
            if setters is None:
                setters = [None] * len(original)
            _note_setters(setters, self.grad_outputs, new, pre_hook)
            self.grad_outputs = new
        local_grad_outputs = self.grad_outputs

        if self.input_node is None:
            # no input requires grad: the input node does not exist, so the hooks fire here
            hooks = self.full_hooks()
            if hooks:
                warn_at_caller("Full backward hook is firing when gradients are computed with respect "
                               "to module outputs since no inputs require gradients. See "
                               "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                               "#torch.nn.Module.register_full_backward_hook for more details.")
            grad_inputs = (None,) * self.n_inputs
            for hook in hooks:
                res = call_as_caller(self.dispatch, "full_backward_hook", module, hook, module, grad_inputs,
                                     self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                       "should always return None or None for all gradients.")
            self.grad_outputs = None

        if setters is not None:
            _check_replacements(module, "grad_output", self.output_tensors_index, original,
                                local_grad_outputs, setters)
        # what the module's outputs pass on is the received gradients (None stays None)
        return tuple([local_grad_outputs[i] for i in self.output_tensors_index])

    def _input_backward(self, grad_input, _received):
        if self.grad_outputs is None:
            return None  # reached without passing through the outputs (e.g. double backward)
        module = self.module
        original = res = self._pack(self.input_tensors_index, grad_input, self.n_inputs)
        res, setters = _run_full_backward_hooks(self.dispatch, module, self.full_hooks(), res, self.grad_outputs)
        self.grad_outputs = None
        if setters is None:
            return None
        _check_replacements(module, "grad_input", self.input_tensors_index, original, res, setters)
        return tuple([res[i] for i in self.input_tensors_index])
