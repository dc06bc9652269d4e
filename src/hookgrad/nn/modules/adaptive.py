"""AdaptiveLogSoftmaxWithLoss: a softmax over many classes split into a frequent-class head and
smaller tail clusters (Grave et al., "Efficient softmax approximation for GPUs")."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

import hookgrad

from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """The head scores the ``cutoffs[0]`` most frequent classes plus one entry per tail cluster; a
    class in cluster ``i`` gets the head's cluster log-probability plus its log-probability inside
    the cluster, computed from a projection ``div_value**(i+1)`` times narrower than the input."""

    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0, head_bias: bool = False,
                 device=None, dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, dtype=dtype),
                                        Linear(hidden, size, bias=False, dtype=dtype)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for projection, output in self.tail:
            projection.reset_parameters()
            output.reset_parameters()

    def forward(self, input_, target_):
        if input_.dim() not in (1, 2):
            raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs with size",
                               input_.size()) if target_.dim() == 1 else RuntimeError(
                "0D target tensor expects 1D input tensors, but found inputs with size", input_.size())
        if target_.dim() == 1 and input_.dim() != 2:
            raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs with size",
                               input_.size())
        if target_.dim() == 0 and input_.dim() != 1:
            raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs with size",
                               input_.size())
        if target_.dim() > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        if input.size(0) != target.size(0):
            raise RuntimeError("Input and target should have the same size in the batch dimension.")
        labels = np.asarray(target.tolist(), dtype=np.int64).reshape(-1)
        batch = labels.shape[0]
        head_index = labels.copy()
        output = hookgrad.zeros(batch, dtype=input.dtype)
        used = 0
        bounds = [0] + self.cutoffs
        for i, (low, high) in enumerate(zip(bounds, bounds[1:])):
            rows = np.nonzero((labels >= low) & (labels < high))[0]
            if rows.size == 0:
                continue
            used += rows.size
            if i == 0:
                continue
            row_index = hookgrad.tensor(rows, dtype=hookgrad.int64)
            head_index[rows] = self.shortlist_size + i - 1
            cluster_logprob = F.log_softmax(self.tail[i - 1](input.index_select(0, row_index)), dim=1)
            relative = hookgrad.tensor(labels[rows] - low, dtype=hookgrad.int64).unsqueeze(1)
            output = output.index_add(0, row_index, cluster_logprob.gather(1, relative).squeeze(1))
        if used != batch:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{labels.min()}, {labels.max()}] were found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        chosen = hookgrad.tensor(head_index, dtype=hookgrad.int64).unsqueeze(1)
        output = output + head_logprob.gather(1, chosen).squeeze(1)
        loss = (-output).mean()
        if not batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input, head_output):
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return hookgrad.cat(parts, 1)

    def log_prob(self, input):
        """Log-probabilities of every class: (batch, n_classes), or (n_classes,) for one sample."""
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input):
        """The most likely class of each sample."""
        return self.log_prob(input).argmax(dim=-1)
