"""The autograd engine where features meet, differentially against torch: several roots of one
node, nodes reached only by None gradients, gradient filtering under ``autograd.grad``,
create_graph into leaves, multi-grad hooks, hooks after in-place ops, post-accumulate hook
returns and saved-tensor hooks."""
import numpy as np
import pytest

from difftest import catch, differential, warns


def _raised(fn):
    """The exception's class and message (these messages are torch's wording, matched in the wild)."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - recording it is the point
        return type(exc).__name__, str(exc).split(" (Triggered internally")[0]
    return None


def _ndarray(T, *shape, start=-1.0, stop=1.0, requires_grad=True):
    n = int(np.prod(shape))
    values = np.linspace(start, stop, n).reshape(shape)
    return T.tensor(values, dtype=T.float32, requires_grad=requires_grad)


# ---- several roots that are outputs of one node ----------------------------------------------
@differential
def test_backward_from_every_output_of_split(T):
    w = _ndarray(T, 4)
    a, b = (w * 1).split(2)
    T.autograd.backward([a, b], [T.ones(2), T.ones(2) * 2])
    return w.grad


@differential
def test_backward_from_some_outputs_of_chunk_and_one_twice(T):
    w = _ndarray(T, 6)
    a, b, c = (w * 2).chunk(3)
    T.autograd.backward([a, c, a], [T.ones(2), T.ones(2) * 3, T.ones(2) * 5])
    return w.grad


@differential
def test_grad_of_unbind_outputs_like_captum(T):
    x = _ndarray(T, 3, 2)
    w = _ndarray(T, 2, 4, start=0.5, stop=2.0)
    out = (x @ w).sum(1)
    return T.autograd.grad(T.unbind(out), [x, w])


@differential
def test_grad_of_unbind_outputs_with_grad_outputs_and_retain_graph(T):
    x = _ndarray(T, 4)
    out = x.exp()
    parts = list(out.unbind())
    first = T.autograd.grad(parts, [x], [T.tensor(float(i + 1)) for i in range(4)], retain_graph=True)
    second = T.autograd.grad(parts[1:3], [x], allow_unused=True)
    return first, second


@differential
def test_tuple_returning_module_with_full_backward_hook_as_two_roots(T):
    class Pair(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = T.nn.Linear(3, 2)

        def forward(self, x):
            h = self.lin(x)
            return h, h.sigmoid()

    m = Pair()
    with T.no_grad():
        m.lin.weight.copy_(_ndarray(T, 2, 3, requires_grad=False))
        m.lin.bias.fill_(0.1)
    log = []
    m.register_full_backward_hook(lambda mod, gi, go: log.append((gi, go)))
    x = _ndarray(T, 4, 3)
    h, s = m(x)
    T.autograd.backward([h, s], [T.ones(4, 2), T.ones(4, 2) * 2])
    h, s = m(x)
    via_grad = T.autograd.grad([h, s], [x], [T.ones(4, 2), T.ones(4, 2)])
    return log, x.grad, m.lin.weight.grad, m.lin.bias.grad, via_grad


# ---- a node whose incoming gradients are all None --------------------------------------------
@differential
def test_node_reached_only_by_none_still_unpacks_saved_tensors(T):
    log = []
    a = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: (log.append("pack"), t)[1],
                                              lambda t: (log.append("unpack"), t)[1]):
        d = a.exp().sin()
    c = d.clone()
    c.grad_fn.register_prehook(lambda go: (None,))
    d.grad_fn.register_hook(lambda gi, go: log.append(("post_sin", gi, go)))
    c.sum().backward()
    again = catch(lambda: c.sum().backward())
    return log, a.grad, again


@differential
def test_node_reached_only_by_none_checks_versions(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a.exp()
    c = b.clone()
    c.grad_fn.register_prehook(lambda go: (None,))
    with T.no_grad():
        b.mul_(2)
    return catch(lambda: c.sum().backward()), a.grad


@differential
def test_full_backward_pre_hook_dropping_gradient_still_frees_upstream(T):
    lin = T.nn.Linear(2, 2)
    lin.register_full_backward_pre_hook(lambda m, go: (None,))
    x = T.tensor([[1.0, 2.0]], requires_grad=True)
    y = lin(x.exp()).sum()
    y.backward()
    return x.grad, lin.weight.grad, catch(y.backward)


# ---- gradients nobody needs under autograd.grad / backward(inputs=) --------------------------
@differential
def test_post_hooks_see_none_for_gradients_not_needed(T):
    log = []
    a = _ndarray(T, 2)
    b = _ndarray(T, 2, start=3.0, stop=4.0)
    y = a * b
    y.grad_fn.register_hook(lambda gi, go: log.append(("mul", gi, go)))
    via_grad = T.autograd.grad(y.sum(), [a], retain_graph=True)
    y.sum().backward(inputs=[b], retain_graph=True)
    c = a.exp()
    z = c * b + a
    z.grad_fn.register_hook(lambda gi, go: log.append(("add", gi)))
    z.grad_fn.next_functions[0][0].register_hook(lambda gi, go: log.append(("mul2", gi)))
    via_intermediate = T.autograd.grad(z.sum(), [c])
    return log, via_grad, a.grad, b.grad, via_intermediate


@differential
def test_custom_function_post_hook_sees_every_gradient_under_grad(T):
    log = []

    class Scale(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, z):
            return x * z

        @staticmethod
        def backward(ctx, g):
            log.append(("needs", ctx.needs_input_grad))
            return g * 2, g * 3

    a = _ndarray(T, 2)
    b = _ndarray(T, 2, start=2.0)
    y = Scale.apply(a, b)
    y.grad_fn.register_hook(lambda gi, go: log.append(("post", gi)))
    return T.autograd.grad(y.sum(), [a]), log


@differential
def test_tensor_list_ops_compute_every_piece_when_one_is_needed(T):
    log = []
    a = _ndarray(T, 2)
    b = _ndarray(T, 2, start=2.0)
    c = _ndarray(T, 2, requires_grad=False)
    for make in (lambda: T.cat([a, b, c]), lambda: T.stack([b, a]), lambda: T.cat([a * 1, c])):
        y = make()
        y.grad_fn.register_hook(lambda gi, go: log.append([g is None for g in gi]))
        T.autograd.grad(y.sum(), [a])
        y = make()
        y.grad_fn.register_hook(lambda gi, go: log.append([g is None for g in gi]))
        y.sum().backward()
    return log, a.grad, b.grad


def _legacy_hook_scenario(T, use_grad):
    log = []
    lin = T.nn.Linear(2, 1)
    with T.no_grad():
        lin.weight.copy_(T.tensor([[0.5, -1.5]]))
        lin.bias.fill_(0.25)
    lin.register_backward_hook(lambda m, gi, go: log.append((gi, go)))
    x = T.tensor([[1.0, 2.0]], requires_grad=True)
    out = lin(x)
    if use_grad:
        return T.autograd.grad(out.sum(), [x]), log
    out.sum().backward(inputs=[lin.bias])
    return lin.bias.grad, lin.weight.grad, x.grad, log


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("use_grad", [True, False])
@differential
def test_legacy_module_backward_hook_sees_none_for_unneeded(T, use_grad):
    return _legacy_hook_scenario(T, use_grad)


# ---- backward(create_graph=True) into leaves -------------------------------------------------
def _warning_texts(fn):
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    # torch appends where in its C++ sources a warning was raised
    return [(w.category.__name__, str(w.message).split(" (Triggered internally")[0]) for w in caught]


@differential
def test_create_graph_backward_warns_under_warn_always(T):
    before = T.is_warn_always_enabled()
    a = _ndarray(T, 2)
    T.set_warn_always(True)
    try:
        enabled = T.is_warn_always_enabled()
        via_backward = [_warning_texts(lambda: (a * a).sum().backward(create_graph=True)) for _ in range(2)]
        via_grad = _warning_texts(lambda: T.autograd.grad((a * a).sum(), [a], create_graph=True))
        b = a * 2
        via_inputs = _warning_texts(lambda: (b * b).sum().backward(inputs=[b], create_graph=True))
    finally:
        T.set_warn_always(False)
    bad = [catch(T.set_warn_always, value) for value in (1, "yes", None)]
    return before, enabled, T.is_warn_always_enabled(), via_backward, via_grad, via_inputs, bad


_ONCE_SCRIPT = """
import importlib, sys, warnings
T = importlib.import_module(sys.argv[1])
warnings.simplefilter("always")
a = T.tensor([1.0, 2.0], requires_grad=True)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    T.autograd.grad((a * a).sum(), [a], create_graph=True)
    T.set_warn_always(True)
    (a * a).sum().backward(create_graph=True)
    T.set_warn_always(False)
    for _ in range(3):
        (a * a).sum().backward(create_graph=True)
print([str(w.message)[:40] for w in caught])
"""


def test_create_graph_backward_warns_once_per_process():
    import os
    import subprocess
    import sys
    seen = {}
    for name in ("torch", "hookgrad"):
        proc = subprocess.run([sys.executable, "-c", _ONCE_SCRIPT, name], capture_output=True, text=True,
                              env=dict(os.environ), timeout=120)
        assert proc.returncode == 0, proc.stderr
        seen[name] = proc.stdout
    assert seen["hookgrad"] == seen["torch"]
    assert seen["torch"].count("Using backward() with create_graph=True") == 2


@differential
def test_create_graph_gradient_is_a_copy_that_zero_grad_can_detach(T):
    a = _ndarray(T, 2, 2)
    b = _ndarray(T, 2, start=0.5, stop=1.5)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (a.t() * a).sum().backward(create_graph=True)
        (b * 2).sum().backward(create_graph=True)
    first = (a.grad.grad_fn.name(), a.grad.requires_grad, a.grad.is_contiguous(), a.grad._is_view(),
             b.grad.grad_fn, b.grad.requires_grad)
    second_order = T.autograd.grad(a.grad.sum(), [a])
    opt = T.optim.SGD([a, b], lr=0.1)
    opt.zero_grad(set_to_none=False)
    return first, second_order, a.grad, a.grad.requires_grad, a.grad.grad_fn, b.grad


@differential
def test_anomaly_flags_at_top_level(T):
    import warnings
    flags = [(T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled())]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with T.autograd.detect_anomaly(check_nan=False):
            flags.append((T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled()))
        with T.autograd.set_detect_anomaly(True):
            flags.append((T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled()))
    flags.append((T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled()))
    return flags


# ---- roots no wanted gradient lies behind; argument checking of grad() / backward() ----------
@differential
def test_lone_root_is_visited_when_nothing_behind_it_is_wanted(T):
    log = []
    a = _ndarray(T, 2)
    u = _ndarray(T, 2, start=2.0)
    loss = (a * 2).sum()
    loss.retain_grad()
    loss.register_hook(lambda g: log.append(("loss", g)))
    loss.grad_fn.register_prehook(lambda g: log.append(("pre", g)))
    materialized = T.autograd.grad(loss, [u], allow_unused=True, materialize_grads=True)
    replaced = (a * 3).sum()
    replaced.retain_grad()
    replaced.register_hook(lambda g: g * 10)
    unused = T.autograd.grad(replaced, [u], allow_unused=True)
    a.register_hook(lambda g: log.append(("leaf_root", g)))
    leaf_root = T.autograd.grad(a, [u], T.ones(2), allow_unused=True)
    return materialized, loss.grad, unused, replaced.grad, leaf_root, a.grad, log


@differential
def test_several_roots_visit_only_those_a_wanted_gradient_lies_behind(T):
    log = []
    a = _ndarray(T, 2)
    u = _ndarray(T, 2, start=2.0)

    def roots():
        la = (a * 2).sum()
        la.retain_grad()
        la.register_hook(lambda g: log.append(("la", g)))
        lu = (u * 3).sum()
        lu.retain_grad()
        lu.register_hook(lambda g: log.append(("lu", g)))
        return la, lu

    la, lu = roots()
    via_grad = T.autograd.grad([la, lu], [u])
    grads_seen = (la.grad, lu.grad)
    la, lu = roots()
    T.autograd.backward([la, lu], inputs=[u])
    lone, _ = roots()
    T.autograd.backward([lone], inputs=[u])
    return via_grad, grads_seen, la.grad, lu.grad, lone.grad, u.grad, a.grad, log


@pytest.mark.filterwarnings("ignore::FutureWarning")
@differential
def test_grad_and_backward_argument_checks(T):
    a = _ndarray(T, 2)
    u = _ndarray(T, 2, start=2.0)
    loss = lambda: (a * 2).sum()  # noqa: E731
    calls = [
        lambda: T.autograd.grad(None, [a]),
        lambda: T.autograd.grad([None], [a]),
        lambda: T.autograd.grad(loss(), None),
        lambda: T.autograd.backward(None),
        lambda: T.autograd.grad([], [a]),
        lambda: T.autograd.grad([], [a], allow_unused=True),
        lambda: T.autograd.backward([]),
        lambda: T.autograd.grad(loss(), []),
        lambda: T.autograd.grad(loss(), [a, None]),
        lambda: T.autograd.grad(loss(), [a, 3]),
        lambda: T.autograd.grad([loss(), 3], [a]),
        lambda: T.autograd.grad(loss(), [u, a]),
        lambda: T.autograd.grad(loss(), [a], [T.tensor(1.0), T.tensor(1.0)]),
        lambda: T.autograd.grad(loss(), [a], grad_outputs=[1.0]),
        lambda: T.autograd.grad(loss(), [a], grad_outputs=[]),
        lambda: T.autograd.backward([loss(), loss()], [T.tensor(1.0)]),
        lambda: T.autograd.grad(loss(), [a], only_inputs=False),
        lambda: T.autograd.backward(loss(), grad_variables=T.tensor(1.0)),
        lambda: T.autograd.backward(loss(), grad_tensors=T.tensor(1.0), grad_variables=T.tensor(1.0)),
        lambda: T.autograd.backward(loss(), inputs={"a": a}),
        lambda: T.autograd.backward(loss(), inputs=[]),
        lambda: T.autograd.backward(loss(), inputs=[None]),
        lambda: T.autograd.backward(loss(), inputs=[T.tensor(1.0)]),
        lambda: T.autograd.grad(loss(), inputs=[T.tensor(1.0), None]),
        lambda: T.autograd.grad(loss(), inputs={"a": a, "u": u}, allow_unused=True),
        lambda: T.autograd.grad(loss(), inputs=T.autograd.graph.get_gradient_edge(a)),
        lambda: T.autograd.grad(loss(), [u], materialize_grads=True, create_graph=True)[0].requires_grad,
        lambda: T.autograd.grad(loss(), [u], allow_unused=False, materialize_grads=True),
        lambda: T.autograd.grad(T.tensor([1, 2]), [a]),
        lambda: T.autograd.grad(T.tensor(1), [a]),
        lambda: T.autograd.grad(loss(), [a], T.tensor(1.0, dtype=T.complex64)),
        lambda: T.autograd.grad(loss(), [a], T.ones(2)),
    ]
    return [catch(call) for call in calls], a.grad


# ---- multi-grad hooks ------------------------------------------------------------------------
def _shown(grads):
    return [None if g is None else g.tolist() for g in grads] if isinstance(grads, (list, tuple)) else grads.tolist()


@differential
def test_multi_grad_hook_refuses_tensor_without_grad(T):
    log = []
    a = _ndarray(T, 2)
    c = _ndarray(T, 2, requires_grad=False)
    refused = catch(T.autograd.graph.register_multi_grad_hook, (a, c), lambda g: log.append(_shown(g)))
    accepted_any = T.autograd.graph.register_multi_grad_hook((a, c), lambda g: log.append(("any", _shown(g))),
                                                             mode="any")
    (a * 2).sum().backward()
    accepted_any.remove()
    return refused, log


@differential
def test_multi_grad_hook_with_leaf_under_autograd_grad(T):
    log = []
    a = _ndarray(T, 2)
    b = _ndarray(T, 2, start=3.0, stop=4.0)
    x = a * 2
    r = (x * 3).sum() + (b * 1).sum()
    handle = T.autograd.graph.register_multi_grad_hook((x, b), lambda g: log.append(("xb", _shown(g))))
    results = [catch(lambda: T.autograd.grad(r, [a], retain_graph=True)),
               catch(lambda: T.autograd.grad(r, [b], retain_graph=True)),
               catch(lambda: r.backward(inputs=[b], retain_graph=True)),
               catch(lambda: r.backward(retain_graph=True))]
    handle.remove()
    handle = T.autograd.graph.register_multi_grad_hook((a, b), lambda g: log.append(("ab", _shown(g))))
    results.append(catch(lambda: T.autograd.grad((a * b).sum(), [a])))
    results.append(catch(lambda: (a * b).sum().backward(inputs=[a])))
    handle.remove()
    return results, log, a.grad, b.grad


@differential
def test_multi_grad_hook_all_containing_the_root(T):
    log = []
    a = _ndarray(T, 2)
    x = a * 2
    r = (x * 3).sum()
    r2 = (x * 5).sum()
    z = a * 4

    def watch(label, tensors):
        return T.autograd.graph.register_multi_grad_hook(
            tensors, lambda g: log.append((label, type(g).__name__, _shown(g))))

    steps = [
        (("r", "x"), lambda: r.backward(retain_graph=True)),
        (("x", "r"), lambda: r.backward(retain_graph=True)),
        (("r",), lambda: r.backward(retain_graph=True)),
        (("r", "r2", "x"), lambda: T.autograd.backward([r, r2], retain_graph=True)),
        (("x", "r"), lambda: T.autograd.backward([r, r], retain_graph=True)),
        (("r", "x"), lambda: T.autograd.grad(r, [a], retain_graph=True)),
        (("r", "x"), lambda: r.backward(inputs=[a], retain_graph=True)),
        (("r", "r2", "x"), lambda: T.autograd.grad([r, r2], [x], retain_graph=True)),
        (("x", "z"), lambda: z.backward(T.ones(2), retain_graph=True)),
        (("x", "z"), lambda: z.sum().backward(retain_graph=True)),
        (("x", "x"), lambda: r.backward(retain_graph=True)),
        (("a",), lambda: a.backward(T.ones(2))),
    ]
    named = {"r": r, "r2": r2, "x": x, "z": z, "a": a}
    for names, run in steps:
        handle = watch("+".join(names), tuple(named[n] for n in names))
        run()
        handle.remove()
    any_handle = T.autograd.graph.register_multi_grad_hook((r, x), lambda g: log.append(("any", _shown(g))),
                                                           mode="any")
    r.backward(retain_graph=True)
    r.backward(retain_graph=True)
    any_handle.remove()
    return log, a.grad


# ---- hooks after in-place ops; in-place on 0-d results ---------------------------------------
@differential
def test_hooks_registered_after_in_place_before_grad_fn_is_read(T):
    log = []
    a = _ndarray(T, 2)
    b = a * 2
    b.mul_(3)
    b.register_hook(lambda g: log.append(("b", g)))
    b.sum().backward()
    c = a * 2
    v = c[:1]
    v.mul_(2)
    v.register_hook(lambda g: log.append(("view", g)))
    w = c[1:]
    w.add_(1)
    handle = T.autograd.graph.register_multi_grad_hook((w, a), lambda g: log.append(("multi", list(g))))
    (v.sum() * 5 + w.sum()).backward()
    handle.remove()
    d = a * 2
    u = d[:1]
    u.mul_(2)
    u.retain_grad()
    (u * 7).sum().backward()
    return log, a.grad, u.grad


@differential
def test_in_place_on_zero_dim_results_of_arithmetic(T):
    a = _ndarray(T, 2)
    loss = (a * 2).sum() + (a * 3).sum()
    alias = loss.detach()
    with T.no_grad():
        loss.add_(1)
    x = T.tensor(3.0)
    total = x * 2
    total += x.numel()
    t = (a * 2).sum()
    with T.no_grad():
        t.mul_(2)
    count = T.tensor(0.0) + 0
    count.add_(5)
    return loss, alias, loss._version, total, t, count


# ---- what hooks return -----------------------------------------------------------------------
@pytest.mark.parametrize("returns", ["itself", "its_grad", "other_tensor", "detached", "an_int", "a_list",
                                     "nothing", "wrong_shape", "wrong_dtype"])
@differential
def test_post_accumulate_grad_hook_returns(T, returns):
    log = []
    p = _ndarray(T, 2)
    other = T.ones(2)

    def first(t):
        log.append("first")
        return {"itself": t, "its_grad": t.grad, "other_tensor": other, "detached": t.detach(), "an_int": 3,
                "a_list": [t], "nothing": None, "wrong_shape": T.ones(3),
                "wrong_dtype": T.ones(2, dtype=T.float64)}[returns]

    p.register_post_accumulate_grad_hook(first)
    p.register_post_accumulate_grad_hook(lambda t: log.append(("second", t is p, t is other)))
    (p * 2).grad_fn.next_functions[0][0].register_hook(lambda gi, go: log.append("accumulate_post"))
    outcome = _raised(lambda: (p * 2).sum().backward())
    return outcome, log, p.grad


@differential
def test_post_accumulate_grad_hook_stepping_the_parameter(T):
    p = _ndarray(T, 2)
    p.register_post_accumulate_grad_hook(lambda q: q.add_(q.grad, alpha=-0.01))
    (p * 2).sum().backward()
    return p.detach(), p.grad


@pytest.mark.parametrize("kind", ["pre", "post"])
@pytest.mark.parametrize("returns", ["list", "tensor", "int", "too_many", "bad_element", "wrong_shape",
                                     "wrong_dtype", "tuple"])
@differential
def test_node_hook_return_checks(T, kind, returns):
    a = _ndarray(T, 2)
    b = _ndarray(T, 2, start=2.0)
    y = a * b
    make = {"list": lambda g: list(g), "tensor": lambda g: T.ones(2), "int": lambda g: 3,
            "too_many": lambda g: (None,) * 3, "bad_element": lambda g: tuple(3 for _ in g),
            "wrong_shape": lambda g: tuple(T.ones(3) for _ in g),
            "wrong_dtype": lambda g: tuple(T.ones(2, dtype=T.float64) for _ in g),
            "tuple": lambda g: tuple(x * 2 for x in g)}[returns]
    if kind == "pre":
        y.grad_fn.register_prehook(lambda go: make(go))
    else:
        y.grad_fn.register_hook(lambda gi, go: make(gi))
    return _raised(lambda: y.sum().backward()), a.grad, b.grad


@differential
def test_hooks_cannot_replace_a_none_gradient(T):
    a = _ndarray(T, 2)
    c = _ndarray(T, 2, requires_grad=False)
    y = a * c
    y.grad_fn.register_hook(lambda gi, go: (gi[0], T.ones(2)))
    post = _raised(lambda: y.sum().backward())
    z = a * 2
    w = z.clone()
    w.grad_fn.register_prehook(lambda go: (None,))
    z.register_hook(lambda g: T.ones(2))
    tensor_hook = _raised(lambda: w.sum().backward())
    leaf = _ndarray(T, 2)
    leaf.register_hook(lambda g: 3)
    v = (leaf * 2).clone()
    v.grad_fn.register_prehook(lambda go: (None,))
    leaf_hook = _raised(lambda: v.sum().backward())
    return post, tensor_hook, leaf_hook, a.grad


# ---- saved-tensor hooks ----------------------------------------------------------------------
@differential
def test_pack_hook_runs_without_grad_and_unpacked_value_is_the_original(T):
    log = []

    def pack(x):
        log.append(("pack", T.is_grad_enabled(), x.requires_grad))
        return x * 2

    def unpack(x):
        log.append(("unpack", T.is_grad_enabled(), x.requires_grad, x.grad_fn is None))
        return x

    a = _ndarray(T, 2, start=1.0, stop=2.0)
    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = a ** 3
    g, = T.autograd.grad(y.sum(), a, create_graph=True)
    g.sum().backward()
    scaled = (g, g.requires_grad, a.grad)

    b = _ndarray(T, 2, start=1.0, stop=2.0)
    with T.autograd.graph.saved_tensors_hooks(lambda x: x.detach(), lambda x: x):
        y = b ** 3
    g, = T.autograd.grad(y.sum(), b, create_graph=True)
    g.sum().backward()
    detached = (g, g.requires_grad, b.grad)

    c = _ndarray(T, 2, start=1.0, stop=2.0)
    mid = c * 1
    with T.autograd.graph.saved_tensors_hooks(lambda x: x * 2, lambda x: x):
        y = mid ** 3
    g, = T.autograd.grad(y.sum(), c, create_graph=True)
    g.sum().backward()
    non_leaf = (g, c.grad)

    d = _ndarray(T, 2, start=1.0, stop=2.0)
    with T.autograd.graph.saved_tensors_hooks(lambda x: x * 2, lambda x: x):
        y = d.exp()
    g, = T.autograd.grad(y.sum(), d, create_graph=True)
    g.sum().backward()
    saved_output = (g, d.grad)

    e = _ndarray(T, 2, start=1.0, stop=2.0)
    other = T.tensor([5.0, 5.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: other):
        y = e ** 3
    g, = T.autograd.grad(y.sum(), e, create_graph=True)
    g.sum().backward()
    foreign = (g, e.grad, other.grad)
    return log, scaled, detached, non_leaf, saved_output, foreign


@differential
def test_pack_hook_modifying_its_input_in_place_raises(T):
    a = _ndarray(T, 2, start=1.0, stop=2.0)
    b = a * 1

    def bad_pack(x):
        x.mul_(2)
        return x

    def save():
        with T.autograd.graph.saved_tensors_hooks(bad_pack, lambda x: x):
            return b ** 2

    refused = _raised(save)
    # through .data the change is invisible to autograd, as in torch
    with T.autograd.graph.saved_tensors_hooks(lambda x: x.data.mul_(1), lambda x: x):
        y = b ** 2
    y.sum().backward()
    return refused, a.grad, y


@differential
def test_changes_through_data_are_invisible_to_autograd(T):
    p = _ndarray(T, 2, start=1.0, stop=2.0)
    y = (p * p).sum()
    p.data.add_(1)
    y.backward()
    return p._version, p.data._version, p.grad


@differential
def test_backward_works_on_a_copy_of_the_saved_tensor_hook_state(T):
    G = T.autograd.graph
    log = []
    a = _ndarray(T, 2, start=1.0, stop=2.0)

    def usable():
        with G.saved_tensors_hooks(lambda x: x, lambda x: x):
            pass
        return "usable"

    def unpack_enter(x):
        G.saved_tensors_hooks(lambda t: (log.append("leaked pack"), t)[1], lambda t: t).__enter__()
        return x

    with G.saved_tensors_hooks(lambda x: x, unpack_enter):
        y = (a * 1) ** 2
    y.sum().backward()
    after_enter = (a * 1) ** 2  # would pack with the leaked hook

    def unpack_disable(x):
        G.disable_saved_tensors_hooks("from unpack").__enter__()
        return x

    with G.saved_tensors_hooks(lambda x: x, unpack_disable):
        y = (a * 1) ** 2
    y.sum().backward()
    after_disable = catch(usable)

    def unpack_exit(x):
        G.saved_tensors_hooks(lambda t: t, lambda t: t).__exit__(None, None, None)
        return x

    with G.saved_tensors_hooks(lambda x: x, unpack_exit):
        y = (a * 1) ** 2
    exit_with_none_in_force = catch(lambda: y.sum().backward())
    after_exit = catch(usable)

    # hooks entered by one node's unpack apply to what that node saves, not to later nodes
    pushed = []

    def unpack_push_once(x):
        if not pushed:
            pushed.append(True)
            G.saved_tensors_hooks(lambda t: (log.append(("inner pack", tuple(t.shape))), t)[1],
                                  lambda t: t).__enter__()
        log.append("unpack")
        return x

    b = _ndarray(T, 2, start=1.0, stop=2.0)
    with G.saved_tensors_hooks(lambda x: x, unpack_push_once):
        z = b.exp().sin()
    grads = T.autograd.grad(z.sum(), b, create_graph=True)
    return log, after_enter, after_disable, exit_with_none_in_force, after_exit, grads, catch(usable)


@differential
def test_disable_saved_tensors_hooks_semantics(T):
    G = T.autograd.graph

    def hooks_inside_disable(message_outer, message_inner=None):
        with G.disable_saved_tensors_hooks(message_outer):
            if message_inner is not None:
                with G.disable_saved_tensors_hooks(message_inner):
                    pass
            with G.saved_tensors_hooks(lambda x: x, lambda x: x):
                pass

    def disable_inside_hooks():
        with G.saved_tensors_hooks(lambda x: x, lambda x: x):
            with G.disable_saved_tensors_hooks("disabled inside"):
                return "entered"

    @G.disable_saved_tensors_hooks("as a decorator")
    def decorated():
        with G.saved_tensors_hooks(lambda x: x, lambda x: x):
            pass

    def usable():
        with G.saved_tensors_hooks(lambda x: x, lambda x: x):
            pass
        return "usable"

    return [_raised(lambda: hooks_inside_disable("outer")),
            _raised(lambda: hooks_inside_disable("outer", "inner")),
            _raised(disable_inside_hooks), usable(),
            _raised(decorated), usable()]


# ---- the category, not the examples: small random graphs with several roots and input subsets -
def _random_graph_scenario(T, seed):
    rng = np.random.default_rng(seed)
    log = []
    leaves = [T.tensor(rng.uniform(0.5, 1.5, size=4).astype(np.float32), requires_grad=True) for _ in range(3)]
    const = T.tensor(rng.uniform(0.5, 1.5, size=4).astype(np.float32))
    pool = list(leaves)
    for step in range(6):
        kind = int(rng.integers(0, 6))
        x = pool[int(rng.integers(0, len(pool)))]
        y = pool[int(rng.integers(0, len(pool)))]
        if kind == 0:
            out = [x * y]
        elif kind == 1:
            out = [(x * const).exp() * 0.1]
        elif kind == 2:
            out = list((x + y).split(2))
            out = [T.cat([out[1], out[0]])]
        elif kind == 3:
            out = [T.stack([x, const]).sum(0)]
        elif kind == 4:
            out = [x.sin() + y]
        else:
            out = [x ** 2]
        for t in out:
            label = f"n{step}"
            t.grad_fn.register_hook(lambda gi, go, label=label: log.append((label, [g is None for g in gi])))
            t.register_hook(lambda g, label=label: log.append((label + ".t", g)))
        pool.extend(out)
    last = pool[-1]
    parts = list((last * 1).unbind())
    n_roots = int(rng.integers(1, len(parts) + 1))
    roots = parts[:n_roots]
    wanted = [t for t in pool if bool(rng.integers(0, 2))] or [leaves[0]]
    via_grad = catch(lambda: T.autograd.grad(roots, wanted, [T.tensor(float(i + 1)) for i in range(n_roots)],
                                             retain_graph=True, allow_unused=True))
    T.autograd.backward(roots, [T.tensor(2.0)] * n_roots, retain_graph=True)
    return log, via_grad, [leaf.grad for leaf in leaves]


@pytest.mark.parametrize("seed", range(40))
@differential
def test_random_graphs_with_several_roots_and_input_subsets(T, seed):
    return _random_graph_scenario(T, seed)


@differential
def test_full_backward_hook_returning_none_gradients_upstream_still_runs(T):
    log = []
    lin1 = T.nn.Linear(2, 2)
    lin2 = T.nn.Linear(2, 2)
    with T.no_grad():
        for m in (lin1, lin2):
            m.weight.copy_(_ndarray(T, 2, 2, requires_grad=False))
            m.bias.fill_(0.5)
    lin2.register_full_backward_hook(lambda m, gi, go: (None,))
    lin1.register_full_backward_hook(lambda m, gi, go: log.append((gi, go)))
    x = T.tensor([[1.0, 2.0]], requires_grad=True)
    y = lin2(lin1(x).tanh()).sum()
    y.backward()
    grads = (x.grad, lin1.weight.grad, lin2.weight.grad)
    again = catch(y.backward)
    y = lin2(lin1(x).tanh()).sum()
    via_grad = T.autograd.grad(y, [x, lin1.weight], allow_unused=True)
    return log, grads, again, via_grad


@differential
def test_retain_grad_follows_the_tensor_through_inplace_changes(T):
    """retain_grad moves to the tensor's new grad_fn: after an in-place op on the tensor, on a view
    of it, on the tensor when it is a view, or on another view of its base."""
    w = T.nn.Linear(3, 3).double()
    with T.no_grad():
        w.weight.copy_(T.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [-2.0, 1.0, 0.75]], dtype=T.float64))
        w.bias.copy_(T.tensor([0.1, -0.2, 0.3], dtype=T.float64))
    x = T.tensor([[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]], dtype=T.float64)
    out = []
    a = w(x); a.retain_grad(); a.view(-1).mul_(2.0); (a * a).sum().backward()
    b = w(x) * 1; b.retain_grad(); b.mul_(3); (b * b).sum().backward()
    c = w(x)[1]; c.retain_grad(); c.mul_(3); (c * c).sum().backward()
    base = w(x) * 1
    d = base[0]; d.retain_grad(); base[1].mul_(2); (d * d).sum().backward()
    for t in (a, b, c, d):
        out.append((t.grad, t.grad_fn.name()))
    return out


@differential
def test_second_tensor_hook_after_the_base_of_a_hooked_output_changed(T):
    """register_hook reads grad_fn only for the first hook, as torch: once a hook dict exists, a
    later registration does not check the view; a first registration that raises leaves the dict."""
    out = []
    for hook_first in (True, False):
        m = T.nn.Sequential(T.nn.Linear(3, 3).double())
        inner = []
        m[0].register_forward_hook(lambda mod, args, result: inner.append(result))
        m.register_full_backward_hook(lambda *args: None)
        y = m(T.ones(2, 3, dtype=T.float64))
        if hook_first:
            y.register_hook(lambda g: g)
        inner[0].mul_(2.0)
        out.append(catch(lambda: y.register_hook(lambda g: g) and None))
        out.append(catch(lambda: y.register_hook(lambda g: g) and None))
    return out


@differential
def test_copyslices_is_released_like_torchs(T):
    """After a backward that did not retain the graph, CopySlices (an in-place op on a view) has let
    go of its op's node: a second backward raises the freed-buffers error there, before any hook or
    version check further up."""
    log = []
    w = T.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=T.float64, requires_grad=True)
    y = (w * 2).relu()
    y.register_hook(lambda g: log.append("y hook"))
    y.view(-1).add_(1.0)
    first = catch(lambda: y.sum().backward())
    second = catch(lambda: y.sum().backward())
    z = w * 3
    z.view(-1).mul_(2.0)
    z.sum().backward()
    third = catch(lambda: z.sum().backward())
    return first, second, third, log, w.grad


@differential
def test_outputs_of_multi_view_functions_refuse_inplace_history_rewrites(T):
    """split/unbind outputs: an in-place change through their base, or of a view of them, raises
    torch's multiple-views error (named after the forward function) when their history is needed."""
    out = []
    for case in range(4):
        w = T.ones(2, 3, requires_grad=True)
        base = w * 1
        pieces = base.split(1) if case % 2 == 0 else base.unbind(0)
        if case < 2:
            base.mul_(2)
            out.append(catch(lambda: pieces[1].grad_fn))
            out.append(catch(lambda: T.autograd.grad(pieces, [w], [T.ones_like(p) for p in pieces])))
        else:
            out.append(catch(lambda: pieces[1].view(-1).mul_(2)))
    return out


@differential
def test_relu_double_backward_reaches_relus_output(T):
    """Under create_graph, ReLU's backward is one ThresholdBackwardBackward0 node over the incoming
    gradient and ReLU's result: the second backward reaches the result (its hooks see zeros)."""
    log = []
    x = T.tensor([[1.0, -2.0, 0.5], [-0.5, 3.0, -1.0]], dtype=T.float64, requires_grad=True)
    w = T.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [-2.0, 1.0, 0.75]], dtype=T.float64, requires_grad=True)
    r = (x @ w).relu()
    r.register_hook(lambda g: log.append(("r", g)))
    y = (r @ w).sum()
    gx, = T.autograd.grad(y, [x], create_graph=True)
    names = [gx.grad_fn.name()]
    (gx * gx).sum().backward()
    return log, names, x.grad, w.grad


@differential
def test_relu_double_backward_saves_its_result_so_a_freed_graph_raises_there(T):
    # fuzz seed 63839: a second pass through the freed double-backward graph raised before ReLU's
    # hooks in torch, after them in hookgrad (whose node kept its mask outside the saved tensors)
    lin = T.nn.Linear(3, 3).double()
    with T.no_grad():
        lin.weight.copy_(T.tensor([[0.8, -0.9, 0.1], [-0.7, -0.3, 0.5], [0.2, 0.4, -0.6]], dtype=T.float64))
        lin.bias.copy_(T.tensor([0.3, 0.1, -0.2], dtype=T.float64))
    x = T.tensor([[0.5, 1.0, -1.0], [2.0, -0.5, 0.25]], dtype=T.float64, requires_grad=True)
    a0 = lin(x)
    a1 = T.relu(a0)
    log = []
    T.autograd.graph.register_multi_grad_hook([a1], lambda grads: log.append(("multi", grads[0])))
    roots = a1.split(1)
    (g,) = T.autograd.grad(roots, [a0], [T.ones(1, 3, dtype=T.float64), 2 * T.ones(1, 3, dtype=T.float64)],
                           create_graph=True)
    for _ in range(2):
        log.append(catch((g * g).sum().backward))
    node = g.grad_fn
    return log, node.name(), node._saved_threshold


@differential
def test_in_place_on_a_view_whose_base_is_a_leaf_without_grad_raises(T):
    """A leaf made from a view (``t.reshape(...).requires_grad_()``) and views of it count as views
    of a leaf: in-place ops on them raise (hookgrad used to rewrite their history silently)."""
    made = T.tensor([1., 2., 3., 4.]).reshape(2, 2).requires_grad_()
    chained = made.reshape(-1).view(2, 2).t()
    leaf = T.ones(2, requires_grad=True)
    results = [catch(lambda: made.mul_(1.5)), catch(lambda: chained.add_(1)), catch(lambda: leaf.mul_(2)),
               catch(lambda: leaf[0].mul_(2))]
    with T.no_grad():
        made.mul_(2)
    return results + [made, made.is_leaf, made.grad_fn is None]


@differential
def test_layer_norm_double_backward_reaches_bias_with_no_gradient(T):
    """torch's layer-norm double-backward node has an edge to the bias; weight and bias gradients
    that nothing reached stay None (not zeros)."""
    results = []
    for module in (T.nn.LayerNorm(3), T.nn.BatchNorm1d(3), T.nn.GroupNorm(1, 3)):
        module = module.double()
        x = T.tensor([[0.1, -0.5, 0.3], [0.7, 0.2, -0.4]], dtype=T.float64)
        out = module(x) * T.tensor([1., 2., 3.], dtype=T.float64)
        for p in (module.bias, module.weight):
            (g,) = T.autograd.grad(out.sum(), [p], create_graph=True, retain_graph=True)
            module.weight.grad = module.bias.grad = None
            if g.requires_grad:
                (g * g).sum().backward(retain_graph=True)
            results.append((g.requires_grad, module.weight.grad, module.bias.grad))
    return results


@differential
def test_create_graph_through_an_in_place_relu_on_a_view(T):
    """The gradient that flows through an in-place op on a view (CopySlices) stays differentiable
    when only the op's own gradient needs a graph (ReLU's depends on its saved result)."""
    lin = T.nn.Linear(3, 3).double()
    with T.no_grad():
        lin.weight.copy_(T.tensor([[0.5, -0.3, 0.2], [0.1, 0.4, -0.6], [-0.2, 0.3, 0.7]], dtype=T.float64))
        lin.bias.copy_(T.tensor([0.1, -0.2, 0.3], dtype=T.float64))
    x = T.tensor([[0.5, -0.2, 0.3], [-0.6, 0.9, 0.1]], dtype=T.float64, requires_grad=True)
    h = lin(x)
    out = T.relu_(h.reshape(-1).view(h.shape).t().t())
    gb, gw = T.autograd.grad((out * out).sum(), [lin.bias, lin.weight], create_graph=True)
    ((gb * gb).sum() + (gw * gw).sum()).backward()
    return gb.requires_grad, gb, gw, x.grad, lin.weight.grad, lin.bias.grad


@pytest.mark.parametrize("pack", ["identity", "clone"])
@differential
def test_create_graph_through_an_in_place_relu_on_a_view_under_pack_hooks(T, pack):
    """The same under saved-tensor hooks: the unpacked ReLU result stands for the view with its new
    history (through CopySlices), so the second pass runs ReLU's node once, as without hooks."""
    x = T.tensor([[0.1, -0.5, 0.3], [0.7, 0.2, -0.4]], dtype=T.float64, requires_grad=True)
    unpacked = []

    def unpack(t):
        unpacked.append(tuple(t.shape))
        return t
    with T.autograd.graph.saved_tensors_hooks(lambda t: t.clone() if pack == "clone" else t, unpack):
        h = T.relu_((x * 2).unsqueeze(1).squeeze(1))
        out = (h * h).tanh()
    g, = T.autograd.grad(out.sum(), [x], create_graph=True)
    second = catch(lambda: (g * g).sum().backward())
    return g, second, x.grad, unpacked


@pytest.mark.parametrize("changed", ["weight", "bias"])
@differential
def test_layer_norm_checks_saved_versions_in_torchs_order(T, changed):
    """torch's layer norm packs weight, input, bias but checks (unpacks) bias, input, weight: the
    error names the first changed one in that order."""
    ln = T.nn.LayerNorm(3)
    x = T.ones(2, 3, requires_grad=True)
    a = x * 2
    out = ln(a)
    a.add_(1.0)
    with T.no_grad():
        getattr(ln, changed).mul_(2)
    try:
        out.sum().backward()
    except RuntimeError as exc:
        return str(exc).split(" is at version")[0]
    return None


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((2, 3), 1), ((4,), 0), ((2, 3, 2), 0)])
@differential
def test_softmax_double_and_triple_backward_are_torchs_nodes(T, name, shape, dim):
    """A create_graph pass through softmax records torch's one *BackwardDataBackward0 node over
    (grad_output, output); its own backward gives the third derivatives, and pack hooks see torch's."""
    fn = getattr(T, name)
    n = int(np.prod(shape))
    y = T.tensor(np.linspace(-1.5, 2.0, n).reshape(shape), dtype=T.float64, requires_grad=True)
    upstream = T.tensor(np.cos(np.arange(n)).reshape(shape), dtype=T.float64, requires_grad=True)
    packed = []
    with T.autograd.graph.saved_tensors_hooks(lambda t: packed.append(tuple(t.shape)) or t, lambda t: t):
        (g,) = T.autograd.grad(fn(y, dim), y, upstream, create_graph=True)
    node = g.grad_fn
    graph = (node.name(), node._saved_dim, [type(f).__name__ for f, _ in node.next_functions])
    second = T.autograd.grad((g * g).sum(), [y, upstream], create_graph=True)
    third = T.autograd.grad(second[0].sum() + second[1].pow(2).sum(), [y, upstream])
    (plain,) = T.autograd.grad(fn(y, dim).sum(), y, create_graph=True)
    return graph, packed, g, [t.grad_fn.name() for t in second], second, third, \
        [f if f is None else type(f).__name__ for f, _ in plain.grad_fn.next_functions]


MIXED_DTYPE_OPS = {
    "mse_loss": lambda T, a, b: T.nn.functional.mse_loss(a, b),
    "smooth_l1_loss": lambda T, a, b: T.nn.functional.smooth_l1_loss(a, b),
    "l1_loss": lambda T, a, b: T.nn.functional.l1_loss(a, b),
    "where": lambda T, a, b: T.where(b > 0, a, b).sum(),
    "cat": lambda T, a, b: T.cat([a, b]).sum(),
    "stack": lambda T, a, b: (T.stack([a, b]) * 2).sum(),
    "atan2": lambda T, a, b: T.atan2(a, b).sum(),
    "maximum": lambda T, a, b: T.maximum(a, b).sum(),
    "minimum": lambda T, a, b: T.minimum(a, b).sum(),
    "fmax": lambda T, a, b: T.fmax(a, b).sum(),
    "hypot": lambda T, a, b: T.hypot(a, b).sum(),
    "copysign": lambda T, a, b: T.copysign(a, b).sum(),
    "clamp_tensor": lambda T, a, b: T.clamp(a, min=b).sum(),
    "logaddexp": lambda T, a, b: T.logaddexp(a, b).sum(),
    "mul": lambda T, a, b: (a * b).sum(),
    "sub": lambda T, a, b: (b - a).sum(),
}


@pytest.mark.parametrize("name", sorted(MIXED_DTYPE_OPS))
@differential
def test_gradients_take_their_inputs_dtype(T, name):
    """A float32 tensor meeting a float64 one: the gradient each input receives is cast to its own
    dtype (torch's engine does it for every node), for leaves and for hooked intermediates."""
    lin = T.nn.Linear(3, 3)
    with T.no_grad():
        lin.weight.copy_(T.tensor(np.linspace(-1, 1, 9).reshape(3, 3), dtype=T.float32))
        lin.bias.fill_(0.1)
    a = lin(T.tensor([[0.5, -1.0, 2.0]], dtype=T.float32)).reshape(3)
    b = T.tensor([0.25, -0.5, 1.5], dtype=T.float64, requires_grad=True)
    seen = []
    a.register_hook(lambda g: seen.append((g.dtype, g.clone())))
    MIXED_DTYPE_OPS[name](T, a, b).backward()
    return seen, lin.weight.grad, lin.bias.grad, b.grad


# ---- a custom Function that marks a view dirty ----------------------------------------------
def _dirty_add(T, scale=2):
    class DirtyAdd(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.mark_dirty(x)
            x.add_(y)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad, grad * scale
    return DirtyAdd


@differential
def test_custom_function_dirtying_a_view_of_a_view_rebases_the_base(T):
    # was silently wrong: the base kept its old history, so y's gradient was lost
    add = _dirty_add(T)
    a = _ndarray(T, 4, 4).double().detach().requires_grad_()
    y = _ndarray(T, 2, 2, start=0.5, stop=2.0).double().detach().requires_grad_()
    x = a.clone()
    returned = add.apply(x.narrow(1, 2, 2).narrow(0, 1, 2), y)
    add.apply(x.narrow(1, 0, 2)[1:3], y)
    names = [type(x.grad_fn).__name__, type(returned.grad_fn).__name__,
             [type(f).__name__ for f, _ in x.grad_fn.next_functions]]
    (x * T.arange(16.0, dtype=T.float64).reshape(4, 4)).sum().backward()
    return names, a.grad, y.grad, x._version


@differential
def test_custom_function_dirtying_a_view_gradcheck(T):
    PyAdd = _dirty_add(T, scale=1)

    def func(root, b):
        x = root.clone()
        PyAdd.apply(x.narrow(1, 2, 2).narrow(0, 1, 2), b)
        PyAdd.apply(x.narrow(1, 0, 2).narrow(0, 1, 2), b)
        return x

    a = _ndarray(T, 4, 4).double().detach().requires_grad_()
    b = _ndarray(T, 2, 2).double().detach().requires_grad_()
    go = _ndarray(T, 4, 4, start=0.1, stop=0.9).double().detach().requires_grad_()
    return (T.autograd.gradcheck(func, (a, b), raise_exception=False),
            T.autograd.gradgradcheck(func, (a, b), (go,), raise_exception=False))


# ---- out= and autograd: torch refuses differentiable ops only -----------------------------------
_OUT_CALLS = {
    "add": lambda T, a, b, o: T.add(a, b, out=o), "mul": lambda T, a, b, o: T.mul(a, b, out=o),
    "div": lambda T, a, b, o: T.div(a, b, out=o), "exp": lambda T, a, b, o: T.exp(a, out=o),
    "pow": lambda T, a, b, o: T.pow(a, 2, out=o), "mm": lambda T, a, b, o: T.mm(a, b, out=o),
    "sum": lambda T, a, b, o: T.sum(a, 0, out=o[0]), "cat": lambda T, a, b, o: T.cat([a, b], out=T.empty(4, 2)),
    "clamp": lambda T, a, b, o: T.clamp(a, 0, 1, out=o), "where": lambda T, a, b, o: T.where(a > 0, a, b, out=o),
    "max_dim": lambda T, a, b, o: T.max(a, 0, out=(o[0], T.empty(2, dtype=T.int64))),
    "fmod": lambda T, a, b, o: T.fmod(a, b, out=o), "atan2": lambda T, a, b, o: T.atan2(a, b, out=o),
    # no derivative: no refusal
    "eq": lambda T, a, b, o: T.eq(a, b, out=T.empty(2, 2, dtype=T.bool)),
    "logical_not": lambda T, a, b, o: T.logical_not(a, out=T.empty(2, 2, dtype=T.bool)),
    "lt": lambda T, a, b, o: T.lt(a, b, out=T.empty(2, 2, dtype=T.bool)),
}


@pytest.mark.parametrize("call", sorted(_OUT_CALLS))
@differential
def test_out_argument_with_an_input_requiring_grad(T, call):
    a = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = T.tensor([[0.5, -1.0], [2.0, 1.0]])
    out = T.empty(2, 2)
    result = catch(_OUT_CALLS[call], T, a, b, out)
    with T.no_grad():  # the same call without grad mode writes out
        written = _OUT_CALLS[call](T, a, b, T.empty(2, 2))
    return result, written, _raised(lambda: _OUT_CALLS[call](T, a, b, out))


@differential
def test_out_argument_requiring_grad_is_refused(T):
    a = T.tensor([1.0, 2.0])
    leaf = T.zeros(2, requires_grad=True)
    return (_raised(lambda: T.add(a, a, out=leaf)), _raised(lambda: T.exp(a, out=leaf)),
            _raised(lambda: T.mul(a, 2, out=leaf)), leaf, leaf.grad_fn)


# ---- fmod and remainder by a tensor: the divisor's gradient, torch's nodes and saved tensors -----
@pytest.mark.parametrize("op", ["fmod", "remainder"])
@differential
def test_modulo_by_a_tensor_differentiates_the_divisor(T, op):
    a = T.tensor([[5.0, -5.0, 3.5]], requires_grad=True)
    b = T.tensor([[2.0], [-3.0]], requires_grad=True)
    out = getattr(T, op)(a, b)
    node = out.grad_fn
    saved = (node._saved_other, node._saved_self)
    out.backward(T.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]]))
    fixed_divisor = getattr(T, op)(a, b.detach())
    by_number = getattr(a, op)(2.0)
    return (type(node).__name__, saved, a.grad, b.grad, type(fixed_divisor.grad_fn).__name__,
            fixed_divisor.grad_fn._saved_other, type(by_number.grad_fn).__name__)


# ---- gradients where torch's kernels mask an edge value ----------------------------------------
@differential
def test_pow_and_atan2_gradients_at_zero(T):
    x = T.tensor([0.0, -0.0, 0.0, 0.0, 2.0], requires_grad=True)
    y = T.tensor([0.0, 0.0, 0.5, -1.0, 0.0], requires_grad=True)
    grads = T.autograd.grad((x ** y).sum() + T.atan2(x, y).sum() + (x ** 0.5).sum() + (0 ** y).sum(), (x, y))
    return grads


# ---- group norm's statistics: outputs 1 and 2 of its node, saved as outputs ---------------------
@differential
def test_group_norm_saved_statistics_are_outputs_of_its_node(T):
    x = T.tensor(np.linspace(-1, 1, 24).reshape(2, 4, 3), requires_grad=True)
    w = T.tensor([1.0, 2.0, 0.5, -1.0], dtype=T.float64, requires_grad=True)
    packed = []
    with T.autograd.graph.saved_tensors_hooks(lambda t: packed.append(tuple(t.shape)) or t, lambda t: t):
        y = T.nn.functional.group_norm(x, 2, w)
    node = y.grad_fn
    stats = [node._saved_result1, node._saved_result2]
    facts = [(s.requires_grad, s.grad_fn is node, s.output_nr, s) for s in stats]
    unused_statistics = T.autograd.grad(node._saved_result1.sum(), x, retain_graph=True, allow_unused=True)
    y.backward(T.ones_like(y))
    return packed, facts, unused_statistics, x.grad, w.grad


# ---- dispatch modes see torch's ATen operators for the fused nodes -------------------------------
_RNG = np.random.default_rng(0)
_FUSED_NODE_CASES = {
    "glu": (lambda T, x: T.nn.functional.glu(x, 0), [_RNG.standard_normal((4, 3))]),
    "hardshrink": (lambda T, x: T.nn.functional.hardshrink(x, 0.3), [_RNG.standard_normal((2, 3))]),
    "softshrink": (lambda T, x: T.nn.functional.softshrink(x, 0.3), [_RNG.standard_normal((2, 3))]),
    "clamp_min_number": (lambda T, x: T.clamp_min(x, 0.1), [_RNG.standard_normal(3)]),
    "clamp_max_number": (lambda T, x: x.clamp_max(0.1), [_RNG.standard_normal(3)]),
    "clamp_numbers": (lambda T, x: x.clamp(-0.2, 0.1), [_RNG.standard_normal(3)]),
    "unfold_im2col": (lambda T, x: T.nn.functional.unfold(x, 2, padding=1), [_RNG.standard_normal((1, 2, 3, 3))]),
    "fold_col2im": (lambda T, x: T.nn.functional.fold(x, (3, 3), 2), [_RNG.standard_normal((1, 8, 4))]),
    "multi_margin_loss": (lambda T, x: T.nn.functional.multi_margin_loss(x, T.tensor([0, 2])),
                          [_RNG.standard_normal((2, 3))]),
    "soft_margin_loss": (lambda T, x: T.nn.functional.soft_margin_loss(x, T.tensor([1.0, -1.0, 1.0], dtype=T.float64)),
                         [_RNG.standard_normal(3)]),
    "bilinear_trilinear": (lambda T, a, b, w: T.nn.functional.bilinear(a, b, w),
                           [_RNG.standard_normal((4, 2)), _RNG.standard_normal((4, 3)), _RNG.standard_normal((5, 2, 3))]),
    "upsample_bilinear": (lambda T, x: T.nn.functional.interpolate(x, scale_factor=1.5, mode="bilinear"),
                          [_RNG.standard_normal((1, 2, 3, 4))]),
    "upsample_nearest_size": (lambda T, x: T.nn.functional.interpolate(x, size=(5,)), [_RNG.standard_normal((1, 2, 3))]),
    "group_norm": (lambda T, x: T.nn.functional.group_norm(x, 2), [_RNG.standard_normal((2, 4, 3))]),
    "prelu_channels": (lambda T, x, w: T.nn.functional.prelu(x, w), [_RNG.standard_normal((2, 3, 4)), _RNG.standard_normal(3)]),
    "prelu_shared": (lambda T, x, w: T.nn.functional.prelu(x, w), [_RNG.standard_normal((2, 3)), _RNG.standard_normal(1)]),
    "prelu_vector": (lambda T, x, w: T.nn.functional.prelu(x, w), [_RNG.standard_normal(3), _RNG.standard_normal(1)]),
    "rrelu_eval": (lambda T, x: T.nn.functional.rrelu(x, 0.1, 0.3), [_RNG.standard_normal((2, 3))]),
    "rrelu_defaults": (lambda T, x: T.nn.functional.rrelu(x), [_RNG.standard_normal((2, 3))]),
    "rrelu_lower_only": (lambda T, x: T.nn.functional.rrelu(x, 0.2), [_RNG.standard_normal((2, 3))]),
    "rrelu_training": (lambda T, x: (T.manual_seed(0), T.nn.functional.rrelu(x, 0.1, 0.3, training=True))[1],
                       [_RNG.standard_normal((2, 3))]),
}


def test_fused_nodes_gradients_unchanged_under_a_pass_through_mode():
    """The operators a mode sees for these nodes carry the gradients the nodes compute."""
    import hookgrad
    from hookgrad.utils._python_dispatch import TorchDispatchMode

    class PassThrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    def gradients(fn, arrays, mode):
        xs = [hookgrad.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
        diff = [x for x in xs if x.requires_grad]
        if mode:
            with PassThrough():
                out = fn(hookgrad, *xs)
                return hookgrad.autograd.grad((out * out).sum(), diff)
        out = fn(hookgrad, *xs)
        return hookgrad.autograd.grad((out * out).sum(), diff)

    for name, (fn, arrays) in _FUSED_NODE_CASES.items():
        for plain, seen in zip(gradients(fn, arrays, False), gradients(fn, arrays, True)):
            np.testing.assert_allclose(seen.detach().numpy(), plain.detach().numpy(), err_msg=name)


@pytest.mark.parametrize("name", sorted(_FUSED_NODE_CASES))
def test_dispatch_mode_sees_torchs_operators_for_fused_nodes(name):
    import aten_trace
    forward_same, backward_same, difference = aten_trace.compare(*_FUSED_NODE_CASES[name])
    assert forward_same and backward_same, difference
