"""The legacy ``torch.nn.utils.weight_norm``: a forward pre-hook recomputes ``weight`` from the
parameters ``weight_g`` (magnitude) and ``weight_v`` (direction) before every call."""
from __future__ import annotations

import warnings

from ..parameter import Parameter, UninitializedParameter
from ._norms import norm_except_dim, remove_norm_hook, weight_norm_value

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The forward pre-hook (held in ``module._forward_pre_hooks``) that rebuilds ``module.<name>``."""

    def __init__(self, name: str, dim: int) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        return weight_norm_value(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module, name: str, dim: int) -> "WeightNorm":
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. Make sure to run "
                             "the dummy forward before applying weight normalization")
        magnitude = norm_except_dim(weight, 2, fn.dim).detach()
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(magnitude))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim: int = 0):
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` through a forward pre-hook."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name: str = "weight"):
    """Take the weight-norm hook off ``module.<name>``, leaving the current weight as a parameter."""
    remove_norm_hook(module, WeightNorm, name, "weight_norm")
    return module
