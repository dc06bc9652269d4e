"""RNN, LSTM and GRU build torch's autograd graph, against torch: the nodes (names and order of
execution), what pack/unpack hooks see, the order of parameter hooks, ``_saved_*`` attributes,
values and gradients; float32 (an LSTM is oneDNN's fused ``MkldnnRnnLayerBackward0`` per layer and
direction) and float64 (ATen's composition), padded and packed input."""
import numpy as np
import pytest

from difftest import catch, differential, warns


def _nodes(roots):
    seen, stack = [], [r for r in roots if r is not None]
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.append(fn)
        stack.extend(f for f, _ in fn.next_functions)
    return seen


def _layer(T, kind, dtype, kw, rng):
    m = getattr(T.nn, kind)(3, 4, **kw).to(getattr(T, dtype))
    with T.no_grad():
        for p in m.parameters():
            p.copy_(T.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape)), dtype=p.dtype))
    return m


def _scenario(T, kind, dtype, packed=None, unbatched=False, hx_grad=False, h0=True, train=True, seq=3, batch=2,
              **kw):
    """Forward under pack/unpack hooks, backward with a pre-hook on every node and a hook on every
    parameter: returns the event log, the nodes' names, values and gradients."""
    T.manual_seed(0)
    rng = np.random.default_rng(0)
    m = _layer(T, kind, dtype, kw, rng)
    m.train(train)
    dt = getattr(T, dtype)
    batch_first, directions = kw.get("batch_first", False), 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1)
    if packed:
        batch = len(packed)
    x = T.tensor(rng.normal(size=(batch, seq, 3) if batch_first else (seq, batch, 3)), dtype=dt, requires_grad=True)
    inp = x
    if unbatched:
        inp = x[0] if batch_first else x[:, 0].contiguous()
    if packed:
        inp = T.nn.utils.rnn.pack_padded_sequence(x, T.tensor(packed), batch_first=batch_first, enforce_sorted=False)
    args = [inp]
    if h0:
        width = kw.get("proj_size", 0) or 4
        shape = (layers * directions, width) if unbatched else (layers * directions, batch, width)
        h = T.tensor(rng.normal(size=shape), dtype=dt, requires_grad=hx_grad)
        if kind == "LSTM":
            args.append((h, T.tensor(rng.normal(size=shape[:-1] + (4,)), dtype=dt, requires_grad=hx_grad)))
        else:
            args.append(h)
    log = []
    for name, p in m.named_parameters():
        p.register_hook(lambda g, name=name: log.append(("hook", name)))
    with T.autograd.graph.saved_tensors_hooks(lambda t: log.append(("pack", tuple(t.shape), t.dtype)) or t,
                                              lambda t: log.append(("unpack", tuple(t.shape))) or t):
        out, state = m(*args)
    if packed:
        out = T.nn.utils.rnn.pad_packed_sequence(out, batch_first=batch_first)[0]
    states = state if isinstance(state, tuple) else (state,)
    nodes = _nodes([out.grad_fn] + [s.grad_fn for s in states])
    for node in nodes:
        node.register_prehook(lambda g, node=node: log.append(
            ("run", node.name(), tuple(None if t is None else tuple(t.shape) for t in g))))
    ((out * out).sum() + sum((s * s).sum() for s in states)).backward()
    return log, sorted(n.name() for n in nodes), out.detach(), [s.detach() for s in states], x.grad, \
        [p.grad for p in m.parameters()]


CONFIGS = [dict(), dict(batch_first=True), dict(num_layers=2, hx_grad=True), dict(bidirectional=True, hx_grad=True),
           dict(bias=False), dict(h0=False), dict(train=False, num_layers=2, dropout=0.5),
           dict(num_layers=2, dropout=0.3, bidirectional=True, batch_first=True),
           dict(unbatched=True, batch_first=True, hx_grad=True), dict(seq=1, batch=1),
           dict(packed=[3, 1, 2]), dict(packed=[3, 1, 2], hx_grad=True, bidirectional=True, num_layers=2),
           dict(packed=[2, 3, 3, 1], batch_first=True, h0=False)]
LSTM_ONLY = [dict(proj_size=2), dict(proj_size=2, bidirectional=True, num_layers=2, hx_grad=True, batch_first=True),
             dict(proj_size=2, packed=[3, 1, 2])]
CASES = [(kind, cfg) for kind in ("LSTM", "GRU", "RNN") for cfg in CONFIGS] + [("LSTM", cfg) for cfg in LSTM_ONLY] + \
    [("RNN", dict(nonlinearity="relu", num_layers=2, hx_grad=True))]


@pytest.mark.filterwarnings("ignore:LSTM with projections")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind,config", CASES, ids=[f"{k}-{'-'.join(f'{a}={b}' for a, b in c.items())}"
                                                    for k, c in CASES])
@differential(rtol=1e-4, atol=1e-5)
def test_graph_hooks_and_gradients(T, kind, config, dtype):
    return _scenario(T, kind, dtype, **config)


@differential
def test_fused_lstm_saved_attributes(T):
    rng = np.random.default_rng(1)
    results = []
    for kw in (dict(), dict(bias=False, batch_first=True, num_layers=2, bidirectional=True)):
        m = _layer(T, "LSTM", "float32", kw, rng)
        x = T.tensor(rng.normal(size=(5, 2, 3)), dtype=T.float32, requires_grad=True)
        out, _ = m(x)
        node = out.grad_fn if not kw else out.grad_fn.next_functions[0][0].next_functions[0][0]
        names = sorted(a for a in dir(node) if a.startswith("_saved_"))
        values = [getattr(node, a) for a in names]
        results.append((node.name(), names, [v if not isinstance(v, T.Tensor) else (tuple(v.shape), v.dtype)
                                             for v in values], len(node.next_functions)))
    return results


WORKSPACE_SHAPES = [(1, 1, 1, 1), (3, 2, 3, 4), (8, 1, 3, 3), (1, 5, 20, 64), (10, 16, 32, 32), (2, 32, 48, 16),
                    (32, 32, 64, 128), (5, 3, 16, 80)]


@pytest.mark.parametrize("steps,batch,features,hidden", WORKSPACE_SHAPES)
@differential
def test_fused_lstm_workspace_size(T, steps, batch, features, hidden):
    """The uint8 workspace torch's fused node keeps: its size (oneDNN's layout), not its bytes."""
    m = T.nn.LSTM(features, hidden)
    x = T.zeros(steps, batch, features, requires_grad=True)
    sizes = []
    with T.autograd.graph.saved_tensors_hooks(lambda t: sizes.append((tuple(t.shape), t.dtype)) or t, lambda t: t):
        m(x)
    return sizes[-1]


@differential
def test_fused_lstm_scaled_pack_hook_breaks_its_workspace(T):
    """A pack hook that scales every saved tensor turns the uint8 workspace into floats: torch's
    backward refuses it."""
    m = T.nn.LSTM(3, 4)
    x = T.ones(2, 1, 3, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t * 2.0, lambda t: t / 2.0):
        out, _ = m(x)
    return catch(out.sum().backward), x.grad


@pytest.mark.parametrize("kind,dtype", [("LSTM", "float32"), ("LSTM", "float64"), ("GRU", "float32")])
@differential
def test_second_backward_through_freed_graph(T, kind, dtype):
    rng = np.random.default_rng(2)
    m = _layer(T, kind, dtype, dict(num_layers=2), rng)
    x = T.tensor(rng.normal(size=(3, 2, 3)), dtype=getattr(T, dtype), requires_grad=True)
    out, _ = m(x)
    loss = out.sum()
    loss.backward()
    return catch(loss.backward), x.grad


@pytest.mark.parametrize("kind,dtype", [("LSTM", "float32"), ("LSTM", "float64"), ("GRU", "float64"),
                                        ("RNN", "float64")])
@differential(rtol=2e-4, atol=2e-5)
def test_double_backward(T, kind, dtype):
    rng = np.random.default_rng(3)
    m = _layer(T, kind, dtype, dict(bidirectional=True, batch_first=True), rng)
    x = T.tensor(rng.normal(size=(2, 3, 3)), dtype=getattr(T, dtype), requires_grad=True)
    h0 = T.tensor(rng.normal(size=(2, 2, 4)), dtype=getattr(T, dtype), requires_grad=True)
    out, _ = m(x, (h0, h0 * 0.5) if kind == "LSTM" else h0)
    gx, gh = T.autograd.grad((out * out).sum(), [x, h0], create_graph=True)
    ((gx * gx).sum() + (gh * gh).sum()).backward()
    return gx, gh, x.grad, h0.grad, [p.grad for p in m.parameters()]


def test_gradcheck_float64():
    """Gradients and second derivatives of every layer kind against finite differences."""
    import hookgrad as T
    rng = np.random.default_rng(4)
    for kind in ("LSTM", "GRU", "RNN"):
        m = _layer(T, kind, "float64", dict(num_layers=2, bidirectional=True), rng)
        x = T.tensor(rng.normal(size=(3, 2, 3)), dtype=T.float64, requires_grad=True)
        assert T.autograd.gradcheck(lambda x: m(x)[0], (x,))
        assert T.autograd.gradgradcheck(lambda x: m(x)[0], (x,))
    # the fused float32 layer's backward and its differentiable form, against float64 arithmetic
    m = _layer(T, "LSTM", "float32", dict(), rng)
    x = T.tensor(rng.normal(size=(4, 2, 3)), dtype=T.float32, requires_grad=True)
    (g,) = T.autograd.grad(m(x)[0].pow(2).sum(), x, create_graph=True)
    (gg,) = T.autograd.grad(g.pow(2).sum(), x)
    m64 = _layer(T, "LSTM", "float64", dict(), np.random.default_rng(0))
    m64.load_state_dict({k: v.double() for k, v in m.state_dict().items()})
    x64 = x.detach().double().requires_grad_()
    (g64,) = T.autograd.grad(m64(x64)[0].pow(2).sum(), x64, create_graph=True)
    (gg64,) = T.autograd.grad(g64.pow(2).sum(), x64)
    np.testing.assert_allclose(g.detach().numpy(), g64.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gg.numpy(), gg64.numpy(), rtol=1e-3, atol=1e-4)


@differential(rtol=1e-5, atol=1e-6)
def test_onednn_switched_off_composes_the_lstm(T):
    rng = np.random.default_rng(5)
    m = _layer(T, "LSTM", "float32", dict(), rng)
    x = T.tensor(rng.normal(size=(2, 2, 3)), dtype=T.float32, requires_grad=True)
    with T.backends.mkldnn.flags(enabled=False):
        out, _ = m(x)
    return sorted(n.name() for n in _nodes([out.grad_fn])), out


@differential
def test_projection_warning(T):
    m = T.nn.LSTM(3, 4, proj_size=2)
    x = T.zeros(2, 1, 3)
    return warns(lambda: m(x)[0].shape)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
@differential
def test_pack_and_pad_graph(T, batch_first, enforce_sorted):
    rng = np.random.default_rng(6)
    x = T.tensor(rng.normal(size=(3, 4, 2) if batch_first else (4, 3, 2)), requires_grad=True)
    lengths = [4, 2, 1] if enforce_sorted else [2, 4, 1]
    log = []
    with T.autograd.graph.saved_tensors_hooks(lambda t: log.append(("pack", tuple(t.shape))) or t, lambda t: t):
        packed = T.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=batch_first,
                                                     enforce_sorted=enforce_sorted)
        padded, out_lengths = T.nn.utils.rnn.pad_packed_sequence(packed, batch_first=batch_first, total_length=5)
    nodes = _nodes([padded.grad_fn])
    for node in nodes:
        node.register_prehook(lambda g, node=node: log.append(("run", node.name())))
    (padded * T.arange(padded.numel(), dtype=padded.dtype).reshape(padded.shape)).sum().backward()
    return log, packed.data, packed.batch_sizes, padded, out_lengths, x.grad, \
        [getattr(packed.data.grad_fn, a) for a in ("_saved_batch_first", "_saved_input_sym_sizes")]


CELL_CASES = [(kind, batched, h0, bias, nonlinearity) for kind in ("LSTMCell", "GRUCell", "RNNCell")
              for batched in (True, False) for h0 in (True, False) for bias in (True, False)
              for nonlinearity in (("tanh", "relu") if kind == "RNNCell" else ("tanh",))]


@pytest.mark.parametrize("kind,batched,h0,bias,nonlinearity", CELL_CASES)
@differential(rtol=1e-6, atol=1e-8)
def test_cells_graph(T, kind, batched, h0, bias, nonlinearity):
    """The single-step cells: ATen's cell step (torch.lstm_cell ...), node by node."""
    rng = np.random.default_rng(7)
    kw = dict(bias=bias, nonlinearity=nonlinearity) if kind == "RNNCell" else dict(bias=bias)
    m = getattr(T.nn, kind)(3, 4, **kw).double()
    with T.no_grad():
        for p in m.parameters():
            p.copy_(T.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape))))
    x = T.tensor(rng.normal(size=(2, 3) if batched else (3,)), requires_grad=True)
    args = [x]
    if h0:
        shape = (2, 4) if batched else (4,)
        h = T.tensor(rng.normal(size=shape), requires_grad=True)
        args.append((h, T.tensor(rng.normal(size=shape), requires_grad=True)) if kind == "LSTMCell" else h)
    log = []
    with T.autograd.graph.saved_tensors_hooks(lambda t: log.append(("pack", tuple(t.shape))) or t,
                                              lambda t: log.append(("unpack", tuple(t.shape))) or t):
        out = m(*args)
    outs = out if isinstance(out, tuple) else (out,)
    for node in _nodes([o.grad_fn for o in outs]):
        node.register_prehook(lambda g, node=node: log.append(("run", node.name())))
    sum((o * o).sum() for o in outs).backward()
    return log, [o.detach() for o in outs], x.grad, [p.grad for p in m.parameters()]


@pytest.mark.parametrize("name", ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"])
@differential(rtol=1e-6, atol=1e-8)
def test_functional_cells(T, name):
    rng = np.random.default_rng(8)
    gates = {"lstm_cell": 4, "gru_cell": 3}.get(name, 1)

    def leaf(*shape):
        return T.tensor(rng.normal(size=shape), requires_grad=True)

    x, h, c = leaf(2, 3), leaf(2, 4), leaf(2, 4)
    weights = [leaf(gates * 4, 3), leaf(gates * 4, 4), leaf(gates * 4), leaf(gates * 4)]
    out = getattr(T, name)(x, (h, c) if name == "lstm_cell" else h, *weights)
    outs = out if isinstance(out, tuple) else (out,)
    names = sorted(n.name() for n in _nodes([o.grad_fn for o in outs]))
    grads = T.autograd.grad(sum((o * o).sum() for o in outs), [x, h] + weights)
    return names, [o.detach() for o in outs], list(grads)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@differential(rtol=1e-6, atol=1e-9)
def test_pad_packed_history(T, dtype):
    """pad_packed_sequence's copies into its output: the CopySlices chain (names, edges, order of
    execution), a tensor hook and retain_grad on the result, double backward, and no history
    under no_grad or for data that needs no grad."""
    rng = np.random.default_rng(8)
    dt = getattr(T, dtype)
    x = T.tensor(rng.normal(size=(5, 4, 3)), dtype=dt, requires_grad=True)
    packed = T.nn.utils.rnn.pack_padded_sequence(x * 2, [5, 3, 3, 1])
    padded, lengths = T.nn.utils.rnn.pad_packed_sequence(packed, total_length=6)
    padded.retain_grad()
    log = []
    padded.register_hook(lambda g: log.append(("hook", g.sum().item())))
    nodes = _nodes([padded.grad_fn])
    shape = [(n.name(), [None if f is None else f.name() for f, _ in n.next_functions]) for n in nodes]
    for node in nodes:
        node.register_prehook(lambda g, node=node: log.append(("run", node.name())))
    w = T.tensor(rng.normal(size=(6, 4, 3)), dtype=dt)
    (g,) = T.autograd.grad((padded * padded * w).sum(), x, create_graph=True)
    (gg,) = T.autograd.grad((g * g * w[:5]).sum(), x)
    with T.no_grad():
        quiet, _ = T.nn.utils.rnn.pad_packed_sequence(packed)
    plain, _ = T.nn.utils.rnn.pad_packed_sequence(
        T.nn.utils.rnn.pack_padded_sequence(x.detach(), [5, 3, 3, 1]), padding_value=-1.0)
    return (shape, log, padded.detach(), lengths, g.detach(), gg, padded.grad, quiet.requires_grad,
            quiet.grad_fn is None, plain, plain.requires_grad, plain.grad_fn is None)
