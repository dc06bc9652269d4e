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
from ..._tensor import Tensor

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


def _batch_sizes(sorted_lengths: list[int]) -> list[int]:
    return [sum(1 for n in sorted_lengths if n > t) for t in range(sorted_lengths[0])]


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (``T x B x *``, or ``B x T x *`` with ``batch_first``) of the given lengths."""
    lengths = _lengths_list(lengths)
    if batch_first:
        input = input.transpose(0, 1)
    if len(lengths) != input.size(1):
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={input.size(1)})")
    if any(n <= 0 for n in lengths):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                               "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                               "pack_sequence to sidestep this requirement if you do not need ONNX "
                               "exportability.")
        order = list(range(len(lengths)))
        sorted_indices = None
    else:
        # a stable sort, longest first: equal lengths keep their batch order
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        sorted_indices = hookgrad.tensor(order, dtype=hookgrad.int64)
    sorted_lengths = [lengths[i] for i in order]
    if sorted_lengths[0] > input.size(0):
        raise RuntimeError(f"Expected sequence length to be larger than or equal to {sorted_lengths[0]}, "
                           f"but got {input.size(0)}")
    batch_sizes = _batch_sizes(sorted_lengths)
    data = _pack_time_major(input, batch_sizes, order)
    return PackedSequence(data, hookgrad.tensor(batch_sizes, dtype=hookgrad.int64), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None):
    """Undo ``pack_padded_sequence``: returns (padded batch, lengths as an int64 tensor), original order."""
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
    rows, offset = [], 0
    for size in batch_sizes:
        step = data[offset:offset + size]
        offset += size
        if size < batch:
            fill = hookgrad.full((batch - size, *feature_shape), padding_value, dtype=data.dtype)
            step = hookgrad.cat([step, fill], 0)
        rows.append(step)
    for _ in range(total_length - steps):
        rows.append(hookgrad.full((batch, *feature_shape), padding_value, dtype=data.dtype))
    padded = hookgrad.stack(rows, 0)
    sorted_lengths = [sum(1 for size in batch_sizes if size > b) for b in range(batch)]
    lengths = sorted_lengths
    if sequence.unsorted_indices is not None:
        unsorted = sequence.unsorted_indices
        padded = padded.index_select(1, unsorted)
        lengths = [sorted_lengths[i] for i in unsorted.tolist()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, hookgrad.tensor(lengths, dtype=hookgrad.int64)


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
    padded = []
    for seq in sequences:
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
