"""The differential harness: write a scenario once against a framework ``T``; run it on torch and
on hookgrad; compare what each recorded.

    from difftest import differential, catch

    @differential
    def test_hooks_fire_once(T):
        log = []
        a = T.tensor([1.0, 2.0], requires_grad=True)
        a.register_hook(lambda g: log.append(("hook", g)))
        (a * a).sum().backward()
        return log, a.grad

A scenario returns any nesting of lists, tuples, dicts, numbers, strings, None, tensors, NumPy
arrays, dtypes and exception classes. Tensors compare by dtype, shape and values (float tolerance
``rtol``/``atol``, NaNs equal), dtypes by name, exceptions by class name. ``catch(fn)`` runs ``fn``
and records the exception class it raised (or its result), ``warns(fn)`` records the warning
categories it emitted. ``@differential(rtol=..., atol=...)`` sets the tolerance; extra pytest
parametrization works as usual (the framework is always the first argument, named ``T``).
"""
from __future__ import annotations

import functools
import inspect
import math
import warnings

import numpy as np
import pytest

import hookgrad
import torch

FRAMEWORKS = {"torch": torch, "hookgrad": hookgrad}


class Raised:
    """What ``catch`` records for an exception: its class name (messages differ on purpose)."""

    def __init__(self, exc: BaseException):
        self.cls = type(exc).__name__
        self.message = str(exc)

    def __repr__(self):
        return f"Raised({self.cls}: {self.message[:200]!r})"


def catch(fn, *args, **kwargs):
    """Call ``fn``; return its result, or a ``Raised`` record if it raised."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - recording the class is the point
        return Raised(exc)


def warns(fn, *args, **kwargs):
    """Call ``fn``; return (result, sorted warning category names it emitted)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = catch(fn, *args, **kwargs)
    return result, sorted({w.category.__name__ for w in caught})


def is_tensor(x) -> bool:
    return isinstance(x, (torch.Tensor, hookgrad.Tensor))


def normalize(x):
    """Turn a record into plain Python/NumPy values that mean the same on both frameworks."""
    if is_tensor(x):
        return ("tensor", str(x.dtype).split(".")[-1], tuple(x.shape), np.array(x.detach().tolist()))
    if isinstance(x, np.ndarray):
        return ("array", str(x.dtype), x.shape, x)
    if isinstance(x, (torch.dtype, hookgrad.dtype)):
        return ("dtype", str(x).split(".")[-1])
    if isinstance(x, (torch.Size, hookgrad.Size)):
        return ("size", tuple(x))
    if isinstance(x, Raised):
        return ("raised", x.cls)
    if isinstance(x, type) and issubclass(x, BaseException):
        return ("raised", x.__name__)
    if isinstance(x, dict):
        return {k: normalize(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(normalize(v) for v in x) if type(x) in (list, tuple) else tuple(normalize(v) for v in x)
    return x


def assert_same(got, want, rtol=1e-5, atol=1e-6, path="result"):
    """Compare two normalized records; the message says where they first differ."""
    if isinstance(want, tuple) and want and want[0] in ("tensor", "array"):
        assert isinstance(got, tuple) and got and got[0] == want[0], f"{path}: {got!r} != {want!r}"
        assert got[1] == want[1], f"{path}: dtype {got[1]} != {want[1]}"
        assert tuple(got[2]) == tuple(want[2]), f"{path}: shape {got[2]} != {want[2]}"
        g, w = np.asarray(got[3]), np.asarray(want[3])
        if g.dtype.kind == "c" or w.dtype.kind == "c":  # complex values: both parts compared
            g, w = (np.stack([a.real, a.imag], -1) for a in (g.astype(np.complex128), w.astype(np.complex128)))
        if g.dtype.kind in "fc" or w.dtype.kind in "fc":
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                       atol=atol, equal_nan=True, err_msg=path)
        else:
            np.testing.assert_array_equal(g, w, err_msg=path)
        return
    if isinstance(want, dict):
        assert isinstance(got, dict), f"{path}: {got!r} is not a dict"
        assert list(got) == list(want), f"{path}: keys {list(got)} != {list(want)}"
        for k in want:
            assert_same(got[k], want[k], rtol, atol, f"{path}[{k!r}]")
        return
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)), f"{path}: {got!r} is not a sequence (want {want!r})"
        assert len(got) == len(want), f"{path}: length {len(got)} != {len(want)}\n got={got!r}\nwant={want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, rtol, atol, f"{path}[{i}]")
        return
    if isinstance(want, float) and isinstance(got, (int, float)):
        assert math.isclose(got, want, rel_tol=rtol, abs_tol=atol) or (math.isnan(got) and math.isnan(want)), \
            f"{path}: {got} != {want}"
        return
    assert got == want, f"{path}: {got!r} != {want!r}"


def run_both(scenario, *args, **kwargs):
    """Run ``scenario(T, ...)`` on both frameworks; return (hookgrad record, torch record)."""
    want = normalize(scenario(torch, *args, **kwargs))
    got = normalize(scenario(hookgrad, *args, **kwargs))
    return got, want


def differential(fn=None, *, rtol=1e-5, atol=1e-6):
    """Decorator turning a scenario ``fn(T, ...)`` into a test that compares torch and hookgrad."""
    if fn is None:
        return functools.partial(differential, rtol=rtol, atol=atol)

    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[1:]

    @functools.wraps(fn)
    def test(*args, **kwargs):
        got, want = run_both(fn, *args, **kwargs)
        assert_same(got, want, rtol, atol)

    test.__signature__ = sig.replace(parameters=params)
    return test


def run_functional_case(T, fn, arrays, upstream_seed=123):
    """One nn.functional case ``fn(T, F, *tensors)`` on framework ``T``: floating arrays become
    tensors that require grad; the output (its first tensor for a tuple) is backpropagated with a
    fixed random upstream gradient. Records the outputs, the gradients and the grad_fn name."""
    xs = [T.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = fn(T, T.nn.functional, *xs)
    outs = out if isinstance(out, tuple) else (out,)
    main = outs[0]
    rec = {"out": list(outs), "grad_fn": main.grad_fn.name() if main.grad_fn is not None else None}
    if main.requires_grad:
        g = np.random.default_rng(upstream_seed).standard_normal(tuple(main.shape))
        main.backward(T.tensor(g.astype(str(main.dtype).split(".")[-1])))
        rec["grads"] = [x.grad for x in xs if x.requires_grad]
    return rec


def check_functional(fn, *arrays, rtol=1e-6, atol=1e-7, grad_fn=True):
    """``run_functional_case`` on both frameworks, compared (the grad_fn name only if ``grad_fn``)."""
    got, want = run_both(run_functional_case, fn, arrays)
    if not grad_fn:
        got.pop("grad_fn"), want.pop("grad_fn")
    assert_same(got, want, rtol, atol)
