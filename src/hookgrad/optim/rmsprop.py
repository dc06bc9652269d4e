"""RMSprop with PyTorch's update rule:

    g = -grad if maximize else grad;  g += weight_decay * p
    sq = alpha * sq + (1 - alpha) * g * g
    centered: ga = lerp(ga, g, 1 - alpha);  avg = sqrt(sq - ga * ga) + eps,  else avg = sqrt(sq) + eps
    momentum > 0: buf = momentum * buf + g / avg;  p -= lr * buf,  else p -= lr * g / avg
"""
from __future__ import annotations

import numpy as np

from .adam import _lerp_
from ._cpu_flags import check_not_capturable
from .optimizer import (Optimizer, _as_float, _bump, _call_closure, _check_not_differentiable,
                        _new_step_counter, _no_grad_step, _tensor_cls, _wrap)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop with PyTorch's options and defaults (``lr=1e-2, alpha=0.99, eps=1e-8``)."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if isinstance(lr, _tensor_cls()) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        _check_not_differentiable(differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("momentum", 0)
            group.setdefault("centered", False)
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)

    @_no_grad_step
    def step(self, closure=None):
        """Perform one optimization step; returns the closure's loss if one was given."""
        loss = _call_closure(closure)
        for group in self.param_groups:
            lr = _as_float(group["lr"])
            alpha, eps = group["alpha"], group["eps"]
            weight_decay, momentum = group["weight_decay"], group["momentum"]
            centered, maximize = group["centered"], group["maximize"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                check_not_capturable(group)
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _new_step_counter()
                    state["square_avg"] = _wrap(np.zeros_like(p._data))
                    if momentum > 0:
                        state["momentum_buffer"] = _wrap(np.zeros_like(p._data))
                    if centered:
                        state["grad_avg"] = _wrap(np.zeros_like(p._data))
                param = p._data
                grad = p.grad._data
                if maximize:
                    grad = -grad
                step_t = state["step"]
                step_t._data += 1
                _bump(step_t)
                if weight_decay != 0:
                    grad = grad + weight_decay * param
                square_avg = state["square_avg"]
                sq = square_avg._data
                sq *= alpha
                sq += (1 - alpha) * grad * grad
                _bump(square_avg)
                if centered:
                    grad_avg = state["grad_avg"]
                    _lerp_(grad_avg._data, grad, 1 - alpha)
                    _bump(grad_avg)
                    ga = grad_avg._data
                    avg = sq + (-1) * ga * ga
                    np.sqrt(avg, out=avg)
                else:
                    avg = np.sqrt(sq)
                avg += eps
                if momentum > 0:
                    buf_t = state["momentum_buffer"]
                    buf = buf_t._data
                    buf *= momentum
                    buf += grad / avg
                    _bump(buf_t)
                    param -= lr * buf
                else:
                    update = grad * -lr
                    update /= avg
                    param += update
                _bump(p)
        return loss
