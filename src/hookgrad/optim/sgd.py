"""Stochastic gradient descent, optionally with momentum, dampening, Nesterov momentum, weight
decay and maximization, with PyTorch's update rule:

    g = -grad if maximize else grad;  g += weight_decay * p
    buf = g (first step)  or  buf = momentum * buf + (1 - dampening) * g
    g = g + momentum * buf (nesterov)  or  g = buf
    p -= lr * g
"""
from __future__ import annotations

from ._fused import add_scaled_
from .optimizer import (Optimizer, _as_float, _bump, _check_not_differentiable,
                        _no_grad_step, _tensor_cls, _wrap)

__all__ = ["SGD"]


class SGD(Optimizer):
    """SGD with PyTorch's options and defaults (``lr=1e-3``)."""

    _group_options_added_later = dict(nesterov=False, maximize=False, foreach=None, differentiable=False,
                                      fused=False)

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        if isinstance(lr, _tensor_cls()) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_not_differentiable(differentiable)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    @_no_grad_step
    def step(self, closure=None):
        """Perform one optimization step; returns the closure's loss if one was given."""
        for group in self.param_groups:
            lr = _as_float(group["lr"])
            weight_decay = _as_float(group["weight_decay"])
            momentum = group["momentum"]
            dampening = group["dampening"]
            nesterov = group["nesterov"]
            maximize = group["maximize"]
            for p in group["params"]:
                grad = p._grad_value  # a parameter is a leaf: what its .grad property returns
                if grad is None:
                    continue
                d_p = grad._ndarray
                if maximize:
                    d_p = -d_p
                # each add with a factor rounds once, as torch's add(x, alpha=...) does
                if weight_decay != 0:
                    d_p = d_p.copy()
                    add_scaled_(d_p, p._ndarray, weight_decay)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = _wrap(d_p.copy())
                    else:
                        b = buf._ndarray
                        b *= momentum
                        add_scaled_(b, d_p, 1 - dampening)
                        _bump(buf)
                    state["momentum_buffer"] = buf
                    if nesterov:
                        d_p = d_p.copy()
                        add_scaled_(d_p, buf._ndarray, momentum)
                    else:
                        d_p = buf._ndarray
                add_scaled_(p._ndarray, d_p, -lr)
                p._version_counter[0] += 1  # _bump(p), written out


from ._functional import sgd  # noqa: E402 - the functional form, torch.optim.sgd.sgd
__all__ += ["sgd"]
