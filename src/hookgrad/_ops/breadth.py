"""torch.* functions and Tensor methods that are short compositions of other ops: the window
functions, covariance and correlation, ``addbmm``/``addr``, random fills (``cauchy_``,
``geometric_``), ``hardshrink``/``prelu`` (shared with ``nn.functional``), and the in-place function
forms ``torch.erf_`` and friends. Their gradients come from the ops they are made of.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype
from .._tensor import wrap
from ._base import GRAD
from . import _dtype_rules as _rules
from ._declare import ZeroGradNode, inplace_function, module_all, node_class, op, record_op
from . import creation, linalg, pointwise
from . import rng as _rs
from .creation import _generator


@op(method=False)
def get_device(input):
    return -1  # the CPU


@op(method=False)
def unfold_copy(input, dimension, size, step):
    return input.unfold(dimension, size, step).clone()


# torch.X_: in-place function forms of Tensor.X_
for _name in ("erf_", "erfc_", "i0_", "sinc_", "logit_", "xlogy_", "addmv_"):
    inplace_function(_name)


# ---- window functions -----------------------------------------------------------------------------
def _window(name, window_length, periodic, dtype, requires_grad, values):
    """``values(n, N)`` over ``n = 0..N-1`` where ``N`` is the symmetric length (one more when periodic)."""
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype={dt.np.name})")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    if window_length <= 1:
        out = np.ones(window_length, dtype=np.float64)
    else:
        n_sym = window_length + 1 if periodic else window_length
        out = values(np.arange(window_length, dtype=np.float64), n_sym)
    result = wrap(out.astype(dt.np))
    return result.requires_grad_() if requires_grad else result


def _cosine_sum(*coefficients):
    def values(n, N):
        phase = 2 * np.pi * n / (N - 1)
        return sum(c * np.cos(k * phase) * (-1) ** k for k, c in enumerate(coefficients))
    return values


@op(method=False)
def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                requires_grad=False):
    return _window("hann_window", window_length, periodic, dtype, requires_grad, _cosine_sum(0.5, 0.5))


@op(method=False)
def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False):
    return _window("hamming_window", window_length, periodic, dtype, requires_grad, _cosine_sum(alpha, beta))


@op(method=False)
def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    return _window("blackman_window", window_length, periodic, dtype, requires_grad, _cosine_sum(0.42, 0.5, 0.08))


@op(method=False)
def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad,
                   lambda n, N: 1 - np.abs(2 * n / (N - 1) - 1))


@op(method=False)
def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  pin_memory=False, requires_grad=False):
    def values(n, N):
        half = (N - 1) / 2
        return np.i0(beta * np.sqrt(np.clip(1 - ((n - half) / half) ** 2, 0, None))) / np.i0(beta)
    return _window("kaiser_window", window_length, periodic, dtype, requires_grad, values)


# ---- covariance and correlation -----------------------------------------------------------------
_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
               "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _type_name(t):
    return _TYPE_NAMES.get(t._ndarray.dtype.name, t._ndarray.dtype.name)


def _check_weights(w, name, num_obs, integral):
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                           f"{w.dim()} dimensions")
    if w.numel() != num_obs:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input "
                           f"but got {w.numel()} != {num_obs}")
    kind = w._ndarray.dtype.kind
    if integral and kind not in "iub":
        raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                           f"{_type_name(w)} dtype")
    if not integral and kind not in "fc":
        raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                           f"{_type_name(w)} dtype")
    if w._ndarray.size and (w._ndarray < 0).any():
        raise RuntimeError(f"cov(): {name} cannot be negative")


@op()
def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows (variables) of ``input`` over its columns (observations)."""
    if input._ndarray.dtype.kind == "b":
        raise RuntimeError("cov(): bool dtype is not supported for input")
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    if x._ndarray.dtype.kind not in "fc":
        x = x.to(_dtype.get_default_dtype())
    num_obs = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights(fweights, "fweights", num_obs, True)
        w = fweights
    if aweights is not None:
        _check_weights(aweights, "aweights", num_obs, False)
        w = aweights if w is None else w * aweights
    # the observation count and the normalizer are tensors (int64 without float weights), as in torch
    if w is None:
        w_sum = wrap(np.asanyarray(num_obs, dtype=np.int64))
        avg = x.mean(1)
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    if bool((norm <= 0)._ndarray):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm = norm * 0
    centred = x - avg.unsqueeze(1)
    weighted = centred if w is None else centred * w
    c = linalg.mm(centred, weighted.t())
    return (c / norm).squeeze()


@op()
def corrcoef(input):
    """Pearson correlation coefficients of the rows of ``input``, clipped to [-1, 1]."""
    c = cov(input)
    if c.dim() == 0:
        return c / c
    stddev = c.diagonal().sqrt()
    c = c / stddev.unsqueeze(1)
    c = c / stddev.unsqueeze(0)
    return c.clip(-1, 1)


# ---- fused products -------------------------------------------------------------------------------
def _scaled_input(input, beta, shape):
    """``beta * input`` broadcast to ``shape``; with ``beta == 0`` the input's nan and inf do not reach
    the result (torch's rule) and its gradient is zero."""
    if beta == 0:
        return (input * 0).nan_to_num(0.0, 0.0, 0.0).expand(shape)
    return (input if beta == 1 else input * beta).expand(shape)


@op(inplace=True)
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    if batch1.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {batch1.shape[0]} and "
                           f"{batch2.shape[0]}")
    if batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x{batch1.shape[2]} and "
                           f"{batch2.shape[1]}x{batch2.shape[2]})")
    product = linalg.bmm(batch1, batch2).sum(0)
    if alpha != 1:
        product = product * alpha
    return _scaled_input(input, beta, tuple(product.shape)) + product


@op(inplace=True)
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)``."""
    if vec1.dim() != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.dim()}-D")
    if vec2.dim() != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    product = linalg.outer(vec1, vec2)
    if alpha != 1:
        product = product * alpha
    return _scaled_input(input, beta, tuple(product.shape)) + product


# ---- sampling functions ---------------------------------------------------------------------------
PoissonBackward0 = node_class("PoissonBackward0", ZeroGradNode)


@op(method=False)
def poisson(input, generator=None):
    """Poisson samples with rates ``input`` (zero gradient, as torch's PoissonBackward0 gives)."""
    if input._ndarray.dtype.kind != "f":
        raise RuntimeError(f'"poisson_cpu" not implemented for \'{_type_name(input)}\'')
    if (input._ndarray < 0).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    result = wrap(_rs.poisson(_generator(generator), input._ndarray).astype(input._ndarray.dtype))
    if GRAD.enabled and input._requires_grad:
        record_op(PoissonBackward0, (input,), result).keep_shapes(input)
    return result


@op(method=False)
def binomial(count, prob, generator=None):
    """Binomial samples of ``count`` trials with success probability ``prob`` (torch has no derivative)."""
    if count._ndarray.dtype.kind != "f":
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {_type_name(count)}")
    c, p = np.broadcast_arrays(count._ndarray, prob._ndarray)
    return wrap(_rs.binomial(_generator(generator), c, p.astype(c.dtype, copy=False)))


# ---- activations shared with nn.functional --------------------------------------------------------
@op()
def hardshrink(input, lambd=0.5):
    """``input`` where ``|input| > lambd``, else 0 (``nn.functional.hardshrink`` is this function)."""
    from ..nn._functional import activation  # imports this module
    return activation.hardshrink(input, lambd)


@op()
def prelu(input, weight):
    """``max(0, x) + weight * min(0, x)``, one weight per channel (dim 1) or one shared
    (``nn.functional.prelu`` is this function)."""
    from ..nn._functional import activation
    return activation.prelu(input, weight)


__all__ = module_all(globals())
