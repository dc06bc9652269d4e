"""torch's deprecated positional overloads, which torch 2.13 still takes with a UserWarning (once per
process, every time under ``set_warn_always(True)``): a scale given before the tensors.

    x.add_(-lr, grad)                       # add_(other, alpha=-lr)
    x.addcmul_(0.5, a, b)                   # addcmul_(a, b, value=0.5)
    torch.addmm(beta, m, alpha, m1, m2)     # addmm(m, m1, m2, beta=beta, alpha=alpha)

Older optimizers (pytorch-ranger, torch-optimizer's, many papers' code) are written this way.
``rewrite_for`` gives the argument check layer (_argcheck) a function that turns such a call into
its current form, or None for the names without deprecated overloads.
"""
from __future__ import annotations

import numbers

import numpy as np

from ._tensor import Tensor
from .autograd import _warn_once

# name -> the names of its tensors after the input, and the scale's name
_SCALE_FIRST = {"add": (("other",), "alpha"), "sub": (("other",), "alpha"),
                "addcmul": (("tensor1", "tensor2"), "value"), "addcdiv": (("tensor1", "tensor2"), "value")}
_BETA_ALPHA = {"addmm": ("mat1", "mat2"), "addmv": ("mat", "vec"), "addr": ("vec1", "vec2"),
               "addbmm": ("batch1", "batch2"), "baddbmm": ("batch1", "batch2")}
_WARNED_KEY = "deprecated positional overload"  # torch warns once for all of them together


def _is_number(value) -> bool:
    return isinstance(value, (numbers.Number, np.generic)) and not isinstance(value, Tensor)


def _warn(name, old, new):
    message = (f"This overload of {name} is deprecated:\n\t{name}({old})\n"
               f"Consider using one of the following signatures instead:\n\t{name}({new})")
    if _warn_once.is_warn_always_enabled() or _WARNED_KEY not in _warn_once._already_warned:
        _warn_once._already_warned.add(_WARNED_KEY)
        _warn_once.warn_at_user_frame(message)


def _signature(parts, method):
    return ", ".join(parts) + ("" if method else ", *, Tensor out = None")


def rewrite_for(name: str, method: bool):
    """``(min positional count, position to test, rewrite(args, kwargs) -> (args, kwargs))`` for
    ``name`` (a function, or with ``method`` a Tensor method whose args start with self), or None."""
    base = name[:-1] if name.endswith("_") else name
    if base in _SCALE_FIRST:
        tensors, scale = _SCALE_FIRST[base]
        count = 2 + len(tensors)  # (input, scale, tensors...)
        head = [] if method else ["Tensor input"]
        old = _signature(head + [f"Number {scale}"] + [f"Tensor {t}" for t in tensors], method)
        new = ", ".join(head + [f"Tensor {t}" for t in tensors]) + f", *, Number {scale} = 1" + (
            "" if method else ", Tensor out = None")

        def rewrite(args, kwargs):
            if len(args) != count or not _is_number(args[1]) or scale in kwargs or not all(
                    isinstance(a, Tensor) for a in args[2:]):
                return args, kwargs   # not the deprecated form: the ordinary checks report it
            _warn(name, old, new)
            return (args[0], *args[2:]), dict(kwargs, **{scale: args[1]})
        return count, 1, rewrite
    if base in _BETA_ALPHA:
        first, second = _BETA_ALPHA[base]
        lead = [] if method else ["Tensor input"]
        new = ", ".join(lead + [f"Tensor {first}", f"Tensor {second}"]) + ", *, Number beta = 1, Number alpha = 1" + (
            "" if method else ", Tensor out = None")
        with_alpha = _signature(["Number beta"] + lead + ["Number alpha", f"Tensor {first}", f"Tensor {second}"],
                                method)
        beta_only = _signature(["Number beta"] + lead + [f"Tensor {first}", f"Tensor {second}"], method)

        def rewrite(args, kwargs):
            # function: (beta, input, [alpha,] t1, t2); method: (self, beta, [alpha,] t1, t2)
            scales_at = 1 if method else 0
            if len(args) not in (4, 5) or not _is_number(args[scales_at]) or "beta" in kwargs:
                return args, kwargs
            target = args[0] if method else args[1]
            rest = list(args[2:]) if method else [args[2], *args[3:]]
            if len(args) == 5:
                if not _is_number(rest[0]) or "alpha" in kwargs:
                    return args, kwargs
                alpha, rest = rest[0], rest[1:]
                kwargs = dict(kwargs, alpha=alpha)
                old = with_alpha
            else:
                old = beta_only
            if not isinstance(target, Tensor) or not all(isinstance(t, Tensor) for t in rest):
                return args, kwargs
            _warn(name, old, new)
            return (target, *rest), dict(kwargs, beta=args[scales_at])
        return 4, 1 if method else 0, rewrite
    return None
