"""Loss functions. Fused nodes (named like torch's) where torch has one; compositions elsewhere.

Backward formulas are hookgrad ops, so every loss can be differentiated twice.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..._dtype import is_floating_np, result_type, scalar_type_name
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node, saved_dim
from ..._ops import pointwise
from ..._ops import reduce as _rops
from ..._ops._base import GRAD, index_range
from ..._ops._declare import record_op
from ..._ops._base import quiet_fp

_err = quiet_fp  # NumPy reports no inf/nan arithmetic (nor does torch)



def _size(shape):
    return f"torch.Size({list(shape)})"


def legacy_reduction(size_average, reduce_, reduction, emit_warning=True):
    """The ``reduction`` string for the deprecated ``size_average``/``reduce`` pair (torch's rule)."""
    if size_average is None and reduce_ is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce_ = True if reduce_ is None else reduce_
    ret = "none" if not reduce_ else ("mean" if size_average else "sum")
    if emit_warning:
        # torch's points at the library line that asked (its loss module or function)
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                      UserWarning, stacklevel=2)
    return ret


def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _refuse_integral(x, t, kernel: str) -> None:
    """torch's loss kernels (mse, smooth_l1, huber) exist for floating types only: integer or bool
    operands get its NotImplementedError, not an integer loss."""
    dt = np.result_type(x._ndarray.dtype, t._ndarray.dtype)
    if dt.kind in "biu":
        raise NotImplementedError(f'"{kernel}_cpu" not implemented for \'{scalar_type_name(dt)}\'')


def _broadcast_pair(x, t, warn=True):
    if x._ndarray.shape != t._ndarray.shape:
        if warn:
            warnings.warn(f"Using a target size ({_size(t._ndarray.shape)}) that is different to the input size "
                          f"({_size(x._ndarray.shape)}). This will likely lead to incorrect results due to "
                          f"broadcasting. Please ensure they have the same size.", UserWarning, stacklevel=3)
        try:
            shape = np.broadcast_shapes(x._ndarray.shape, t._ndarray.shape)
        except ValueError:
            a, b = x._ndarray.shape, t._ndarray.shape
            n = max(len(a), len(b))
            a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
            for i in range(n - 1, -1, -1):
                if a[i] != b[i] and a[i] != 1 and b[i] != 1:
                    raise RuntimeError(f"The size of tensor a ({a[i]}) must match the size of tensor b ({b[i]}) at "
                                       f"non-singleton dimension {i}") from None
            raise
        x, t = x.expand(shape), t.expand(shape)
    return x, t


# torch's nodes report the reduction as its enum value
_REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}


def _reduction(node):
    return _REDUCTION_ENUM[node.reduction]


class _PointwiseLossBackward(Node):
    """Backward of an elementwise loss reduced by ``reduction``: grad = dloss/dd * g (scaled)."""

    __slots__ = ("reduction", "param", "weighted")
    saved_names = ("self", "target")

    def apply(self, grads):
        g = grads[0]
        x, t = self.saved()
        d = x - t
        local = self.local(d)
        if self.reduction == "mean":
            g = g / d._ndarray.size
        gx = local * g
        return (gx if self._should_compute_output(0) else None, -gx if self._should_compute_output(1) else None)


class MseLossBackward0(_PointwiseLossBackward):
    __slots__ = ()
    saved_values = {"reduction": _reduction}

    def local(self, d):
        return d * 2


class SmoothL1LossBackward0(_PointwiseLossBackward):
    __slots__ = ()
    saved_values = {"reduction": _reduction, "beta": lambda n: n.param}

    def local(self, d):
        beta = self.param
        inside = wrap(~(np.abs(d._ndarray) > beta))  # a NaN difference is inside: its gradient is NaN
        return pointwise.where(inside, d / beta, d.sign())


class HuberLossBackward0(_PointwiseLossBackward):
    __slots__ = ("dtypes",)   # (input's, target's) NumPy dtypes where they differ
    saved_values = {"reduction": _reduction, "delta": lambda n: n.param}

    def local(self, d):
        delta = self.param
        inside = wrap(~(np.abs(d._ndarray) > delta))  # a NaN difference is inside: its gradient is NaN
        return pointwise.where(inside, d, d.sign() * delta)

    def apply(self, grads):
        dtypes = getattr(self, "dtypes", None)
        if dtypes is not None:
            # torch's backward kernel takes one dtype: the gradient's own operand's, refusing the other's
            ours, other = dtypes if self._should_compute_output(0) else dtypes[::-1]
            raise RuntimeError(f"Found dtype {scalar_type_name(other)} but expected {scalar_type_name(ours)}")
        return super().apply(grads)


def _reduced(values: np.ndarray, reduction: str) -> np.ndarray:
    """The binary cross entropies' per-element values reduced as ``reduction`` says, in their dtype
    (a float16 mean accumulates in float32, as NumPy's default does)."""
    if reduction == "mean":
        return np.asanyarray(values.mean(), dtype=values.dtype)
    if reduction == "sum":
        return np.asanyarray(values.sum(), dtype=values.dtype)
    return values


def _pointwise_loss(node_cls, x, t, reduction, values, param=None):
    if reduction == "mean":
        out = np.asanyarray(values.mean(dtype=values.dtype) if values.size else np.nan, dtype=values.dtype)
    elif reduction == "sum":
        out = np.asanyarray(values.sum(dtype=values.dtype))
    else:
        out = values
    result = wrap(out)
    if GRAD.enabled and (x._requires_grad or t._requires_grad):
        node = record_op(node_cls, (x, t), result)
        node.reduction, node.param = reduction, param
        node.save(x, t)
    return result


def _weighted(loss, weight, reduction, input, normalize_by_weight=True):
    """torch's weighted regression losses: same-size weights; 'mean' divides by the weights' sum
    (MSE, L1) or by the element count (Huber)."""
    if weight._ndarray.shape != input._ndarray.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean" and normalize_by_weight:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    x, t = _broadcast_pair(input, target)
    _refuse_integral(x, t, "mse")
    if weight is not None:
        return _weighted((x - t) ** 2, weight, reduction, input)
    dt = result_type(x, t).np   # torch's promotion (NumPy's would make float32 - int64 a float64)
    d = x._ndarray.astype(dt, copy=False) - t._ndarray.astype(dt, copy=False)
    return _pointwise_loss(MseLossBackward0, x, t, reduction, d * d)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    x, t = _broadcast_pair(input, target)
    loss = (x - t).abs()
    if weight is not None:
        return _weighted(loss, weight, reduction, input)
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        return l1_loss(input, target, reduction=reduction)
    x, t = _broadcast_pair(input, target)
    _refuse_integral(x, t, "smooth_l1")
    a = np.abs(x._ndarray - t._ndarray)
    with _err():
        vals = np.where(a < beta, 0.5 * a * a / beta, a - 0.5 * beta).astype(a.dtype, copy=False)
    return _pointwise_loss(SmoothL1LossBackward0, x, t, reduction, vals, beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    x, t = _broadcast_pair(input, target)
    _refuse_integral(x, t, "huber")
    a = np.abs(x._ndarray - t._ndarray)
    # the loss takes the input's dtype, whatever the target's
    vals = np.where(a < delta, 0.5 * a * a, delta * (a - 0.5 * delta)).astype(x._ndarray.dtype, copy=False)
    loss = _pointwise_loss(HuberLossBackward0, x, t, "none" if weight is not None else reduction, vals, delta)
    if isinstance(loss.grad_fn, HuberLossBackward0):
        loss.grad_fn.dtypes = (x._ndarray.dtype, t._ndarray.dtype) if x._ndarray.dtype != t._ndarray.dtype else None
    if weight is not None:
        return _weighted(loss, weight, reduction, input, normalize_by_weight=False)
    return loss


# ---- negative log likelihood and cross entropy -----------------------------------------------
class NllLossBackward0(Node):
    __slots__ = ("coef", "reduction", "class_last_shape", "ignore_index")
    # kept as torch keeps them (its backward reads them; ours reads ``coef``)
    saved_names = ("self", "target", "weight", "total_weight")
    saved_values = {"reduction": _reduction, "ignore_index": lambda n: saved_dim(n.ignore_index)}

    def apply(self, grads):
        g = grads[0]
        # coef holds -w_i/denominator at each target position (input layout); the rest is zero
        if self.reduction == "none":
            g = g.unsqueeze(1) if g._ndarray.ndim >= 1 and len(self.coef.shape) > 1 else g
        if not GRAD.enabled:
            return (wrap(self.coef * g._ndarray),)
        return (wrap(self.coef) * g,)


class NllLoss2DBackward0(NllLossBackward0):
    __slots__ = ()


def _target_checks(x, t, class_dim):
    xd, td = x._ndarray, t._ndarray
    if td.dtype.kind == "f" or td.dtype.kind == "b" or td.dtype not in (np.int64, np.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {scalar_type_name(td.dtype)}")


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    x, t = input, target
    xd, td = x._ndarray, t._ndarray
    if xd.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {xd.ndim})")
    if xd.ndim == 2 and td.ndim != 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if xd.ndim >= 2 and td.ndim >= 1 and xd.shape[0] != td.shape[0]:
        raise ValueError(f"Expected input batch_size ({xd.shape[0]}) to match target batch_size ({td.shape[0]}).")
    if xd.ndim == 1 and td.ndim != 0:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if xd.ndim > 2 and (td.shape[1:] != xd.shape[2:] or td.ndim != xd.ndim - 1):
        raise RuntimeError(f"size mismatch (got input: {list(xd.shape)}, target: {list(td.shape)})"
                           if td.ndim == xd.ndim - 1 else
                           f"Expected target size {list((xd.shape[0],) + xd.shape[2:])}, got {list(td.shape)}")
    _target_checks(x, t, 1)
    c = xd.shape[1] if xd.ndim >= 2 else xd.shape[0]
    if weight is not None and weight._ndarray.shape != (c,):
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no classes but got "
                           f"weight tensor of shape: {list(weight._ndarray.shape)}")
    if xd.ndim == 2 and weight is None and reduction == "mean" and ignore_index < 0 and td.size:
        fast = _nll_mean_all_valid(x, xd, td.astype(np.int64, copy=False), c, t)
        if fast is not None:
            return fast
    # class dim last, everything else flattened
    xl = np.moveaxis(xd, 1, -1) if xd.ndim > 2 else xd
    x2 = xl.reshape(-1, c)
    t1 = td.reshape(-1).astype(np.int64, copy=False)
    valid = t1 != ignore_index
    safe = np.where(valid, t1, 0)
    if safe.size and (safe.min() < 0 or safe.max() >= c):
        bad = valid & ((t1 < 0) | (t1 >= c))
        raise IndexError(f"Target {int(t1[bad][0])} is out of bounds.")
    rows = np.arange(t1.size)
    picked = x2[rows, safe]
    w = valid.astype(xd.dtype)
    if weight is not None:
        w = w * weight._ndarray[safe].astype(xd.dtype, copy=False)
    losses = -w * picked
    if reduction == "none":
        out = losses.reshape(td.shape)
        scale = -w
    elif reduction == "sum":
        out = np.asanyarray(losses.sum(), dtype=xd.dtype)
        scale = -w
    else:
        total = w.sum()
        with _err():
            out = np.asanyarray(losses.sum() / total, dtype=xd.dtype)
            scale = np.where(valid, -w / total, 0).astype(xd.dtype, copy=False)  # ignored rows get 0, not 0/0
    result = wrap(out)
    if GRAD.enabled and x._requires_grad:
        coef = np.zeros(x2.shape, dtype=xd.dtype)
        coef[rows, safe] = scale
        if xd.ndim > 2:
            coef = np.moveaxis(coef.reshape(xl.shape), -1, 1)
        elif xd.ndim == 1:
            coef = coef.reshape(xd.shape)
        node = record_op((NllLoss2DBackward0 if xd.ndim >= 3 else NllLossBackward0), (x,), result)
        node.coef, node.reduction, node.ignore_index = coef, reduction, ignore_index
        total_weight = np.zeros((), xd.dtype) if reduction == "none" else np.asanyarray(w.sum(), dtype=xd.dtype)
        node.save(x, t, weight, wrap(total_weight))
    return result


_max_reduce = np.maximum.reduce
_sum_reduce = np.add.reduce


def _nll_mean_all_valid(x, xd, t1, c, target):
    """nll_loss of a (batch, classes) input, mean reduction, every target a valid class (the common
    training case) in a third of the NumPy calls of the general path; None if a target is out of
    range (the general path then raises the error)."""
    # one reduction tests both bounds: a negative class read as unsigned is above any class count
    # (ufunc reductions: ndarray.min/max/sum cost 2-3 us more each on a batch of targets)
    if _max_reduce(t1.view(np.uint64)) >= c:
        return None
    n = t1.size
    rows = index_range(n)
    result = wrap(np.asanyarray(-(_sum_reduce(xd[rows, t1]) / n), dtype=xd.dtype))
    if GRAD.enabled and x._requires_grad:
        coef = np.zeros(xd.shape, dtype=xd.dtype)
        coef[rows, t1] = -1.0 / n
        node = record_op(NllLossBackward0, (x,), result)
        node.coef, node.reduction, node.ignore_index = coef, "mean", -100
        node.save(x, target, None, wrap(np.asanyarray(n, dtype=xd.dtype)))
    return result


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    x, t = input, target
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 1 if x._ndarray.ndim >= 2 else 0
    c = x._ndarray.shape[class_dim]
    logp = _rops.log_softmax(x, class_dim)
    if t._ndarray.shape == x._ndarray.shape:
        if not is_floating_np(t._ndarray.dtype):
            raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                               f"{scalar_type_name(t._ndarray.dtype)}")
        if label_smoothing > 0:
            t = t * (1 - label_smoothing) + label_smoothing / c
        prod = logp * t
        if weight is not None:
            prod = prod * weight.reshape((1, c) + (1,) * (x._ndarray.ndim - 2) if class_dim else (c,))
        if reduction == "none":
            return -prod.sum(class_dim)
        total = -prod.sum()
        if reduction == "mean" and class_dim:
            from .scalar_ops import div_scalar
            return div_scalar(total, x._ndarray.size // c if x._ndarray.size else 0)
        return total
    nll = nll_loss(logp, t, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0:
        return nll
    ignore = wrap(t._ndarray == ignore_index)
    if weight is not None:
        wshape = (1, c) + (1,) * (x._ndarray.ndim - 2) if class_dim else (c,)
        smooth = -(logp * weight.reshape(wshape)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    smooth = smooth.masked_fill(ignore, 0.0)
    if reduction == "mean":
        if weight is not None:
            td = t._ndarray[~ignore._ndarray]
            denom = wrap(np.asanyarray(weight._ndarray[td].sum(), dtype=weight._ndarray.dtype))
        else:
            denom = wrap(np.asanyarray((~ignore._ndarray).sum()))
        ret = smooth.sum() / denom
    elif reduction == "sum":
        ret = smooth.sum()
    else:
        ret = smooth
    from .scalar_ops import mul_scalar
    return mul_scalar(nll, 1 - label_smoothing) + mul_scalar(ret, label_smoothing / c)


# ---- binary cross entropy --------------------------------------------------------------------
class _BinaryCrossEntropyNode(Node):
    __slots__ = ()

    def _upstream(self, grads):
        """The incoming gradient (divided by the element count under 'mean'), the input and the target."""
        g = grads[0]
        x, t = self.saved()[:2]
        if self.reduction == "mean":
            g = g / x._ndarray.size
        return g, x, t


class BinaryCrossEntropyBackward0(_BinaryCrossEntropyNode):
    __slots__ = ("reduction", "weight")
    saved_names = ("self", "target", "weight")
    saved_values = {"reduction": _reduction}

    def apply(self, grads):
        g, x, t = self._upstream(grads)
        w = self.weight
        gx = gt = None
        if self._should_compute_output(0):
            denom = (x * (1 - x)).clamp(min=1e-12)
            gx = (x - t) / denom * g
            if w is not None:
                gx = gx * w
        if self._should_compute_output(1):
            gt = (x.log().clamp(min=-100) - (1 - x).log().clamp(min=-100)) * (-g)
            if w is not None:
                gt = gt * w
        return gx, gt


def _refuse_other_size(x, t, message: str) -> None:
    """The binary cross entropies take a target of the input's size only: torch's ValueError
    ``message``, with the two sizes filled in, otherwise."""
    if t._ndarray.shape != x._ndarray.shape:
        raise ValueError(message.format(target=_size(t._ndarray.shape), input=_size(x._ndarray.shape)))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    x, t = input, target
    _refuse_other_size(x, t, "Using a target size ({target}) that is different to the input size ({input}) is "
                             "deprecated. Please ensure they have the same size.")
    xd, td = x._ndarray, t._ndarray
    if td.dtype != xd.dtype:
        from ..._dtype import scalar_type_name
        raise RuntimeError(f"Found dtype {scalar_type_name(td.dtype)} but expected {scalar_type_name(xd.dtype)}")
    if ((xd < 0) | (xd > 1)).any():
        raise RuntimeError("all elements of input should be between 0 and 1")
    if weight is not None:
        weight = weight.expand(x._ndarray.shape) if weight._ndarray.shape != x._ndarray.shape else weight
    with _err():
        vals = -(td * np.maximum(np.log(xd), -100) + (1 - td) * np.maximum(np.log1p(-xd), -100))
    if weight is not None:
        vals = vals * weight._ndarray
    result = wrap(_reduced(vals.astype(xd.dtype, copy=False), reduction))
    if GRAD.enabled and (x._requires_grad or t._requires_grad):
        node = record_op(BinaryCrossEntropyBackward0, (x, t), result)
        node.reduction = reduction
        node.weight = weight.detach() if weight is not None else None
        node.save(x, t, weight)
    return result


class BinaryCrossEntropyWithLogitsBackward0(_BinaryCrossEntropyNode):
    __slots__ = ("reduction", "weight", "pos_weight")
    saved_names = ("self", "target", "weight", "pos_weight")
    saved_values = {"reduction": _reduction}

    def apply(self, grads):
        g, x, t = self._upstream(grads)
        w, pw = self.weight, self.pos_weight
        gx = gt = None
        if self._should_compute_output(0):
            s = x.sigmoid()
            if pw is not None:
                gx = (s * (pw * t + 1 - t) - pw * t) * g
            else:
                gx = (s - t) * g
            if w is not None:
                gx = gx * w
        if self._should_compute_output(1):
            from . import activation
            if pw is not None:
                gt = (activation.softplus(-x) * pw - activation.softplus(x)) * g
            else:
                gt = -x * g
            if w is not None:
                gt = gt * w
        # the loss has the target's type; each gradient has its own input's
        if gx is not None and gx.dtype != x.dtype:
            gx = gx.to(x.dtype)
        if gt is not None and gt.dtype != t.dtype:
            gt = gt.to(t.dtype)
        return gx, gt


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    x, t = input, target
    _refuse_other_size(x, t, "Target size ({target}) must be the same as input size ({input})")
    xd, td = x._ndarray, t._ndarray
    if td.dtype.kind == "b":
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    if td.dtype.kind in "iu":
        from ..._dtype import scalar_type_name
        raise RuntimeError(f"result type {scalar_type_name(xd.dtype)} can't be cast to the desired output type "
                           f"{scalar_type_name(td.dtype)}")
    with _err():
        sp_neg = np.logaddexp(0, -xd)  # -log(sigmoid(x))
        if pos_weight is not None:
            pw = pos_weight._ndarray
            vals = (1 - td) * xd + (1 + (pw - 1) * td) * sp_neg
        else:
            vals = (1 - td) * xd + sp_neg
    if weight is not None:
        vals = vals * weight._ndarray
    # torch computes into a tensor of the target's type: a float64 target gives a float64 loss
    result = wrap(_reduced(np.asanyarray(vals, dtype=td.dtype), reduction))
    if GRAD.enabled and (x._requires_grad or t._requires_grad):
        node = record_op(BinaryCrossEntropyWithLogitsBackward0, (x, t), result)
        node.reduction = reduction
        node.weight = weight.detach() if weight is not None else None
        node.pos_weight = pos_weight.detach() if pos_weight is not None else None
        node.save(x, t, weight, pos_weight)
    return result


# ---- KL divergence ---------------------------------------------------------------------------
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    reduction_ = legacy_reduction(size_average, reduce, reduction) if (size_average is not None or
                                                                       reduce is not None) else reduction
    if reduction_ not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"{reduction_} is not a valid value for reduction")
    if reduction_ == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    x, t = input, target
    if log_target:
        loss = t.exp() * (t - x)
    else:
        if t._requires_grad and GRAD.enabled:
            xlogy = pointwise.where(t > 0, t * t.clamp(min=1e-38 if t._ndarray.dtype == np.float32 else 1e-308).log(),
                                    0.0)
        else:
            td = t._ndarray
            with _err():
                xlogy = wrap(np.where(td == 0, 0, td * np.log(np.where(td == 0, 1, td))).astype(td.dtype,
                                                                                             copy=False))
        loss = xlogy - t * x
    if reduction_ == "batchmean":
        if x._ndarray.ndim == 0:
            return loss.sum()
        return loss.sum() / x._ndarray.shape[0]
    return _reduce(loss, reduction_)
