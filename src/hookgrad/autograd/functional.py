"""``torch.autograd.functional``: Jacobians, Hessians and vector products of a function of tensors.

Everything is built on ``autograd.grad``. Forward-mode products (``jvp``, ``hvp``) use the
double-backward trick: the vector-Jacobian product ``g -> J^T g`` is linear in ``g``, so
differentiating it with respect to ``g`` (a zero tensor requiring grad) in the direction ``v``
gives ``J v``. ``vectorize=True`` and ``strategy="forward-mode"`` give the same numbers as the
default, computed one reverse pass per output element.

Conventions follow torch: ``inputs`` is a tensor or a tuple of tensors and results mirror that
(and the function's outputs) as a tensor or a tuple; without ``create_graph`` the results are
detached; ``strict=True`` raises where a result would be independent of an input.
"""
from __future__ import annotations

from .._late import LateNames
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

# tensors and their constructors live in higher layers, bound on first use
_above = LateNames(Tensor="hookgrad._tensor", zeros="hookgrad:zeros", zeros_like="hookgrad:zeros_like",
                   stack="hookgrad:stack", eye="hookgrad:eye")
__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple(value, arg_name: str, fn_name: str):
    """(whether ``value`` was a tuple, ``value`` as a tuple), checking it holds tensors."""
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for i, item in enumerate(items):
        if not isinstance(item, _above.Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"{where} has type {type(item)}.")
    return is_tuple, items


def _unpack(result, is_tuple: bool):
    return result if is_tuple else result[0]


def _unpack2(result, outer_tuple: bool, inner_tuple: bool):
    if not inner_tuple:
        result = tuple(row[0] for row in result)
    return result if outer_tuple else result[0]


def _prepare(tensors, create_graph: bool, need_graph: bool):
    # with create_graph, inputs that already require grad stay linked to the caller's graph
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(need_graph)
                 for t in tensors)


def _finish(tensors, create_graph: bool):
    if create_graph:
        return tensors
    return tuple(t.detach() if isinstance(t, _above.Tensor) else _finish(t, create_graph) for t in tensors)


def _validate_v(v, other, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            prefix = f"Entry {i} in " if is_other_tuple else ""
            raise RuntimeError(f"{prefix}v has invalid size: should be {_size(el_other)} but got {_size(el_v)}.")


def _size(t) -> str:
    return f"torch.Size({list(t.shape)})"


_INDEPENDENT = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The outputs must be computed "
               "in a differentiable manner from the input when running in strict mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the user-provided "
                   "function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided function with respect "
                "to input {i} is independent of the input. This is not allowed in strict mode. You should ensure "
                "that your function is twice differentiable and that the jacobian depends on the inputs (this "
                "would be violated by a linear function for example).",
    "hessian": "The hessian of the user-provided function with respect to input {i} is independent of the input. "
               "This is not allowed in strict mode. You should ensure that your function is thrice differentiable "
               "and that the hessian depends on the inputs.",
}


def _check_requires_grad(tensors, kind: str, strict: bool) -> None:
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_INDEPENDENT[kind].format(i=i))


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """``autograd.grad`` over the outputs that require grad; None for every input when none do."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    kept = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not kept:
        return (None,) * len(inputs)
    outs, grads = zip(*kept)
    from . import grad  # the package's own function (defined after this module is imported)
    return grad(outs, inputs, grads, allow_unused=True, create_graph=create_graph,
                                  retain_graph=retain_graph)


_NONE_IN_STRICT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict "
            "mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in strict "
                  "mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                   "strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                         "backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict: bool, create_graph: bool, stage: str):
    filled = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_NONE_IN_STRICT[stage].format(i=i))
            g = _above.zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode when create_graph=True.")
        filled.append(g)
    return tuple(filled)


def _prepare_v(v, against, is_against_tuple, create_graph, fn_name, v_none_message):
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        v = _prepare(v, create_graph, need_graph=False)
        _validate_v(v, against, is_against_tuple)
    elif len(against) != 1 or against[0].numel() != 1:
        raise RuntimeError(v_none_message)
    return v


_V_FOR_INPUT = ("The vector v can only be None if the input to the user-provided function is a single Tensor with a "
                "single element.")


def _inputs_and_v(inputs, v, create_graph, fn_name):
    """``inputs`` as a tuple prepared for differentiation, and ``v`` checked against them (jvp, vhp, hvp)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _prepare(inputs, create_graph, need_graph=True)
    return is_inputs_tuple, inputs, _prepare_v(v, inputs, is_inputs_tuple, create_graph, fn_name, _V_FOR_INPUT)


def _vector_products(outputs, wrt, v, shaped_like, strict, create_graph, stage):
    """``autograd.grad(outputs, wrt, v)`` with zeros for the parts of ``shaped_like`` it does not
    reach; the products keep a graph under ``create_graph`` or where grad mode is on."""
    with set_grad_enabled(create_graph or is_grad_enabled()):
        return _fill_in_zeros(_grad(outputs, wrt, v, create_graph=create_graph), shaped_like, strict, create_graph,
                              stage)


def _results(outputs, is_outputs_tuple, products, is_products_tuple, create_graph):
    """(outputs, products), detached unless ``create_graph``, each a tuple only if the caller's was."""
    return (_unpack(_finish(outputs, create_graph), is_outputs_tuple),
            _unpack(_finish(products, create_graph), is_products_tuple))


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(``func(inputs)``, ``v^T J``): the vector-Jacobian product at ``inputs``."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        v = _prepare_v(v, outputs, is_outputs_tuple, create_graph, "vjp",
                       "The vector v can only be None if the user-provided function returns a single Tensor with a "
                       "single element.")
    products = _vector_products(outputs, inputs, v, inputs, strict, create_graph, "back")
    return _results(outputs, is_outputs_tuple, products, is_inputs_tuple, create_graph)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(``func(inputs)``, ``J v``): the Jacobian-vector product at ``inputs`` (double-backward trick)."""
    with enable_grad():
        is_inputs_tuple, inputs, v = _inputs_and_v(inputs, v, create_graph, "jvp")
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        dummies = tuple(_above.zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _grad(outputs, inputs, dummies, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    products = _vector_products(grad_inputs, dummies, v, outputs, strict, create_graph, "back_trick")
    return _results(outputs, is_outputs_tuple, products, is_outputs_tuple, create_graph)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: ``J[i][j]`` of shape ``outputs[i].shape + inputs[j].shape``."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function '
                             'has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, '
                             'prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). Please either set '
                                      '`create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are '
                               'not supported together (yet). Please either set `strict=False` or '
                               '`strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is"
                                      "only implemented for `vectorize=True`.")
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                               "supported together. Please either set `strict=False` or `vectorize=False`.")
        if vectorize:
            return _unpack2(_finish(_vectorized_jacobian(outputs, inputs, create_graph), create_graph),
                            is_outputs_tuple, is_inputs_tuple)
        jac = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]
            flat = out.reshape(-1)
            for k in range(out.numel()):
                row = _grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
                for j, (g, inp) in enumerate(zip(row, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of input "
                                               f"{j}. This is not allowed in strict mode.")
                        g = _above.zeros_like(inp)
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. "
                                           "This is not allowed in strict mode when create_graph=True.")
                    rows[j].append(g)
            jac.append(tuple(_stack_rows(r, out, inp) for r, inp in zip(rows, inputs)))
        return _unpack2(_finish(tuple(jac), create_graph), is_outputs_tuple, is_inputs_tuple)


def _vectorized_jacobian(outputs, inputs, create_graph):
    """Every row of the Jacobian in ONE backward pass, as torch's ``vectorize=True``: the flattened
    outputs get the rows of an identity matrix as gradients batched over its first dim
    (``is_grads_batched``), the result is split back per output."""
    numels = [out.numel() for out in outputs]
    total = sum(numels)
    basis, start = [], 0
    for out, n in zip(outputs, numels):
        chunk = _above.zeros(total, n, dtype=out.dtype)
        chunk[start:start + n] = _above.eye(n, dtype=out.dtype)
        basis.append(chunk)
        start += n
    flat = tuple(out.reshape(-1) for out in outputs)
    kept = [(o, g) for o, g in zip(flat, basis) if o.requires_grad]
    if kept:
        from . import grad  # the package's own function (defined after this module is imported)
        outs, grads = zip(*kept)
        per_input = grad(outs, inputs, grads, allow_unused=True, create_graph=create_graph,
                         is_grads_batched=True)
    else:
        per_input = (None,) * len(inputs)
    per_input = [_above.zeros_like(inp).expand(total, *inp.shape) if g is None else g
                 for g, inp in zip(per_input, inputs)]
    return tuple(tuple(block.view(*out.shape, *inp.shape) for block, inp in
                       zip((g.split(numels, 0)[i] for g in per_input), inputs))
                 for i, out in enumerate(outputs))


def _stack_rows(rows, out, inp):
    if not rows:  # an empty output
        return _above.zeros(*out.shape, *inp.shape, dtype=inp.dtype)
    return _above.stack(rows, 0).reshape(*out.shape, *inp.shape)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of scalar-valued ``func`` at ``inputs``: ``H[i][j]`` of shape
    ``inputs[i].shape + inputs[j].shape``."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar_func(*args):
        out = func(*args)
        is_out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if is_out_tuple or not isinstance(out, _above.Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.squeeze()

    def gradient_func(*args):
        if outer_jacobian_strategy == "forward-mode":
            args = tuple(t.requires_grad_(True) for t in args)
        gradient = jacobian(scalar_func, args, create_graph=True)
        _check_requires_grad(gradient, "jacobian", strict)
        return gradient

    result = jacobian(gradient_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                      strategy=outer_jacobian_strategy)
    # the inputs went in as a tuple, so result is a tuple (per gradient piece) of tuples (per input)
    return _unpack2(result, is_inputs_tuple, is_inputs_tuple)


def _scalar_output(func, inputs, strict, fn_name):
    is_outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    if is_outputs_tuple or not isinstance(outputs[0], _above.Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")
    return is_outputs_tuple, outputs


def _scalar_output_and_gradient(func, inputs, strict, fn_name):
    """``func``'s single-element output and its gradient at ``inputs``, with a graph (vhp, hvp)."""
    is_outputs_tuple, outputs = _scalar_output(func, inputs, strict, fn_name)
    gradient = _grad(outputs, inputs, create_graph=True)
    _check_requires_grad(gradient, "jacobian", strict)
    return is_outputs_tuple, outputs, gradient


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(``func(inputs)``, ``v^T H``) for scalar-valued ``func``."""
    with enable_grad():
        is_inputs_tuple, inputs, v = _inputs_and_v(inputs, v, create_graph, "vhp")
        is_outputs_tuple, outputs, gradient = _scalar_output_and_gradient(func, inputs, strict, "vhp")
    products = _vector_products(gradient, inputs, v, inputs, strict, create_graph, "double_back")
    return _results(outputs, is_outputs_tuple, products, is_inputs_tuple, create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(``func(inputs)``, ``H v``) for scalar-valued ``func`` (double-backward trick)."""
    with enable_grad():
        is_inputs_tuple, inputs, v = _inputs_and_v(inputs, v, create_graph, "hvp")
        is_outputs_tuple, outputs, gradient = _scalar_output_and_gradient(func, inputs, strict, "hvp")
        dummies = tuple(_above.zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _grad(gradient, inputs, dummies, create_graph=True)
        _check_requires_grad(gradient, "hessian", strict)
    products = _vector_products(double_back, dummies, v, inputs, strict, create_graph, "double_back_trick")
    return _results(outputs, is_outputs_tuple, products, is_inputs_tuple, create_graph)
