"""Tensor helpers shared by the weight/spectral norm reparametrizations, built from existing ops."""
from __future__ import annotations

import hookgrad


def norm_except_dim(v, pow: float = 2, dim: int = 0):
    """The ``pow``-norm of ``v`` over every dim but ``dim``, kept as size-1 dims; the whole
    tensor's norm (0-dim) when ``dim == -1``."""
    if dim == -1:
        return v.norm(pow)
    if not -v.ndim <= dim < v.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-v.ndim}, {v.ndim - 1}], but got "
                         f"{dim})")
    dim %= v.ndim
    others = tuple(d for d in range(v.ndim) if d != dim)
    # a 1-D tensor: the norm over no dims is each element's absolute value
    return v.norm(pow, others, keepdim=True) if others else v.abs()


def weight_norm_value(v, g, dim: int):
    """``v`` scaled so its norm (over all dims but ``dim``) is ``g``."""
    return v * (g / norm_except_dim(v, 2, dim))


def reshape_to_matrix(weight, dim: int):
    """``weight`` with ``dim`` moved first and the rest flattened: (size of dim, everything else)."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.ndim) if d != dim))
    return weight.reshape(weight.shape[0], -1)


def normalized(x, eps: float):
    return hookgrad.nn.functional.normalize(x, dim=0, eps=eps)


def remove_norm_hook(module, hook_cls, name: str, label: str) -> None:
    """Take ``module``'s forward pre-hook of class ``hook_cls`` for ``module.<name>`` off, leaving the
    current weight as a parameter, or raise torch's ValueError (``label`` names the reparametrization)."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, hook_cls) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return
    raise ValueError(f"{label} of '{name}' not found in {module}")
