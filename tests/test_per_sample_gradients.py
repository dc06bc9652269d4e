"""hookgrad.tools.PerSampleGradients on hookgrad and torch modules.

For every layer kind: each row of ``p.grad_sample`` is the gradient of that sample's loss alone (a
per-example loop, float64, 1e-10), the rows sum (or average) to ``p.grad``, ``p.grad`` is what it is
without the tool, both frameworks give the same rows, and so does Opacus's GradSampleModule on torch.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import hookgrad
from difftest import differential
from hookgrad.tools import PerSampleGradients

FRAMEWORKS = {"torch": torch, "hookgrad": hookgrad}
# Opacus's full backward hooks on a first layer; torch on padding="same" with an even kernel
pytestmark = [pytest.mark.filterwarnings("ignore:Full backward hook is firing:UserWarning"),
              pytest.mark.filterwarnings("ignore:Using padding='same':UserWarning"),
              pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask:UserWarning")]
TOL = 1e-10


# ---- cases written once against T: (model builder, input builder, forward, batch dim) -------------
def _seq(T, *layers):
    return T.nn.Sequential(*layers)


class Case:
    def __init__(self, build, inputs, forward=None, batch_dim=0, batch_first=True, opacus=True):
        self.build, self.inputs, self.batch_dim, self.batch_first = build, inputs, batch_dim, batch_first
        self.forward = forward or (lambda model, *xs: model(*xs))
        self.opacus = opacus    # False, or why Opacus cannot serve as the reference


def _normal(*shape):
    return lambda T, rng: (T.tensor(rng.standard_normal(shape)),)


def _tied_twice(T):
    class Twice(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = T.nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(T.tanh(self.fc(x)))      # one module, two calls before backward

    return Twice()


def _custom(T):
    class ScaledTanh(T.nn.Module):
        """Owns a parameter used in its own forward, around a child Linear: the re-run path."""

        def __init__(self):
            super().__init__()
            self.scale = T.nn.Parameter(T.ones(4, dtype=T.float64))
            self.fc = T.nn.Linear(4, 3)

        def forward(self, x):
            return self.fc(T.tanh(x * self.scale)) * 2.0

    return ScaledTanh()


def _lstm_cell_step(model, x):
    h, c = model(x[:, 0])
    h, c = model(x[:, 1], (h, c))
    return h * c


def _everything_out(model, x, h0=None):
    """The output sequence and the final states, one row per sample (batch-first model)."""
    out, state = model(x) if h0 is None else model(x, h0)
    states = state if isinstance(state, tuple) else (state,)
    rows = [out.reshape(out.shape[0], -1)] + [s.transpose(0, 1).reshape(out.shape[0], -1) for s in states]
    return FRAMEWORKS[type(out).__module__.split(".")[0]].cat(rows, 1)


def _with_h0(model, x):
    h0 = x.new_ones(2, x.shape[0], 4) * 0.3
    return _everything_out(model, x, h0)


def _mha(model, x):
    out, weights = model(x, x, x)
    return out.sum(-1) + weights.sum(-1)


def _mha_masked(model, q, k, v):
    """Sequence first; a boolean key padding mask and a float 3-D attention mask made from the
    inputs (so each sample keeps its own); per-head weights returned. Batch at dim 1 of the result."""
    T = FRAMEWORKS[type(q).__module__.split(".")[0]]
    padding = (k[..., 0] > 0.8).transpose(0, 1)                                       # (B, S)
    mask = 0.1 * (q[..., 0].transpose(0, 1).unsqueeze(2) * k[..., 0].transpose(0, 1).unsqueeze(1))
    mask = mask.repeat_interleave(2, 0)                                      # (B*h, L, S), 2 heads
    out, weights = model(q, k, v, key_padding_mask=padding, attn_mask=mask, average_attn_weights=False)
    batch = q.shape[1]
    return T.cat([out.transpose(0, 1).reshape(batch, -1), weights.reshape(batch, -1)], 1).transpose(0, 1)


def _mha_padded(model, q, k, v):
    """Sequence first, a boolean key padding mask made from the keys, a float attention mask shared
    by the batch, weights averaged over heads."""
    T = FRAMEWORKS[type(q).__module__.split(".")[0]]
    padding = (k[..., 0] > 0.8).transpose(0, 1)                                          # (B, S)
    shared = T.linspace(-1.0, 1.0, q.shape[0] * k.shape[0], dtype=q.dtype).reshape(q.shape[0], k.shape[0])
    out, weights = model(q, k, v, key_padding_mask=padding, attn_mask=shared)
    batch = q.shape[1]
    return T.cat([out.transpose(0, 1).reshape(batch, -1), weights.reshape(batch, -1)], 1).transpose(0, 1)


def _mha_no_weights(model, q, k, v):
    causal = FRAMEWORKS[type(q).__module__.split(".")[0]].ones(q.shape[1], k.shape[1]).triu(1).bool()
    return model(q, k, v, need_weights=False, attn_mask=causal)[0]


def _embedding_inputs(T, rng):
    return (T.tensor(rng.integers(0, 9, size=(5, 6))),)


def _bn_eval(T):
    m = _seq(T, T.nn.Conv2d(2, 3, 3), T.nn.BatchNorm2d(3), T.nn.ReLU())
    with T.no_grad():
        m[1].running_mean.copy_(T.tensor([0.3, -0.2, 0.1]))
        m[1].running_var.copy_(T.tensor([1.5, 0.7, 2.0]))
    return m.eval()


def _instance_running(T):
    m = T.nn.InstanceNorm1d(3, affine=True, track_running_stats=True)
    with T.no_grad():
        m.running_mean.copy_(T.tensor([0.3, -0.2, 0.1]))
        m.running_var.copy_(T.tensor([1.5, 0.7, 2.0]))
    return m.eval()


def _tied(T):
    class TiedLM(T.nn.Module):
        """An embedding and an output layer sharing one weight: two modules add to its rows."""

        def __init__(self):
            super().__init__()
            self.embed = T.nn.Embedding(7, 4)
            self.mix = T.nn.Linear(4, 4)
            self.head = T.nn.Linear(4, 7, bias=False)
            self.head.weight = self.embed.weight

        def forward(self, idx):
            return self.head(T.tanh(self.mix(self.embed(idx))))

    return TiedLM()


CASES = {
    "linear_inplace_relu": Case(lambda T: _seq(T, T.nn.Linear(4, 6), T.nn.ReLU(inplace=True), T.nn.Linear(6, 3)),
                                _normal(5, 4)),
    "linear_3d": Case(lambda T: _seq(T, T.nn.Linear(4, 3, bias=False), T.nn.Tanh(), T.nn.Linear(3, 2)),
                      _normal(5, 7, 4)),
    "linear_seq_first": Case(lambda T: _seq(T, T.nn.Linear(4, 3), T.nn.Tanh(), T.nn.Linear(3, 2)),
                             _normal(7, 5, 4), batch_dim=1, batch_first=False),
    "linear_called_twice": Case(_tied_twice, _normal(5, 4)),
    "conv1d": Case(lambda T: _seq(T, T.nn.Conv1d(2, 4, 3, stride=2, padding=1), T.nn.Tanh(),
                                  T.nn.Conv1d(4, 2, 2, dilation=2, groups=2)), _normal(4, 2, 11)),
    "conv2d": Case(lambda T: _seq(T, T.nn.Conv2d(2, 4, 3, padding=1, stride=2), T.nn.ReLU(inplace=True),
                                  T.nn.Conv2d(4, 4, (2, 3), groups=2, dilation=(1, 2), padding="same")),
                   _normal(3, 2, 7, 6)),
    "conv2d_groups_dilation": Case(lambda T: _seq(T, T.nn.Conv2d(4, 6, 3, padding=2, stride=(2, 1), dilation=2,
                                                            groups=2), T.nn.Tanh(), T.nn.Conv2d(6, 2, 1)),
                                   _normal(3, 4, 7, 6)),
    "conv3d": Case(lambda T: _seq(T, T.nn.Conv3d(2, 3, (2, 3, 2), stride=(1, 2, 1), padding=(1, 0, 1))),
                   _normal(3, 2, 4, 5, 4)),
    "conv2d_reflect": Case(lambda T: _seq(T, T.nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect")),
                           _normal(3, 2, 5, 5), opacus="Opacus ignores padding_mode (pads with zeros)"),
    "conv_transpose1d": Case(lambda T: _seq(T, T.nn.ConvTranspose1d(2, 4, 3, stride=2, padding=1, output_padding=1),
                                            T.nn.Tanh(), T.nn.ConvTranspose1d(4, 2, 2, groups=2, dilation=2)),
                             _normal(3, 2, 6), opacus="functorch"),
    "conv_transpose2d": Case(lambda T: _seq(T, T.nn.ConvTranspose2d(2, 4, 3, stride=2, padding=1, output_padding=1),
                                            T.nn.Tanh(), T.nn.ConvTranspose2d(4, 2, (2, 3), groups=2, dilation=(2, 1))),
                             _normal(3, 2, 4, 5), opacus="functorch"),
    "layer_norm": Case(lambda T: _seq(T, T.nn.Linear(4, 6), T.nn.LayerNorm(6), T.nn.Linear(6, 2)), _normal(5, 3, 4)),
    "layer_norm_2d": Case(lambda T: _seq(T, T.nn.LayerNorm([3, 4]), T.nn.Tanh()), _normal(5, 3, 4)),
    "group_norm": Case(lambda T: _seq(T, T.nn.Conv2d(2, 4, 3), T.nn.GroupNorm(2, 4), T.nn.Tanh()),
                       _normal(3, 2, 5, 5)),
    "instance_norm": Case(lambda T: _seq(T, T.nn.Conv2d(2, 3, 3), T.nn.InstanceNorm2d(3, affine=True), T.nn.Tanh()),
                          _normal(3, 2, 5, 5)),
    "instance_norm_running_eval": Case(_instance_running, _normal(4, 3, 6),
                                       opacus="Opacus normalizes with the input statistics in eval too"),
    "batch_norm_eval": Case(_bn_eval, _normal(3, 2, 5, 5), opacus="Opacus refuses BatchNorm in any mode"),
    "embedding": Case(lambda T: _seq(T, T.nn.Embedding(9, 3), T.nn.Linear(3, 2)), _embedding_inputs),
    "embedding_padding_idx": Case(lambda T: _seq(T, T.nn.Embedding(9, 3, padding_idx=2), T.nn.Linear(3, 2)),
                                  _embedding_inputs, opacus="Opacus gives the padding_idx row a gradient"),
    "rnn": Case(lambda T: T.nn.RNN(3, 4, num_layers=2, batch_first=True), _normal(4, 5, 3),
                forward=lambda m, x: m(x)[0], opacus="twin"),
    "lstm_bidirectional": Case(lambda T: T.nn.LSTM(3, 4, batch_first=True, bidirectional=True), _normal(4, 5, 3),
                               forward=lambda m, x: m(x)[1][1].transpose(0, 1), opacus="twin"),
    "gru_seq_first": Case(lambda T: T.nn.GRU(3, 4), _normal(5, 4, 3), forward=lambda m, x: m(x)[0],
                          batch_dim=1, opacus="twin"),
    "lstm_projected_two_layers": Case(lambda T: T.nn.LSTM(3, 5, num_layers=2, proj_size=2, batch_first=True,
                                                          bidirectional=True, dropout=0.3).eval(),
                                      _normal(4, 5, 3), forward=_everything_out,
                                      opacus="Opacus's DPLSTM has no proj_size"),
    "rnn_relu_h0": Case(lambda T: T.nn.RNN(3, 4, num_layers=2, nonlinearity="relu", batch_first=True),
                        _normal(4, 5, 3), forward=_with_h0, opacus="twin"),
    "gru_bidirectional": Case(lambda T: T.nn.GRU(3, 4, batch_first=True, bidirectional=True, bias=False),
                              _normal(4, 5, 3), forward=_everything_out, opacus="twin"),
    "lstm_cell": Case(lambda T: T.nn.LSTMCell(3, 4), _normal(5, 2, 3), forward=_lstm_cell_step,
                      opacus="Opacus 1.6 has no DP cell layers"),
    "gru_cell": Case(lambda T: T.nn.GRUCell(3, 4), _normal(5, 3), opacus="Opacus 1.6 has no DP cell layers"),
    "multihead_attention": Case(lambda T: T.nn.MultiheadAttention(4, 2, batch_first=True, add_bias_kv=True),
                                _normal(3, 5, 4), forward=_mha,
                                opacus="Opacus's DPMultiheadAttention gives other outputs with batch_first=True"),
    "multihead_attention_masks": Case(lambda T: T.nn.MultiheadAttention(4, 2, kdim=3, vdim=5, add_zero_attn=True,
                                                                     add_bias_kv=True),
                                      lambda T, rng: (T.tensor(rng.standard_normal((5, 3, 4))),
                                                      T.tensor(rng.standard_normal((6, 3, 3))),
                                                      T.tensor(rng.standard_normal((6, 3, 5)))),
                                      forward=_mha_masked, batch_dim=1,
                                      opacus="Opacus's DPMultiheadAttention has no average_attn_weights"),
    "multihead_attention_seq_first": Case(lambda T: T.nn.MultiheadAttention(4, 2, kdim=3, vdim=5, add_zero_attn=True),
                                          lambda T, rng: (T.tensor(rng.standard_normal((5, 3, 4))),
                                                          T.tensor(rng.standard_normal((6, 3, 3))),
                                                          T.tensor(rng.standard_normal((6, 3, 5)))),
                                          forward=_mha_padded, batch_dim=1, batch_first=False, opacus="twin"),
    "multihead_attention_no_bias": Case(lambda T: T.nn.MultiheadAttention(6, 3, bias=False, kdim=4, batch_first=True),
                                        lambda T, rng: (T.tensor(rng.standard_normal((3, 5, 6))),
                                                        T.tensor(rng.standard_normal((3, 5, 4))),
                                                        T.tensor(rng.standard_normal((3, 5, 6)))),
                                        forward=_mha_no_weights,
                                        opacus="Opacus's DPMultiheadAttention gives other outputs with batch_first=True"),
    "custom_module": Case(_custom, _normal(5, 4)),
    "tied_embedding_and_head": Case(_tied, lambda T, rng: (T.tensor(rng.integers(0, 7, size=(5, 3))),)),
}


def _build(T, case: Case, seed: int = 0):
    model = case.build(T).double()
    rng = np.random.default_rng(seed)
    with T.no_grad():
        for p in model.parameters():
            p.copy_(T.tensor(rng.standard_normal(tuple(p.shape)) * 0.5))
    return model


def _inputs(T, case: Case):
    xs = case.inputs(T, np.random.default_rng(1))
    return tuple(x.double() if x.is_floating_point() else x for x in xs)


def _sample_losses(T, case: Case, out):
    """One loss per sample (a non-linear function of that sample's outputs only)."""
    out = out.movedim(case.batch_dim, 0) if case.batch_dim else out
    flat = out.reshape(out.shape[0], -1)
    return (flat * flat).sum(1) + flat.sum(1)


def _run_with_tool(T, case: Case, reduction: str, model=None):
    model = model if model is not None else _build(T, case)
    xs = _inputs(T, case)
    with PerSampleGradients(model, loss_reduction=reduction, batch_first=case.batch_first) as tool:
        losses = _sample_losses(T, case, case.forward(model, *xs))
        (losses.sum() if reduction == "sum" else losses.mean()).backward()
        rows = {n: p.grad_sample.clone() for n, p in model.named_parameters()}
        grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    return model, tool, rows, grads


def _per_example_loop(T, case: Case):
    model = _build(T, case)
    xs = _inputs(T, case)
    batch = xs[0].shape[case.batch_dim]
    rows = {n: [] for n, _ in model.named_parameters()}
    for b in range(batch):
        model.zero_grad()
        one = tuple(x.narrow(case.batch_dim, b, 1) for x in xs)
        _sample_losses(T, case, case.forward(model, *one)).sum().backward()
        for n, p in model.named_parameters():
            rows[n].append(p.grad.clone())
    return {n: T.stack(r) for n, r in rows.items()}


def _max_diff(a, b) -> float:
    return float((a - b).abs().max())


@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_rows_are_each_samples_gradient(framework, name, reduction):
    T, case = FRAMEWORKS[framework], CASES[name]
    model, _, rows, grads = _run_with_tool(T, case, reduction)
    batch = _inputs(T, case)[0].shape[case.batch_dim]
    loop = _per_example_loop(T, case)
    plain = _build(T, case)
    losses = _sample_losses(T, case, case.forward(plain, *_inputs(T, case)))
    (losses.sum() if reduction == "sum" else losses.mean()).backward()
    for n, p in plain.named_parameters():
        assert tuple(rows[n].shape) == (batch, *p.shape), n
        assert _max_diff(grads[n], p.grad) == 0.0, f"{n}: the tool changed p.grad"
        total = rows[n].sum(0) if reduction == "sum" else rows[n].mean(0)
        assert _max_diff(total, p.grad) < TOL, n
        assert _max_diff(rows[n], loop[n]) < TOL, n
    for p in model.parameters():
        assert not hasattr(p, "grad_sample")


@pytest.mark.parametrize("name", list(CASES))
@differential(rtol=1e-10, atol=1e-12)
def test_same_rows_on_both_frameworks(T, name):
    _, _, rows, _ = _run_with_tool(T, CASES[name], "mean")
    return rows


# ---- against Opacus on torch --------------------------------------------------------------------
def _opacus_twin(model):
    """Opacus's own layer with the same weights, and how to read a parameter's rows from it:
    DPRNN/DPLSTM/DPGRU share torch's parameter names; DPMultiheadAttention splits the packed
    projection into q/k/v linears."""
    layers = pytest.importorskip("opacus.layers")
    if isinstance(model, torch.nn.MultiheadAttention):
        twin = layers.DPMultiheadAttention(model.embed_dim, model.num_heads, bias=model.in_proj_bias is not None,
                                           add_bias_kv=model.bias_k is not None, add_zero_attn=model.add_zero_attn,
                                           kdim=model.kdim, vdim=model.vdim, batch_first=model.batch_first).double()
        twin.load_state_dict(model.state_dict())
        rows = {"in_proj_weight": lambda: torch.cat([twin.qlinear.weight.grad_sample, twin.klinear.weight.grad_sample,
                                                     twin.vlinear.weight.grad_sample], 1),
                "q_proj_weight": lambda: twin.qlinear.weight.grad_sample,
                "k_proj_weight": lambda: twin.klinear.weight.grad_sample,
                "v_proj_weight": lambda: twin.vlinear.weight.grad_sample,
                "in_proj_bias": lambda: torch.cat([twin.qlinear.bias.grad_sample, twin.klinear.bias.grad_sample,
                                                   twin.vlinear.bias.grad_sample], 1),
                "bias_k": lambda: twin.seq_bias_k.bias.grad_sample.reshape(-1, 1, 1, model.embed_dim),
                "bias_v": lambda: twin.seq_bias_v.bias.grad_sample.reshape(-1, 1, 1, model.embed_dim),
                "out_proj.weight": lambda: twin.out_proj.weight.grad_sample,
                "out_proj.bias": lambda: twin.out_proj.bias.grad_sample}
        return twin, rows
    kind = {torch.nn.LSTM: layers.DPLSTM, torch.nn.GRU: layers.DPGRU, torch.nn.RNN: layers.DPRNN}[type(model)]
    extra = {"nonlinearity": model.nonlinearity} if type(model) is torch.nn.RNN else {}
    twin = kind(model.input_size, model.hidden_size, num_layers=model.num_layers, bias=model.bias,
                batch_first=model.batch_first, bidirectional=model.bidirectional, **extra).double()
    twin.load_state_dict(model.state_dict())
    params = dict(twin.named_parameters())
    return twin, {n: (lambda n=n: params[n].grad_sample) for n in params}


@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c.opacus in (True, "functorch", "twin")])
def test_same_rows_as_opacus(name, reduction):
    """GradSampleModule on the same torch model (its functorch path for ConvTranspose), or on
    Opacus's own RNN/attention layer loaded with the same weights."""
    GradSampleModule = pytest.importorskip("opacus").GradSampleModule
    case = CASES[name]
    _, _, rows, _ = _run_with_tool(torch, case, reduction)
    model = _build(torch, case)
    for m in model.modules():        # Opacus's full backward hooks cannot take in-place activations
        if isinstance(m, torch.nn.ReLU):
            m.inplace = False
    if case.opacus == "twin":
        model, theirs = _opacus_twin(model)
    else:
        params = dict(model.named_parameters())
        theirs = {n: (lambda n=n: params[n].grad_sample) for n in params}
    wrapped = GradSampleModule(model, batch_first=case.batch_first, loss_reduction=reduction,
                               strict=case.opacus is True)
    losses = _sample_losses(torch, case, case.forward(wrapped, *_inputs(torch, case)))
    (losses.sum() if reduction == "sum" else losses.mean()).backward()
    for n in rows:
        assert _max_diff(rows[n], theirs[n]()) < TOL, n


OPACUS_WRONG = ["conv2d_reflect", "embedding_padding_idx"]


@pytest.mark.parametrize("name", OPACUS_WRONG)
def test_where_opacus_differs_it_differs_from_the_per_example_loop(name):
    """Opacus's rows for these cases are not the per-sample gradients (ours are, see above)."""
    GradSampleModule = pytest.importorskip("opacus").GradSampleModule
    case = CASES[name]
    model = _build(torch, case)
    for m in model.modules():
        if isinstance(m, torch.nn.ReLU):
            m.inplace = False
    wrapped = GradSampleModule(model, batch_first=case.batch_first, loss_reduction="sum")
    _sample_losses(torch, case, case.forward(wrapped, *_inputs(torch, case))).sum().backward()
    loop = _per_example_loop(torch, case)
    assert max(_max_diff(p.grad_sample, loop[n]) for n, p in model.named_parameters()) > 1e-3


def test_opacus_exceptions_are_stated():
    assert all(c.opacus is True or (isinstance(c.opacus, str) and c.opacus) for c in CASES.values())
    assert {n for n, c in CASES.items() if c.opacus not in (True, "functorch", "twin")} >= set(OPACUS_WRONG)


# ---- lifecycle ------------------------------------------------------------------------------------
def _hook_counts(model):
    return [(len(m._forward_hooks), len(m._forward_pre_hooks)) for m in model.modules()]


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_leaving_removes_hooks_and_attributes(framework):
    T = FRAMEWORKS[framework]
    model = _build(T, CASES["layer_norm"])
    before = _hook_counts(model)
    x = _inputs(T, CASES["layer_norm"])[0]
    with PerSampleGradients(model) as tool:
        assert tool.hook_count > 0
        model(x).sum().backward()
        assert all(hasattr(p, "grad_sample") for p in model.parameters())
    assert tool.hook_count == 0 and _hook_counts(model) == before
    assert not any(hasattr(p, "grad_sample") for p in model.parameters())
    with PerSampleGradients(model) as tool:
        out = model(x)
        assert len(tool._live_calls) == 3
    seen = []
    out.register_hook(seen.append)
    out.sum().backward()            # a graph made inside the block, run after it: the tool's hooks are gone
    assert len(seen) == 1 and not any(hasattr(p, "grad_sample") for p in model.parameters())
    assert all(not calls for calls in tool._pending.values())     # no hook of the tool fired
    del out
    assert len(tool._live_calls) == 0
    model.zero_grad()
    model(x).sum().backward()       # no hook left: a backward afterwards adds nothing
    assert not any(hasattr(p, "grad_sample") for p in model.parameters())


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_backward_passes_add_up_and_clear_starts_afresh(framework):
    T = FRAMEWORKS[framework]
    model = _build(T, CASES["linear_inplace_relu"])
    x = _inputs(T, CASES["linear_inplace_relu"])[0]
    with PerSampleGradients(model, loss_reduction="sum") as tool:
        model(x).sum().backward()
        once = model[0].weight.grad_sample.clone()
        out = model(x)
        out.sum().backward(retain_graph=True)
        out.sum().backward()         # the same graph again: its calls count once more
        assert _max_diff(model[0].weight.grad_sample, 3 * once) < TOL
        assert _max_diff(model[0].weight.grad_sample.sum(0), model[0].weight.grad) < TOL
        tool.clear()
        assert model[0].weight.grad_sample is None
        model(x[:2]).sum().backward()
        assert tuple(model[0].weight.grad_sample.shape) == (2, 6, 4)
        with pytest.raises(RuntimeError, match="clear"):
            model(x).sum().backward()    # batch 5 onto rows of batch 2


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_frozen_parameters_get_no_rows(framework):
    T = FRAMEWORKS[framework]
    model = _build(T, CASES["linear_inplace_relu"])
    model[0].weight.requires_grad_(False)
    with PerSampleGradients(model) as tool:
        model(_inputs(T, CASES["linear_inplace_relu"])[0]).sum().backward()
        assert not hasattr(model[0].weight, "grad_sample")
        assert tuple(model[0].bias.grad_sample.shape) == (5, 6)
        with T.no_grad():            # no graph: nothing recorded, nothing kept
            model(_inputs(T, CASES["linear_inplace_relu"])[0])
        assert all(not calls for calls in tool._pending.values())


# ---- refusals -----------------------------------------------------------------------------------
@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_batch_norm_in_training_is_refused_naming_the_module(framework):
    T = FRAMEWORKS[framework]
    model = _bn_eval(T).double().train()
    x = _inputs(T, CASES["batch_norm_eval"])[0]
    with PerSampleGradients(model):
        with T.no_grad():
            model(x)                 # nothing to differentiate: allowed
        before = model[1].running_mean.clone()
        with pytest.raises(ValueError, match=r"'1' \(BatchNorm2d\).*batch"):
            model(x)                 # refused before it ran: running statistics untouched
        model.eval()                 # and the model usable
        model(x).sum().backward()
        assert tuple(model[1].weight.grad_sample.shape) == (3, 3)
        assert _max_diff(model[1].running_mean, before) == 0.0
    no_stats = T.nn.BatchNorm1d(3, track_running_stats=False).double().eval()
    with PerSampleGradients(no_stats), pytest.raises(ValueError, match="BatchNorm1d"):
        no_stats(T.randn(4, 3, dtype=T.float64))


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_embedding_scaled_by_frequency_is_refused(framework):
    T = FRAMEWORKS[framework]
    model = T.nn.Embedding(5, 2, scale_grad_by_freq=True)
    with PerSampleGradients(model), pytest.raises(ValueError, match="scale_grad_by_freq"):
        model(T.tensor([[1, 1, 2]]))


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_random_or_coupled_module_is_refused_not_wrong(framework):
    T = FRAMEWORKS[framework]

    class Noisy(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = T.nn.Parameter(T.ones(8))

        def forward(self, x):
            return T.nn.functional.dropout(x * self.w, 0.5, self.training)

    class Centred(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = T.nn.Parameter(T.ones(8))

        def forward(self, x):
            return (x - x.mean(0)) * self.w

    for model in (Noisy(), Centred()):
        with PerSampleGradients(model):
            out = model(T.randn(6, 8))
            with pytest.raises(RuntimeError, match="does not reproduce its batched output"):
                (out * out).sum().backward()


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_bad_arguments(framework):
    T = FRAMEWORKS[framework]
    with pytest.raises(ValueError, match="loss_reduction"):
        PerSampleGradients(T.nn.Linear(2, 2), loss_reduction="none")
    with pytest.raises(TypeError, match="module"):
        PerSampleGradients(T.zeros(2))
    with pytest.raises(TypeError, match="batch_first"):
        PerSampleGradients(T.nn.Linear(2, 2), batch_first=1)


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_gradients_taken_with_autograd_grad_in_between_are_not_counted(framework):
    T = FRAMEWORKS[framework]
    case = CASES["linear_3d"]
    model = _build(T, case)
    x = _inputs(T, case)[0].requires_grad_()
    with PerSampleGradients(model, loss_reduction="sum"):
        out = model(x)
        T.autograd.grad(out.sum(), x, retain_graph=True)    # reaches the output hooks, no parameter
        _sample_losses(T, case, out).sum().backward()
        rows = {n: p.grad_sample.clone() for n, p in model.named_parameters()}
    loop = _per_example_loop(T, case)
    for n in rows:
        assert _max_diff(rows[n], loop[n]) < TOL, n


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_dropout_inside_rnn_or_attention_in_training_is_refused(framework):
    T = FRAMEWORKS[framework]
    lstm = T.nn.LSTM(8, 4, num_layers=2, dropout=0.5, batch_first=True)
    attention = T.nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True)
    x = T.randn(6, 3, 8)
    for model, run in ((lstm, lambda: lstm(x)[0]), (attention, lambda: attention(x, x, x)[0])):
        with PerSampleGradients(model):
            out = run()
            with pytest.raises(RuntimeError, match="does not reproduce its batched output"):
                (out * out).sum().backward()



@pytest.mark.parametrize("name", ["conv2d_reflect", "group_norm", "batch_norm_eval", "gru_cell", "lstm_cell",
                                  "rnn", "multihead_attention", "conv_transpose1d"])
@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_batch_first_false_leaves_layers_with_their_own_layout_alone(framework, name):
    T, case = FRAMEWORKS[framework], CASES[name]
    _, _, want, _ = _run_with_tool(T, case, "mean")
    seq_first = Case(case.build, case.inputs, case.forward, case.batch_dim, batch_first=False)
    _, _, got, _ = _run_with_tool(T, seq_first, "mean")
    for n in want:
        assert _max_diff(got[n], want[n]) == 0.0, n
