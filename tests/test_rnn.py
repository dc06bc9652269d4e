"""Differential tests of the recurrent layers and cells: same weights on torch and hookgrad; outputs,
final states, and the gradients of inputs, initial states and every parameter must agree."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from difftest import catch, differential, warns

import torch

# these scenarios are tiny: torch's thread pool only adds contention on a busy machine
torch.set_num_threads(1)

F32 = np.float32


def load_weights(T, module, seed=0, scale=0.5):
    """Give ``module`` the same numpy-made weights on either framework (state_dict order is torch's)."""
    rng = np.random.default_rng(seed)
    state = {name: T.tensor(rng.uniform(-scale, scale, tuple(value.shape)).astype(F32))
             for name, value in module.state_dict().items()}
    module.load_state_dict(state)
    return module


def tensor(T, shape, seed, requires_grad=True):
    data = np.random.default_rng(seed).standard_normal(shape).astype(F32)
    return T.tensor(data, requires_grad=requires_grad)


def param_grads(module):
    return {name: p.grad for name, p in module.named_parameters()}


def make(T, kind, *args, **kwargs):
    if kind == "RNN_relu":
        return T.nn.RNN(*args, nonlinearity="relu", **kwargs)
    if kind == "RNN_tanh":
        return T.nn.RNN(*args, nonlinearity="tanh", **kwargs)
    return getattr(T.nn, kind)(*args, **kwargs)


KINDS = ["RNN_tanh", "RNN_relu", "LSTM", "GRU"]
COMBOS = list(itertools.product([1, 2], [True, False], [True, False], [True, False], [True, False]))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("num_layers,bias,batch_first,bidirectional,with_h0", COMBOS)
@differential(rtol=2e-4, atol=2e-5)
def test_recurrent_layer(T, kind, num_layers, bias, batch_first, bidirectional, with_h0):
    seq, batch, n_in, hidden = 4, 3, 5, 6
    m = load_weights(T, make(T, kind, n_in, hidden, num_layers=num_layers, bias=bias, batch_first=batch_first,
                             bidirectional=bidirectional))
    x = tensor(T, (batch, seq, n_in) if batch_first else (seq, batch, n_in), 1)
    states = num_layers * (2 if bidirectional else 1)
    h0 = tensor(T, (states, batch, hidden), 2) if with_h0 else None
    c0 = tensor(T, (states, batch, hidden), 3) if with_h0 else None
    if kind == "LSTM":
        out, (h_n, c_n) = m(x, (h0, c0) if with_h0 else None)
        loss = (out * out).sum() + (h_n * 1.5).sum() + (c_n * c_n).sum()
    else:
        out, h_n = m(x, h0)
        c_n = None
        loss = (out * out).sum() + (h_n * 1.5).sum()
    loss.backward()
    return dict(out=out, h_n=h_n, c_n=c_n, x_grad=x.grad, h0_grad=h0.grad if with_h0 else None,
                c0_grad=c0.grad if with_h0 and kind == "LSTM" else None, params=param_grads(m),
                names=[n for n, _ in m.named_parameters()], shapes=[tuple(p.shape) for p in m.parameters()])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("batch_first", [False, True])
@differential(rtol=2e-4, atol=2e-5)
def test_unbatched_input(T, kind, batch_first):
    m = load_weights(T, make(T, kind, 3, 4, num_layers=2, bidirectional=True, batch_first=batch_first), seed=5)
    x = tensor(T, (5, 3), 6)
    h0 = tensor(T, (4, 4), 7)
    if kind == "LSTM":
        c0 = tensor(T, (4, 4), 8)
        out, (h_n, c_n) = m(x, (h0, c0))
        (out.sum() + h_n.sum() + (c_n * c_n).sum()).backward()
        return out, h_n, c_n, x.grad, h0.grad, c0.grad, param_grads(m)
    out, h_n = m(x, h0)
    (out.sum() + (h_n * h_n).sum()).backward()
    return out, h_n, x.grad, h0.grad, param_grads(m)


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@differential(rtol=2e-4, atol=2e-5)
def test_lstm_projection(T, bidirectional, batch_first):
    m = load_weights(T, T.nn.LSTM(4, 6, num_layers=2, proj_size=3, bidirectional=bidirectional,
                                  batch_first=batch_first), seed=9)
    x = tensor(T, (2, 5, 4), 10)
    out, (h_n, c_n) = m(x)
    ((out * out).sum() + h_n.sum() + c_n.sum()).backward()
    return out, h_n, c_n, x.grad, param_grads(m), [n for n, _ in m.named_parameters()]


@pytest.mark.parametrize("kind", KINDS)
@differential(rtol=2e-4, atol=2e-5)
def test_dropout_between_layers(T, kind):
    m = load_weights(T, make(T, kind, 3, 4, num_layers=3, dropout=0.5), seed=11)
    x = tensor(T, (6, 2, 3), 12, requires_grad=False)
    m.eval()
    eval_out = m(x)[0]
    m.train()
    train_out = m(x)[0]
    # dropout draws differ between frameworks; what must hold: eval applies none, training some
    return eval_out, bool((train_out - eval_out).abs().max() > 1e-6), tuple(train_out.shape)


@differential
def test_dropout_warning_and_repr(T):
    _, cats = warns(lambda: T.nn.LSTM(3, 4, dropout=0.2))
    reprs = [repr(T.nn.LSTM(3, 4)), repr(T.nn.RNN(3, 4, 2, "relu", False, True, 0.3, True)),
             repr(T.nn.GRU(3, 4, batch_first=True, bidirectional=True)),
             repr(T.nn.LSTM(3, 4, num_layers=2, proj_size=2, bias=False)),
             repr(T.nn.RNNCell(3, 4)), repr(T.nn.RNNCell(3, 4, bias=False, nonlinearity="relu")),
             repr(T.nn.LSTMCell(3, 4)), repr(T.nn.GRUCell(3, 4, bias=False))]
    return cats, reprs


@pytest.mark.parametrize("kind", KINDS + ["RNNCell", "LSTMCell", "GRUCell"])
def test_init_range_and_state_dict_keys(kind):
    import hookgrad
    import torch
    args = (5, 7) if "Cell" in kind else (5, 7, 2)
    kwargs = {} if "Cell" in kind else {"bidirectional": True}
    ours = make(hookgrad, kind, *args, **kwargs)
    theirs = make(torch, kind, *args, **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    bound = 1 / np.sqrt(7)
    values = np.concatenate([p.detach().numpy().ravel() for p in ours.parameters()])
    assert values.dtype == np.float32 and np.abs(values).max() <= bound
    assert abs(values.std() - bound / np.sqrt(3)) < 0.1 * bound   # U(-b, b) has std b / sqrt(3)
    assert [w.shape for ws in ours.all_weights for w in ws] == [w.shape for ws in theirs.all_weights
                                                                for w in ws] if "Cell" not in kind else True


@pytest.mark.parametrize("kind,nonlinearity", [("RNNCell", "tanh"), ("RNNCell", "relu"), ("LSTMCell", None),
                                               ("GRUCell", None)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_h0", [True, False])
@differential(rtol=2e-4, atol=2e-5)
def test_cells(T, kind, nonlinearity, bias, batched, with_h0):
    kwargs = {"nonlinearity": nonlinearity} if nonlinearity else {}
    cell = load_weights(T, getattr(T.nn, kind)(4, 5, bias=bias, **kwargs), seed=13)
    lead = (3,) if batched else ()
    x = tensor(T, lead + (4,), 14)
    h = tensor(T, lead + (5,), 15) if with_h0 else None
    c = tensor(T, lead + (5,), 16) if with_h0 else None
    outs = []
    state = (h, c) if kind == "LSTMCell" and with_h0 else h
    for _ in range(3):  # a short unrolled sequence
        state = cell(x, state)
        outs.append(state[0] if kind == "LSTMCell" else state)
    loss = sum((o * o).sum() for o in outs)
    if kind == "LSTMCell":
        loss = loss + state[1].sum()
    loss.backward()
    return outs, x.grad, h.grad if with_h0 else None, c.grad if with_h0 and kind == "LSTMCell" else None, \
        param_grads(cell)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN_tanh"])
@differential(rtol=5e-4, atol=5e-5)
def test_double_backward(T, kind):
    m = load_weights(T, make(T, kind, 3, 4, num_layers=2), seed=17)
    x = tensor(T, (4, 2, 3), 18)
    out = m(x)[0]
    (gx,) = T.autograd.grad((out * out).sum(), x, create_graph=True)
    penalty = (gx * gx).sum()
    penalty.backward()
    return gx, penalty, x.grad, param_grads(m)


@differential
def test_argument_errors(T):
    lstm = T.nn.LSTM(3, 4, num_layers=2)
    gru = T.nn.GRU(3, 4)
    x = T.zeros(5, 2, 3)
    return [
        catch(lambda: lstm(T.zeros(5, 2, 4))),                        # wrong feature size
        catch(lambda: lstm(T.zeros(2, 5, 2, 3))),                     # 4-D input
        catch(lambda: lstm(x, (T.zeros(1, 2, 4), T.zeros(2, 2, 4)))),  # wrong h0 size
        catch(lambda: lstm(x, (T.zeros(2, 4), T.zeros(2, 4)))),       # 2-D state with 3-D input
        catch(lambda: gru(x, T.zeros(1, 3, 4))),                      # wrong batch in h0
        catch(lambda: gru(x.double())),                               # dtype mismatch
        catch(lambda: T.nn.RNN(3, 4, nonlinearity="gelu")),
        catch(lambda: T.nn.GRU(3, 4, proj_size=2)),
        catch(lambda: T.nn.LSTM(3, 4, proj_size=4)),
        catch(lambda: T.nn.LSTM(3, 4, dropout=1.5)),
        catch(lambda: T.nn.LSTM(3, 0)),
        catch(lambda: T.nn.LSTMCell(3, 4)(T.zeros(2, 2, 3))),
        catch(lambda: T.nn.GRUCell(3, 4)(T.zeros(2, 5))),
    ]


@differential(rtol=2e-4, atol=2e-5)
def test_module_hooks_on_lstm(T):
    m = load_weights(T, T.nn.LSTM(3, 4, batch_first=True), seed=21)
    seen = []
    m.register_forward_hook(lambda mod, inp, out: seen.append(("fwd", out[0].shape)))
    m.register_full_backward_hook(lambda mod, gin, gout: seen.append(("bwd", [g.shape if g is not None else None
                                                                              for g in gin])))
    x = tensor(T, (2, 3, 3), 22)
    out, _ = m(x)
    out.sum().backward()
    return [(k, tuple(s) if s is not None and not isinstance(s, list) else
             [tuple(t) if t is not None else None for t in s]) for k, s in seen], x.grad


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("use", ["out", "h_n", "c_n"])
@differential(rtol=2e-4, atol=2e-5)
def test_partial_gradients(T, kind, use):
    """Gradient from one output only; the input needs none, one initial state does."""
    m = load_weights(T, make(T, kind, 3, 4, num_layers=2, bidirectional=True), seed=23)
    x = tensor(T, (5, 2, 3), 24, requires_grad=False)
    h0 = tensor(T, (4, 2, 4), 25)
    if kind == "LSTM":
        out, (h_n, c_n) = m(x, (h0, T.zeros(4, 2, 4)))
    else:
        out, h_n = m(x, h0)
        c_n = h_n
    target = {"out": out, "h_n": h_n, "c_n": c_n}[use]
    (target * target).sum().backward()
    return h0.grad, param_grads(m), out.requires_grad, x.grad


@pytest.mark.parametrize("kind", KINDS)
@differential
def test_graph_lifetime(T, kind):
    m = make(T, kind, 3, 4)
    x = tensor(T, (4, 2, 3), 26)
    out = m(x)[0]
    out.sum().backward(retain_graph=True)
    first = x.grad.clone()
    out.sum().backward()                       # retained: runs again and accumulates
    again = catch(lambda: out.sum().backward())  # freed now
    with T.no_grad():
        no_graph = m(x)[0]
    return T.allclose(x.grad, 2 * first), again, no_graph.requires_grad, no_graph.grad_fn is None


@pytest.mark.parametrize("kind", KINDS)
@differential(rtol=1e-9, atol=1e-10)
def test_float64(T, kind):
    m = make(T, kind, 3, 4, num_layers=2, bidirectional=True)
    load_weights(T, m, seed=27)
    m = m.double()
    x = T.tensor(arr64((5, 2, 3), 28), requires_grad=True)
    out = m(x)[0]
    (out * out).sum().backward()
    return out, x.grad, param_grads(m)


def arr64(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


@differential
def test_input_rank_messages(T):
    """Each recurrent module's own wording for an input neither 2-D nor 3-D (GRU's and LSTM's have no
    "tensor")."""
    messages = []
    for layer in (T.nn.RNN(3, 4), T.nn.GRU(3, 4), T.nn.LSTM(3, 4)):
        with pytest.raises(ValueError) as caught:
            layer(T.zeros(2, 5, 2, 3))
        messages.append(str(caught.value))
    return messages
