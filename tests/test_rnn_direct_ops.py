"""The composed recurrent layers (GRU, RNN, and LSTM where it is not oneDNN's fused layer: float64,
packed input, projections) run their steps' ops in a direct form when nothing watches the ops one
by one. The direct form must build the graph the Tensor methods build: the same nodes in the same
order, with the same attributes, edges and saved tensors (the same objects, values and versions),
the same results bit for bit and the same gradients. Each scenario runs both ways on hookgrad and
compares everything; where an observer is active (a profile, saved-tensor hooks, anomaly mode) the
methods run.
"""
import numpy as np
import pytest

import hookgrad as T
from hookgrad.autograd.graph import Node, SavedTensor
from hookgrad.nn._functional import recurrent

_SKIPPED_SLOTS = {"next_functions", "_seq", "_saved", "_pre_hooks", "_post_hooks", "_tensor_pre_hooks",
                  "_retains_grad_hooks", "_has_hooks", "_metadata", "_anomaly_trace", "__weakref__", "__dict__"}


def _slots(node):
    names = []
    for cls in type(node).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if name not in _SKIPPED_SLOTS and name not in names:
                names.append(name)
    return names


class _Ids:
    """Numbers objects in the order they are first seen: two runs that share the same objects in
    the same places number them alike."""

    def __init__(self):
        self.ids = {}

    def __call__(self, obj):
        if obj is None:
            return None
        return self.ids.setdefault(id(obj), len(self.ids))


def _array(a):
    return (a.dtype.str, a.shape, tuple(s // a.itemsize for s in a.strides), a.tobytes())


def _describe(outputs, leaves):
    """Everything observable about the graph behind ``outputs`` and the tensors themselves."""
    nodes, stack = [], [t.grad_fn for t in outputs if t.grad_fn is not None]
    while stack:
        fn = stack.pop()
        if fn is None or any(fn is n for n in nodes):
            continue
        nodes.append(fn)
        stack.extend(f for f, _ in fn.next_functions)
    index = {id(n): i for i, n in enumerate(nodes)}
    order = sorted(range(len(nodes)), key=lambda i: nodes[i]._seq)
    tensors, counters, memory = _Ids(), _Ids(), {}

    def where(a):  # which buffer an array lives in, numbered in order of appearance
        base = a
        while isinstance(base.base, np.ndarray):
            base = base.base
        key = base.__array_interface__["data"][0]
        return memory.setdefault(key, len(memory)), a.__array_interface__["data"][0] - key

    def tensor(t):
        return (tensors(t), counters(t._version_counter), t._version_counter[0], _array(t._ndarray), where(t._ndarray),
                t._requires_grad, None if t._grad_fn is None else index.get(id(t._grad_fn), type(t._grad_fn).__name__),
                t._output_nr, t._base is None)

    described = []
    for i in order:
        node = nodes[i]
        edges = [(None if f is None else index.get(id(f), type(f).__name__), nr) for f, nr in node.next_functions]
        slots = []
        for name in _slots(node):
            value = getattr(node, name, "<unset>")
            slots.append((name, value if not isinstance(value, np.ndarray) else _array(value)))
        saved = []
        for s in node._saved or ():
            if s is None:
                saved.append(None)
                continue
            assert isinstance(s, SavedTensor)
            value = s.tensor
            saved.append((s.is_output, counters(s.counter), s.version,
                          _array(value) if isinstance(value, np.ndarray) else tensor(value),
                          None if s.grad_fn is None else index.get(id(s.grad_fn), "other")))
        described.append((type(node).__name__, i, edges, repr(slots), saved))
    return described, [tensor(t) for t in outputs], [tensor(t) for t in leaves]


def _run(kind, dtype, direct, packed=None, hx_grad=False, frozen=(), x_grad=True, h0=True, mode="grad",
         seq=4, batch=3, **kw):
    recurrent._USE_DIRECT_OPS[0] = direct
    try:
        T.manual_seed(0)
        rng = np.random.default_rng(0)
        m = getattr(T.nn, kind)(3, 5, **kw).to(getattr(T, dtype))
        with T.no_grad():
            for p in m.parameters():
                p.copy_(T.tensor(rng.uniform(-0.6, 0.6, tuple(p.shape))))
        for name, p in m.named_parameters():
            if any(name.startswith(f) for f in frozen):
                p.requires_grad_(False)
        dt = getattr(T, dtype)
        batch_first = kw.get("batch_first", False)
        directions = 2 if kw.get("bidirectional") else 1
        if packed:
            batch = len(packed)
        x = T.tensor(rng.normal(size=(batch, seq, 3) if batch_first else (seq, batch, 3)), dtype=dt,
                     requires_grad=x_grad)
        inp = x
        if packed:
            inp = T.nn.utils.rnn.pack_padded_sequence(x, T.tensor(packed), batch_first=batch_first,
                                                      enforce_sorted=False)
        args = [inp]
        leaves = [x] + list(m.parameters())
        if h0:
            width = kw.get("proj_size", 0) or 5
            shape = (kw.get("num_layers", 1) * directions, batch, width)
            h = T.tensor(rng.normal(size=shape), dtype=dt, requires_grad=hx_grad)
            leaves.append(h)
            if kind == "LSTM":
                c = T.tensor(rng.normal(size=shape[:-1] + (5,)), dtype=dt, requires_grad=hx_grad)
                leaves.append(c)
                args.append((h, c))
            else:
                args.append(h)
        context = {"grad": T.enable_grad, "no_grad": T.no_grad, "inference": T.inference_mode}[mode]
        with context():
            out, state = m(*args)
        out = out.data if packed else out
        outputs = [out] + list(state if isinstance(state, tuple) else (state,))
        graph = _describe(outputs, leaves)
        run_order, grads = [], None
        if outputs[0].requires_grad:
            nodes = {n for t in outputs for n in _walk(t.grad_fn)}
            for node in nodes:
                node.register_prehook(lambda g, node=node: run_order.append(node.name()))
            sum((t * t).sum() for t in outputs).backward()
            grads = [None if t.grad is None else _array(t.grad._ndarray) for t in leaves]
        return graph, run_order, grads
    finally:
        recurrent._USE_DIRECT_OPS[0] = True


def _walk(root):
    seen, stack = [], [root]
    while stack:
        fn = stack.pop()
        if fn is None or any(fn is n for n in seen):
            continue
        seen.append(fn)
        stack.extend(f for f, _ in fn.next_functions)
    return seen


CASES = [
    ("LSTM", "float32", dict(packed=[4, 2, 3])),
    ("LSTM", "float32", dict(packed=[4, 2, 3, 4, 1], hx_grad=True, bidirectional=True, num_layers=2)),
    ("LSTM", "float32", dict(packed=[2, 4, 1], batch_first=True, h0=False, x_grad=False)),
    ("LSTM", "float32", dict(packed=[4, 2, 3], frozen=("weight_hh", "bias_ih"))),
    ("LSTM", "float32", dict(packed=[4, 2, 3], frozen=("weight", "bias"), x_grad=False, hx_grad=True)),
    ("LSTM", "float32", dict(packed=[4, 2, 3], frozen=("weight", "bias"), x_grad=False)),
    ("LSTM", "float32", dict(packed=[4, 4, 4], bias=False, num_layers=2, dropout=0.4)),
    ("LSTM", "float32", dict(packed=[4, 1, 3], proj_size=2, bidirectional=True, hx_grad=True)),
    ("LSTM", "float32", dict(proj_size=2, num_layers=2, batch_first=True)),
    ("LSTM", "float64", dict()),
    ("LSTM", "float64", dict(bidirectional=True, num_layers=2, hx_grad=True, batch_first=True)),
    ("LSTM", "float64", dict(packed=[3, 4, 1], bidirectional=True, hx_grad=True)),
    ("LSTM", "float64", dict(seq=1, batch=1, bias=False)),
    ("LSTM", "float64", dict(packed=[4, 2, 3], mode="no_grad")),
    ("LSTM", "float64", dict(mode="inference", bidirectional=True)),
    ("GRU", "float32", dict()),
    ("GRU", "float32", dict(packed=[4, 2, 3], bidirectional=True, num_layers=2, hx_grad=True)),
    ("GRU", "float64", dict(bias=False, batch_first=True, frozen=("weight_ih",))),
    ("GRU", "float64", dict(packed=[1, 4, 2], h0=False, x_grad=False)),
    ("GRU", "float64", dict(mode="no_grad", num_layers=2)),
    ("RNN", "float32", dict(packed=[4, 2, 3], hx_grad=True)),
    ("RNN", "float64", dict(nonlinearity="relu", num_layers=2, bidirectional=True)),
    ("RNN", "float64", dict(nonlinearity="relu", bias=False, frozen=("weight",), hx_grad=True)),
    ("RNN", "float64", dict(mode="inference")),
]


@pytest.mark.filterwarnings("ignore:LSTM with projections")
@pytest.mark.parametrize("kind,dtype,config", CASES,
                         ids=[f"{k}-{d}-{'-'.join(f'{a}={b}' for a, b in c.items())}" for k, d, c in CASES])
def test_direct_ops_build_the_methods_graph(kind, dtype, config):
    direct = _run(kind, dtype, True, **config)
    methods = _run(kind, dtype, False, **config)
    assert direct[0][0] == methods[0][0]  # the nodes: names, order, edges, attributes, saved tensors
    assert direct[0][1:] == methods[0][1:]  # the results and the leaves
    assert direct[1:] == methods[1:]  # the order the backward runs the nodes in, the gradients


def _profiled_ops(direct):
    recurrent._USE_DIRECT_OPS[0] = direct
    try:
        m = T.nn.GRU(3, 4).double()
        x = T.randn(2, 1, 3, dtype=T.float64)
        with T.autograd.profiler.profile() as prof:
            m(x)
        return sorted({e.name for e in prof.function_events})
    finally:
        recurrent._USE_DIRECT_OPS[0] = True


def test_a_profile_sees_the_steps_ops():
    """A profile records the ops of each step, as torch's does (the methods run while it records)."""
    names = _profiled_ops(True)
    assert names == _profiled_ops(False)
    assert {"aten::add_", "aten::sigmoid_", "aten::tanh_", "aten::mul_"} <= set(names)


def test_observers_take_the_methods():
    """What makes the layers take the methods: a profile, saved-tensor hooks, anomaly mode, forward
    AD tangents, mixed dtypes; float32/64 tensors alone take the direct ops."""
    x64, x32 = T.zeros(2, dtype=T.float64), T.zeros(2)
    assert recurrent._step_ops([x64, x64]) is recurrent._DirectOps
    assert recurrent._step_ops([x32, None, x32]) is recurrent._DirectOps
    assert recurrent._step_ops([x64, x32]) is recurrent._MethodOps
    assert recurrent._step_ops([x64.half()]) is recurrent._MethodOps
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        assert recurrent._step_ops([x64]) is recurrent._MethodOps
    with T.autograd.detect_anomaly(check_nan=False):
        assert recurrent._step_ops([x64]) is recurrent._MethodOps
    with T.autograd.profiler.profile():
        assert recurrent._step_ops([x64]) is recurrent._MethodOps
    import hookgrad.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        dual = fwAD.make_dual(x64, T.ones_like(x64))
        assert recurrent._step_ops([dual]) is recurrent._MethodOps
    assert recurrent._step_ops([x64]) is recurrent._DirectOps


def test_bad_hidden_state_raises_as_with_the_methods():
    """A state of the wrong batch reaches the in-place add with a shape it cannot take: the direct
    form hands it to the method, whose error is torch's."""
    errors = []
    for direct in (True, False):
        recurrent._USE_DIRECT_OPS[0] = direct
        try:
            params = [T.randn(8, 3, dtype=T.float64), T.randn(8, 2, dtype=T.float64), T.randn(8, dtype=T.float64),
                      T.randn(8, dtype=T.float64)]
            with pytest.raises(RuntimeError) as info:
                T.lstm(T.randn(2, 3, 3, dtype=T.float64), (T.zeros(1, 2, 2, dtype=T.float64),
                                                            T.zeros(1, 2, 2, dtype=T.float64)),
                       params, True, 1, 0.0, True, False, False)
            errors.append(str(info.value))
        finally:
            recurrent._USE_DIRECT_OPS[0] = True
    assert errors[0] == errors[1]


def _run_cell(kind, dtype, direct, batched=True, h0=True, bias=True, frozen=(), x_grad=True, h_grad=False,
              nonlinearity="tanh"):
    recurrent._USE_DIRECT_OPS[0] = direct
    try:
        rng = np.random.default_rng(1)
        kw = dict(bias=bias, nonlinearity=nonlinearity) if kind == "RNNCell" else dict(bias=bias)
        m = getattr(T.nn, kind)(3, 4, **kw).to(getattr(T, dtype))
        with T.no_grad():
            for p in m.parameters():
                p.copy_(T.tensor(rng.uniform(-0.6, 0.6, tuple(p.shape))))
        for name, p in m.named_parameters():
            if any(name.startswith(f) for f in frozen):
                p.requires_grad_(False)
        dt = getattr(T, dtype)
        x = T.tensor(rng.normal(size=(2, 3) if batched else (3,)), dtype=dt, requires_grad=x_grad)
        args, leaves = [x], [x] + list(m.parameters())
        if h0:
            shape = (2, 4) if batched else (4,)
            h = T.tensor(rng.normal(size=shape), dtype=dt, requires_grad=h_grad)
            leaves.append(h)
            if kind == "LSTMCell":
                c = T.tensor(rng.normal(size=shape), dtype=dt, requires_grad=h_grad)
                leaves.append(c)
                args.append((h, c))
            else:
                args.append(h)
        out = m(*args)
        outputs = list(out) if isinstance(out, tuple) else [out]
        graph = _describe(outputs, leaves)
        grads = None
        if outputs[0].requires_grad:
            sum((t * t).sum() for t in outputs).backward()
            grads = [None if t.grad is None else _array(t.grad._ndarray) for t in leaves]
        return graph, grads
    finally:
        recurrent._USE_DIRECT_OPS[0] = True


CELL_CASES = [
    ("LSTMCell", "float32", dict()), ("LSTMCell", "float64", dict(h_grad=True, bias=False)),
    ("LSTMCell", "float32", dict(batched=False, h0=False)), ("LSTMCell", "float64", dict(frozen=("weight",))),
    ("GRUCell", "float32", dict(h_grad=True)), ("GRUCell", "float64", dict(batched=False, bias=False)),
    ("GRUCell", "float64", dict(x_grad=False, frozen=("weight", "bias"))),
    ("RNNCell", "float32", dict(nonlinearity="relu", h_grad=True)), ("RNNCell", "float64", dict(h0=False)),
]


@pytest.mark.parametrize("kind,dtype,config", CELL_CASES,
                         ids=[f"{k}-{d}-{'-'.join(f'{a}={b}' for a, b in c.items())}" for k, d, c in CELL_CASES])
def test_direct_ops_in_the_cells(kind, dtype, config):
    """The single-step cells (torch.lstm_cell ...) take the same direct ops."""
    assert _run_cell(kind, dtype, True, **config) == _run_cell(kind, dtype, False, **config)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("needs", [(True, True, True), (False, True, False), (True, False, False),
                                   (False, False, True), (False, False, False)])
@pytest.mark.parametrize("direct", [True, False])
def test_state_product_records_what_addmm_records(dtype, needs, direct):
    """A layer's steps multiply the state by a row-major copy of ``w_hh.t()``: the node, its edges and
    saved operands are what ``addmm(b_hh, hx, w_hh.t())`` records, the values equal to rounding."""
    from hookgrad._ops.linalg import addmm
    rng = np.random.default_rng(3)
    dt = getattr(T, dtype)
    values = [rng.normal(size=shape) for shape in ((12, 4), (12,), (5, 4))]
    results = []
    for cached in (True, False):
        w, b, h = (T.tensor(v, dtype=dt, requires_grad=n) for v, n in zip(values, needs))
        p = recurrent._CellParams(None, w, None, b)
        ops = recurrent._DirectOps if direct else recurrent._MethodOps
        if cached:
            p.keep_transpose()
            out = recurrent._state_linear(h, p, ops)
        else:
            out = addmm(b, h, w.t())
        graph, outputs, leaves = _describe([out], [w, b, h])
        array = outputs[0][3]
        results.append((graph, [o[:3] + o[4:] for o in outputs], leaves,
                        np.frombuffer(array[3], dtype=array[0]).copy()))
    assert results[0][:3] == results[1][:3]
    np.testing.assert_allclose(results[0][3], results[1][3], rtol=1e-5)
