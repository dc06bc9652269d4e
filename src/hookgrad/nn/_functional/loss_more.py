"""The margin, embedding, Poisson and Gaussian losses, composed of differentiable tensor ops (torch
composes most of them too); their gradients, first and second, come from those ops. The soft
margin, multi-margin and multilabel-margin losses are one node each, as in torch."""
from __future__ import annotations

import math

import numpy as np

import hookgrad
from ..._ops._base import GRAD
from ..._ops._declare import record_op
from ..._tensor import wrap
from ...autograd.graph import Node
from .composed import pairwise_distance
from .scalar_ops import add_scalar, number_minus, sub_scalar
from .loss import _REDUCTION_ENUM, _check_reduction, _reduce, legacy_reduction

__all__ = ["cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss", "poisson_nll_loss", "gaussian_nll_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss"]

_EPSILON = 1e-12  # what torch adds to the squared norms of cosine_embedding_loss


def _reduction(size_average, reduce, reduction):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    return reduction


def _sizes(t):
    return str(list(t.shape))


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where ``target == -1``."""
    reduction = _reduction(size_average, reduce, reduction)
    targ_dim = target.dim()
    if targ_dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if targ_dim == 1 and (input1.dim() != 2 or input2.dim() != 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{_sizes(input1)} and {_sizes(input2)}.")
    if targ_dim == 0 and (input1.dim() != 1 or input2.dim() != 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{_sizes(input1)} and {_sizes(input2)}.")
    prod_sum = (input1 * input2).sum(targ_dim)
    mag1 = add_scalar((input1 * input1).sum(targ_dim), _EPSILON)
    mag2 = add_scalar((input2 * input2).sum(targ_dim), _EPSILON)
    cos = prod_sum / (mag1 * mag2).sqrt()
    zeros = hookgrad.zeros_like(cos)
    loss = (hookgrad.where(target == 1, number_minus(1, cos), zeros)
            + hookgrad.where(target == -1, sub_scalar(cos, margin).clamp_min(0), zeros))
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """``x`` where ``target == 1``, ``max(0, margin - x)`` where ``target == -1``."""
    reduction = _reduction(size_average, reduce, reduction)
    zeros = hookgrad.zeros_like(input)
    loss = (hookgrad.where(target != 1, number_minus(margin, input).clamp_min(0), zeros)
            + hookgrad.where(target != -1, input, zeros))
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``max(0, -target * (x1 - x2) + margin)``."""
    reduction = _reduction(size_average, reduce, reduction)
    if not input1.dim() == input2.dim() == target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    return _reduce(add_scalar(-target * (input1 - input2), margin).clamp_min(0), reduction)


def _same_ndim(anchor, positive, negative):
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not a == p == n:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """``max(0, d(a, p) - d(a, n) + margin)`` with the pairwise p-norm distance ``d``."""
    reduction = _reduction(size_average, reduce, reduction)
    _same_ndim(anchor, positive, negative)
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = hookgrad.minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((add_scalar(dist_pos, margin) - dist_neg).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """``triplet_margin_loss`` with any distance function (pairwise_distance by default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _same_ndim(anchor, positive, negative)
    distance = distance_function if distance_function is not None else pairwise_distance
    dist_pos = distance(anchor, positive)
    dist_neg = distance(anchor, negative)
    if swap:
        dist_neg = hookgrad.minimum(dist_neg, distance(positive, negative))
    return _reduce((margin + dist_pos - dist_neg).clamp_min(0), reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """Negative log likelihood of ``target`` under Poisson(``exp(input)`` or ``input``)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """``0.5 * (log(var) + (input - target)**2 / var)`` (plus ``0.5 log 2 pi`` with ``full``); ``var``
    is clamped to ``eps`` without passing the clamp to the gradient, as torch does."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * hookgrad.ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.dim() == var.dim() and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with hookgrad.no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def _scalar_name(dtype) -> str:
    from ..._dtype import scalar_type_name
    return scalar_type_name(dtype.np)


# ---- losses torch records as one node: the forward composed under no_grad, the gradient written
# out in hookgrad ops (differentiable under create_graph; torch's double backward records other nodes)
class _MarginLossNode(Node):
    __slots__ = ("reduction",)
    saved_values = {"reduction": lambda n: _REDUCTION_ENUM[n.reduction]}

    def _scaled(self, g, per_sample_count):
        """The incoming gradient as a factor of each sample's (or element's) local gradient."""
        if self.reduction == "mean":
            return g / per_sample_count
        return g


def _one_node(loss_fn, node_cls, input, saved, reduction, **attrs):
    """``loss_fn()`` computed without recording, made the output of one ``node_cls`` node over ``input``."""
    with hookgrad.no_grad():
        value = loss_fn()
    result = wrap(value._ndarray)
    if GRAD.enabled and input._requires_grad:
        node = record_op(node_cls, (input,), result)
        node.reduction = reduction
        for k, v in attrs.items():
            setattr(node, k, v)
        node.save(*saved)
    return result


class SoftMarginLossBackward0(_MarginLossNode):
    __slots__ = ()
    saved_names = ("self", "target")

    def apply(self, grads):
        x, t = self.saved()
        # d/dx log(1 + exp(-t x)) = -t * sigmoid(-t x)
        return (-t * (-t * x).sigmoid() * self._scaled(grads[0], x.numel()),)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))``."""
    reduction = _reduction(size_average, reduce, reduction)
    if (isinstance(input, hookgrad.Tensor) and isinstance(target, hookgrad.Tensor)
            and not (input.dtype.is_floating_point or target.dtype.is_floating_point)):
        # (float8 does not promote: torch's first kernel, neg, refuses it below)
        integral = hookgrad.promote_types(input.dtype, target.dtype)
        if not (integral.is_floating_point or integral.is_complex):   # torch's kernel writes into that type
            raise RuntimeError(f"result type {_scalar_name(hookgrad.get_default_dtype())} can't be cast to the "
                               f"desired output type {_scalar_name(integral)}")

    def loss():
        return _reduce((-input * target).exp().log1p(), reduction)
    return _one_node(loss, SoftMarginLossBackward0, input, (input, target), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Binary cross entropy with logits per class, averaged over the classes."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    F = hookgrad.nn.functional
    loss = -(target * F.logsigmoid(input) + (1 - target) * F.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    # divided by the class count as a 0-d int64 tensor, the operand torch's graph records
    loss = loss.sum(dim=class_dim) / wrap(np.asanyarray(input.shape[class_dim], dtype=np.int64))
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def _class_rows(input):
    """``input`` as (N, C) rows (a 1-D input is one sample)."""
    if input.dim() > 2 or (input.dim() == 2 and input.shape[1] == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{_sizes(input)}")
    rows = input.reshape(1, -1) if input.dim() < 2 else input
    return rows


class MultiMarginLossBackward0(_MarginLossNode):
    __slots__ = ("p", "margin")
    saved_names = ("self", "target", "weight")
    saved_values = {"reduction": lambda n: _REDUCTION_ENUM[n.reduction], "p": lambda n: n.p,
                    "margin": lambda n: n.margin}

    def apply(self, grads):
        x, target, weight = self.saved()
        rows = x.reshape(1, -1) if x.dim() < 2 else x
        n, c = rows.shape
        t = target._ndarray.reshape(-1).astype(np.int64)
        picked = rows.gather(1, wrap(t.reshape(-1, 1)))
        z = self.margin - picked + rows
        others = np.ones((n, c), dtype=bool)
        others[np.arange(n), t] = False
        active = wrap(((z._ndarray > 0) & others).astype(rows._ndarray.dtype))
        local = active * (2 * z) if self.p == 2 else active
        if weight is not None:
            local = local * weight.index_select(0, wrap(t)).unsqueeze(1)
        local = local / c
        target_column = wrap((~others).astype(rows._ndarray.dtype))
        local = local - target_column * local.sum(1, keepdim=True)  # x[y] enters every pair negated
        g = self._scaled(grads[0], n)
        if self.reduction == "none" and x.dim() >= 2:
            g = g.unsqueeze(1)
        return ((local * g).reshape(x.shape),)


def _multi_margin_loss_composed(input, target, p, margin, weight, reduction):
    rows = _class_rows(input)
    n, c = rows.shape
    t = target._ndarray.reshape(-1)
    picked = rows.gather(1, wrap(t.astype(np.int64).reshape(-1, 1)))
    z = (margin - picked + rows).relu()
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, wrap(t.astype(np.int64))).unsqueeze(1)
    others = np.ones((n, c), dtype=bool)
    others[np.arange(n), t] = False
    loss = (z * wrap(others.astype(rows._ndarray.dtype))).sum(1) / c
    if input.dim() < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """``sum_{i != y} max(0, margin - x[y] + x[i])**p / C`` per sample (scaled by ``weight[y]``)."""
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    rows = _class_rows(input)
    n, c = rows.shape
    t = target._ndarray.reshape(-1)
    if t.size != n or (input.dim() == 2 and target.dim() != 1) or (input.dim() < 2 and target.dim() > 1):
        raise RuntimeError(f"inconsistent target size, expected {n} but got {_sizes(target)}")
    if t.size and (t.min() < 0 or t.max() >= c):
        raise RuntimeError("target out of range")
    return _one_node(lambda: _multi_margin_loss_composed(input, target, p, margin, weight, reduction),
                     MultiMarginLossBackward0, input, (input, target, weight), reduction, p=p, margin=margin)


class MultilabelMarginLossBackward0(_MarginLossNode):
    """Keeps torch's ``is_target`` (1 at each class the row's target lists, in the input's dtype)."""

    __slots__ = ("pair_weight",)  # how often each (target j, other i) pair enters, per sample
    saved_names = ("self", "target", "is_target")

    def apply(self, grads):
        x, _target, _is_target = self.saved()
        rows = x.reshape(1, -1) if x.dim() < 2 else x
        n, c = rows.shape
        d = rows._ndarray
        z = 1 - d[:, :, None] + d[:, None, :]   # [n, j, i]: 1 - x[j] + x[i]
        active = (z > 0) * self.pair_weight / c
        # the loss is piecewise linear in x: its local gradient is a constant
        local = wrap((active.sum(1) - active.sum(2)).astype(d.dtype))
        g = self._scaled(grads[0], n)
        if self.reduction == "none" and x.dim() >= 2:
            g = g.unsqueeze(1)
        return ((local * g).reshape(x.shape),)

    def release_variables(self):
        super().release_variables()
        self.pair_weight = None


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``sum_{j in targets, i not in targets} max(0, 1 - (x[j] - x[i])) / C`` per sample; each row of
    ``target`` lists class indices up to the first -1."""
    reduction = _reduction(size_average, reduce, reduction)
    rows = _class_rows(input)
    n, c = rows.shape
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {_sizes(target)} for input of size: {_sizes(input)}")
    t = target._ndarray.reshape(n, c)
    counts = np.zeros((n, c), dtype=rows._ndarray.dtype)
    for row in range(n):
        for cls in t[row]:
            if cls < 0:
                break
            if cls >= c:
                raise RuntimeError("target out of range")
            counts[row, cls] += 1
    others = (counts == 0).astype(rows._ndarray.dtype)
    pair_weight = counts[:, :, None] * others[:, None, :]

    def loss():
        z = (1 - rows.unsqueeze(2) + rows.unsqueeze(1)).relu()
        per_sample = (z * wrap(pair_weight)).sum((1, 2)) / c
        return _reduce(per_sample.reshape(()) if input.dim() < 2 else per_sample, reduction)
    is_target = wrap((counts > 0).astype(rows._ndarray.dtype).reshape(input.shape))
    return _one_node(loss, MultilabelMarginLossBackward0, input, (input, target, is_target), reduction,
                     pair_weight=pair_weight)
