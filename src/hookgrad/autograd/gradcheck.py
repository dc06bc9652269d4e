"""Finite-difference checks of gradients (``gradcheck``) and of gradients of gradients."""
from __future__ import annotations

import numpy as np


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when analytical and numerical gradients disagree."""


def _flatten_outputs(out):
    from .._tensor import Tensor
    if isinstance(out, Tensor):
        return (out,)
    return tuple(o for o in out if isinstance(o, Tensor))


def gradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False, fast_mode=False,
              masked=None, **unused) -> bool:
    """Compare ``fn``'s analytical Jacobian (via ``autograd.grad``) with central differences."""
    from .._tensor import Tensor
    from . import grad as autograd_grad

    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    diff_inputs = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    outputs = _flatten_outputs(fn(*inputs))
    if not any(out.requires_grad for out in outputs):
        # no output has a graph: then none may depend on the inputs (as torch checks); a backward
        # formula that forgot to record its own graph shows up here under gradgradcheck
        for oi, out in enumerate(outputs):
            if out._data.dtype.kind in "fc" and not _independent_of_inputs(fn, inputs, diff_inputs, oi, eps, atol):
                if raise_exception:
                    raise GradcheckError("Numerical gradient for function expected to be zero")
                return False
        return True
    for oi, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        n_out = out.numel()
        # complex numbers count as pairs of reals (as in torch's gradcheck): a complex output gives a
        # row for its real part (seed 1) and one for its imaginary part (seed 1j); a complex input a
        # column for a perturbation of its real part and one of its imaginary part
        seeds = (1, 1j) if out._data.dtype.kind == "c" else (1,)
        analytical = [np.zeros((n_out * len(seeds), _real_size(t))) for t in diff_inputs]
        from .._tensor import wrap
        for j in range(n_out):
            for si, value in enumerate(seeds):
                seed = np.zeros(n_out, dtype=out._data.dtype)
                seed[j] = value
                grads = autograd_grad(out, diff_inputs, wrap(seed.reshape(out._data.shape)), retain_graph=True,
                                      allow_unused=True)
                for k, g in enumerate(grads):
                    if g is not None:
                        analytical[k][j * len(seeds) + si] = _as_reals(g._data, diff_inputs[k]._data.dtype.kind == "c")
        for k, t in enumerate(diff_inputs):
            numerical = np.zeros_like(analytical[k])
            flat = t._data.reshape(-1)
            steps = (eps, eps * 1j) if t._data.dtype.kind == "c" else (eps,)
            for i in range(t.numel()):
                for si, step in enumerate(steps):
                    numerical[:, i * len(steps) + si] = _numerical_column(fn, inputs, oi, flat, i, step)
            if not np.allclose(analytical[k], numerical, rtol=rtol, atol=atol):
                if raise_exception:
                    raise GradcheckError(
                        f"Jacobian mismatch for output {oi} with respect to input {k},\n"
                        f"numerical:{numerical}\nanalytical:{analytical[k]}\n")
                return False
    return True


def _real_size(t) -> int:
    return t.numel() * (2 if t._data.dtype.kind == "c" else 1)


def _as_reals(data: np.ndarray, complex_input: bool) -> np.ndarray:
    """Values as float64 reals, a complex value as (real, imaginary) in a row."""
    if complex_input or data.dtype.kind == "c":
        data = data.astype(np.complex128)
        return np.stack([data.real, data.imag], -1).reshape(-1) if complex_input else data.real.reshape(-1)
    return data.astype(np.float64).reshape(-1)


def _numerical_column(fn, inputs, oi, flat, i, eps):
    """Central differences of output ``oi`` (as reals) for a step ``eps`` (real, or imaginary for the
    imaginary part of a complex input) of element ``i``."""
    orig = flat[i]
    # perturb the array directly (no autograd op); fn may itself need grad mode
    # each output read out (copied) before the next step: it may be a view of the input
    flat[i] = orig + eps
    out = _flatten_outputs(fn(*inputs))[oi]._data
    is_complex = out.dtype.kind == "c"
    plus = _as_reals(out, is_complex).copy()
    flat[i] = orig - eps
    minus = _as_reals(_flatten_outputs(fn(*inputs))[oi]._data, is_complex).copy()
    flat[i] = orig
    return (plus - minus) / (2 * abs(eps))


def _independent_of_inputs(fn, inputs, diff_inputs, oi, eps, atol) -> bool:
    for t in diff_inputs:
        flat = t._data.reshape(-1)
        steps = (eps, eps * 1j) if t._data.dtype.kind == "c" else (eps,)
        for i in range(t.numel()):
            for step in steps:
                if not np.allclose(_numerical_column(fn, inputs, oi, flat, i, step), 0.0, rtol=0.0, atol=atol):
                    return False
    return True


def _random_like(rng, data: np.ndarray) -> np.ndarray:
    values = rng.standard_normal(data.shape)
    if data.dtype.kind == "c":
        values = values + 1j * rng.standard_normal(data.shape)
    return values.astype(data.dtype)


def gradgradcheck(fn, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
                  **unused) -> bool:
    """gradcheck applied to the function that maps inputs to their (create_graph) gradients."""
    from .._tensor import Tensor, wrap
    from . import grad as autograd_grad

    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    outputs = [o for o in _flatten_outputs(fn(*inputs)) if o.requires_grad]
    if grad_outputs is None:
        # random grad_outputs that require grad: the first gradients must be differentiable with
        # respect to them too (as in torch), which catches a backward formula computed off the graph
        rng = np.random.default_rng(0)
        grad_outputs = [wrap(_random_like(rng, o._data)).requires_grad_() for o in outputs]
    else:
        grad_outputs = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    n_grads = len(grad_outputs)

    def first_grads(*args):
        args, gos = args[:len(args) - n_grads], args[len(args) - n_grads:]
        outs = [o for o in _flatten_outputs(fn(*args)) if o.requires_grad]
        d_in = [a for a in args if isinstance(a, Tensor) and a.requires_grad]
        gs = autograd_grad(outs, d_in, list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grads, (*inputs, *grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
