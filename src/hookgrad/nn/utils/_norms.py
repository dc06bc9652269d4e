"""Tensor helpers shared by the weight/spectral norm reparametrizations, built from existing ops."""
from __future__ import annotations

import numpy as np

import hookgrad
from ...autograd.graph import Node
from ..._ops._base import GRAD
from ..._ops._declare import record_op
from ..._tensor import wrap


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


class WeightNormInterfaceBackward0(Node):
    """torch's one node for ``_weight_norm_interface(v, g, dim)`` (edges to v and g): it keeps g, v
    and the norms it computed (``result1``), in that order, and differentiates ``g * v / norms``."""

    __slots__ = ("dim",)
    saved_names = ("g", "v", "result1")
    saved_values = {"dim": lambda n: n.dim}

    def apply(self, grads):
        g, v, norms = self.saved()
        grad = grads[0]
        others = tuple(d for d in range(v.ndim) if d != self.dim)
        per_dim = (grad * v).sum(others, keepdim=True)
        grad_v = grad_g = None
        if self._should_compute_output(0):
            grad_v = (g / norms) * (grad - v * (per_dim / (norms * norms)))
        if self._should_compute_output(1):
            grad_g = per_dim / norms
        return grad_v, grad_g


def weight_norm_value(v, g, dim: int):
    """``v`` scaled so its norm (over all dims but ``dim``) is ``g``. Where torch fuses it (dim first
    or last, no half precision) it is one WeightNormInterfaceBackward0 node, as in torch."""
    fused = dim is not None and v.ndim > 1 and dim in (0, v.ndim - 1) and v.dtype == g.dtype and \
        v._ndarray.dtype.kind == "f" and v._ndarray.dtype.itemsize >= 4 and tuple(g.shape) == tuple(
            s if d == dim else 1 for d, s in enumerate(v.shape))
    if not fused or not (GRAD.enabled and (v.requires_grad or g.requires_grad)):
        return v * (g / norm_except_dim(v, 2, dim))
    vd, gd = v._ndarray, g._ndarray
    others = tuple(d for d in range(vd.ndim) if d != dim)
    norms = wrap(np.sqrt((vd * vd).sum(axis=others, keepdims=True)))
    result = wrap(vd * (gd / norms._ndarray))
    node = record_op(WeightNormInterfaceBackward0, (v, g), result)
    node.dim = dim
    node.save(g, v, norms)
    return result


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
