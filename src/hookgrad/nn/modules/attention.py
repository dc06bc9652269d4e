"""``MultiheadAttention`` and the function behind it, ``multi_head_attention_forward``.

PyTorch 2.13's semantics: packed (``in_proj_weight``) or separate (``q/k/v_proj_weight``) input
projections, ``add_bias_kv``, ``add_zero_attn``, boolean or additive masks (``attn_mask`` 2-D or
3-D, ``key_padding_mask``), attention-weight dropout in training, per-head or averaged weights,
unbatched inputs and ``batch_first``. Internally the sequence-first layout (L, N, E) is used,
as in PyTorch.

The op sequence is torch's, so the graph is too: the packed projection's unflatten/transpose/
contiguous split, the per-head views, and with ``need_weights=False`` one
``scaled_dot_product_attention`` call (torch's fused CPU node where its gates pass).
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
        data[mask._ndarray] = -np.inf
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
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the causal hint alone goes to scaled_dot_product_attention
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False

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

    # input projections (torch's op sequence: its nodes, and what they save)
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _project_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is None")
        b_q, b_k, b_v = in_proj_bias.chunk(3) if in_proj_bias is not None else (None, None, None)
        q, k, v = _project_separate(query, key, value, (q_proj_weight, k_proj_weight, v_proj_weight),
                                    (b_q, b_k, b_v))

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

    F = hookgrad.nn.functional
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key." if static_k is not None
                                 else "bias cannot be added to static value.")
        k = hookgrad.cat([k, bias_k.repeat(1, bsz, 1)])
        v = hookgrad.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = F.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = F.pad(key_padding_mask, (0, 1))
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k is set but bias_v is None" if bias_k is not None
                             else "bias_v is set but bias_k is None")

    # heads: (L, N, E) -> (N * H, L, head_dim)
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_k is None else \
        _static(static_k, "static_k", bsz * num_heads, head_dim)
    v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1) if static_v is None else \
        _static(static_v, "static_v", bsz * num_heads, head_dim)

    if add_zero_attn:
        k = hookgrad.cat([k, hookgrad.zeros((bsz * num_heads, 1, head_dim), dtype=k.dtype)], dim=1)
        v = hookgrad.cat([v, hookgrad.zeros((bsz * num_heads, 1, head_dim), dtype=v.dtype)], dim=1)
        if attn_mask is not None:
            attn_mask = F.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = F.pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1).reshape(
            bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        # the weights in Python through torch.bmm / torch.baddbmm and F.softmax (names a patch can replace)
        q_scaled = q * math.sqrt(1.0 / float(q.shape[2]))
        if attn_mask is not None:
            weights = hookgrad.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            weights = hookgrad.bmm(q_scaled, k.transpose(-2, -1))
        weights = F.softmax(weights, dim=-1)
        if dropout_p > 0.0:
            weights = F.dropout(weights, p=dropout_p)
        out = hookgrad.bmm(weights, v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = _linear(out, out_proj_weight, out_proj_bias)
        out = out.view(tgt_len, bsz, out.shape[1])
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not batched:
            out = out.squeeze(1)
            weights = weights.squeeze(0)
        return out, weights

    # without weights: one scaled_dot_product_attention over (N, H, L, head_dim)
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = _linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.shape[1])
    if not batched:
        out = out.squeeze(1)
    return out, None


def _project_packed(query, key, value, weight, bias):
    """The packed input projection: one linear when query, key and value are one tensor (two when
    key and value are), its result split per role through torch's unflatten/transpose/contiguous."""
    e = query.shape[-1]
    if key is value:
        if query is key:
            return _split_roles(_linear(query, weight, bias), 3, e)
        w_q, w_kv = weight.split([e, e * 2])
        b_q, b_kv = bias.split([e, e * 2]) if bias is not None else (None, None)
        q = _linear(query, w_q, b_q)
        k, v = _split_roles(_linear(key, w_kv, b_kv), 2, e)
        return q, k, v
    w_q, w_k, w_v = weight.chunk(3)
    b_q, b_k, b_v = bias.chunk(3) if bias is not None else (None, None, None)
    return _linear(query, w_q, b_q), _linear(key, w_k, b_k), _linear(value, w_v, b_v)


def _split_roles(proj, roles, e):
    """(..., roles * E) -> ``roles`` contiguous tensors (..., E), as torch's packed projection makes them."""
    parts = proj.unflatten(-1, (roles, e)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
    return tuple(parts[i] for i in range(roles))


def _project_separate(query, key, value, weights, biases):
    """Separate q/k/v projection weights, with torch's shape checks."""
    eq, ek, ev = query.shape[-1], key.shape[-1], value.shape[-1]
    for role, w, want in zip(("query", "key", "value"), weights, ((eq, eq), (eq, ek), (eq, ev))):
        if tuple(w.shape) != want:
            raise AssertionError(f"expecting {role} weights shape of {want}, but got {w.shape}")
    for role, b in zip(("query", "key", "value"), biases):
        if b is not None and tuple(b.shape) != (eq,):
            raise AssertionError(f"expecting {role} bias shape of {(eq,)}, but got {b.shape}")
    return tuple(_linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))


def _static(t, name, rows, head_dim):
    if t.shape[0] != rows:
        raise AssertionError(f"expecting {name}.size(0) of {rows}, but got {t.shape[0]}")
    if t.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {t.shape[2]}")
    return t


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
        # through nn.functional's entry point, as torch's module calls it (what __torch_function__ overrides see)
        from ..functional import multi_head_attention_forward as functional_forward
        if not self._qkv_same_embed_dim:
            out, weights = functional_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight,
                self.out_proj.bias, use_separate_proj_weight=True, q_proj_weight=self.q_proj_weight,
                k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight, **kwargs)
        else:
            out, weights = functional_forward(
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
