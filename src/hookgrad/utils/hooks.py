"""RemovableHandle: the object every ``register_*`` call returns.

A handle remembers which registry (a dict keyed by hook id) it was put in, by weak reference,
so that holding a handle never keeps a module or tensor alive. Ids come from one counter shared
by every kind of hook, which makes them usable as a global registration order.
"""
from __future__ import annotations

import warnings
import weakref
from collections import OrderedDict
from typing import Any

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks", "BackwardHook"]


class RemovableHandle:
    """Removes one hook from its registry (and from any companion registries) on ``remove()``.

    ``extra_dict`` is a dict or a list of dicts that are keyed by the same id and must forget it
    together with ``hooks_dict`` (for example the set of hooks registered with ``with_kwargs``).
    Also a context manager: the hook is removed when the ``with`` block ends.
    """

    id: int
    next_id: int = 0

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if isinstance(extra_dict, dict):
            self.extra_dict_ref: tuple = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)
        else:
            self.extra_dict_ref = ()

    def remove(self) -> None:
        """Unregister the hook. Calling it again, or after the owner is gone, does nothing."""
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            registry = ref()
            if registry is not None:
                registry.pop(self.id, None)

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state) -> None:
        # A dead registry is replaced by a fresh empty one so that remove() stays harmless.
        self.hooks_dict_ref = weakref.ref(state[0] if state[0] is not None else OrderedDict())
        self.id = state[1]
        # Ids must stay unique after unpickling a handle made in another process.
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        extras = state[2] if len(state) > 2 and state[2] is not None else ()
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras if d is not None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.remove()

    def __repr__(self) -> str:
        alive = self.hooks_dict_ref() is not None and self.id in self.hooks_dict_ref()
        return f"<RemovableHandle id={self.id} {'active' if alive else 'removed'}>"


def unserializable_hook(fn):
    """Mark ``fn`` as a hook that is knowingly lost on serialization (silences the warning)."""
    fn.__torch_unserializable__ = True
    return fn


def warn_if_has_hooks(tensor) -> None:
    """Warn for each tensor hook that serialization will drop."""
    hooks = getattr(tensor, "_backward_hooks", None)
    for hook in (hooks or {}).values():
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(
                f"backward hook {hook!r} on tensor will not be serialized. If this is expected, "
                "decorate the function with @hookgrad.utils.hooks.unserializable_hook to "
                "suppress this warning",
                stacklevel=2,
            )


# ---------------------------------------------------------------------------------------------
# Module backward hooks
# ---------------------------------------------------------------------------------------------
_identity_node_cls = None


def _identity_node_class():
    """The node class of the identity op that wraps a module's inputs and outputs while it has
    full backward hooks. It behaves as torch's ``BackwardHookFunction`` (a custom Function) does:
    its grad_fn is named ``BackwardHookFunctionBackward``; each output is a view of its input that
    refuses in-place ops when it requires grad; inputs that need no grad come out
    non-differentiable; missing gradients reach the hooks as zeros (materialized).

    The module's hook logic runs at the end of ``apply`` (``on_backward``), where torch runs it as
    the node's first post-hook: user hooks registered on the node still run before (pre-hooks) or
    after (post-hooks) it. It is a plain Node with a bound method, rather than a Function with a
    registered closure, because a hooked module call makes two of them on every forward: this
    halves the cost of full backward hooks."""
    global _identity_node_cls
    if _identity_node_cls is None:
        from hookgrad.autograd.graph import Node

        class BackwardHookFunctionBackward(Node):
            __slots__ = ("_num_outputs", "metas", "on_backward")
            runs_without_grads = True

            def apply(self, grads):
                if len(grads) == 1 and grads[0] is not None:
                    outs = (grads[0],)
                else:
                    outs = tuple([g if g is not None else _zeros(meta) for g, meta in zip(grads, self.metas)])
                replaced = self.on_backward(outs, grads)
                return outs if replaced is None else replaced

        _identity_node_cls = BackwardHookFunctionBackward
    return _identity_node_cls


def _zeros(meta):
    import numpy as np
    return _core()._tensor.wrap(np.zeros(meta[0], dtype=meta[1]))


_core_refs = None


def _refs():
    """(edge, make_view, view message) from the core, looked up once (this file loads before it)."""
    global _core_refs
    if _core_refs is None:
        from hookgrad._ops._base import edge
        from hookgrad._ops.views import make_view
        from hookgrad.autograd.function import _function_view_message
        _core_refs = (edge, make_view, _function_view_message)
    return _core_refs


def _identity_node(edges, metas, on_backward):
    node = (_identity_node_cls or _identity_node_class())(edges)
    node._num_outputs = len(edges)
    node.metas = metas
    node.on_backward = on_backward
    return node


def _identity_view(t, node, output_nr):
    """A view of ``t`` as output ``output_nr`` of the identity ``node`` (plain view without grad)."""
    _, make_view, _function_view_message = _core_refs or _refs()
    view = make_view(t, t._data.view())
    if t._requires_grad:
        view._grad_fn = node
        view._output_nr = output_nr
        view._requires_grad = True
        view.__dict__["_inplace_error"] = (_function_view_message, node, output_nr)
    return view


def _hook_identity(tensors, on_backward):
    """Pass ``tensors`` through one BackwardHookFunctionBackward node calling ``on_backward``."""
    edge = (_core_refs or _refs())[0]
    node = _identity_node(tuple([edge(t) for t in tensors]), [(t._data.shape, t._data.dtype) for t in tensors],
                          on_backward)
    return [_identity_view(t, node, i) for i, t in enumerate(tensors)]


def _hook_identity_one(t, on_backward):
    """``_hook_identity((t,), on_backward)[0]`` for one tensor (the common case)."""
    data = t._data
    node = _identity_node(((_core_refs or _refs())[0](t),), [(data.shape, data.dtype)], on_backward)
    return _identity_view(t, node, 0)


_hookgrad = None


def _core():
    """The hookgrad package (imported on first use: this file is imported by the core itself)."""
    global _hookgrad
    if _hookgrad is None:
        import hookgrad

        _hookgrad = hookgrad
    return _hookgrad


def _plain_call(kind, module, hook, *args):
    return hook(*args)


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

    __slots__ = ("user_hooks", "user_pre_hooks", "module", "dispatch", "grad_outputs", "n_outputs",
                 "output_tensors_index", "n_inputs", "input_tensors_index")

    def __init__(self, module, user_hooks, user_pre_hooks, dispatch=None) -> None:
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.dispatch = dispatch if dispatch is not None else _plain_call

        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    @staticmethod
    def _pack_with_none(indices, values, size):
        if size == 1 and indices == [0]:
            return (values[0],)
        packed = [None] * size
        for idx, val in zip(indices, values):
            packed[idx] = val
        return tuple(packed)

    @staticmethod
    def _unpack_none(indices, values):
        if len(values) == 1 and indices == [0]:
            return values if type(values) is tuple else tuple(values)
        return tuple([values[idx] for idx in indices])

    def _input_backward(self, grad_input, _grad_output):
        """The input node has the gradients w.r.t. the module's inputs: run the user hooks."""
        if self.grad_outputs is None:
            # The gradient reached the inputs without passing through the outputs
            # (e.g. double backward): there is no grad_output to report.
            return None
        original = res = self._pack_with_none(self.input_tensors_index, grad_input, self.n_inputs)
        setters = None
        for user_hook in self.user_hooks:
            out = self.dispatch("full_backward_hook", self.module, user_hook, self.module, res,
                                self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)} (module "
                                   f"{type(self.module).__name__}, hook {_hook_name(user_hook)})")
            if setters is None:
                setters = [None] * len(res)
            _note_setters(setters, res, out, user_hook)
            res = out
        self.grad_outputs = None
        if setters is None:  # no hook returned anything: the node passes its gradients on
            return None
        result = self._unpack_none(self.input_tensors_index, res)
        _check_replacements(self.module, "grad_input", self.input_tensors_index, original, res, setters)
        return result

    def _output_backward(self, _grad_input, grad_output):
        """The output node has the module's grad_output: run the pre-hooks and remember it."""
        self.grad_outputs = self._pack_with_none(self.output_tensors_index, grad_output, self.n_outputs)
        if self.user_pre_hooks:
            original = self.grad_outputs
            setters = [None] * len(original)
            expected_len = len(self.grad_outputs)
            for user_pre_hook in self.user_pre_hooks:
                new = self.dispatch("full_backward_pre_hook", self.module, user_pre_hook,
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
            _check_replacements(self.module, "grad_output", self.output_tensors_index, original,
                                self.grad_outputs, setters)

        local_grad_outputs = self.grad_outputs

        if self.input_tensors_index is None:
            # No input requires grad: the input node never runs, so fire here.
            warnings.warn("Full backward hook is firing when gradients are computed with respect "
                          "to module outputs since no inputs require gradients. See "
                          "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.register_full_backward_hook for more details.",
                          stacklevel=5)
            grad_inputs = (None,) * self.n_inputs
            for user_hook in self.user_hooks:
                res = self.dispatch("full_backward_hook", self.module, user_hook, self.module,
                                    grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient "
                                       "should always return None or None for all gradients.")
            self.grad_outputs = None

        if local_grad_outputs is not None:
            return self._unpack_none(self.output_tensors_index, local_grad_outputs)
        return None

    @staticmethod
    def _apply_on_tensors(on_backward, args):
        """Pass the tensors among ``args`` through an identity node calling ``on_backward``; return
        the new args and the positions of the tensors (None when nothing requires grad or grad
        mode is off)."""
        hookgrad = _hookgrad or _core()
        tensor_cls = hookgrad.Tensor
        tensors_idx = []
        tensors = []
        requires_grad = False
        for i, arg in enumerate(args):
            if isinstance(arg, tensor_cls):
                tensors_idx.append(i)
                tensors.append(arg)
                requires_grad |= arg.requires_grad

        if not (requires_grad and hookgrad.is_grad_enabled()):
            return args, None

        new_tensors = _hook_identity(tensors, on_backward)
        arg_list = list(args)
        for idx, val in zip(tensors_idx, new_tensors):
            arg_list[idx] = val
        if type(args) is tuple:
            out = tuple(arg_list)
        else:
            out = type(args)(*arg_list)
        return out, tensors_idx

    def setup_input_hook(self, args):
        if len(args) == 1 and type(args) is tuple:  # one positional input: the common case, inline
            t = args[0]
            hookgrad = _hookgrad or _core()
            if isinstance(t, hookgrad.Tensor):
                self.n_inputs = 1
                if t._requires_grad and hookgrad.is_grad_enabled():
                    self.input_tensors_index = [0]
                    return (_hook_identity_one(t, self._input_backward),)
                self.input_tensors_index = None
                return args
        res, input_idx = self._apply_on_tensors(self._input_backward, args)
        self.n_inputs = len(args)
        self.input_tensors_index = input_idx
        return res

    def setup_output_hook(self, args):
        hookgrad = _hookgrad or _core()
        if type(args) is hookgrad.Tensor:  # one output tensor: the common case, inline
            self.n_outputs = 1
            if args._requires_grad and hookgrad.is_grad_enabled():
                self.output_tensors_index = [0]
                return _hook_identity_one(args, self._output_backward)
            self.output_tensors_index = None
            return args
        is_tuple = True
        if not isinstance(args, tuple):
            args = (args,)
            is_tuple = False

        res, output_idx = self._apply_on_tensors(self._output_backward, args)
        self.n_outputs = len(args)
        self.output_tensors_index = output_idx

        if not is_tuple:
            res = res[0]
        return res


def _hook_name(hook) -> str:
    return getattr(hook, "__qualname__", None) or getattr(hook, "__name__", None) or repr(hook)


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
    hookgrad = _core()
    for i in indices or ():
        new, old = final[i], original[i]
        if new is old or new is None:
            continue
        hook = setters[i]
        where = f"(module {type(module).__name__}, hook {_hook_name(hook)}, {what}[{i}])"
        if not isinstance(new, hookgrad.Tensor):
            raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}' {where}")
        if old is None:
            continue
        if new.dtype != old.dtype:
            raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the type of value (was {old.type()} got "
                               f"{new.type()}) {where}")
        if tuple(new.shape) != tuple(old.shape):
            raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value (was "
                               f"{list(old.shape)} got {list(new.shape)}) {where}")
