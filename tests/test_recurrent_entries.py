"""torch.lstm / gru / rnn_tanh / rnn_relu (padded and packed forms), torch.embedding_bag and
torch.batch_norm_update_stats, against torch: values, gradients, grad_fn names, bad input."""
import numpy as np
import pytest

from difftest import catch, differential

GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _params(T, name, input_size, hidden, layers, bidirectional, bias, proj, rng):
    params = []
    for layer in range(layers):
        for _direction in range(2 if bidirectional else 1):
            width = input_size if layer == 0 else (proj or hidden) * (2 if bidirectional else 1)
            shapes = [(GATES[name] * hidden, width), (GATES[name] * hidden, proj or hidden)]
            if bias:
                shapes += [(GATES[name] * hidden,), (GATES[name] * hidden,)]
            if proj:
                shapes.append((proj, hidden))
            params += [T.tensor(rng.uniform(-0.5, 0.5, s), requires_grad=True) for s in shapes]
    return params


CONFIGS = [  # name, layers, bidirectional, bias, batch_first, proj
    ("lstm", 1, False, True, False, 0), ("lstm", 2, True, True, True, 0), ("lstm", 2, False, False, False, 0),
    ("lstm", 2, True, True, False, 2), ("gru", 2, True, True, False, 0), ("gru", 1, False, False, True, 0),
    ("rnn_tanh", 2, False, True, False, 0), ("rnn_relu", 1, True, True, True, 0)]


@pytest.mark.parametrize("name,layers,bidirectional,bias,batch_first,proj", CONFIGS)
@differential(rtol=1e-6, atol=1e-8)
def test_functional_recurrent_entry_padded(T, name, layers, bidirectional, bias, batch_first, proj):
    rng = np.random.default_rng(3)
    steps, batch, features, hidden = 4, 3, 5, 3
    x = T.tensor(rng.normal(size=(batch, steps, features) if batch_first else (steps, batch, features)),
                 requires_grad=True)
    dirs = 2 if bidirectional else 1
    h0 = T.tensor(rng.normal(size=(layers * dirs, batch, proj or hidden)), requires_grad=True)
    params = _params(T, name, features, hidden, layers, bidirectional, bias, proj, rng)
    if name == "lstm":
        c0 = T.tensor(rng.normal(size=(layers * dirs, batch, hidden)), requires_grad=True)
        outs = T.lstm(x, (h0, c0), params, bias, layers, 0.0, False, bidirectional, batch_first)
        leaves = [x, h0, c0] + params
    else:
        outs = getattr(T, name)(x, h0, params, bias, layers, 0.0, True, bidirectional, batch_first)
        leaves = [x, h0] + params
    loss = sum((o * (1 + T.arange(o.numel(), dtype=o.dtype).reshape(o.shape) / 10)).sum() for o in outs)
    grads = T.autograd.grad(loss, leaves)
    return [o.detach() for o in outs], list(grads), len(outs)


@pytest.mark.parametrize("name", ["lstm", "gru", "rnn_tanh"])
@differential(rtol=1e-6, atol=1e-8)
def test_functional_recurrent_entry_packed(T, name):
    rng = np.random.default_rng(5)
    features, hidden, layers = 3, 2, 2
    batch_sizes = T.tensor([3, 3, 2, 1], dtype=T.int64)
    data = T.tensor(rng.normal(size=(9, features)), requires_grad=True)
    h0 = T.tensor(rng.normal(size=(layers * 2, 3, hidden)), requires_grad=True)
    params = _params(T, name, features, hidden, layers, True, True, 0, rng)
    if name == "lstm":
        c0 = T.tensor(rng.normal(size=(layers * 2, 3, hidden)), requires_grad=True)
        outs = T.lstm(data, batch_sizes, (h0, c0), params, True, layers, 0.0, False, True)
        leaves = [data, h0, c0] + params
    else:
        outs = getattr(T, name)(data, batch_sizes, h0, params, True, layers, 0.0, False, True)
        leaves = [data, h0] + params
    loss = sum((o * (1 + T.arange(o.numel(), dtype=o.dtype).reshape(o.shape) / 10)).sum() for o in outs)
    return [o.detach() for o in outs], list(T.autograd.grad(loss, leaves))


@differential
def test_functional_lstm_matches_the_module(T):
    T.manual_seed(0)
    module = T.nn.LSTM(4, 3, num_layers=2, bidirectional=True).double()
    x = T.tensor(np.random.default_rng(1).normal(size=(5, 2, 4)))
    h0 = T.zeros(4, 2, 3, dtype=T.float64)
    out_module, (h_module, c_module) = module(x, (h0, h0))
    out, h, c = T.lstm(x, (h0, h0), module._flat_weights, True, 2, 0.0, False, True, False)
    return [(out - out_module).abs().max() < 1e-12, (h - h_module).abs().max() < 1e-12,
            (c - c_module).abs().max() < 1e-12]


@differential
def test_functional_recurrent_entry_bad_hidden(T):
    x = T.zeros(4, 3, 5)
    params = [T.zeros(8, 5), T.zeros(8, 2), T.zeros(8), T.zeros(8)]
    hx = (T.zeros(1, 3, 2), T.zeros(1, 3, 2))
    return [catch(T.lstm, x, hx, params[:3], True, 1, 0.0, False, False, False),
            catch(T.lstm, x, hx, params, True, 2, 0.0, False, False, False),
            catch(T.gru, x, T.zeros(1, 3, 2), params[:1], True, 1, 0.0, False, False, False)]


EMBEDDING_BAG_CASES = [  # mode, padding_idx, include_last_offset, per_sample_weights, offsets
    (0, None, False, False, [0, 4, 4]), (0, 4, False, False, [0, 4, 4]), (1, None, False, False, [0, 4, 4]),
    (1, 4, False, False, [0, 3, 6]), (2, None, False, False, [0, 4, 4]), (2, 4, False, False, [0, 2, 7]),
    (0, None, True, False, [0, 4, 8]), (1, None, True, False, [0, 5, 8]), (0, None, False, True, [0, 3, 3]),
    (0, 2, False, True, [0, 3, 3])]


@pytest.mark.parametrize("mode,padding_idx,last,weighted,offsets", EMBEDDING_BAG_CASES)
@differential
def test_torch_embedding_bag(T, mode, padding_idx, last, weighted, offsets):
    rng = np.random.default_rng(2)
    weight = T.tensor(rng.normal(size=(10, 3)), requires_grad=True)
    indices = T.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    psw = T.tensor(rng.uniform(0.5, 2.0, size=8), requires_grad=True) if weighted else None
    out, offset2bag, bag_size, max_indices = T.embedding_bag(weight, indices, T.tensor(offsets), False, mode, False,
                                                             psw, last, padding_idx)
    leaves = [weight] + ([psw] if weighted else [])
    grads = T.autograd.grad((out * T.arange(1.0, out.numel() + 1, dtype=out.dtype).reshape(out.shape)).sum(),
                            leaves)
    return out.detach(), type(out.grad_fn).__name__, offset2bag, bag_size, max_indices, list(grads)


@differential
def test_torch_embedding_bag_gradcheck_and_errors(T):
    weight = T.tensor(np.random.default_rng(4).normal(size=(6, 2)), requires_grad=True)
    psw = T.tensor([0.5, 2.0, 1.5, 1.0], dtype=T.float64, requires_grad=True)
    idx, off = T.tensor([0, 5, 2, 2]), T.tensor([0, 1])
    checks = [T.autograd.gradcheck(lambda w, p: T.embedding_bag(w, idx, off, False, 0, False, p)[0], (weight, psw)),
              T.autograd.gradcheck(lambda w: T.embedding_bag(w, idx, off, False, 1)[0], (weight,))]
    errors = [catch(T.embedding_bag, weight, idx, T.tensor([1, 2])),
              catch(T.embedding_bag, weight, idx, off, False, 1, False, psw),
              catch(T.embedding_bag, weight, T.tensor([0, 9]), off)]
    return checks, errors


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@differential
def test_nn_embedding_bag_runs_on_the_kernel(T, mode):
    T.manual_seed(0)
    bag = T.nn.EmbeddingBag(7, 3, mode=mode, padding_idx=1).double()
    out = bag(T.tensor([[0, 1, 2], [3, 1, 1]]))
    out.sum().backward()
    return type(out.grad_fn).__name__, out.shape, bag.weight.grad.shape


@differential
def test_batch_norm_update_stats(T):
    x = T.tensor(np.random.default_rng(0).normal(size=(4, 3, 5)))
    running_mean, running_var = T.full((3,), 2.0, dtype=T.float64), T.full((3,), 3.0, dtype=T.float64)
    first = T.batch_norm_update_stats(x, running_mean, running_var, 0.1)
    return first, running_mean, running_var, T.batch_norm_update_stats(x, None, None, 0.3)
