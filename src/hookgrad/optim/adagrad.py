"""Adagrad with PyTorch's update rule:

    step += 1;  g = -grad if maximize else grad;  g += weight_decay * p
    clr = lr / (1 + (step - 1) * lr_decay)
    sum += g * g;  p -= clr * g / (sqrt(sum) + eps)

As in PyTorch, the state (``step`` and ``sum``) of every parameter is created by the constructor.
"""
from __future__ import annotations

import numpy as np

from .optimizer import (Optimizer, _as_float, _bump, _call_closure, _check_not_differentiable,
                        _new_step_counter, _no_grad_step, _tensor_cls, _wrap)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad with PyTorch's options and defaults (``lr=1e-2, eps=1e-10``)."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if isinstance(lr, _tensor_cls()) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_not_differentiable(differentiable)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(self.state[p], p, initial_accumulator_value)

    @staticmethod
    def _init_state(state, p, init_value):
        state["step"] = _new_step_counter()
        state["sum"] = _wrap(np.full_like(p._data, init_value))

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)

    def share_memory(self):
        """Kept for API compatibility; NumPy arrays need no sharing step here."""

    @_no_grad_step
    def step(self, closure=None):
        """Perform one optimization step; returns the closure's loss if one was given."""
        loss = _call_closure(closure)
        for group in self.param_groups:
            lr = _as_float(group["lr"])
            weight_decay, lr_decay, eps = group["weight_decay"], group["lr_decay"], group["eps"]
            maximize = group["maximize"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    self._init_state(state, p, self.defaults["initial_accumulator_value"])
                param = p._data
                grad = p.grad._data
                step_t = state["step"]
                step_t._data += 1
                _bump(step_t)
                step = float(step_t._data)
                if maximize:
                    grad = -grad
                if weight_decay != 0:
                    grad = grad + weight_decay * param
                clr = lr / (1 + (step - 1) * lr_decay)
                sum_t = state["sum"]
                s = sum_t._data
                s += grad * grad
                _bump(sum_t)
                std = np.sqrt(s)
                std += eps
                update = grad * -clr
                update /= std
                param += update
                _bump(p)
        return loss
