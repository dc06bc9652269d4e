"""Adagrad with PyTorch's update rule:

    step += 1;  g = -grad if maximize else grad;  g += weight_decay * p
    clr = lr / (1 + (step - 1) * lr_decay)
    sum += g * g;  p -= clr * g / (sqrt(sum) + eps)

As in PyTorch, the state (``step`` and ``sum``) of every parameter is created by the constructor.
"""
from __future__ import annotations

import numpy as np

from .optimizer import (Optimizer, _as_float, _builtin_defaults, _bump, _check_lr, _check_non_negative,
                        _new_step_counter, _no_grad_step, _wrap)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad with PyTorch's options and defaults (``lr=1e-2, eps=1e-10``)."""

    _group_options_added_later = dict(foreach=None, maximize=False, differentiable=False, fused=None)
    _scalar_state_keys = ("step",)

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr)
        _check_non_negative(lr_decay=lr_decay, weight_decay=weight_decay,
                            initial_accumulator_value=initial_accumulator_value, eps=eps)
        super().__init__(params, _builtin_defaults(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                                   initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                                                   maximize=maximize, differentiable=differentiable, fused=fused))
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(self.state[p], p, group)

    def _init_state(self, state, p, group):
        # the constructor's value, for parameters added later too (as torch does)
        state["step"] = _new_step_counter()
        state["sum"] = _wrap(np.full_like(p._ndarray, self.defaults["initial_accumulator_value"]))


    def share_memory(self):
        """Kept for API compatibility; NumPy arrays need no sharing step here."""

    @_no_grad_step
    def step(self, closure=None):
        """Perform one optimization step; returns the closure's loss if one was given."""
        for group in self.param_groups:
            lr = _as_float(group["lr"])
            weight_decay, lr_decay, eps = group["weight_decay"], group["lr_decay"], group["eps"]
            # torch's Adagrad has no capturable check
            for p, state, grad in self._grads_to_apply(group, weight_decay, capturable_names=None):
                step = float(state["step"]._ndarray)
                clr = lr / (1 + (step - 1) * lr_decay)
                sum_t = state["sum"]
                s = sum_t._ndarray
                s += grad * grad
                _bump(sum_t)
                std = np.sqrt(s)
                std += eps
                update = grad * -clr
                update /= std
                p._ndarray += update
                _bump(p)


from ._functional import adagrad  # noqa: E402 - the functional form, torch.optim.adagrad.adagrad
__all__ += ["adagrad"]
