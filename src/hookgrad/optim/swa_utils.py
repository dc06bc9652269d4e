"""Stochastic weight averaging and exponential moving averages of a model's weights, with
PyTorch's API: ``AveragedModel``, the averaging-function factories, ``update_bn`` (recompute
BatchNorm statistics with one pass over the data) and the ``SWALR`` scheduler."""
from __future__ import annotations

import itertools
import math
import warnings
from copy import deepcopy

from .lr_scheduler import LRScheduler, _per_group

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _no_grad():
    from ..autograd.grad_mode import no_grad
    return no_grad()


def _check_decay(decay) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place EMA update over lists: ``ema = lerp(ema, current, 1 - decay)``."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        with _no_grad():
            if ema_param_list[0].is_floating_point():
                for ema, current in zip(ema_param_list, current_param_list):
                    ema.lerp_(current, 1 - decay)
            else:
                for ema, current in zip(ema_param_list, current_param_list):
                    ema.copy_(ema * decay + current * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An in-place running-mean update over lists: ``avg += (current - avg) / (n + 1)``."""

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with _no_grad():
            # with a tensor count the weight is a default-dtype tensor, as in PyTorch
            weight = float(1 / (num_averaged + 1))
            if averaged_param_list[0].is_floating_point():
                for avg, current in zip(averaged_param_list, current_param_list):
                    avg.lerp_(current, weight)
            else:
                for avg, current in zip(averaged_param_list, current_param_list):
                    avg.add_((current - avg) / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """``(ema, current, n) -> decay * ema + (1 - decay) * current``."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with _no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """``(avg, current, n) -> avg + (current - avg) / (n + 1)``."""

    def swa_update(averaged_param, current_param, num_averaged):
        with _no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _module_base():
    from ..nn import Module
    return Module


class AveragedModel(_module_base()):
    """A deep copy of ``model`` whose parameters (and, with ``use_buffers``, buffers) hold a
    running average of the model's, updated by ``update_parameters(model)``. The first update
    copies; later ones apply ``avg_fn`` (per tensor), ``multi_avg_fn`` (per list, in place) or
    the equal-weight mean. ``n_averaged`` is a long buffer, so it is part of the state dict."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        from .. import long, tensor
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=long))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model) -> None:
        """Fold ``model``'s current weights into the average."""
        if self.use_buffers:
            ours = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            ours, theirs = self.parameters(), model.parameters()
        averaged, current = [], []
        first = int(self.n_averaged.item()) == 0
        with _no_grad():
            for p_averaged, p_model in zip(ours, theirs):
                p_model = p_model.detach()
                averaged.append(p_averaged.detach())
                current.append(p_model)
                if first:
                    p_averaged.detach().copy_(p_model)
            if not first:
                if self.avg_fn is None:
                    # group by dtype, as PyTorch's foreach grouping does
                    groups: dict = {}
                    for a, c in zip(averaged, current):
                        groups.setdefault(a.dtype, ([], []))
                        groups[a.dtype][0].append(a)
                        groups[a.dtype][1].append(c)
                    for avg_list, cur_list in groups.values():
                        if self.multi_avg_fn is not None:
                            self.multi_avg_fn(avg_list, cur_list, self.n_averaged)
                        else:
                            mean = get_swa_avg_fn()
                            for a, c in zip(avg_list, cur_list):
                                a.copy_(mean(a, c, self.n_averaged))
                else:
                    for a, c in zip(averaged, current):
                        a.copy_(self.avg_fn(a, c, self.n_averaged))
            if not self.use_buffers:
                # buffers (BatchNorm statistics) follow the model; update_bn can recompute them
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach())
            self.n_averaged += 1


def update_bn(loader, model, device=None) -> None:
    """Recompute the running statistics of every BatchNorm layer of ``model`` with one pass over
    ``loader`` (batches are tensors or sequences whose first item is the input), as a cumulative
    average (momentum None); momenta and the training flag are restored afterwards."""
    from ..nn.modules.batchnorm import _BatchNorm
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with _no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to its ``swa_lr`` over ``anneal_epochs`` steps ('cos' or
    'linear'), then holds it there."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1) -> None:
        swa_lrs = _per_group("swa_lr", optimizer, swa_lr)
        for value, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        # the lr this group had before annealing began, recovered from the current mix
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict:
        """Every attribute except the optimizer and the annealing function."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
