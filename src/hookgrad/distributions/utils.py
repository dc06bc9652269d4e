"""Helpers shared by the distributions: broadcasting parameters, probabilities <-> logits, cached
properties and packing lower triangles into vectors."""
from __future__ import annotations

import functools
import numbers

import hookgrad

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni


def broadcast_all(*values):
    """Broadcast tensors and numbers to one shape; numbers take the dtype of the first tensor
    (or the default dtype when there is none)."""
    if not all(isinstance(v, (hookgrad.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    if all(isinstance(v, hookgrad.Tensor) for v in values):
        return hookgrad.broadcast_tensors(*values)
    dtype = next((v.dtype for v in values if isinstance(v, hookgrad.Tensor)), hookgrad.get_default_dtype())
    tensors = [v if isinstance(v, hookgrad.Tensor) else hookgrad.tensor(v, dtype=dtype) for v in values]
    return hookgrad.broadcast_tensors(*tensors)


def _standard_normal(shape, dtype, device=None):
    return hookgrad.empty(tuple(shape), dtype=dtype).normal_()


def _sum_rightmost(value, dim):
    """Sum out the ``dim`` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    return logits.sigmoid() if is_binary else hookgrad.nn.functional.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Keep probabilities off 0 and 1 by one machine epsilon (so that their logs stay finite)."""
    eps = hookgrad.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    clamped = clamp_probs(probs)
    if is_binary:
        return clamped.log() - (-clamped).log1p()
    return clamped.log()


class lazy_property:
    """A property computed once, on first access, and then stored on the instance (with gradient
    recording on, so that a parameter derived lazily keeps its graph)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, owner=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with hookgrad.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What a lazy property looks like on the class: still recognisably lazy, and documented."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)



def _attribute_of(holder, name):
    """A read-only property giving ``self.<holder>.<name>``: a parameter or statistic that a
    distribution takes from the one it is built on."""
    return property(lambda self: getattr(getattr(self, holder), name))


def _batch_shape_of(given, broadcast):
    """The batch shape that parameters imply: none when every ``given`` value is a plain number, else
    the shape of ``broadcast``, a parameter after ``broadcast_all``."""
    return hookgrad.Size() if all(isinstance(v, numbers.Number) for v in given) else broadcast.size()


def _check_probs_or_logits(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _set_probs_or_logits(dist, probs, logits):
    """Stores whichever of ``probs`` and ``logits`` is given (exactly one must be), as a tensor, under its
    own name on ``dist``; returns that tensor and the batch shape it implies (none for a number)."""
    _check_probs_or_logits(probs, logits)
    given = probs if probs is not None else logits
    (param,) = broadcast_all(given)
    setattr(dist, "probs" if probs is not None else "logits", param)
    return param, _batch_shape_of((given,), param)


def _set_count_and_probs_or_logits(dist, total_count, probs, logits):
    """As ``_set_probs_or_logits``, with ``total_count`` broadcast alongside and given the parameter's
    dtype; returns the parameter."""
    _check_probs_or_logits(probs, logits)
    total_count, param = broadcast_all(total_count, probs if probs is not None else logits)
    dist.total_count = total_count.type_as(param)
    setattr(dist, "probs" if probs is not None else "logits", param)
    return param


def _binary_logits_and_probs():
    """Lazy ``logits`` and ``probs`` properties for a two-outcome distribution given one of them: each
    is derived from the other (log-odds and sigmoid) on first access."""
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    return lazy_property(logits), lazy_property(probs)


def _tril_mask(n, diag):
    rows = hookgrad.arange(n)
    return rows < rows.view(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat, diag=0):
    """The entries on and below diagonal ``diag`` of the last two dimensions, row by row."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag)]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of ``tril_matrix_to_vec``: a square matrix whose lower part holds ``vec``."""
    # solve n*(n+1)/2 + diag terms = len(vec) for the matrix size n
    b = 1 + 2 * diag
    n = (-b + (b * b + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > hookgrad.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    mask = _tril_mask(n, diag)
    slots = int(mask.sum())
    if slots != vec.shape[-1]:
        raise RuntimeError(f"shape mismatch: value tensor of shape [{vec.shape[-1]}] cannot be broadcast to "
                           f"indexing result of shape [{slots}]")
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n * n,))
    flat_index = hookgrad.arange(n * n)[mask.reshape(-1)]
    index = flat_index.expand(tuple(vec.shape[:-1]) + (flat_index.shape[0],))
    return mat.scatter(-1, index, vec).reshape(tuple(vec.shape[:-1]) + (n, n))


# hookgrad's ``diagonal``/``diag_embed`` backward does not record a graph, so a second derivative
# through them silently loses terms; these two go through indexing and ``where``, whose backward does
def _diagonal(mat):
    """The main diagonal of the last two dimensions (``mat.diagonal(dim1=-2, dim2=-1)``)."""
    index = hookgrad.arange(min(mat.shape[-2], mat.shape[-1]))
    return mat[..., index, index]


def _diag_embed(vec):
    """Square matrices with ``vec`` on the diagonal (``torch.diag_embed(vec)``)."""
    n = vec.shape[-1]
    on_diagonal = hookgrad.eye(n, dtype=hookgrad.bool)
    spread = vec.unsqueeze(-1).expand(tuple(vec.shape) + (n,))
    return hookgrad.where(on_diagonal, spread, hookgrad.zeros((), dtype=vec.dtype))
