"""Gradient clipping by total norm or by value, computed on the gradients' NumPy arrays in place.

As in PyTorch, the norm of many gradients is the norm of their per-tensor norms (so it equals the
norm of all gradients concatenated), the clipping coefficient is ``max_norm / (total + 1e-6)``
clamped at 1, and the returned total norm is a 0-d tensor in the gradients' (promoted) dtype.
"""
from __future__ import annotations

import types
import warnings

import numpy as np

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _tensor_cls():
    from ..._tensor import Tensor
    return Tensor


def _wrap(array):
    from ..._tensor import wrap
    return wrap(array)


def _bump(t) -> None:
    bump = getattr(t, "_bump_version", None)
    if bump is not None:
        bump()


def _as_list(tensors) -> list:
    return [tensors] if isinstance(tensors, _tensor_cls()) else list(tensors)


def _vector_norm(a: np.ndarray, ord_: float) -> np.ndarray:
    """The p-norm of ``a`` flattened, as a 0-d array of ``a``'s (real) dtype."""
    out_dtype = np.abs(np.zeros(0, dtype=a.dtype)).dtype if a.dtype.kind in "fc" else np.float32
    x = np.abs(a.reshape(-1))
    if ord_ == np.inf:
        value = x.max() if x.size else 0.0
    elif ord_ == -np.inf:
        value = x.min() if x.size else np.inf
    elif ord_ == 0:
        value = np.count_nonzero(x)
    elif ord_ == 1:
        value = x.sum(dtype=np.float64)
    elif ord_ == 2:
        x64 = x.astype(np.float64)
        value = np.sqrt(np.dot(x64, x64))
    else:
        value = np.sum(x.astype(np.float64) ** ord_) ** (1.0 / ord_)
    return np.asarray(value, dtype=out_dtype)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None):
    """The ``norm_type``-norm of the tensors viewed as one vector, as a 0-d tensor."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        from ..._dtype import get_default_dtype
        return _wrap(np.zeros((), dtype=get_default_dtype().np))
    with np.errstate(all="ignore"):
        norms = [_vector_norm(t._ndarray, norm_type) for t in tensors]
        dtype = np.result_type(*norms)
        total = _vector_norm(np.stack([n.astype(dtype) for n in norms]), norm_type)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is "
                           "non-finite, so it cannot be clipped. To disable this error and scale the "
                           "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return _wrap(total)


def clip_grads_with_norm_(parameters, max_norm: float, total_norm, foreach=None) -> None:
    """Scale gradients in place by ``min(max_norm / (total_norm + 1e-6), 1)``."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    max_norm = float(max_norm)
    if not grads:
        return
    total = total_norm._ndarray if isinstance(total_norm, _tensor_cls()) else np.asarray(total_norm)
    with np.errstate(all="ignore"):
        coef = np.minimum(total.dtype.type(max_norm) / (total + total.dtype.type(1e-6)), total.dtype.type(1.0))
    with np.errstate(all="ignore"):  # inf * 0 gives nan silently, as in PyTorch
        for g in grads:
            data = g._ndarray
            np.multiply(data, coef.astype(data.dtype) if data.dtype.kind in "fc" else coef, out=data,
                        casting="unsafe")
            _bump(g)


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None):
    """Clip the gradients of ``parameters`` in place so that their total norm is at most
    ``max_norm``; return the total norm before clipping. ``foreach`` is accepted and ignored."""
    if isinstance(parameters, _tensor_cls()):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.",
                          stacklevel=2)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None):
    """Deprecated alias of :func:`clip_grad_norm_`."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    params = _as_list(parameters)
    if all(p.grad is None for p in params):
        # torch groups the gradients for its foreach kernels and refuses an empty group, whatever foreach says
        raise RuntimeError("Expected !nested_tensorlist[0].empty() to be true, but got false.")
    for p in params:
        g = p.grad
        if g is None:
            continue
        data = g._ndarray
        np.clip(data, -clip_value, clip_value, out=data, casting="unsafe")
        _bump(g)
