"""The ``Distribution`` base class: batch and event shapes, sampling shapes, argument and sample
validation with torch's messages."""
from __future__ import annotations

import warnings

import hookgrad
from . import constraints
from .utils import _batch_shape_of, broadcast_all, lazy_property

__all__ = ["Distribution"]


class Distribution:
    """A family of probability distributions with a batch of parameters.

    ``batch_shape`` indexes independent distributions; ``event_shape`` is the shape of one draw.
    Validation (argument constraints on construction, support checks on ``log_prob``) is on by
    default, off under ``python -O``, and switched globally by ``set_default_validate_args``."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value):
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=hookgrad.Size(), event_shape=hookgrad.Size(), validate_args=None):
        self._batch_shape = hookgrad.Size(batch_shape)
        self._event_shape = hookgrad.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_arguments()
        super().__init__()

    def _check_arguments(self):
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set `arg_constraints = {{}}` "
                          "or initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=3)
        for name, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if name not in self.__dict__ and isinstance(getattr(type(self), name, None), lazy_property):
                continue  # derived lazily from another parameter that is checked itself
            value = getattr(self, name)
            if not bool(constraint.check(value).all()):
                raise ValueError(f"Expected parameter {name} ({type(value).__name__} of shape "
                                 f"{tuple(value.shape)}) of distribution {self!r} to satisfy the constraint "
                                 f"{constraint!r}, but found invalid values:\n{value}")

    def expand(self, batch_shape, _instance=None):
        """A new distribution with the parameters expanded (not copied) to ``batch_shape``."""
        raise NotImplementedError

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=hookgrad.Size()):
        with hookgrad.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=hookgrad.Size()):
        raise NotImplementedError

    def sample_n(self, n):
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning, stacklevel=2)
        return self.sample(hookgrad.Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=hookgrad.Size()):
        return hookgrad.Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        if not isinstance(value, hookgrad.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        actual = value.size()
        event_start = len(actual) - len(self._event_shape)
        if actual[event_start:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: {actual} vs {self._event_shape}.")
        expected = self._batch_shape + self._event_shape
        for a, e in zip(reversed(actual), reversed(expected)):
            if a != 1 and e != 1 and a != e:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          "initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=2)
            return
        if not bool(support.check(value).all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support!r}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def _expanded(self, cls, batch_shape, _instance, names, param_event_dims=0, event_shape=None):
        """``expand`` for the common case: each parameter (or inner distribution) in ``names`` that the
        instance holds is expanded to ``batch_shape`` (plus its own ``param_event_dims`` rightmost
        dimensions)."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = hookgrad.Size(batch_shape)
        for name in names:
            if name in self.__dict__:
                value = self.__dict__[name]
                tail = tuple(value.shape[value.dim() - param_event_dims:]) if param_event_dims else ()
                setattr(new, name, value.expand(tuple(batch_shape) + tail))
        return self._finish_expanded(new, batch_shape, event_shape)

    def _expand_held_onto(self, new, names, shape):
        """Sets on ``new`` each of ``names`` that this instance holds (given, or computed lazily
        already), expanded to ``shape``."""
        for name in names:
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(shape))

    def _finish_expanded(self, new, batch_shape, event_shape=None):
        """Ends an ``expand``: gives ``new`` its shapes (this one's event shape unless told) and this
        one's validation setting, without validating the expanded parameters again."""
        Distribution.__init__(new, batch_shape, self._event_shape if event_shape is None else event_shape,
                              validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _expanded_probs_or_logits(self, cls, batch_shape, _instance, other_names=(), param_event_dims=0):
        """``_expanded`` for a distribution given ``probs`` or ``logits`` and keeping it as ``_param``."""
        new = self._expanded(cls, batch_shape, _instance, other_names + ("probs", "logits"), param_event_dims)
        new._param = new.__dict__["logits" if "logits" in self.__dict__ else "probs"]
        return new

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        shown = (f"{k}: {self.__dict__[k] if self.__dict__[k].numel() == 1 else self.__dict__[k].size()}"
                 for k in names)
        return f"{type(self).__name__}({', '.join(shown)})"


class _CentredAtLoc:
    """For a distribution symmetric and unimodal about its ``loc`` parameter: mean and mode are ``loc``.
    Listed before the distribution base class."""

    @property
    def mean(self):
        return self.loc

    mode = mean


class _GivenProbsOrLogits:
    """For a distribution that keeps whichever of ``probs`` and ``logits`` it was given as ``_param``:
    new tensors are made like it, and its shape is the parameter shape. Listed before the
    distribution base class."""

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @property
    def param_shape(self):
        return self._param.size()


class _LocScaleParameters:
    """For a distribution given ``loc`` and ``scale``, broadcast together; ``expand`` expands both.
    Listed before the distribution base class."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if _LocScaleParameters in cls.__bases__:
            cls._family = cls  # what ``expand`` builds, and what a subclass with its own __init__ must redo it for

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(_batch_shape_of((loc, scale), self.loc), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(self._family, batch_shape, _instance, ("loc", "scale"))
