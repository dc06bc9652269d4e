"""``torch.nn.utils.rnn``: variable-length batches as a ``PackedSequence`` and back.

A packed batch stores, time step after time step, the rows of the sequences still running at that
step (longest sequence first), so ``data`` has one row per real (non-padding) element and
``batch_sizes[t]`` says how many sequences are still running at step ``t``. Everything is built from
differentiable hookgrad ops, so gradients flow through packing and unpacking.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

import hookgrad
from ..._ops._base import GRAD, NONE_EDGE, edge
from ..._ops.inplace import CopyBackwards
from ..._ops.pointwise import _mismatch, _padded
from ..._ops.views import CopySlices, Geometry
from ...autograd import _dual, anomaly_mode as _anomaly, profiler as _profiler
from ..._ops._declare import record_op
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """Holds the packed rows ``data`` and the ``batch_sizes`` per time step.

    ``sorted_indices[i]`` is the original batch position of the i-th longest sequence (None when
    the batch was packed already sorted); ``unsorted_indices`` is its inverse.
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else self._with_data(data)

    def cpu(self):
        return self

    def double(self):
        return self.to(dtype=hookgrad.float64)

    def float(self):
        return self.to(dtype=hookgrad.float32)

    def half(self):
        return self.to(dtype=hookgrad.float16)

    def long(self):
        return self.to(dtype=hookgrad.int64)

    def int(self):
        return self.to(dtype=hookgrad.int32)

    def detach(self):
        return self._with_data(self.data.detach())

    @property
    def is_cuda(self) -> bool:
        return False

    def is_pinned(self) -> bool:
        return False


def invert_permutation(permutation):
    """The permutation that undoes ``permutation`` (None stays None)."""
    if permutation is None:
        return None
    order = np.asarray(permutation.tolist(), dtype=np.int64)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return hookgrad.tensor(inverse, dtype=hookgrad.int64)


def _lengths_list(lengths) -> list[int]:
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D "
                               f"{lengths.dtype} tensor")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def _pack_time_major(padded: Tensor, batch_sizes: list[int], order: list[int]) -> Tensor:
    """Rows of ``padded`` (time, batch, *) in packed order: per step, the still-running sequences."""
    rows = []
    for t, size in enumerate(batch_sizes):
        index = hookgrad.tensor(order[:size], dtype=hookgrad.int64)
        rows.append(padded[t].index_select(0, index))
    return hookgrad.cat(rows, 0)


class PackPaddedSequenceBackward0(Node):
    """``_pack_padded_sequence``'s node: the packed rows' gradients go back to their padded places
    (zeros at the padding)."""

    __slots__ = ("input_sizes", "batch_first")
    saved_names = ("result1",)
    saved_values = {"input_sym_sizes": lambda n: n.input_sizes, "batch_first": lambda n: n.batch_first}

    def apply(self, grads):
        (batch_sizes,) = self.saved()
        grad = grads[0]
        sizes = list(self.input_sizes)
        if self.batch_first:
            sizes[0], sizes[1] = sizes[1], sizes[0]
        grad_input = hookgrad.zeros(sizes, dtype=grad.dtype)
        offset = 0
        for t, size in enumerate(int(b) for b in batch_sizes.tolist()):
            grad_input[t].narrow(0, 0, size).copy_(grad.narrow(0, offset, size))
            offset += size
        return (grad_input.transpose(0, 1) if self.batch_first else grad_input,)


def _pack_padded(input: Tensor, lengths: list[int], batch_first: bool):
    """ATen's ``_pack_padded_sequence``: (packed rows, batch_sizes), one graph node."""
    data = input._ndarray.swapaxes(0, 1) if batch_first else input._ndarray
    if data.size == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if len(lengths) != data.shape[1]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={data.shape[1]})")
    if lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if any(a < b for a, b in zip(lengths, lengths[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                           "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                           "pack_sequence to sidestep this requirement if you do not need ONNX "
                           "exportability.")
    if lengths[0] > data.shape[0]:
        raise RuntimeError(f"Expected sequence length to be larger than or equal to {lengths[0]}, "
                           f"but got {data.shape[0]}")
    sizes = _batch_sizes(lengths)
    packed = wrap(np.concatenate([data[t, :size] for t, size in enumerate(sizes)], 0))
    batch_sizes = hookgrad.tensor(sizes, dtype=hookgrad.int64)
    if GRAD.enabled and input.requires_grad:
        node = record_op(PackPaddedSequenceBackward0, (input,), packed)
        node.input_sizes, node.batch_first = tuple(input.shape), batch_first
        node.save(batch_sizes)
    return packed, batch_sizes


def _batch_sizes(sorted_lengths: list[int]) -> list[int]:
    return [sum(1 for n in sorted_lengths if n > t) for t in range(sorted_lengths[0])]


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (``T x B x *``, or ``B x T x *`` with ``batch_first``) of the given lengths:
    as torch, an ``index_select`` into length order unless ``enforce_sorted``, then one
    ``PackPaddedSequenceBackward0`` node."""
    lengths = _lengths_list(lengths)
    if enforce_sorted:
        sorted_indices = None
    else:
        # a stable sort, longest first: equal lengths keep their batch order
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        lengths = [lengths[i] for i in order]
        sorted_indices = hookgrad.tensor(order, dtype=hookgrad.int64)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _pack_padded(input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None):
    """Undo ``pack_padded_sequence``: returns (padded batch, lengths as an int64 tensor), original order.
    Built as ATen builds it: a tensor full of ``padding_value`` into which each run of steps with
    the same batch size is copied (so the graph has torch's slices, views and CopySlices)."""
    data, batch_sizes = sequence.data, [int(v) for v in sequence.batch_sizes.tolist()]
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
    else:
        total_length = steps
    batch = batch_sizes[0]
    feature_shape = tuple(data.shape[1:])
    output = hookgrad.full((total_length, batch) + feature_shape, padding_value, dtype=data.dtype)
    copy_rows = _copy_rows_direct if _unwatched(data) else _copy_rows
    offset, prev_size, prev_i = 0, batch, 0
    for i in range(steps + 1):
        size = batch_sizes[i] if i < steps else 0
        if size != prev_size:
            count = prev_size * (i - prev_i)
            rows = data.narrow(0, offset, count).view((i - prev_i, prev_size) + feature_shape)
            copy_rows(output, prev_i, i - prev_i, prev_size, rows)
            offset += count
            prev_i = i
        prev_size = size
    sorted_lengths = [sum(1 for size in batch_sizes if size > b) for b in range(batch)]
    if batch_first:
        output = output.transpose(0, 1)
    lengths = hookgrad.tensor(sorted_lengths, dtype=hookgrad.int64)
    if sequence.unsorted_indices is not None:
        unsorted = sequence.unsorted_indices
        return output.index_select(0 if batch_first else 1, unsorted), lengths[unsorted]
    return output, lengths


def _copy_rows(output: Tensor, step: int, steps: int, size: int, rows: Tensor) -> None:
    """``output[step:step + steps, :size] = rows`` as ATen writes it: ``copy_`` into a view."""
    output.narrow(0, step, steps).narrow(1, 0, size).copy_(rows)


def _unwatched(data) -> bool:
    """Whether ``_copy_rows_direct`` may stand in for ``_copy_rows``: nothing watches the ops one
    by one (a profile lists each narrow and copy_, anomaly mode traces the frames, forward AD
    carries tangents) and ``data`` is a plain floating tensor."""
    return (type(data) is Tensor and not data.__dict__ and data._ndarray.dtype.kind == "f"
            and not _profiler._active and not _anomaly.is_anomaly_enabled() and not _dual.has_tangents())


def _copy_rows_direct(output: Tensor, step: int, steps: int, size: int, rows: Tensor) -> None:
    """``_copy_rows`` without the public op path: writes the rows into ``output``'s array and gives
    ``output`` the history the in-place copy into its view gives it, a ``CopySlices`` whose op is
    ``CopyBackwards`` (the view's own temporary nodes, which no edge reaches, are not made)."""
    target = output._ndarray[step:step + steps, :size]
    np.copyto(target, rows._ndarray)
    output._version_counter[0] += 1
    if GRAD.enabled and rows._requires_grad:
        copy = CopyBackwards((NONE_EDGE, edge(rows)))
        copy.shape = copy.src_shape = target.shape
        copy.dtype = copy.src_dtype = target.dtype
        node = CopySlices((edge(output), copy.next_functions[1]))
        node.geometry = Geometry(output._ndarray, target)
        node.fn = copy
        output._after_inplace(node)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack tensors of shape ``L_i x *`` into ``T x B x *`` (``B x T x *`` with batch_first), padded."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(seq.size(0) for seq in sequences)
    trailing = tuple(sequences[0].shape[1:])
    padded = []
    for seq in sequences:
        if tuple(seq.shape[1:]) != trailing:
            # each sequence is copied into a slot shaped by the first one: it must broadcast to that slot
            slot = (seq.size(0), *trailing)
            mismatch = _mismatch(*_padded(slot, tuple(seq.shape)))
            if mismatch:
                raise RuntimeError(mismatch)
            seq = seq.expand(slot)
        missing = longest - seq.size(0)
        if missing:
            fill = hookgrad.full((missing, *seq.shape[1:]), padding_value, dtype=seq.dtype)
            seq = hookgrad.cat([seq, fill] if padding_side == "right" else [fill, seq], 0)
        padded.append(seq)
    return hookgrad.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list:
    """The per-sequence tensors of a padded batch, each cut to its length."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[b, :n] for b, n in enumerate(_lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors of shape ``L_i x *``."""
    lengths = [seq.size(0) for seq in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of tensors ``pack_sequence`` was given."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
