"""NAdam (Adam with Nesterov momentum), following PyTorch's single-tensor update rule:

    step += 1;  g = -grad if maximize else grad
    weight decay: p *= 1 - lr * wd (decoupled)  or  g += wd * p
    mu_t = beta1 * (1 - 0.5 * 0.96 ** (step * momentum_decay));  mu_{t+1} likewise with step + 1
    mu_product *= mu_t
    m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
    denom = sqrt(v / (1 - beta2**step)) + eps
    p += -lr * (1 - mu_t) / (1 - mu_product) * g / denom
    p += -lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / denom

State per parameter: ``step`` and ``mu_product`` (0-d float tensors, as PyTorch keeps them),
``exp_avg`` and ``exp_avg_sq``.
"""
from __future__ import annotations

import numpy as np

from .adam import _adam_group_values, _check_hyperparameters, _update_moments
from .optimizer import (Optimizer, _builtin_defaults, _bump, _check_non_negative, _new_step_counter,
                        _no_grad_step, _scalar_state, _zeros_like_params)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam with PyTorch's options and defaults (``lr=2e-3, betas=(0.9, 0.999), eps=1e-8,
    momentum_decay=4e-3``)."""

    _group_options_added_later = dict(maximize=False, foreach=None, capturable=False, differentiable=False,
                                      decoupled_weight_decay=False)
    _scalar_state_keys = ("step", "mu_product")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_hyperparameters(lr, betas, eps, weight_decay)
        _check_non_negative(momentum_decay=momentum_decay)
        super().__init__(params, _builtin_defaults(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                                   momentum_decay=momentum_decay,
                                                   decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                                                   foreach=foreach, capturable=capturable,
                                                   differentiable=differentiable))

    @staticmethod
    def _init_state(state, p, group):
        state["step"] = _new_step_counter()
        state["mu_product"] = _scalar_state(1.0)
        _zeros_like_params(state, p, "exp_avg", "exp_avg_sq")

    @_no_grad_step
    def step(self, closure=None):
        """Perform one optimization step; returns the closure's loss if one was given."""
        for group in self.param_groups:
            beta1, beta2, lr, weight_decay, eps = _adam_group_values(group)
            momentum_decay = group["momentum_decay"]
            decoupled = group["decoupled_weight_decay"]
            for p, state, grad in self._grads_to_apply(group, weight_decay, decoupled=decoupled, lr=lr,
                                                       capturable_names="params, mu_products and state_steps"):
                param = p._ndarray
                mu_product_t = state["mu_product"]
                step = float(state["step"]._ndarray)
                bias_correction2 = 1 - beta2 ** step
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                # the product lives in the counter's own (usually float32) precision, as in PyTorch
                mu_product_t._ndarray *= mu_product_t._ndarray.dtype.type(mu)
                _bump(mu_product_t)
                mu_product = float(mu_product_t._ndarray)
                m, v = _update_moments(state, grad, beta1, beta2, np.empty_like(param))
                denom = np.sqrt(v / bias_correction2)
                denom += eps
                mu_product_next = mu_product * mu_next
                param += (-lr * (1.0 - mu) / (1.0 - mu_product)) * (grad / denom)
                param += ((-lr * mu_next) / (1.0 - mu_product_next)) * (m / denom)
                _bump(p)


from ._functional import nadam  # noqa: E402 - the functional form, torch.optim.nadam.nadam
__all__ += ["nadam"]
