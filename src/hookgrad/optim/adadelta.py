"""Adadelta, following PyTorch's single-tensor update rule:

    step += 1;  g = -grad if maximize else grad;  g += wd * p
    sq = rho * sq + (1 - rho) * g * g
    delta = sqrt(acc + eps) / sqrt(sq + eps) * g
    acc = rho * acc + (1 - rho) * delta * delta;  p -= lr * delta
"""
from __future__ import annotations

import numpy as np

from .optimizer import (Optimizer, _as_float, _builtin_defaults, _bump, _check_lr, _check_non_negative,
                        _no_grad_step)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta with PyTorch's options and defaults (``lr=1.0, rho=0.9, eps=1e-6``)."""

    _group_options_added_later = dict(foreach=None, maximize=False, differentiable=False, capturable=False)
    _scalar_state_keys = ("step",)
    _zero_state_keys = ("square_avg", "acc_delta")

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_non_negative(eps=eps, weight_decay=weight_decay)
        super().__init__(params, _builtin_defaults(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                                   maximize=maximize, capturable=capturable, foreach=foreach,
                                                   differentiable=differentiable))

    @_no_grad_step
    def step(self, closure=None):
        """Perform one optimization step; returns the closure's loss if one was given."""
        for group in self.param_groups:
            lr = _as_float(group["lr"])
            rho, eps, weight_decay = group["rho"], group["eps"], group["weight_decay"]
            for p, state, grad in self._grads_to_apply(group, weight_decay):
                sq, acc = state["square_avg"]._ndarray, state["acc_delta"]._ndarray
                sq *= rho
                sq += (1 - rho) * grad * grad
                std = np.sqrt(sq + eps)
                delta = np.sqrt(acc + eps)
                delta /= std
                delta *= grad
                acc *= rho
                acc += (1 - rho) * delta * delta
                _bump(state["square_avg"])
                _bump(state["acc_delta"])
                p._ndarray += -lr * delta
                _bump(p)


from ._functional import adadelta  # noqa: E402 - the functional form, torch.optim.adadelta.adadelta
__all__ += ["adadelta"]
