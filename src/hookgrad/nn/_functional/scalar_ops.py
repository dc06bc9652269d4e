"""The Scalar overloads torch's C++ compositions call (``add.Scalar``, ``mul.Scalar``, ``div.Scalar``,
``norm.ScalarOpt_dim``): the same values as the Tensor ones, recorded under their own node names
(AddBackward1, MulBackward1, DivBackward1, NormBackward1), as the layers built from them show in torch."""
from __future__ import annotations

import operator

import numpy as np

import hookgrad
from ..._dtype import narrow_to, widen
from ..._ops._base import GRAD, _PassThroughNode, quiet_fp
from ..._ops._declare import record_op
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node, saved_dim
from .attention import _scalar_mul as mul_scalar  # noqa: F401  (MulBackward1)

__all__ = ["add_scalar", "mul_scalar", "div_scalar", "norm_scalar", "sub_scalar", "number_minus"]


def _promoted(x: Tensor, other, division=False) -> Tensor:
    """An integer or bool ``x`` with a float number (or divided): in the default float dtype, as
    torch promotes (integer tensors never require grad: nothing is recorded)."""
    if x._ndarray.dtype.kind in "biu" and (division or isinstance(other, float)):
        return x.to(hookgrad.get_default_dtype())
    return x


def _scalar_result(x: Tensor, out) -> Tensor:
    return wrap(narrow_to(np.asarray(out, dtype=widen(x._ndarray).dtype), x._ndarray.dtype))


class AddBackward1(_PassThroughNode):
    """``tensor + number``: the gradient passes unchanged (torch keeps nothing)."""

    __slots__ = ()


class SubBackward1(_PassThroughNode):
    """``tensor - number``: the gradient passes unchanged (torch keeps nothing)."""

    __slots__ = ()


def _shifted_by_number(x: Tensor, other: float, combine, node_cls) -> Tensor:
    x = _promoted(x, other)
    with quiet_fp():
        result = _scalar_result(x, combine(widen(x._ndarray), other))
    if GRAD.enabled and x._requires_grad:
        record_op(node_cls, (x,), result)
    return result


def add_scalar(x: Tensor, other: float) -> Tensor:
    return _shifted_by_number(x, other, operator.add, AddBackward1)


def sub_scalar(x: Tensor, other: float) -> Tensor:
    return _shifted_by_number(x, other, operator.sub, SubBackward1)


class DivBackward1(Node):
    __slots__ = ("other",)
    saved_values = {"other": lambda n: n.other}

    def apply(self, grads):
        return (div_scalar(grads[0], self.other),)


def div_scalar(x: Tensor, other) -> Tensor:
    x = _promoted(x, other, division=True)
    with quiet_fp():
        result = _scalar_result(x, widen(x._ndarray) / other)
    if GRAD.enabled and x._requires_grad:
        record_op(DivBackward1, (x,), result).other = other
    return result


class NormBackward1(Node):
    """``norm(x, p, dim, keepdim)``: keeps the input and the result. The gradient is written in
    hookgrad ops (differentiable again); where the norm is 0 it is 0, as torch's."""

    __slots__ = ("p", "dim", "keepdim")
    saved_names = ("self", "result")
    saved_values = {"p": lambda n: n.p, "dim": lambda n: saved_dim(n.dim), "keepdim": lambda n: n.keepdim}

    def apply(self, grads):
        x, r = self.saved()
        g = grads[0]
        if not self.keepdim:
            for d in sorted(d % x.dim() for d in self.dim):
                g, r = g.unsqueeze(d), r.unsqueeze(d)
        p = self.p
        if p == 1:
            return (g * x.sign(),)
        zero = wrap(r._ndarray == 0)
        if p == 2:
            local = x / r
        else:
            local = x.sign() * x.abs().pow(p - 1) / r.pow(p - 1)
        return ((g * local).masked_fill(zero, 0.0),)


def norm_scalar(x: Tensor, p: float, dim: int, keepdim: bool = False) -> Tensor:
    """``torch.norm(x, p, dim, keepdim)`` as torch's C++ calls it; p = 0, inf, -inf and negative
    orders go through linalg.vector_norm (its own node)."""
    if not (0 < p < float("inf")):
        return hookgrad.linalg.vector_norm(x, p, dim=dim, keepdim=keepdim)
    with hookgrad.no_grad():
        value = hookgrad.linalg.vector_norm(x, p, dim=dim, keepdim=keepdim)
    result = wrap(value._ndarray)
    if GRAD.enabled and x._requires_grad:
        node = record_op(NormBackward1, (x,), result)
        node.p, node.dim, node.keepdim = p, (dim % x.dim() if x.dim() else 0,), keepdim
        node.save(x, output=result)
    return result


def number_minus(number: float, x: Tensor) -> Tensor:
    """``number - x`` as torch's C++ operator spells it (a tensor filled with the number, minus x):
    SubBackward0 with no edge for the filled tensor."""
    return hookgrad.full_like(x, number) - x
