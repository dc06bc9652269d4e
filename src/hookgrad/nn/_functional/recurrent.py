"""torch's functional entry points of the recurrent layers and of EmbeddingBag:

* ``torch.lstm`` / ``torch.gru`` / ``torch.rnn_tanh`` / ``torch.rnn_relu`` with ATen's two forms,
  ``(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)`` and the
  packed ``(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)``.
  They run the very layer loop of ``nn.LSTM``/``nn.GRU``/``nn.RNN`` (one graph node per layer and
  direction), on a flat parameter list in torch's order (per layer and direction: ``w_ih, w_hh``,
  then ``b_ih, b_hh`` with biases, then ``w_hr`` with a projection).
* ``torch.embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
  per_sample_weights, include_last_offset, padding_idx)``: one ``EmbeddingBagBackward0`` node and
  ATen's four results ``(output, offset2bag, bag_size, max_indices)``; ``F.embedding_bag`` calls it.
* ``torch.batch_norm_update_stats``: the running statistics after one batch.
"""
from __future__ import annotations

import numpy as np

import hookgrad
from ..._ops._base import GRAD
from ..._ops._declare import record_op
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node

__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu", "embedding_bag", "batch_norm_update_stats"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


class _Layers:
    """What ``RNNBase``'s layer loop reads from its module, given by a flat parameter list."""

    def __init__(self, mode, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
        from ..modules.rnn import RNNBase
        params = list(params)
        directions = 2 if bidirectional else 1
        if num_layers < 1 or not params or len(params) % (num_layers * directions):
            raise RuntimeError("got an incorrect number of RNN parameters")
        per_dir = len(params) // (num_layers * directions)
        plain = 4 if has_biases else 2
        if per_dir not in (plain, plain + 1) or (per_dir == plain + 1 and mode != "LSTM"):
            raise RuntimeError("got an incorrect number of RNN parameters")
        self.mode = mode
        self._flat_weights = params
        self.bias = has_biases
        self.num_layers = num_layers
        self.dropout = float(dropout)
        self.training = bool(train)
        self.bidirectional = bool(bidirectional)
        self.batch_first = bool(batch_first)
        self.hidden_size = params[0].shape[0] // _GATES[mode]
        self.proj_size = params[per_dir - 1].shape[0] if per_dir == plain + 1 else 0
        self._run_layers = RNNBase._run_layers.__get__(self)
        self._run_projected_lstm = RNNBase._run_projected_lstm.__get__(self)


def _check_input(mode, input, hx, cx, layers):
    if input.dim() != 3:
        raise RuntimeError(f"{mode.lower()}: Expected input to be 3D, got {input.dim()}D instead")
    batch = input.shape[0] if layers.batch_first else input.shape[1]
    directions = 2 if layers.bidirectional else 1
    out_hidden = layers.proj_size or layers.hidden_size
    want_h = (layers.num_layers * directions, batch, out_hidden)
    if tuple(hx.shape) != want_h:
        raise RuntimeError(f"Expected hidden size {want_h}, got {list(hx.shape)}")
    if cx is not None and tuple(cx.shape) != want_h[:2] + (layers.hidden_size,):
        raise RuntimeError(f"Expected hidden size {want_h[:2] + (layers.hidden_size,)}, got {list(cx.shape)}")


def _run_padded(mode, input, hx, cx, layers):
    _check_input(mode, input, hx, cx, layers)
    return layers._run_layers(input, hx, cx)


def _run_packed(mode, data, batch_sizes, hx, cx, layers):
    """Packed input (sequences sorted longest first, as ``pack_padded_sequence`` leaves them): each
    sequence runs alone for its own length; the outputs are packed back in the same layout."""
    sizes = [int(b) for b in batch_sizes.tolist()]
    if any(later > earlier for earlier, later in zip(sizes, sizes[1:])) or (sizes and sizes[-1] < 1):
        raise RuntimeError("batch_sizes must be non-increasing and positive")
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    batch = sizes[0] if sizes else 0
    lengths = [sum(1 for s in sizes if s > b) for b in range(batch)]
    outputs, h_n, c_n = [], [], []
    for b, length in enumerate(lengths):
        rows = hookgrad.tensor(starts[:length] + b, dtype=hookgrad.int64)
        x = data.index_select(0, rows).unsqueeze(1)
        h0 = hx[:, b:b + 1]
        c0 = cx[:, b:b + 1] if cx is not None else None
        _check_input(mode, x, h0, c0, layers)
        out, h, c = layers._run_layers(x, h0, c0)
        outputs.append(out.squeeze(1))
        h_n.append(h)
        c_n.append(c)
    # packed row of (time t, sequence b) -> its row in the concatenated per-sequence outputs
    first_row = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    order = [first_row[b] + t for t, size in enumerate(sizes) for b in range(size)]
    packed = hookgrad.cat(outputs, 0).index_select(0, hookgrad.tensor(order, dtype=hookgrad.int64))
    return packed, hookgrad.cat(h_n, 1), (hookgrad.cat(c_n, 1) if cx is not None else None)


def _entry(mode):
    name = mode.lower()

    def run(input, *args):
        is_lstm = mode == "LSTM"
        # the packed form's second argument is batch_sizes, a tensor; the padded form's is hx (a
        # tensor for GRU/RNN too, so for those the third argument, params or hx, tells them apart)
        packed = isinstance(args[0], Tensor) and (is_lstm or isinstance(args[1], Tensor))
        if packed:
            batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional = args
            batch_first = False
        else:
            hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = args
        if is_lstm:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise RuntimeError("lstm expects two hidden states")
            h0, c0 = hx
        else:
            h0, c0 = hx, None
        layers = _Layers(mode, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
        if packed:
            out, h, c = _run_packed(mode, input, batch_sizes, h0, c0, layers)
        else:
            out, h, c = _run_padded(mode, input, h0, c0, layers)
        return (out, h, c) if is_lstm else (out, h)

    run.__name__ = run.__qualname__ = name
    run.__doc__ = (f"torch.{name}: the whole {mode} over a sequence (padded or packed), from a flat parameter "
                   "list; see the module docstring.")
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
        want_weight, want_per_sample = (self.next_functions[0][0] is not None,
                                        len(self.next_functions) > 1 and self.next_functions[1][0] is not None)
        if self.mode == "max":
            mask = wrap(self.nonempty.astype(grad._data.dtype)[:, None])
            if want_weight:
                d_weight = hookgrad.zeros(self.weight_shape, dtype=grad.dtype).scatter_add(
                    0, wrap(self.max_indices), grad * mask)
            return d_weight, None
        bag_grad = grad.index_select(0, wrap(self.bag_of))
        scale = wrap(self.scale.astype(grad._data.dtype))
        if per_sample is not None:
            scale = scale * per_sample
        if want_weight:
            d_weight = hookgrad.zeros(self.weight_shape, dtype=grad.dtype).index_add(
                0, wrap(self.indices), bag_grad * scale.unsqueeze(1))
        if want_per_sample:
            picked = rows.index_select(0, wrap(self.indices))
            d_per_sample = (bag_grad * picked).sum(1) * wrap(self.scale.astype(grad._data.dtype))
        return d_weight, d_per_sample


def _bags(indices, offsets, include_last_offset):
    n = indices.shape[0]
    starts = np.asarray(offsets, dtype=np.int64).reshape(-1)
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
    idx = indices._data.astype(np.int64)
    num_weights, width = weight.shape
    if idx.size and (idx.min() < 0 or idx.max() >= num_weights):
        bad = int(idx[(idx < 0) | (idx >= num_weights)][0])
        raise RuntimeError("Expected i < index_size to be true, but got false.  (index "
                           f"{bad} is out of range for a weight of {num_weights} rows)")
    if padding_idx is not None and padding_idx < 0:
        padding_idx += num_weights
    starts, ends = _bags(idx, offsets._data, include_last_offset)
    n_bags = starts.size
    bag_of = np.zeros(idx.size, dtype=np.int64)
    for b in range(n_bags):  # an index's bag: the last bag starting at or before it
        bag_of[starts[b]:ends[b]] = b
    keep = np.ones(idx.size, dtype=bool) if padding_idx is None else idx != padding_idx
    counts = np.bincount(bag_of[keep], minlength=n_bags)[:n_bags] if idx.size else np.zeros(n_bags, np.int64)
    w = weight._data
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
            contributions = contributions * per_sample_weights._data[:, None]
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
    index_dtype = indices._data.dtype
    if mode_name == "sum":
        fast_sum = out_dtype == np.float32 and padding_idx is None
        offset2bag = np.zeros(0, dtype=np.int64) if fast_sum else bag_of
        recorded = result.requires_grad  # with a backward to feed, one entry per bag; else one per offset
        bag_size = max_out = np.zeros(n_bags if recorded else offsets.shape[0], dtype=np.int64)
    else:
        offset2bag, bag_size = bag_of, counts
        max_out = max_indices if mode_name == "max" else counts
    return (result, wrap(offset2bag.astype(index_dtype)), wrap(bag_size.astype(index_dtype)),
            wrap(np.asarray(max_out).astype(index_dtype)))


def batch_norm_update_stats(input, running_mean, running_var, momentum):
    """The batch's per-channel mean and biased variance; the running statistics given are updated in
    place to ``(1 - momentum) * running + momentum * batch`` (with the unbiased variance), as in torch."""
    data = input._data
    axes = (0,) + tuple(range(2, data.ndim))
    count = data.size // data.shape[1]
    mean = data.mean(axis=axes)
    var = data.var(axis=axes)
    with hookgrad.no_grad():
        if running_mean is not None:
            running_mean.copy_(wrap(((1 - momentum) * running_mean._data + momentum * mean).astype(
                running_mean._data.dtype)))
        if running_var is not None:
            unbiased = var * (count / max(count - 1, 1))
            running_var.copy_(wrap(((1 - momentum) * running_var._data + momentum * unbiased).astype(
                running_var._data.dtype)))
    return wrap(mean.astype(data.dtype)), wrap(var.astype(data.dtype))
