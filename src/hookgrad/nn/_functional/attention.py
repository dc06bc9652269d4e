"""scaled_dot_product_attention: torch's two CPU kernels and the rule that picks one.

torch's CPU build has a fused kernel (``_scaled_dot_product_flash_attention_for_cpu``) and a math
composition of ordinary ops. The fused one runs when its gates pass (``_flash_gates``: 4-D inputs
with one head size and batch, last dims dense, no dropout, a 2-D or 4-D broadcastable mask that
needs no gradient, non-empty sequences, a floating dtype) and the ``sdpa_kernel`` choice allows
it. It records one ``ScaledDotProductFlashAttentionForCpuBackward0`` node that saves the mask,
key, query, value, the row log-sum-exp of the scores and the output, and whose own backward has no
derivative. Otherwise the math composition records torch's nodes: the query and the transposed key
each scaled by the square root of the scale, a matmul, the mask added in place, ``_safe_softmax``
(zeros for a row masked everywhere), dropout and a second matmul.
"""
from __future__ import annotations

import math

import numpy as np

from ... import _dtype
from ..._dtype import narrow_to, scalar_type_name, widen
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node, saved_dim
from ..._ops import linalg
from ..._ops._base import GRAD, quiet_fp
from ..._ops._declare import no_derivative_node, outputs_of, record_op
from ..._ops.reduce import SoftmaxBackward0, _softmax_np
from ..attention import _backends
from . import activation as _act

__all__ = ["scaled_dot_product_attention"]

_FLASH_DTYPES = frozenset(("float32", "float64", "float16", "bfloat16"))


# ---- argument checks and the kernel choice ----------------------------------------------------
def _check_inputs(query, key, value, attn_mask):
    """torch's validation before any kernel is chosen."""
    q, k, v = query._ndarray, key._ndarray, value._ndarray
    if not (q.dtype == k.dtype == v.dtype):
        raise RuntimeError("Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{scalar_type_name(q.dtype)} key.dtype: {scalar_type_name(k.dtype)} and value.dtype: "
                           f"{scalar_type_name(v.dtype)} instead.")
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise RuntimeError("Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           f"{q.ndim} key.dim: {k.ndim} and value.dim: {v.ndim} instead.")
    if attn_mask is not None:
        m = attn_mask._ndarray.dtype
        if not (m == np.bool_ or m.kind == "f" or m.name == "bfloat16" or m == q.dtype):
            raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                               f"attn_mask.dtype: {scalar_type_name(m)} and  query.dtype: "
                               f"{scalar_type_name(q.dtype)} instead.")


def _mask_fits(attn_mask, query, key) -> bool:
    """The fused kernel's mask gate: no gradient, 2-D or 4-D, each dim the size or broadcast."""
    if attn_mask is None:
        return True
    if attn_mask._requires_grad:
        return False
    shape = attn_mask._ndarray.shape
    if len(shape) < 2:  # torch reads the mask's dim -2 before its rank
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(len(shape), 1)}, "
                         f"{max(len(shape), 1) - 1}], but got -2)")
    b, h, lq = query._ndarray.shape[:3]
    lk = key._ndarray.shape[2]
    if shape[-2] not in (lq, 1) or shape[-1] not in (lk, 1):
        return False
    if len(shape) == 2:
        return True
    return len(shape) == 4 and shape[0] in (1, b) and shape[1] in (1, h)


def _flash_gates(query, key, value, attn_mask, dropout_p, enable_gqa) -> bool:
    """Whether torch's fused CPU kernel takes this call (its gates, in its order)."""
    if dropout_p > 0.0:
        return False
    q, k, v = query._ndarray, key._ndarray, value._ndarray
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        return False
    if not (q.shape[0] == k.shape[0] == v.shape[0]):
        return False
    hq, hk, hv = q.shape[1], k.shape[1], v.shape[1]
    if not (hq == hk == hv):
        if not (enable_gqa and hk == hv and hk and hq % hk == 0):
            return False
    if not _mask_fits(attn_mask, query, key):
        return False
    if not (q.shape[3] == k.shape[3] == v.shape[3]):
        return False
    if q.shape[2] == 0 or k.shape[2] == 0:
        return False
    if any(t.stride(-1) != 1 for t in (query, key, value)):
        return False
    return q.dtype.name in _FLASH_DTYPES


def _use_flash(query, key, value, attn_mask, dropout_p, enable_gqa) -> bool:
    """The kernel torch's CPU dispatch picks, honouring ``torch.nn.attention.sdpa_kernel``."""
    enabled = _backends.enabled
    if _backends.FLASH in enabled and _flash_gates(query, key, value, attn_mask, dropout_p, enable_gqa):
        return True
    if _backends.MATH in enabled:
        return False
    if _backends.FLASH not in enabled:
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is likely due to "
                           "turning off both the math kernel and the fused kernels.")
    raise RuntimeError("No available kernel.  Aborting execution.")


def _additive_mask(attn_mask, dtype):
    """A boolean mask as torch converts it before any kernel: 0 where True, -inf where False."""
    if attn_mask is None or attn_mask._ndarray.dtype != np.bool_:
        return attn_mask
    return wrap(np.where(attn_mask._ndarray, 0.0, -np.inf).astype(dtype))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False) -> Tensor:
    _check_inputs(query, key, value, attn_mask)
    attn_mask = _additive_mask(attn_mask, query._ndarray.dtype)
    if _use_flash(query, key, value, attn_mask, dropout_p, enable_gqa):
        return _flash_attention(query, key, value, attn_mask, is_causal, scale)
    return _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


# ---- the math composition ---------------------------------------------------------------------
class SafeSoftmaxBackward0(SoftmaxBackward0):
    """torch's ``_safe_softmax``: a softmax whose rows masked everywhere are zeros; its backward is
    the softmax's (those rows' zeros pass no gradient)."""

    __slots__ = ()
    saved_names = ("result",)
    saved_values = {"dim": lambda n: saved_dim(n.dim_arg)}


def _safe_softmax(x: Tensor, dim: int) -> Tensor:
    data = widen(x._ndarray)
    axis = dim % data.ndim
    with quiet_fp():
        dead = np.isneginf(data).all(axis, keepdims=True)
        out = _softmax_np(np.where(dead, 0.0, data) if dead.any() else data, axis)
        if dead.any():
            out = np.where(dead, 0.0, out)
    result = wrap(narrow_to(np.asanyarray(out, dtype=data.dtype), x._ndarray.dtype))
    if GRAD.enabled and x._requires_grad:
        node = record_op(SafeSoftmaxBackward0, (x,), result)
        node.dim, node.dim_arg = axis, dim
        node.save(output=result)
    return result


class MulBackward1(Node):
    """A tensor times a number inside one of torch's C++ compositions (``mul.Scalar``): one edge, the
    number kept as ``_saved_other`` (no tensor saved)."""

    __slots__ = ("other",)
    saved_values = {"other": lambda n: n.other}

    def apply(self, grads):
        return (_scalar_mul(grads[0], self.other),)


def _scalar_mul(x: Tensor, other: float) -> Tensor:
    with quiet_fp():
        result = wrap(narrow_to(np.asanyarray(widen(x._ndarray) * other, dtype=widen(x._ndarray).dtype), x._ndarray.dtype))
    if GRAD.enabled and x._requires_grad:
        record_op(MulBackward1, (x,), result).other = other
    return result


def _scale_factor(query, scale) -> float:
    return 1.0 / math.sqrt(query._ndarray.shape[-1]) if scale is None else float(scale)


def _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    # half and bfloat16 inputs are computed in float32 and the result rounded once, as torch does
    reduced = query.dtype if query._ndarray.dtype.name in ("float16", "bfloat16") else None
    if reduced is not None:
        query, key, value = (t.to(_dtype.float32) for t in (query, key, value))
    out = _math_attention_exact(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    return out if reduced is None else out.to(reduced)


def _math_attention_exact(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    # torch scales the query and the key by the square root each (a negative scale goes to the query)
    factor = _scale_factor(query, scale)
    root = math.sqrt(abs(factor))
    q = _scalar_mul(query, -root if factor < 0 else root)
    if is_causal:
        # (the fused kernel takes a mask and the causal flag together)
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        rows, cols = query._ndarray.shape[-2], key._ndarray.shape[-2]
        attn_mask = wrap(np.where(np.tril(np.ones((rows, cols), dtype=bool)), 0.0, -np.inf).astype(q._ndarray.dtype))
    if enable_gqa:
        key, value = _repeat_heads(query, key, value)
    scores = linalg.matmul(q, _scalar_mul(key.transpose(-2, -1), root))
    if attn_mask is not None:
        scores = scores.add_(attn_mask)
    weights = _safe_softmax(scores, -1)
    if dropout_p > 0.0:
        weights = _act.dropout(weights, dropout_p, True)
    return linalg.matmul(weights, value)


def _repeat_heads(query, key, value):
    """Grouped-query attention in the math composition: key and value heads repeated to the query's."""
    hq, hk, hv = query._ndarray.shape[-3], key._ndarray.shape[-3], value._ndarray.shape[-3]
    if hq == hk == hv:
        return key, value
    if hk == 0 or hv == 0 or hq % hk or hq % hv:
        raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
    return _repeat_interleave_heads(key, hq // hk), _repeat_interleave_heads(value, hq // hv)


def _repeat_interleave_heads(t, times):
    """``t.repeat_interleave(times, -3)`` as torch's C++ composes it: unsqueeze, expand, clone, view."""
    shape = t._ndarray.shape
    dim = len(shape) - 3
    wide = t.unsqueeze(dim + 1).expand(*shape[:dim + 1], times, *shape[dim + 1:])
    return wide.clone().view(*shape[:dim], shape[dim] * times, *shape[dim + 1:])


# ---- the fused kernel ---------------------------------------------------------------------------
def _scores(q, k, mask, is_causal, factor):
    """The masked, scaled scores (B, H, L, S) in the compute dtype, key heads repeated to the query's."""
    with quiet_fp():
        s = np.matmul(q, np.swapaxes(k, -1, -2))
        s *= factor
        if is_causal:
            s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
        if mask is not None:
            s = s + widen(mask).astype(s.dtype, copy=False)
    return s


def _repeat_kv(a, heads):
    return a if a.shape[1] == heads else np.repeat(a, heads // a.shape[1], axis=1)


def _sum_groups(a, heads):
    """A gradient over repeated key/value heads summed back to ``heads`` heads."""
    if a.shape[1] == heads:
        return a
    return a.reshape(a.shape[0], heads, a.shape[1] // heads, *a.shape[2:]).sum(2)


def _empty_blhe(shape, dtype):
    """An uninitialized (B, H, L, E) array laid out (B, L, H, E) in memory."""
    b, h, l, e = shape
    return np.empty((b, l, h, e), dtype=dtype).transpose(0, 2, 1, 3)


def _in_blhe_order(a):
    """``a`` (B, H, L, E) laid out (B, L, H, E) in memory (no copy when it already is)."""
    if a.strides == _empty_blhe(a.shape, a.dtype).strides or a.size == 0:
        return a
    out = _empty_blhe(a.shape, a.dtype)
    out[...] = a
    return out


class ScaledDotProductFlashAttentionForCpuBackward0(Node):
    __slots__ = ("is_causal", "scale")
    # torch packs (and unpacks) these in alphabetical order; the output comes last
    saved_names = ("attn_mask", "key", "query", "value", "logsumexp", "output")
    saved_values = {"dropout_p": lambda n: 0.0, "is_causal": lambda n: n.is_causal, "scale": lambda n: n.scale}

    def apply(self, grads):
        mask, key, query, value, lse, out = self.saved()
        g = grads[0]
        dtype = query._ndarray.dtype
        q, k, v = widen(query._ndarray), widen(key._ndarray), widen(value._ndarray)
        heads = q.shape[1]
        kr, vr = _repeat_kv(k, heads), _repeat_kv(v, heads)
        factor = _scale_factor(query, self.scale)
        go, o = widen(g._ndarray).astype(q.dtype, copy=False), widen(out._ndarray).astype(q.dtype, copy=False)
        with quiet_fp():
            s = _scores(q, kr, None if mask is None else mask._ndarray, self.is_causal, factor)
            lse_rows = widen(lse._ndarray).astype(q.dtype, copy=False)[..., None]
            if np.isfinite(lse_rows).all():
                # exp(-inf - finite) is 0 already: the probabilities overwrite the private scores
                p = np.subtract(s, lse_rows, out=s)
                np.exp(p, out=p)
            else:
                p = np.exp(s - lse_rows)
                p[np.isneginf(s)] = 0.0
            # torch's kernel writes the three gradients (batch, heads, length, dim) in (batch, length,
            # heads, dim) memory order, whatever the inputs' layouts: each product goes straight there
            # when no rounding to a reduced dtype or summing over repeated heads comes between
            direct = q.dtype == dtype
            # torch's kernel writes all three; only those the pass needs are computed here (the
            # engine drops the others anyway)
            wants_q, wants_k, wants_v = (self._should_compute_output(i) for i in range(3))
            gq = gk = gv = None
            if wants_v:
                gv = np.matmul(np.swapaxes(p, -1, -2), go,
                               out=_empty_blhe(v.shape, dtype) if direct and vr is v else None)
                gv = _sum_groups(gv, v.shape[1])
            if wants_q or wants_k:
                gs = np.matmul(go, np.swapaxes(vr, -1, -2))
                gs -= (go * o).sum(-1, keepdims=True)
                gs *= p
            if wants_q:
                gq = np.matmul(gs, kr, out=_empty_blhe(q.shape, dtype) if direct else None)
                gq *= factor
            if wants_k:
                gk = np.matmul(np.swapaxes(gs, -1, -2), q, out=_empty_blhe(k.shape, dtype) if direct and kr is k else None)
                gk *= factor
                gk = _sum_groups(gk, k.shape[1])
        results = [None if a is None else wrap(_in_blhe_order(narrow_to(np.asanyarray(a, dtype=q.dtype), dtype)))
                   for a in (gq, gk, gv)]
        if GRAD.enabled:
            # the fused backward has no derivative: its results hang off torch's NotImplemented node,
            # whose edges go to those of its inputs that require grad
            differentiable = tuple(t for t in (g, query, key, value, out) if t is not None and t._requires_grad)
            if differentiable:
                results = outputs_of(record_op(_FlashDoubleBackward, differentiable), results)
        return tuple(results)


_FlashDoubleBackward = no_derivative_node("_scaled_dot_product_flash_attention_for_cpu_backward", _num_outputs=3)


def _laid_out_like(a, strides):
    """``a``'s values in the memory order of ``strides`` (torch's kernel writes its output into an
    ``empty_like(query)``: the MultiheadAttention query's (L, N, H, E) order makes the later reshape a view)."""
    order = sorted(range(a.ndim), key=lambda d: -strides[d])  # outermost first; ties keep dim order
    return np.ascontiguousarray(a.transpose(order)).transpose(np.argsort(order))


def _flash_attention(query, key, value, attn_mask, is_causal, scale):
    dtype = query._ndarray.dtype
    q, k, v = widen(query._ndarray), widen(key._ndarray), widen(value._ndarray)
    heads = q.shape[1]
    s = _scores(q, _repeat_kv(k, heads), None if attn_mask is None else attn_mask._ndarray, is_causal,
                _scale_factor(query, scale))
    with quiet_fp():
        top = s.max(-1, keepdims=True)
        dead = np.isneginf(top)
        top[dead] = 0.0
        p = np.exp(s - top)
        total = p.sum(-1, keepdims=True)
        lse = np.where(dead, 0.0, top + np.log(np.where(dead, 1.0, total)))
        p /= np.where(dead, 1.0, total)
        out = np.matmul(p, _repeat_kv(v, heads))
    result = wrap(_laid_out_like(narrow_to(np.asanyarray(out, dtype=q.dtype), dtype), query._ndarray.strides))
    if GRAD.enabled and (query._requires_grad or key._requires_grad or value._requires_grad):
        node = record_op(ScaledDotProductFlashAttentionForCpuBackward0, (query, key, value), result)
        node.is_causal, node.scale = bool(is_causal), None if scale is None else float(scale)
        # torch keeps the row log-sum-exp (float32 for reduced dtypes) laid out (batch, query, head)
        lse_dtype = np.float32 if dtype.name in ("float16", "bfloat16") else dtype
        rows = np.ascontiguousarray(lse[..., 0].astype(lse_dtype).transpose(0, 2, 1)).transpose(0, 2, 1)
        node.save(attn_mask, key, query, value, wrap(rows), output=result)
    return result
