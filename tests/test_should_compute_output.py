"""A node computes only the gradients its pass needs (torch's ``task_should_compute_output``),
differentially against torch: in a pass toward some inputs only (``autograd.grad``,
``backward(inputs=...)``) or over frozen parameters, what a dispatch mode and a flop counter see,
what a ``create_graph`` pass records and packs through saved-tensor hooks, the gradients, and
what node post-hooks receive."""
import importlib

import numpy as np
import pytest

import aten_trace
from difftest import catch, differential

# the models: each returns (loss, {name: tensor}) on framework T, built from fixed random values
_SHAPES = {
    "mlp": {"x": (4, 5), "w1": (6, 5), "b1": (6,), "w2": (3, 6), "b2": (3,)},
    "linear3d": {"x": (2, 4, 5), "w1": (6, 5), "b1": (6,)},
    "conv": {"x": (2, 3, 6, 6), "w1": (4, 3, 3, 3), "b1": (4,)},
    "norms": {"x": (4, 3, 5), "w1": (5,), "b1": (5,), "w2": (3,), "b2": (3,)},
    "bmm": {"x": (2, 3, 4), "w1": (2, 4, 5)},
    "attention": {"x": (2, 3, 4), "w1": (2, 3, 4), "w2": (2, 3, 4)},
    "pointwise": {"x": (3, 4), "w1": (3, 4), "w2": (4,)},
}


def _model(T, kind, frozen=()):
    rng = np.random.default_rng(0)
    t = {name: T.tensor(rng.standard_normal(shape), dtype=T.float32, requires_grad=name not in frozen)
         for name, shape in _SHAPES[kind].items()}
    F = T.nn.functional
    x, w1, b1, w2, b2 = (t.get(n) for n in ("x", "w1", "b1", "w2", "b2"))
    if kind == "mlp":
        out = F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)
    elif kind == "linear3d":
        out = F.linear(x, w1, b1)
    elif kind == "conv":
        out = F.conv2d(x, w1, b1)
    elif kind == "norms":
        out = F.batch_norm(F.layer_norm(x, (5,), w1, b1), None, None, w2, b2, training=True)
    elif kind == "bmm":
        out = T.bmm(x, w1)
    elif kind == "attention":
        out = F.scaled_dot_product_attention(x, w1, w2)
    else:
        out = (x * w1).div(w2.exp() + 1).sigmoid() * x
    return out.pow(2).sum(), t


# which gradients a pass asks for: autograd.grad toward these names, or backward(inputs=...)
_PASSES = {
    "grad_x": ("grad", ("x",)),
    "grad_w1": ("grad", ("w1",)),
    "grad_x_w2": ("grad", ("x", "w2")),
    "backward_inputs_w1": ("backward", ("w1",)),
}


def _wanted(kind, names):
    return tuple(n for n in names if n in _SHAPES[kind])


def _run_pass(T, loss, tensors, how, names, **kwargs):
    wanted = [tensors[n] for n in names]
    if how == "grad":
        return list(T.autograd.grad(loss, wanted, **kwargs))
    loss.backward(inputs=wanted, **kwargs)
    return [t.grad for t in wanted]


_CASES = [(kind, p) for kind in _SHAPES for p in _PASSES if _wanted(kind, _PASSES[p][1])]
# the models whose every backward node a dispatch mode sees (hookgrad dispatches the common ones)
_DISPATCHED = [(kind, p) for kind, p in _CASES if kind in ("mlp", "linear3d", "conv", "norms")]


@pytest.mark.parametrize("kind,pass_name", _DISPATCHED)
@differential(rtol=1e-4, atol=1e-5)
def test_dispatch_mode_sees_only_the_needed_gradients(T, kind, pass_name):
    how, names = _PASSES[pass_name]
    loss, tensors = _model(T, kind)
    log: list = []
    with aten_trace.recorder(T, log):
        grads = _run_pass(T, loss, tensors, how, _wanted(kind, names))
    # (hookgrad's modes do not see the implicit ones_like of the loss's gradient)
    return [r for r in log if r[0] != "aten.ones_like.default"], grads


@pytest.mark.parametrize("kind", ["mlp", "conv", "norms", "bmm"])
@differential(rtol=1e-4, atol=1e-5)
def test_flop_counter_counts_only_the_needed_products(T, kind):
    importlib.import_module(T.__name__ + ".utils.flop_counter")
    loss, tensors = _model(T, kind)
    counter = T.utils.flop_counter.FlopCounterMode(display=False)
    with counter:
        T.autograd.grad(loss, tensors["x"])
    return counter.get_total_flops(), sorted((str(k), v) for k, v in counter.get_flop_counts()["Global"].items())


@pytest.mark.parametrize("kind", ["mlp", "linear3d", "conv", "norms"])
@differential(rtol=1e-4, atol=1e-5)
def test_frozen_parameters_get_no_gradient_work(T, kind):
    frozen = ("w1", "b1")
    loss, tensors = _model(T, kind, frozen)
    log: list = []
    with aten_trace.recorder(T, log):
        loss.backward()
    return [r for r in log if r[0] != "aten.ones_like.default"], \
        [tensors[n].grad for n in _SHAPES[kind] if n not in frozen]


@pytest.mark.parametrize("kind,pass_name", _CASES)
@differential(rtol=1e-4, atol=1e-5)
def test_create_graph_pass_packs_only_for_the_needed_gradients(T, kind, pass_name):
    how, names = _PASSES[pass_name]
    loss, tensors = _model(T, kind)
    packed = []

    def pack(t):
        packed.append((tuple(t.shape), t.dtype))
        return t

    with T.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        grads = _run_pass(T, loss, tensors, how, _wanted(kind, names), create_graph=True)
    # the order of packing follows the order of nodes, which both engines share
    return packed, grads, [g.sum() for g in grads]


@differential
def test_post_hooks_see_none_for_gradients_not_needed(T):
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    w = T.tensor([[0.5, -1.0], [2.0, 1.5]], requires_grad=True)
    b = T.tensor([0.1, 0.2], requires_grad=True)
    out = T.nn.functional.linear(x, w, b)
    log = []
    out.grad_fn.register_hook(lambda gi, go: log.append([g is None for g in gi]))
    T.autograd.grad(out.sum(), x, retain_graph=True)
    T.autograd.grad(out.sum(), w, retain_graph=True)
    out.sum().backward(inputs=[b])
    return log, b.grad


@differential
def test_a_gradient_not_needed_is_not_computed_even_where_it_would_fail(T):
    # dist with p=0 has no gradient in its second operand; a pass toward the first alone is fine
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = T.tensor([1.5, 2.0, 0.0], requires_grad=True)
    d = T.dist(x, y, 0)
    return catch(lambda: T.autograd.grad(d, x, retain_graph=True)), \
        type(catch(lambda: T.autograd.grad(d, y))).__name__


@pytest.mark.parametrize("wanted", [("a",), ("b",), ("a", "b")])
@differential
def test_in_place_op_on_a_view_in_a_pass_toward_some_inputs(T, wanted):
    # the in-place op's node (inside CopySlices) has its first edge on the view's old history,
    # which the pass never walks: its gradient must still be computed when the base's is needed
    a = T.tensor([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], requires_grad=True)
    b = T.tensor([[2.0, 3.0, -1.0], [1.5, -0.5, 2.0]], requires_grad=True)
    y = a * 1
    y[0].mul_(b[0])
    y[1][1:].mul_(b[1][1:])
    tensors = {"a": a, "b": b}
    loss = (y * y).sum()
    first = T.autograd.grad(loss, [tensors[n] for n in wanted], retain_graph=True)
    recorded = T.autograd.grad(loss, [tensors[n] for n in wanted], create_graph=True)
    return first, recorded, T.autograd.grad(sum(g.sum() for g in recorded), a, allow_unused=True)
