"""Adam (and, with ``decoupled_weight_decay=True``, AdamW), following PyTorch's single-tensor
update rule step for step, so that results agree to float rounding:

    step += 1;  g = -grad if maximize else grad
    weight decay: p *= 1 - lr * wd (decoupled)  or  g += wd * p
    m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
    v_max = max(v_max, v) (amsgrad)
    p += -(lr / (1 - beta1**step)) * m / (sqrt(v or v_max) / sqrt(1 - beta2**step) + eps)

State per parameter (as in PyTorch): ``step`` (a 0-d float tensor), ``exp_avg``, ``exp_avg_sq``
and, with amsgrad, ``max_exp_avg_sq``.
"""
from __future__ import annotations

import numpy as np

from ._cpu_flags import check_fused_and_foreach
from .optimizer import (Optimizer, _as_float, _bump, _check_lr, _check_non_negative,
                        _check_not_differentiable, _new_step_counter, _no_grad_step, _tensor_cls,
                        _zeros_like_params)

__all__ = ["Adam"]


def _lerp_(start: np.ndarray, end: np.ndarray, weight: float, scratch: np.ndarray | None = None) -> None:
    """``start`` moved toward ``end`` by ``weight``, in place, with the two-sided formula that
    PyTorch's kernel uses (it is exact at both ends). ``scratch`` is an optional buffer shaped
    like ``start``."""
    w = start.dtype.type(weight)
    diff = np.subtract(end, start, out=scratch) if scratch is not None else end - start
    if abs(weight) < 0.5:
        diff *= w
        start += diff
    else:
        diff *= start.dtype.type(1) - w
        np.subtract(end, diff, out=start)


def _update_moments(state: dict, grad: np.ndarray, beta1: float, beta2: float, scratch: np.ndarray) -> tuple:
    """The Adam family's running averages, in place: ``exp_avg`` moves toward the gradient by
    ``1 - beta1`` and ``exp_avg_sq`` becomes ``beta2 * v + (1 - beta2) * g * g`` in PyTorch's order of
    operations. ``scratch`` is a buffer shaped like the parameter; returns the two arrays."""
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    m, v = exp_avg._ndarray, exp_avg_sq._ndarray
    _lerp_(m, grad, 1 - beta1, scratch)
    v *= beta2
    np.multiply(grad, 1 - beta2, out=scratch)
    scratch *= grad
    v += scratch
    _bump(exp_avg)
    _bump(exp_avg_sq)
    return m, v


def _check_hyperparameters(lr, betas, eps, weight_decay):
    """torch's checks on the hyper-parameters of the Adam family, in its order."""
    _check_lr(lr)
    _check_non_negative(eps=eps)
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    _check_non_negative(weight_decay=weight_decay)
    tensor_cls = _tensor_cls()
    if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
            or (isinstance(betas[0], tensor_cls) and isinstance(betas[1], tensor_cls))):
        raise ValueError("betas must be either both floats or both Tensors")


def _adam_group_values(group: dict):
    """The Adam family's numbers for one group: beta1, beta2, lr and weight_decay as floats, and eps."""
    beta1, beta2 = (_as_float(b) for b in group["betas"])
    return beta1, beta2, _as_float(group["lr"]), _as_float(group["weight_decay"]), group["eps"]


class Adam(Optimizer):
    """Adam with PyTorch's options and defaults (``lr=1e-3, betas=(0.9, 0.999), eps=1e-8``)."""

    _group_options_added_later = dict(amsgrad=False, maximize=False, foreach=None, capturable=False,
                                      differentiable=False, decoupled_weight_decay=False, fused=None)
    _scalar_state_keys = ("step",)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        tensor_cls = _tensor_cls()
        if isinstance(lr, tensor_cls) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
        _check_hyperparameters(lr, betas, eps, weight_decay)
        for i, beta in enumerate(betas):
            if isinstance(beta, tensor_cls):
                if foreach and not capturable:
                    raise ValueError(f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True")
                if beta.numel() != 1:
                    raise ValueError(f"Tensor betas[{i}] must be 1-element")
        _check_not_differentiable(differentiable)
        check_fused_and_foreach(fused, foreach)
        betas = tuple(betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(state, p, group):
        state["step"] = _new_step_counter()
        _zeros_like_params(state, p, "exp_avg", "exp_avg_sq")
        if group["amsgrad"]:
            _zeros_like_params(state, p, "max_exp_avg_sq")

    @_no_grad_step
    def step(self, closure=None):
        """Perform one optimization step; returns the closure's loss if one was given."""
        for group in self.param_groups:
            beta1, beta2, lr, weight_decay, eps = _adam_group_values(group)
            amsgrad = group["amsgrad"]
            decoupled = group.get("decoupled_weight_decay", False)
            for p, state, grad in self._grads_to_apply(group, weight_decay, decoupled=decoupled, lr=lr):
                scratch = np.empty_like(p._ndarray)
                m, v = _update_moments(state, grad, beta1, beta2, scratch)

                step = float(state["step"]._ndarray)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                step_size = lr / bias_correction1
                bias_correction2_sqrt = bias_correction2 ** 0.5
                if amsgrad:
                    max_sq = state["max_exp_avg_sq"]
                    np.maximum(max_sq._ndarray, v, out=max_sq._ndarray)
                    _bump(max_sq)
                    denom = np.sqrt(max_sq._ndarray)
                else:
                    denom = np.sqrt(v)
                denom /= bias_correction2_sqrt
                denom += eps
                update = np.multiply(m, -step_size, out=scratch)
                update /= denom
                p._ndarray += update
                _bump(p)


from ._functional import adam  # noqa: E402 - the functional form, torch.optim.adam.adam
__all__ += ["adam"]
