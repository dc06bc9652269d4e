"""Backward formulas and graph facts as test/test_autograd.py checks them, differentially against torch."""
from __future__ import annotations

import pytest

from difftest import catch, differential, warns


def _second_order(T, out, inputs):
    """First gradients (with their graph) and the gradients of a weighted sum of them."""
    firsts = T.autograd.grad((out * T.arange(1., out.numel() + 1, dtype=out.dtype).reshape(out.shape)).sum(),
                             inputs, create_graph=True)
    total = sum((g * (i + 2)).sum() for i, g in enumerate(firsts))
    seconds = catch(T.autograd.grad, total, inputs, allow_unused=True)
    return firsts, seconds, [type(g.grad_fn).__name__ for g in firsts]


@differential
@pytest.mark.parametrize("op", ["scatter_reduce", "index_reduce"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("src_values", [[0.5, 2.0, 1.5, 3.0], [0.0, 2.0, 1.5, 3.0], [0.0, 0.0, 1.5, 3.0]],
                         ids=["no_zero", "one_zero", "two_zeros_at_one_target"])
def test_reduce_into_prod_double_backward(T, op, include_self, src_values):
    # the first gradients are differentiable functions of self and src (the second ones were not
    # computed through them); two zeros sent to one target make src's second derivative refuse
    x = T.tensor([1.5, 0.0, 2.0, 3.0, 4.0], dtype=T.double, requires_grad=True)
    src = T.tensor(src_values, dtype=T.double, requires_grad=True)
    index = T.tensor([0, 1, 1, 3])
    out = getattr(x, op)(0, index, src, "prod", include_self=include_self)
    firsts, seconds, names = _second_order(T, out, (x, src))
    message = "Double backward is unsupported for" in getattr(seconds, "message", "")
    return type(out.grad_fn).__name__, firsts, seconds, names, message


@differential
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_is_one_node(T, reduce, include_self):
    # one IndexReduceBackward0 saving index, self, source and result (what pack hooks see), whose
    # gradients are torch's (ties of amax/amin share it), also of a 0-d self
    packed = []
    x = T.tensor([[1.0, 2.0], [3.0, 0.5], [2.0, 2.0], [0.0, 1.0]], dtype=T.double, requires_grad=True)
    src = T.tensor([[3.0, 2.0], [3.0, 0.5], [1.0, 4.0]], dtype=T.double, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: packed.append((t.shape, t.dtype)) or t, lambda t: t):
        out = x.index_reduce(0, T.tensor([1, 1, 2]), src, reduce, include_self=include_self)
    node = out.grad_fn
    facts = [type(node).__name__, [type(f).__name__ for f, _ in node.next_functions], packed,
             node._saved_dim, node._saved_reduce, node._saved_include_self]
    firsts, seconds, names = _second_order(T, out, (x, src))
    scalar = T.tensor(2.0, dtype=T.double, requires_grad=True)
    scalar_out = scalar.index_reduce(0, T.tensor([0]), T.tensor(3.0, dtype=T.double), reduce, include_self=include_self)
    return facts, out, firsts, seconds, names, scalar_out, T.autograd.grad(scalar_out * 1.5, scalar)


_UNIQUE_FORMS = {
    "unique": lambda T, x: T.unique(x, return_inverse=True, return_counts=True),
    "unique_unsorted": lambda T, x: x.unique(sorted=False),
    "unique_dim": lambda T, x: T.unique(x, return_counts=True, dim=0),
    "unique_consecutive": lambda T, x: T.unique_consecutive(x, return_inverse=True),
    "unique_consecutive_dim": lambda T, x: T.unique_consecutive(x, dim=0),
    "_unique": lambda T, x: T._unique(x, return_inverse=True),
    "_unique_without_inverse": lambda T, x: T._unique(x),
    "_unique2": lambda T, x: T._unique2(x, sorted=True, return_counts=True),
    "_VF.unique_dim": lambda T, x: T._VF.unique_dim(x, dim=0, sorted=True, return_inverse=False),
}


@differential
@pytest.mark.parametrize("form", list(_UNIQUE_FORMS))
def test_unique_values_require_grad_without_a_derivative(T, form):
    # the values of every unique operator carry a node (the inverse and counts do not); the backward
    # through it raises NotImplementedError naming the operator
    x = T.tensor([3.0, 1.0, 3.0, 2.0], requires_grad=True)
    results = _UNIQUE_FORMS[form](T, x)
    results = results if isinstance(results, tuple) else (results,)
    facts = [(r, r.requires_grad, type(r.grad_fn).__name__) for r in results]
    failed = catch(results[0].sum().backward)
    with T.no_grad():
        quiet = _UNIQUE_FORMS[form](T, x)
    quiet = quiet if isinstance(quiet, tuple) else (quiet,)
    return facts, failed, getattr(failed, "message", None), [r.requires_grad for r in quiet]


@differential
def test_copy_from_real_into_complex_backward_gives_the_real_part_quietly(T):
    out = T.zeros(3, 2, dtype=T.cdouble)
    src = T.tensor([[0.5, -1.0], [2.0, 0.25], [-3.0, 1.5]], dtype=T.double, requires_grad=True)

    def backward():
        out.copy_(src)
        (out.sum() * (1 + 2j)).abs().backward()
        return src.grad, type(out.grad_fn).__name__

    return warns(backward)


_INDEXES = {
    "list": lambda T: ([0, 2],),
    "slice_and_list": lambda T: (slice(1, None), [0, 1]),
    "mask": lambda T: (T.tensor([True, False, True]),),
    "two_tensors": lambda T: (T.tensor([0, 1]), T.tensor([1, 3])),
    "ellipsis_and_list": lambda T: (Ellipsis, [1]),
    "nested_list_and_integer": lambda T: ([[0], [1]], 0),
}


@differential
@pytest.mark.parametrize("which", list(_INDEXES))
def test_indexing_saves_its_index_tensors(T, which):
    # reading and writing through an index save its tensors: the pack hooks see them (also in the
    # double backward), the node lists them, and a backward frees them
    packed = []

    def pack(t):
        packed.append((t.shape, t.dtype, t.requires_grad))
        return t

    x = T.arange(12.0, dtype=T.double).reshape(3, 4).requires_grad_()
    index = _INDEXES[which](T)
    with T.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = x[index]
        read = list(packed)
        target = T.zeros(3, 4, dtype=T.double)
        target[index] = y * 2
        written = packed[len(read):]
        saved = [(type(node).__name__, [i if i is None else (i.shape, i.dtype)
                                        for i in getattr(node, "_saved_indices", ())])
                 for node in (y.grad_fn, target.grad_fn)]
        before = len(packed)
        (gx,) = T.autograd.grad(target.sum() + (y ** 2).sum(), x, create_graph=True)
        in_backward = packed[before:]
    gx.sum().backward()
    second = catch(target.sum().backward)
    return read, written, saved, getattr(target.grad_fn, "_saved_accumulate", None), in_backward, gx, x.grad, second


@differential
def test_an_index_tensor_changed_in_place_is_refused_by_the_backward(T):
    x = T.arange(6.0).requires_grad_()
    index = T.tensor([0, 2, 2])
    y = x[index]
    index.add_(1)
    failed = catch(y.sum().backward)
    z = T.zeros(6)
    where = T.tensor([1, 3])
    z.index_put_((where,), x[:2])
    where.mul_(1)
    return failed, catch(z.sum().backward), x.grad


@differential
@pytest.mark.parametrize("value", ["number", "tensor"])
def test_index_fill_is_one_node(T, value):
    # IndexFillBackward0 (a number) or IndexFillBackward1 (a 0-d tensor, whose gradient counts each
    # filled slice once), saving the index; in place and on a 0-d self too
    packed = []
    x = T.arange(6.0, dtype=T.double).reshape(3, 2).requires_grad_()
    fill = 5.0 if value == "number" else T.tensor(5.0, dtype=T.double, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: packed.append((t.shape, t.dtype)) or t, lambda t: t):
        out = x.index_fill(-1, T.tensor([1, 1]), fill)
    y = x * 1
    y.index_fill_(0, T.tensor([2, 0]), fill)
    scalar = T.tensor(1.0, dtype=T.double, requires_grad=True)
    scalar_out = scalar.index_fill(0, T.tensor([0]), fill)
    inputs = (x, scalar) if value == "number" else (x, scalar, fill)
    firsts, seconds, names = _second_order(T, out * 2 + y.sum() + scalar_out, inputs)
    facts = [type(n).__name__ for n in (out.grad_fn, y.grad_fn, scalar_out.grad_fn)]
    return facts, packed, out.grad_fn._saved_dim, out, y, scalar_out, firsts, seconds, names


@differential
def test_zero_dimensional_masked_fill_and_cumprod_stay_zero_dimensional(T):
    x = T.tensor(0.7, requires_grad=True)
    filled = [x.masked_fill(T.tensor(False), 1.0), x.masked_fill(x > 0.5, 2.0), T.tensor(3).masked_fill(T.tensor(True), 1)]
    products = [x.cumprod(0), T.cumprod(x, dim=-1), T.tensor(2, dtype=T.int32).cumprod(0)]
    return filled, products, T.autograd.grad(sum(filled[:2]) + products[0], x)


@differential
@pytest.mark.parametrize("self_shape, dim, index, source_shape",
                         [((3, 2), 0, [2, 0], (2, 2)), ((3, 2), -1, [1], (3, 1)), ((), 0, [0], ()), ((), 0, [0], (1,))])
def test_index_copy_is_one_node(T, self_shape, dim, index, source_shape):
    # IndexCopyBackward0 saving the index and the source (pack hooks see both), out of place and in place
    packed = []
    x = T.arange(float(max(1, len(self_shape) and self_shape[0] * self_shape[1])), dtype=T.double)
    x = x.reshape(self_shape).requires_grad_()
    source = (T.arange(float(max(1, T.Size(source_shape).numel())), dtype=T.double) + 10).reshape(source_shape)
    source.requires_grad_()
    with T.autograd.graph.saved_tensors_hooks(lambda t: packed.append((t.shape, t.dtype)) or t, lambda t: t):
        out = x.index_copy(dim, T.tensor(index), source)
    y = x * 1
    y.index_copy_(dim, T.tensor(index), source)
    node = out.grad_fn
    facts = [type(node).__name__, type(y.grad_fn).__name__, packed, node._saved_dim, node._saved_source_dim]
    firsts, seconds, names = _second_order(T, out * 2 + y, (x, source))
    return facts, out, firsts, seconds, names


@differential
@pytest.mark.parametrize("accumulate", [False, True])
def test_take_and_put_are_one_node_each(T, accumulate):
    # TakeBackward0 (saving index and self) and PutBackward0 (saving index and source), whose
    # gradients are torch's formulas, differentiable in turn
    packed = []
    x = T.arange(6.0, dtype=T.double).reshape(2, 3).requires_grad_()
    source = T.tensor([10.0, 20.0], dtype=T.double, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: packed.append((t.shape, t.dtype)) or t, lambda t: t):
        taken = x.take(T.tensor([[0, 5], [5, 1]]))
        put = x.put(T.tensor([1, 1]), source, accumulate=accumulate)
    y = x * 1
    y.put_(T.tensor([0, 4]), source, accumulate=accumulate)
    facts = [[type(t.grad_fn).__name__ for t in (taken, put, y)], packed, put.grad_fn._saved_accumulate]
    firsts, seconds, names = _second_order(T, taken.sum() + put + y, (x, source))
    return facts, taken, put, y, firsts, seconds, names


@differential
@pytest.mark.parametrize("mask", [[True, False, True], [[False, True, True], [True, False, False]]], ids=["broadcast", "full"])
def test_masked_scatter_is_one_node(T, mask):
    # MaskedScatterBackward0 saving the mask as given (not broadcast); the source's gradient is
    # zero-padded past the elements the mask took
    packed = []
    x = T.arange(6.0, dtype=T.double).reshape(2, 3).requires_grad_()
    source = (T.arange(8.0, dtype=T.double) + 10).reshape(2, 4).requires_grad_()
    with T.autograd.graph.saved_tensors_hooks(lambda t: packed.append((t.shape, t.dtype)) or t, lambda t: t):
        out = x.masked_scatter(T.tensor(mask), source)
    y = x * 1
    y.masked_scatter_(T.tensor(mask), source)
    facts = [type(out.grad_fn).__name__, type(y.grad_fn).__name__, packed, out.grad_fn._saved_source_sym_sizes]
    firsts, seconds, names = _second_order(T, out + y, (x, source))
    return facts, out, firsts, seconds, names


@differential
@pytest.mark.parametrize("call", ["dim", "flat", "tensor_repeats"])
def test_repeat_interleave_graph(T, call):
    # by a number, torch copies an expanded view (its graph saves nothing); by a tensor it selects
    packed = []
    x = T.arange(6.0, dtype=T.double).reshape(2, 3).requires_grad_()
    with T.autograd.graph.saved_tensors_hooks(lambda t: packed.append((t.shape, t.dtype)) or t, lambda t: t):
        out = {"dim": lambda: x.repeat_interleave(2, dim=1), "flat": lambda: T.repeat_interleave(x, 3),
               "tensor_repeats": lambda: x.repeat_interleave(T.tensor([1, 2, 0]), dim=1)}[call]()
    chain, node = [], out.grad_fn
    while node is not None and node.next_functions:
        chain.append(type(node).__name__)
        node = node.next_functions[0][0]
    firsts, seconds, names = _second_order(T, out, (x,))
    return chain, packed, out, firsts, names


@differential
@pytest.mark.parametrize("call", ["cross_dim", "linalg_cross", "method_negative_dim", "cross_without_dim"])
def test_cross_is_one_node(T, call):
    # LinalgCrossBackward0 for torch.cross and torch.linalg.cross alike, saving other then self, each
    # gradient a cross product summed back over the broadcast dimensions
    packed = []
    a = T.tensor([[1.0, -2.0, 0.5]], dtype=T.double, requires_grad=True)
    b = T.tensor([[0.5, 1.5, -1.0], [2.0, 0.0, 1.0]], dtype=T.double, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: packed.append((t.shape, t.dtype)) or t, lambda t: t):
        out = {"cross_dim": lambda: T.cross(a, b, dim=1), "linalg_cross": lambda: T.linalg.cross(a, b),
               "method_negative_dim": lambda: a.cross(b, dim=-1), "cross_without_dim": lambda: T.cross(a, b)}[call]()
    node = out.grad_fn
    facts = [type(node).__name__, packed, node._saved_dim, [type(f).__name__ for f, _ in node.next_functions]]
    firsts, seconds, names = _second_order(T, out, (a, b))
    return facts, out, firsts, seconds, names, catch(T.linalg.cross, T.ones(2, 3), T.ones(4, 3))


@differential
@pytest.mark.parametrize("p", [2, 3, 1, 0.5, float("inf"), 0])
def test_dist_is_one_node(T, p):
    # DistBackward0 saving other, self and the result; the norm's gradient at self - other goes to
    # self and, negated, to other (each summed over its broadcast dimensions); p = 0 has none
    packed = []
    a = T.tensor([[1.0, -2.0, 0.5], [0.0, 1.0, 3.0]], dtype=T.double, requires_grad=True)
    b = T.tensor([0.5, 1.5, -1.0], dtype=T.double, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: packed.append((t.shape, t.dtype)) or t, lambda t: t):
        d = T.dist(a, b, p)
    facts = [type(d.grad_fn).__name__, packed, d.grad_fn._saved_p]
    # (torch's second derivatives for p = 1 and inf are zero tensors without storage: not compared)
    orders = catch(_second_order, T, d, (a, b)) if p in (2, 3, 0.5) else catch(T.autograd.grad, d, (a, b))
    return facts, d, orders, catch(T.autograd.grad, d, a)
