"""Differential tests of multi-head attention and the transformer encoder: same weights on torch and
hookgrad; outputs, attention weights, and gradients of inputs and every parameter must agree."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from difftest import catch, differential, warns

import torch

# these scenarios are tiny: torch's thread pool only adds contention on a busy machine
torch.set_num_threads(1)

import hookgrad

F32 = np.float32


def load_weights(T, module, seed=0, scale=0.4):
    rng = np.random.default_rng(seed)
    state = {name: T.tensor(rng.uniform(-scale, scale, tuple(value.shape)).astype(F32))
             for name, value in module.state_dict().items()}
    module.load_state_dict(state)
    return module


def arr(shape, seed, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(F32)


def tensor(T, shape, seed, requires_grad=True, scale=1.0):
    return T.tensor(arr(shape, seed, scale), requires_grad=requires_grad)


def weight(T, shape, seed):
    return tensor(T, shape, seed, scale=0.3)


def param_grads(module):
    return {name: p.grad for name, p in module.named_parameters()}


def mhaf(T):
    if T is hookgrad:
        from hookgrad.nn.modules.attention import multi_head_attention_forward
        return multi_head_attention_forward
    return T.nn.functional.multi_head_attention_forward


def bool_mask(T, shape, seed, keep_first=True):
    m = np.random.default_rng(seed).random(shape) < 0.35
    if keep_first:
        m[..., 0] = False  # every query keeps at least one key
    return T.tensor(m)


# ---- the function (needs no layer classes) --------------------------------------------------------
MASKS = ["none", "bool2d", "float3d", "kpm_bool", "kpm_float", "both"]


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("sharing", ["self", "kv", "cross"])
@differential(rtol=1e-4, atol=1e-5)
def test_functional_mha(T, mask, need_weights, average, sharing):
    L, S, N, E, H = 4, 5, 2, 6, 3
    if sharing == "self":
        S = L
    w_in, b_in = weight(T, (3 * E, E), 1), weight(T, (3 * E,), 2)
    w_out, b_out = weight(T, (E, E), 3), weight(T, (E,), 4)
    q = tensor(T, (L, N, E), 5)
    k = q if sharing == "self" else tensor(T, (S, N, E), 6)
    v = k if sharing in ("self", "kv") else tensor(T, (S, N, E), 7)
    attn_mask = kpm = None
    if mask in ("bool2d", "both"):
        attn_mask = bool_mask(T, (L, S), 8)
    if mask == "float3d":
        attn_mask = T.tensor(arr((N * H, L, S), 9))
    if mask in ("kpm_bool", "both"):
        kpm = bool_mask(T, (N, S), 10)
    if mask == "kpm_float":
        kpm = T.tensor(arr((N, S), 11))
    out, weights = mhaf(T)(q, k, v, E, H, w_in, b_in, None, None, False, 0.0, w_out, b_out, training=True,
                           key_padding_mask=kpm, need_weights=need_weights, attn_mask=attn_mask,
                           average_attn_weights=average)
    loss = (out * out).sum() + (weights.sum() * 0.5 if weights is not None else 0)
    loss.backward()
    grads = [t.grad for t in (w_in, b_in, w_out, b_out, q, k, v)]
    return out, weights, grads


@pytest.mark.parametrize("add_bias_kv,add_zero_attn", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("with_masks", [False, True])
@differential(rtol=1e-4, atol=1e-5)
def test_functional_bias_kv_zero_attn(T, add_bias_kv, add_zero_attn, with_masks):
    L, S, N, E, H = 3, 4, 2, 4, 2
    w_in, b_in = weight(T, (3 * E, E), 1), weight(T, (3 * E,), 2)
    w_out, b_out = weight(T, (E, E), 3), weight(T, (E,), 4)
    bias_k = weight(T, (1, 1, E), 12) if add_bias_kv else None
    bias_v = weight(T, (1, 1, E), 13) if add_bias_kv else None
    q, k = tensor(T, (L, N, E), 5), tensor(T, (S, N, E), 6)
    attn_mask = bool_mask(T, (L, S), 8) if with_masks else None
    kpm = bool_mask(T, (N, S), 10) if with_masks else None
    out, weights = mhaf(T)(q, k, k, E, H, w_in, b_in, bias_k, bias_v, add_zero_attn, 0.0, w_out, b_out,
                           key_padding_mask=kpm, attn_mask=attn_mask)
    (out.sum() + (weights * weights).sum()).backward()
    return out, weights, [t.grad for t in (w_in, b_in, w_out, b_out, q, k) + ((bias_k, bias_v) if add_bias_kv
                                                                                 else ())]


@differential(rtol=1e-4, atol=1e-5)
def test_functional_fully_masked_rows(T):
    """A query with every key masked: NaN with need_weights (softmax), zeros without (SDPA)."""
    L, N, E, H = 3, 2, 4, 2
    w_in, w_out = weight(T, (3 * E, E), 1), weight(T, (E, E), 3)
    q = tensor(T, (L, N, E), 5)
    kpm = T.tensor([[True, True, True], [False, True, False]])
    with_w = mhaf(T)(q, q, q, E, H, w_in, None, None, None, False, 0.0, w_out, None, key_padding_mask=kpm)[0]
    out = mhaf(T)(q, q, q, E, H, w_in, None, None, None, False, 0.0, w_out, None, key_padding_mask=kpm,
                  need_weights=False)[0]
    out.sum().backward()
    return with_w, out, q.grad, w_in.grad


@differential(rtol=1e-4, atol=1e-5)
def test_functional_separate_weights_and_unbatched(T):
    E, H, kd, vd = 4, 2, 3, 5
    wq, wk, wv = weight(T, (E, E), 1), weight(T, (E, kd), 2), weight(T, (E, vd), 3)
    b_in, w_out, b_out = weight(T, (3 * E,), 4), weight(T, (E, E), 5), weight(T, (E,), 6)
    q, k, v = tensor(T, (3, E), 7), tensor(T, (4, kd), 8), tensor(T, (4, vd), 9)
    kpm = T.tensor([False, True, False, False])
    out, weights = mhaf(T)(q, k, v, E, H, None, b_in, None, None, False, 0.0, w_out, b_out, key_padding_mask=kpm,
                           use_separate_proj_weight=True, q_proj_weight=wq, k_proj_weight=wk, v_proj_weight=wv,
                           average_attn_weights=False)
    (out.sum() + weights.sum()).backward()
    return out, weights, [t.grad for t in (wq, wk, wv, b_in, w_out, b_out, q, k, v)]


@differential
def test_functional_errors(T):
    E, H = 4, 2
    w_in, w_out = T.zeros(3 * E, E), T.zeros(E, E)
    q = T.zeros(3, 2, E)
    f = mhaf(T)
    return [
        catch(lambda: f(q, q, q, E, H, w_in, None, None, None, False, 0.0, w_out, None, attn_mask=T.zeros(3, 4))),
        catch(lambda: f(q, q, q, E, H, w_in, None, None, None, False, 0.0, w_out, None,
                        attn_mask=T.zeros(3, 3, 3))),
        catch(lambda: f(q, q, q, E, H, w_in, None, None, None, False, 0.0, w_out, None,
                        key_padding_mask=T.zeros(2, 3, dtype=T.long))),
        catch(lambda: f(q, T.zeros(3, E), q, E, H, w_in, None, None, None, False, 0.0, w_out, None)),
        catch(lambda: f(q, q, q, E, H, w_in, None, None, None, False, 0.0, w_out, None, is_causal=True)),
        catch(lambda: f(q, q, q, 5, H, w_in, None, None, None, False, 0.0, w_out, None)),
        warns(lambda: f(q, q, q, E, H, w_in, None, None, None, False, 0.0, w_out, None,
                        key_padding_mask=T.zeros(2, 3, dtype=T.bool), attn_mask=T.zeros(3, 3)))[1],
    ]


# ---- the module ----------------------------------------------------------------------------------
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("sharing", ["self", "kv", "cross", "kdim_vdim"])
@pytest.mark.parametrize("mask", ["none", "both", "kpm_bool", "float3d"])
@differential(rtol=1e-4, atol=1e-5)
def test_module_mha(T, batch_first, bias, sharing, mask):
    L, S, N, E, H = 3, 4, 2, 6, 2
    kd, vd = (5, 3) if sharing == "kdim_vdim" else (None, None)
    m = load_weights(T, T.nn.MultiheadAttention(E, H, bias=bias, batch_first=batch_first, kdim=kd, vdim=vd))
    if sharing == "self":
        S = L

    def seq(n, dim, seed):
        return tensor(T, (N, n, dim) if batch_first else (n, N, dim), seed)
    q = seq(L, E, 1)
    k = q if sharing == "self" else seq(S, kd or E, 2)
    v = k if sharing in ("self", "kv") else seq(S, vd or E, 3)
    attn_mask = kpm = None
    if mask == "both":
        attn_mask, kpm = bool_mask(T, (L, S), 4), bool_mask(T, (N, S), 5)
    elif mask == "kpm_bool":
        kpm = bool_mask(T, (N, S), 5)
    elif mask == "float3d":
        attn_mask = T.tensor(arr((N * H, L, S), 6))
    out, weights = m(q, k, v, key_padding_mask=kpm, attn_mask=attn_mask)
    out2, none = m(q, k, v, key_padding_mask=kpm, attn_mask=attn_mask, need_weights=False)
    ((out * out).sum() + weights.sum() + out2.sum()).backward()
    grads = {name: t.grad for name, t in (("q", q), ("k", k), ("v", v))}
    return out, weights, out2, none, grads, param_grads(m), [n for n, _ in m.named_parameters()]


@differential
def test_module_mha_structure(T):
    m = T.nn.MultiheadAttention(8, 2)
    sep = T.nn.MultiheadAttention(8, 4, kdim=3, vdim=5, bias=False, add_bias_kv=True)
    return (repr(m), repr(sep), list(m.state_dict()), list(sep.state_dict()), type(m.out_proj).__name__,
            isinstance(m.out_proj, T.nn.Linear), m.in_proj_bias.abs().sum().item(), m.out_proj.bias.abs().sum().item(),
            m.head_dim, sep._qkv_same_embed_dim, m.in_proj_weight.shape,
            catch(lambda: T.nn.MultiheadAttention(6, 4)), catch(lambda: T.nn.MultiheadAttention(0, 1)))


@pytest.mark.parametrize("batch_first", [False, True])
@differential(rtol=1e-4, atol=1e-5)
def test_module_mha_unbatched_and_eval_fast_path(T, batch_first):
    m = load_weights(T, T.nn.MultiheadAttention(4, 2, batch_first=batch_first), seed=3)
    x = tensor(T, (3, 4), 1)
    out, w = m(x, x, x, key_padding_mask=T.tensor([False, False, True]))
    out.sum().backward()
    m.eval()
    xb = tensor(T, (2, 3, 4) if batch_first else (3, 2, 4), 2, requires_grad=False)
    with T.no_grad():  # torch takes its native fast path here
        fast = m(xb, xb, xb, key_padding_mask=T.tensor([[False, False, True], [False, False, False]]))
    return out, w, x.grad, param_grads(m), fast


# ---- the encoder -----------------------------------------------------------------------------------
def encoder_layer(T, activation, **kwargs):
    act = {"relu": "relu", "gelu": "gelu", "gelu_module": T.nn.GELU(), "callable": lambda x: T.tanh(x) * 2}[
        activation]
    return T.nn.TransformerEncoderLayer(activation=act, **kwargs)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_module", "callable"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("masks", [False, True])
@differential(rtol=2e-4, atol=2e-5)
def test_encoder_layer(T, norm_first, activation, batch_first, masks):
    d, nhead, ff, L, N = 8, 2, 16, 5, 3
    layer = load_weights(T, encoder_layer(T, activation, d_model=d, nhead=nhead, dim_feedforward=ff, dropout=0.0,
                                          batch_first=batch_first, norm_first=norm_first))
    x = tensor(T, (N, L, d) if batch_first else (L, N, d), 1)
    src_mask = T.triu(T.full((L, L), float("-inf")), diagonal=1) if masks else None
    kpm = T.tensor([[False] * L, [False] * (L - 2) + [True] * 2, [False] * (L - 1) + [True]]) if masks else None
    out = layer(x, src_mask=src_mask, src_key_padding_mask=kpm)
    (out * out).sum().backward()
    return out, x.grad, param_grads(layer), [n for n, _ in layer.named_parameters()], layer.activation_relu_or_gelu


@pytest.mark.parametrize("norm", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@differential(rtol=2e-4, atol=2e-5)
def test_encoder_stack(T, norm, batch_first):
    d, L, N = 8, 4, 2
    layer = T.nn.TransformerEncoderLayer(d, 2, dim_feedforward=12, dropout=0.0, batch_first=batch_first)
    enc, cats = warns(lambda: T.nn.TransformerEncoder(layer, num_layers=2, norm=T.nn.LayerNorm(d) if norm else None))
    load_weights(T, enc, seed=7)
    x = tensor(T, (N, L, d) if batch_first else (L, N, d), 2)
    kpm = T.tensor([[False, False, False, True], [False, False, False, False]])
    out = enc(x, src_key_padding_mask=kpm)
    (out * out).sum().backward()
    enc.eval()
    with T.no_grad():  # torch's nested-tensor path: padded positions come back as zeros (batch_first only)
        inference = enc(x.detach(), src_key_padding_mask=kpm)
    causal = enc(x.detach(), mask=T.nn.Transformer.generate_square_subsequent_mask(L)
                 if hasattr(T.nn, "Transformer") else T.triu(T.full((L, L), float("-inf")), diagonal=1))
    return (cats, out, x.grad, param_grads(enc), [n for n, _ in enc.named_parameters()], inference, causal,
            enc.use_nested_tensor, repr(enc))


@differential
def test_encoder_layer_structure_and_errors(T):
    layer = T.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    gelu_layer = T.nn.TransformerEncoderLayer(8, 2, activation=T.nn.GELU(), bias=False, norm_first=True)
    return (repr(layer), repr(gelu_layer), list(layer.state_dict()), list(gelu_layer.state_dict()),
            catch(lambda: T.nn.TransformerEncoderLayer(8, 2, activation="tanh")),
            layer.training, layer.self_attn.dropout, layer.dropout.p)


def test_train_mode_dropout_changes_output():
    layer = hookgrad.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.5)
    x = hookgrad.randn(4, 2, 8)
    a, b = layer(x), layer(x)
    layer.eval()
    c, d = layer(x), layer(x)
    assert (a - b).abs().max().item() > 1e-4
    assert (c - d).abs().max().item() == 0


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu_module"])
@differential(rtol=2e-4, atol=2e-5)
def test_decoder_layer_and_stack(T, norm_first, batch_first, activation):
    d, L, S, N = 8, 4, 5, 2
    act = "relu" if activation == "relu" else T.nn.GELU()
    layer = T.nn.TransformerDecoderLayer(d, 2, dim_feedforward=12, dropout=0.0, activation=act,
                                         batch_first=batch_first, norm_first=norm_first)
    dec = load_weights(T, T.nn.TransformerDecoder(layer, num_layers=2, norm=T.nn.LayerNorm(d)), seed=31)
    tgt = tensor(T, (N, L, d) if batch_first else (L, N, d), 32)
    memory = tensor(T, (N, S, d) if batch_first else (S, N, d), 33)
    causal = T.nn.Transformer.generate_square_subsequent_mask(L)
    mem_kpm = T.tensor([[False] * S, [False] * (S - 2) + [True] * 2])
    out = dec(tgt, memory, tgt_mask=causal, memory_key_padding_mask=mem_kpm)
    (out * out).sum().backward()
    return out, tgt.grad, memory.grad, param_grads(dec), [n for n, _ in dec.named_parameters()], repr(layer)


@pytest.mark.parametrize("batch_first", [False, True])
@differential(rtol=2e-4, atol=2e-5)
def test_full_transformer(T, batch_first):
    d, S, L, N = 8, 5, 4, 2
    model, cats = warns(lambda: T.nn.Transformer(d, 2, num_encoder_layers=2, num_decoder_layers=1,
                                                 dim_feedforward=12, dropout=0.0, batch_first=batch_first))
    load_weights(T, model, seed=41)
    src = tensor(T, (N, S, d) if batch_first else (S, N, d), 42)
    tgt = tensor(T, (N, L, d) if batch_first else (L, N, d), 43)
    src_kpm = T.tensor([[False] * S, [False] * (S - 1) + [True]])
    out = model(src, tgt, tgt_mask=model.generate_square_subsequent_mask(L), src_key_padding_mask=src_kpm,
                memory_key_padding_mask=src_kpm)
    (out * out).sum().backward()
    errors = [catch(lambda: model(src, tgt[:1] if batch_first else tgt[:, :1])),
              catch(lambda: model(src, T.zeros(*tgt.shape[:-1], 6)))]
    return (cats, out, src.grad, tgt.grad, param_grads(model), list(model.state_dict()), errors,
            model.generate_square_subsequent_mask(3))
