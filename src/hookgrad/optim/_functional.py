"""The functional optimizers (``torch.optim.adam.adam``, ``torch.optim.sgd.sgd``, ...): one update
step of the optimizer on explicit lists of parameters, gradients and state tensors.

Each runs the optimizer class's own step (so the arithmetic is the class's, which follows torch's
single-tensor rule) with the caller's tensors as its state; afterwards every state list holds the
updated state, in the caller's own tensor objects (updated in place), as torch's functions leave
them. A state list entry torch allows to be None (SGD's momentum buffers) is filled in.
"""
from __future__ import annotations

__all__ = ["adam", "adamw", "sgd", "adagrad", "rmsprop", "adadelta", "adamax", "asgd", "nadam", "radam", "rprop"]


def _no_scaling(grad_scale, found_inf) -> None:
    if grad_scale is not None or found_inf is not None:
        raise AssertionError("Expected grad_scale and found_inf to be None")


def _step(optimizer_cls, params, grads, states: dict, hyper: dict) -> None:
    """One ``optimizer_cls`` step on ``params`` with ``grads``; ``states`` maps each state key to
    the caller's list of tensors (one per parameter, or empty when the optimizer does not use it)."""
    from ..autograd.grad_mode import no_grad
    params, grads = list(params), list(grads)
    if len(params) != len(grads):
        raise ValueError(f"got {len(params)} parameters and {len(grads)} gradients")
    optimizer = optimizer_cls(params, **hyper)
    saved_grads = [p.grad for p in params]
    try:
        for i, p in enumerate(params):
            entry = {key: values[i] for key, values in states.items() if len(values) > i and values[i] is not None}
            if entry:
                optimizer.state[p] = entry
            p.grad = grads[i]
        optimizer.step()
        with no_grad():
            for i, p in enumerate(params):
                state = optimizer.state.get(p, {})
                for key, values in states.items():
                    if key not in state or len(values) <= i:
                        continue
                    new = state[key]
                    if values[i] is None:
                        values[i] = new
                    elif values[i] is not new:
                        values[i].copy_(new)  # the class replaced the tensor: keep the caller's object
    finally:
        for p, grad in zip(params, saved_grads):
            p.grad = grad


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None, capturable=False,
         differentiable=False, fused=None, grad_scale=None, found_inf=None, has_complex=False,
         decoupled_weight_decay=False, *, amsgrad, beta1, beta2, lr, weight_decay, eps, maximize):
    """Functional Adam: see ``torch.optim.Adam``."""
    from .adam import Adam
    _no_scaling(grad_scale, found_inf)
    _step(Adam, params, grads, {"step": state_steps, "exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs,
                                "max_exp_avg_sq": max_exp_avg_sqs},
          dict(lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
               decoupled_weight_decay=decoupled_weight_decay))


def adamw(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None, capturable=False,
          differentiable=False, fused=None, grad_scale=None, found_inf=None, has_complex=False, *, amsgrad, beta1,
          beta2, lr, weight_decay, eps, maximize):
    """Functional AdamW: Adam with decoupled weight decay."""
    adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, grad_scale=grad_scale,
         found_inf=found_inf, decoupled_weight_decay=True, amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr,
         weight_decay=weight_decay, eps=eps, maximize=maximize)


def sgd(params, d_p_list, momentum_buffer_list, has_sparse_grad=False, foreach=None, fused=None, grad_scale=None,
        found_inf=None, *, weight_decay, momentum, lr, dampening, nesterov, maximize):
    """Functional SGD: ``momentum_buffer_list`` entries that are None get the new buffers."""
    from .sgd import SGD
    _no_scaling(grad_scale, found_inf)
    _step(SGD, params, d_p_list, {"momentum_buffer": momentum_buffer_list},
          dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
               maximize=maximize))


def adagrad(params, grads, state_sums, state_steps, fused=None, grad_scale=None, found_inf=None,
            has_sparse_grad=False, foreach=None, differentiable=False, has_complex=False, *, lr, weight_decay,
            lr_decay, eps, maximize):
    from .adagrad import Adagrad
    _no_scaling(grad_scale, found_inf)
    _step(Adagrad, params, grads, {"step": state_steps, "sum": state_sums},
          dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps, maximize=maximize))


def rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps, foreach=None, maximize=False,
            differentiable=False, capturable=False, has_complex=False, *, lr, alpha, eps, weight_decay, momentum,
            centered):
    from .rmsprop import RMSprop
    _step(RMSprop, params, grads, {"step": state_steps, "square_avg": square_avgs, "grad_avg": grad_avgs,
                                   "momentum_buffer": momentum_buffer_list},
          dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum, centered=centered,
               maximize=maximize))


def adadelta(params, grads, square_avgs, acc_deltas, state_steps, capturable=False, foreach=None,
             differentiable=False, has_complex=False, *, lr, rho, eps, weight_decay, maximize):
    from .adadelta import Adadelta
    _step(Adadelta, params, grads, {"step": state_steps, "square_avg": square_avgs, "acc_delta": acc_deltas},
          dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize))


def adamax(params, grads, exp_avgs, exp_infs, state_steps, foreach=None, maximize=False, differentiable=False,
           capturable=False, has_complex=False, *, eps, beta1, beta2, lr, weight_decay):
    from .adamax import Adamax
    _step(Adamax, params, grads, {"step": state_steps, "exp_avg": exp_avgs, "exp_inf": exp_infs},
          dict(lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay, maximize=maximize))


def asgd(params, grads, axs, mus, etas, state_steps, foreach=None, maximize=False, differentiable=False,
         capturable=False, has_complex=False, *, lambd, lr, t0, alpha, weight_decay):
    from .asgd import ASGD
    _step(ASGD, params, grads, {"step": state_steps, "ax": axs, "mu": mus, "eta": etas},
          dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, maximize=maximize))


def nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps, decoupled_weight_decay=False, foreach=None,
          capturable=False, differentiable=False, has_complex=False, maximize=False, *, beta1, beta2, lr,
          weight_decay, momentum_decay, eps):
    from .nadam import NAdam
    _step(NAdam, params, grads, {"step": state_steps, "exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs,
                                 "mu_product": mu_products},
          dict(lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
               decoupled_weight_decay=decoupled_weight_decay, maximize=maximize))


def radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, decoupled_weight_decay=False, foreach=None,
          differentiable=False, capturable=False, has_complex=False, maximize=False, *, beta1, beta2, lr,
          weight_decay, eps):
    from .radam import RAdam
    _step(RAdam, params, grads, {"step": state_steps, "exp_avg": exp_avgs, "exp_avg_sq": exp_avg_sqs},
          dict(lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay,
               decoupled_weight_decay=decoupled_weight_decay, maximize=maximize))


def rprop(params, grads, prevs, step_sizes, state_steps, foreach=None, capturable=False, maximize=False,
          differentiable=False, has_complex=False, *, step_size_min, step_size_max, etaminus, etaplus):
    from .rprop import Rprop
    _step(Rprop, params, grads, {"step": state_steps, "prev": prevs, "step_size": step_sizes},
          dict(etas=(etaminus, etaplus), step_sizes=(step_size_min, step_size_max), maximize=maximize))
