"""Connectionist temporal classification loss: the forward (alpha) and backward (beta) recursions in
log space, one node (``CtcLossBackward0``) with torch's gradient, and torch's reductions on top.

torch's gradient with respect to ``log_probs`` is ``exp(log_probs) - (posterior of each class at
each step)``: the gradient through a log_softmax the caller is assumed to have applied, not the
plain derivative of the loss in ``log_probs``; it is reproduced here. Its own derivative is not
implemented in torch, and raises the same error here.
"""
from __future__ import annotations

import numpy as np

from ..._ops._base import GRAD, quiet_fp
from ..._ops._declare import no_derivative_node, record_op
from ..._tensor import Tensor, wrap
from ...autograd.graph import Node, SavedTensor

__all__ = ["ctc_loss"]

_CHECKING = "(while checking arguments for ctc_loss_allocate_outputs)"


def _logsumexp(*terms):
    stacked = np.stack(terms)
    top = stacked.max(0)
    safe = np.where(np.isfinite(top), top, 0.0)
    with quiet_fp():
        return np.log(np.exp(stacked - safe).sum(0)) + safe


def _extended(target, blank):
    """The target with blanks around and between its labels: blank, l1, blank, l2, ..., blank."""
    ext = np.full(2 * len(target) + 1, blank, dtype=np.int64)
    ext[1::2] = target
    return ext


def _skip_allowed(ext, blank):
    """Where the recursion may come from two states back: a label differing from the label before."""
    allowed = np.zeros(len(ext), dtype=bool)
    allowed[2:] = (ext[2:] != blank) & (ext[2:] != ext[:-2])
    return allowed


def _alpha(lp, ext, skip):
    steps, states = lp.shape[0], len(ext)
    la = np.full((steps, states), -np.inf)
    if steps == 0:
        return la
    la[0, 0] = lp[0, ext[0]]
    if states > 1:
        la[0, 1] = lp[0, ext[1]]
    for t in range(1, steps):
        prev = la[t - 1]
        one = np.concatenate(([-np.inf], prev[:-1]))
        two = np.where(skip, np.concatenate(([-np.inf, -np.inf], prev[:-2])), -np.inf)
        la[t] = lp[t, ext] + _logsumexp(prev, one, two)
    return la


def _beta(lp, ext, skip):
    """The backward recursion: the forward one run from the last step and the last state back. State s
    may move on to s + 2 where s + 2 may be reached from s by a skip."""
    skip_from = np.concatenate((skip[2:], [False, False]))
    return _alpha(lp[::-1], ext[::-1], skip_from[::-1])[::-1, ::-1]


def _sample_targets(targets, target_lengths, b, offsets):
    if targets.ndim == 2:
        return targets[b, :target_lengths[b]]
    return targets[offsets[b]:offsets[b] + target_lengths[b]]


class CtcLossBackward0(Node):
    __slots__ = ("input_lengths", "target_lengths", "blank", "zero_infinity", "offsets")
    saved_names = ("log_probs", "targets", "result0", "result1")
    saved_values = {"blank": lambda n: n.blank, "input_lengths": lambda n: tuple(n.input_lengths),
                    "target_lengths": lambda n: tuple(n.target_lengths), "zero_infinity": lambda n: n.zero_infinity}

    def apply(self, grads):
        log_probs, targets, nll, log_alpha = self.saved()
        lp_all = log_probs._ndarray.astype(np.float64)
        tg, nll_d = targets._ndarray, nll._ndarray.astype(np.float64)
        gout = grads[0]._ndarray.astype(np.float64)
        grad = np.zeros(lp_all.shape, dtype=np.float64)
        for b in range(lp_all.shape[1]):
            steps = self.input_lengths[b]
            if self.zero_infinity and nll_d[b] == np.inf:
                continue
            ext = _extended(_sample_targets(tg, self.target_lengths, b, self.offsets), self.blank)
            lp = lp_all[:steps, b]
            la = log_alpha._ndarray[b, :steps, :len(ext)].astype(np.float64)
            lb = _beta(lp, ext, _skip_allowed(ext, self.blank))
            # log of sum over the states of each class of alpha * beta, per step and class
            lcab = np.full(lp.shape, -np.inf)
            both = la + lb
            for s, cls in enumerate(ext):
                lcab[:, cls] = _logsumexp(lcab[:, cls], both[:, s])
            with quiet_fp():
                grad[:steps, b] = (np.exp(lp) - np.exp(lcab + nll_d[b] - lp)) * gout[b]
        result = wrap(grad.astype(log_probs._ndarray.dtype))
        if GRAD.enabled and (grads[0]._requires_grad or log_probs._requires_grad):
            result = wrap(result._ndarray)
            record_op(_CtcDoubleBackward, (grads[0], log_probs), result)
        return result, None


# torch's node for a gradient that has no derivative of its own
_CtcDoubleBackward = no_derivative_node("_ctc_loss_backward")


def _lengths(value, name):
    if isinstance(value, Tensor):
        return [int(v) for v in value._ndarray.reshape(-1)]
    if isinstance(value, (int, np.integer)):
        return [int(value)]
    return [int(v) for v in value]


def _ctc_nll(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    """Per-sample negative log likelihoods (N,) of a (T, N, C) ``log_probs``, recorded as one node."""
    lp_all = log_probs._ndarray
    steps, batch, classes = lp_all.shape
    if len(input_lengths) != batch:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(target_lengths) != batch:
        raise RuntimeError("target_lengths must be of size batch_size")
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    tg = targets._ndarray
    offsets = np.concatenate(([0], np.cumsum(target_lengths)[:-1])).astype(np.int64)
    if tg.ndim == 1:
        if tg.shape[0] != sum(target_lengths):
            raise RuntimeError(f"Expected tensor to have size {sum(target_lengths)} at dimension 0, but got size "
                               f"{tg.shape[0]} for argument #2 'targets' {_CHECKING}")
    else:
        longest = max(target_lengths, default=0)
        if tg.shape[1] < longest:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension 1, but got size "
                               f"{tg.shape[1]} for argument #2 'targets' {_CHECKING}")
    for length in input_lengths:
        if length < 0:
            raise RuntimeError(f"Expected input_lengths to have value at least 0, but got value {length} {_CHECKING}")
        if length > steps:
            raise RuntimeError(f"Expected input_lengths to have value at most {steps}, but got value {length} "
                               f"{_CHECKING}")
    for length in target_lengths:
        if length < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value {length} "
                               f"{_CHECKING}")
    states = 2 * max(max(target_lengths, default=0), 0) + 1
    log_alpha = np.full((batch, steps, states), -np.inf)
    nll = np.empty(batch)
    lp64 = lp_all.astype(np.float64)
    for b in range(batch):
        ext = _extended(_sample_targets(tg, target_lengths, b, offsets), blank)
        length = input_lengths[b]
        la = _alpha(lp64[:length, b], ext, _skip_allowed(ext, blank))
        log_alpha[b, :length, :len(ext)] = la
        if length == 0:
            nll[b] = 0.0 if len(ext) == 1 else np.inf
            continue
        ends = la[-1, -1:] if len(ext) == 1 else la[-1, -2:]
        nll[b] = -_logsumexp(*ends)
    result = wrap(nll.astype(lp_all.dtype))
    if GRAD.enabled and log_probs._requires_grad:
        node = record_op(CtcLossBackward0, (log_probs,), result)
        node.input_lengths, node.target_lengths = list(input_lengths), list(target_lengths)
        node.blank, node.zero_infinity, node.offsets = blank, bool(zero_infinity), offsets
        # torch's order: log_probs, targets, then the op's two results (the losses and log alpha)
        node._saved = (SavedTensor(log_probs), SavedTensor(targets), SavedTensor(result, is_output=True),
                       SavedTensor(wrap(log_alpha.astype(lp_all.dtype))))
    return result


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """The CTC loss of ``targets`` under ``log_probs`` ((T, N, C) or (T, C)), reduced as torch does:
    'mean' averages the per-sample losses divided by their target lengths."""
    import hookgrad
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    in_lens = _lengths(input_lengths, "input_lengths")
    tg_lens = _lengths(target_lengths, "target_lengths")
    res = _ctc_nll(lp, targets, in_lens, tg_lens, blank, zero_infinity)
    if zero_infinity:
        res = hookgrad.where(res == float("inf"), hookgrad.zeros((), dtype=res.dtype), res)
    if reduction == "mean":
        lengths = hookgrad.tensor(tg_lens, dtype=res.dtype).clamp_min(1)
        return (res / lengths).mean()
    if reduction == "sum":
        return res.sum()
    return res if batched else res.squeeze(0)
