"""The machinery behind a module's full backward hooks and backward pre-hooks.

While a module has such hooks, each call passes its positional tensor inputs, and then its
outputs, through an identity node (``BackwardHookFunctionBackward``, torch's
``BackwardHookFunction``). In backward, the output node runs first: it hands ``grad_output`` to
the pre-hooks (which may replace it) and keeps it; the input node then has ``grad_input`` and calls
the full backward hooks with both. ``Module.__call__`` is the only user; ``BackwardHook`` is also
reachable as ``hookgrad.utils.hooks.BackwardHook``, where torch has it.
"""
from __future__ import annotations

import sys

import numpy as np

from ..._C._torch_function import LIVE, call_as_caller, overrides_may_see
from ..._ops._base import edge
from ..._tensor import Tensor, wrap
from ...autograd import grad_mode
from ...autograd.function import _function_view_message
from ...autograd.engine import warn_at_caller
from ...autograd.graph import Node, _anomaly_state, _next_seq

_new_object = object.__new__

__all__ = ["BackwardHook"]


class _HookIdentityNode(Node):
    """An identity node that hands its gradients to ``on_backward(materialized, received)``: missing
    ones as zeros (from ``metas``, the shape and dtype of each), and as received (None). What
    ``on_backward`` returns, when not None, replaces the gradients it passes on."""

    __slots__ = ("_num_outputs", "metas", "on_backward")
    runs_without_grads = True

    def __init__(self, edges, metas, on_backward):
        Node.__init__(self, edges)
        self._num_outputs = len(edges)
        self.metas = metas
        self.on_backward = on_backward

    def apply(self, grads):
        if len(grads) == 1 and grads[0] is not None:  # the usual case: one gradient, present
            outs = (grads[0],)
            replaced = self.on_backward(outs, grads)
            return outs if replaced is None else replaced
        outs = list(grads)
        for i, g in enumerate(outs):
            if g is None:
                shape, dtype = self.metas[i]
                outs[i] = wrap(np.zeros(shape, dtype=dtype))
        outs = tuple(outs)
        replaced = self.on_backward(outs, grads)
        return outs if replaced is None else replaced


class BackwardHookFunctionBackward(_HookIdentityNode):
    """The identity node that wraps a hooked module's inputs or outputs.

    It behaves as torch's ``BackwardHookFunction`` (a custom Function): each output is a view of its
    input that refuses in-place ops when it requires grad; inputs that need no grad come out
    non-differentiable; missing gradients reach the hooks as zeros (materialized). The module's
    hook logic runs at the end of ``apply`` (``on_backward``), where torch runs it as the node's
    first post-hook, so user hooks registered on the node still run before (pre-hooks) or after
    (post-hooks) it. It is a plain Node with a bound method rather than a Function with a
    registered closure because a hooked call makes two of them on every forward: this halves the
    cost of full backward hooks.
    """

    __slots__ = ()


class _OneInputNode(BackwardHookFunctionBackward):
    """The input node of a call with one positional argument, a tensor: ``_input_backward``'s
    steps for one gradient, written into ``apply`` (a hooked call makes one of these per call)."""

    __slots__ = ("owner",)  # the call's BackwardHook (``on_backward`` is not set)

    def apply(self, grads):
        grad = grads[0]
        if grad is None:  # materialized, as the generic node does
            shape, dtype = self.metas[0]
            grad = wrap(np.zeros(shape, dtype=dtype))
        outs = (grad,)
        owner = self.owner
        grad_outputs = owner.grad_outputs
        if grad_outputs is None:  # reached without passing through the outputs: see _input_backward
            return outs
        res, setters = _run_full_backward_hooks(owner.dispatch, owner.module, owner.user_hooks, outs, grad_outputs)
        owner.grad_outputs = None
        if setters is None:
            return outs
        _check_replacements(owner.module, "grad_input", _FIRST_ONLY, outs, res, setters)
        return (res[0],)


class _OneOutputNode(BackwardHookFunctionBackward):
    """The output node of a call whose result is one tensor: ``_output_backward``'s steps for one
    gradient, written into ``apply``. Like the generic node's ``on_backward`` call, the pre-hooks
    and the record see the gradient as received (None when none arrived), and that is what the
    node passes on. (``metas`` and ``on_backward`` are not set: nothing here reads them.)"""

    __slots__ = ("owner",)  # the call's BackwardHook

    def apply(self, grads):
        owner = self.owner
        if owner.user_pre_hooks:
            return owner._output_backward(None, grads)
        owner.grad_outputs = outs = (grads[0],)
        if owner.input_tensors_index is None:
            owner._run_hooks_without_inputs()
        return outs


# what users see: one class name, as in torch, for every shape of call
_OneInputNode.__name__ = _OneInputNode.__qualname__ = "BackwardHookFunctionBackward"
_OneOutputNode.__name__ = _OneOutputNode.__qualname__ = "BackwardHookFunctionBackward"


def _identity_view(t, node, output_nr):
    """A view of ``t`` as output ``output_nr`` of the identity ``node`` (a plain view without grad)."""
    # wrap() and make_view's steps for a view recorded by no op, each slot set once: two of these
    # run per hooked call (test_identity_view_sets_every_tensor_slot keeps this in step with wrap)
    view = _new_object(Tensor)
    view._ndarray = t._ndarray.view()
    base = t._base_value
    view._base_value = t if base is None else base
    counter = view._version_counter = t._version_counter
    view._view_version = counter[0]
    view._grad_value = None
    view._tensor_hooks = None
    view._post_accumulate_hooks = None
    view._accumulator = None
    view._retains_grad = False
    if t._requires_grad:
        view._requires_grad = True
        view._grad_fn_value = node
        view._output_nr = output_nr
        view.__dict__["_inplace_error"] = (_function_view_message, node, output_nr)
    else:
        view._requires_grad = False
        view._grad_fn_value = None
        view._output_nr = 0
    return view


def _view_through_new_node(t, node_cls, owner):
    """A view of ``t``, which requires grad, as the one output of a new identity node of
    ``node_cls`` for ``owner`` (an edge to ``t``, no hooks, nothing saved).

    ``Node.__init__``, ``edge`` and ``_identity_view`` written out: this runs for the input and the
    output of every hooked call with one tensor in or out, and those calls were a large part of its cost
    (test_one_tensor_view_and_node_match_the_general_steps keeps them in step)."""
    fn = t._grad_fn_value
    base = t._base_value
    # a non-leaf, or a view not changed through its base since it was made (the output of a hooked
    # module passed on to the next one), has its grad_fn as its edge; otherwise its grad_fn may have
    # to be regenerated, or a leaf's edge is its accumulator: edge() decides
    if fn is not None and (base is None or t._view_version == t._version_counter[0]):
        t_edge = (fn, t._output_nr)
    else:
        t_edge = edge(t)
    node = _new_object(node_cls)
    if _anomaly_state.enabled:
        Node.__init__(node, (t_edge,))  # records where the forward ran
    else:
        node.next_functions = (t_edge,)
        node._seq = _next_seq()
        node._pre_hooks = None
        node._post_hooks = None
        node._tensor_pre_hooks = None
        node._retains_grad_hooks = None
        node._has_hooks = False
        node._metadata = None
        node._saved = ()
        node._input_dtypes = None
        node._anomaly_trace = None
    node._num_outputs = 1
    node.owner = owner
    # _identity_view's steps for a tensor that requires grad, written out (one call less per view)
    view = _new_object(Tensor)
    view._ndarray = t._ndarray.view()
    view._base_value = t if base is None else base
    counter = view._version_counter = t._version_counter
    view._view_version = counter[0]
    view._grad_value = None
    view._tensor_hooks = None
    view._post_accumulate_hooks = None
    view._accumulator = None
    view._retains_grad = False
    view._requires_grad = True
    view._grad_fn_value = node
    view._output_nr = 0
    view.__dict__["_inplace_error"] = (_function_view_message, node, 0)
    return view, node


# the tensor positions of a call with one tensor (read only: shared by every such call)
_FIRST_ONLY = (0,)


def _plain_call(kind, module, hook, *args):
    return hook(*args)


def _refuse_under_vmap(args) -> None:
    """Inside vmap, a batched tensor that requires grad (its flag lives on the batch it holds) gets
    torch's error: the hook's identity Function has no ``setup_context``."""
    batching = sys.modules.get("hookgrad._functorch.vmap")
    if batching is not None and batching.ACTIVE:
        batching.refuse_backward_hook(args)


class BackwardHook:
    """Runs one module call's full backward hooks and backward pre-hooks.

    ``Module.__call__`` makes one per call when such hooks exist. ``setup_input_hook`` passes the
    positional tensor inputs through an identity node and ``setup_output_hook`` does the same
    for the outputs. When the output node runs in backward it records ``grad_output`` (after the
    pre-hooks may replace it); when the input node has computed the gradients w.r.t. the inputs,
    the user hooks get ``(module, grad_input, grad_output)`` and may replace ``grad_input``.
    Positions that hold no tensor get ``None``; a tensor input that does not require grad gets a
    zero gradient (the identity node marks it non-differentiable, and its gradient is
    materialized), exactly as in PyTorch. If no input requires grad, the hooks run from the output
    node with all-None ``grad_input`` and a warning.

    ``dispatch(kind, module, hook, *args)`` calls a hook; ``Module`` passes one that reports to
    its hook observer.
    """

    # the state before the set-up and between backward passes, as class attributes: a hooked call
    # makes one BackwardHook, which then stores only what its call changes
    dispatch = staticmethod(_plain_call)
    grad_outputs = None
    n_outputs = -1
    output_tensors_index = None
    n_inputs = -1
    input_tensors_index = None

    def __init__(self, module, user_hooks, user_pre_hooks, dispatch=None) -> None:
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        if dispatch is not None:
            self.dispatch = dispatch

    @staticmethod
    def _pack_with_none(indices, values, size):
        if size == 1 and len(values) == 1:
            return (values[0],)
        packed = [None] * size
        for idx, val in zip(indices, values):
            packed[idx] = val
        return tuple(packed)

    @staticmethod
    def _unpack_none(indices, values):
        if len(indices) == 1:
            return (values[indices[0]],)
        return tuple([values[idx] for idx in indices])

    def _input_backward(self, grad_input, _grad_output):
        """The input node has the gradients w.r.t. the module's inputs: run the user hooks."""
        if self.grad_outputs is None:
            # The gradient reached the inputs without passing through the outputs
            # (e.g. double backward): there is no grad_output to report.
            return None
        if self.n_inputs == 1 and len(grad_input) == 1:  # one tensor in: _pack_with_none's result
            original = res = (grad_input[0],)
        else:
            original = res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
        res, setters = _run_full_backward_hooks(self.dispatch, self.module, self.user_hooks, res, self.grad_outputs)
        self.grad_outputs = None
        if setters is None:  # no hook returned anything: the node passes its gradients on
            return None
        result = self._unpack_none(self.input_tensors_index, res)
        _check_replacements(self.module, "grad_input", self.input_tensors_index, original, res, setters)
        return result

    def _output_backward(self, _grad_input, grad_output):
        """The output node has the module's grad_output: run the pre-hooks and remember it."""
        if self.n_outputs == 1 and not self.user_pre_hooks:
            # the usual case, one tensor out and no pre-hooks: what the general path below keeps,
            # runs and returns
            self.grad_outputs = grads = (grad_output[0],)
            if self.input_tensors_index is None:
                self._run_hooks_without_inputs()
            return grads
        self.grad_outputs = original = self._pack_with_none(self.output_tensors_index, grad_output,
                                                            self.n_outputs)
        setters = None
        if self.user_pre_hooks:
            setters = [None] * len(original)
            expected_len = len(self.grad_outputs)
            for user_pre_hook in self.user_pre_hooks:
                new = call_as_caller(self.dispatch, "full_backward_pre_hook", self.module, user_pre_hook,
                                    self.module, self.grad_outputs)
                if new is None:
                    continue
                actual_len = len(new)
                if actual_len != expected_len:
                    raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                       f"got {actual_len}, but expected {expected_len} (module "
                                       f"{type(self.module).__name__}, hook "
                                       f"{_hook_name(user_pre_hook)})")
                _note_setters(setters, self.grad_outputs, new, user_pre_hook)
                self.grad_outputs = new

        local_grad_outputs = self.grad_outputs

        if self.input_tensors_index is None:
            self._run_hooks_without_inputs()

        if local_grad_outputs is not None:
            if setters is not None:
                # checked here, where torch's engine checks them: after the hooks above have run
                _check_replacements(self.module, "grad_output", self.output_tensors_index, original,
                                    local_grad_outputs, setters)
            return self._unpack_none(self.output_tensors_index, local_grad_outputs)
        return None

    def _run_hooks_without_inputs(self):
        """No input requires grad, so the input node never runs: the hooks run from the output
        node, with a warning and all-None ``grad_input``."""
        warn_at_caller("Full backward hook is firing when gradients are computed with respect "
                       "to module outputs since no inputs require gradients. See "
                       "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                       "#torch.nn.Module.register_full_backward_hook for more details.")
        grad_inputs = (None,) * self.n_inputs
        for user_hook in self.user_hooks:
            res = call_as_caller(self.dispatch, "full_backward_hook", self.module, user_hook, self.module,
                                grad_inputs, self.grad_outputs)
            if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                   "should always return None or None for all gradients.")
        self.grad_outputs = None

    @staticmethod
    def _apply_on_tensors(on_backward, args):
        """Pass the tensors among ``args`` through one identity node calling ``on_backward``;
        return the new args and the positions of the tensors (None when nothing requires grad or
        grad mode is off)."""
        if not grad_mode.STATE.enabled:
            return args, None
        if args.__class__ is tuple and len(args) == 1:  # the usual module call: one tensor in, one out
            arg = args[0]
            if not (isinstance(arg, Tensor) and arg._requires_grad):
                return args, None
            node = BackwardHookFunctionBackward((edge(arg),), [(arg._ndarray.shape, arg._ndarray.dtype)], on_backward)
            return (_identity_view(arg, node, 0),), [0]
        # one pass with plain loops (no comprehensions): this runs twice per hooked module call
        tensors_idx = []
        edges = []
        metas = []
        requires_grad = False
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensors_idx.append(i)
                edges.append(edge(arg))
                metas.append((arg._ndarray.shape, arg._ndarray.dtype))
                requires_grad = requires_grad or arg._requires_grad
        if not requires_grad:
            _refuse_under_vmap(args)
            return args, None

        node = BackwardHookFunctionBackward(tuple(edges), metas, on_backward)
        new_args = list(args)
        for output_nr, i in enumerate(tensors_idx):
            new_args[i] = _identity_view(args[i], node, output_nr)
        return (tuple(new_args) if type(args) is tuple else type(args)(*new_args)), tensors_idx

    def setup_input_hook(self, args):
        self.n_inputs = n_inputs = len(args)
        if LIVE[0] and overrides_may_see(args):
            res, self.input_tensors_index = _apply_through_overrides(self._input_backward, args)
            return res
        if n_inputs == 1 and args.__class__ is tuple:
            # _apply_on_tensors' one-tensor case, written out (this runs on every hooked call)
            arg = args[0]
            if not (isinstance(arg, Tensor) and arg._requires_grad and grad_mode.STATE.enabled):
                self.input_tensors_index = None  # (a BackwardHook may be set up again)
                _refuse_under_vmap(args)
                return args
            view, node = _view_through_new_node(arg, _OneInputNode, self)
            node.metas = ((arg._ndarray.shape, arg._ndarray.dtype),)
            self.input_tensors_index = _FIRST_ONLY
            return (view,)
        res, self.input_tensors_index = self._apply_on_tensors(self._input_backward, args)
        return res

    def setup_output_hook(self, args):
        if isinstance(args, Tensor) and not (LIVE[0] and overrides_may_see((args,))):
            # _apply_on_tensors' one-tensor case, written out (this runs on every hooked call)
            self.n_outputs = 1
            if not (args._requires_grad and grad_mode.STATE.enabled):
                self.output_tensors_index = None
                _refuse_under_vmap((args,))
                return args
            self.output_tensors_index = _FIRST_ONLY
            return _view_through_new_node(args, _OneOutputNode, self)[0]
        is_tuple = isinstance(args, tuple)
        if not is_tuple:
            args = (args,)
        apply = _apply_through_overrides if LIVE[0] and overrides_may_see(args) else self._apply_on_tensors
        res, self.output_tensors_index = apply(self._output_backward, args)
        self.n_outputs = len(args)
        return res if is_tuple else res[0]


def _apply_through_overrides(on_backward, args):
    """``BackwardHook._apply_on_tensors`` for tensors that a mode or a Tensor subclass's
    ``__torch_function__`` may see: torch's steps, each the public call torch makes, in its order.
    Torch's identity Function returns its inputs, which its custom-Function machinery turns into views
    with ``view_as`` (under no_grad, through overrides: a subclass's view keeps its class, so the module,
    its forward hooks and the caller get the subclass); around it, ``requires_grad`` is read once per
    tensor by the set-up and once by the Function's ``mark_non_differentiable``, and ``grad_fn`` by the
    search for the new node."""
    tensors_idx = []
    tensors = []
    requires_grad = False
    for i, arg in enumerate(args):
        if isinstance(arg, Tensor):
            tensors_idx.append(i)
            tensors.append(arg)
            requires_grad |= arg.requires_grad
    if not grad_mode.STATE.enabled:
        return args, None
    if not requires_grad:
        _refuse_under_vmap(args)
        return args, None
    differentiable = [t.requires_grad for t in tensors]
    node = BackwardHookFunctionBackward(tuple([edge(t) for t in tensors]),
                                        [(t._ndarray.shape, t._ndarray.dtype) for t in tensors], on_backward)
    with grad_mode.unseen_no_grad():  # torch's BackwardHookFunction turns grad mode off in C++
        views = [t.view_as(t) for t in tensors]
    new_args = list(args)
    for output_nr, i in enumerate(tensors_idx):
        view = new_args[i] = views[output_nr]
        if not isinstance(view, Tensor):
            raise TypeError(f"view_as() returned '{type(view).__name__}', expected a Tensor")
        if differentiable[output_nr]:  # the view becomes the node's output (non-differentiable ones stay as made)
            view._requires_grad = True
            view._grad_fn_value = node
            view._output_nr = output_nr
            view.__dict__["_inplace_error"] = (_function_view_message, node, output_nr)
    # the reads torch's set-up makes to find the node (overrides see them; the node is known here)
    [t.grad_fn for t in views if t.grad_fn is not None and t.grad_fn.name() == "BackwardHookFunctionBackward"]
    return (tuple(new_args) if type(args) is tuple else type(args)(*new_args)), tensors_idx


def _hook_name(hook) -> str:
    return getattr(hook, "__qualname__", None) or getattr(hook, "__name__", None) or repr(hook)


def _run_full_backward_hooks(dispatch, module, hooks, grad_input, grad_output):
    """Calls each full backward hook with the grad_input the hooks before it left (a returned tuple
    replaces it); returns the last grad_input and, per position, the hook that last replaced it
    (None when no hook returned anything)."""
    setters = None
    for hook in hooks:
        out = call_as_caller(dispatch, "full_backward_hook", module, hook, module, grad_input, grad_output)
        if out is None:
            continue
        if len(out) != len(grad_input):
            raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                               f"got {len(out)}, but expected {len(grad_input)} (module "
                               f"{type(module).__name__}, hook {_hook_name(hook)})")
        if setters is None:
            setters = [None] * len(grad_input)
        _note_setters(setters, grad_input, out, hook)
        grad_input = out
    return grad_input, setters


def _note_setters(setters, old, new, hook) -> None:
    """Remember, per position, the last hook that replaced the gradient there."""
    for i, (o, n) in enumerate(zip(old, new)):
        if n is not o:
            setters[i] = hook


def _check_replacements(module, what, indices, original, final, setters) -> None:
    """Check hook-returned gradients against the ones they replace, as the engine would, but
    with an error that names the module and the hook: a tensor (or None) of the same shape and
    dtype at each tensor position."""
    if not any(setters):
        return
    for i in indices or ():
        new, old = final[i], original[i]
        if new is old or new is None:
            continue
        hook = setters[i]
        where = f"(module {type(module).__name__}, hook {_hook_name(hook)}, {what}[{i}])"
        if not isinstance(new, Tensor):
            raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}' {where}")
        if old is None:
            continue
        if new.dtype != old.dtype:
            # torch's engine quotes the name of torch's own wrapper around module hooks, 'hook'
            # (the user's hook is named in the context after it)
            raise RuntimeError(f"hook 'hook' has changed the type of value (was {old.type()} got "
                               f"{new.type()}) {where}")
        if tuple(new.shape) != tuple(old.shape):
            raise RuntimeError(f"hook 'hook' has changed the size of value (was "
                               f"{list(old.shape)} got {list(new.shape)}) {where}")
