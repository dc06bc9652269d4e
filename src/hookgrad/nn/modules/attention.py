"""``MultiheadAttention`` and the function behind it, ``multi_head_attention_forward``.

PyTorch 2.13's semantics: packed (``in_proj_weight``) or separate (``q/k/v_proj_weight``) input
projections, ``add_bias_kv``, ``add_zero_attn``, boolean or additive masks (``attn_mask`` 2-D or
3-D, ``key_padding_mask``), attention-weight dropout in training, per-head or averaged weights,
unbatched inputs and ``batch_first``. Internally the sequence-first layout (L, N, E) is used,
as in PyTorch.

With ``need_weights=False`` PyTorch computes through ``scaled_dot_product_attention``, whose
softmax gives zeros (not NaN) for a query whose keys are all masked; hookgrad does the same.
PyTorch's inference fast path computes the same function, so it needs no counterpart here.
"""
from __future__ import annotations

import math

import numpy as np

import hookgrad
from hookgrad._tensor import Tensor

from .. import init
from ..parameter import Parameter
from .module import Module
from .rnn import _dropout
from hookgrad._ops.linalg import baddbmm as _baddbmm, bmm as _bmm
from hookgrad._ops.reduce import softmax as _softmax

try:
    from .linear import Linear as _Linear
except ImportError:  # the layer files may not be there yet: resolve on first use
    _Linear = None

__all__ = ["MultiheadAttention", "multi_head_attention_forward"]


def _linear_class():
    global _Linear
    if _Linear is None:
        from .linear import Linear
        _Linear = Linear
    return _Linear


def _non_dynamically_quantizable_linear():
    """``NonDynamicallyQuantizableLinear`` (in linear.py, as in torch): the type of ``out_proj``."""
    from .linear import NonDynamicallyQuantizableLinear
    return NonDynamicallyQuantizableLinear


def __getattr__(name):
    if name == "NonDynamicallyQuantizableLinear":  # where older hookgrad pickles look for it
        return _non_dynamically_quantizable_linear()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---- helpers --------------------------------------------------------------------------------------
def _linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    # F.linear looked up at each call, as torch's attention code does: its nodes (and what they save) for
    # inputs of any rank, and a patched F.linear (FLOP counters, tracers) sees the projections
    return hookgrad.nn.functional.linear(x, weight, bias)


def _canonical_mask(mask, mask_name: str, other_type, other_name: str, target_type, check_other=True):
    """A boolean mask becomes an additive float mask (-inf where True); float masks pass through."""
    if mask is None:
        return None
    dt = mask.dtype
    if dt != hookgrad.bool and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and dt != other_type:
        import warnings
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for "
                      "both instead.", stacklevel=3)
    if dt == hookgrad.bool:
        data = np.zeros(mask.shape, dtype=target_type.np if hasattr(target_type, "np") else np.float32)
        data[mask._data] = -np.inf
        return hookgrad._tensor.wrap(data)
    return mask


def _none_or_dtype(t):
    if t is None:
        return None
    if isinstance(t, Tensor):
        return t.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    """PyTorch's ``_mha_shape_check``: True when the inputs are batched."""
    dims = query.dim()
    if dims not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {dims}-D query "
                             "tensor")
    which = "batched (3-D)" if dims == 3 else "unbatched (2-D)"
    if key.dim() != dims or value.dim() != dims:
        raise AssertionError(f"For {which} `query`, expected `key` and `value` to be {dims}-D but found "
                             f"{key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != dims - 1:
        raise AssertionError(f"For {which} `query`, expected `key_padding_mask` to be `None` or {dims - 1}-D but "
                             f"found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None and attn_mask.dim() not in (2, 3):
        raise AssertionError(f"For {which} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                             f"{attn_mask.dim()}-D tensor instead")
    if dims == 2 and attn_mask is not None and attn_mask.dim() == 3:
        expected = (num_heads, query.shape[0], key.shape[0])
        if tuple(attn_mask.shape) != expected:
            raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {tuple(attn_mask.shape)}")
    return dims == 3


def _pad_last(mask: Tensor) -> Tensor:
    """Append one zero column (PyTorch pads the masks this way for bias_kv and zero attention)."""
    zeros = hookgrad.zeros(*mask.shape[:-1], 1, dtype=mask.dtype)
    return hookgrad.cat([mask, zeros], -1)


def _safe_softmax(scores: Tensor, mask: Tensor | None) -> Tensor:
    """Softmax over the last dim; rows whose every entry is masked (-inf) give zeros, not NaN."""
    if mask is None:
        return _softmax(scores, -1)
    dead = np.isneginf(scores._data).all(-1, keepdims=True)
    if not dead.any():
        return _softmax(scores, -1)
    dead_t = hookgrad._tensor.wrap(dead)
    # soften dead rows before the softmax so that neither values nor gradients become NaN
    probs = _softmax(scores.masked_fill(dead_t, 0.0), -1)
    return probs.masked_fill(dead_t, 0.0)


# ---- the function ----------------------------------------------------------------------------------
def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Multi-head attention on (L, N, E) inputs (or unbatched (L, E)); returns (output, weights or None)."""
    batched = _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]

    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask),
                                       "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    # the is_causal hint only selects a kernel in PyTorch; the mask itself says the same thing
    attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)

    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not match value's "
                                 f"{tuple(value.shape[:2])}")
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")

    # input projections
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        if query is key and key is value:
            q, k, v = _linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
        else:
            w_q, w_kv = in_proj_weight[:embed_dim], in_proj_weight[embed_dim:]
            b_q = b_kv = None
            if in_proj_bias is not None:
                b_q, b_kv = in_proj_bias[:embed_dim], in_proj_bias[embed_dim:]
            q = _linear(query, w_q, b_q)
            if key is value:
                k, v = _linear(key, w_kv, b_kv).chunk(2, -1)
            else:
                w_k, w_v = w_kv.chunk(2)
                b_k, b_v = b_kv.chunk(2) if b_kv is not None else (None, None)
                k, v = _linear(key, w_k, b_k), _linear(value, w_v, b_v)
    else:
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is None")
        b_q, b_k, b_v = in_proj_bias.chunk(3) if in_proj_bias is not None else (None, None, None)
        q, k, v = (_linear(query, q_proj_weight, b_q), _linear(key, k_proj_weight, b_k),
                   _linear(value, v_proj_weight, b_v))

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key." if static_k is not None
                                 else "bias cannot be added to static value.")
        k = hookgrad.cat([k, bias_k.repeat(1, bsz, 1)])
        v = hookgrad.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k is set but bias_v is None" if bias_k is not None
                             else "bias_v is set but bias_k is None")

    # heads: (L, N, E) -> (N * H, L, head_dim)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None else static_k
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None else static_v

    if add_zero_attn:
        zeros = hookgrad.zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype)
        k = hookgrad.cat([k, zeros], 1)
        v = hookgrad.cat([v, zeros], 1)
        if attn_mask is not None:
            attn_mask = _pad_last(attn_mask)
        if key_padding_mask is not None:
            key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1)
        kpm = kpm.reshape(bsz * num_heads, 1, src_len)
        attn_mask = kpm if attn_mask is None else attn_mask + kpm

    if not training:
        dropout_p = 0.0

    q_scaled = q * math.sqrt(1.0 / float(head_dim))
    k_t = k.transpose(-2, -1)
    # with need_weights torch computes the weights in Python through torch.bmm / torch.baddbmm and
    # F.softmax (names a patch can replace); without, in one fused kernel that no patch sees
    bmm, baddbmm = (hookgrad.bmm, hookgrad.baddbmm) if need_weights else (_bmm, _baddbmm)
    if attn_mask is not None:
        scores = baddbmm(attn_mask.expand(bsz * num_heads, tgt_len, src_len), q_scaled, k_t)
    else:
        scores = bmm(q_scaled, k_t)
    weights = hookgrad.nn.functional.softmax(scores, dim=-1) if need_weights else _safe_softmax(scores, attn_mask)
    if dropout_p > 0.0:
        weights = _dropout(weights, dropout_p, True)
    context = bmm(weights, v)                                              # (N * H, L, head_dim)
    context = context.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = _linear(context, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        weights = weights.mean(dim=1)
    if not batched:
        weights = weights.squeeze(0)
    return out, weights


# ---- the module ----------------------------------------------------------------------------------
class MultiheadAttention(Module):
    """Multi-head attention with PyTorch 2.13's parameters, initialisation and forward signature."""

    __constants__ = ["batch_first"]

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")

        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(hookgrad.empty((embed_dim, embed_dim), dtype=dtype))
            self.k_proj_weight = Parameter(hookgrad.empty((embed_dim, self.kdim), dtype=dtype))
            self.v_proj_weight = Parameter(hookgrad.empty((embed_dim, self.vdim), dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(hookgrad.empty((3 * embed_dim, embed_dim), dtype=dtype))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(hookgrad.empty(3 * embed_dim, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = _non_dynamically_quantizable_linear()(embed_dim, embed_dim, bias=bias, dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(hookgrad.empty((1, 1, embed_dim), dtype=dtype))
            self.bias_v = Parameter(hookgrad.empty((1, 1, embed_dim), dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def __setstate__(self, state):
        state.setdefault("_qkv_same_embed_dim", True)
        super().__setstate__(state)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        batched = query.dim() == 3
        if self.batch_first and batched:
            # keep the identities that select the packed projection
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        kwargs = dict(training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
                      attn_mask=attn_mask, average_attn_weights=average_attn_weights, is_causal=is_causal)
        if not self._qkv_same_embed_dim:
            out, weights = multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight,
                self.out_proj.bias, use_separate_proj_weight=True, q_proj_weight=self.q_proj_weight,
                k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight, **kwargs)
        else:
            out, weights = multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight,
                self.out_proj.bias, **kwargs)
        if self.batch_first and batched:
            out = out.transpose(1, 0)
        return out, weights

    def merge_masks(self, attn_mask, key_padding_mask, query):
        """PyTorch's helper: one additive (N, H, L, S) mask from the two, and its type code."""
        mask_type = None
        merged = None
        if key_padding_mask is not None:
            mask_type = 1
            merged = key_padding_mask
        if attn_mask is not None:
            batch, seq = query.shape[0], query.shape[1]
            mask_type = 2
            if attn_mask.dim() == 3:
                attn_view = attn_mask.reshape(batch, -1, seq, seq)
            else:
                attn_view = attn_mask.reshape(1, 1, seq, seq).expand(batch, self.num_heads, -1, -1)
            merged = attn_view
            if key_padding_mask is not None:
                kpm = key_padding_mask.reshape(batch, 1, 1, seq).expand(-1, self.num_heads, -1, -1)
                merged = attn_view + kpm
        return merged, mask_type
