"""Transforms: invertible (or not) maps between constrained spaces with the log absolute
determinant of their Jacobian, used by ``TransformedDistribution`` and the ``biject_to`` /
``transform_to`` registries."""
from __future__ import annotations

import functools
import math
import numbers
import operator

import hookgrad
from hookgrad.nn.functional import logsigmoid, pad, softplus
from . import constraints
from .utils import (_attribute_of, _diag_embed, _diagonal, _sum_rightmost, broadcast_all, lazy_property,
                    tril_matrix_to_vec, vec_to_tril_matrix)

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform",
           "SoftplusTransform", "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform",
           "Transform", "identity_transform"]


class Transform:
    """A map ``y = t(x)`` from ``domain`` to ``codomain``. With ``cache_size=1`` the last (x, y)
    pair is remembered so that inverting a value just produced returns the very input tensor."""

    bijective = False

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv = None
        if cache_size == 1:
            self._cached_x_y = (None, None)
        super().__init__()

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_inv"] = None
        return state

    @property
    def event_dim(self):
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    @property
    def sign(self):
        raise NotImplementedError

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        return self._through_cache(x, self._call, forward=True)

    def _inv_call(self, y):
        return self._through_cache(y, self._inverse, forward=False)

    def _through_cache(self, given, compute, forward):
        """``compute(given)``, or the other half of the cached (x, y) pair when ``given`` is its
        x (``forward``) or its y (inverse)."""
        if self._cache_size == 0:
            return compute(given)
        x_old, y_old = self._cached_x_y
        known, answer = (x_old, y_old) if forward else (y_old, x_old)
        if given is known:
            return answer
        result = compute(given)
        self._cached_x_y = (given, result) if forward else (result, given)
        return result

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__ + "()"

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape


class _InverseTransform(Transform):
    """The inverse of a transform, sharing its cache. Unpickled, it has lost its forward transform
    (``__getstate__`` drops it) and says so instead of failing obscurely."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def _forward(self):
        if self._inv is None:
            raise AssertionError("_inv must not be None")
        return self._inv

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return self._forward.codomain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return self._forward.domain

    bijective = _attribute_of("_forward", "bijective")
    sign = _attribute_of("_forward", "sign")

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self._forward.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._forward == other._inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"{type(self).__name__}({self._inv!r})"

    def __call__(self, x):
        return self._forward._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._forward.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._forward.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._forward.forward_shape(shape)


class ComposeTransform(Transform):
    """Apply ``parts`` in order; the empty composition is the identity."""

    def __init__(self, parts, cache_size=0):
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        # walk backwards to find how many dimensions the first part must treat as one event
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @lazy_property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @lazy_property
    def sign(self):
        sign = 1
        for part in self.parts:
            sign = sign * part.sign
        return sign

    @property
    def inv(self):
        if self._inv is None:
            inverse = ComposeTransform([p.inv for p in reversed(self.parts)])
            inverse._inv = self
            self._inv = inverse
        return self._inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return hookgrad.zeros_like(x)
        values = [x]
        for part in self.parts[:-1]:
            values.append(part(values[-1]))
        values.append(y)
        terms = []
        event_dim = self.domain.event_dim
        for part, a, b in zip(self.parts, values[:-1], values[1:]):
            terms.append(_sum_rightmost(part.log_abs_det_jacobian(a, b), event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return functools.reduce(operator.add, terms)

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        return type(self).__name__ + "(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """Wrap a transform so that ``reinterpreted_batch_ndims`` more dimensions count as the event
    (their log-Jacobians are summed)."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    bijective = _attribute_of("base_transform", "bijective")
    sign = _attribute_of("base_transform", "sign")

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """Reshape the rightmost ``in_shape`` dimensions to ``out_shape`` (Jacobian 1)."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape = hookgrad.Size(in_shape)
        self.out_shape = hookgrad.Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @constraints.dependent_property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @constraints.dependent_property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch + tuple(self.out_shape))

    def _inverse(self, y):
        batch = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[:x.dim() - len(self.in_shape)]))

    def _reshaped(self, shape, source, target):
        if len(shape) < len(source):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(source)
        if tuple(shape[cut:]) != tuple(source):
            raise ValueError(f"Shape mismatch: expected {hookgrad.Size(shape[cut:])} but got {source}")
        return hookgrad.Size(tuple(shape[:cut]) + tuple(target))

    def forward_shape(self, shape):
        return self._reshaped(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._reshaped(shape, self.out_shape, self.in_shape)


class _ParameterFreeTransform(Transform):
    """A transform without parameters: equal to every instance of the first public transform class
    that derives from this one, subclasses included (torch compares these with ``isinstance``)."""

    _equal_to = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls._equal_to is None or cls._equal_to.__name__.startswith("_"):
            cls._equal_to = cls

    def __eq__(self, other):
        return isinstance(other, self._equal_to)

    __hash__ = object.__hash__


class _IncreasingBijectionOfReals(_ParameterFreeTransform):
    """A strictly increasing bijection from the real line onto its ``codomain``."""

    domain = constraints.real
    bijective = True
    sign = +1


class ExpTransform(_IncreasingBijectionOfReals):
    """The transform y = exp(x)."""
    codomain = constraints.positive

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @lazy_property
    def sign(self):
        return self.exponent.sign()

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool(self.exponent.eq(other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return hookgrad.broadcast_shapes(shape, tuple(self.exponent.shape))

    def inverse_shape(self, shape):
        return hookgrad.broadcast_shapes(shape, tuple(self.exponent.shape))


def _clipped_sigmoid(x):
    """The sigmoid kept inside (0, 1) so that its logarithms stay finite."""
    finfo = hookgrad.finfo(x.dtype)
    return x.sigmoid().clamp(min=finfo.tiny, max=1.0 - finfo.eps)


class SigmoidTransform(_IncreasingBijectionOfReals):
    """The transform y = 1 / (1 + exp(-x))."""
    codomain = constraints.unit_interval

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        finfo = hookgrad.finfo(y.dtype)
        y = y.clamp(min=finfo.tiny, max=1.0 - finfo.eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-x) - softplus(x)


class SoftplusTransform(_IncreasingBijectionOfReals):
    """The transform y = log(1 + exp(x)); its inverse is log(exp(y) - 1)."""
    codomain = constraints.positive

    def _call(self, x):
        return softplus(x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y  # log(exp(y) - 1), stable for large y

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-x)


class TanhTransform(_IncreasingBijectionOfReals):
    """The transform y = tanh(x), computed stably in both directions."""
    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2) written without cancellation for large |x|
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class AbsTransform(_ParameterFreeTransform):
    """The transform y = |x| (not bijective: it has no log-determinant)."""
    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x``; with ``event_dim > 0`` the log-Jacobian sums over the event."""

    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @constraints.dependent_property(is_discrete=False)
    def domain(self):
        return constraints.real if self.event_dim == 0 else constraints.independent(constraints.real, self.event_dim)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self):
        return constraints.real if self.event_dim == 0 else constraints.independent(constraints.real, self.event_dim)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self.event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False
        for mine, theirs in ((self.loc, other.loc), (self.scale, other.scale)):
            if isinstance(mine, numbers.Number) and isinstance(theirs, numbers.Number):
                if mine != theirs:
                    return False
            elif not bool((mine == theirs).all()):
                return False
        return True

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Number):
            scale = float(self.scale)
            return 1 if scale > 0 else -1 if scale < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = tuple(x.shape)
        if isinstance(self.scale, numbers.Number):
            result = hookgrad.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self.event_dim:
            result = result.reshape(tuple(result.shape[:-self.event_dim]) + (-1,)).sum(-1)
            shape = shape[:-self.event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        return hookgrad.broadcast_shapes(shape, tuple(getattr(self.loc, "shape", ())),
                                         tuple(getattr(self.scale, "shape", ())))

    inverse_shape = forward_shape


class CorrCholeskyTransform(Transform):
    """Unconstrained vector of length D*(D-1)/2 -> Cholesky factor of a DxD correlation matrix
    (tanh to (-1, 1), then stick-breaking along each row so that rows have unit norm)."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = hookgrad.finfo(x.dtype).eps
        partial = x.tanh().clamp(min=-1 + eps, max=1 - eps)
        r = vec_to_tril_matrix(partial, diag=-1)
        remaining = (1 - r ** 2).sqrt().cumprod(-1)
        r = r + hookgrad.eye(r.shape[-1], dtype=r.dtype)
        return r * pad(remaining[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        left = 1 - (y * y).cumsum(dim=-1)
        left_before = pad(left[..., :-1], [1, 0], value=1)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(left_before, diag=-1).sqrt()
        return (t.log1p() - t.neg().log1p()) / 2  # atanh

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        left = 1 - (y * y).cumsum(dim=-1)
        stick_breaking = 0.5 * tril_matrix_to_vec(left, diag=-2).log().sum(-1)
        tanh_part = -2 * (x + softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick_breaking + tanh_part

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return hookgrad.Size(tuple(shape[:-1]) + (d, d))

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return hookgrad.Size(tuple(shape[:-2]) + (d * (d - 1) // 2,))


class SoftmaxTransform(_ParameterFreeTransform):
    """Real vector -> simplex by softmax (not bijective; the inverse is the log)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        unnormalized = (x - x.max(-1, True)[0]).exp()
        return unnormalized / unnormalized.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    inverse_shape = forward_shape


class StickBreakingTransform(_ParameterFreeTransform):
    """Real vector of length K-1 -> K-simplex by breaking off a sigmoid share of what is left."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    @staticmethod
    def _offset(n, like):
        # log(K - i) shifts make x = 0 map to the uniform point of the simplex
        return n + 1 - like.new_ones(n).cumsum(-1)

    def _call(self, x):
        share = _clipped_sigmoid(x - self._offset(x.shape[-1], x).log())
        left = (1 - share).cumprod(-1)
        return pad(share, [0, 1], value=1) * pad(left, [1, 0], value=1)

    def _inverse(self, y):
        head = y[..., :-1]
        offset = y.shape[-1] - y.new_ones(head.shape[-1]).cumsum(-1)
        left = (1 - head.cumsum(-1)).clamp(min=hookgrad.finfo(y.dtype).tiny)
        return head.log() - left.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        shifted = x - self._offset(x.shape[-1], x).log()
        return (-shifted + logsigmoid(shifted) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return hookgrad.Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return hookgrad.Size(tuple(shape[:-1]) + (shape[-1] - 1,))


class LowerCholeskyTransform(_ParameterFreeTransform):
    """Unconstrained square matrix -> lower-triangular with positive (exponentiated) diagonal."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + _diag_embed(_diagonal(x).exp())

    def _inverse(self, y):
        return y.tril(-1) + _diag_embed(_diagonal(y).log())


class PositiveDefiniteTransform(_ParameterFreeTransform):
    """Unconstrained square matrix -> positive-definite matrix L L^T (L from LowerCholeskyTransform)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        factor = LowerCholeskyTransform()(x)
        return factor @ factor.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(hookgrad.linalg.cholesky(y))


def _check_dim(dim, tensor, name):
    if not -tensor.dim() <= dim < tensor.dim():
        raise AssertionError(f"dim {dim} out of range for {name} with {tensor.dim()} dimensions")


def _cached_parts(tseq, cache_size) -> list:
    """CatTransform's and StackTransform's transforms, checked, each with the cache size of the whole."""
    if not all(isinstance(t, Transform) for t in tseq):
        raise AssertionError("All elements of tseq must be Transform instances")
    return [t.with_cache(cache_size) for t in tseq] if cache_size else list(tseq)


class CatTransform(Transform):
    """Apply ``tseq[i]`` to consecutive slices of ``lengths[i]`` along ``dim`` and concatenate."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        transforms = _cached_parts(tseq, cache_size)
        super().__init__(cache_size=cache_size)
        self.transforms = transforms
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")
        self.dim = dim

    @lazy_property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _pieces(self, tensor, name):
        _check_dim(self.dim, tensor, "tensor")
        if tensor.size(self.dim) != self.length:
            raise AssertionError(f"{name}.size({self.dim}) = {tensor.size(self.dim)} must equal length {self.length}")
        start = 0
        for length in self.lengths:
            yield tensor.narrow(self.dim, start, length)
            start += length

    def _call(self, x):
        return hookgrad.cat([t(p) for t, p in zip(self.transforms, self._pieces(x, "x"))], dim=self.dim)

    def _inverse(self, y):
        return hookgrad.cat([t.inv(p) for t, p in zip(self.transforms, self._pieces(y, "y"))], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        terms = []
        for t, xp, yp in zip(self.transforms, self._pieces(x, "x"), self._pieces(y, "y")):
            term = t.log_abs_det_jacobian(xp, yp)
            if t.event_dim < self.event_dim:
                term = _sum_rightmost(term, self.event_dim - t.event_dim)
            terms.append(term)
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        return hookgrad.cat(terms, dim=dim) if dim < 0 else sum(terms)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Apply ``tseq[i]`` to index ``i`` along ``dim`` and stack the results."""

    def __init__(self, tseq, dim=0, cache_size=0):
        transforms = _cached_parts(tseq, cache_size)
        super().__init__(cache_size=cache_size)
        self.transforms = transforms
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z, dim_name, size_name):
        _check_dim(self.dim, z, dim_name)
        if z.size(self.dim) != len(self.transforms):
            raise AssertionError(f"{size_name}.size({self.dim}) = {z.size(self.dim)} must equal len(transforms) "
                                 f"{len(self.transforms)}")
        return [z.select(self.dim, i) for i in range(z.size(self.dim))]

    def _call(self, x):
        pieces = self._slice(x, "tensor", "x")
        return hookgrad.stack([t(p) for p, t in zip(pieces, self.transforms)], dim=self.dim)

    def _inverse(self, y):
        pieces = self._slice(y, "tensor", "y")
        return hookgrad.stack([t.inv(p) for p, t in zip(pieces, self.transforms)], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        pairs = zip(self._slice(x, "x", "x"), self._slice(y, "y", "y"), self.transforms)
        return hookgrad.stack([t.log_abs_det_jacobian(a, b) for a, b, t in pairs], dim=self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """The CDF of a univariate distribution as a transform onto the unit interval."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)
