"""``torch.func``: function transforms built on hookgrad's engine.

``grad`` differentiates a function of tensors by running it and calling ``autograd.grad`` (with
``create_graph``, so transforms nest); ``vmap`` runs the function once on batched tensors
(``_functorch/vmap.py``: per-op batching rules, a per-slice fallback per op); a transform inside vmap
differentiates the batched inputs in one backward pass; ``functional_call`` runs a module with some
parameters and buffers swapped for given tensors.

Forward-mode transforms (``jvp``, ``jacfwd``, ``linearize``) are computed in reverse mode with the
same numbers: ``jvp`` by the double-backward trick (the vector-Jacobian product ``u -> J^T u`` is
linear in ``u``, so differentiating it with respect to ``u`` along a tangent gives ``J t``),
``jacfwd`` row by row as ``jacrev`` does; ``hessian`` is ``jacfwd(jacrev(f))``.
"""
from __future__ import annotations

import contextlib
import functools

from ._einops import rearrange

import hookgrad
from ._tensor import Tensor
from .autograd import _dual

__all__ = ["grad", "grad_and_value", "vjp", "jacrev", "vmap", "functional_call", "jvp", "jacfwd", "hessian",
           "linearize", "stack_module_state", "functionalize", "replace_all_batch_norm_modules_", "debug_unwrap",
           "rearrange"]


# how many torch.func transforms (grad, vjp, jacrev/jacfwd, jvp, vmap) are running their function now:
# torch._C._are_functorch_transforms_active() answers from it, and backward() refuses to run under one
from .autograd import TRACKED_INPUTS, TRANSFORMS_ACTIVE  # noqa: E402


@contextlib.contextmanager
def _transform_active(inputs=None, levels: int = 1):
    """A transform's function runs: ``levels`` more transforms count as running (jacfwd is torch's
    vmap of jvp: two); a differentiating one's ``inputs`` (trees) are tracked at its level."""
    TRANSFORMS_ACTIVE[0] += levels
    tracked = inputs is not None
    if tracked:
        TRACKED_INPUTS.append((TRANSFORMS_ACTIVE[0], [t for tree in inputs for t in _leaves(tree)]))
    try:
        yield
    finally:
        if tracked:
            TRACKED_INPUTS.pop()
        TRANSFORMS_ACTIVE[0] -= levels


from ._functorch.vmap import _tree_map  # noqa: E402  (the one walk over nested arguments)


def _leaves(tree) -> list:
    found = []
    _tree_map(lambda t: found.append(t) or t, tree)
    return found


def _as_differentiable(t: Tensor) -> Tensor:
    # keep the link to an outer graph (nested transforms, or grad mode on around the call), else start a
    # fresh leaf: a transform computes its own gradients even under an outer no_grad, as torch's do.
    # Inside vmap the input is batched over every running vmap first, so each example gets its own
    # gradient even for an input that is the same for all (vmap(grad(f), in_dims=(None, 0))).
    from ._functorch import vmap as batching
    t = batching.batched_over_all(t)
    return t.clone() if t.requires_grad and hookgrad.is_grad_enabled() else t.detach().requires_grad_()


def _autograd_grad(outputs, inputs, grad_outputs=None, **options):
    """``autograd.grad`` that understands batched tensors: one backward pass over the physical tensors
    (examples never mix, so each example's gradient lands in its own slice), the gradients batched as
    their inputs. Cotangents batched over a vmap their outputs are not batched over (``vmap(vjp_fn)``)
    take one pass per batch element."""
    from ._functorch import vmap as batching
    outs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    ins = list(inputs)
    if not batching.ACTIVE or not any(batching.is_batched(t) for t in outs + ins + _leaves(grad_outputs)):
        return hookgrad.autograd.grad(outputs, inputs, grad_outputs, **options)
    if grad_outputs is None:
        cots = [None] * len(outs)
    else:
        cots = list(grad_outputs) if isinstance(grad_outputs, (list, tuple)) else [grad_outputs]
    extra = set()
    for o, c in zip(outs, cots):
        if batching.is_batched(c):
            extra |= set(c._levels) - set(o._levels if batching.is_batched(o) else ())
    if extra:
        return _grad_per_cotangent_slice(outs, ins, cots, tuple(sorted(extra)), options)
    physical_outs, physical_cots = [], []
    for o, c in zip(outs, cots):
        po = batching.physical(o)
        physical_outs.append(po)
        if c is None:
            physical_cots.append(hookgrad.ones_like(po))
        else:
            levels = o._levels if batching.is_batched(o) else ()
            physical_cots.append(batching._full(c, levels) if levels else c)
    # not handed to the batching mode as an override: the pass's hooks see the batched gradients through it
    from ._C._torch_function import _skip_one_hop_torch_function
    physical_ins = [batching.physical(t) for t in ins]
    grads = _skip_one_hop_torch_function(hookgrad.autograd.grad, (), (physical_outs, physical_ins, physical_cots),
                                         options)
    return tuple(None if g is None else batching.wrap(g, t._levels) if batching.is_batched(t) else g
                 for g, t in zip(grads, ins))


def _grad_per_cotangent_slice(outs, ins, cots, levels, options):
    from ._functorch import vmap as batching
    import itertools
    sizes = batching._batch_shape(levels)
    full_cots = [batching._full(c, levels) if batching.is_batched(c) and set(levels) <= set(c._levels) else None
                 for c in cots]
    if any(f is None for f, c in zip(full_cots, cots) if batching.is_batched(c)):
        raise RuntimeError("vmap: cotangents batched over a subset of the extra vmap levels are not supported")
    per_slice = []
    indices = list(itertools.product(*[range(s) for s in sizes]))
    for n, index in enumerate(indices):
        sliced = [c if f is None else f[index] for c, f in zip(cots, full_cots)]
        keep = options.get("retain_graph") or n < len(indices) - 1
        with hookgrad.enable_grad():
            per_slice.append(hookgrad.autograd.grad(outs, ins, sliced, **{**options, "retain_graph": keep}))
    result = []
    for i in range(len(ins)):
        column = [g[i] for g in per_slice]
        if any(c is None for c in column):
            result.append(None)
            continue
        if any(batching.is_batched(c) for c in column):
            raise RuntimeError("vmap: gradients batched over an outer vmap for cotangents batched over an inner one "
                               "are not supported")
        stacked = hookgrad.stack(column, 0)
        result.append(batching.wrap(stacked.reshape(*sizes, *stacked.shape[1:]), levels))
    return tuple(result)


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
            with _transform_active([args[n] for n in numbers]):
                result = func(*args, **kwargs)
            output, aux = (result if has_aux else (result, None))
            if not isinstance(output, Tensor) or output.numel() != 1:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"{type(output).__name__ if not isinstance(output, Tensor) else 'tensor of shape ' + str(list(output.shape))}")
            wrt = [_leaves(args[n]) for n in numbers]
            flat = [t for group in wrt for t in group]
            grads = _autograd_grad(output, flat, create_graph=True, allow_unused=True)
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
    # under an outer transform (or an outer graph) the results stay differentiable
    nested = hookgrad.is_grad_enabled() and any(t.requires_grad for p in primals for t in _leaves(p))
    inputs = [_tree_map(_as_differentiable, p) for p in primals]
    with hookgrad.enable_grad():
        with _transform_active(inputs):
            result = func(*inputs)
    output, aux = (result if has_aux else (result, None))

    def vjp_fn(*cotangents):
        outs, cots = _leaves(output), _leaves(cotangents)
        keep = nested or (hookgrad.is_grad_enabled() and any(c.requires_grad for c in cots))
        flat = [t for p in inputs for t in _leaves(p)]
        with hookgrad.enable_grad():
            grads = _autograd_grad(outs, flat, cots, create_graph=True, allow_unused=True)
        grads = [g if g is None or keep else g.detach() for g in grads]
        grads = [g if g is not None else hookgrad.zeros_like(t) for g, t in zip(grads, flat)]
        it = iter(grads)
        return tuple(_tree_map(lambda _: next(it), p) for p in inputs)

    shown = output if nested else _tree_map(Tensor.detach, output)
    return (shown, vjp_fn, aux) if has_aux else (shown, vjp_fn)


def _argnums_checked(argnums, num_args: int):
    """``argnums`` as a tuple of non-negative positions (checked as torch checks them)."""
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    numbers = (argnums,) if isinstance(argnums, int) else argnums
    if not numbers:
        raise RuntimeError("argnums must be non-empty")
    if len(set(numbers)) != len(numbers):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    checked = []
    for n in numbers:
        if not isinstance(n, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        if not -num_args <= n < num_args:
            raise RuntimeError(f"Got argnum={n}, but only {num_args} positional inputs")
        checked.append(n % num_args)
    return tuple(checked)


def _jacobian_transform(func, argnums, has_aux: bool, api: str):
    """The Jacobian of ``func``'s output (a tree of tensors) w.r.t. the ``argnums`` args (trees of
    tensors): each output leaf becomes the input structure, each of its leaves of shape
    ``output.shape + input.shape``."""
    def wrapper(*args, **kwargs):
        numbers = _argnums_checked(argnums, len(args))
        args = list(args)
        nested = hookgrad.is_grad_enabled() and any(t.requires_grad for a in args for t in _leaves(a))
        for n in numbers:
            args[n] = _tree_map(_as_differentiable, args[n])
        flat_inputs = [t for n in numbers for t in _leaves(args[n])]
        if not flat_inputs:
            raise RuntimeError(f"{api}(f, ...)(*args): Expected args to be tensors")
        with hookgrad.enable_grad():
            with _transform_active([args[n] for n in numbers], levels=2 if api == "jacfwd" else 1):
                result = func(*args, **kwargs)
            if has_aux and not (isinstance(result, tuple) and len(result) == 2):
                raise RuntimeError(f"{api}(f, ...)(*args): output of function f should be a tuple: (output, aux) "
                                   "if has_aux is True")
            output, aux = (result if has_aux else (result, None))
            out_leaves = _leaves(output)
            if not out_leaves or any(not isinstance(o, Tensor) for o in _flat_items(output)):
                raise RuntimeError(f"{api}(f, ...)(*args): expected f(*args) to return only tensors, got "
                                   f"unsupported type {type(output).__name__}")
            from ._functorch import vmap as batching
            one_pass = api == "jacrev" and not batching.ACTIVE
            if one_pass:
                # every row in one backward pass with batched gradients, as torch's vmap of vjp
                from .autograd.functional import _vectorized_jacobian
                every = _vectorized_jacobian(tuple(out_leaves), tuple(flat_inputs), create_graph=nested)
            per_output = []
            for n_out, out in enumerate(out_leaves):
                blocks = list(every[n_out]) if one_pass else _rows_one_pass_each(out, flat_inputs)
                if not nested:
                    blocks = [b.detach() for b in blocks]
                it = iter(blocks)
                per_arg = tuple(_tree_map(lambda _: next(it), args[n]) for n in numbers)
                per_output.append(per_arg[0] if isinstance(argnums, int) else per_arg)
        it = iter(per_output)
        jac = _tree_map(lambda _: next(it), output)
        return (jac, aux) if has_aux else jac

    return wrapper


def _rows_one_pass_each(out, flat_inputs) -> list:
    """``out``'s Jacobian blocks, one for each input (``out.shape + input.shape``), a backward pass per
    element of ``out``."""
    rows = [[] for _ in flat_inputs]
    flat = out.reshape(-1)
    for k in range(out.numel()):
        grads = (_autograd_grad(flat[k], flat_inputs, retain_graph=True, create_graph=True, allow_unused=True)
                 if flat[k].requires_grad else [None] * len(flat_inputs))
        for j, (g, inp) in enumerate(zip(grads, flat_inputs)):
            rows[j].append(g if g is not None else hookgrad.zeros_like(inp))
    return [hookgrad.stack(r, 0).reshape(*out.shape, *inp.shape) if r else
            hookgrad.zeros(*out.shape, *inp.shape, dtype=inp.dtype) for r, inp in zip(rows, flat_inputs)]


def _flat_items(tree) -> list:
    """Every non-container item of ``tree`` (tensors and anything else)."""
    if isinstance(tree, (list, tuple)):
        return [x for v in tree for x in _flat_items(v)]
    if isinstance(tree, dict):
        return [x for v in tree.values() for x in _flat_items(v)]
    return [tree]


def jacrev(func, argnums=0, *, has_aux: bool = False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of ``func`` w.r.t. the ``argnums`` args, one reverse pass per output element."""
    return functools.wraps(func)(_jacobian_transform(func, argnums, has_aux, "jacrev"))


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """The Jacobian of ``func`` w.r.t. the ``argnums`` args (same result as forward mode; computed
    by reverse passes)."""
    return functools.wraps(func)(_jacobian_transform(func, argnums, has_aux, "jacfwd"))


def hessian(func, argnums=0):
    """The Hessian of scalar-valued ``func`` w.r.t. the ``argnums`` args: ``jacfwd(jacrev(func))``."""
    return jacfwd(jacrev(func, argnums), argnums)


def _structure(tree):
    if isinstance(tree, (list, tuple)):
        return (type(tree).__name__, tuple(_structure(v) for v in tree))
    if isinstance(tree, dict):
        return ("dict", tuple((k, _structure(v)) for k, v in tree.items()))
    return "*"


def _check_tangents(api: str, primals, tangents) -> None:
    if _structure(primals) != _structure(tangents):
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python structure. For example, "
                           "if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{_structure(primals)} and tangents with structure {_structure(tangents)}")
    for kind, tree in (("primals", primals), ("tangents", tangents)):
        items = _flat_items(tree)
        if not items:
            raise RuntimeError(f"{api}: Expected {kind} to be a non-empty list of tensors")
        if any(not isinstance(t, Tensor) for t in items):
            raise RuntimeError(f"{api}: Expected {kind} to only contain Tensors, got "
                               f"{next(type(t) for t in items if not isinstance(t, Tensor))}")
    for i, (p, t) in enumerate(zip(_leaves(primals), _leaves(tangents))):
        if p.shape != t.shape:
            raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the original "
                               f"Tensor, this is not supported. Tensor is of size {list(p.shape)} while the given "
                               f"forward gradient is of size {list(t.shape)}.")


def _run_for_products(api, func, primals, has_aux):
    inputs = [_tree_map(_as_differentiable, p) for p in primals]
    with hookgrad.enable_grad():
        with _transform_active(inputs):
            result = func(*inputs)
    if has_aux and not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    output, aux = (result if has_aux else (result, None))
    if not _leaves(output) or any(not isinstance(o, Tensor) for o in _flat_items(output)):
        raise RuntimeError(f"{api}: expected f(*args) to return only tensors, got unsupported type "
                           f"{type(output).__name__}")
    return inputs, output, aux


class _TangentMap:
    """``tangents -> J tangents`` for a recorded ``func`` run, by the double-backward trick."""

    def __init__(self, inputs, output):
        self.flat_inputs = [t for p in inputs for t in _leaves(p)]
        self.output = output
        self.out_leaves = _leaves(output)
        with hookgrad.enable_grad():
            self.dummies = [hookgrad.zeros_like(o, requires_grad=True) for o in self.out_leaves]
            live = [(o, u) for o, u in zip(self.out_leaves, self.dummies) if o.requires_grad]
            if live:
                outs, us = zip(*live)
                pulled = hookgrad.autograd.grad(outs, self.flat_inputs, us, create_graph=True, allow_unused=True)
            else:
                pulled = [None] * len(self.flat_inputs)
        self.pulled = [(g, t) for g, t in zip(pulled, range(len(self.flat_inputs))) if g is not None
                       and g.requires_grad]

    def __call__(self, tangents, keep_graph: bool):
        flat_tangents = _leaves(tangents)
        if self.pulled:
            grads, positions = zip(*self.pulled)
            with hookgrad.enable_grad(), _dual.products_through():
                pushed = hookgrad.autograd.grad(grads, self.dummies, [flat_tangents[i] for i in positions],
                                                retain_graph=True, create_graph=keep_graph, allow_unused=True)
        else:
            pushed = [None] * len(self.dummies)
        pushed = [p if p is not None else hookgrad.zeros_like(o) for p, o in zip(pushed, self.out_leaves)]
        it = iter(pushed)
        return _tree_map(lambda _: next(it), self.output)


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """(``func(*primals)``, the Jacobian-vector product along ``tangents``)."""
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")
    _check_tangents("jvp(f, primals, tangents)", primals, tangents)
    nested = hookgrad.is_grad_enabled() and any(t.requires_grad for t in _leaves(primals) + _leaves(tangents))
    inputs, output, aux = _run_for_products("jvp(f, primals, tangents)", func, primals, has_aux)
    tangent_out = _TangentMap(inputs, output)(tangents, keep_graph=nested)
    if not nested:
        output, tangent_out = _tree_map(Tensor.detach, output), _tree_map(Tensor.detach, tangent_out)
    return (output, tangent_out, aux) if has_aux else (output, tangent_out)


def linearize(func, *primals):
    """(``func(*primals)``, ``jvp_fn``): ``jvp_fn(*tangents)`` gives the Jacobian-vector product at
    ``primals`` without running ``func`` again."""
    inputs, output, _ = _run_for_products("linearize", func, primals, False)
    tangent_map = _TangentMap(inputs, output)
    structure = _structure(primals)

    def jvp_fn(*tangents):
        if _structure(tangents) != structure:
            raise RuntimeError(f"Expected the tangents {_structure(tangents)} to have the same argspec as the "
                               f"primals {structure}")
        for i, (p, t) in enumerate(zip(_leaves(primals), _leaves(tangents))):
            if p.shape != t.shape:
                raise RuntimeError(f"tangent:{i} with shape {t.shape} in flattened pytree doesn't match the shape "
                                   f"{p.shape} of the corresponding primal.")
            if p.dtype != t.dtype:
                raise RuntimeError(f"tangent:{i} with dtype {t.dtype} in flattened pytree doesn't match the dtype "
                                   f"{p.dtype} of the corresponding primal.")
        return _tree_map(Tensor.detach, tangent_map(tangents, keep_graph=False))

    return _tree_map(Tensor.detach, output), jvp_fn


def stack_module_state(models):
    """(params, buffers): each named parameter/buffer of the same-class ``models`` stacked on a new
    first dim; stacked parameters are new leaves (for ``vmap`` over ``functional_call``)."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(tensors, name):
        if len({t.requires_grad for t in tensors}) > 1:
            raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        result = hookgrad.stack(tensors)
        return result.detach().requires_grad_() if tensors[0].requires_grad else result

    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: stacked([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: stacked([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def _fits(dims, value) -> bool:
    """Whether ``dims`` (an int, None, or a nested tuple/list/dict of them) is a prefix of the
    structure of ``value``, as torch's vmap requires of ``in_dims``."""
    if dims is None or isinstance(dims, int):
        return True
    if isinstance(dims, (tuple, list)):
        return (isinstance(value, (tuple, list)) and isinstance(value, list) == isinstance(dims, list)
                and len(value) == len(dims) and all(_fits(d, v) for d, v in zip(dims, value)))
    if isinstance(dims, dict):
        return isinstance(value, dict) and set(value) == set(dims) and all(_fits(dims[k], value[k]) for k in dims)
    return False


def _with_dims(fn, value, dims, name, in_dims=None):
    """``value`` rebuilt with ``fn(tensor, dim)`` at each tensor leaf, its dim taken from ``dims``
    (a prefix of ``value``'s structure; None leaves the leaves under it as they are)."""
    if dims is None:
        return value
    if isinstance(dims, int):
        if not isinstance(value, (Tensor, tuple, list, dict)):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dims} for an input but the "
                             f"input is "
                             f"of type {type(value)}. We cannot vmap over non-Tensor arguments, please use None as "
                             "the respective in_dim")
        if isinstance(value, Tensor):
            return fn(value, dims)
        if isinstance(value, dict):
            return type(value)((k, _with_dims(fn, v, dims, name, in_dims)) for k, v in value.items())
        return type(value)(*[_with_dims(fn, v, dims, name, in_dims) for v in value]) if hasattr(value, "_fields") else \
            type(value)(_with_dims(fn, v, dims, name, in_dims) for v in value)
    if isinstance(dims, dict):
        return type(value)((k, _with_dims(fn, v, dims[k], name, in_dims)) for k, v in value.items())
    parts = [_with_dims(fn, v, d, name, in_dims) for v, d in zip(value, dims)]
    return type(value)(*parts) if hasattr(value, "_fields") else type(value)(parts)


def _dims_for(in_dims, args, name):
    if isinstance(in_dims, int) or in_dims is None:
        return [in_dims] * len(args)
    if not isinstance(in_dims, tuple):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if not _fits(in_dims, args):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {_structure(in_dims)} but inputs has "
                         f"structure {_structure(args)}.")
    return list(in_dims)


def _generators_in(args, kwargs) -> list:
    """The random generators a mapped call can draw from: the default one and any passed in."""
    found = [hookgrad.default_generator]

    def visit(value):
        if isinstance(value, hookgrad.Generator):
            if all(value is not g for g in found):
                found.append(value)
        elif isinstance(value, (list, tuple)):
            for v in value:
                visit(v)
        elif isinstance(value, dict):
            for v in value.values():
                visit(v)
    visit(list(args) + list(kwargs.values()))
    return found


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """``func`` mapped over dim ``in_dims`` of its tensor arguments, results stacked at ``out_dims``.
    ``in_dims`` may be nested like the arguments (a dim per tuple/list/dict entry). The function runs
    once, on batched tensors (``hookgrad._functorch.vmap``), so hooks and prints inside fire once.
    ``randomness``: "same" gives every element the same draws, "error" refuses a call that draws,
    "different" draws afresh per element (other numbers than torch's batched draw)."""
    name = getattr(func, "__name__", repr(func))
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        dims = _dims_for(in_dims, args, name)
        sizes = set()
        for a, d in zip(args, dims):
            _with_dims(lambda t, dim: sizes.add(_checked_size(t, dim, name, in_dims)) or t, a, d, name, in_dims)
        if not sizes:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): at least one input must be a Tensor "
                             "mapped over a dim (in_dims not all None)")
        if len(sizes) != 1:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Expected all tensors to have the same "
                             f"size in the mapped dimension, got sizes {sorted(sizes)} for the mapped dimension")
        batch = sizes.pop()
        if chunk_size is None or chunk_size >= batch:
            return _vmap_once(func, args, kwargs, dims, batch, out_dims, randomness, name, in_dims)
        pieces = []
        for start in range(0, batch, chunk_size):
            count = min(chunk_size, batch - start)
            chunk = [_with_dims(lambda t, dim: t.narrow(_batch_dim(t, dim), start, count), a, d, name, in_dims)
                     for a, d in zip(args, dims)]
            pieces.append(_vmap_once(func, chunk, kwargs, dims, count, out_dims, randomness, name, in_dims))
        return _concat_chunks(pieces, out_dims)

    return wrapper


def _batch_dim(t, dim):
    return dim % max(t.dim(), 1)


def _checked_size(t, dim, name, in_dims):
    if not -max(t.dim(), 1) <= dim < max(t.dim(), 1) or t.dim() == 0:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={dim} for some input, but that "
                         f"input is a Tensor of dimensionality {t.dim()} so expected in_dim to satisfy "
                         f"-{t.dim()} <= in_dim < {t.dim()}.")
    return t.shape[dim]


def _vmap_once(func, args, kwargs, dims, batch, out_dims, randomness, name, in_dims):
    from ._functorch import vmap as batching
    generators = _generators_in(args, kwargs)
    before = [g.get_state() for g in generators]
    level = batching.enter(batch, randomness, TRANSFORMS_ACTIVE[0] + 1)
    try:
        batched = [_with_dims(lambda t, dim: batching.add_level(t, _batch_dim(t, dim), level), a, d, name, in_dims)
                   for a, d in zip(args, dims)]
        with _transform_active():
            result = func(*batched, **kwargs)
        if randomness == "error" and any(not hookgrad.equal(g.get_state(), state)
                                         for g, state in zip(generators, before)):
            raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use "
                               "the 'same' or 'different' randomness flags on vmap or perform the randomness "
                               "operation out of vmap")
        return _unbatched_result(result, out_dims, level, batch, name)
    finally:
        batching.leave(level)


def _unbatched_result(result, out_dims, level, batch, name):
    from ._functorch import vmap as batching
    if out_dims is None:
        if batching.is_batched(result) and level in result._levels:
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
        return result
    if isinstance(result, Tensor):
        if not isinstance(out_dims, int):
            if isinstance(out_dims, (tuple, list)) and len(out_dims) == 1:
                out_dims = out_dims[0]
            else:
                raise ValueError(f"vmap({name}, ...): out_dims is not compatible with the structure of `outputs`. "
                                 f"out_dims has structure {_structure(out_dims)} but outputs has structure *.")
        return batching.remove_level(result, level, out_dims, batch)
    if isinstance(result, (tuple, list)):
        dims = out_dims if isinstance(out_dims, (tuple, list)) else [out_dims] * len(result)
        if len(dims) != len(result):
            raise ValueError(f"vmap({name}, ...): out_dims is not compatible with the structure of `outputs`. "
                             f"out_dims has structure {_structure(out_dims)} but outputs has structure "
                             f"{_structure(result)}.")
        parts = [_unbatched_result(r, d, level, batch, name) for r, d in zip(result, dims)]
        return type(result)(*parts) if hasattr(result, "_fields") else type(result)(parts)
    if isinstance(result, dict):
        return {k: _unbatched_result(v, out_dims[k] if isinstance(out_dims, dict) else out_dims, level, batch, name)
                for k, v in result.items()}
    if result is None:
        return None
    raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(result)}. Did you mean "
                     "to set out_dims= to None for output?")


def _concat_chunks(pieces, out_dims):
    first = pieces[0]
    if isinstance(first, Tensor):
        return hookgrad.cat(pieces, out_dims if isinstance(out_dims, int) else out_dims[0])
    if isinstance(first, (tuple, list)):
        dims = out_dims if isinstance(out_dims, (tuple, list)) else [out_dims] * len(first)
        return type(first)(_concat_chunks([p[k] for p in pieces], dims[k]) for k in range(len(first)))
    if isinstance(first, dict):
        return {k: _concat_chunks([p[k] for p in pieces], out_dims) for k in first}
    return first


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


def _check_names_match(module, tensors: dict) -> None:
    """``strict=True``: the given names must be exactly the module's parameters and buffers."""
    expected = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
               {n for n, _ in module.named_buffers(remove_duplicate=False)}
    missing, unexpected = sorted(expected - set(tensors)), sorted(set(tensors) - expected)
    problems = ([f"Unexpected key(s): {', '.join(map(repr, unexpected))}."] if unexpected else []) + \
               ([f"Missing key(s): {', '.join(map(repr, missing))}."] if missing else [])
    if problems:
        raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t" + "\n\t".join(problems))


def _untied(module, tensors: dict) -> dict:
    """``tensors`` with every name tied to a given one (the same tensor under several names in
    ``module``) mapped to the given value too."""
    names_of = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        names_of.setdefault(id(t), set()).add(name)
    tied = {name: names for names in names_of.values() if len(names) > 1 for name in names}
    given_tied = [name for name in tensors if name in tied]
    for name in given_tied:
        group = tied[name]
        if len(group & set(given_tied)) > 1 and len({id(tensors[n]) for n in group if n in tensors}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(group)}, which are tied. "
                             "Consider using tie_weights=False")
    result = dict(tensors)
    for name in given_tied:
        for other in tied[name]:
            result[other] = tensors[name]
    return result


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
    if tie_weights:
        tensors = _untied(module, tensors)
    if strict:
        _check_names_match(module, tensors)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, tensors):
        return module(*args, **(kwargs or {}))


# ---- functionalize, batch-norm replacement, debug_unwrap ---------------------------------------
_REMOVE_OPTIONS = ("mutations", "mutations_and_views")


def functionalize(func, *, remove: str = "mutations"):
    """``func`` with its mutations removed from the caller's view, run eagerly.

    The function runs on copies of its tensor arguments, so no in-place op inside it reaches a
    caller's tensor directly; afterwards each argument whose copy was mutated receives the new
    value with one ``copy_`` (as torch propagates input mutations), and outputs never alias the
    arguments. With ``remove="mutations_and_views"`` outputs are not views either. The values
    (and gradients, through the copies) are those of ``func`` itself.
    """
    if remove not in _REMOVE_OPTIONS:
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. Valid options "
            "are:\n     remove='mutations': all inplace and out= operators will be removed from the program, and "
            "replaced with their out-of-place equivalents.\n     remove='mutations_and_views': In addition to the "
            "above, all aliasing operators {view} will be replaced with their non-aliasing counterparts, "
            "{view}_copy.\n")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        copies = {}

        def copy_of(t):
            if id(t) not in copies:
                copies[id(t)] = (t, t.clone())
            return copies[id(t)][1]

        outputs = func(*_tree_map(copy_of, args), **_tree_map(copy_of, kwargs))
        for original, copy in copies.values():
            if copy._version:
                original.copy_(copy)
        if remove == "mutations_and_views":
            outputs = _tree_map(lambda t: t.clone() if t._base_value is not None else t, outputs)
        return outputs
    return wrapped


def replace_all_batch_norm_modules_(root):
    """Make every batch-norm module in ``root`` (``root`` included) stop tracking running
    statistics: ``running_mean``/``running_var``/``num_batches_tracked`` become None, so it
    always normalizes with the batch's own statistics. Returns ``root``."""
    from .nn.modules.batchnorm import _BatchNorm
    for module in [root, *root.modules()]:
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def debug_unwrap(tensor, *, recurse: bool = True):
    """The tensor under a transform's wrapper: inside ``vmap``, the whole batch a batched tensor holds
    (batch dims first); ``recurse=False`` peels only the innermost vmap's level. Other tensors as
    they are (hookgrad's grad transforms use no wrapper)."""
    from ._functorch import vmap as batching
    if not batching.is_batched(tensor):
        return tensor
    if recurse:
        return tensor._value
    # the innermost level's batch dim is the last batch dim: it becomes the first per-example dim
    return batching.wrap(tensor._value, tensor._levels[:-1])
