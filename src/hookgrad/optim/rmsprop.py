"""RMSprop with PyTorch's update rule:

    g = -grad if maximize else grad;  g += weight_decay * p
    sq = alpha * sq + (1 - alpha) * g * g
    centered: ga = lerp(ga, g, 1 - alpha);  avg = sqrt(sq - ga * ga) + eps,  else avg = sqrt(sq) + eps
    momentum > 0: buf = momentum * buf + g / avg;  p -= lr * buf,  else p -= lr * g / avg
"""
from __future__ import annotations

import numpy as np

from .adam import _lerp_
from .optimizer import (Optimizer, _as_float, _builtin_defaults, _bump, _check_lr, _check_non_negative,
                        _new_step_counter, _no_grad_step, _zeros_like_params)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop with PyTorch's options and defaults (``lr=1e-2, alpha=0.99, eps=1e-8``)."""

    _group_options_added_later = dict(momentum=0, centered=False, foreach=None, maximize=False,
                                      differentiable=False, capturable=False)
    _scalar_state_keys = ("step",)

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        _check_non_negative(eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        super().__init__(params, _builtin_defaults(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                                                   weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                                                   maximize=maximize, differentiable=differentiable))

    @staticmethod
    def _init_state(state, p, group):
        state["step"] = _new_step_counter()
        _zeros_like_params(state, p, "square_avg")
        if group["momentum"] > 0:
            _zeros_like_params(state, p, "momentum_buffer")
        if group["centered"]:
            _zeros_like_params(state, p, "grad_avg")

    @_no_grad_step
    def step(self, closure=None):
        """Perform one optimization step; returns the closure's loss if one was given."""
        for group in self.param_groups:
            lr = _as_float(group["lr"])
            alpha, eps = group["alpha"], group["eps"]
            weight_decay, momentum = group["weight_decay"], group["momentum"]
            centered = group["centered"]
            for p, state, grad in self._grads_to_apply(group, weight_decay):
                param = p._ndarray
                square_avg = state["square_avg"]
                sq = square_avg._ndarray
                sq *= alpha
                sq += (1 - alpha) * grad * grad
                _bump(square_avg)
                if centered:
                    grad_avg = state["grad_avg"]
                    _lerp_(grad_avg._ndarray, grad, 1 - alpha)
                    _bump(grad_avg)
                    ga = grad_avg._ndarray
                    avg = sq + (-1) * ga * ga
                    np.sqrt(avg, out=avg)
                else:
                    avg = np.sqrt(sq)
                avg += eps
                if momentum > 0:
                    buf_t = state["momentum_buffer"]
                    buf = buf_t._ndarray
                    buf *= momentum
                    buf += grad / avg
                    _bump(buf_t)
                    param -= lr * buf
                else:
                    update = grad * -lr
                    update /= avg
                    param += update
                _bump(p)


from ._functional import rmsprop  # noqa: E402 - the functional form, torch.optim.rmsprop.rmsprop
__all__ += ["rmsprop"]
