"""``torch.func``: function transforms built on hookgrad's engine.

``grad`` differentiates a function of tensors by running it and calling ``autograd.grad`` (with
``create_graph``, so transforms nest); ``vmap`` maps a function over a batch dim by running it per
slice and stacking the results (same numbers as a vectorized map; random ops draw per slice);
``functional_call`` runs a module with some parameters and buffers swapped for given tensors.
"""
from __future__ import annotations

import contextlib
import functools

import hookgrad
from ._tensor import Tensor

__all__ = ["grad", "grad_and_value", "vjp", "jacrev", "vmap", "functional_call"]


def _tree_map(fn, tree):
    if isinstance(tree, Tensor):
        return fn(tree)
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return type(tree)(*[_tree_map(fn, v) for v in tree])
    if isinstance(tree, (list, tuple)):
        return type(tree)(_tree_map(fn, v) for v in tree)
    if isinstance(tree, dict):
        return type(tree)((k, _tree_map(fn, v)) for k, v in tree.items())
    return tree


def _leaves(tree) -> list:
    found = []
    _tree_map(lambda t: found.append(t) or t, tree)
    return found


def _as_differentiable(t: Tensor) -> Tensor:
    # keep the link to an outer graph (nested transforms), else start a fresh leaf
    return t.clone() if t.requires_grad else t.detach().requires_grad_()


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """A function returning (gradient of ``func`` w.r.t. the ``argnums`` args, ``func``'s value)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        numbers = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        args = list(args)
        # under an outer transform (or an outer graph) the results stay differentiable
        nested = hookgrad.is_grad_enabled() and any(t.requires_grad for a in args for t in _leaves(a))
        for n in numbers:
            args[n] = _tree_map(_as_differentiable, args[n])
        with hookgrad.enable_grad():
            result = func(*args, **kwargs)
            output, aux = (result if has_aux else (result, None))
            if not isinstance(output, Tensor) or output.numel() != 1:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"{type(output).__name__ if not isinstance(output, Tensor) else 'tensor of shape ' + str(list(output.shape))}")
            wrt = [_leaves(args[n]) for n in numbers]
            flat = [t for group in wrt for t in group]
            grads = hookgrad.autograd.grad(output, flat, create_graph=True, allow_unused=True)
        grads = [g if g is not None else hookgrad.zeros_like(t) for g, t in zip(grads, flat)]
        it = iter(grads)
        per_arg = [_tree_map(lambda _: next(it), args[n]) for n in numbers]
        gradient = per_arg[0] if isinstance(argnums, int) else tuple(per_arg)
        if not nested:
            gradient, output = _tree_map(Tensor.detach, gradient), output.detach()
        value = (output, aux) if has_aux else output
        return gradient, value

    return wrapper


def grad(func, argnums=0, has_aux: bool = False):
    """A function returning the gradient of scalar-valued ``func`` w.r.t. its ``argnums`` args."""
    transformed = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradient, value = transformed(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapper


def vjp(func, *primals, has_aux: bool = False):
    """(``func(*primals)``, a function mapping cotangents to vector-Jacobian products)."""
    inputs = [_tree_map(_as_differentiable, p) for p in primals]
    with hookgrad.enable_grad():
        result = func(*inputs)
    output, aux = (result if has_aux else (result, None))

    def vjp_fn(*cotangents):
        outs, cots = _leaves(output), _leaves(cotangents)
        flat = [t for p in inputs for t in _leaves(p)]
        grads = hookgrad.autograd.grad(outs, flat, cots, create_graph=True, allow_unused=True)
        grads = [g if g is not None else hookgrad.zeros_like(t) for g, t in zip(grads, flat)]
        it = iter(grads)
        return tuple(_tree_map(lambda _: next(it), p) for p in inputs)

    return (output, vjp_fn, aux) if has_aux else (output, vjp_fn)


def jacrev(func, argnums=0, has_aux: bool = False):
    """The Jacobian of ``func`` w.r.t. one argument, one reverse pass per output element."""
    if not isinstance(argnums, int):
        raise NotImplementedError("hookgrad's jacrev takes a single argnums")

    def wrapper(*args, **kwargs):
        args = list(args)
        x = _as_differentiable(args[argnums])
        args[argnums] = x
        with hookgrad.enable_grad():
            result = func(*args, **kwargs)
        output, aux = (result if has_aux else (result, None))
        rows = []
        flat = output.reshape(-1)
        for i in range(flat.numel()):
            g, = hookgrad.autograd.grad(flat[i], x, retain_graph=True, create_graph=True, allow_unused=True)
            rows.append(g if g is not None else hookgrad.zeros_like(x))
        jac = hookgrad.stack(rows, 0).reshape(*output.shape, *x.shape)
        return (jac, aux) if has_aux else jac

    return wrapper


def _dims_for(in_dims, args):
    if isinstance(in_dims, int) or in_dims is None:
        return [in_dims] * len(args)
    if len(in_dims) != len(args):
        raise ValueError(f"vmap(func, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {len(in_dims)} but inputs has {len(args)}")
    return list(in_dims)


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """``func`` mapped over dim ``in_dims`` of its tensor arguments, results stacked at ``out_dims``."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        dims = _dims_for(in_dims, args)
        sizes = {t.shape[d] for a, d in zip(args, dims) if d is not None for t in _leaves(a)}
        if not sizes:
            raise ValueError("vmap(func, in_dims=...)(<inputs>): at least one input must be a Tensor mapped over "
                             "a dim (in_dims not all None)")
        if len(sizes) != 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sorted(sizes)} for the mapped dimension")
        batch = sizes.pop()
        results = []
        for i in range(batch):
            sliced = [a if d is None else _tree_map(lambda t, d=d: t.select(d, i), a) for a, d in zip(args, dims)]
            results.append(func(*sliced, **kwargs))
        return _stack_results(results, out_dims)

    return wrapper


def _stack_results(results, out_dims):
    first = results[0]
    if isinstance(first, Tensor):
        return hookgrad.stack(results, out_dims if isinstance(out_dims, int) else out_dims[0])
    if isinstance(first, (tuple, list)):
        dims = out_dims if isinstance(out_dims, (tuple, list)) else [out_dims] * len(first)
        return type(first)(_stack_results([r[k] for r in results], dims[k]) for k in range(len(first)))
    if isinstance(first, dict):
        return {k: _stack_results([r[k] for r in results], out_dims) for k in first}
    raise ValueError(f"vmap: `{type(first).__name__}` outputs are not supported; return tensors")


@contextlib.contextmanager
def _swapped(module, tensors: dict):
    saved = []
    try:
        for name, value in tensors.items():
            owner_name, _, attr = name.rpartition(".")
            owner = module.get_submodule(owner_name) if owner_name else module
            if attr in owner._parameters:
                saved.append((owner._parameters, attr, owner._parameters[attr]))
                owner._parameters[attr] = value
            elif attr in owner._buffers:
                saved.append((owner._buffers, attr, owner._buffers[attr]))
                owner._buffers[attr] = value
            else:
                saved.append((owner.__dict__, attr, owner.__dict__.get(attr, _MISSING)))
                owner.__dict__[attr] = value
        yield
    finally:
        for store, attr, value in reversed(saved):
            if value is _MISSING:
                store.pop(attr, None)
            else:
                store[attr] = value


_MISSING = object()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """Call ``module`` with the named parameters/buffers replaced by the given tensors for this call."""
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = dict(parameter_and_buffer_dicts)
    else:
        tensors = {}
        for d in parameter_and_buffer_dicts:
            overlap = set(tensors) & set(d)
            if overlap:
                raise ValueError(f"{sorted(overlap)} appeared in multiple dictionaries; behavior of functional call "
                                 f"is ambiguous")
            tensors.update(d)
    if strict:
        expected = {n for n, _ in module.named_parameters()} | {n for n, _ in module.named_buffers()}
        missing, unexpected = sorted(expected - set(tensors)), sorted(set(tensors) - expected)
        if missing or unexpected:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\tMissing key(s): "
                               f"{missing}.\n\tUnexpected key(s): {unexpected}.")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, tensors):
        return module(*args, **(kwargs or {}))
