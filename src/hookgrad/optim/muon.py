"""Muon (momentum orthogonalized by Newton-Schulz), torch 2.13's algorithm and state-dict format:

    B = lerp(B, g, 1 - momentum);  U = lerp(g, B, momentum) if nesterov else B
    O = NS(U)   (``ns_steps`` quintic Newton-Schulz iterations in bfloat16, as torch runs them)
    p *= 1 - lr * weight_decay;  p -= adjusted_lr * O

The state of a parameter is its ``momentum_buffer``. Muon takes 2-D parameters only. The
Newton-Schulz iterations round to bfloat16 through the optional ``ml_dtypes`` package; without it
they run in float32 (no bfloat16 in NumPy), which changes the update by bfloat16's rounding only.
"""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype
from .optimizer import Optimizer, _bump, _no_grad_step

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
DEFAULT_NS_STEPS = 5


def _bfloat16_rounding():
    try:
        bf16 = _dtype.bfloat16_np()
    except ModuleNotFoundError:
        return lambda x: x
    return lambda x: np.asarray(x, dtype=np.float32).astype(bf16).astype(np.float32)


def zeropower_via_newtonschulz(grad: np.ndarray, ns_coefficients, ns_steps: int, eps: float) -> np.ndarray:
    """An approximately orthogonal matrix with ``grad``'s singular vectors (``U S' V^T`` with
    ``S'`` near 1), by quintic Newton-Schulz iterations; each product is rounded to bfloat16."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    rnd = _bfloat16_rounding()
    tall = grad.shape[0] > grad.shape[1]
    x = rnd(grad)
    if tall:
        x = x.T
    norm = rnd(np.sqrt(np.sum(x.astype(np.float32) ** 2, dtype=np.float32)))
    x = rnd(x / max(float(norm), eps))
    for _ in range(ns_steps):
        gram = rnd(x @ x.T)
        update = rnd(b * gram + c * (gram @ gram))
        x = rnd(a * x + update @ x)
    return x.T if tall else x


def adjust_lr(lr: float, adjust_lr_fn, param_shape) -> float:
    """``lr`` scaled for a parameter of this shape: sqrt(max(1, A/B)) ("original", the default) or
    0.2 sqrt(max(A, B)) ("match_rms_adamw")."""
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Muon with torch's options and defaults (``lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True``)."""

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS, ns_steps=DEFAULT_NS_STEPS,
                 adjust_lr_fn=None):
        from .._tensor import Tensor
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def _init_state(self, state: dict, p, group: dict) -> None:
        import hookgrad
        state["momentum_buffer"] = hookgrad.zeros_like(p.grad)

    @_no_grad_step
    def step(self, closure=None):
        """Perform one optimization step; returns the closure's loss if one was given."""
        for group in self.param_groups:
            lr = float(group["lr"])
            weight_decay, momentum = group["weight_decay"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                state = self.state[p]
                if "momentum_buffer" not in state:
                    self._init_state(state, p, group)
                grad = p.grad._ndarray
                if grad.ndim != 2:
                    raise ValueError("Param gradient must be a 2D matrix")
                buf_tensor = state["momentum_buffer"]
                buf = buf_tensor._ndarray
                buf += (grad - buf) * (1 - momentum)
                _bump(buf_tensor)
                update = grad + (buf - grad) * momentum if group["nesterov"] else buf
                ortho = zeropower_via_newtonschulz(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
                p._ndarray *= 1 - lr * weight_decay
                p._ndarray -= (adjust_lr(lr, group["adjust_lr_fn"], p.shape) * ortho).astype(p._ndarray.dtype)
                _bump(p)
