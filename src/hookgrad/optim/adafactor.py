"""Adafactor, following PyTorch's single-tensor update rule:

    step += 1;  g = -grad if maximize else grad
    1 - beta2_t = step ** beta2_decay;  rho = min(lr, 1 / sqrt(step))
    alpha = max(eps2, RMS(p)) * rho;  p *= 1 - lr * wd
    matrices (dim > 1): row_var, col_var = lerp toward the row / column means of g * g,
        v = row_var @ col_var / max(mean(row_var over rows), eps1)
    vectors: variance = lerp(variance, g * g, 1 - beta2_t);  v = variance
    u = g / sqrt(max(v, eps1 ** 2));  p -= alpha / max(1, RMS(u) / d) * u

``eps1=None`` means the machine epsilon of the parameter's dtype.
"""
from __future__ import annotations

import numpy as np

from .adam import _lerp_
from .optimizer import (Optimizer, _as_float, _bump, _new_step_counter, _no_grad_step,
                        _tensor_cls, _wrap)

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor with PyTorch's options and defaults (``lr=1e-2, beta2_decay=-0.8,
    eps=(None, 1e-3), d=1.0, weight_decay=0.0``)."""

    _group_options_added_later = dict(foreach=None)
    _scalar_state_keys = ("step",)

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if isinstance(lr, _tensor_cls()) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self, closure=None):
        """Perform one optimization step; returns the closure's loss if one was given."""
        for group in self.param_groups:
            lr = _as_float(group["lr"])
            eps1, eps2 = group["eps"]
            beta2_decay, d, weight_decay = group["beta2_decay"], group["d"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.dtype.is_complex:
                    raise RuntimeError("Adafactor does not support complex parameters")
                state = self.state[p]
                grad = p.grad._ndarray
                if len(state) == 0:
                    state["step"] = _new_step_counter()
                    if grad.ndim > 1:
                        state["row_var"] = _wrap(np.zeros(grad.shape[:-1] + (1,), dtype=grad.dtype))
                        state["col_var"] = _wrap(np.zeros(grad.shape[:-2] + (1, grad.shape[-1]),
                                                          dtype=grad.dtype))
                    else:
                        state["variance"] = _wrap(np.zeros_like(grad))
                if group["maximize"]:
                    grad = -grad
                param = p._ndarray
                if eps1 is None:
                    eps1 = float(np.finfo(param.dtype).eps)
                step_t = state["step"]
                step_t._ndarray += 1
                _bump(step_t)
                step = float(step_t._ndarray)
                one_minus_beta2 = step ** beta2_decay
                rho = min(lr, 1 / (step ** 0.5))
                rms_param = float(np.sqrt(np.sum(param.astype(np.float64) ** 2))) / (param.size ** 0.5)
                alpha = max(eps2, rms_param) * rho
                if weight_decay != 0:
                    param *= 1 - lr * weight_decay
                if grad.ndim > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    squared = grad * grad
                    _lerp_(row_var._ndarray, squared.sum(axis=-1, keepdims=True) / grad.shape[-1],
                           one_minus_beta2)
                    _lerp_(col_var._ndarray, squared.sum(axis=-2, keepdims=True) / grad.shape[-2],
                           one_minus_beta2)
                    _bump(row_var)
                    _bump(col_var)
                    estimate = np.matmul(row_var._ndarray, col_var._ndarray)
                    estimate /= np.maximum(row_var._ndarray.mean(axis=-2, keepdims=True), eps1)
                else:
                    variance = state["variance"]
                    _lerp_(variance._ndarray, grad * grad, one_minus_beta2)
                    _bump(variance)
                    estimate = variance._ndarray.copy()
                np.maximum(estimate, eps1 * eps1, out=estimate)
                update = 1.0 / np.sqrt(estimate)
                update *= grad
                rms_update = float(np.sqrt(np.sum(update.astype(np.float64) ** 2)))
                denom = max(1.0, rms_update / ((update.size ** 0.5) * d))
                param += (-alpha / denom) * update
                _bump(p)
