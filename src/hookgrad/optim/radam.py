"""RAdam (rectified Adam), following PyTorch's single-tensor update rule:

    step += 1;  g = -grad if maximize else grad
    weight decay: p *= 1 - lr * wd (decoupled)  or  g += wd * p
    m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
    rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 * step * beta2**step / (1 - beta2**step)
    rho_t > 5:  p -= lr * m / (1 - beta1**step) * sqrt(1 - beta2**step) / (sqrt(v) + eps) * rect
    else:       p -= lr * m / (1 - beta1**step)
    with rect = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)).
"""
from __future__ import annotations

import numpy as np

from .adam import _adam_group_values, _check_hyperparameters, _update_moments
from .optimizer import Optimizer, _builtin_defaults, _bump, _no_grad_step

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam with PyTorch's options and defaults (``lr=1e-3, betas=(0.9, 0.999), eps=1e-8``)."""

    _group_options_added_later = dict(foreach=None, maximize=False, differentiable=False,
                                      decoupled_weight_decay=False, capturable=False)
    _scalar_state_keys = ("step",)
    _zero_state_keys = ("exp_avg", "exp_avg_sq")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_hyperparameters(lr, betas, eps, weight_decay)
        super().__init__(params, _builtin_defaults(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                                   maximize=maximize, foreach=foreach, capturable=capturable,
                                                   decoupled_weight_decay=decoupled_weight_decay,
                                                   differentiable=differentiable))

    @_no_grad_step
    def step(self, closure=None):
        """Perform one optimization step; returns the closure's loss if one was given."""
        for group in self.param_groups:
            beta1, beta2, lr, weight_decay, eps = _adam_group_values(group)
            decoupled = group["decoupled_weight_decay"]
            for p, state, grad in self._grads_to_apply(group, weight_decay, decoupled=decoupled, lr=lr):
                param = p._ndarray
                step = float(state["step"]._ndarray)
                m, v = _update_moments(state, grad, beta1, beta2, np.empty_like(param))
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                corrected_m = m / bias_correction1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    adaptive_lr = (bias_correction2 ** 0.5) / (np.sqrt(v) + eps)
                    param -= corrected_m * lr * adaptive_lr * rect
                else:
                    param -= corrected_m * lr
                _bump(p)


from ._functional import radam  # noqa: E402 - the functional form, torch.optim.radam.radam
__all__ += ["radam"]
