"""``torch.utils.flop_counter.FlopCounterMode`` and ``torch.utils.module_tracker.ModuleTracker``
against torch's: totals, per-module and per-operator counts (forward, and forward with backward,
where which inputs need grad decides what backward costs), the printed table, custom formulas and
the errors of ``register_flop_formula``."""
from __future__ import annotations

import contextlib
import importlib
import json
import math
import pathlib
import warnings

import pytest

import hookgrad
from difftest import catch, differential, run_both, assert_same


def _counts(T, fc):
    """Modules sorted (torch fills them in set order), operators in the order they were counted."""
    return {mod: [(str(op), n) for op, n in ops.items()] for mod, ops in sorted(fc.get_flop_counts().items())}


def _measure(T, run, backward):
    from importlib import import_module
    FlopCounterMode = import_module(T.__name__ + ".utils.flop_counter").FlopCounterMode
    T.manual_seed(0)
    with FlopCounterMode(display=False) as fc:
        out = run()
        if backward and out.requires_grad:
            out.sum().backward()
    return fc.get_total_flops(), _counts(T, fc)


def _r(T, *shape, grad=False):
    return T.randn(*shape, requires_grad=grad)


# (name, program(T, r, F)): every program returns one tensor; inputs made with r(..., grad=True)
# need grad, the others do not
OPS = {
    "linear_2d_bias": lambda T, r, F: F.linear(r(4, 8, grad=True), r(3, 8, grad=True), r(3, grad=True)),
    "linear_2d": lambda T, r, F: F.linear(r(4, 8, grad=True), r(3, 8, grad=True)),
    "linear_3d_bias": lambda T, r, F: F.linear(r(2, 4, 8, grad=True), r(3, 8, grad=True), r(3, grad=True)),
    "linear_3d_noncontig_bias": lambda T, r, F: F.linear(r(4, 2, 8, grad=True).transpose(0, 1), r(3, 8, grad=True),
                                                          r(3, grad=True)),
    "linear_3d_input_no_grad": lambda T, r, F: F.linear(r(2, 4, 8), r(3, 8, grad=True)),
    "linear_4d_bias_frozen_bias": lambda T, r, F: F.linear(r(2, 2, 4, 8), r(3, 8, grad=True), r(3)),
    "linear_1d_bias": lambda T, r, F: F.linear(r(8, grad=True), r(3, 8, grad=True), r(3, grad=True)),
    "linear_frozen_weight": lambda T, r, F: F.linear(r(4, 8, grad=True), r(3, 8), r(3)),
    "linear_1d": lambda T, r, F: F.linear(r(8), r(3, 8)),
    "linear_1d_strided_bias": lambda T, r, F: F.linear(r(16)[::2], r(3, 8), r(3)),
    "linear_3d_noncontig_no_grad": lambda T, r, F: F.linear(r(4, 2, 8).transpose(0, 1), r(3, 8), r(3)),
    "dot": lambda T, r, F: T.matmul(r(5, grad=True), r(5, grad=True)),
    "mv": lambda T, r, F: T.matmul(r(4, 5, grad=True), r(5, grad=True)),
    "vm": lambda T, r, F: T.matmul(r(5, grad=True), r(5, 4, grad=True)),
    "mm": lambda T, r, F: T.matmul(r(4, 5, grad=True), r(5, 6, grad=True)),
    "matmul_operator": lambda T, r, F: r(4, 5, grad=True) @ r(5, 6, grad=True),
    "matmul_3_2": lambda T, r, F: T.matmul(r(2, 4, 5, grad=True), r(5, 6, grad=True)),
    "matmul_2_3": lambda T, r, F: T.matmul(r(4, 5, grad=True), r(2, 5, 6, grad=True)),
    "matmul_3_3": lambda T, r, F: T.matmul(r(2, 4, 5, grad=True), r(2, 5, 6, grad=True)),
    "matmul_4_4": lambda T, r, F: T.matmul(r(2, 3, 4, 5, grad=True), r(2, 3, 5, 6, grad=True)),
    "matmul_4_3_broadcast": lambda T, r, F: T.matmul(r(2, 3, 4, 5, grad=True), r(3, 5, 6, grad=True)),
    "matmul_1_3": lambda T, r, F: T.matmul(r(5, grad=True), r(2, 5, 6, grad=True)),
    "matmul_3_1": lambda T, r, F: T.matmul(r(2, 4, 5, grad=True), r(5, grad=True)),
    "matmul_2_3_no_grad": lambda T, r, F: T.matmul(r(4, 5), r(2, 5, 6)),
    "matmul_1_3_no_grad": lambda T, r, F: T.matmul(r(5), r(2, 5, 6)),
    "matmul_noncontig_3_2_no_grad": lambda T, r, F: T.matmul(r(4, 2, 5).transpose(0, 1), r(5, 6)),
    "matmul_noncontig_3_2": lambda T, r, F: T.matmul(r(4, 2, 5).transpose(0, 1), r(5, 6, grad=True)),
    "bmm": lambda T, r, F: T.bmm(r(2, 4, 5, grad=True), r(2, 5, 6, grad=True)),
    "baddbmm": lambda T, r, F: T.baddbmm(r(2, 4, 6, grad=True), r(2, 4, 5, grad=True), r(2, 5, 6, grad=True)),
    "addmm": lambda T, r, F: T.addmm(r(4, 6, grad=True), r(4, 5, grad=True), r(5, 6, grad=True)),
    "mm_function": lambda T, r, F: T.mm(r(4, 5, grad=True), r(5, 6)),
    "mm_method": lambda T, r, F: r(4, 5, grad=True).mm(r(5, 6)),
    "addbmm": lambda T, r, F: T.addbmm(r(4, 6, grad=True), r(2, 4, 5, grad=True), r(2, 5, 6, grad=True)),
    "einsum_batched": lambda T, r, F: T.einsum("bij,bjk->bik", r(2, 4, 5, grad=True), r(2, 5, 6, grad=True)),
    "einsum_2d": lambda T, r, F: T.einsum("ij,jk->ik", r(4, 5), r(5, 6, grad=True)),
    "einsum_outer": lambda T, r, F: T.einsum("i,j->ij", r(4, grad=True), r(5, grad=True)),
    "einsum_batched_dot": lambda T, r, F: T.einsum("bi,bi->b", r(4, 3, grad=True), r(4, 3, grad=True)),
    "einsum_sum_first": lambda T, r, F: T.einsum("ijk,jl->il", r(2, 3, 4, grad=True), r(3, 5, grad=True)),
    "einsum_three": lambda T, r, F: T.einsum("ij,jk,kl->il", r(2, 3, grad=True), r(3, 4, grad=True),
                                             r(4, 5, grad=True)),
    "einsum_ellipsis": lambda T, r, F: T.einsum("...ij,...jk", r(2, 4, 5, grad=True), r(2, 5, 6)),
    "conv1d_groups_stride": lambda T, r, F: F.conv1d(r(2, 4, 10, grad=True), r(6, 2, 3, grad=True), r(6, grad=True),
                                                     stride=2, groups=2),
    "conv2d_padding": lambda T, r, F: F.conv2d(r(2, 3, 8, 8, grad=True), r(4, 3, 3, 3, grad=True), r(4, grad=True),
                                               padding=1),
    "conv2d_input_no_grad": lambda T, r, F: F.conv2d(r(2, 3, 8, 8), r(4, 3, 3, 3, grad=True), r(4, grad=True),
                                                     dilation=2),
    "conv2d_bias_only": lambda T, r, F: F.conv2d(r(2, 3, 8, 8), r(4, 3, 3, 3), r(4, grad=True)),
    "conv2d_unbatched": lambda T, r, F: F.conv2d(r(3, 8, 8, grad=True), r(4, 3, 3, 3, grad=True)),
    "conv3d_stride": lambda T, r, F: F.conv3d(r(1, 2, 5, 5, 5, grad=True), r(4, 2, 2, 2, 2, grad=True), stride=2),
    "conv_transpose2d": lambda T, r, F: F.conv_transpose2d(r(2, 4, 5, 5, grad=True), r(4, 3, 3, 3, grad=True),
                                                           r(3, grad=True), stride=2, output_padding=1),
    "conv_transpose2d_weight_only": lambda T, r, F: F.conv_transpose2d(r(2, 4, 5, 5), r(4, 3, 3, 3, grad=True),
                                                                       stride=2),
    "conv_transpose1d_groups": lambda T, r, F: F.conv_transpose1d(r(2, 4, 5, grad=True), r(4, 3, 3, grad=True),
                                                                  groups=2),
    "sdpa_math_value_dim": lambda T, r, F: F.scaled_dot_product_attention(r(2, 3, 4, 5, grad=True),
                                                                          r(2, 3, 6, 5, grad=True),
                                                                          r(2, 3, 6, 7, grad=True)),
    "sdpa_3d": lambda T, r, F: F.scaled_dot_product_attention(r(3, 4, 5, grad=True), r(3, 6, 5, grad=True),
                                                              r(3, 6, 7, grad=True)),
    "sdpa_flash": lambda T, r, F: F.scaled_dot_product_attention(r(2, 3, 4, 5, grad=True), r(2, 3, 6, 5, grad=True),
                                                                 r(2, 3, 6, 5, grad=True)),
    "sdpa_mask": lambda T, r, F: F.scaled_dot_product_attention(r(2, 3, 4, 5, grad=True), r(2, 3, 6, 5),
                                                                r(2, 3, 6, 7), attn_mask=r(4, 6)),
    "sdpa_causal": lambda T, r, F: F.scaled_dot_product_attention(r(2, 3, 4, 5, grad=True), r(2, 3, 4, 5),
                                                                  r(2, 3, 4, 7), is_causal=True),
    "sdpa_dropout": lambda T, r, F: F.scaled_dot_product_attention(r(2, 3, 4, 5, grad=True), r(2, 3, 6, 5, grad=True),
                                                                   r(2, 3, 6, 5, grad=True), dropout_p=0.5),
    "sdpa_2d": lambda T, r, F: F.scaled_dot_product_attention(r(4, 5, grad=True), r(6, 5, grad=True), r(6, 7)),
    "sdpa_broadcast_batch": lambda T, r, F: F.scaled_dot_product_attention(r(2, 3, 4, 5), r(1, 3, 6, 5),
                                                                           r(1, 3, 6, 5)),
    "sdpa_gqa_flash": lambda T, r, F: F.scaled_dot_product_attention(r(2, 4, 4, 5, grad=True),
                                                                     r(2, 2, 6, 5, grad=True),
                                                                     r(2, 2, 6, 5, grad=True), enable_gqa=True),
    "sdpa_gqa_math": lambda T, r, F: F.scaled_dot_product_attention(r(2, 4, 4, 5, grad=True),
                                                                    r(2, 2, 6, 5, grad=True),
                                                                    r(2, 2, 6, 7, grad=True), enable_gqa=True),
    "sdpa_key_last_dim_strided": lambda T, r, F: F.scaled_dot_product_attention(
        r(2, 3, 4, 5, grad=True), r(2, 3, 5, 6, grad=True).transpose(-1, -2), r(2, 3, 6, 5)),
    "bilinear": lambda T, r, F: F.bilinear(r(4, 3, grad=True), r(4, 5, grad=True), r(6, 3, 5, grad=True),
                                           r(6, grad=True)),
    "tensordot": lambda T, r, F: T.tensordot(r(2, 4, 5, grad=True), r(5, 6, grad=True), dims=1),
    "tensordot_dim_lists": lambda T, r, F: T.tensordot(r(2, 3, 4, grad=True), r(4, 3, 5), dims=([1, 2], [1, 0])),
    "multi_dot": lambda T, r, F: T.linalg.multi_dot([r(2, 3, grad=True), r(3, 4, grad=True), r(4, 5, grad=True)]),
    "multi_dot_vectors": lambda T, r, F: T.linalg.multi_dot([r(3, grad=True), r(3, 4, grad=True),
                                                             r(4, 5, grad=True), r(5, grad=True)]),
    "multi_dot_reordered": lambda T, r, F: T.linalg.multi_dot([r(10, 3, grad=True), r(3, 8, grad=True),
                                                               r(8, 2, grad=True), r(2, 7, grad=True)]),
    "unfold": lambda T, r, F: F.unfold(r(1, 2, 4, 4, grad=True), 2),
    "matmul_then_trace": lambda T, r, F: (r(3, 4, grad=True) @ r(4, 3, grad=True)).trace(),
    "outer_addmv_addr": lambda T, r, F: T.addr(r(4, 5, grad=True), r(4, grad=True), r(5, grad=True)).sum()
    + T.addmv(r(4, grad=True), r(4, 5, grad=True), r(5, grad=True)).sum() + T.outer(r(3, grad=True), r(2)).sum(),
}


def _mha(T, **kwargs):
    T.manual_seed(0)
    return T.nn.MultiheadAttention(8, 2, **kwargs)


MODULES = {
    "mha_cross": lambda T, r: _mha(T)(r(3, 2, 8), r(4, 2, 8), r(4, 2, 8))[0],
    "mha_self": lambda T, r: (lambda x: _mha(T)(x, x, x)[0])(r(3, 2, 8)),
    "mha_self_no_weights": lambda T, r: (lambda x: _mha(T)(x, x, x, need_weights=False)[0])(r(3, 2, 8)),
    "mha_shared_key_value": lambda T, r: (lambda k: _mha(T)(r(3, 2, 8), k, k)[0])(r(4, 2, 8)),
    "mha_mask": lambda T, r: _mha(T)(r(3, 2, 8), r(4, 2, 8), r(4, 2, 8), attn_mask=T.zeros(3, 4))[0],
    "mha_key_padding_mask": lambda T, r: _mha(T)(r(3, 2, 8), r(4, 2, 8), r(4, 2, 8),
                                                 key_padding_mask=T.zeros(2, 4, dtype=T.bool))[0],
    "mha_unbatched": lambda T, r: _mha(T)(r(3, 8), r(4, 8), r(4, 8))[0],
    "mha_batch_first_kdim_vdim": lambda T, r: _mha(T, batch_first=True, kdim=6, vdim=5)(
        r(2, 3, 8), r(2, 4, 6), r(2, 4, 5))[0],
    "mha_eval_batch_first_grad": lambda T, r: (lambda x: _mha(T, batch_first=True).eval()(x, x, x)[0])(r(2, 3, 8)),
    "mha_bias_kv_zero_attn": lambda T, r: _mha(T, add_bias_kv=True, add_zero_attn=True)(
        r(3, 2, 8), r(4, 2, 8), r(4, 2, 8))[0],
    "mha_no_bias": lambda T, r: _mha(T, bias=False)(r(3, 2, 8), r(4, 2, 8), r(4, 2, 8))[0],
    "lstm": lambda T, r: T.nn.LSTM(3, 4)(r(2, 1, 3))[0],
    "lstm_cell": lambda T, r: T.nn.LSTMCell(3, 4)(r(2, 3))[0],
    "lstm_cell_input_and_state_need_grad": lambda T, r: T.nn.LSTMCell(3, 4)(r(2, 3, grad=True),
                                                                            (r(2, 4, grad=True), r(2, 4)))[0],
    "lstm_cell_unbatched": lambda T, r: T.nn.LSTMCell(3, 4)(r(3))[0],
    "gru_cell": lambda T, r: T.nn.GRUCell(3, 4)(r(2, 3)),
    "gru_cell_no_bias": lambda T, r: T.nn.GRUCell(3, 4, bias=False)(r(2, 3), r(2, 4, grad=True)),
    "rnn_cell_relu": lambda T, r: T.nn.RNNCell(3, 4, nonlinearity="relu")(r(2, 3)),
    "lstm_two_layers": lambda T, r: T.nn.LSTM(3, 4, num_layers=2)(r(3, 2, 3))[0],
    "conv_same_reflect": lambda T, r: T.nn.Conv2d(3, 4, 3, padding="same", padding_mode="reflect")(
        r(2, 3, 6, 6, grad=True)),
    "transformer_encoder_layer": lambda T, r: T.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)(
        r(3, 2, 8)),
    "transformer_encoder_layer_eval": lambda T, r: T.nn.TransformerEncoderLayer(
        8, 2, dim_feedforward=16, dropout=0.0, batch_first=True).eval()(r(2, 3, 8)),
}


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
@pytest.mark.parametrize("name", list(OPS))
@differential
def test_op_counts(T, name, backward):
    return _measure(T, lambda: OPS[name](T, lambda *s, grad=False: _r(T, *s, grad=grad), T.nn.functional),
                    backward)


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
@pytest.mark.parametrize("name", list(MODULES))
@differential
def test_attention_module_counts(T, name, backward):
    return _measure(T, lambda: MODULES[name](T, lambda *s, grad=False: _r(T, *s, grad=grad)), backward)


def test_attention_fast_path_counts_nothing():
    """An eval-mode batch_first self-attention under no_grad takes torch's fused kernel, which its
    counter does not count."""
    def scenario(T):
        mha = _mha(T, batch_first=True).eval()
        x = T.randn(2, 3, 8)
        with T.no_grad():
            return _measure(T, lambda: mha(x, x, x)[0], False), _measure(T, lambda: mha(x, x, x, need_weights=False)[0],
                                                                         False)
    got, want = run_both(scenario)
    assert_same(got, want)


# ---- models: module hierarchy, backward attribution, frozen parameters ------------------------------
def _net(T):
    nn = T.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 4, 3, padding=1)
            self.act = nn.ReLU()
            self.proj = nn.Sequential(nn.Linear(4, 4), nn.GELU())

        def forward(self, x):
            y = self.act(self.conv(x))
            return self.proj(y.transpose(1, 3)).transpose(1, 3) + x

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 4, 3, stride=2)
            self.blocks = nn.Sequential(Block(), Block())
            self.pool = nn.AdaptiveAvgPool2d(2)
            self.head = nn.Linear(4 * 2 * 2, 10)

        def forward(self, x):
            return self.head(self.pool(self.blocks(self.stem(x))).flatten(1))

    T.manual_seed(0)
    return Net()


def _mlp(T):
    T.manual_seed(0)
    nn = T.nn
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Sequential(nn.Linear(16, 16), nn.Tanh()), nn.Linear(16, 3))


def _residual(T):
    nn = T.nn

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(4)
            self.c2 = nn.Conv2d(4, 4, 1, groups=2)

        def forward(self, x):
            return T.relu(self.c2(T.relu(self.bn(self.c1(x)))) + x)

    T.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1), Residual(), Residual(), nn.AdaptiveAvgPool2d(1),
                         nn.Flatten(), nn.Linear(4, 3))


def _transformer(T):
    class WithTarget(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = T.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                                          dim_feedforward=16, dropout=0.0)
            self.target = T.randn(3, 2, 8)

        def forward(self, x):
            return self.model(x, self.target)

    T.manual_seed(0)
    return WithTarget()


MODELS = {"mlp": (_mlp, (5, 8)), "cnn": (_net, (2, 3, 9, 9)), "residual": (_residual, (2, 3, 8, 8)),
          "transformer": (_transformer, (4, 2, 8))}


@pytest.mark.parametrize("setup", ["forward", "backward", "input_needs_grad", "frozen_first_layer", "no_grad",
                                   "grad_of_input_only"])
@pytest.mark.parametrize("model", list(MODELS))
@differential
def test_model_counts(T, model, setup):
    make, shape = MODELS[model]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # Transformer's note on nested tensors
        net = make(T)
    x = T.randn(*shape, requires_grad=setup in ("input_needs_grad", "grad_of_input_only"))
    if setup == "frozen_first_layer":
        for p in next(getattr(net, "model", net).children()).parameters():
            p.requires_grad_(False)
    from importlib import import_module
    FlopCounterMode = import_module(T.__name__ + ".utils.flop_counter").FlopCounterMode
    with FlopCounterMode(display=False) as fc:
        if setup == "no_grad":
            with T.no_grad():
                net(x)
        elif setup == "forward":
            net(x)
        elif setup == "grad_of_input_only":
            # torch's module tracker cannot wait for a leaf's gradient under autograd.grad: it raises
            raised = catch(T.autograd.grad, net(x).sum(), [x])
            return raised, fc.get_total_flops(), _counts(T, fc)
        else:
            net(x).sum().backward()
    return fc.get_total_flops(), _counts(T, fc)


RECURRENT = {
    "gru": lambda T: T.nn.GRU(3, 4),
    "gru_two_layers": lambda T: T.nn.GRU(3, 4, num_layers=2),
    "rnn_two_layers": lambda T: T.nn.RNN(3, 4, num_layers=2),
    "gru_bidirectional_batch_first": lambda T: T.nn.GRU(3, 4, bidirectional=True, batch_first=True),
    "rnn_relu_no_bias": lambda T: T.nn.RNN(3, 4, bias=False, nonlinearity="relu"),
}


@pytest.mark.parametrize("inputs", ["input", "input_needs_grad", "state_needs_grad", "last_state_only"])
@pytest.mark.parametrize("name", list(RECURRENT))
@differential
def test_recurrent_layers(T, name, inputs):
    """GRU and RNN layers: forward (the input projection of all steps at once, then the state's per
    step, as torch's CPU kernels run them) under no_grad, and forward with backward (one product
    per operand that needs grad), wherever the gradient enters."""
    T.manual_seed(0)
    layer = RECURRENT[name](T)
    x = T.randn(2, 5, 3) if layer.batch_first else T.randn(5, 2, 3)
    x.requires_grad_(inputs == "input_needs_grad")
    directions = 2 if layer.bidirectional else 1
    h0 = T.randn(layer.num_layers * directions, 2, 4, requires_grad=True) if inputs == "state_needs_grad" else None
    with T.no_grad():
        first = _measure(T, lambda: layer(x)[0], False)
    pick = 1 if inputs == "last_state_only" else 0
    return first, _measure(T, lambda: layer(x, h0)[pick], True)


LSTMS = {
    "lstm_float64": lambda T: T.nn.LSTM(3, 4).double(),
    "lstm_float64_bidirectional_two_layers": lambda T: T.nn.LSTM(3, 4, num_layers=2, bidirectional=True).double(),
    "lstm_float64_no_bias_batch_first": lambda T: T.nn.LSTM(3, 4, bias=False, batch_first=True).double(),
    "lstm_float32_fused": lambda T: T.nn.LSTM(3, 4, num_layers=2),
    "lstm_float32_projections": lambda T: T.nn.LSTM(3, 4, proj_size=2, bidirectional=True),
    "gru_float64_two_layers": lambda T: T.nn.GRU(3, 4, num_layers=2).double(),
}


@pytest.mark.filterwarnings("ignore:LSTM with projections")
@pytest.mark.parametrize("packed", [False, True], ids=["padded", "packed"])
@pytest.mark.parametrize("name", list(LSTMS))
@differential
def test_recurrent_layer_stacks(T, name, packed):
    """LSTM as torch counts it: nothing for oneDNN's fused float32 layer, the composed layer's
    products (input projection, the state's per step, an output projection) elsewhere; packed
    input counts each step on the rows still running. Forward under no_grad, then with backward."""
    T.manual_seed(0)
    layer = LSTMS[name](T)
    dtype = next(layer.parameters()).dtype
    x = T.randn(2, 5, 3, dtype=dtype) if layer.batch_first else T.randn(5, 2, 3, dtype=dtype)
    x.requires_grad_()

    def run():
        inp = T.nn.utils.rnn.pack_padded_sequence(x, [5, 3], batch_first=layer.batch_first) if packed else x
        out, state = layer(inp)
        return (out.data if packed else out).sum() + state[-1].sum()

    with T.no_grad():
        first = _measure(T, run, False)
    return first, _measure(T, run, True)


@differential
def test_counter_outside_module_and_repeated_entry(T):
    """Ops outside every module count under Global only; entering again starts from zero."""
    from importlib import import_module
    FlopCounterMode = import_module(T.__name__ + ".utils.flop_counter").FlopCounterMode
    mlp = _mlp(T)
    fc = FlopCounterMode(display=False)
    with fc:
        T.mm(T.randn(2, 8), T.randn(8, 3))
        mlp(T.randn(4, 8))
    first = (fc.get_total_flops(), _counts(T, fc))
    with fc:
        mlp(T.randn(1, 8))
    return first, (fc.get_total_flops(), _counts(T, fc))


# ---- the table -------------------------------------------------------------------------------------
def _table_runs(T, depth):
    from importlib import import_module
    FlopCounterMode = import_module(T.__name__ + ".utils.flop_counter").FlopCounterMode
    out = []
    net, mlp = _net(T), _mlp(T)
    with FlopCounterMode(display=False, depth=depth) as fc:
        net(T.randn(2, 3, 9, 9)).sum().backward()
    out += [fc.get_table(), fc.get_table(1), fc.get_table(5)]
    with FlopCounterMode(display=False) as fc:
        T.mm(T.randn(2, 3), T.randn(3, 4))
        mlp(T.randn(4, 8))
    out.append(fc.get_table())
    with FlopCounterMode(display=False) as fc:
        T.mm(T.randn(200, 300), T.randn(300, 400))
        mlp(T.randn(4, 8))
    out.append(fc.get_table())
    with FlopCounterMode(display=False) as fc:
        T.relu(T.randn(3))
    out.append(fc.get_table())
    return out


def _without_tabulate():
    """hookgrad's own layout: what it prints where the tabulate package is not installed."""
    import builtins
    real_import = builtins.__import__

    def refuse(name, *args, **kwargs):
        if name == "tabulate":
            raise ImportError("no tabulate")
        return real_import(name, *args, **kwargs)
    return _patched(builtins, "__import__", refuse)


@contextlib.contextmanager
def _patched(owner, name, value):
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


# what torch 2.13 printed for _table_runs(torch, depth), with tabulate 0.10 installed (which strips
# the cells' leading spaces)
TORCH_TABLES = json.loads((pathlib.Path(__file__).parent / "flop_counter_tables.json").read_text())


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_table_matches_torch(depth):
    tabulate = pytest.importorskip("tabulate")  # torch's get_table needs it
    assert tabulate.__version__.startswith("0.10")
    got, want = run_both(_table_runs, depth)
    assert got == want
    with _without_tabulate():
        own = _table_runs(hookgrad, depth)
    assert own == want


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_own_table_layout(depth):
    """Without the tabulate package, hookgrad lays the table out as tabulate 0.10 does."""
    with _without_tabulate():
        assert _table_runs(hookgrad, depth) == TORCH_TABLES[str(depth)]


def test_display_prints_the_table(capsys):
    """display=True prints get_table(depth) on exit; the counts stay readable after."""
    with _without_tabulate():
        mlp = _mlp(hookgrad)
        with hookgrad.utils.flop_counter.FlopCounterMode(depth=1) as fc:
            mlp(hookgrad.randn(4, 8))
        printed = capsys.readouterr().out
    assert printed == fc.get_table(1) + "\n"
    # what torch printed for the same program
    assert printed == ("Module          FLOP    % Total\n------------  ------  ---------\n"
                       "Sequential      3456    100.00%\n- aten.addmm    3456    100.00%\n")


# ---- formulas, custom mappings, errors ------------------------------------------------------------
def _flop_module(T):
    from importlib import import_module
    return import_module(T.__name__ + ".utils.flop_counter")


@differential
def test_formulas_by_torch_names(T):
    fcm = _flop_module(T)
    aten = T.ops.aten
    return [fcm.mm_flop((3, 4), (4, 5)), fcm.addmm_flop((5,), (3, 4), (4, 5)), fcm.bmm_flop((2, 3, 4), (2, 4, 5)),
            fcm.baddbmm_flop((2, 3, 5), (2, 3, 4), (2, 4, 5)),
            fcm.conv_flop_count([2, 3, 8, 8], [4, 3, 3, 3], [2, 4, 6, 6]),
            fcm.conv_flop_count([2, 4, 6, 6], [4, 3, 3, 3], [2, 3, 8, 8], transposed=True),
            fcm.conv_flop((2, 3, 8, 8), (4, 3, 3, 3), None, [1, 1], [0, 0], [1, 1], False, out_val=(2, 4, 6, 6)),
            fcm.conv_backward_flop((2, 4, 6, 6), (2, 3, 8, 8), (4, 3, 3, 3), None, [1], [0], [1], False, [0], 1,
                                   [True, True, False], out_val=((2, 3, 8, 8), (4, 3, 3, 3), None)),
            fcm.sdpa_flop_count((2, 4, 5, 8), (2, 2, 6, 8), (2, 2, 6, 3)),
            fcm.sdpa_backward_flop_count((2, 4, 5, 3), (2, 4, 5, 8), (2, 2, 6, 8), (2, 2, 6, 3)),
            fcm.sdpa_flop((1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)),
            fcm.sdpa_backward_flop((1, 2, 3, 4), (1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)),
            catch(fcm.mm_flop, (3, 4), (5, 6)), catch(fcm.bmm_flop, (2, 3, 4), (3, 4, 5)),
            catch(fcm.sdpa_flop_count, (2, 3, 5, 8), (2, 2, 6, 8), (2, 2, 6, 3)),
            [fcm.get_suffix_str(n) for n in (0, 999, 1000, 9999, 10000, 123456789, 10 ** 16)],
            fcm.convert_num_with_suffix(123456, "K"), fcm.convert_to_percent_str(1, 3),
            fcm.convert_to_percent_str(1, 0), fcm.normalize_tuple(3), fcm.normalize_tuple((3,)),
            sorted(str(k) for k in fcm.flop_registry if str(k) in {
                "aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten.convolution", "aten.convolution_backward",
                "aten._scaled_dot_product_flash_attention", "aten._scaled_dot_product_efficient_attention_backward"}),
            fcm.flop_registry[aten.mm] is fcm.mm_flop, fcm.__all__]


@differential
def test_custom_mapping_and_registration_errors(T):
    fcm = _flop_module(T)
    aten = T.ops.aten
    mlp = _mlp(T)

    def relu_flops(x_shape, *args, out_shape=None, **kwargs):
        return math.prod(out_shape)

    def double_mm(a_shape, b_shape, *args, out_shape=None, **kwargs):
        return 2 * a_shape[0] * a_shape[1] * b_shape[1] * 2

    with fcm.FlopCounterMode(display=False, custom_mapping={aten.relu: relu_flops, aten.mm: double_mm}) as fc:
        mlp(T.randn(4, 8, requires_grad=True)).sum().backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fcm.FlopCounterMode(mlp, display=False)
    return (_counts(T, fc), [(w.category.__name__, str(w.message)) for w in caught],
            catch(fcm.register_flop_formula(aten.mm), double_mm),
            catch(fcm.register_flop_formula("aten.relu"), relu_flops),
            catch(fcm.register_flop_formula(T.nn.functional.relu), relu_flops))


@differential
def test_exit_without_enter_and_reuse(T):
    fcm = _flop_module(T)
    fc = fcm.FlopCounterMode(display=False)
    first = catch(fc.__exit__, None, None, None)
    with fc:
        T.mm(T.randn(2, 3), T.randn(3, 4))
    return first, fc.get_total_flops(), list(fc.get_flop_counts())


# ---- the module tracker ----------------------------------------------------------------------------
@differential
def test_module_tracker_parents_forward_and_backward(T):
    from importlib import import_module
    ModuleTracker = import_module(T.__name__ + ".utils.module_tracker").ModuleTracker
    log = []
    nn = T.nn

    class Probe(nn.Module):
        def __init__(self, tracker):
            super().__init__()
            self.tracker = tracker

        def forward(self, x):
            log.append(("forward", sorted(self.tracker.parents), self.tracker.is_bw))
            y = x * 2
            if y.requires_grad:
                y.register_hook(lambda g: log.append(("backward", sorted(self.tracker.parents), self.tracker.is_bw)))
            return y

    with ModuleTracker() as tracker:
        T.manual_seed(0)
        net = nn.Sequential(nn.Linear(3, 3), nn.Sequential(Probe(tracker), nn.ReLU()), Probe(tracker))
        net(T.randn(2, 3)).sum().backward()
        after = sorted(tracker.parents)
        frozen = nn.Sequential(Probe(tracker), nn.Linear(3, 2))
        frozen(T.randn(2, 3, requires_grad=True)).sum().backward()
    return log, after, sorted(tracker.parents), tracker.is_bw


def test_untranslated_ops_warn():
    """An op whose FLOPs torch counts but hookgrad's counter does not translate warns instead of
    silently counting nothing (a linalg backward)."""
    fcm = hookgrad.utils.flop_counter
    a = hookgrad.randn(3, 3) + 3 * hookgrad.eye(3)
    with pytest.warns(UserWarning, match="does not translate 'LinalgInvExBackward0'"):
        with fcm.FlopCounterMode(display=False):
            hookgrad.linalg.inv(a.requires_grad_()).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with fcm.FlopCounterMode(display=False):
            hookgrad.relu(hookgrad.randn(3)).sum()


def test_counter_leaves_no_hook_behind():
    from hookgrad.autograd import graph
    fcm = hookgrad.utils.flop_counter
    with pytest.raises(RuntimeError):
        with fcm.FlopCounterMode(display=False):
            hookgrad.mm(hookgrad.randn(2, 3), hookgrad.randn(4, 5))
    assert not graph._op_forward_hooks and not graph._op_backward_hooks
    with fcm.FlopCounterMode(display=False) as fc:
        hookgrad.mm(hookgrad.randn(2, 3), hookgrad.randn(3, 5))
    assert fc.get_total_flops() == 60


@differential
def test_double_backward_and_checkpoint(T):
    """create_graph's backward is counted once (as its nodes' formulas), and the second backward
    through the graph it built; a checkpointed forward counts again when recomputed."""
    from importlib import import_module
    fcm = _flop_module(T)
    checkpoint = import_module(T.__name__ + ".utils.checkpoint").checkpoint
    T.manual_seed(0)
    lin = T.nn.Linear(4, 3)
    x = T.randn(2, 4, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # backward(create_graph=True)'s reference-cycle warning
        with fcm.FlopCounterMode(display=False) as fc:
            lin(x).pow(2).sum().backward(create_graph=True)
            x.grad.sum().backward()
    double = _counts(T, fc)
    seq = _mlp(T)
    with fcm.FlopCounterMode(display=False) as fc:
        checkpoint(seq, T.randn(2, 8, requires_grad=True), use_reentrant=False).sum().backward()
    return double, _counts(T, fc)


@differential
def test_aten_convolution_runs(T):
    """torch.ops.aten.convolution (a key of the counter's formulas) computes ATen's convolution."""
    _flop_module(T)
    T.manual_seed(0)
    x, w, b = T.randn(2, 4, 6, 6), T.randn(4, 2, 3, 3), T.randn(4)
    return (T.ops.aten.convolution(x, w, b, [2, 1], [1, 0], [1, 2], False, [0, 0], 2),
            T.ops.aten.convolution(x, w, None, [2, 2], [1, 1], [1, 1], True, [1, 0], 2),
            str(T.ops.aten.convolution_backward))


@differential
def test_custom_function_internals_counted(T):
    """The ops a custom autograd.Function's forward and backward run are counted, per module too
    (torch's test_flop_counter test_autograd_op: 750)."""
    counter = importlib.import_module(T.__name__ + ".utils.flop_counter")

    class Twice(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return T.mm(x, x)

        @staticmethod
        def backward(ctx, grad):
            return T.mm(grad, grad) + T.mm(grad, grad)

    class Block(T.nn.Module):
        def forward(self, x):
            return Twice.apply(x).relu()

    a = T.ones(5, 5, requires_grad=True)
    with counter.FlopCounterMode(display=False) as mode:
        Block()(a).sum().backward()
    counts = {module: {str(op): n for op, n in ops.items()} for module, ops in mode.get_flop_counts().items()}
    return mode.get_total_flops(), counts
