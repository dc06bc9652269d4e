"""The transformer family with PyTorch 2.13's structure and semantics: ``TransformerEncoderLayer``,
``TransformerEncoder``, ``TransformerDecoderLayer``, ``TransformerDecoder`` and ``Transformer``.

An encoder layer is self-attention then a feed-forward block, each with dropout, a residual
connection and LayerNorm (after each block, or before it with ``norm_first=True``); a decoder
layer adds attention over the encoder's output (``multihead_attn``) between the two. Submodule
names and order are PyTorch's (``self_attn, linear1, dropout, linear2, norm1, norm2, dropout1,
dropout2``; the decoder adds ``multihead_attn, norm3, dropout3``), so state dicts are
interchangeable.

PyTorch's inference fast path computes the same function, except in one visible way that is
reproduced here: ``TransformerEncoder`` in eval mode without autograd, given a right-padded
``src_key_padding_mask``, runs on nested tensors and returns zeros at the padded positions.
"""
from __future__ import annotations

import copy
import warnings

import numpy as np

import hookgrad
from hookgrad._tensor import Tensor

from .. import init
from .attention import MultiheadAttention, _canonical_mask, _none_or_dtype
from .container import ModuleList
from .module import Module

__all__ = ["TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer", "TransformerDecoder",
           "Transformer"]


def _functional():
    from .. import functional as F
    return F


def _layer(name: str):
    """A layer class from the layer files (imported when first needed)."""
    from .. import modules
    return getattr(modules, name)


def _get_activation_fn(activation: str):
    F = _functional()
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _get_clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
    """Causal mask: -inf above the diagonal, 0 elsewhere."""
    return hookgrad.triu(hookgrad.full((sz, sz), float("-inf"), dtype=dtype), diagonal=1)


def _get_seq_len(src: Tensor, batch_first: bool):
    if src.dim() == 2:
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal=None, size=None) -> bool:
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.size(-2)
        causal = _generate_square_subsequent_mask(sz, dtype=mask.dtype)
        if tuple(mask.size()) == tuple(causal.size()):
            make_causal = bool((mask == causal).all())
        else:
            make_causal = False
    return make_causal


def _add_feed_forward(layer, d_model, dim_feedforward, dropout, bias, dtype) -> None:
    """The feed-forward block of a transformer layer: linear1, dropout, linear2 (registered in torch's order)."""
    Linear = _layer("Linear")
    layer.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
    layer.dropout = _layer("Dropout")(dropout)
    layer.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)


def _add_residual_norms_and_dropouts(layer, branches, d_model, layer_norm_eps, dropout, bias, dtype) -> None:
    """``norm1..norm<branches>``, then ``dropout1..dropout<branches>``: one of each per residual branch."""
    LayerNorm, Dropout = _layer("LayerNorm"), _layer("Dropout")
    for i in range(1, branches + 1):
        setattr(layer, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
    for i in range(1, branches + 1):
        setattr(layer, f"dropout{i}", Dropout(dropout))


class TransformerEncoderLayer(Module):
    """Self-attention and feed-forward, each with residual, dropout and LayerNorm."""

    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            dtype=dtype)
        _add_feed_forward(self, d_model, dim_feedforward, dropout, bias, dtype)
        self.norm_first = norm_first
        _add_residual_norms_and_dropouts(self, 2, d_model, layer_norm_eps, dropout, bias, dtype)

        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        F = _functional()
        if activation is F.relu or isinstance(activation, _layer("ReLU")):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, _layer("GELU")):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "activation"):
            self.activation = _functional().relu

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               _none_or_dtype(src_mask), "src_mask", src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", None, "", src.dtype, check_other=False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal=is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal=is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(Module):
    """A stack of ``num_layers`` deep copies of ``encoder_layer``, then an optional ``norm``."""

    __constants__ = ["norm"]

    def __init__(self, encoder_layer, num_layers: int, norm: Module | None = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

        why_not = ""
        name = "encoder_layer"
        if not isinstance(encoder_layer, TransformerEncoderLayer):
            why_not = f"{name} was not TransformerEncoderLayer"
        elif encoder_layer.norm_first:
            why_not = f"{name}.norm_first was True"
        elif not encoder_layer.self_attn.batch_first:
            why_not = (f"{name}.self_attn.batch_first was not True"
                       "(use batch_first for better inference performance)")
        elif not encoder_layer.self_attn._qkv_same_embed_dim:
            why_not = f"{name}.self_attn._qkv_same_embed_dim was not True"
        elif encoder_layer.self_attn.in_proj_bias is None:
            why_not = f"{name}.self_attn was passed bias=False"
        elif not encoder_layer.activation_relu_or_gelu:
            why_not = f"{name}.activation_relu_or_gelu was not True"
        elif encoder_layer.norm1.eps != encoder_layer.norm2.eps:
            why_not = f"{name}.norm1.eps was not equal to {name}.norm2.eps"
        elif encoder_layer.self_attn.num_heads % 2 == 1:
            why_not = f"{name}.self_attn.num_heads is odd"
        if enable_nested_tensor and why_not:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False because {why_not}",
                          stacklevel=2)
            self.use_nested_tensor = False

    def _pads_to_zero(self, src: Tensor, padding_mask, mask) -> bool:
        """Whether PyTorch would take its nested-tensor path (padded positions come back as zeros)."""
        first = self.layers[0]
        if not getattr(self, "use_nested_tensor", False) or first.training or src.dim() != 3:
            return False
        if padding_mask is None or mask is not None:
            return False
        if getattr(self, "mask_check", True):
            keep = ~np.isneginf(padding_mask._ndarray) if padding_mask.dtype != hookgrad.bool else ~padding_mask._ndarray
            # left-aligned: every row is some True values followed only by False values
            if np.any(keep[:, 1:] & ~keep[:, :-1]):
                return False
        if hookgrad.is_grad_enabled():
            attn = first.self_attn
            params = (src, attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight, attn.out_proj.bias,
                      first.norm1.weight, first.norm1.bias, first.norm2.weight, first.norm2.bias,
                      first.linear1.weight, first.linear1.bias, first.linear2.weight, first.linear2.bias)
            if any(p is not None and p.requires_grad for p in params):
                return False
        return True

    def forward(self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask", _none_or_dtype(mask),
                                               "mask", src.dtype)
        mask = _canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        first = self.layers[0]
        batch_first = first.self_attn.batch_first
        zero_padded = self._pads_to_zero(src, src_key_padding_mask, mask)
        is_causal = _detect_is_causal_mask(mask, is_causal, _get_seq_len(src, batch_first))
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        if zero_padded:
            pad = hookgrad._tensor.wrap(np.isneginf(src_key_padding_mask._ndarray))
            pad = pad.unsqueeze(-1) if batch_first else pad.t().unsqueeze(-1)
            output = output.masked_fill(pad, 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoderLayer(Module):
    """Self-attention, attention over ``memory``, then feed-forward; each with residual, dropout, LayerNorm."""

    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation="relu", layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                            dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,
                                                 bias=bias, dtype=dtype)
        _add_feed_forward(self, d_model, dim_feedforward, dropout, bias, dtype)
        self.norm_first = norm_first
        _add_residual_norms_and_dropouts(self, 3, d_model, layer_norm_eps, dropout, bias, dtype)
        self.activation = _get_activation_fn(activation) if isinstance(activation, str) else activation

    def __setstate__(self, state):
        state.setdefault("activation", _functional().relu)
        super().__setstate__(state)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool = False, memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    _sa_block = TransformerEncoderLayer._sa_block

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


class TransformerDecoder(Module):
    """A stack of ``num_layers`` deep copies of ``decoder_layer``, then an optional ``norm``."""

    __constants__ = ["norm"]

    def __init__(self, decoder_layer, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        output = tgt
        seq_len = _get_seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                           memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """Encoder-decoder transformer ("Attention Is All You Need") with PyTorch's defaults."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        LayerNorm = _layer("LayerNorm")
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                                    layer_norm_eps, batch_first, norm_first, bias, dtype=dtype)
            encoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, encoder_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                                    layer_norm_eps, batch_first, norm_first, bias, dtype=dtype)
            decoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, decoder_norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        batched = src.dim() == 3
        if batched and src.size(0 if self.batch_first else 1) != tgt.size(0 if self.batch_first else 1):
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """Causal mask for a sequence of length ``sz``: -inf above the diagonal, 0 elsewhere."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
