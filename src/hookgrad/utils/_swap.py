"""``torch.utils.swap_tensors``: two tensor objects exchange everything but their identity.

A hookgrad tensor is one Python object whose slots hold what torch keeps in its C++ TensorImpl
(data, requires_grad, grad, grad_fn, version counter, view base, autograd hooks, accumulator). After
``swap_tensors(t1, t2)`` the object ``t1`` holds what ``t2`` held and the other way round: class,
``__dict__``, a subclass's own slots and that TensorImpl state. As in torch, the autograd state
follows the data: the leaf accumulator of ``t1`` (the node a graph built earlier sends ``t1``'s
gradient to) now belongs to ``t2`` and is poisoned, so a backward through a graph recorded before
the swap raises instead of accumulating into the wrong object.

torch also refuses a tensor whose TensorImpl is held elsewhere in C++ (its ``_use_count``: a graph
that saved it, a view of it). hookgrad cannot count those holders; instead the swap moves both
version counters one step, so a graph that saved either tensor raises the in-place-modification
error when its backward unpacks it, rather than computing with the swapped-in values.
"""
from __future__ import annotations

import copyreg
import weakref

__all__ = ["swap_tensors"]

_POISONED = (
    "Trying to execute AccumulateGrad node that was poisoned by swap_tensors "
    "this can happen when you try to run backward on a tensor that was swapped. "
    "For a module m with `torch.__future__.set_swap_module_params_on_conversion(True)` "
    "you should not change the device or dtype of the module (e.g. `m.cpu()` or `m.half()`) "
    "between running forward and backward. To resolve this, please only change the "
    "device/dtype before running forward (or after both forward and backward).")


def _refuse_poisoned_backward(grad_outputs):
    raise RuntimeError(_POISONED)


def _live_accumulator(tensor):
    ref = tensor._accumulator
    return None if ref is None else ref()


def swap_tensors(t1, t2) -> None:
    """Swap the contents of tensors ``t1`` and ``t2``: afterwards each object holds what the other held
    (class, Python attributes, data, autograd state); their identities (``id``) stay."""
    from .._tensor import Tensor
    from .. import _C

    for tensor, name in ((t1, "t1"), (t2, "t2")):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"swap_tensors(): expected {name} to be a Tensor, but got {type(tensor).__name__}")
    # retain_grad() holds a weak reference to the tensor in torch's C++ and in hookgrad's Python; torch
    # names it as such (checked before anything changes, so that a refused swap leaves both intact)
    _C._check_swappable_impl(t1, t2)
    for tensor, name in ((t1, "t1"), (t2, "t2")):
        if weakref.getweakrefs(tensor):
            raise RuntimeError(f"Cannot swap {name} because it has weakref associated with it")
    t1_slots = set(copyreg._slotnames(t1.__class__))
    t2_slots = set(copyreg._slotnames(t2.__class__))
    if t1_slots != t2_slots:
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")

    for tensor in (t1, t2):
        node = _live_accumulator(tensor)
        if node is not None:
            node.register_prehook(_refuse_poisoned_backward)

    t1.__class__, t2.__class__ = t2.__class__, t1.__class__
    t1.__dict__, t2.__dict__ = t2.__dict__, t1.__dict__
    # a subclass's own slots (Tensor's own are the TensorImpl state, swapped by _swap_tensor_impl)
    for slot in t1_slots.difference(copyreg._slotnames(Tensor)):
        has1, has2 = hasattr(t1, slot), hasattr(t2, slot)
        if has1 and has2:
            value = getattr(t1, slot)
            setattr(t1, slot, getattr(t2, slot))
            setattr(t2, slot, value)
        elif has1:
            setattr(t2, slot, getattr(t1, slot))
            delattr(t1, slot)
        elif has2:
            setattr(t1, slot, getattr(t2, slot))
            delattr(t2, slot)
    _C._swap_tensor_impl(t1, t2)
