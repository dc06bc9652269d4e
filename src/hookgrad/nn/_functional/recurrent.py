"""torch's functional entry points of the recurrent layers and of EmbeddingBag:

* ``torch.lstm`` / ``torch.gru`` / ``torch.rnn_tanh`` / ``torch.rnn_relu`` with ATen's two forms,
  ``(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)`` and the
  packed ``(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)``,
  on a flat parameter list in torch's order (per layer and direction: ``w_ih, w_hh``, then ``b_ih,
  b_hh`` with biases, then ``w_hr`` with a projection). ``nn.LSTM``/``GRU``/``RNN`` call them. They
  build the graph torch's CPU build builds: a float32 LSTM (padded, no projection) is oneDNN's
  fused layer, one ``MkldnnRnnLayerBackward0`` per layer and direction with a NumPy time loop and
  backward; everything else is ATen's composition of ordinary ops (``RNN.cpp``), step by step.
  ``cell_step`` is the single-step ops (``torch.lstm_cell`` ...), for the cell modules.
* ``torch.embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
  per_sample_weights, include_last_offset, padding_idx)``: one ``EmbeddingBagBackward0`` node and
  ATen's four results ``(output, offset2bag, bag_size, max_indices)``; ``F.embedding_bag`` calls it.
* ``torch.batch_norm_update_stats``: the running statistics after one batch.
"""
from __future__ import annotations

import warnings

import numpy as np

import hookgrad
from ... import _threads as _blas
from ..._ops import pointwise as _pw, views as _views
from ..._ops._base import FP_IGNORE, GRAD, NONE_EDGE, any_requires_grad, edge, fp_quiet, fp_restore, record
from ..._ops._declare import record_op
from ..._ops.views import apply_inplace
# the layers call the ops themselves, not torch's public names: as in torch (whose recurrent kernels are
# C++), code that patches torch.addmm or Tensor.matmul (FLOP counters) does not see a layer's steps
from ..._ops.linalg import AddmmBackward0, _is_transposed, addmm as _addmm, matmul as _matmul
from ..._meta import MetaArray, meta_array, meta_like
from ..._tensor import Tensor, wrap
from ...autograd import _dual, anomaly_mode as _anomaly
from ...autograd.graph import Node, SavedTensor, saved_tensor_hooks_active
from ...autograd.profiler import _active as _profiler_active

__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu", "embedding_bag", "batch_norm_update_stats"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


# ---- ATen's composed recurrent layers ----------------------------------------------------------
# GRU and RNN (any dtype), and LSTM where oneDNN does not take it (float64, packed input, proj_size),
# run as ATen's RNN.cpp runs them on the CPU: the input projection of all steps is one linear, then
# each step is a cell made of ordinary ops (several of them in place), so the graph has torch's
# nodes, in torch's order, saving torch's tensors.

class UnsafeSplitBackward0(Node):
    """``unsafe_chunk``'s node. Its outputs are slices of the input that are not views (in-place ops
    on them are allowed, as in torch); the backward concatenates their gradients, zeros for none."""

    __slots__ = ("dim", "split_size", "in_shape", "dtype", "_num_outputs")
    saved_values = {"dim": lambda n: n.dim, "self_sym_sizes": lambda n: n.in_shape,
                    "split_size": lambda n: n.split_size}

    def apply(self, grads):
        shape = list(self.in_shape)
        shape[self.dim] = self.split_size
        if GRAD.enabled:  # create_graph: differentiable again
            pieces = [g if g is not None else hookgrad.zeros(shape, dtype=hookgrad.tensor(np.zeros(0, self.dtype)).dtype)
                      for g in grads]
            return (hookgrad.cat(pieces, self.dim),)
        return (wrap(np.concatenate([g._ndarray if g is not None else np.zeros(shape, self.dtype) for g in grads],
                                    self.dim)),)


def _unsafe_chunk(x, chunks):
    """``x.unsafe_chunk(chunks, 1)`` of a 2-D ``x``: slices sharing its memory, with no view tracking."""
    data = x._ndarray
    size = data.shape[1] // chunks
    pieces = [wrap(data[:, i * size:(i + 1) * size]) for i in range(chunks)]
    if GRAD.enabled and x._requires_grad:
        node = record_op(UnsafeSplitBackward0, (x,), *pieces)
        node._num_outputs = chunks
        node.dim, node.split_size, node.in_shape, node.dtype = 1, size, tuple(data.shape), data.dtype
    return pieces


def _linear(x, weight, bias):
    """``at::linear`` as the recurrent layers call it: ``addmm`` for 2-D input and for contiguous 3-D
    input (through views), else ``matmul`` and an in-place bias add."""
    if bias is not None and x._ndarray.ndim == 2:
        return _addmm(bias, x, weight.t())
    if bias is not None and x._ndarray.ndim == 3 and x.is_contiguous():
        steps, batch, features = x.shape
        out = _addmm(bias, x.view(steps * batch, features), weight.t())
        return out.view(steps, batch, out.shape[1])
    out = _matmul(x, weight.t())
    if bias is not None:
        out.add_(bias)
    return out


# ---- the ops of a step, two ways -----------------------------------------------------------------
# A layer runs a few hundred small ops per pass. As Tensor methods each goes through the public
# op path (argument checks, an in-place op's general history rewrite on a copy of its input); the
# direct forms below build the same nodes, saving the same tensors at the same versions, from the
# ops' own functions. They assume what holds inside a layer's step: an in-place op writes into a
# fresh result of the step (no view, no leaf) with an operand of its dtype and shape (anything
# else takes the method). The methods stay for where something watches the ops one by one: a
# profile (torch's shows each ATen op of the layer), saved-tensor hooks (a pack hook sees what
# the method path saves), anomaly mode (its traces name the calling frames) and forward-mode AD.

_DIRECT_DTYPES = frozenset(map(np.dtype, (np.float32, np.float64)))


def _fresh_operands(x, other=None) -> bool:
    """Whether the direct in-place form applies: ``x`` a float32/64 tensor made by the step (not
    a view, not a leaf requiring grad, no view restriction), ``other`` None or of its dtype and shape."""
    xd = x._ndarray
    if xd.dtype not in _DIRECT_DTYPES or x._base_value is not None or x.__dict__ or (
            x._requires_grad and x._grad_fn_value is None):
        return False
    return other is None or (isinstance(other, Tensor) and other._ndarray.dtype is xd.dtype
                             and other._ndarray.shape == xd.shape)


def _direct_add_(x, other):
    """``x.add_(other)``: AddBackward0 (alpha 1) becomes ``x``'s node, as the method records it."""
    if not _fresh_operands(x, other):
        return _MethodOps.add_(x, other)
    xd = x._ndarray
    np.add(xd, other._ndarray, out=xd)
    x._version_counter[0] += 1
    if GRAD.enabled and (x._requires_grad or other._requires_grad):
        node = _pw.AddBackward0(((x._grad_fn_value, x._output_nr) if x._requires_grad else NONE_EDGE, edge(other)))
        node.alpha = 1
        node.a_shape, node.a_dtype = xd.shape, xd.dtype
        node.b_shape, node.b_dtype = other._ndarray.shape, other._ndarray.dtype
        x._after_inplace(node)
    return x


def _expit(x, out):
    """sigmoid's float32/64 values (``pointwise._sigmoid_np``: SciPy's expit) written into ``out``."""
    global _expit_ufunc
    if _expit_ufunc is None:
        from scipy.special import expit as _expit_ufunc
    return _expit_ufunc(x, out=out)


_expit_ufunc = None  # imported on first use, as pointwise does (scipy.special adds 0.4 s to the import)


def _direct_unary_(forward, node_cls, method):
    """``x.<op>_()`` for an elementwise op whose node saves its result (sigmoid, tanh): ``forward(x,
    out=x)`` computes into ``x``, whose node it becomes, saving ``x`` at its new version."""
    def run(x):
        if not _fresh_operands(x):
            return method(x)
        xd = x._ndarray
        forward(xd, out=xd)
        x._version_counter[0] += 1
        if GRAD.enabled and x._requires_grad:
            node = node_cls(((x._grad_fn_value, x._output_nr),))
            node.save(output=x)
            x._after_inplace(node)
        return x
    return run


def _direct_mul_(x, other):
    """``x.mul_(other)``: the in-place op's own history rewrite, without the method's checks."""
    if not _fresh_operands(x, other):
        return _MethodOps.mul_(x, other)
    return apply_inplace(x, _pw.mul, other)


def _direct_linear(x, weight, bias):
    """``_linear`` of one step's 2-D state; other inputs take ``_linear``."""
    if x._ndarray.ndim == 2:
        return _addmm(bias, x, _views.t(weight)) if bias is not None else _matmul(x, _views.t(weight))
    return _linear(x, weight, bias)


class _MethodOps:
    """The step's ops as Tensor methods and operators, looked up at each call (a profile patches them)."""
    linear = staticmethod(_linear)
    add_ = staticmethod(lambda x, other: x.add_(other))
    mul_ = staticmethod(lambda x, other: x.mul_(other))
    sigmoid_ = staticmethod(lambda x: x.sigmoid_())
    tanh_ = staticmethod(lambda x: x.tanh_())
    add = staticmethod(lambda a, b: a + b)
    sub = staticmethod(lambda a, b: a - b)
    mul = staticmethod(lambda a, b: a * b)
    tanh = staticmethod(lambda x: x.tanh())
    relu = staticmethod(lambda x: x.relu())
    narrow = staticmethod(lambda x, dim, start, length: x.narrow(dim, start, length))
    t = staticmethod(lambda x: x.t())


class _DirectOps:
    """The same ops from their own functions (see above)."""
    linear = staticmethod(_direct_linear)
    add_ = staticmethod(_direct_add_)
    mul_ = staticmethod(_direct_mul_)
    sigmoid_ = staticmethod(_direct_unary_(_expit, _pw.sigmoid.node_cls, _MethodOps.sigmoid_))
    tanh_ = staticmethod(_direct_unary_(_pw.tanh_values, _pw.tanh.node_cls, _MethodOps.tanh_))
    add = staticmethod(_pw.add)
    sub = staticmethod(_pw.sub)
    mul = staticmethod(_pw.mul)
    tanh = staticmethod(_pw.tanh)
    relu = staticmethod(_pw.relu)
    narrow = staticmethod(_views.narrow)
    t = staticmethod(_views.t)


# tests switch the direct forms off to compare the two
_USE_DIRECT_OPS = [True]


def _step_ops(tensors):
    """The direct ops where nothing watches the step's ops one by one and the layer's tensors are
    float32/64 of one dtype, else the methods."""
    if not _USE_DIRECT_OPS[0] or _profiler_active or saved_tensor_hooks_active() or _anomaly.is_anomaly_enabled() \
            or _dual.has_tangents():
        return _MethodOps
    dtype = None
    for t in tensors:
        if t is None:
            continue
        if not isinstance(t, Tensor):
            return _MethodOps
        if dtype is None:
            dtype = t._ndarray.dtype
        elif t._ndarray.dtype is not dtype:
            return _MethodOps
    return _DirectOps if dtype in _DIRECT_DTYPES else _MethodOps


class _CellParams:
    """One layer and direction's weights; ``w_hh_t``: a row-major copy of ``w_hh``'s transpose's
    values, kept by a layer for its steps (see ``_state_linear``)."""

    __slots__ = ("w_ih", "w_hh", "b_ih", "b_hh", "w_hr", "w_hh_t")

    def __init__(self, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None):
        self.w_ih, self.w_hh, self.b_ih, self.b_hh, self.w_hr = w_ih, w_hh, b_ih, b_hh, w_hr
        self.w_hh_t = None

    def keep_transpose(self) -> None:
        w = self.w_hh._ndarray
        if w.ndim == 2 and w.dtype in _DIRECT_DTYPES:
            self.w_hh_t = np.ascontiguousarray(w.T)


def _state_linear(hx, p, ops):
    """The state's projection of a step, ``addmm(b_hh, hx, w_hh.t())`` as ``_linear`` records it (the
    same node, edges and saved operands: ``w_hh.t()`` is still the product's second operand) with
    the product taken on the layer's row-major copy of the transpose: OpenBLAS multiplies a
    (4..14, 128) state by it 2-3x faster than by the transposed view (32 us against 12 at batch 8),
    and the steps of a packed batch are that narrow. Without a copy (single steps), a bias, or for
    operands that do not fit, ``ops.linear``."""
    w_t_values, bias = p.w_hh_t, p.b_hh
    ad = hx._ndarray
    if w_t_values is None or bias is None or ad.ndim != 2 or ad.dtype is not w_t_values.dtype \
            or bias._ndarray.dtype is not ad.dtype or ad.shape[1] != w_t_values.shape[0]:
        return ops.linear(hx, p.w_hh, bias)
    w_t = ops.t(p.w_hh)
    out = _blas.matmul(ad, w_t_values)
    out += bias._ndarray
    result = wrap(out)
    if GRAD.enabled and (bias._requires_grad or hx._requires_grad or w_t._requires_grad):
        # addmm's record, for these operands (tests compare the two)
        node = record_op(AddmmBackward0, (bias, hx, w_t), result)
        bd = w_t._ndarray
        node.bias_shape, node.beta, node.alpha = bias._ndarray.shape, 1, 1
        node.b_transposed = _is_transposed(bd)
        node.layouts = (ad.shape, ad.strides, bd.shape, bd.strides, ad.itemsize)
        edges = node.next_functions
        node.save(hx if edges[2][0] is not None else None, w_t if edges[1][0] is not None else None)
    return result


def _gather_params(params, has_biases, has_projections=False):
    per = (4 if has_biases else 2) + (1 if has_projections else 0)
    if len(params) % per:
        raise RuntimeError("got an incorrect number of RNN parameters")
    out = []
    for i in range(0, len(params), per):
        p = params[i:i + per]
        if has_biases:
            out.append(_CellParams(p[0], p[1], p[2], p[3], p[4] if has_projections else None))
        else:
            out.append(_CellParams(p[0], p[1], None, None, p[2] if has_projections else None))
    return out


# one step of each cell, on the step's input projection ``x_w`` (input biases added); the single-step
# ops (``lstm_cell`` ...) pass ``x_w=None`` and the ``input`` instead, projected where ATen does it.
# ``ops``: the step's ops, as methods or in their direct forms (see above)
def _lstm_cell(x_w, hidden, p, input=None, ops=_MethodOps):
    hx, cx = hidden
    gates = _state_linear(hx, p, ops)
    gates = ops.add_(gates, x_w if input is None else ops.linear(input, p.w_ih, p.b_ih))
    ingate, forgetgate, cellgate, outgate = _unsafe_chunk(gates, 4)
    ingate = ops.sigmoid_(ingate)
    forgetgate = ops.sigmoid_(forgetgate)
    cellgate = ops.tanh_(cellgate)
    outgate = ops.sigmoid_(outgate)
    cy = ops.add_(ops.mul(forgetgate, cx), ops.mul(ingate, cellgate))
    hy = ops.mul(outgate, ops.tanh(cy))
    if p.w_hr is not None:
        hy = _matmul(hy, p.w_hr.t())
    return hy, cy


def _gru_cell(x_w, hidden, p, input=None, ops=_MethodOps):
    igates = _unsafe_chunk(x_w if input is None else ops.linear(input, p.w_ih, p.b_ih), 3)
    hgates = _unsafe_chunk(_state_linear(hidden, p, ops), 3)
    reset_gate = ops.sigmoid_(ops.add_(hgates[0], igates[0]))
    input_gate = ops.sigmoid_(ops.add_(hgates[1], igates[1]))
    new_gate = ops.tanh_(ops.add(igates[2], ops.mul_(hgates[2], reset_gate)))
    return ops.add_(ops.mul_(ops.sub(hidden, new_gate), input_gate), new_gate)


def _tanh_cell(x_w, hidden, p, input=None, ops=_MethodOps):
    gates = _state_linear(hidden, p, ops)
    return ops.tanh(ops.add_(gates, x_w if input is None else ops.linear(input, p.w_ih, p.b_ih)))


def _relu_cell(x_w, hidden, p, input=None, ops=_MethodOps):
    gates = _state_linear(hidden, p, ops)
    return ops.relu(ops.add_(gates, x_w if input is None else ops.linear(input, p.w_ih, p.b_ih)))


def cell_step(mode, input, hidden, w_ih, w_hh, b_ih=None, b_hh=None):
    """ATen's single-step ops (``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``, ``rnn_relu_cell``):
    one step of the layers' cell on 2-D ``input`` and state."""
    state = tuple(hidden) if isinstance(hidden, (tuple, list)) else (hidden,)
    ops = _step_ops((input,) + state + (w_ih, w_hh, b_ih, b_hh))
    token = fp_quiet(FP_IGNORE)
    try:
        return _CELLS[mode](None, hidden, _CellParams(w_ih, w_hh, b_ih, b_hh), input, ops)
    finally:
        fp_restore(token)


_CELLS = {"LSTM": _lstm_cell, "GRU": _gru_cell, "RNN_TANH": _tanh_cell, "RNN_RELU": _relu_cell}


def _output_of(hidden):
    return hidden[0] if isinstance(hidden, tuple) else hidden


# For LSTM's (h, c) pairs ATen makes both halves as arguments of one call, which its compiler
# evaluates last to first: c's node is recorded before h's (and so runs after it in the backward).
def _hidden_slice(hidden, start, end, ops=_MethodOps):
    if isinstance(hidden, tuple):
        c = ops.narrow(hidden[1], 0, start, end - start)
        return ops.narrow(hidden[0], 0, start, end - start), c
    return ops.narrow(hidden, 0, start, end - start)


def _hidden_concat(hiddens):
    if isinstance(hiddens[0], tuple):
        c = hookgrad.cat([h[1] for h in hiddens], 0)
        return hookgrad.cat([h[0] for h in hiddens], 0), c
    return hookgrad.cat(hiddens, 0)


def _run_steps(cell, steps, hidden, p, ops):
    outputs = []
    for x_w in steps:
        hidden = cell(x_w, hidden, p, None, ops)
        outputs.append(_output_of(hidden))
    if not outputs:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    return outputs, hidden


def _full_layer(cell, ops):
    def layer(input, hidden, p):
        outputs, hidden = _run_steps(cell, _linear(input, p.w_ih, p.b_ih).unbind(0), hidden, p, ops)
        return hookgrad.stack(outputs, 0), hidden
    return layer


def _full_bidirectional_layer(cell, ops):
    def layer(input, hidden, params):
        forward, backward = params
        outputs, fw_hidden = _run_steps(cell, _linear(input, forward.w_ih, forward.b_ih).unbind(0), hidden[0],
                                        forward, ops)
        fw_output = hookgrad.stack(outputs, 0)
        steps = _linear(input, backward.w_ih, backward.b_ih).unbind(0)
        outputs, rev_hidden = _run_steps(cell, steps[::-1], hidden[1], backward, ops)
        rev_output = hookgrad.stack(outputs[::-1], 0)
        return hookgrad.cat([fw_output, rev_output], fw_output.dim() - 1), (fw_hidden, rev_hidden)
    return layer


def _packed_layer(cell, batch_sizes, ops):
    """Packed rows, forward in time: sequences that end leave their final state behind."""
    def layer(data, hidden, p):
        x_w = _linear(data, p.w_ih, p.b_ih)
        outputs, finished = [], []
        offset, last = 0, batch_sizes[0]
        for size in batch_sizes:
            step = ops.narrow(x_w, 0, offset, size)
            offset += size
            if last > size:
                finished.append(_hidden_slice(hidden, size, last, ops))
                hidden = _hidden_slice(hidden, 0, size, ops)
            last = size
            hidden = cell(step, hidden, p, None, ops)
            outputs.append(_output_of(hidden))
        finished.append(hidden)
        return hookgrad.cat(outputs, 0), _hidden_concat(finished[::-1])
    return layer


def _reversed_packed_layer(cell, batch_sizes, ops):
    """Packed rows, backward in time: sequences join the batch as their last step comes up."""
    def layer(data, input_hidden, p):
        x_w = _linear(data, p.w_ih, p.b_ih)
        outputs = []
        offset, last = data.shape[0], batch_sizes[-1]
        hidden = _hidden_slice(input_hidden, 0, last, ops)
        for size in reversed(batch_sizes):
            if size > last:
                hidden = _hidden_concat([hidden, _hidden_slice(input_hidden, last, size, ops)])
            step = ops.narrow(x_w, 0, offset - size, size)
            offset -= size
            last = size
            hidden = cell(step, hidden, p, None, ops)
            outputs.append(_output_of(hidden))
        return hookgrad.cat(outputs[::-1], 0), hidden
    return layer


def _packed_bidirectional_layer(cell, batch_sizes, ops):
    forward_layer = _packed_layer(cell, batch_sizes, ops)
    backward_layer = _reversed_packed_layer(cell, batch_sizes, ops)

    def layer(data, hidden, params):
        fw_output, fw_hidden = forward_layer(data, hidden[0], params[0])
        rev_output, rev_hidden = backward_layer(data, hidden[1], params[1])
        return hookgrad.cat([fw_output, rev_output], -1), (fw_hidden, rev_hidden)
    return layer


def _aten_dropout(x, p):
    """``at::dropout(x, p, train=True)`` on the CPU: ``x`` times a scaled Bernoulli mask."""
    if not 0 <= p <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or x.numel() == 0:
        return x
    if p == 1:
        return x * hookgrad.zeros((), dtype=x.dtype)
    noise = hookgrad.empty_like(x).bernoulli_(1 - p)
    noise.div_(1 - p)
    return x * noise


def _rnn_impl(mode, input, params, hiddens, num_layers, dropout, train, bidirectional, batch_sizes=None):
    """ATen's layer stack: returns (output, final hidden per layer and direction)."""
    cell = _CELLS[mode]
    for p in params:
        p.keep_transpose()
    ops = _step_ops([input] + [t for h in hiddens for t in (h if isinstance(h, tuple) else (h,))] +
                    [w for p in params for w in (p.w_ih, p.w_hh, p.b_ih, p.b_hh, p.w_hr)])
    if bidirectional:
        layer = _full_bidirectional_layer(cell, ops) if batch_sizes is None else _packed_bidirectional_layer(
            cell, batch_sizes, ops)
        hiddens = [(hiddens[i], hiddens[i + 1]) for i in range(0, len(hiddens), 2)]
        params = [(params[i], params[i + 1]) for i in range(0, len(params), 2)]
    else:
        layer = _full_layer(cell, ops) if batch_sizes is None else _packed_layer(cell, batch_sizes, ops)
    if num_layers != len(hiddens):
        raise RuntimeError("Expected more hidden states in stacked_rnn")
    if num_layers != len(params):
        raise RuntimeError("Expected more weights in stacked_rnn")
    final = []
    # the direct ops compute on arrays without the ops' own guards: no inf/nan warnings (torch has none)
    token = fp_quiet(FP_IGNORE)
    try:
        for index in range(num_layers):
            input, hidden = layer(input, hiddens[index], params[index])
            final.append(hidden)
            if dropout != 0 and train and index < num_layers - 1:
                input = _aten_dropout(input, dropout)
    finally:
        fp_restore(token)
    if bidirectional:
        final = [h for pair in final for h in pair]
    return input, final


def _check_hidden_count(hx, num_layers, bidirectional):
    directions = 2 if bidirectional else 1
    if hx.dim() < 1 or hx.shape[0] != num_layers * directions:
        raise RuntimeError("Expected more hidden states in stacked_rnn")


_warned_projections = [False]


def _uses_onednn(input):
    """torch's CPU LSTM runs oneDNN's fused layer for float32 input with elements, while enabled."""
    from ...backends import mkldnn
    return mkldnn.enabled and input.dtype == hookgrad.float32 and input.numel() != 0


def _lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    if not isinstance(hx, (tuple, list)) or len(hx) != 2:
        raise RuntimeError("lstm expects two hidden states")
    h0, c0 = hx
    has_projections = h0.shape[2] != c0.shape[2]
    if _uses_onednn(input):
        if not has_projections:
            return _onednn_lstm(input, h0, c0, list(params), has_biases, num_layers, dropout, train, bidirectional,
                                batch_first)
        if not _warned_projections[0]:
            _warned_projections[0] = True
            warnings.warn("LSTM with projections is not supported with oneDNN. Using default implementation.",
                          stacklevel=3)
    x = input.transpose(0, 1) if batch_first else input
    cells = _gather_params(list(params), has_biases, has_projections)
    hiddens = list(zip(h0.unbind(0), c0.unbind(0)))
    output, final = _rnn_impl("LSTM", x, cells, hiddens, num_layers, dropout, train, bidirectional)
    hy, cy = _stack_states(final)
    if batch_first:
        output = output.transpose(0, 1)
    return output, hy, cy


def _lstm_packed(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional):
    if not isinstance(hx, (tuple, list)) or len(hx) != 2:
        raise RuntimeError("lstm expects two hidden states")
    h0, c0 = hx
    has_projections = h0.shape[2] != c0.shape[2]
    cells = _gather_params(list(params), has_biases, has_projections)
    hiddens = list(zip(h0.unbind(0), c0.unbind(0)))
    output, final = _rnn_impl("LSTM", data, cells, hiddens, num_layers, dropout, train, bidirectional,
                              _sizes(batch_sizes))
    return (output,) + _stack_states(final)


def _stack_states(final):
    """(hy, cy) from the per-layer (h, c) pairs; cy's stack first (see ``_hidden_slice``)."""
    cy = hookgrad.stack([c for _, c in final], 0)
    return hookgrad.stack([h for h, _ in final], 0), cy


def _one_hidden(mode, input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    x = input.transpose(0, 1) if batch_first else input
    cells = _gather_params(list(params), has_biases)
    output, final = _rnn_impl(mode, x, cells, list(hx.unbind(0)), num_layers, dropout, train, bidirectional)
    hy = hookgrad.stack(final, 0)
    if batch_first:
        output.transpose_(0, 1)
    return output, hy


def _one_hidden_packed(mode, data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional):
    cells = _gather_params(list(params), has_biases)
    output, final = _rnn_impl(mode, data, cells, list(hx.unbind(0)), num_layers, dropout, train, bidirectional,
                              _sizes(batch_sizes))
    return output, hookgrad.stack(final, 0)


def _sizes(batch_sizes):
    sizes = [int(b) for b in batch_sizes.tolist()]
    if not sizes:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    if any(later > earlier for earlier, later in zip(sizes, sizes[1:])) or sizes[-1] < 1:
        raise RuntimeError("batch_sizes must be non-increasing and positive")
    return sizes


# ---- oneDNN's fused LSTM layer (float32) ---------------------------------------------------------
# torch runs a float32 LSTM layer by layer and direction through one fused op, whose node
# MkldnnRnnLayerBackward0 saves hx, cx, the input, the four weights (zeros of the weights' shapes
# for absent biases), the output, hy, cy and oneDNN's workspace. Here the time loop runs on NumPy
# arrays; the per-step gate values the backward needs stay on the node (what torch keeps in the
# workspace, whose bytes are oneDNN's own: the workspace tensor here has its size, zero-filled).

_PAGE = 4096


def _good_ld(dim):
    ld = -(-dim // 16) * 16
    return ld + 16 if ld % 256 == 0 else ld


def _workspace_bytes(steps, batch, input_size, hidden):
    """The size of oneDNN's LSTM training workspace for one layer and direction, as measured on
    torch 2.13: page-aligned regions for the gates, the hidden outputs, three state buffers of the
    widest feature size and two of the hidden size. Exact wherever input and hidden sizes are
    multiples of 16 or every region fits in a page (verified on a grid of shapes); elsewhere
    oneDNN pads some regions differently and the size is close but may differ."""
    states = _good_ld(max(input_size, hidden))
    regions = [steps * batch * _good_ld(4 * hidden) * 4, steps * batch * _good_ld(hidden) * 4]
    regions += [2 * (steps + 1) * batch * states * 4] * 3 + [2 * (steps + 1) * batch * _good_ld(hidden) * 4] * 2
    return sum(-(-r // _PAGE) for r in regions) * _PAGE


class _LstmKernel:
    """One LSTM layer and direction on NumPy arrays, forward and backpropagation through time.

    The gates are kept in the order (o, i, f, g) rather than torch's (i, f, g, o): the three
    sigmoid gates are then one block, and so are the three gates whose gradient scales with the
    cell's. The sigmoid gates' weight rows are halved, so one ``tanh`` over all four gates gives
    ``tanh(z / 2)`` for them (``sigmoid(z) = (1 + tanh(z / 2)) / 2``) and ``tanh(z)`` for g. The time
    loops run once per step, where NumPy's per-call cost dominates: they do few, wide operations
    into preallocated arrays, and what does not depend on the recursion is computed for all steps
    at once.
    """

    __slots__ = ("H", "order", "w_ih", "w_hh", "gates", "cells", "tanh_cells", "h0", "c0", "out", "reverse")

    def __init__(self, w_ih, w_hh, reverse):
        H = self.H = w_hh.shape[1]
        self.order = np.concatenate([np.arange(3 * H, 4 * H), np.arange(0, 3 * H)])
        self.w_ih, self.w_hh, self.reverse = w_ih[self.order], w_hh[self.order], reverse

    def _steps(self, count):
        return range(count - 1, -1, -1) if self.reverse else range(count)

    def forward(self, x, b_ih, b_hh, h, c):
        """x (T, B, I); returns (output (T, B, H), h_T, c_T)."""
        H = self.H
        steps, batch = x.shape[0], x.shape[1]
        half = np.ones(4 * H, dtype=x.dtype)
        half[:3 * H] = 0.5
        # the gates are kept gate-major, (T, 4, B, H): each gate of a step is one contiguous block, so
        # the per-step arithmetic runs on contiguous arrays (on the rows of a (B, 4H) matrix NumPy's
        # loops cost up to 2.5x as much here), and the products are batched per gate: (B, H) @
        # (4, H, H) takes 39 us against 54 us for (B, H) @ (H, 4H) on one core (batch 32, H 128)
        w_ih = (self.w_ih * half[:, None]).reshape(4, H, x.shape[2]).transpose(0, 2, 1)  # (4, I, H)
        gates = _blas.matmul(x[:, None], w_ih[None])                                     # (T, 4, B, H)
        if b_ih is not None:
            gates += ((b_ih + b_hh)[self.order] * half).reshape(4, 1, H)
        w_hh = np.ascontiguousarray((self.w_hh * half[:, None]).reshape(4, H, H).transpose(0, 2, 1))
        _blas.use_threads_for(batch * 4 * H * H)
        cells = np.empty((steps, batch, H), dtype=x.dtype)
        tanh_cells = np.empty_like(cells)
        out = np.empty_like(cells)
        self.h0, self.c0 = h, c
        scratch = np.empty((4, batch, H), dtype=x.dtype)
        product = np.empty((batch, H), dtype=x.dtype)
        for t in self._steps(steps):
            g_t = gates[t]
            np.matmul(h, w_hh, out=scratch)
            g_t += scratch
            np.tanh(g_t, out=g_t)
            sig = g_t[:3]
            sig *= 0.5
            sig += 0.5
            c_t = cells[t]
            np.multiply(g_t[2], c, out=c_t)
            np.multiply(g_t[1], g_t[3], out=product)
            c_t += product
            np.tanh(c_t, out=tanh_cells[t])
            np.multiply(g_t[0], tanh_cells[t], out=out[t])
            h, c = out[t], c_t
        self.gates, self.cells, self.tanh_cells, self.out = gates, cells, tanh_cells, out
        return out, h, c

    def _previous(self, states, first):
        """Each step's incoming state: ``first`` for the first step processed, else the state the
        step before it (in processing order) produced."""
        prev = np.empty_like(states)
        if self.reverse:
            prev[-1] = first
            prev[:-1] = states[1:]
        else:
            prev[0] = first
            prev[1:] = states[:-1]
        return prev

    def backward(self, x, d_out, dh, dc, need):
        """Gradients (dx, dw_ih, dw_hh, db, dh0, dc0) in torch's gate order; ``need`` says which of
        x, w_ih and the biases are wanted."""
        H = self.H
        gates, tanh_cells = self.gates, self.tanh_cells
        o, i, f, g = gates[:, 0], gates[:, 1], gates[:, 2], gates[:, 3]  # each (T, B, H)
        c_prev = self._previous(self.cells, self.c0)
        # per-step factors that do not depend on the recursion, for all steps at once
        to_cell = o * (1 - tanh_cells * tanh_cells)                       # dc += dh * to_cell
        to_o = tanh_cells * o * (1 - o)                                   # d_o = dh * to_o
        to_ifg = np.stack([g * i * (1 - i), c_prev * f * (1 - f), i * (1 - g * g)], 2)  # (T, B, 3, H)
        steps, batch = gates.shape[0], gates.shape[2]
        d_gates = np.empty((steps, batch, 4 * H), dtype=gates.dtype)
        dh, dc = dh.copy(), dc.copy()
        product = np.empty_like(dh)
        # the step's dh as four per-gate products (B, H) @ (H, H) summed (42 us against 50 us for
        # one (B, 4H) @ (4H, H) product on one core at batch 32, H 128)
        w_hh = self.w_hh.reshape(4, H, H)
        d_gates_by_gate = d_gates.reshape(steps, batch, 4, H).transpose(0, 2, 1, 3)
        per_gate = np.empty((4, batch, H), dtype=gates.dtype)
        _blas.use_threads_for(batch * 4 * H * H)  # the per-step products are small: no spinning threads
        for t in (range(steps) if self.reverse else range(steps - 1, -1, -1)):
            if d_out is not None:
                dh += d_out[t]
            np.multiply(dh, to_cell[t], out=product)
            dc += product
            dg = d_gates[t]
            np.multiply(dh, to_o[t], out=dg[:, :H])
            np.multiply(dc[:, None, :], to_ifg[t], out=dg[:, H:].reshape(batch, 3, H))
            np.matmul(d_gates_by_gate[t], w_hh, out=per_gate)
            np.add.reduce(per_gate, axis=0, out=dh)  # dh's last reader this step was above
            dc *= f[t]
        flat = d_gates.reshape(-1, 4 * H)
        undo = np.argsort(self.order)                                     # back to torch's gate order
        h_prev = self._previous(self.out, self.h0).reshape(-1, H)
        dw_hh = _blas.matmul(flat.T, h_prev)[undo]
        dx = _blas.matmul(flat, self.w_ih).reshape(x.shape) if need[0] else None
        dw_ih = _blas.matmul(flat.T, x.reshape(-1, x.shape[-1]))[undo] if need[1] else None
        db = flat.sum(0)[undo] if need[2] else None
        return dx, dw_ih, dw_hh, db, dh, dc


def _lstm_backward_tensor(x, w_ih, w_hh, b_ih, b_hh, hx, cx, reverse, d_out, d_hy, d_cy):
    """The layer's gradients written with Tensor ops (the forward recomputed from the saved tensors,
    then backpropagation through time), so that they are differentiable again."""
    H = w_hh.shape[1]
    steps = x.shape[0]
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    xp = _matmul(x, w_ih.t()) + (b_ih + b_hh)
    cache = [None] * steps
    h, c = hx, cx
    for t in order:
        gates = xp[t] + _matmul(h, w_hh.t())
        s = gates.sigmoid()
        g = gates[:, 2 * H:3 * H].tanh()
        c_new = s[:, H:2 * H] * c + s[:, :H] * g
        tc = c_new.tanh()
        cache[t] = (h, c, s, g, tc)
        h, c = s[:, 3 * H:] * tc, c_new
    dh = d_hy if d_hy is not None else hookgrad.zeros_like(hx)
    dc = d_cy if d_cy is not None else hookgrad.zeros_like(cx)
    d_gates = [None] * steps
    for t in reversed(order):
        h_prev, c_prev, s, g, tc = cache[t]
        if d_out is not None:
            dh = dh + d_out[t]
        dc = dc + dh * s[:, 3 * H:] * (1 - tc * tc)
        ds = s * (1 - s)
        d_gates[t] = hookgrad.cat([dc * g * ds[:, :H], dc * c_prev * ds[:, H:2 * H], dc * s[:, :H] * (1 - g * g),
                                   dh * tc * ds[:, 3 * H:]], 1)
        dh = _matmul(d_gates[t], w_hh)
        dc = dc * s[:, H:2 * H]
    flat = hookgrad.stack(d_gates, 0).reshape(-1, 4 * H)
    dx = _matmul(flat, w_ih).reshape(tuple(x.shape))
    dw_ih = _matmul(flat.t(), x.reshape(-1, x.shape[-1]))
    dw_hh = _matmul(flat.t(), hookgrad.stack([cache[t][0] for t in range(steps)], 0).reshape(-1, H))
    db = flat.sum(0)
    return dx, dw_ih, dw_hh, db, db, dh, dc


class MkldnnRnnLayerBackward0(Node):
    """One LSTM layer and direction (oneDNN's fused op): inputs (input, weight0..3, hx_, cx_)."""

    __slots__ = ("reverse", "hidden_size", "num_layers", "has_biases", "bidirectional", "batch_first", "train",
                 "cache", "_num_outputs")
    saved_names = ("hx_", "cx_", "input", "weight0", "weight1", "weight2", "weight3", "result0", "result1",
                   "result2", "result3")
    saved_values = {"reverse": lambda n: n.reverse, "batch_sizes": lambda n: (), "mode": lambda n: 2,
                    "hidden_size": lambda n: n.hidden_size, "num_layers": lambda n: n.num_layers,
                    "has_biases": lambda n: n.has_biases, "bidirectional": lambda n: n.bidirectional,
                    "batch_first": lambda n: n.batch_first, "train": lambda n: n.train}

    def release_variables(self) -> None:
        super().release_variables()
        self.cache = None

    def apply(self, grads):
        hx, cx, x, w_ih, w_hh, b_ih, b_hh, _out, _hy, _cy, workspace = self.saved()
        if workspace.dtype != hookgrad.uint8:
            raise RuntimeError(f"expected scalar type Byte but found {_scalar_name(workspace.dtype)}")
        d_out, d_hy, d_cy = (list(grads) + [None] * 3)[:3]
        need = [self._should_compute_output(i) for i in range(len(self.next_functions))]
        if GRAD.enabled:  # create_graph: the same gradients from Tensor ops, differentiable again
            result = _lstm_backward_tensor(x, w_ih, w_hh, b_ih, b_hh, hx, cx, self.reverse, d_out, d_hy, d_cy)
            return tuple(r if n else None for r, n in zip(result, need))
        if x._ndarray.__class__ is MetaArray:   # meta operands: the gradients' shapes, nothing computed
            inputs = (x, w_ih, w_hh, b_ih, b_hh, hx, cx)
            return tuple(wrap(meta_like(t._ndarray)) if n and t is not None else None for t, n in zip(inputs, need))
        if self.cache is None:
            raise RuntimeError(_FREED)
        dh = d_hy._ndarray if d_hy is not None else np.zeros(hx.shape, hx._ndarray.dtype)
        dc = d_cy._ndarray if d_cy is not None else np.zeros(cx.shape, cx._ndarray.dtype)
        dx, dw_ih, dw_hh, db, dh0, dc0 = self.cache.backward(
            x._ndarray, None if d_out is None else d_out._ndarray, dh, dc, (need[0], need[1], need[3] or need[4]))
        result = (dx, dw_ih, dw_hh if need[2] else None, db if need[3] else None,
                  db.copy() if need[4] else None, dh0 if need[5] else None, dc0 if need[6] else None)
        return tuple(None if r is None else wrap(r) for r in result)


def _scalar_name(dtype):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
            "int32": "Int", "bool": "Bool"}.get(str(dtype).split(".")[-1], str(dtype).split(".")[-1])


_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they have "
          "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
          "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
          "if you need to access saved tensors after calling backward.")


def _onednn_layer(x, w_ih, w_hh, b_ih, b_hh, hx, cx, reverse, hidden_size, num_layers, has_biases, bidirectional,
                  batch_first, train):
    """``at::mkldnn_rnn_layer``: x (T, B, I) contiguous; returns (output, hy, cy)."""
    xd = x._ndarray
    steps, batch, features = xd.shape
    if xd.__class__ is MetaArray or hx._ndarray.__class__ is MetaArray:   # the results' shapes, nothing computed
        kernel = None
        out = meta_array((steps, batch, hidden_size), xd.dtype)
        h = c = meta_array((batch, hidden_size), xd.dtype)
    else:
        kernel = _LstmKernel(w_ih._ndarray, w_hh._ndarray, reverse)
        out, h, c = kernel.forward(xd, b_ih._ndarray if has_biases else None, b_hh._ndarray if has_biases else None,
                                   hx._ndarray, cx._ndarray)
    out, hy, cy = wrap(out), wrap(h.copy()), wrap(c.copy())  # (h, c: rows of the kernel's arrays)
    inputs = (x, w_ih, w_hh, b_ih, b_hh, hx, cx)
    if any_requires_grad(*inputs):
        # oneDNN's scratch memory: its size is torch's, its bytes are never read (the kernel keeps its own
        # arrays), so it is left unfilled (zero-filling it cost 0.2-0.35 ms a layer at the bench's size)
        workspace = wrap(np.empty(_workspace_bytes(steps, batch, features, hidden_size), dtype=np.uint8))
        node = MkldnnRnnLayerBackward0(tuple(edge(t) for t in inputs))
        node.reverse, node.hidden_size, node.num_layers, node.has_biases = reverse, hidden_size, num_layers, has_biases
        node.bidirectional, node.batch_first, node.train = bidirectional, batch_first, train
        node.cache = kernel
        node._num_outputs = 3  # (the workspace, its fourth result, is not differentiable: no gradient slot)
        record(node, out, hy, cy, inputs=inputs)
        node._saved = tuple(SavedTensor(t) for t in (hx, cx, x, w_ih, w_hh, b_ih, b_hh)) + tuple(
            SavedTensor(t, True) for t in (out, hy, cy)) + (SavedTensor(workspace),)
    return out, hy, cy


def _onednn_lstm(input, hx, cx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    """``at::mkldnn_rnn``: the layers and directions of a float32 LSTM, one fused node each."""
    hidden_size = hx.shape[2]
    x = input.transpose(0, 1) if batch_first else input
    x = x.contiguous()
    hx, cx = hx.contiguous(), cx.contiguous()
    stride = 4 if has_biases else 2
    directions = 2 if bidirectional else 1
    if len(params) != stride * num_layers * directions:
        raise RuntimeError("got an incorrect number of RNN parameters")
    layer_hy, layer_cy = [], []
    for layer in range(num_layers):
        outputs = []
        for direction in range(directions):
            index = layer * directions + direction
            weights = params[index * stride:(index + 1) * stride]
            layer_hx, layer_cx = hx[index], cx[index]
            if has_biases:
                b_ih, b_hh = weights[2], weights[3]
            else:
                b_ih = hookgrad.zeros(tuple(weights[0].shape), dtype=weights[0].dtype)
                b_hh = hookgrad.zeros(tuple(weights[1].shape), dtype=weights[1].dtype)
            out, hy, cy = _onednn_layer(x, weights[0], weights[1], b_ih, b_hh, layer_hx, layer_cx, direction > 0,
                                        hidden_size, num_layers, has_biases, bidirectional, batch_first, train)
            outputs.append(out)
            layer_hy.append(hy)
            layer_cy.append(cy)
        x = outputs[0] if directions == 1 else hookgrad.cat(outputs, -1)
        if dropout != 0 and train and layer < num_layers - 1:
            x = _aten_dropout(x, dropout)
    hy = hookgrad.stack(layer_hy, 0)
    cy = hookgrad.stack(layer_cy, 0)
    output = x.transpose(0, 1) if batch_first else x
    return output, hy, cy


# ---- the public entry points: torch.lstm / gru / rnn_tanh / rnn_relu -------------------------------
def _entry(mode):
    name = mode.lower()

    def run(input, *args):
        is_lstm = mode == "LSTM"
        # the packed form's second argument is batch_sizes, a tensor; the padded form's is hx (a
        # tensor for GRU/RNN too, so for those the third argument, params or hx, tells them apart)
        packed = isinstance(args[0], Tensor) and (is_lstm or isinstance(args[1], Tensor))
        if packed:
            batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional = args
            if is_lstm:
                return _lstm_packed(input, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
                                    bidirectional)
            return _one_hidden_packed(mode, input, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
                                      bidirectional)
        hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = args
        if input.dim() != 3:
            raise RuntimeError(f"{name}: Expected input to be 3D, got {input.dim()}D instead")
        if is_lstm:
            return _lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
        return _one_hidden(mode, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                           batch_first)

    run.__name__ = run.__qualname__ = name
    run.__doc__ = (f"torch.{name}: the whole {mode} over a sequence (padded or packed), from a flat parameter "
                   "list, built as ATen builds it on the CPU; see the section comments above.")
    return run


lstm = _entry("LSTM")
gru = _entry("GRU")
rnn_tanh = _entry("RNN_TANH")
rnn_relu = _entry("RNN_RELU")


# ---- embedding_bag ---------------------------------------------------------------------------------------------
_MODES = {0: "sum", 1: "mean", 2: "max"}


class EmbeddingBagBackward0(Node):
    """Gradients of ``embedding_bag`` for the weight and the per-sample weights, written with tensor
    ops (so that they are differentiable again)."""

    __slots__ = ("indices", "bag_of", "scale", "max_indices", "nonempty", "weight_shape", "mode")

    def apply(self, grads):
        grad = grads[0]
        weight, per_sample = self.saved()
        rows = None if weight is None else weight
        d_weight = d_per_sample = None
        want_weight, want_per_sample = (self._should_compute_output(0),
                                        len(self.next_functions) > 1 and self._should_compute_output(1))
        if self.mode == "max":
            mask = wrap(self.nonempty.astype(grad._ndarray.dtype)[:, None])
            if want_weight:
                d_weight = hookgrad.zeros(self.weight_shape, dtype=grad.dtype).scatter_add(
                    0, wrap(self.max_indices), grad * mask)
            return d_weight, None
        bag_grad = grad.index_select(0, wrap(self.bag_of))
        scale = wrap(self.scale.astype(grad._ndarray.dtype))
        if per_sample is not None:
            scale = scale * per_sample
        if want_weight:
            d_weight = hookgrad.zeros(self.weight_shape, dtype=grad.dtype).index_add(
                0, wrap(self.indices), bag_grad * scale.unsqueeze(1))
        if want_per_sample:
            picked = rows.index_select(0, wrap(self.indices))
            d_per_sample = (bag_grad * picked).sum(1) * wrap(self.scale.astype(grad._ndarray.dtype))
        return d_weight, d_per_sample


def _bags(indices, offsets, include_last_offset):
    n = indices.shape[0]
    starts = np.asanyarray(offsets, dtype=np.int64).reshape(-1)
    if starts.size and starts[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {starts[0]}")
    if starts.size and starts[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length ({n}), but got offsets[-1] of "
                           f"{starts[-1]}")
    if include_last_offset:
        if starts.size == 0:
            raise RuntimeError("include_last_offset: number of offsets should be at least 1")
        ends = starts[1:]
        starts = starts[:-1]
    else:
        ends = np.append(starts[1:], n)
    return starts, ends


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """ATen's embedding_bag: ``(output, offset2bag, bag_size, max_indices)`` (see the module docstring)."""
    if mode not in _MODES:
        raise RuntimeError(f"embedding_bag: unknown mode {mode}")
    mode_name = _MODES[mode]
    if indices.dim() != 1:
        raise RuntimeError(f"input has to be a 1D or 2D Tensor, but got Tensor of dimension {indices.dim()}")
    if weight.dim() != 2:
        raise RuntimeError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}")
    if indices.dtype not in (hookgrad.int64, hookgrad.int32) or offsets.dtype not in (hookgrad.int64, hookgrad.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {indices.dtype} instead (while checking arguments for "
                           "embedding_bag)")
    if per_sample_weights is not None and mode_name != "sum":
        raise RuntimeError("embedding_bag: per_sample_weights was not None. per_sample_weights is only supported "
                           f"for mode='sum' (got mode='{mode_name}'). Please open a feature request on GitHub.")
    if scale_grad_by_freq:
        raise NotImplementedError("hookgrad's embedding_bag does not scale gradients by frequency")
    idx = indices._ndarray.astype(np.int64)
    num_weights, width = weight.shape
    if idx.size and (idx.min() < 0 or idx.max() >= num_weights):
        bad = int(idx[(idx < 0) | (idx >= num_weights)][0])
        raise RuntimeError("Expected i < index_size to be true, but got false.  (index "
                           f"{bad} is out of range for a weight of {num_weights} rows)")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += num_weights
    starts, ends = _bags(idx, offsets._ndarray, include_last_offset)
    n_bags = starts.size
    bag_of = np.zeros(idx.size, dtype=np.int64)
    for b in range(n_bags):  # an index's bag: the last bag starting at or before it
        bag_of[starts[b]:ends[b]] = b
    keep = np.ones(idx.size, dtype=bool) if padding_idx is None else idx != padding_idx
    counts = np.bincount(bag_of[keep], minlength=n_bags)[:n_bags] if idx.size else np.zeros(n_bags, np.int64)
    w = weight._ndarray
    out_dtype = w.dtype
    max_indices = None
    nonempty = counts > 0
    if mode_name == "max":
        out = np.zeros((n_bags, width), dtype=out_dtype)
        max_indices = np.zeros((n_bags, width), dtype=np.int64)
        for b in np.flatnonzero(nonempty):
            members = np.arange(starts[b], ends[b])[keep[starts[b]:ends[b]]]
            rows = w[idx[members]]
            best = rows.argmax(0)
            out[b] = rows[best, np.arange(width)]
            max_indices[b] = idx[members][best]
        scale = None
    else:
        scale = keep.astype(np.float64)
        if mode_name == "mean":
            scale = scale / np.maximum(counts, 1)[bag_of]
        contributions = w[idx] * scale[:, None].astype(out_dtype)
        if per_sample_weights is not None:
            contributions = contributions * per_sample_weights._ndarray[:, None]
        out = np.zeros((n_bags, width), dtype=out_dtype)
        if idx.size:
            np.add.at(out, bag_of, contributions)
    result = wrap(out.astype(out_dtype, copy=False))
    inputs = (weight, per_sample_weights)
    if GRAD.enabled and any(t is not None and t.requires_grad for t in inputs):
        node = record_op(EmbeddingBagBackward0, inputs, result)
        node.indices, node.bag_of, node.scale = idx, bag_of, scale
        node.max_indices, node.nonempty = max_indices, nonempty
        node.weight_shape, node.mode = tuple(weight.shape), mode_name
        node.save(weight if per_sample_weights is not None else None, per_sample_weights)
    # ATen's bookkeeping results, as torch fills them on the CPU: in sum mode its float32 kernel
    # without padding_idx leaves offset2bag empty, and bag_size/max_indices are zeros, one per offset
    index_dtype = indices._ndarray.dtype
    if mode_name == "sum":
        fast_sum = out_dtype == np.float32 and padding_idx is None
        offset2bag = np.zeros(0, dtype=np.int64) if fast_sum else bag_of
        recorded = result.requires_grad  # with a backward to feed, one entry per bag; else one per offset
        bag_size = max_out = np.zeros(n_bags if recorded else offsets.shape[0], dtype=np.int64)
    else:
        offset2bag, bag_size = bag_of, counts
        max_out = max_indices if mode_name == "max" else counts
    return (result, wrap(offset2bag.astype(index_dtype)), wrap(bag_size.astype(index_dtype)),
            wrap(np.asanyarray(max_out).astype(index_dtype)))


def batch_norm_update_stats(input, running_mean, running_var, momentum):
    """The batch's per-channel mean and biased variance; the running statistics given are updated in
    place to ``(1 - momentum) * running + momentum * batch`` (with the unbiased variance), as in torch."""
    data = input._ndarray
    axes = (0,) + tuple(range(2, data.ndim))
    count = data.size // data.shape[1]
    mean = data.mean(axis=axes)
    var = data.var(axis=axes)
    with hookgrad.no_grad():
        if running_mean is not None:
            running_mean.copy_(wrap(((1 - momentum) * running_mean._ndarray + momentum * mean).astype(
                running_mean._ndarray.dtype)))
        if running_var is not None:
            unbiased = var * (count / max(count - 1, 1))
            running_var.copy_(wrap(((1 - momentum) * running_var._ndarray + momentum * unbiased).astype(
                running_var._ndarray.dtype)))
    return wrap(mean.astype(data.dtype)), wrap(var.astype(data.dtype))
