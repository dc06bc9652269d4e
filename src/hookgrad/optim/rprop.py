"""Rprop (resilient backpropagation), following PyTorch's single-tensor update rule:

    step += 1;  g = -grad if maximize else grad
    s = sign(g * prev) mapped to etaplus (> 0), etaminus (< 0) or 1 (== 0)
    step_size = clamp(step_size * s, step_size_min, step_size_max)
    g = 0 where the sign flipped;  p -= sign(g) * step_size;  prev = g
"""
from __future__ import annotations

import numpy as np

from .optimizer import (Optimizer, _as_float, _builtin_defaults, _bump, _check_lr,
                        _new_step_counter, _no_grad_step, _wrap)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Rprop with PyTorch's options and defaults (``lr=1e-2, etas=(0.5, 1.2),
    step_sizes=(1e-6, 50)``)."""

    _group_options_added_later = dict(foreach=None, maximize=False, differentiable=False, capturable=False)
    _scalar_state_keys = ("step",)

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False,
                 foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, _builtin_defaults(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                                                   maximize=maximize, differentiable=differentiable,
                                                   capturable=capturable))

    @staticmethod
    def _init_state(state, p, group):
        state["step"] = _new_step_counter()
        state["prev"] = _wrap(np.zeros_like(p._ndarray))
        state["step_size"] = _wrap(np.full_like(p.grad._ndarray, _as_float(group["lr"])))

    @_no_grad_step
    def step(self, closure=None):
        """Perform one optimization step; returns the closure's loss if one was given."""
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p, state, grad in self._grads_to_apply(group):
                prev, step_size = state["prev"]._ndarray, state["step_size"]._ndarray
                agreement = np.sign(grad * prev)
                factor = np.ones_like(agreement)
                factor[agreement > 0] = etaplus
                factor[agreement < 0] = etaminus
                step_size *= factor
                np.clip(step_size, step_size_min, step_size_max, out=step_size)
                grad = grad.copy()
                grad[agreement < 0] = 0  # the sign flipped: no move this step
                p._ndarray -= np.sign(grad) * step_size
                prev[...] = grad
                for t in (p, state["prev"], state["step_size"]):
                    _bump(t)


from ._functional import rprop  # noqa: E402 - the functional form, torch.optim.rprop.rprop
__all__ += ["rprop"]
