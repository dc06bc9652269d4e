"""Forward-mode automatic differentiation, with torch.autograd.forward_ad's API.

Inside ``dual_level()``, ``make_dual(x, v)`` gives a tensor equal to ``x`` that carries the tangent
``v``; every op that a dual tensor enters gives its results the tangent ``J v`` (``J`` the op's
Jacobian at its inputs), and ``unpack_dual(y)`` returns ``(y's value, y's tangent)``::

    with forward_ad.dual_level():
        y = f(forward_ad.make_dual(x, v))
        value, jvp = forward_ad.unpack_dual(y)

How a tangent is computed: the op is run once more on stand-ins of its dual operands and
differentiated with the reverse-mode engine twice (the vector-Jacobian product ``g(u) = J^T u`` is
linear in ``u``, so the gradient of ``<g(u), v>`` with respect to ``u`` is ``J v``). So every op
with a twice-differentiable backward has a tangent, at the cost of a second run of the op and two
small backward passes: forward AD here is for correctness, not for speed. The ops are seen through
the op-hook machinery (``hookgrad.hooks.register_op_hook``), which reports each outermost op call
only: a composite op is differentiated as a whole. A custom Function is the exception: its tangents
are what its ``jvp`` returns (``Function.apply`` calls it), as in torch.

What differs from torch: a view's tangent is a copy, not a view of its base's tangent, so an
in-place op on the base after the view was taken does not change the view's tangent.
"""
from __future__ import annotations

import warnings
from typing import NamedTuple, Optional

import numpy as np

from .. import autograd
from .._tensor import Tensor, wrap
from ..hooks import _ops as _op_hooks
from ..utils._contextlib import _DecoratorContextManager
from . import _dual
from .function import Function

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

_handle: list = [None]  # the op hook that pushes tangents through ops while a level is open


def enter_dual_level() -> int:
    """Open the dual level (only one can be open) and return it: 0."""
    if _dual.LEVEL[0] >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _dual.LEVEL[0] = 0
    _handle[0] = _op_hooks.register_op_hook(forward=_push_tangents)
    return 0


def exit_dual_level(*, level: Optional[int] = None) -> None:
    """Close the dual level: every tangent made inside it is dropped."""
    current = _dual.LEVEL[0]
    if level is None:
        level = current
    if level != current:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. "
                           "This is not supported.")
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    _handle[0].remove()
    _handle[0] = None
    _dual.drop_all()
    _dual.LEVEL[0] = -1


def _is_fwd_grad_enabled() -> bool:
    """Whether ops push tangents (torch's private switch, on by default)."""
    return _dual.FWD_GRAD_ENABLED[0]


class _set_fwd_grad_enabled(_DecoratorContextManager):
    """Turn tangent pushing on or off from construction until the context is left."""

    def __init__(self, mode: bool) -> None:
        self.prev = _dual.FWD_GRAD_ENABLED[0]
        _dual.FWD_GRAD_ENABLED[0] = bool(mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        _dual.FWD_GRAD_ENABLED[0] = self.prev

    def clone(self):
        return self.__class__(self.prev)


def __getattr__(name):
    # torch keeps the open level in a module global that its test suites read
    if name == "_current_level":
        return _dual.LEVEL[0]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _is_float_or_complex(t: Tensor) -> bool:
    return t.dtype.is_floating_point or t.dtype.is_complex


def make_dual(tensor: Tensor, tangent: Tensor, *, level: Optional[int] = None) -> Tensor:
    """A view of ``tensor`` that carries ``tangent`` (kept as it is). Differentiable in reverse
    mode like a view."""
    if level is None:
        level = _dual.LEVEL[0]
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not _is_float_or_complex(tensor):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not _is_float_or_complex(tangent):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if tangent.shape != tensor.shape:
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    dual = _unreported(tensor.view_as, tensor)
    _dual.set_tangent(dual, tangent)
    return dual


class UnpackedDualTensor(NamedTuple):
    """What :func:`unpack_dual` returns: the primal (a view of the dual tensor's value, without
    tangent) and the tangent (None for a tensor that has none)."""

    primal: Tensor
    tangent: Optional[Tensor]


def unpack_dual(tensor: Tensor, *, level: Optional[int] = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at the open level; outside a level ``(tensor, None)``."""
    if level is None:
        level = _dual.LEVEL[0]
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(_unreported(tensor.view_as, tensor), _dual.tangent_of(tensor))


class dual_level(_DecoratorContextManager):
    """Context manager (and decorator) for forward AD: opens the dual level on entry and closes it,
    dropping every tangent, on exit. Levels do not nest."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        exit_dual_level()


def _unreported(fn, *args):
    """``fn(*args)`` without reporting it as an op: the views forward AD makes are not the
    program's ops."""
    thread = _op_hooks._thread
    thread.busy += 1
    try:
        return fn(*args)
    finally:
        thread.busy -= 1


# ---- pushing tangents through an op ------------------------------------------------------------
def _push_tangents(op, inputs, outputs):
    """The op hook: give the op's floating outputs their tangents when any operand has one."""
    if not _dual.has_tangents() or not _dual.FWD_GRAD_ENABLED[0]:
        return None
    tangents = {id(t): tangent for t in inputs if (tangent := _dual.tangent_of(t)) is not None}
    if not tangents:
        return None
    impl, as_it_ran, grad_was_enabled = op._call
    args, kwargs = op.args, op.kwargs
    overwritten, random_states = as_it_ran or (None, [])
    if op in _TANGENT_RULES:
        return _TANGENT_RULES[op](inputs, outputs)
    if getattr(impl, "__name__", "") == "apply" and args and isinstance(args[0], type) \
            and issubclass(args[0], Function):
        return None  # Function.apply pushed the tangents through the Function's jvp
    # the result's tangent is itself differentiable when the program could differentiate it
    nested = grad_was_enabled and any(t.requires_grad for t in inputs) or \
        any(tangent.requires_grad for tangent in tangents.values())
    target = args[0] if op.inplace and overwritten is not None else None
    stand_ins: dict = {}  # id(operand) -> the tensor the op is run on again

    def stand_in(value):
        if isinstance(value, (tuple, list)):
            return type(value)(stand_in(v) for v in value)
        if not isinstance(value, Tensor):
            return value
        key = id(value)
        found = stand_ins.get(key)
        if found is None:
            if value is target:  # the value the in-place op overwrote
                found = wrap(overwritten, requires_grad=key in tangents)
            elif key not in tangents:  # a copy: running the op again must not change the program's tensors
                found = wrap(value._ndarray.copy())
            elif nested and value.requires_grad:
                found = value.view_as(value)  # keeps the way back to the program's graph
            else:
                found = value.detach().requires_grad_(True)
            stand_ins[key] = found
        return found

    with autograd.enable_grad():
        run_args = [stand_in(a) for a in args]
        run_kwargs = {k: stand_in(v) for k, v in kwargs.items()}
        if target is not None:  # the op writes into a copy: the stand-in of its old value is differentiated
            run_args[0] = run_args[0].clone()
        result = _as_it_ran(impl, run_args, run_kwargs, random_states)
        rerun = (run_args[0],) if target is not None else _op_hooks._tensors_in(result)
        pairs = [(out, again) for out, again in zip(outputs, rerun)
                 if again.requires_grad and _is_float_or_complex(again)]
        if not pairs:
            return None
        wrt = [stand_ins[key] for key in tangents if key in stand_ins]
        directions = [tangents[key] for key in tangents if key in stand_ins]
        probes = [_zeros_like(again).requires_grad_(True) for _, again in pairs]
        pulled = autograd.grad([again for _, again in pairs], wrt, probes, create_graph=True, allow_unused=True)
        used = [(g, d) for g, d in zip(pulled, directions) if g is not None and g.requires_grad]
        pushed = [None] * len(probes)
        if used:
            with _dual.products_through():
                pushed = autograd.grad([g for g, _ in used], probes, [d.to(g.dtype) for g, d in used],
                                       create_graph=nested, allow_unused=True)
    for (out, again), jvp in zip(pairs, pushed):
        if jvp is None:
            jvp = _zeros_like(again)
        _dual.set_tangent(out, jvp if nested else jvp.detach())
    return None


def _embedding_tangent(inputs, outputs):
    # the lookup's own derivative: padding_idx and scale_grad_by_freq shape only its backward
    indices, weight = inputs[:2]
    tangent = _dual.tangent_of(weight)
    if tangent is not None and _dual.tangent_of(indices) is None:
        _dual.set_tangent(outputs[0], wrap(tangent.detach()._ndarray[indices._ndarray]))
    return None


# ops whose backward is not the transpose of their derivative (a convention of the backward only)
_TANGENT_RULES = {"embedding": _embedding_tangent}


def _as_it_ran(impl, args, kwargs, random_states):
    """Run the op again drawing the same random numbers (a dropout mask, ...) as the first time,
    and leave the generators where the first run left them."""
    after = [(g, g.get_state()) for g, _ in random_states]
    for g, state in random_states:
        g.set_state(state)
    try:
        with warnings.catch_warnings():  # what the op warns of, it warned of the first time
            warnings.simplefilter("ignore")
            return impl(*args, **kwargs)
    finally:
        for g, state in after:
            g.set_state(state)


def _zeros_like(t: Tensor) -> Tensor:
    return wrap(np.zeros_like(t._ndarray))
