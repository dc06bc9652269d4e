"""Grad mode: whether ops record a graph. Each switch works as a context manager and a decorator."""
from __future__ import annotations

import functools
import inspect

from .._late import LateNames
from ..utils._contextlib import _wrap_generator

# torch's switches change grad mode through ``torch._C._set_grad_enabled``, which function modes see
_above = LateNames(set_grad_enabled_entry="hookgrad._C:_set_grad_enabled", LIVE="hookgrad._C._torch_function",
                   torch_function_state="hookgrad._C._torch_function:_local")


class _GradState:
    """``enabled``: whether ops record a graph now. ``requested``: the grad mode as the switches set
    it (what ``is_grad_enabled`` reports); inside inference mode ops never record, whatever it is."""

    __slots__ = ("enabled", "inference", "requested")

    def __init__(self):
        self.enabled = True
        self.inference = False
        self.requested = True


STATE = _GradState()


class InferenceCounter(list):
    """The version counter of an inference tensor (made under ``inference_mode``), and its mark.

    torch's inference tensors track no version: reading ``_version`` raises, and an in-place
    update outside inference mode raises once the update is written, as torch's does. Views and
    detached aliases share it, so they are inference tensors too."""

    __slots__ = ()

    def __init__(self):
        super().__init__((0,))

    def __setitem__(self, index, value):
        if not STATE.inference:
            raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can "
                               "make a clone to get a normal tensor before doing inplace update.See "
                               "https://github.com/pytorch/rfcs/pull/17 for more details.")
        super().__setitem__(index, value)


def is_inference_tensor(t) -> bool:
    return t._version_counter.__class__ is InferenceCounter


def run_inside(fn, context):
    """``fn`` wrapped so that each call runs inside ``context()`` (a context manager): what a
    context manager does when it decorates a function."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with context():
            return fn(*args, **kwargs)
    return wrapper


def is_grad_enabled() -> bool:
    return STATE.requested if STATE.inference else STATE.enabled


def set_mode(mode: bool) -> None:
    """Grad mode ``mode``: ops record unless inference mode is on (``enable_grad`` inside
    ``inference_mode`` reports grad mode on, as torch's does, and records nothing)."""
    STATE.requested = mode
    STATE.enabled = mode and not STATE.inference


def _switch(mode) -> None:
    """``torch._C._set_grad_enabled(mode)``; straight to ``set_mode`` while no function mode is on this
    thread's stack (a bool argument calls on no subclass's override)."""
    if mode.__class__ is bool and not (_above.LIVE[0] and _above.torch_function_state.modes):
        set_mode(mode)
    else:
        _above.set_grad_enabled_entry(mode)  # (torch's TypeError for a non-bool)


def _saved_mode():
    return STATE.enabled, STATE.requested


def _restore_mode(saved) -> None:
    STATE.enabled, STATE.requested = saved


class unseen_no_grad:
    """Grad mode off for the library's own steps that torch takes in C++ (a function mode sees no
    ``_set_grad_enabled`` for them, where the public switches show it one)."""

    def __enter__(self):
        self._saved = _saved_mode()
        set_mode(False)

    def __exit__(self, *exc):
        _restore_mode(self._saved)


def is_inference_mode_enabled() -> bool:
    return STATE.inference


class _GradModeSwitch:
    """Base for the switches: sets grad mode on enter and puts the previous one back on exit, each
    through ``_C._set_grad_enabled`` as torch's do (a function mode sees both calls)."""

    mode: bool = True

    def __enter__(self):
        self.prev = is_grad_enabled()
        _switch(self.mode)
        return None

    def __exit__(self, *exc):
        _switch(self.prev)
        return False

    def __call__(self, fn):
        switch_cls, args = type(self), self._clone_args()

        if inspect.isclass(fn):
            import warnings
            warnings.warn("Decorating classes is deprecated and will be disabled in future versions. You should "
                          "only decorate functions or methods. To preserve the current behavior of class "
                          "decoration, you can directly decorate the `__init__` method and nothing else.",
                          FutureWarning, stacklevel=2)
            cls_to_build = fn

            def fn(*a, **kw):
                return cls_to_build(*a, **kw)

        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(functools.partial(switch_cls, *args), fn)

        return run_inside(fn, functools.partial(switch_cls, *args))

    def _clone_args(self):
        return ()

    def clone(self):
        return type(self)(*self._clone_args())


class _FixedSwitch(_GradModeSwitch):
    """A switch to a fixed mode, usable bare as a decorator (``@no_grad``) or called (``@no_grad()``)."""

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        return self(orig_func) if callable(orig_func) else self

    def __init__(self, orig_func=None):
        pass


class no_grad(_FixedSwitch):
    """Ops inside record no graph; results do not require grad."""

    mode = False


class enable_grad(_FixedSwitch):
    """Re-enable graph recording inside a no_grad region."""

    mode = True


class set_grad_enabled(_GradModeSwitch):
    """Set grad mode to ``mode``; takes effect at once (as a function) or for a ``with`` block."""

    def __init__(self, mode: bool):
        self.prev = is_grad_enabled()
        self.mode = mode
        _switch(mode)

    def __enter__(self):
        _switch(self.mode)  # (again, as torch's: the mode may have changed since)
        return None

    def _clone_args(self):
        return (self.mode,)

    def __repr__(self):
        cls = type(self)
        return f"{cls.__module__}.{cls.__qualname__}(mode={self.mode})"

    __str__ = __repr__

    def __call__(self, fn):
        # used as a decorator: undo the immediate switch made by __init__
        _switch(self.prev)
        return super().__call__(fn)


class inference_mode(_GradModeSwitch):
    """Grad mode off, and every tensor made inside is an inference tensor (no version counter; it
    cannot be saved for backward, updated in place or made to require grad outside the mode).
    ``inference_mode(False)`` leaves the mode and turns grad mode on, even inside ``no_grad``."""

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode):
            self.__init__(True)
            return self(mode)
        return self

    def __init__(self, mode=True):
        self.enabled_flag = self.mode = bool(mode)

    def __enter__(self):
        self._prev = _saved_mode()
        self._prev_inf = STATE.inference
        STATE.inference = self.enabled_flag
        set_mode(not self.enabled_flag)
        return None

    def __exit__(self, *exc):
        _restore_mode(self._prev)
        STATE.inference = self._prev_inf
        return False

    def _clone_args(self):
        return (self.enabled_flag,)


class _unsafe_preserve_version_counter:
    """Put the tensors' versions back, on exit, to what they were when this was made: in-place
    changes inside the block go unseen by autograd's saved-tensor checks."""

    def __init__(self, tensors):
        from .._tensor import Tensor
        self.tensors = (tensors,) if isinstance(tensors, Tensor) else tensors
        if not isinstance(self.tensors, tuple):
            raise AssertionError("Expected tensors to be a tuple")
        self.prev_versions = tuple(t._version for t in self.tensors)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        from .._C._autograd import _unsafe_set_version_counter
        _unsafe_set_version_counter(self.tensors, self.prev_versions)
        return False

    def __call__(self, fn):
        return run_inside(fn, lambda: self)
