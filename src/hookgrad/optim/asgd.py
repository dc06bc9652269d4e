"""Averaged SGD, following PyTorch's single-tensor update rule:

    step += 1;  g = -grad if maximize else grad;  g += wd * p
    p *= 1 - lambd * eta;  p -= eta * g
    ax += mu * (p - ax)   (ax = p while mu == 1)
    eta = lr / (1 + lambd * lr * step) ** alpha;  mu = 1 / max(1, step - t0)

``eta`` and ``mu`` are 0-d tensors in the counters' (usually float32) precision, as in PyTorch.
"""
from __future__ import annotations

import numpy as np

from ._cpu_flags import check_not_capturable
from .optimizer import (Optimizer, _as_float, _bump, _call_closure, _check_not_differentiable,
                        _new_step_counter, _no_grad_step, _scalar_np_dtype, _tensor_cls, _wrap)

__all__ = ["ASGD"]


def _scalar_state(value: float):
    counter = _new_step_counter()
    counter._data[...] = value
    return counter


class ASGD(Optimizer):
    """ASGD with PyTorch's options and defaults (``lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6``)."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        if isinstance(lr, _tensor_cls()) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_not_differentiable(differentiable)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("maximize", False)
            group.setdefault("differentiable", False)
            group.setdefault("capturable", False)
            for p in group["params"]:
                p_state = self.state.get(p, {})
                for key in ("step", "eta", "mu"):
                    if key in p_state and not hasattr(p_state[key], "_data"):
                        p_state[key] = _scalar_state(float(p_state[key]))

    @_no_grad_step
    def step(self, closure=None):
        """Perform one optimization step; returns the closure's loss if one was given."""
        loss = _call_closure(closure)
        for group in self.param_groups:
            lr = _as_float(group["lr"])
            lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
            weight_decay = group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                check_not_capturable(group, "params, mus, etas, and state_steps")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _new_step_counter()
                    state["eta"] = _scalar_state(lr)
                    state["mu"] = _scalar_state(1.0)
                    state["ax"] = _wrap(np.zeros_like(p._data))
                param = p._data
                grad = p.grad._data
                if group["maximize"]:
                    grad = -grad
                step_t, eta_t, mu_t, ax_t = state["step"], state["eta"], state["mu"], state["ax"]
                step_t._data += 1
                _bump(step_t)
                if weight_decay != 0:
                    grad = grad + weight_decay * param
                eta = float(eta_t._data)
                param *= 1 - lambd * eta
                param += -eta * grad
                _bump(p)
                mu = float(mu_t._data)
                ax = ax_t._data
                if mu != 1:
                    ax += (param - ax) * ax.dtype.type(mu)
                else:
                    ax[...] = param
                _bump(ax_t)
                step = float(step_t._data)
                # the new values pass through a default-dtype scalar (PyTorch's as_tensor) even
                # when the state itself is float64, e.g. after loading a state dict
                default = _scalar_np_dtype()
                eta_t._data[...] = default(lr / ((1 + lambd * lr * step) ** alpha))
                mu_t._data[...] = default(1 / max(1, step - t0))
                _bump(eta_t)
                _bump(mu_t)
        return loss
