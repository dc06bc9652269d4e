"""Averaged SGD, following PyTorch's single-tensor update rule:

    step += 1;  g = -grad if maximize else grad;  g += wd * p
    p *= 1 - lambd * eta;  p -= eta * g
    ax += mu * (p - ax)   (ax = p while mu == 1)
    eta = lr / (1 + lambd * lr * step) ** alpha;  mu = 1 / max(1, step - t0)

``eta`` and ``mu`` are 0-d tensors in the counters' (usually float32) precision, as in PyTorch.
"""
from __future__ import annotations

from .optimizer import (Optimizer, _as_float, _builtin_defaults, _bump, _check_lr, _check_non_negative,
                        _new_step_counter, _no_grad_step, _scalar_np_dtype,
                        _scalar_state, _zeros_like_params)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """ASGD with PyTorch's options and defaults (``lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6``)."""

    _group_options_added_later = dict(foreach=None, maximize=False, differentiable=False, capturable=False)
    _scalar_state_keys = ("step", "eta", "mu")

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_non_negative(weight_decay=weight_decay)
        super().__init__(params, _builtin_defaults(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                                   foreach=foreach, maximize=maximize, differentiable=differentiable,
                                                   capturable=capturable))

    @staticmethod
    def _init_state(state, p, group):
        state["step"] = _new_step_counter()
        state["eta"] = _scalar_state(_as_float(group["lr"]))
        state["mu"] = _scalar_state(1.0)
        _zeros_like_params(state, p, "ax")

    @_no_grad_step
    def step(self, closure=None):
        """Perform one optimization step; returns the closure's loss if one was given."""
        for group in self.param_groups:
            lr = _as_float(group["lr"])
            lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
            weight_decay = group["weight_decay"]
            for p, state, grad in self._grads_to_apply(group, weight_decay,
                                                       capturable_names="params, mus, etas, and state_steps"):
                param = p._ndarray
                step_t, eta_t, mu_t, ax_t = state["step"], state["eta"], state["mu"], state["ax"]
                eta = float(eta_t._ndarray)
                param *= 1 - lambd * eta
                param += -eta * grad
                _bump(p)
                mu = float(mu_t._ndarray)
                ax = ax_t._ndarray
                if mu != 1:
                    ax += (param - ax) * ax.dtype.type(mu)
                else:
                    ax[...] = param
                _bump(ax_t)
                step = float(step_t._ndarray)
                # the new values pass through a default-dtype scalar (PyTorch's as_tensor) even
                # when the state itself is float64, e.g. after loading a state dict
                default = _scalar_np_dtype()
                eta_t._ndarray[...] = default(lr / ((1 + lambd * lr * step) ** alpha))
                mu_t._ndarray[...] = default(1 / max(1, step - t0))
                _bump(eta_t)
                _bump(mu_t)


from ._functional import asgd  # noqa: E402 - the functional form, torch.optim.asgd.asgd
__all__ += ["asgd"]
