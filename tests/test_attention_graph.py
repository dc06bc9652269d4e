"""Attention's graph against torch's, node by node: scaled_dot_product_attention's fused CPU node
(where torch's gates pick it) and its math composition, and MultiheadAttention's op sequence.
Each scenario walks the grad_fn graph (names, saved attributes, next_functions' output numbers)
and records values, gradients and the fused node's saved tensors (log-sum-exp layout included)."""
from __future__ import annotations

import numpy as np
import pytest

from difftest import catch, differential

import torch  # noqa: F401 - the harness runs each scenario on torch too


def walk(t):
    """The graph of ``t`` depth first: (name, saved attribute names, edge output numbers) per node,
    ("seen", index) for a node met before, None for an empty edge."""
    out, seen = [], {}

    def visit(fn):
        if fn is None:
            out.append(None)
            return
        if id(fn) in seen:
            out.append(("seen", seen[id(fn)]))
            return
        seen[id(fn)] = len(seen)
        out.append((fn.name(), sorted(a for a in dir(fn) if a.startswith("_saved_")),
                    [i for _, i in fn.next_functions]))
        for nxt, _ in fn.next_functions:
            visit(nxt)

    visit(t.grad_fn)
    return out


def saved_record(node):
    """Every ``_saved_*`` value of a node; tensors with their strides."""
    rec = {}
    for name in sorted(a for a in dir(node) if a.startswith("_saved_")):
        value = getattr(node, name)
        rec[name] = (value, tuple(value.stride())) if hasattr(value, "stride") else value
    return rec


def arr(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


BOOL_MASK = arr((4, 6), 1) > 0.4
BOOL_MASK[1] = False  # a query row that attends to nothing

# (q, k, v shapes, keywords): the first group takes the fused kernel on torch's CPU build, the
# second its math composition (3-D and 2-D inputs, head sizes that differ, a 3-D mask, dropout...)
SDPA_CASES = {
    "plain": ([(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5)], {}),
    "causal": ([(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5)], {"is_causal": True}),
    "causal_longer_query": ([(2, 3, 7, 5), (2, 3, 6, 5), (2, 3, 6, 5)], {"is_causal": True}),
    "bool_mask_dead_row": ([(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5)], {"mask": BOOL_MASK}),
    "float_mask_4d": ([(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5)], {"mask": arr((2, 1, 4, 6), 2)}),
    "negative_scale": ([(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5)], {"scale": -0.3}),
    "gqa": ([(2, 4, 4, 5), (2, 2, 6, 5), (2, 2, 6, 5)], {"enable_gqa": True}),
    "gqa_mask": ([(2, 4, 4, 5), (2, 2, 6, 5), (2, 2, 6, 5)], {"enable_gqa": True, "mask": BOOL_MASK[None, None]}),
    "float32": ([(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5)], {"dtype": "float32"}),
    "query_heads_last": ([(2, 4, 3, 5), (2, 3, 6, 5), (2, 3, 6, 5)], {"transpose_query": True}),
    "math_3d": ([(3, 4, 5), (3, 6, 5), (3, 6, 5)], {}),
    "math_3d_value_dim": ([(3, 4, 5), (3, 6, 5), (3, 6, 7)], {"mask": BOOL_MASK}),
    "math_value_dim_causal": ([(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 7)], {"is_causal": True}),
    "math_3d_mask": ([(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5)], {"mask": arr((3, 4, 6), 2)}),
    "math_2d": ([(4, 5), (6, 5), (6, 5)], {"scale": 0.2}),
    "math_gqa_3d": ([(4, 4, 5), (2, 6, 5), (2, 6, 5)], {"enable_gqa": True}),
    "math_broadcast_batch": ([(2, 3, 4, 5), (1, 3, 6, 5), (1, 3, 6, 5)], {}),
    "math_mask_requires_grad": ([(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5)], {"mask": arr((4, 6), 3),
                                                                           "mask_grad": True}),
    "math_bfloat16_mask": ([(2, 4, 5), (2, 6, 5), (2, 6, 5)], {"mask": BOOL_MASK, "dtype": "bfloat16"}),
    "math_float16_causal": ([(2, 4, 5), (2, 6, 5), (2, 6, 5)], {"is_causal": True, "dtype": "float16"}),
    "math_dropout_one": ([(2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 5)], {"dropout_p": 1.0}),
}


@pytest.mark.parametrize("case", list(SDPA_CASES))
@differential(rtol=1e-5, atol=1e-6)
def test_sdpa_graph_values_and_saved(T, case):
    shapes, kw = SDPA_CASES[case]
    kw = dict(kw)
    dtype = getattr(T, kw.pop("dtype", "float64"))
    q, k, v = (T.tensor(arr(s, i), dtype=dtype, requires_grad=True) for i, s in enumerate(shapes))
    query = q.transpose(1, 2) if kw.pop("transpose_query", False) else q
    if "mask" in kw:
        kw["attn_mask"] = T.tensor(kw.pop("mask"), requires_grad=kw.pop("mask_grad", False))
    out = T.nn.functional.scaled_dot_product_attention(query, k, v, **kw)
    rec = {"graph": walk(out), "out": out, "stride": tuple(out.stride())}
    if out.grad_fn.name() == "ScaledDotProductFlashAttentionForCpuBackward0":
        rec["saved"] = saved_record(out.grad_fn)
    (out * T.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    rec["grads"] = [q.grad, k.grad, v.grad]
    return rec


@differential
def test_fused_attention_pack_order_freed_graph_and_no_double_backward(T):
    F = T.nn.functional
    q, k, v = (T.tensor(arr(s, i), requires_grad=True) for i, s in enumerate([(1, 2, 3, 4), (1, 2, 5, 4),
                                                                              (1, 2, 5, 4)]))
    mask = T.tensor(arr((3, 5), 4))
    names = {id(q): "q", id(k): "k", id(v): "v", id(mask): "mask"}
    log = []

    def pack(x):
        log.append(("pack", names.get(id(x), tuple(x.shape))))
        return names.get(id(x), tuple(x.shape)), x

    def unpack(p):
        log.append(("unpack", p[0]))
        return p[1]

    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out.sum().backward(retain_graph=True)
    rec = {"log": log, "again": catch(out.sum().backward), "freed": catch(out.sum().backward)}
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    grads = T.autograd.grad((out * out).sum(), [q, k, v], create_graph=True)
    node = grads[0].grad_fn
    rec["double"] = (node.name(), [(f.name(), i) for f, i in node.next_functions],
                     [g.output_nr for g in grads], [g.requires_grad for g in grads], grads[2].grad_fn is node)
    rec["error"] = catch(T.autograd.grad, grads[0].sum(), [q])
    # only the inputs that require grad get an edge
    out = F.scaled_dot_product_attention(q.detach(), k, v.detach())
    (gk,) = T.autograd.grad(out.sum(), [k], create_graph=True)
    rec["partial"] = [(f.name(), i) for f, i in gk.grad_fn.next_functions]
    return rec


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@differential(rtol=2e-2, atol=2e-2)
def test_fused_attention_reduced_precision(T, dtype):
    q, k, v = (T.tensor(arr(s, i), dtype=getattr(T, dtype), requires_grad=True)
               for i, s in enumerate([(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)]))
    out = T.nn.functional.scaled_dot_product_attention(q, k, v)
    lse = out.grad_fn._saved_logsumexp
    out.float().pow(2).sum().backward()
    return out.grad_fn.name(), out, lse, q.grad, k.grad, v.grad


@pytest.mark.parametrize("layout", ["contiguous", "length_major", "length_first", "mixed"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "gqa"])
@differential(rtol=2e-2, atol=2e-2)
def test_fused_attention_gradient_layout(T, layout, dtype):
    """The layout (strides) of the gradients the fused backward hands to each input, whatever the
    inputs' own layouts: what a tensor hook on q, k and v sees."""
    heads, kv_heads = (4, 2) if dtype == "gqa" else (3, 3)
    dt = getattr(T, "float32" if dtype == "gqa" else dtype)
    order = {"contiguous": (0, 1, 2, 3), "length_major": (0, 2, 1, 3), "length_first": (2, 0, 1, 3),
             "mixed": (0, 1, 2, 3)}[layout]

    def laid_out(h, seed, perm):
        shape = (2, h, 5, 4)
        base = T.tensor(arr([shape[d] for d in perm], seed), dtype=dt, requires_grad=True)
        return base, (base * 1).permute(*[perm.index(d) for d in range(4)])

    leaves, inputs = zip(*(laid_out(h, i, (0, 2, 1, 3) if layout == "mixed" and i == 1 else order)
                           for i, h in enumerate((heads, kv_heads, kv_heads))))
    seen = []
    for t in inputs:
        t.register_hook(lambda g: seen.append((tuple(g.shape), g.stride(), g.dtype)))
    out = T.nn.functional.scaled_dot_product_attention(*inputs, enable_gqa=dtype == "gqa")
    out.float().pow(2).sum().backward()
    return out.grad_fn.name(), tuple(out.stride()), seen, [x.grad for x in leaves]


@differential
def test_sdpa_bad_input(T):
    F = T.nn.functional
    q = T.tensor(arr((1, 2, 3, 4), 0), requires_grad=True)
    k = T.tensor(arr((1, 2, 5, 4), 1))
    rec = [catch(F.scaled_dot_product_attention, q, k.float(), k),
           catch(F.scaled_dot_product_attention, q, k, k, attn_mask=T.zeros(3, 5, dtype=T.int64)),
           catch(F.scaled_dot_product_attention, q, k, k, attn_mask=T.zeros(5)),
           catch(F.scaled_dot_product_attention, q[0], k[0], k[0], attn_mask=T.zeros(3, 5), is_causal=True)]
    # the fused kernel takes a mask and the causal flag together
    rec.append(F.scaled_dot_product_attention(q, k, k, attn_mask=T.zeros(3, 5), is_causal=True))
    with T.nn.attention.sdpa_kernel([T.nn.attention.SDPBackend.FLASH_ATTENTION]):
        rec.append(walk(F.scaled_dot_product_attention(q, k, k)))
        rec.append(catch(F.scaled_dot_product_attention, q[0], k[0], k[0]))
    with T.nn.attention.sdpa_kernel([T.nn.attention.SDPBackend.MATH]):
        rec.append(walk(F.scaled_dot_product_attention(q, k, k)))
    # the failed calls left nothing behind: attention still works
    out = F.scaled_dot_product_attention(q, k, k)
    out.sum().backward()
    rec.append(q.grad)
    return rec


# ---- MultiheadAttention -------------------------------------------------------------------------------
MHA_CASES = {
    "self_no_weights": dict(self=True, need_weights=False),
    "self_weights": dict(self=True, need_weights=True),
    "self_no_weights_batch_first": dict(self=True, need_weights=False, module=dict(batch_first=True)),
    "self_weights_batch_first_padding": dict(self=True, need_weights=True, module=dict(batch_first=True),
                                             padding=True),
    "bool_mask": dict(self=True, need_weights=False, mask="bool"),
    "float_mask": dict(self=True, need_weights=False, mask="float"),
    "causal_no_weights": dict(self=True, need_weights=False, mask="causal"),
    "padding": dict(self=True, need_weights=False, padding=True),
    "padding_and_mask": dict(self=True, need_weights=False, padding=True, mask="bool"),
    "shared_key_value": dict(kv_same=True, need_weights=False),
    "shared_key_value_weights": dict(kv_same=True, need_weights=True),
    "separate": dict(need_weights=False),
    "kdim_vdim": dict(need_weights=False, module=dict(kdim=5, vdim=4)),
    "kdim_vdim_weights": dict(need_weights=True, module=dict(kdim=5, vdim=4)),
    "unbatched": dict(self=True, need_weights=False, batched=False),
    "bias_kv": dict(self=True, need_weights=False, module=dict(add_bias_kv=True)),
    "zero_attn_padding": dict(self=True, need_weights=False, module=dict(add_zero_attn=True), padding=True),
    "no_bias": dict(self=True, need_weights=False, module=dict(bias=False)),
}


@pytest.mark.parametrize("case", list(MHA_CASES))
@differential(rtol=1e-6, atol=1e-8)
def test_multihead_attention_graph(T, case):
    cfg = MHA_CASES[case]
    module_kw = cfg.get("module", {})
    mha = T.nn.MultiheadAttention(6, 2, dtype=T.float64, **module_kw)
    with T.no_grad():
        for i, p in enumerate(mha.parameters()):
            p.copy_(T.tensor(arr(tuple(p.shape), 10 + i) * 0.5))
    batch_first = module_kw.get("batch_first", False)
    L, S, N = 3, 4, 2

    def seq(n, e, seed):
        shape = ((N, n, e) if batch_first else (n, N, e)) if cfg.get("batched", True) else (n, e)
        return T.tensor(arr(shape, seed), dtype=T.float64, requires_grad=True)

    q = seq(L, 6, 0)
    if cfg.get("self"):
        k = v = q
    elif cfg.get("kv_same"):
        k = v = seq(S, 6, 1)
    else:
        k, v = seq(S, module_kw.get("kdim", 6), 1), seq(S, module_kw.get("vdim", 6), 2)
    src = L if cfg.get("self") else S
    kw = {"need_weights": cfg["need_weights"]}
    if cfg.get("mask") == "bool":
        mask = arr((L, src), 3) > 0.5
        mask[:, 0] = False
        kw["attn_mask"] = T.tensor(mask)
    elif cfg.get("mask") == "float":
        kw["attn_mask"] = T.tensor(arr((L, src), 3))
    elif cfg.get("mask") == "causal":
        kw.update(attn_mask=T.tensor(np.triu(np.ones((L, src), bool), 1)), is_causal=True)
    if cfg.get("padding"):
        padding = np.zeros((N, src), bool)
        padding[0, -1] = True
        kw["key_padding_mask"] = T.tensor(padding)
    out, weights = mha(q, k, v, **kw)
    rec = {"graph": walk(out), "out": out, "weights": weights}
    loss = (out * T.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum()
    if weights is not None:
        loss = loss + (weights * weights).sum()
    loss.backward()
    rec["grads"] = [p.grad for p in mha.parameters()] + [t.grad for t in (q, k, v)]
    return rec


@differential(rtol=1e-6, atol=1e-8)
def test_dropout_paths_draw_torchs_random_numbers(T):
    """Dropout sends attention to the math composition (its dropout draws torch's stream), with and
    without MultiheadAttention's weights."""
    T.manual_seed(3)
    q = T.tensor(arr((2, 3, 4, 5), 0), requires_grad=True)
    out = T.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.4)
    graph = walk(out)
    out.sum().backward()
    T.manual_seed(5)
    mha = T.nn.MultiheadAttention(4, 2, dropout=0.5, dtype=T.float64)
    x = T.tensor(arr((3, 2, 4), 1), requires_grad=True)
    without, _ = mha(x, x, x, need_weights=False)
    with_weights, weights = mha(x, x, x)
    return graph, out, q.grad, walk(without), without, with_weights, weights


@differential
def test_flop_counter_follows_the_kernel_choice(T):
    """torch's FLOP counter counts the math composition's products and nothing for the fused kernel;
    hookgrad's counter asks the same kernel choice (masks included)."""
    import importlib
    counter = importlib.import_module(T.__name__ + ".utils.flop_counter").FlopCounterMode
    q = T.tensor(arr((2, 3, 4, 5), 0), requires_grad=True)
    k = T.tensor(arr((2, 3, 6, 5), 1))
    totals = []
    for mask in [None, T.tensor(arr((4, 6), 2)), T.tensor(arr((3, 4, 6), 2)), T.tensor(arr((4, 6), 2)).requires_grad_(),
                 T.tensor(arr((2, 1, 4, 6), 2) > 0)]:
        with counter(display=False) as flops:
            T.nn.functional.scaled_dot_product_attention(q, k, k, attn_mask=mask).sum().backward()
        totals.append(flops.get_total_flops())
    return totals
