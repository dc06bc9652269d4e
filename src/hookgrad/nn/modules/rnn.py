"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their single-step cells.

The layers follow PyTorch 2.13's parameter names, shapes, initialisation, argument checks and
``extra_repr``. Gate order in the weights is PyTorch's: LSTM ``i, f, g, o``; GRU ``r, z, n``.

How a layer runs: for each layer and direction, the input projection ``x @ W_ih^T + b`` of all
time steps is one matmul; the time loop then does one matmul per step for the recurrent
projection, then the gate non-linearities. That loop runs on NumPy arrays and records a single
graph node per layer and direction (``MkldnnRnnLayerBackward0`` for LSTM, as PyTorch's CPU LSTM
does); its backward is backpropagation through time on NumPy. When the backward must itself be
differentiable (``create_graph=True``), the same step formulas run on hookgrad Tensors instead,
so double backward works. LSTM with ``proj_size`` and the single-step cells are composed of
ordinary tensor ops.
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

import hookgrad
from hookgrad import _threads as _blas
from hookgrad._ops._base import GRAD, any_requires_grad, edge, record
# the cells call the ops themselves, not torch's public names: as in torch (whose recurrent kernels are
# C++), code that patches torch.addmm or Tensor.matmul (FLOP counters) does not see a recurrent layer's steps
from hookgrad._ops.linalg import addmm as _addmm, matmul as _matmul
from hookgrad._tensor import Tensor, wrap
from hookgrad.autograd.graph import Node

from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _dropout(x: Tensor, p: float, training: bool) -> Tensor:
    """Dropout between stacked layers (the functional API's when it is there)."""
    if not training or p == 0:
        return x
    try:
        from .. import functional as F
    except ImportError:  # the functional module is optional for this file
        F = None
    if F is not None and hasattr(F, "dropout"):
        return F.dropout(x, p, True)
    if p == 1:
        return x * 0
    keep = hookgrad.bernoulli(hookgrad.full_like(x.detach(), 1.0 - p))
    return x * keep / (1.0 - p)


# ---- one time step of each cell kind, composed of tensor ops (the cells, projected LSTM) -----------
# ``xp`` is the input projection of this step (input biases already added, except GRU's b_hh),
# ``h``/``c`` the state, ``whh_t`` the transposed recurrent weight. Each returns the new state.

def _tanh_step(xp, h, whh_t):
    return _addmm(xp, h, whh_t).tanh()


def _relu_step(xp, h, whh_t):
    return _addmm(xp, h, whh_t).relu()


def _lstm_step(xp, h, c, whh_t, hidden):
    gates = _addmm(xp, h, whh_t)
    s = gates.sigmoid()
    i = s[:, :hidden]
    f = s[:, hidden:2 * hidden]
    o = s[:, 3 * hidden:]
    g = gates[:, 2 * hidden:3 * hidden].tanh()
    c = f * c + i * g
    return o * c.tanh(), c


def _gru_step(xp, h, whh_t, b_hh, hidden):
    hp = _matmul(h, whh_t) if b_hh is None else _addmm(b_hh, h, whh_t)
    rz = (xp[:, :2 * hidden] + hp[:, :2 * hidden]).sigmoid()
    r = rz[:, :hidden]
    z = rz[:, hidden:]
    n = (xp[:, 2 * hidden:] + r * hp[:, 2 * hidden:]).tanh()
    return n + z * (h - n)


# ---- the fused layer: one graph node per layer and direction ---------------------------------------
# The time loop runs on NumPy arrays and records one node whose backward is backpropagation
# through time, also on NumPy. The same step formulas, written once against a tiny ``ops``
# interface, run on hookgrad Tensors when the backward itself must be differentiable
# (``create_graph=True``): the forward is then recomputed with Tensor ops from the saved inputs.

class _NumpyOps:
    @staticmethod
    def sigmoid(x):
        return 0.5 * (1.0 + np.tanh(0.5 * x))  # stable for any |x|, one transcendental call

    tanh = staticmethod(np.tanh)

    @staticmethod
    def relu(x):
        return np.maximum(x, 0)

    @staticmethod
    def relu_grad(h):
        return (h > 0).astype(h.dtype)

    @staticmethod
    def cat(xs, dim):
        return np.concatenate(xs, dim)

    @staticmethod
    def stack(xs, dim):
        return np.stack(xs, dim)

    @staticmethod
    def t(x):
        return x.T

    @staticmethod
    def t_for_matmul(x):
        # a row-major copy of the transpose: OpenBLAS multiplies (32x128) @ (128x512) in 32 us
        # against 43 us through the transposed view, and the time loop does it once per step
        return np.ascontiguousarray(x.T)

    @staticmethod
    def zeros(like):
        return np.zeros_like(like)

    @staticmethod
    def zero_rows(like, count):
        return np.zeros((count,) + like.shape[1:], dtype=like.dtype)


class _TensorOps:
    sigmoid = staticmethod(lambda x: x.sigmoid())
    tanh = staticmethod(lambda x: x.tanh())
    relu = staticmethod(lambda x: x.relu())
    relu_grad = staticmethod(lambda h: (h > 0).to(h.dtype))
    cat = staticmethod(lambda xs, dim: hookgrad.cat(xs, dim))
    stack = staticmethod(lambda xs, dim: hookgrad.stack(xs, dim))
    t = staticmethod(lambda x: x.t())
    t_for_matmul = t
    zeros = staticmethod(lambda like: hookgrad.zeros_like(like))
    zero_rows = staticmethod(lambda like, count: hookgrad.zeros(count, *like.shape[1:], dtype=like.dtype))


def _steps_forward(ops, mode, hidden, xp, h, c, w_hh, b_hh, order, active=None):
    """Run the recurrence over the per-step projections ``xp[t]``; returns (outputs, h, c, cache).

    ``active`` (packed sequences, rows sorted by decreasing length): at step t only the first
    ``active[t]`` rows advance; the others keep their state, and their output is zero.
    """
    H = hidden
    w_t = ops.t_for_matmul(w_hh)
    # the time loop's products are small: one BLAS thread (set once here, not per product)
    _blas.use_threads_for(h.shape[0] * w_hh.shape[0] * w_hh.shape[1] if h.ndim == 2 else 0)
    outs = [None] * len(xp)
    cache = [None] * len(xp)
    batch = h.shape[0]
    for t in order:
        rows = batch if active is None else active[t]
        x_t = xp[t]
        if rows < batch:
            h_rest, c_rest = h[rows:], (c[rows:] if c is not None else None)
            h, c, x_t = h[:rows], (c[:rows] if c is not None else None), x_t[:rows]
        if mode == "LSTM":
            gates = x_t + h @ w_t
            s = ops.sigmoid(gates)
            i, f, o = s[:, :H], s[:, H:2 * H], s[:, 3 * H:]
            g = ops.tanh(gates[:, 2 * H:3 * H])
            c_new = f * c + i * g
            tc = ops.tanh(c_new)
            cache[t] = (h, c, s, g, tc)
            h, c = o * tc, c_new
        elif mode == "GRU":
            hp = h @ w_t
            if b_hh is not None:
                hp = hp + b_hh
            rz = ops.sigmoid(x_t[:, :2 * H] + hp[:, :2 * H])
            r, z = rz[:, :H], rz[:, H:]
            hn = hp[:, 2 * H:]
            n = ops.tanh(x_t[:, 2 * H:] + r * hn)
            cache[t] = (h, r, z, n, hn)
            h = n + z * (h - n)
        else:
            pre = x_t + h @ w_t
            h_new = ops.tanh(pre) if mode == "RNN_TANH" else ops.relu(pre)
            cache[t] = (h, h_new)
            h = h_new
        if rows < batch:
            outs[t] = ops.cat([h, ops.zero_rows(h, batch - rows)], 0)
            h = ops.cat([h, h_rest], 0)
            c = ops.cat([c, c_rest], 0) if c is not None else None
        else:
            outs[t] = h
    return outs, h, c, cache


def _steps_backward(ops, mode, cache, d_outs, dh, dc, w_hh, order, active=None):
    """Backpropagation through time; returns (d xp per step, d h0, d c0, d w_hh, d b_hh).

    The recurrent weight's gradient is one matmul over all steps at the end. ``active`` as in
    ``_steps_forward``: rows that did not advance at a step pass their gradients through.
    """
    dxp = [None] * len(cache)
    dhps, h_prevs = [], []
    _blas.use_threads_for(dh.shape[0] * w_hh.shape[0] * w_hh.shape[1] if dh.ndim == 2 else 0)
    batch = dh.shape[0]
    for t in reversed(order):
        rows = batch if active is None else active[t]
        if rows < batch:
            dh_rest, dc_rest = dh[rows:], (dc[rows:] if dc is not None else None)
            dh, dc = dh[:rows], (dc[:rows] if dc is not None else None)
        if d_outs is not None:
            dh = dh + (d_outs[t][:rows] if rows < batch else d_outs[t])
        if mode == "LSTM":
            h_prev, c_prev, s, g, tc = cache[t]
            H = g.shape[1]
            i, f, o = s[:, :H], s[:, H:2 * H], s[:, 3 * H:]
            dc = dc + dh * o * (1 - tc * tc)
            # the gates' local derivatives for all four at once (a few wide ops instead of many
            # narrow ones: this loop runs once per time step, where NumPy's per-call cost dominates)
            ds = s * (1 - s)
            local = ops.cat([ds[:, :2 * H], 1 - g * g, ds[:, 3 * H:]], 1)
            dgates = ops.cat([dc * g, dc * c_prev, dc * i, dh * tc], 1) * local
            dxp[t] = dhp = dgates
            dh = dgates @ w_hh
            dc = dc * f
        elif mode == "GRU":
            h_prev, r, z, n, hn = cache[t]
            dn = dh * (1 - z) * (1 - n * n)
            dr = dn * hn * r * (1 - r)
            dz = dh * (h_prev - n) * z * (1 - z)
            dxp[t] = ops.cat([dr, dz, dn], 1)
            dhp = ops.cat([dr, dz, dn * r], 1)
            dh = dh * z + dhp @ w_hh
        else:
            h_prev, h_new = cache[t]
            dpre = dh * (1 - h_new * h_new) if mode == "RNN_TANH" else dh * ops.relu_grad(h_new)
            dxp[t] = dhp = dpre
            dh = dpre @ w_hh
        if rows < batch:
            dxp[t] = ops.cat([dxp[t], ops.zero_rows(dxp[t], batch - rows)], 0)
            dh = ops.cat([dh, dh_rest], 0)
            dc = ops.cat([dc, dc_rest], 0) if dc is not None else None
        dhps.append(dhp)
        h_prevs.append(h_prev)
    all_dhp = ops.cat(dhps, 0)
    dw = ops.t(all_dhp) @ ops.cat(h_prevs, 0)
    db_hh = all_dhp.sum(0) if mode == "GRU" else None
    return dxp, dh, dc, dw, db_hh


class _RecurrentLayerBackward(Node):
    """One layer, one direction of a recurrent layer: inputs (x, w_ih, w_hh, b_ih, b_hh, h0[, c0])."""

    __slots__ = ("mode", "hidden", "time_dim", "reverse", "active", "cache", "_num_outputs")

    def release_variables(self) -> None:
        super().release_variables()
        self.cache = None

    def apply(self, grads):
        saved = self.saved()
        x, w_ih, w_hh, b_ih, b_hh, h0 = saved[:6]
        c0 = saved[6] if self.mode == "LSTM" else None
        d_out, d_h, d_c = (list(grads) + [None, None])[:3]
        steps = x.shape[self.time_dim]
        order = range(steps - 1, -1, -1) if self.reverse else range(steps)
        if GRAD.enabled:  # create_graph: the backward must itself be differentiable
            ops = _TensorOps
            xp = _project(x, w_ih, b_ih, b_hh, self.mode, Tensor).unbind(self.time_dim)
            _, _, _, cache = _steps_forward(ops, self.mode, self.hidden, xp, h0, c0, w_hh, b_hh, order,
                                            self.active)
            zeros = hookgrad.zeros_like
            unwrap = lambda t: t  # noqa: E731
            wrap_ = lambda a: a  # noqa: E731
        else:
            if self.cache is None:
                raise RuntimeError(_FREED)
            ops, cache = _NumpyOps, self.cache
            zeros = np.zeros_like
            unwrap = lambda t: None if t is None else t._data  # noqa: E731
            wrap_ = lambda a: None if a is None else wrap(a)  # noqa: E731
            x, w_ih, w_hh, h0 = x._data, w_ih._data, w_hh._data, h0._data
            c0 = c0._data if c0 is not None else None
        d_out, d_h, d_c = unwrap(d_out), unwrap(d_h), unwrap(d_c)
        dh = d_h if d_h is not None else zeros(h0)
        dc = (d_c if d_c is not None else zeros(c0)) if self.mode == "LSTM" else None
        d_outs = None
        if d_out is not None:
            d_outs = [d_out[:, t] for t in range(steps)] if self.time_dim == 1 else [d_out[t] for t in range(steps)]
        dxp, dh0, dc0, dw_hh, db_hh = _steps_backward(ops, self.mode, cache, d_outs, dh, dc, w_hh, order,
                                                      self.active)
        dxp = ops.stack(dxp, self.time_dim)                                   # laid out like x
        need = [fn is not None for fn, _ in self.next_functions]
        gate_size = dxp.shape[-1]
        flat_dxp = dxp.reshape(-1, gate_size)
        dx = (flat_dxp @ w_ih).reshape(tuple(dxp.shape[:-1]) + (w_ih.shape[1],)) if need[0] else None
        dw_ih = ops.t(flat_dxp) @ x.reshape(-1, x.shape[-1]) if need[1] else None
        db_ih = flat_dxp.sum(0) if (need[3] or (need[4] and self.mode != "GRU")) else None
        if self.mode != "GRU":
            db_hh = db_ih
        result = [dx, dw_ih, dw_hh if need[2] else None, db_ih if need[3] else None,
                  db_hh if need[4] else None, dh0 if need[5] else None]
        if self.mode == "LSTM":
            result.append(dc0 if need[6] else None)
        return tuple(wrap_(r) for r in result)


_LAYER_NODES = {
    "LSTM": type("MkldnnRnnLayerBackward0", (_RecurrentLayerBackward,), {"__slots__": ()}),
    "GRU": type("GruLayerBackward0", (_RecurrentLayerBackward,), {"__slots__": ()}),
    "RNN_TANH": type("RnnTanhLayerBackward0", (_RecurrentLayerBackward,), {"__slots__": ()}),
    "RNN_RELU": type("RnnReluLayerBackward0", (_RecurrentLayerBackward,), {"__slots__": ()}),
}
_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they have "
          "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
          "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
          "if you need to access saved tensors after calling backward.")


def _project(x, w_ih, b_ih, b_hh, mode, kind):
    """The input projection of every step at once: ``x @ w_ih^T + b_ih`` (``+ b_hh`` except for GRU)."""
    if kind is Tensor:
        xp = _matmul(x, w_ih.t())
        if b_ih is not None:
            xp = xp + (b_ih if mode == "GRU" else b_ih + b_hh)
        return xp
    lead = x.shape[:-1]
    xp = (x.reshape(-1, x.shape[-1]) @ w_ih.T).reshape(lead + (w_ih.shape[0],))
    if b_ih is not None:
        xp += b_ih if mode == "GRU" else b_ih + b_hh
    return xp


def _fused_layer(mode, hidden, x, w_ih, w_hh, b_ih, b_hh, h0, c0, reverse, time_dim, active=None):
    """One layer and direction: the NumPy time loop and, when autograd needs it, one graph node.
    ``active``: rows advancing per step, for packed sequences (see ``_steps_forward``)."""
    xd = x._data
    steps = xd.shape[time_dim]
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    xp = _project(xd, w_ih._data, None if b_ih is None else b_ih._data, None if b_hh is None else b_hh._data,
                  mode, np.ndarray)
    xp_steps = [xp[:, t] for t in range(steps)] if time_dim == 1 else list(xp)
    c0d = c0._data if c0 is not None else None
    outs, h, c, cache = _steps_forward(_NumpyOps, mode, hidden, xp_steps, h0._data, c0d, w_hh._data,
                                       None if (b_hh is None or mode != "GRU") else b_hh._data, order, active)
    out = wrap(np.stack(outs, time_dim))
    h_t = wrap(np.ascontiguousarray(h))
    c_t = wrap(np.ascontiguousarray(c)) if c is not None else None
    inputs = (x, w_ih, w_hh, b_ih, b_hh, h0) + ((c0,) if mode == "LSTM" else ())
    if any_requires_grad(*inputs):
        node = _LAYER_NODES[mode](tuple(edge(t) for t in inputs))
        node.mode, node.hidden, node.time_dim, node.reverse = mode, hidden, time_dim, reverse
        node.active = active
        node.cache = cache
        node._num_outputs = 3 if c_t is not None else 2  # the engine sizes gradient buffers by this
        node.save(*inputs)
        if c_t is not None:
            record(node, out, h_t, c_t, inputs=inputs)
        else:
            record(node, out, h_t, inputs=inputs)
    return out, h_t, c_t


def _is_packed(input) -> bool:
    from ..utils.rnn import PackedSequence
    return isinstance(input, PackedSequence)


class RNNBase(Module):
    """Shared set-up of ``RNN``, ``LSTM`` and ``GRU``: parameters, checks and the layer loop."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device=None, dtype=None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        directions = 2 if bidirectional else 1

        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=2)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)

        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * directions
            for direction in range(directions):
                suffix = "_reverse" if direction == 1 else ""
                shapes = [(f"weight_ih_l{layer}{suffix}", (gate_size, layer_input)),
                          (f"weight_hh_l{layer}{suffix}", (gate_size, real_hidden))]
                if bias:
                    shapes += [(f"bias_ih_l{layer}{suffix}", (gate_size,)),
                               (f"bias_hh_l{layer}{suffix}", (gate_size,))]
                if proj_size > 0:
                    shapes.append((f"weight_hr_l{layer}{suffix}", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name, Parameter(hookgrad.empty(shape, dtype=dtype)))
                names = [name for name, _ in shapes]
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    # ---- parameters -------------------------------------------------------------------------
    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op: there is no fused kernel that wants one contiguous weight buffer."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ---- argument checks (PyTorch's messages) -----------------------------------------------
    def check_input(self, input: Tensor, batch_sizes=None) -> None:
        weight = self._flat_weights[0]
        if input.dtype != weight.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight.dtype}). "
                             f"Convert input: input.to({weight.dtype}), or convert model: model.to({input.dtype})")
        if input.dim() != 3:
            raise RuntimeError(f"input must have 3 dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def get_expected_hidden_size(self, input: Tensor, batch_sizes=None) -> tuple:
        batch = input.size(0) if self.batch_first else input.size(1)
        directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * directions, batch, size)

    def check_hidden_size(self, hx: Tensor, expected: tuple, msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.size()) != tuple(expected):
            raise RuntimeError(msg.format(tuple(expected), list(hx.size())))

    def check_forward_args(self, input: Tensor, hidden: Tensor, batch_sizes=None) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        return hx

    # ---- the layer loop ---------------------------------------------------------------------
    def _run_projected_lstm(self, x: Tensor, h: Tensor, c: Tensor, weights: list, reverse: bool, time_dim: int):
        """One layer and direction of an LSTM with ``proj_size``, composed of tensor ops.

        ``x`` is (T, B, features) or, with ``time_dim=1``, (B, T, features). Returns (outputs in the
        layout of ``x``, h_T, c_T).
        """
        if self.bias:
            w_ih, w_hh, b_ih, b_hh, w_hr = weights
        else:
            (w_ih, w_hh, w_hr), b_ih, b_hh = weights, None, None
        steps = x.shape[time_dim]
        xp = _matmul(x, w_ih.t())
        if b_ih is not None:
            xp = xp + (b_ih + b_hh)
        xp = xp.unbind(time_dim)
        whh_t, whr_t = w_hh.t(), w_hr.t()
        outputs = [None] * steps
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            h, c = _lstm_step(xp[t], h, c, whh_t, self.hidden_size)
            h = _matmul(h, whr_t)
            outputs[t] = h
        return hookgrad.stack(outputs, time_dim), h, c

    def _run_layers(self, x: Tensor, hx: Tensor, cx, active=None):
        """All layers and directions on the 3-D input; returns (output, h_n, c_n).

        The batch-first layout is kept through all layers, so no transposed copies are made and
        the output is contiguous in either layout. ``active`` (packed sequences): ``x`` is
        time-major whatever ``batch_first`` says, its rows sorted by decreasing length, and
        ``active[t]`` rows advance at step t.
        """
        time_dim = 1 if (self.batch_first and active is None) else 0
        directions = 2 if self.bidirectional else 1
        flat = self._flat_weights
        per_dir = len(flat) // (self.num_layers * directions)
        h0 = hx.unbind(0)
        c0 = cx.unbind(0) if cx is not None else None
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            if layer > 0:
                x = _dropout(x, self.dropout, self.training)
            outs = []
            for direction in range(directions):
                idx = layer * directions + direction
                weights = flat[idx * per_dir:(idx + 1) * per_dir]
                if self.proj_size > 0:
                    out, h, c = self._run_projected_lstm(x, h0[idx], c0[idx], weights, direction == 1, time_dim)
                else:
                    w_ih, w_hh, b_ih, b_hh = weights if self.bias else (weights[0], weights[1], None, None)
                    out, h, c = _fused_layer(self.mode, self.hidden_size, x, w_ih, w_hh, b_ih, b_hh, h0[idx],
                                             c0[idx] if c0 is not None else None, direction == 1, time_dim,
                                             active)
                outs.append(out)
                h_n.append(h)
                c_n.append(c)
            x = outs[0] if directions == 1 else hookgrad.cat(outs, 2)
        return x, hookgrad.stack(h_n, 0), (hookgrad.stack(c_n, 0) if cx is not None else None)

    def _forward_packed(self, packed, hx, name):
        """forward on a PackedSequence: each sequence runs alone for its own length.

        The states are in the caller's batch order (as in torch); the output is packed like the
        input (same batch_sizes and index permutations).
        """
        from ..utils.rnn import PackedSequence, _pack_time_major, pad_packed_sequence
        padded, lengths = pad_packed_sequence(packed)  # time-major, caller's batch order
        lengths = [int(n) for n in lengths.tolist()]
        is_lstm = self.mode == "LSTM"
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            hx = self._zeros_state(padded.transpose(0, 1) if self.batch_first else padded, real_hidden)
            cx = self._zeros_state(padded.transpose(0, 1) if self.batch_first else padded,
                                   self.hidden_size) if is_lstm else None
        elif is_lstm:
            hx, cx = hx
        else:
            cx = None
        if is_lstm:
            self.check_forward_args(padded.transpose(0, 1) if self.batch_first else padded, (hx, cx))
        else:
            self.check_forward_args(padded.transpose(0, 1) if self.batch_first else padded, hx)
        if self.proj_size == 0:
            return self._forward_packed_batched(packed, padded, hx, cx)
        outputs, h_n, c_n = [], [], []
        for b, length in enumerate(lengths):
            x = padded[:length, b:b + 1]
            if self.batch_first:
                x = x.transpose(0, 1)
            out, h, c = self._run_layers(x, hx[:, b:b + 1], cx[:, b:b + 1] if is_lstm else None)
            outputs.append(out.squeeze(0 if self.batch_first else 1))
            h_n.append(h)
            c_n.append(c)
        width = outputs[0].size(-1)
        steps = padded.size(0)
        rows = [hookgrad.cat([o, hookgrad.zeros(steps - o.size(0), width, dtype=o.dtype)], 0) if o.size(0) < steps
                else o for o in outputs]
        order = packed.sorted_indices.tolist() if packed.sorted_indices is not None else list(range(len(lengths)))
        data = _pack_time_major(hookgrad.stack(rows, 1), [int(v) for v in packed.batch_sizes.tolist()], order)
        output = PackedSequence(data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
        h_n = hookgrad.cat(h_n, 1)
        if is_lstm:
            return output, (h_n, hookgrad.cat(c_n, 1))
        return output, h_n

    def _forward_packed_batched(self, packed, padded, hx, cx):
        """All sequences at once, in the packed (decreasing length) order: at step t the first
        ``batch_sizes[t]`` rows advance and the others keep their state."""
        from ..utils.rnn import PackedSequence
        batch_sizes = [int(v) for v in packed.batch_sizes.tolist()]
        steps, batch = len(batch_sizes), padded.size(1)
        sorted_indices, unsorted_indices = packed.sorted_indices, packed.unsorted_indices
        if sorted_indices is not None:
            padded = padded.index_select(1, sorted_indices)
            hx = hx.index_select(1, sorted_indices)
            cx = cx.index_select(1, sorted_indices) if cx is not None else None
        out, h_n, c_n = self._run_layers(padded[:steps], hx, cx, active=batch_sizes)
        # the packed rows of the time-major output: step t holds rows 0 .. batch_sizes[t] - 1
        rows = np.concatenate([np.arange(n) + t * batch for t, n in enumerate(batch_sizes)])
        data = out.reshape(steps * batch, out.size(-1)).index_select(0, hookgrad.tensor(rows))
        output = PackedSequence(data, packed.batch_sizes, sorted_indices, unsorted_indices)
        if unsorted_indices is not None:
            h_n = h_n.index_select(1, unsorted_indices)
            c_n = c_n.index_select(1, unsorted_indices) if c_n is not None else None
        if self.mode == "LSTM":
            return output, (h_n, c_n)
        return output, h_n

    def _prepare(self, input: Tensor, name: str):
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                             f"{'tensor instead' if name != 'LSTM' else 'instead'}")
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        return input, batched

    def _zeros_state(self, input: Tensor, size: int) -> Tensor:
        directions = 2 if self.bidirectional else 1
        batch = input.size(0) if self.batch_first else input.size(1)
        return hookgrad.zeros(self.num_layers * directions, batch, size, dtype=input.dtype)

    def _finish(self, output: Tensor, batched: bool) -> Tensor:
        if not batched:
            output = output.squeeze(0 if self.batch_first else 1)
        return output

    def _forward_one_state(self, input, hx, name):
        """forward of the RNN and GRU, whose state is a single tensor (LSTM has two)."""
        if _is_packed(input):
            return self._forward_packed(input, hx, name)
        input, batched = self._prepare(input, name)
        if hx is not None:
            if batched and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
            if not batched:
                if hx.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
                hx = hx.unsqueeze(1)
        else:
            hx = self._zeros_state(input, self.hidden_size)
        self.check_forward_args(input, hx)
        output, h_n, _ = self._run_layers(input, hx, None)
        output = self._finish(output, batched)
        if not batched:
            h_n = h_n.squeeze(1)
        return output, h_n


class RNN(RNNBase):
    """Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or ReLU)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(mode, *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_one_state(input, hx, "RNN")


class LSTM(RNNBase):
    """Long short-term memory; with ``proj_size > 0`` the hidden state is projected (LSTMP)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input: Tensor, batch_sizes=None) -> tuple:
        batch = input.size(0) if self.batch_first else input.size(1)
        directions = 2 if self.bidirectional else 1
        return (self.num_layers * directions, batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes=None):
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def forward(self, input, hx=None):
        if _is_packed(input):
            return self._forward_packed(input, hx, "LSTM")
        input, batched = self._prepare(input, "LSTM")
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            hx = (self._zeros_state(input, real_hidden), self._zeros_state(input, self.hidden_size))
        else:
            if batched:
                if hx[0].dim() != 3 or hx[1].dim() != 3:
                    raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                       f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            else:
                if hx[0].dim() != 2 or hx[1].dim() != 2:
                    raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but got "
                                       f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
                hx = (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self.check_forward_args(input, hx)
        output, h_n, c_n = self._run_layers(input, hx[0], hx[1])
        output = self._finish(output, batched)
        if not batched:
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return output, (h_n, c_n)


class GRU(RNNBase):
    """Gated recurrent unit (PyTorch's formulation: the reset gate multiplies ``W_hn h + b_hn``)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return self._forward_one_state(input, hx, "GRU")


# ---- cells ----------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """Shared set-up of the cells: ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(hookgrad.empty((num_chunks * hidden_size, input_size), dtype=dtype))
        self.weight_hh = Parameter(hookgrad.empty((num_chunks * hidden_size, hidden_size), dtype=dtype))
        if bias:
            self.bias_ih = Parameter(hookgrad.empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(hookgrad.empty(num_chunks * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _input_projection(self, input: Tensor, fold_hh_bias: bool) -> Tensor:
        if self.bias_ih is None:
            return _matmul(input, self.weight_ih.t())
        bias = self.bias_ih + self.bias_hh if fold_hh_bias else self.bias_ih
        return _addmm(bias, input, self.weight_ih.t())

    def _check(self, input, hx, name: str, what: str = "hidden"):
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {hx.dim()}D instead")
        return input.dim() == 2

    def _batched_with_hidden(self, input, hx, name: str):
        """``(batched, input, hx)`` for a cell with one hidden tensor (RNNCell, GRUCell): checked,
        with a batch dim added to unbatched arguments and zeros for a missing ``hx``."""
        batched = self._check(input, hx, name)
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            hx = hookgrad.zeros(input.size(0), self.hidden_size, dtype=input.dtype)
        elif not batched:
            hx = hx.unsqueeze(0)
        self._check_sizes(input, hx, "")
        return batched, input, hx

    def _check_sizes(self, input, hx, hidden_label="hx"):
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {self.input_size}")
        if hx.size(0) != input.size(0):
            raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{hidden_label} batch size "
                               f"{hx.size(0)}")
        if hx.size(1) != self.hidden_size:
            raise RuntimeError(f"hidden{hidden_label} has inconsistent hidden_size: got {hx.size(1)}, expected "
                               f"{self.hidden_size}")


class RNNCell(RNNCellBase):
    """One step of an Elman RNN with tanh or ReLU."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        batched, input, hx = self._batched_with_hidden(input, hx, "RNNCell")
        if self.nonlinearity == "tanh":
            step = _tanh_step
        elif self.nonlinearity == "relu":
            step = _relu_step
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        out = step(self._input_projection(input, True), hx, self.weight_hh.t())
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One step of an LSTM; returns ``(h', c')``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = hookgrad.zeros(input.size(0), self.hidden_size, dtype=input.dtype)
            hx = (zeros, zeros)
        elif not batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        self._check_sizes(input, hx[0], "[0]")
        self._check_sizes(input, hx[1], "[1]")
        h, c = _lstm_step(self._input_projection(input, True), hx[0], hx[1], self.weight_hh.t(), self.hidden_size)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One step of a GRU."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        batched, input, hx = self._batched_with_hidden(input, hx, "GRUCell")
        out = _gru_step(self._input_projection(input, False), hx, self.weight_hh.t(), self.bias_hh,
                        self.hidden_size)
        return out if batched else out.squeeze(0)
