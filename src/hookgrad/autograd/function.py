"""User-defined differentiable ops: ``class MyOp(Function)`` with ``forward``/``backward``.

The node that a Function records is also its ``ctx`` (as in torch), and it is an ordinary
``Node``: the engine runs it, and every hook works on it, exactly as on built-in ops.
"""
from __future__ import annotations

import sys

import functools
import inspect
import re
import warnings

import numpy as np

from .. import _dtype
from .._late import LateNames
from . import _dual
from . import _hook_context as _hook_state
from . import grad_mode
from .graph import _FREED_MESSAGE, Node, SavedTensor

# The Tensor and the op helpers are layers above this one (see hookgrad/_late.py).
_above = LateNames(Tensor="hookgrad._tensor", wrap="hookgrad._tensor", edge="hookgrad._ops._base",
                   sum_to_shape="hookgrad._ops._base", check_inplace="hookgrad._ops.views",
                   make_view="hookgrad._ops.views", rebase_view_history="hookgrad._ops.views",
                   call_as_caller="hookgrad._C._torch_function")

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable", "InplaceFunction"]


class FunctionCtx:
    """What ``forward`` (or ``setup_context``) uses to pass state to ``backward``."""

    def save_for_backward(self, *tensors) -> None:
        self.to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors) -> None:
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The node (and ctx) of one call of a custom Function."""

    # no __slots__ here: ctx objects take arbitrary attributes
    _forward_cls = None
    runs_without_grads = True
    unpacks_for_itself = True

    def __init__(self, next_functions=()):
        Node.__init__(self, next_functions)
        self.materialize_grads = True
        self.to_save = None
        self.dirty_tensors = ()
        self.non_differentiable = ()

    def name(self) -> str:
        return type(self).__name__

    @property
    def saved_tensors(self):
        during_jvp = self.__dict__.get("_saved_for_jvp")
        if during_jvp is not None:  # inside jvp: what forward gave save_for_forward
            return during_jvp
        if not getattr(self._forward_cls, "clear_saved_tensors_on_access", False):
            return self.saved()
        # the Function asked for its saved tensors to be let go of once read
        if self.__dict__.get("_saved_taken"):
            raise RuntimeError("saved_tensors can only be accessed once when clear_saved_tensors_on_access=True is "
                               "set on the autograd.Function. Either access saved_tensors only once, or set "
                               "clear_saved_tensors_on_access=False.")
        values = self.saved()
        self._saved_taken = True
        self._saved = ()
        return values

    @property
    def _raw_saved_tensors(self):
        """The SavedTensor objects behind ``saved_tensors`` (one for each None saved too)."""
        saved = self._saved
        if saved is None:
            raise RuntimeError(_FREED_MESSAGE)
        return tuple(SavedTensor.of_none() if s is None else s for s in saved)

    @property
    def saved_variables(self):
        import warnings
        warnings.warn("'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning, stacklevel=2)
        return self.saved()

    def apply(self, grads):
        cls = self._forward_cls
        if self.materialize_grads:
            grads = [g if g is not None or meta is None else _zeros(meta) for g, meta in zip(grads, self._output_meta)]
        # a once_differentiable backward turns grad mode off itself (and marks its results)
        _hook_state.FUNCTION_BACKWARD[0] += 1
        try:
            # under the torch-function state backward() was called under: modes and subclasses see its ops
            result = _above.call_as_caller(_user_backward(cls), self, *grads)
        finally:
            _hook_state.FUNCTION_BACKWARD[0] -= 1
        if not isinstance(result, tuple):
            result = (result,)
        n_args = len(self._arg_is_tensor)
        if len(result) != n_args:
            if len(result) > n_args and all(r is None for r in result[n_args:]):
                result = result[:n_args]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                                   f"(expected {n_args}, got {len(result)})")
        Tensor = _above.Tensor
        input_meta = self._input_meta
        out = []
        for i, (g, is_tensor) in enumerate(zip(result, self._arg_is_tensor)):
            if not is_tensor:
                if g is not None:
                    raise RuntimeError(f"function {self.name()} returned a gradient different than None at position "
                                       f"{i + 1}, but the corresponding forward input was not a Variable")
                continue
            if g is not None:
                if not isinstance(g, Tensor):
                    raise TypeError(f"function {self.name()} returned a gradient of type {type(g).__name__} at "
                                    f"position {i + 1}; expected a Tensor or None")
                meta = input_meta[len(out)]
                # (as torch, only a gradient that flows on is checked: one for an input that needed none is dropped)
                if (g._ndarray.shape != meta[0] or g._ndarray.dtype != meta[1]) and self.needs_input_grad[i]:
                    g = _validate_grad(self, i, g, meta)
            out.append(g)
        return tuple(out)


def _bind_default_args(forward, args, kwargs) -> tuple:
    """(positional arguments with forward's defaults filled in, keyword-only arguments)."""
    bound = inspect.signature(forward).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


def _user_backward(cls):
    """The Function's ``backward``, or its ``vjp`` (the other name torch accepts); not both."""
    backward_fn, vjp_fn = cls.backward, cls.vjp
    if backward_fn is not Function.backward and vjp_fn is not Function.vjp:
        raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You should "
                           "only implement one of them.")
    return vjp_fn if vjp_fn is not Function.vjp else backward_fn


def _zeros(meta):
    return _above.wrap(np.zeros(meta[0], dtype=meta[1]))


def _validate_grad(node, index, g, meta):
    shape, dtype = meta
    if g._ndarray.shape != shape:
        try:
            if np.broadcast_shapes(shape, g._ndarray.shape) != g._ndarray.shape:
                raise ValueError
            g = _above.sum_to_shape(g, shape)
        except ValueError:
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {index} - got "
                               f"{list(g._ndarray.shape)} but expected shape compatible with {list(shape)}") from None
    if g._ndarray.dtype != dtype:
        g = g.to(_dtype.from_numpy_dtype(dtype))
    return g


def _defines_setup_context(cls) -> bool:
    """Whether ``cls`` (below Function in its MRO) defines setup_context: then forward takes no ctx."""
    for klass in cls.__mro__:
        # the root of the Function hierarchy (known by its bases: its name may be torch's under `hookgrad run`)
        if isinstance(klass, _FunctionMeta) and not any(isinstance(base, _FunctionMeta) for base in klass.__bases__):
            return False
        if "setup_context" in klass.__dict__:
            return True
    return False


class _FunctionMeta(type):
    """Gives every Function subclass its own node class, named ``<Name>Backward`` as in torch."""

    def __init__(cls, name, bases, attrs):
        # the node class lives where BackwardCFunction says it does (torch.autograd.function under `hookgrad run`)
        backward_cls = type(name + "Backward", (BackwardCFunction,),
                            {"_forward_cls": cls, "__module__": BackwardCFunction.__module__})
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)
        cls._custom_setup = _defines_setup_context(cls)


class Function(metaclass=_FunctionMeta):
    """Base class for custom autograd ops. Subclasses define static ``forward(ctx, *args)`` (or
    ``forward(*args)`` plus ``setup_context(ctx, inputs, output)``) and ``backward(ctx, *grads)``,
    and are called through ``apply``."""

    generate_vmap_rule = False
    # True: ``ctx.saved_tensors`` may be read once, and the node lets go of them when it is
    clear_saved_tensors_on_access = False

    def __init__(self, *args, **kwargs):
        import warnings
        warnings.warn(f"{type(self)} should not be instantiated. Methods on autograd functions are all static, so "
                      "you should invoke them on the class itself. Instantiating an autograd function will raise "
                      "an error in a future version of PyTorch.", DeprecationWarning, stacklevel=2)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use new-style "
                           "autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        batching = sys.modules.get("hookgrad._functorch.vmap")
        if batching is not None and batching.ACTIVE and batching.any_batched(args, kwargs):
            return batching.function_apply(cls, args, kwargs)
        Tensor, edge = _above.Tensor, _above.edge
        if cls._custom_setup:
            # as torch: forward's defaults (and arguments given by keyword) join the inputs
            # setup_context sees, positionally; each counts as an input backward returns a gradient for
            args, kwargs = _bind_default_args(cls.forward, args, kwargs)

        enabled = grad_mode.STATE.enabled
        tensor_args = []
        is_tensor = []
        needs = []
        recording = False
        for a in args:
            if isinstance(a, Tensor):
                tensor_args.append(a)
                is_tensor.append(True)
                req = enabled and a._requires_grad
                needs.append(req)
                recording = recording or req
            else:
                is_tensor.append(False)
                needs.append(False)
        node = cls._backward_cls(tuple([edge(t) for t in tensor_args]) if recording else ())
        node._arg_is_tensor = is_tensor
        node.needs_input_grad = tuple(needs)
        node._input_meta = [(t._ndarray.shape, t._ndarray.dtype) for t in tensor_args]

        grad_mode.STATE.enabled = False
        try:
            if cls._custom_setup:
                outputs = cls.forward(*args, **kwargs)
            else:
                outputs = cls.forward(node, *args, **kwargs)
        finally:
            grad_mode.STATE.enabled = enabled
        if cls._custom_setup:
            cls.setup_context(node, args, outputs)

        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        dirty = node.dirty_tensors
        non_diff = node.non_differentiable
        if dirty:
            _check_dirty_outputs(dirty, outs, tensor_args, non_diff, recording)
        wrapped = []
        meta = node._output_meta = []
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor):
                wrapped.append(o)
                meta.append(None)
                continue
            is_dirty = bool(dirty) and any(o is t for t in dirty)
            is_non_diff = bool(non_diff) and any(o is t for t in non_diff)
            # ctx._materialize_non_diff_grads = False: a non-differentiable output's missing gradient
            # reaches backward as None even while grads are materialized (torch's private switch)
            keeps_none = is_non_diff and not node.__dict__.get("_materialize_non_diff_grads", True)
            meta.append(None if keeps_none else (o._ndarray.shape, o._ndarray.dtype))
            is_input = any(o is t for t in tensor_args)
            if not is_dirty and is_input:
                # an input returned as-is: the caller gets a view of it, which refuses in-place ops
                o = _returned_input_view(o, node, i, recording and not is_non_diff)
            if recording and not is_non_diff and _dtype.is_inexact_np(o._ndarray.dtype):
                if is_dirty:
                    _above.check_inplace(o)
                    o._version_counter[0] += 1
                    o._tensor_hooks = None
                if is_dirty and o._base_value is not None and len(outs) == 1:
                    # a view changed in place: as torch, its base's history goes through this node
                    o._grad_fn_value = node
                    _above.rebase_view_history(o, node)
                else:
                    o._grad_fn_value = node
                    o._output_nr = i
                    o._requires_grad = True
                    if o._base_value is not None:  # its history is this node now, whatever forward did to it
                        o._view_version = o._version_counter[0]
            elif is_non_diff:
                o._requires_grad = False
            if o._base_value is not None and not is_input:
                # a view made inside forward: torch refuses in-place changes of it once it (or the op's
                # result) requires grad. (An input returned as-is is marked by _returned_input_view when
                # the call is recorded; unrecorded, torch refuses it too, hookgrad does not.)
                o.__dict__["_inplace_error"] = (_function_view_message, node if o._grad_fn_value is node else None, i)
            wrapped.append(o)
        node._num_outputs = len(outs)
        if _dual.LEVEL[0] >= 0 and _dual.has_tangents() and _dual.FWD_GRAD_ENABLED[0]:
            _push_function_tangents(cls, node, args, wrapped, dirty)
        # torch saves only when the call is recorded (grad mode on and an input requiring grad); a
        # pack hook does not see the tensors of an unrecorded call
        to_save = node.to_save
        # as torch, the ctx lets go of what forward handed it before saving (a pack hook may raise,
        # as checkpoint's early stop does): these may be its outputs, and output -> node -> output
        # would be a reference cycle
        node.to_save = node.dirty_tensors = node.non_differentiable = node.saved_for_forward = None
        if to_save is not None and recording:
            node._saved = tuple(None if t is None else SavedTensor(
                t, is_output=any(t is o and o._grad_fn_value is node for o in wrapped)) for t in to_save)
        return wrapped[0] if single else tuple(wrapped)

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("hookgrad does not implement vmap")


def _push_function_tangents(cls, ctx, args, outputs, dirty) -> None:
    """Forward AD through a custom Function: its ``jvp`` maps the inputs' tangents (None for a
    non-tensor argument, zeros for a tensor without one) to the outputs' tangents."""
    Tensor = _above.Tensor
    tangents = [_dual.tangent_of(a) if isinstance(a, Tensor) else None for a in args]
    if all(t is None for t in tangents):
        return
    if cls.jvp is Function.jvp:
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")
    from .. import zeros_like
    tangents = [zeros_like(a) if t is None and isinstance(a, Tensor) else t for a, t in zip(args, tangents)]
    _dual.FWD_GRAD_ENABLED[0] = False  # the jvp's own ops carry no tangents
    ctx._saved_for_jvp = tuple(getattr(ctx, "saved_for_forward", None) or ())
    try:
        results = cls.jvp(ctx, *tangents)
    finally:
        _dual.FWD_GRAD_ENABLED[0] = True
        del ctx._saved_for_jvp
    results = results if isinstance(results, tuple) else (results,)
    tensor_outputs = [o for o in outputs if isinstance(o, Tensor)]
    if len(results) != len(outputs) and len(results) != len(tensor_outputs):
        raise RuntimeError(f"jvp function returned an incorrect number of gradients (expected {len(outputs)}, got "
                           f"{len(results)})")
    pairs = zip(outputs, results) if len(results) == len(outputs) else zip(tensor_outputs, results)
    for out, tangent in pairs:
        if not isinstance(out, Tensor) or tangent is None:
            continue
        for a, given in zip(args, tangents):
            if dirty and any(a is d for d in dirty) and (out is a or out._base_value is a) and tangent is not given:
                raise RuntimeError("jvp function must modify the corresponding gradient inplace")
        _dual.set_tangent(out, tangent)


def _check_dirty_outputs(dirty, outs, tensor_args, non_diff, recording) -> None:
    """torch's checks of ``ctx.mark_dirty``, made before any output is touched."""
    for t in dirty:
        if not any(t is o for o in outs):
            raise RuntimeError("Some elements marked as dirty during the forward method were not returned as output. "
                               "The inputs that are modified inplace must all be outputs of the Function.")
    if not recording:
        return
    for t in dirty:
        if not isinstance(t, _above.Tensor) or (non_diff and any(t is n for n in non_diff)):
            continue
        if not any(t is a for a in tensor_args):
            message = ("ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that have been "
                       "mutated should be passed to ctx.mark_dirty().")
            if t._base_value is not None:
                raise RuntimeError(message)
            warnings.warn(message)
        elif t._base_value is not None and len(outs) > 1:
            raise RuntimeError(
                "If your Function modifies inplace an input that is a view of another Tensor, your Function cannot "
                "return more than one Tensor. This is not supported by the current autograd engine. You should either "
                "make sure the input is not a view (using .clone() for example) or make your Function only return one "
                "Tensor (potentially splitting it into two Functions: one doing the inplace that returns a single "
                "Tensor and a second one that does the other operations). You can ask on the forum "
                "https://discuss.pytorch.org/ if you need help to do this change.")


def _overloads_torch_function(cls) -> bool:
    from .._C._torch_function import _disabled_torch_function_impl   # a subclass's call only: off the common path
    return getattr(cls, "__torch_function__", None) is not _disabled_torch_function_impl


def _returned_input_view(t, node, output_nr, differentiable):
    if t.__class__ is not _above.Tensor and _overloads_torch_function(t.__class__):
        # torch makes this view with ``view_as``, which a subclass's __torch_function__ sees (and may
        # give its own class)
        view = t.view_as(t)
    else:
        view = _above.make_view(t, t._ndarray.view())
        # as torch, the view keeps the input's Tensor subclass (a Parameter's becomes a plain Tensor),
        # with an empty __dict__
        kind = type(t)
        if kind is not _above.Tensor:
            from ..nn.parameter import Parameter
            if not issubclass(kind, Parameter):
                view.__class__ = kind
    if differentiable:
        # the message is built only if someone actually tries an in-place op
        view.__dict__["_inplace_error"] = (_function_view_message, node, output_nr)
    elif t._requires_grad:
        # torch hands back a detached alias here: no view, so it does not require grad through its base
        view._base_value = None
    return view


def view_inplace_error_head(node, output_nr, base_modified=False) -> str:
    """The first sentence of torch's errors for an in-place change of a view whose history cannot be
    rewritten: the view itself was written (``base_modified`` False), or its base or another view of
    the base was, which shows when the view's history is next needed. The node is named without its
    "Backward" suffix, as torch names it here."""
    what = ("its base or another view of its base has been modified inplace" if base_modified
            else "is being modified inplace")
    if node is None:  # a view without history: torch words it as for a view made in no_grad mode
        return f"A view was created in no_grad mode and {what} with grad mode enabled."
    name = re.sub(r"Backward\d*$", "", node.name())
    return f"Output {output_nr} of {name} is a view and {what}."


def _function_view_message(node, output_nr, base_modified=False) -> str:
    """The error for an in-place change of a view made inside a custom Function (or of a view of
    one)."""
    return (view_inplace_error_head(node, output_nr, base_modified) + " This view was created "
            "inside a custom Function (or because an input was returned as-is) and the autograd logic to handle "
            "view+inplace would override the custom backward associated with the custom Function, leading to "
            "incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the "
            "custom Function.")


InplaceFunction = Function


_TWICE_MESSAGE = "trying to differentiate twice a function that was marked with @once_differentiable"


class Error(Node):
    """The node of a ``once_differentiable`` backward's results under ``create_graph``: they require
    grad (as torch's do), and differentiating them raises. torch's class has this name too (it is
    what ``torch._C._functions.DelayedError`` makes). Backward formulas that cannot be differentiated
    in some case hang their result from one too, with their own message."""

    __slots__ = ("message",)

    def __init__(self, next_functions, message=_TWICE_MESSAGE):
        super().__init__(next_functions)
        self.message = message

    def name(self) -> str:
        return "torch::autograd::Error"

    def apply(self, grads):
        raise RuntimeError(self.message)


def _delayed_error(outputs):
    """Aliases of ``outputs`` whose grad_fn is an Error node over fresh leaves, as torch builds them."""
    Tensor = _above.Tensor
    from .._ops._declare import record_op
    leaves, aliases = [], []
    for v in outputs:
        if isinstance(v, Tensor):
            leaf = _above.wrap(v._ndarray)
            leaf._requires_grad = True
            leaves.append(leaf)
            aliases.append(_above.wrap(v._ndarray))
        else:
            leaves.append(None)
            aliases.append(v)
    record_op(Error, tuple(leaves), *[a for a in aliases if isinstance(a, Tensor)])
    return tuple(aliases)


def once_differentiable(fn):
    """Mark a ``backward`` as not differentiable itself: it runs with grad mode off; under
    ``create_graph`` its results still require grad, and a second differentiation raises."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            outputs = fn(ctx, *args)
        Tensor = _above.Tensor
        if not grad_mode.STATE.enabled or not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        if not isinstance(outputs, tuple):
            return _delayed_error((outputs,))[0]
        return _delayed_error(outputs)

    wrapper._once_differentiable = True
    return wrapper
