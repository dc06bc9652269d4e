"""Batching rules that compute an op once for the whole batch (no per-slice fallback): indexing,
gather/scatter, flips and products, convolutions with batched weights, random ops. Each case runs
under torch.func.vmap on both frameworks and against a loop over the batch; on hookgrad the per-slice
fallback is made to fail, so a case that reaches it fails."""
import contextlib

import pytest

from difftest import assert_same, catch, differential, normalize


def _data(T, *shape, start=-2.0):
    n = 1
    for s in shape:
        n *= s
    return T.linspace(start, 3.0, n, dtype=T.float64).reshape(*shape)


@contextlib.contextmanager
def _no_per_slice(T):
    """On hookgrad, the per-slice fallback raises inside the block."""
    if T.__name__ != "hookgrad":
        yield
        return
    from hookgrad._functorch import vmap as batching
    original = batching._per_slice

    def refuse(func, name, *rest):
        raise AssertionError(f"{name} ran per slice")
    batching._per_slice = refuse
    try:
        yield
    finally:
        batching._per_slice = original


def _index(T, *shape, high):
    return (T.arange(_count(shape)) * 7 % high).reshape(*shape)


def _count(shape):
    n = 1
    for s in shape:
        n *= s
    return n


# name -> (function, in_dims, arguments made from T)
CASES = {
    "outer": (lambda T, a, b: T.outer(a, b), (0, 0), lambda T: (_data(T, 4, 3), _data(T, 4, 5))),
    "outer_unbatched": (lambda T, a, b: T.outer(a, b), (None, 0), lambda T: (_data(T, 3), _data(T, 4, 5))),
    "kron": (lambda T, a, b: T.kron(a, b), (0, 0), lambda T: (_data(T, 4, 2, 3), _data(T, 4, 3, 2, start=1.0))),
    "kron_ranks": (lambda T, a, b: T.kron(a, b), (0, None), lambda T: (_data(T, 4, 3), _data(T, 2, 2))),
    "flip": (lambda T, a: a.flip([0, -1]), (1,), lambda T: (_data(T, 3, 4, 5),)),
    "flip_fn": (lambda T, a: T.flip(a, (1,)), (0,), lambda T: (_data(T, 3, 4, 5),)),
    "roll": (lambda T, a: a.roll(1, -1), (0,), lambda T: (_data(T, 3, 4, 5),)),
    "roll_dims": (lambda T, a: T.roll(a, (1, -2), (0, 1)), (2,), lambda T: (_data(T, 3, 4, 5),)),
    "roll_flat": (lambda T, a: a.roll(3), (0,), lambda T: (_data(T, 3, 4, 5),)),
    "gather": (lambda T, a, i: a.gather(1, i), (0, None), lambda T: (_data(T, 3, 4, 5), _index(T, 4, 2, high=5))),
    "gather_both": (lambda T, a, i: T.gather(a, -1, i), (0, 0), lambda T: (_data(T, 3, 4, 5), _index(T, 3, 4, 2, high=5))),
    "gather_index": (lambda T, a, i: T.gather(a, 0, i), (None, 1), lambda T: (_data(T, 4, 5), _index(T, 2, 3, 5, high=4))),
    "scatter": (lambda T, a, i, s: a.scatter(1, i, s), (0, 0, 0),
                lambda T: (_data(T, 3, 4, 5), _index(T, 3, 4, 1, high=5), _data(T, 3, 4, 1, start=7.0))),
    "scatter_value": (lambda T, a, i: T.scatter(a, 0, i, 9.0), (0, None), lambda T: (_data(T, 3, 4, 5), _index(T, 1, 5, high=4))),
    "scatter_add": (lambda T, a, i, s: a.scatter_add(-1, i, s), (None, 0, 0),
                    lambda T: (_data(T, 4, 5), _index(T, 3, 4, 3, high=5), _data(T, 3, 4, 3))),
    "scatter_add_": (lambda T, a, i, s: a.clone().scatter_add_(0, i, s), (0, None, 0),
                     lambda T: (_data(T, 3, 4), _index(T, 6, high=4), _data(T, 3, 6))),
    "index_select": (lambda T, a, i: a.index_select(1, i), (0, None), lambda T: (_data(T, 3, 4, 5), T.tensor([4, 0, 4]))),
    "index_select_both": (lambda T, a, i: T.index_select(a, -1, i), (0, 0), lambda T: (_data(T, 3, 4, 5), _index(T, 3, 2, high=5))),
    "index_select_index": (lambda T, a, i: a.index_select(0, i), (None, 0), lambda T: (_data(T, 4, 5), _index(T, 3, 6, high=4))),
    "take_along_dim": (lambda T, a, i: T.take_along_dim(a, i, 1), (0, 0), lambda T: (_data(T, 3, 4, 5), _index(T, 3, 4, 2, high=5))),
    "take_along_bcast": (lambda T, a, i: T.take_along_dim(a, i, -1), (0, None), lambda T: (_data(T, 3, 4, 5), _index(T, 1, 2, high=5))),
    "take_along_flat": (lambda T, a, i: a.take_along_dim(i), (0, 0), lambda T: (_data(T, 3, 4, 5), _index(T, 3, 6, high=20))),
    "index_two": (lambda T, a, i, j: a[i, j], (0, None, None), lambda T: (_data(T, 3, 4, 5), _index(T, 2, 3, high=4), _index(T, 3, high=5))),
    "index_adjacent_later": (lambda T, a, i, j: a[:, i, j], (0, None, None),
                             lambda T: (_data(T, 3, 2, 4, 5), _index(T, 3, high=4), _index(T, 3, high=5))),
    "index_apart": (lambda T, a, i, j: a[i, :, j], (1, None, None), lambda T: (_data(T, 2, 3, 4, 5), _index(T, 3, high=2), _index(T, 3, high=5))),
    "index_int_first": (lambda T, a, i: a[:, 0, :, i], (0, None), lambda T: (_data(T, 3, 2, 4, 5, 6), _index(T, 3, high=6))),
    "index_int_apart": (lambda T, a, i: a[0, :, i], (0, None), lambda T: (_data(T, 3, 2, 4, 5), _index(T, 3, high=5))),
    "index_none_ellipsis": (lambda T, a, i: a[..., i, None, i], (0, None), lambda T: (_data(T, 3, 2, 4, 4), _index(T, 3, high=4))),
    "index_mask": (lambda T, a, m: a[m], (0, None), lambda T: (_data(T, 3, 4, 5), T.tensor([True, False, True, True]))),
    "index_mask_2d": (lambda T, a, m: a[:, m], (0, None), lambda T: (_data(T, 3, 2, 4, 5), _index(T, 4, 5, high=3) > 0)),
    "index_batched": (lambda T, a, i: a[i], (0, 0), lambda T: (_data(T, 3, 4, 5), _index(T, 3, 2, high=4))),
    "index_batched_only": (lambda T, a, i: a[1:, i], (None, 0), lambda T: (_data(T, 4, 5), _index(T, 3, 2, high=5))),
    "index_int_batched_only": (lambda T, a, i: a[0, ..., i], (None, 0), lambda T: (_data(T, 3, 4), _index(T, 2, 2, high=4))),
    "index_ellipsis_last": (lambda T, a, i: a[..., i, :], (0, 0), lambda T: (_data(T, 3, 2, 4, 5), _index(T, 3, 3, high=4))),
    "index_batched_two": (lambda T, a, i, j: a[i, :, j], (0, 0, None), lambda T: (_data(T, 3, 4, 2, 5), _index(T, 3, 2, high=4), _index(T, 2, high=5))),
    "cross_entropy": (lambda T, x, y: T.nn.functional.cross_entropy(x.unsqueeze(0), y.unsqueeze(0)), (0, 0),
                      lambda T: (_data(T, 4, 5), _index(T, 4, high=5))),
    "mse_loss": (lambda T, x, y: T.nn.functional.mse_loss(x, y), (0, None), lambda T: (_data(T, 4, 5), _data(T, 5))),
    "conv2d_weights": (lambda T, x, w, b: T.nn.functional.conv2d(x, w, b, padding=1, stride=(1, 2)), (0, 0, 0),
                       lambda T: (_data(T, 3, 2, 4, 5, 6), _data(T, 3, 6, 4, 3, 3, start=1.0), _data(T, 3, 6))),
    "conv2d_groups": (lambda T, x, w: T.nn.functional.conv2d(x, w, groups=2, dilation=2), (None, 0),
                      lambda T: (_data(T, 2, 4, 6, 6), _data(T, 3, 6, 2, 2, 2, start=1.0))),
    "conv1d_unbatched_form": (lambda T, x, w: T.nn.functional.conv1d(x, w, padding="same"), (0, 0),
                              lambda T: (_data(T, 3, 2, 7), _data(T, 3, 4, 2, 3))),
    "conv3d_bias_only": (lambda T, x, w, b: T.nn.functional.conv3d(x, w, b), (0, None, 0),
                         lambda T: (_data(T, 3, 1, 2, 3, 3, 3), _data(T, 2, 2, 2, 2, 2), _data(T, 3, 2))),
}


@pytest.mark.parametrize("name", sorted(CASES))
@differential(rtol=1e-9, atol=1e-10)
def test_rule_matches_torch_vmap_in_one_call(T, name):
    fn, in_dims, make = CASES[name]
    args = make(T)
    with _no_per_slice(T):
        return T.func.vmap(lambda *a: fn(T, *a), in_dims=in_dims)(*args)


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_matches_a_loop(name):
    import hookgrad as T
    fn, in_dims, make = CASES[name]
    args = make(T)
    size = next(a.shape[d] for a, d in zip(args, in_dims) if d is not None)
    loop = T.stack([fn(T, *[a if d is None else a.select(d, k) for a, d in zip(args, in_dims)])
                    for k in range(size)])
    assert_same(normalize(T.func.vmap(lambda *a: fn(T, *a), in_dims=in_dims)(*args)), normalize(loop), 1e-12, 1e-12)


@pytest.mark.parametrize("name", ["gather_both", "index_batched_two", "conv2d_weights", "take_along_dim", "kron",
                                  "scatter", "cross_entropy"])
@differential(rtol=1e-9, atol=1e-10)
def test_per_sample_gradients_through_rules(T, name):
    fn, in_dims, make = CASES[name]
    args = make(T)

    def loss(first, *rest):
        return (fn(T, first, *rest) ** 2).sum()
    with _no_per_slice(T):
        return T.func.vmap(T.func.grad(loss), in_dims=in_dims)(*args)


def test_rule_refusals_match_torch():
    import hookgrad
    import torch
    for T in (torch, hookgrad):
        a = _data(T, 3, 4, 5)
        # out of range indices and the in-place form on an unbatched self keep torch's error classes
        bad = catch(T.func.vmap(lambda x: x.gather(1, T.full((4, 1), 9))), a)
        inplace = catch(T.func.vmap(lambda s: T.zeros(4).scatter_add_(0, T.tensor([0]), s), in_dims=0),
                        _data(T, 3, 1).float())
        assert type(bad).__name__ == "Raised" and bad.cls == "RuntimeError", T
        assert inplace.cls == "RuntimeError" and "vmap: scatter_add_(self, *extra_args) is not possible" in \
            inplace.message and inplace.message.endswith("please file a bug report instead."), T


# ---- random ops ----------------------------------------------------------------------------------------
F_DROPOUT = "dropout"
RANDOM = {
    "rand": lambda T, x: x + T.rand(3),
    "randn_blocks": lambda T, x: x.sum() + T.randn(2, 3, 4),
    "randn_size": lambda T, x: x + T.randn(size=(3,)),
    "randint": lambda T, x: x + T.randint(0, 10, (3,)),
    "randint_high": lambda T, x: x + T.randint(7, size=(3,)),
    "normal_floats": lambda T, x: x + T.normal(1.0, 2.0, (3,)),
    "rand_like": lambda T, x: T.rand_like(x) + x,
    "randn_like": lambda T, x: T.randn_like(x),
    "randint_like": lambda T, x: T.randint_like(x, 5),
    "bernoulli": lambda T, x: T.bernoulli(x.sigmoid()),
    "bernoulli_p": lambda T, x: x.bernoulli(0.3),
    "poisson": lambda T, x: T.poisson(x.abs()),
    "multinomial": lambda T, x: T.multinomial(x.abs() + 0.1, 2),
    "multinomial_rows": lambda T, x: T.multinomial(T.stack([x.abs(), x.abs().flip(0)]) + 0.1, 3, replacement=True),
    "normal_tensor": lambda T, x: T.normal(x, 0.5),
    "normal_": lambda T, x: x.clone().normal_(),
    "uniform_": lambda T, x: x.clone().uniform_(-1, 1),
    "bernoulli_": lambda T, x: x.clone().bernoulli_(0.5),
    "exponential_": lambda T, x: x.clone().exponential_(),
    "dropout": lambda T, x: T.nn.functional.dropout(x, 0.5),
    "dropout_inplace": lambda T, x: T.nn.functional.dropout(x.clone(), 0.3, True, True),
    "dropout_unbatched": lambda T, x: T.nn.functional.dropout(T.ones(3, dtype=T.float64), 0.5) + x,
    "alpha_dropout": lambda T, x: T.nn.functional.alpha_dropout(x, 0.5, True),
    "inplace_on_unbatched": lambda T, x: T.zeros(3, dtype=T.float64).normal_() + x,
    "rrelu": lambda T, x: T.nn.functional.rrelu(x, training=True),
    "unbatched_input": lambda T, x: T.bernoulli(T.full((3,), 0.5, dtype=T.float64)) + x,
    "dropout1d": lambda T, x: T.nn.functional.dropout1d(x.view(3, 1) + 1, 0.5),
    "dropout2d": lambda T, x: T.nn.functional.dropout2d(x.view(1, 3, 1, 1), 0.4),
    "dropout3d": lambda T, x: T.nn.functional.dropout3d(x.view(3, 1, 1, 1), 0.5),
    "feature_alpha_dropout": lambda T, x: T.nn.functional.feature_alpha_dropout(x.view(3, 1), 0.5, True),
    "gumbel_softmax": lambda T, x: T.nn.functional.gumbel_softmax(x, tau=0.5),
    "gumbel_softmax_hard": lambda T, x: T.nn.functional.gumbel_softmax(x, hard=True),
    "randperm": lambda T, x: T.randperm(5) + x.sum(),
}
# what draws one call over the whole batch (on hookgrad, its per-slice fallback is refused)
_ONE_CALL = {"different": set(RANDOM) - {"inplace_on_unbatched", "rrelu", "randperm"},
             "same": {"dropout", "dropout_inplace", "rand", "randn_blocks", "randn_size", "randint", "randint_high", "normal_floats", "rand_like",
                      "randn_like", "randint_like", "normal_", "uniform_", "bernoulli_", "exponential_",
                      "inplace_on_unbatched", "unbatched_input"}}


@pytest.mark.parametrize("name", sorted(RANDOM))
@pytest.mark.parametrize("randomness", ["different", "same"])
@differential(rtol=1e-6, atol=1e-6)
def test_random_ops_draw_torch_values(T, name, randomness):
    T.manual_seed(0)
    x = _data(T, 4, 3)
    guard = _no_per_slice(T) if name in _ONE_CALL[randomness] else contextlib.nullcontext()
    with guard:
        out = catch(T.func.vmap(lambda a: RANDOM[name](T, a), randomness=randomness), x)
    if type(out).__name__ == "Raised":
        return out, out.message
    return out, T.rand(2)  # and the generator advanced as far as torch's


# ---- autograd.grad(is_grads_batched=True): one vmapped backward pass --------------------------------------
def _hooked_mlp(T, log):
    T.manual_seed(0)
    net = T.nn.Sequential(T.nn.Linear(5, 8), T.nn.Tanh(), T.nn.Linear(8, 3)).double()
    net[0].register_full_backward_hook(
        lambda m, gi, go: log.append(("module", [None if g is None else tuple(g.shape) for g in gi],
                                      [tuple(g.shape) for g in go])))
    net[2].register_full_backward_pre_hook(lambda m, go: log.append(("module pre", [tuple(g.shape) for g in go])))
    return net


@differential(rtol=1e-9, atol=1e-10)
def test_hooks_fire_once_with_per_example_gradients(T):
    log = []
    net = _hooked_mlp(T, log)
    x = _data(T, 4, 5).requires_grad_()
    packed = []

    def pack(t):
        packed.append(tuple(t.shape))
        return t

    def unpack(t):
        log.append(("unpack", tuple(t.shape)))
        return t
    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = net(x)
    y.register_hook(lambda g: log.append(("y", tuple(g.shape), g.dim(), g.requires_grad)))
    h = y.grad_fn.next_functions[0][0]
    h.register_prehook(lambda go: log.append(("node pre", [tuple(g.shape) for g in go])))
    h.register_hook(lambda gi, go: log.append(("node", [None if g is None else tuple(g.shape) for g in gi])))
    x.register_hook(lambda g: g * 2)  # what a hook returns replaces the batched gradient
    loss = (y ** 2).sum(1)
    grads = T.autograd.grad(loss, [x, net[0].weight], T.eye(4, dtype=T.float64), is_grads_batched=True)
    return log, grads


@differential(rtol=1e-9, atol=1e-10)
def test_batched_gradients_with_create_graph(T):
    x = _data(T, 3).requires_grad_()
    calls = []
    y = x.sin() * x
    y.register_hook(lambda g: calls.append(tuple(g.shape)))
    g, = T.autograd.grad(y, x, T.eye(3, dtype=T.float64), is_grads_batched=True, create_graph=True)
    second, = T.autograd.grad(g.sum(), x)
    return g, second, g.requires_grad, calls



@pytest.mark.parametrize("name", ["exp", "sin_tanh", "sigmoid_scaled", "relu"])
@differential(rtol=1e-9, atol=1e-10)
def test_batched_create_graph_gradient_ends_in_the_last_formulas_node(T, name):
    x = _data(T, 3).requires_grad_()
    y = {"exp": lambda: x.exp(), "sin_tanh": lambda: x.sin().tanh(), "sigmoid_scaled": lambda: (x * 3).sigmoid(),
         "relu": lambda: x.relu()}[name]()
    g, = T.autograd.grad(y, x, T.eye(3, dtype=T.float64), is_grads_batched=True, create_graph=True)
    second, = T.autograd.grad((g * g).sum(), x)
    return g, g.grad_fn.name(), second

def _tanh_of_product_hooked(calls):
    """f(x, w) = (tanh(x @ w), x.sum()), with a tensor hook on the tanh that records each gradient's shape."""
    def f(x, w):
        y = (x @ w).tanh()
        y.register_hook(lambda g: calls.append(tuple(g.shape)))
        return y, x.sum()
    return f


@differential(rtol=1e-9, atol=1e-10)
def test_vectorized_jacobian_and_hessian_run_one_pass(T):
    calls = []
    f = _tanh_of_product_hooked(calls)
    x, w = _data(T, 2, 3), _data(T, 3, 4, start=0.5) / 4
    jac = T.autograd.functional.jacobian(f, (x, w), vectorize=True)
    hess = T.autograd.functional.hessian(lambda a: (a.exp() * a).sum(), x, vectorize=True)
    return jac, hess, calls


@differential(rtol=1e-9, atol=1e-10)
def test_custom_function_backward_runs_once_on_batched_gradients(T):
    seen = []

    class Cube(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            seen.append((tuple(g.shape), g.dim()))
            return 3 * x ** 2 * g

    x = _data(T, 3).requires_grad_()
    y = Cube.apply(x).exp()
    return T.autograd.grad(y, x, T.eye(3, dtype=T.float64), is_grads_batched=True), seen



@contextlib.contextmanager
def _no_per_entry_backward(T):
    """On hookgrad, a node whose formula runs once per batch entry fails the block."""
    if T.__name__ != "hookgrad":
        yield
        return
    from hookgrad._functorch import vmap as batching
    original = batching._apply_per_entry

    def refuse(node, *rest):
        raise AssertionError(f"{node.name()} ran once per batch entry")
    batching._apply_per_entry = refuse
    try:
        yield
    finally:
        batching._apply_per_entry = original


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@differential(rtol=1e-4, atol=1e-5)
def test_common_formulas_run_once_on_the_batched_gradients(T, dtype):
    """Products, broadcasting elementwise ops, views and reductions: one formula call for the batch.
    (float32: the per-entry pass differs from torch's by 2e-5 relative on the same cancellations.)"""
    dt = getattr(T, dtype)
    seen = []
    x = _data(T, 4, 3).to(dt).requires_grad_()
    w = (_data(T, 5, 3, start=0.5) / 4).to(dt).requires_grad_()
    b = _data(T, 5).to(dt).requires_grad_()
    s = _data(T, 1, 5, start=1.0).to(dt).requires_grad_()
    h = T.nn.functional.linear(x, w, b).relu()
    h.register_hook(lambda g: seen.append(("h", tuple(g.shape), g.dtype)))
    z = (h * s - b).tanh() + s.t().t().exp()
    m = z.view(2, 10).sum(1, keepdim=True) * z.mean(0).mean() - (x @ w.t()).mean(1).view(2, 2).sum(0).sum()
    q = (m.sigmoid() + m.mean()).mean(1, keepdim=False)
    r = (z.unsqueeze(0).permute(2, 0, 1).transpose(0, 2).squeeze(1) / s.expand(4, 5) * 0.5 / 3).softmax(1)
    q = q + (r.log_softmax(0) / (b.exp() + 1).unsqueeze(0)).sum(1).view(4, 1).squeeze().mean().reshape(1)
    with _no_per_entry_backward(T):
        grads = T.autograd.grad(q, [x, w, b, s], T.linspace(-1, 1, 14, dtype=dt).reshape(7, 2),
                                is_grads_batched=True)
    return grads, seen


def test_mlp_batched_gradients_take_one_formula_call_per_node():
    """A linear/tanh/relu network's batched backward (and a vectorized jacobian) never runs per entry."""
    import hookgrad as T
    T.manual_seed(0)
    net = T.nn.Sequential(T.nn.Linear(6, 8), T.nn.Tanh(), T.nn.Linear(8, 8), T.nn.ReLU(), T.nn.Linear(8, 3))
    x = T.randn(5, 6, requires_grad=True)
    with _no_per_entry_backward(T):
        T.autograd.grad(net(x), [x, *net.parameters()], T.randn(64, 5, 3), is_grads_batched=True)
        T.autograd.functional.jacobian(lambda a: net(a).sum(0), x.detach(), vectorize=True)


LEGACY_READS = {
    "str": lambda T, g: str(g), "format": lambda T, g: f"{g}", "detach": lambda T, g: g.detach(),
    "item": lambda T, g: g[0].item(), "float": lambda T, g: float(g[0]), "bool": lambda T, g: bool(g[0] > 0),
    "numpy": lambda T, g: g.numpy(), "tolist": lambda T, g: g.tolist(), "equal": lambda T, g: T.equal(g, g),
    "allclose": lambda T, g: T.allclose(g, g), "detach_": lambda T, g: g.detach_(),
    "rand_like": lambda T, g: T.rand_like(g), "dropout": lambda T, g: T.nn.functional.dropout(g),
    "rand": lambda T, g: T.rand(2),
    # what still runs: an idle dropout, the value's shape
    "dropout_idle": lambda T, g: T.nn.functional.dropout(g, 0.0) * 1,
    "shape": lambda T, g: tuple(g.shape),
}


@pytest.mark.parametrize("name", sorted(LEGACY_READS))
@differential(rtol=1e-9, atol=1e-10)
def test_hook_on_batched_gradients_reads_values_as_torch_refuses(T, name):
    """A hook in a batched-gradients pass holds torch's legacy batched tensor: its own refusals."""
    x = _data(T, 3).requires_grad_()
    y = x.sin() * 2
    seen = []

    def hook(g):
        result = catch(LEGACY_READS[name], T, g)
        seen.append(result if hasattr(result, "cls") else isinstance(result, T.Tensor))
        if hasattr(result, "cls"):
            seen.append(result.message[:120])
    y.register_hook(hook)
    grads = T.autograd.grad(y, x, T.eye(3, dtype=T.float64), is_grads_batched=True)
    return grads, seen

# ---- a custom Function's vmap staticmethod ----------------------------------------------------------------
def _scale_function(T, log):
    class Scale(T.autograd.Function):
        @staticmethod
        def forward(x, k):
            log.append(("forward", tuple(x.shape), k))
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            log.append(("backward", tuple(g.shape)))  # under vmap of grad: the per-example gradient
            return g * ctx.k, None

        @staticmethod
        def vmap(info, in_dims, x, k):
            log.append(("vmap", info.batch_size, info.randomness, in_dims, tuple(x.shape), k, repr(info)))
            return Scale.apply(x, k) + 1, in_dims[0]
    return Scale


@differential
def test_function_vmap_staticmethod_called_as_torch_calls_it(T):
    log = []
    Scale = _scale_function(T, log)
    x = _data(T, 2, 3)
    results = [T.func.vmap(lambda t: Scale.apply(t, 2.0))(x),
               T.func.vmap(lambda t: Scale.apply(t, 2.0), in_dims=1, randomness="same")(x),
               T.func.vmap(T.func.vmap(lambda t: Scale.apply(t, 2.0)))(x),
               T.func.vmap(T.func.grad(lambda t: Scale.apply(t, 3.0).sum()))(x)]

    class Pair(T.autograd.Function):
        @staticmethod
        def forward(x, y):
            return x + y, x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def vmap(info, in_dims, x, y):
            log.append(("pair", in_dims, tuple(x.shape), tuple(y.shape)))
            moved = x.movedim(in_dims[0], 0)
            return Pair.apply(moved, y), (0, 0)

    results.append(T.func.vmap(Pair.apply, in_dims=(1, None))(x, T.ones(2, dtype=T.float64)))

    class WrongDims(Scale):
        @staticmethod
        def vmap(info, in_dims, x, k):
            return x, (0, 1)

    class NotAPair(Scale):
        @staticmethod
        def vmap(info, in_dims, x, k):
            return x

    class Both(Scale):
        generate_vmap_rule = True
    for cls in (WrongDims, NotAPair, Both):
        raised = catch(T.func.vmap(lambda t: cls.apply(t, 2.0)), x)
        results.append((raised, raised.message.split(". ")[0]))
    return results, log


# ---- printing batched tensors -------------------------------------------------------------------------------
@differential
def test_print_shows_where_torch_keeps_the_batch_dim_and_grad_tracking(T):
    printed = []

    def show(t):
        printed.append(repr(t))
        return t
    vm = T.func.vmap
    x = T.arange(6.0).reshape(2, 3)
    vm(show, in_dims=1)(x)
    vm(lambda t: show(t.sin()), in_dims=1)(x)        # a unary op keeps the batch dim where it was
    vm(lambda t: show(t + 1), in_dims=1)(x)          # others move it to the front
    vm(lambda t: show(t.sum(0)), in_dims=1)(x)
    vm(vm(show, in_dims=1))(x.reshape(2, 3, 1))
    vm(T.func.grad(lambda t: (show(t) * show(T.ones(3))).sum()))(x)
    vm(T.func.grad(lambda t, u: (show(u) * show(t * 2)).sum()), in_dims=(0, None))(x, T.ones(3))
    escaped = []
    vm(lambda t: escaped.append(t) or t, in_dims=1)(x)
    printed += [repr(escaped[0]), str(escaped[0])]  # a tensor that escaped its vmap prints as inside it
    return printed



@differential
def test_print_inside_differentiating_transforms_outside_vmap(T):
    """grad, jacrev, jacfwd (a vmap of jvp: one level more), jvp and nested transforms wrap their
    inputs, and what is computed from them, in GradTrackingTensor text; a tensor made before prints plainly.
    (torch wraps every tensor an op makes inside; hookgrad, only those computed from the inputs.)"""
    shown = []
    x, c = T.tensor([1.0, 2.0]), T.tensor([3.0])

    def f(a):
        shown.extend([repr(a), str(a * 2), repr(c), repr(a + c)])
        return (a * a).sum()

    def g(a):
        shown.append(repr(a.sin()))
        return a.sin()
    T.func.grad(f)(x)
    T.func.jacfwd(g)(x)
    T.func.jacrev(g)(x)
    T.func.jvp(g, (x,), (x,))
    T.func.grad(T.func.grad(lambda a: (shown.append(repr(a)), a.sin())[1]))(T.tensor(1.0))
    T.func.grad(lambda a: T.func.vmap(lambda b: (shown.append(repr(b)), b.sin())[1])(a).sum())(x)
    shown.append(repr(x))
    return shown

@differential(rtol=1e-9, atol=1e-10)
def test_generated_vmap_rule_runs_the_functions_steps_once(T):
    log = []

    class Affine(T.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x, w, k):
            log.append(("forward", tuple(x.shape), tuple(w.shape)))
            return (x @ w) ** 2 * k, x.sum()

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, w, ctx.k = inputs
            ctx.save_for_backward(x, w)

        @staticmethod
        def backward(ctx, g, g_sum):
            x, w = ctx.saved_tensors
            log.append(("backward", tuple(g.shape), tuple(g_sum.shape), tuple(x.shape)))
            inner = 2 * (x @ w) * g * ctx.k
            return inner @ w.t() + g_sum, T.outer(x, inner), None

    x = _data(T, 4, 3).requires_grad_()
    w = _data(T, 3, 2, start=0.5).requires_grad_()
    out, total = T.func.vmap(lambda a: Affine.apply(a, w, 2.0))(x)
    (out.sum() + total.sum()).backward()      # the backward after the vmap returned
    per_sample = T.func.vmap(T.func.grad(lambda a, b: Affine.apply(a, b, 0.5)[0].sum(), argnums=(0, 1)),
                             in_dims=(0, None))(x.detach(), w.detach())
    nested = T.func.vmap(T.func.vmap(lambda a: Affine.apply(a, w.detach(), 1.0)[0]), in_dims=1)(
        x.detach().reshape(2, 2, 3))
    return out, total, x.grad, w.grad, per_sample, nested, log


@differential(rtol=1e-9, atol=1e-10)
def test_jacrev_takes_one_backward_pass(T):
    calls = []
    f = _tanh_of_product_hooked(calls)
    x, w = _data(T, 2, 3), _data(T, 3, 4, start=0.5) / 4
    jac = T.func.jacrev(f, argnums=(0, 1))(x, w)
    hess = T.func.hessian(lambda a: (a.exp() * a).sum())(x[0])
    return jac, hess, calls


def _registry_rows():
    import numpy as np
    import hookgrad as T
    import op_cases
    rows = []
    for name, row in op_cases.UNARY.items():
        rows.append((f"unary:{name}", lambda x, fn=row[0]: fn(T, x), [(2, 3)]))
    for name, row in op_cases.BINARY.items():
        rows.append((f"binary:{name}", lambda x, y, fn=row[0]: fn(T, x, y), [(2, 3), (3,)]))
    for name, row in op_cases.FUNCTIONAL.items():
        rows.append((f"functional:{name}", row[0], [np.asarray(x.detach().numpy()) if isinstance(x, T.Tensor) else x
                                                    for x in row[1]]))
    return rows


@pytest.mark.parametrize("create_graph", [False, True])
def test_batched_gradients_match_a_pass_per_entry_on_the_op_registry(create_graph):
    """Every registry row whose inputs fit: one batched pass gives the gradients of a pass per entry."""
    import numpy as np
    import hookgrad as T
    checked = 0
    for name, fn, specs in _registry_rows():
        rng = np.random.default_rng(1)
        inputs = [T.tensor(rng.uniform(0.5, 2.0, s), dtype=T.float64, requires_grad=True) if isinstance(s, tuple)
                  else T.tensor(s, requires_grad=s.dtype.kind == "f") if isinstance(s, np.ndarray) else s
                  for s in specs]
        wrt = [x for x in inputs if isinstance(x, T.Tensor) and x.requires_grad]
        try:
            y = fn(*inputs)
        except Exception:  # noqa: BLE001 - a row that needs other shapes than these
            continue
        y = y[0] if isinstance(y, tuple) else y
        if not isinstance(y, T.Tensor) or not y.requires_grad or not y.dtype.is_floating_point:
            continue
        g = T.tensor(rng.standard_normal((3, *y.shape)), dtype=y.dtype)
        per_entry = [T.autograd.grad(y, wrt, g[b], retain_graph=True, allow_unused=True) for b in range(3)]
        batched = T.autograd.grad(y, wrt, g, is_grads_batched=True, retain_graph=True, allow_unused=True,
                                  create_graph=create_graph)
        for j, got in enumerate(batched):
            if per_entry[0][j] is None:
                assert got is None, name
                continue
            want = T.stack([entry[j] for entry in per_entry])
            assert np.allclose(got.detach().numpy(), want.numpy(), rtol=1e-6, atol=1e-9, equal_nan=True), name
        checked += 1
    assert checked > 250


PROMOTIONS = {
    "add": lambda T, s, y: s + y, "radd": lambda T, s, y: y + s, "pow": lambda T, s, y: y ** s,
    "eq": lambda T, s, y: s == y, "atan2": lambda T, s, y: T.atan2(s, y), "maximum": lambda T, s, y: T.maximum(y, s),
    "div": lambda T, s, y: s / y, "fmod": lambda T, s, y: T.fmod(y, s), "bitwise": lambda T, s, y: s.long() & y.int(),
    # torch's rules for these promote the physical tensors
    "addcmul": lambda T, s, y: T.addcmul(y, y, s), "clamp": lambda T, s, y: y.clamp(min=s),
    "where": lambda T, s, y: T.where(y > 0, s, y), "type_as": lambda T, s, y: y.type_as(s),
    "masked_fill": lambda T, s, y: y.masked_fill(y > 1.5, s),
}


@pytest.mark.parametrize("name", sorted(PROMOTIONS))
@differential
def test_a_scalar_per_example_promotes_as_torch_promotes_it(T, name):
    x = _data(T, 4, 3)
    y = T.linspace(1.0, 2.0, 3)
    return T.func.vmap(lambda a: PROMOTIONS[name](T, a.sum(), y))(x)
