"""Adamax (Adam with the infinity norm), following PyTorch's single-tensor update rule:

    step += 1;  g = -grad if maximize else grad;  g += wd * p
    m = lerp(m, g, 1 - beta1);  u = max(beta2 * u, |g| + eps)
    p -= lr / (1 - beta1**step) * m / u
"""
from __future__ import annotations

import numpy as np

from .adam import _adam_group_values, _check_hyperparameters, _lerp_
from .optimizer import Optimizer, _builtin_defaults, _bump, _no_grad_step

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax with PyTorch's options and defaults (``lr=2e-3, betas=(0.9, 0.999), eps=1e-8``)."""

    _group_options_added_later = dict(foreach=None, maximize=False, differentiable=False, capturable=False)
    _scalar_state_keys = ("step",)
    _zero_state_keys = ("exp_avg", "exp_inf")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_hyperparameters(lr, betas, eps, weight_decay)
        super().__init__(params, _builtin_defaults(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                                   foreach=foreach, maximize=maximize, differentiable=differentiable,
                                                   capturable=capturable))

    @_no_grad_step
    def step(self, closure=None):
        """Perform one optimization step; returns the closure's loss if one was given."""
        for group in self.param_groups:
            beta1, beta2, lr, weight_decay, eps = _adam_group_values(group)
            for p, state, grad in self._grads_to_apply(group, weight_decay):
                m, u = state["exp_avg"]._ndarray, state["exp_inf"]._ndarray
                _lerp_(m, grad, 1 - beta1)
                u *= beta2
                np.maximum(u, np.abs(grad) + eps, out=u)
                _bump(state["exp_avg"])
                _bump(state["exp_inf"])
                clr = lr / (1 - beta1 ** float(state["step"]._ndarray))
                p._ndarray += -clr * (m / u)
                _bump(p)


from ._functional import adamax  # noqa: E402 - the functional form, torch.optim.adamax.adamax
__all__ += ["adamax"]
