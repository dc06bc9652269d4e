"""Autograd-level hooks, differentially against torch: what fires, in which order, with which
arguments, what a return value replaces, and which errors bad hooks raise."""
import numpy as np
import pytest

from difftest import catch, differential, warns


def _name(node):
    if node is None:
        return None
    n = node.name()
    return "AccumulateGrad" if n.endswith("AccumulateGrad") else n


@differential
def test_every_hook_kind_fires_in_torch_order(T):
    log = []
    a = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 2
    b.register_hook(lambda g: log.append(("tensor_b1", g)))
    b.register_hook(lambda g: log.append(("tensor_b2", g)))
    b.retain_grad()
    b.grad_fn.register_prehook(lambda go: log.append(("pre_b", go)))
    b.grad_fn.register_hook(lambda gi, go: log.append(("post_b", gi, go)))
    acc = b.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda go: log.append(("acc_pre", go)))
    acc.register_hook(lambda gi, go: log.append(("acc_post", gi, go)))
    a.register_hook(lambda g: log.append(("tensor_a", g)))
    a.register_post_accumulate_grad_hook(lambda t: log.append(("post_acc", t.grad)))
    b.sum().backward()
    return log, a.grad, b.grad


@differential
def test_retain_grad_sees_grad_after_all_tensor_hooks(T):
    a = T.tensor([1.0, -2.0], requires_grad=True)
    b = a * 3
    b.retain_grad()
    b.register_hook(lambda g: g * 10)
    seen = []
    b.register_hook(lambda g: seen.append(g))
    (b * b).sum().backward()
    return b.grad, a.grad, seen


@differential
def test_tensor_used_twice_fires_once_on_summed_grad(T):
    log = []
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a.exp()
    b.register_hook(lambda g: log.append(g))
    (b * 2 + b * b).sum().backward()
    return log, a.grad


@differential
def test_hook_return_replaces_gradient_leaf_and_nonleaf(T):
    a = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a.register_hook(lambda g: g * 0 + 7)
    b = a * a
    b.register_hook(lambda g: g.clamp(max=0.5))
    b.sum().backward()
    return a.grad


@differential
def test_hooks_run_in_registration_order_and_chain(T):
    log = []
    a = T.tensor([1.0], requires_grad=True)
    b = a * 1
    b.register_hook(lambda g: (log.append(("h1", g)), g + 1)[1])
    b.register_hook(lambda g: (log.append(("h2", g)), g * 3)[1])
    b.register_hook(lambda g: log.append(("h3", g)))
    b.backward()
    return log, a.grad


@differential
def test_node_prehook_and_posthook_replace(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = T.tensor([3.0, 4.0], requires_grad=True)
    z = x * y
    z.grad_fn.register_prehook(lambda go: (go[0] * 2,))
    z.grad_fn.register_hook(lambda gi, go: (log.append((gi, go)), (gi[0], gi[1] * 0))[1])
    z.sum().backward()
    return log, x.grad, y.grad


@differential
def test_node_hook_arguments_with_unused_split_outputs(T):
    log = []
    a = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    x, y = (a * 1).split(2)
    y.register_hook(lambda g: log.append(("y", g)))
    x.grad_fn.register_prehook(lambda go: log.append(("pre", go)))
    x.grad_fn.register_hook(lambda gi, go: log.append(("post", gi, go)))
    (x * 5).sum().backward()
    return log, a.grad


@differential
def test_accumulate_grad_hook_arguments(T):
    log = []
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    acc = b.grad_fn.next_functions[0][0]
    acc.register_hook(lambda gi, go: log.append(("acc_post", gi, go)))
    acc.register_prehook(lambda go: log.append(("acc_pre", go)))
    b.sum().backward()
    return log, _name(acc)


@differential
def test_execution_order_across_branches(T):
    log = []
    x = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
    w = T.tensor([1.5, 0.5, -0.5], requires_grad=True)
    a = x * w
    b = a.exp()
    c = a.sin()
    d = (b + c) * x
    e = d.sum() + a.sum() * 2 + (w * w).mean()
    seen = set()
    stack = [e.grad_fn]
    nodes = []
    while stack:
        n = stack.pop()
        if n is None or n in seen:
            continue
        seen.add(n)
        nodes.append(n)
        stack.extend(f for f, _ in n.next_functions)
    for n in nodes:
        n.register_prehook(lambda go, n=n: log.append(_name(n)))
    x.register_hook(lambda g: log.append("x"))
    w.register_hook(lambda g: log.append("w"))
    e.backward()
    return log, x.grad, w.grad


@differential
def test_hooks_may_remove_hooks_during_backward(T):
    log = []
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    handles = {}

    def remove_self(g):
        log.append("self")
        handles["self"].remove()

    def remove_victim(g):
        log.append("killer")
        handles["victim"].remove()

    handles["self"] = b.register_hook(remove_self)
    handles["killer"] = b.register_hook(remove_victim)
    handles["victim"] = b.register_hook(lambda g: log.append("victim"))
    b.sum().backward(retain_graph=True)
    b.sum().backward()
    return log


@differential
def test_removed_handle_and_context_manager(T):
    log = []
    a = T.tensor([1.0], requires_grad=True)
    h = a.register_hook(lambda g: log.append("removed"))
    h.remove()
    h.remove()
    with a.register_hook(lambda g: log.append("ctx")):
        (a * 2).backward()
    (a * 2).backward()
    return log, a.grad


@differential
def test_hooks_before_and_after_inplace(T):
    log = []
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    b.register_hook(lambda g: log.append(("before", g)))
    b.mul_(3)
    b.register_hook(lambda g: log.append(("after", g)))
    (b * b).sum().backward()
    return log, a.grad, _name(b.grad_fn)


@differential
def test_retain_grad_survives_inplace(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    b.retain_grad()
    b.add_(1)
    (b * b).sum().backward()
    return b.grad, a.grad


@differential
def test_post_accumulate_grad_hook_sees_accumulated_grad(T):
    log = []
    a = T.tensor([1.0, 2.0], requires_grad=True)
    a.register_post_accumulate_grad_hook(lambda t: log.append(t.grad.clone()))
    (a * 2).sum().backward()
    (a * 3).sum().backward()
    return log, a.grad


@differential
def test_hook_errors(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    out = {}
    out["no_grad"] = catch(lambda: T.ones(2).register_hook(lambda g: g))
    out["post_acc_nonleaf"] = catch(lambda: (a * 2).register_post_accumulate_grad_hook(lambda t: None))
    b = a * 2
    b.register_hook(lambda g: g[:1])
    out["shape"] = catch(lambda: b.sum().backward())
    c = a * 2
    c.register_hook(lambda g: g.double())
    out["dtype"] = catch(lambda: c.sum().backward())
    d = a * 2
    d.register_hook(lambda g: 3)
    out["type"] = catch(lambda: d.sum().backward())
    e = a * 2
    e.grad_fn.register_hook(lambda gi, go: (gi[0],))
    out["count"] = catch(lambda: e.sum().backward())
    f = a * 2
    f.grad_fn.register_prehook(lambda go: (go[0], go[0]))
    out["pre_count"] = catch(lambda: f.sum().backward())
    # the registries stay usable: a clean backward afterwards works
    a.grad = None
    (a * 5).sum().backward()
    out["after"] = a.grad
    return out


@differential
def test_hook_error_messages_name_the_hook(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2

    def shrink(g):
        return g[:1]

    b.register_hook(shrink)
    r = catch(lambda: b.sum().backward())
    return r.cls, "shrink" in r.message


@differential
def test_backward_errors(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    out = {}
    out["nonscalar"] = catch(lambda: (a * 2).backward())
    out["no_grad"] = catch(lambda: T.ones(2).sum().backward())
    b = a.exp().sum()
    b.backward()
    out["freed"] = catch(lambda: b.backward())
    c = (a * 2).sum()
    c.backward()
    out["no_saved_ok"] = catch(lambda: c.backward())
    out["shape"] = catch(lambda: (a * 2).backward(T.ones(3)))
    out["grad_unused"] = catch(lambda: T.autograd.grad((a * 2).sum(), [a, T.ones(1, requires_grad=True)]))
    out["grad_no_req"] = catch(lambda: T.autograd.grad((a * 2).sum(), [T.ones(1)]))
    return out


@differential
def test_retain_graph_allows_second_backward(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a.exp().sum()
    b.backward(retain_graph=True)
    b.backward()
    return a.grad


@differential
def test_grad_accumulates_in_place_keeping_identity(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    (a * 2).sum().backward()
    first = a.grad
    (a * 3).sum().backward()
    return a.grad is first, a.grad, first


@differential
def test_autograd_grad_with_hooks_and_captures(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.register_hook(lambda g: (log.append(("y", g)), g * 2)[1])
    x.register_hook(lambda g: log.append(("x", g)))
    z = (y * 3).sum()
    gx, gy = T.autograd.grad(z, [x, y])
    return log, gx, gy, x.grad


@differential
def test_autograd_grad_allow_unused_and_materialize(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    u = T.tensor([5.0], requires_grad=True)
    z = (x * 2).sum()
    g1 = T.autograd.grad(z, [x, u], allow_unused=True, retain_graph=True)
    g2 = T.autograd.grad(z, [x, u], materialize_grads=True)
    return g1, g2


@differential
def test_backward_inputs_only_accumulates_there(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    w = T.tensor([3.0, 4.0], requires_grad=True)
    h = x * w
    h.register_hook(lambda g: log.append(("h", g)))
    out = (h * h).sum()
    out.backward(inputs=[w])
    return log, x.grad, w.grad


@differential
def test_backward_inputs_nonleaf_retains(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    out = (h * h).sum()
    out.backward(inputs=[h])
    return h.grad, x.grad


@differential
def test_multi_grad_hook_all_and_any(T):
    log = []
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = T.tensor([3.0], requires_grad=True)
    c = T.tensor([4.0], requires_grad=True)
    h = T.autograd.graph.register_multi_grad_hook((a, b, c), lambda grads: log.append(("all", grads)))
    (a.sum() * b).sum().backward()
    (a * 2).sum().backward()
    h.remove()
    (a * 2).sum().backward()
    T.autograd.graph.register_multi_grad_hook((a, b), lambda g: log.append(("any", g)), mode="any")
    (a.sum() + b * 5).sum().backward()
    return log


@differential
def test_saved_tensors_hooks_pack_unpack(T):
    log = []

    def pack(t):
        log.append(("pack", tuple(t.shape)))
        return t * 1

    def unpack(t):
        log.append(("unpack", tuple(t.shape)))
        return t

    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x * x
        z = y.exp().sum()
    z.backward()
    return log, x.grad


@differential
def test_saved_tensors_hooks_unpack_can_substitute(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t * 0 + 10):
        y = (x * x).sum()
    y.backward()
    return x.grad


@differential
def test_disable_saved_tensors_hooks(T):
    with T.autograd.graph.disable_saved_tensors_hooks("not here"):
        r = catch(lambda: T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__())
    return r


@differential
def test_save_on_cpu_gives_same_grads(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.save_on_cpu():
        y = (x.sin() * x).sum()
    y.backward()
    return x.grad


@differential
def test_inplace_modification_of_saved_tensor_raises(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y.exp()
    y.mul_(2)
    r = catch(lambda: (z * y).sum().backward())
    w = x.exp()
    w.add_(1)
    r2 = catch(lambda: w.sum().backward())
    return r, r2, y._version


@differential
def test_inplace_leaf_errors(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    r1 = catch(lambda: a.add_(1))
    r2 = catch(lambda: a[0].mul_(2))
    with T.no_grad():
        a.add_(1)
    return r1, r2, a


@differential
def test_inplace_on_view_of_nonleaf(T):
    a = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    b = a.clone()
    v = b[0]
    v.mul_(3)
    names = (_name(b.grad_fn), _name(v.grad_fn), [_name(n) for n, _ in b.grad_fn.next_functions])
    (b * b).sum().backward()
    return names, a.grad, b


@differential
def test_index_assignment_gradients(T):
    a = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = T.tensor([10.0, 20.0], requires_grad=True)
    b = a * 1
    b[0] = c[1]
    b[b > 2.5] = 0.0
    names = _name(b.grad_fn)
    (b * T.tensor([1.0, 2.0, 3.0])).sum().backward()
    return names, a.grad, c.grad, b


@differential
def test_view_after_base_inplace_regenerates(T):
    a = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    b = a * 1
    v = b[1:3]
    b.mul_(2)
    name = _name(v.grad_fn)
    (v * v).sum().backward()
    return name, a.grad


@differential
def test_version_counter_shared_by_views(T):
    a = T.zeros(4)
    v = a[1:]
    v.add_(1)
    a.mul_(2)
    return a._version, v._version, a


@differential
def test_inplace_ops_gradients(T):
    x = T.tensor([0.5, -1.5, 2.0], requires_grad=True)
    y = T.tensor([1.5, 2.5, -0.5], requires_grad=True)
    b = x * 1
    b.mul_(y)
    b.add_(y, alpha=2)
    b.sub_(1)
    b.div_(y)
    b.pow_(2)
    b.clamp_(-3, 30)
    b.masked_fill_(b > 2.5, 1.0)
    b.sigmoid_()
    b.sum().backward()
    c = x * 1
    c.sigmoid_()
    c.exp_()
    # sigmoid_ saved its result, which exp_ then changed in place
    return b, x.grad, y.grad, _name(b.grad_fn), catch(lambda: c.sum().backward())


@differential
def test_zero_fill_copy_inplace(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    s = T.tensor([4.0, 5.0, 6.0], requires_grad=True)
    names = []
    b = x * 1
    b.zero_()
    names.append(_name(b.grad_fn))
    c = x * 1
    c.fill_(2.0)
    names.append(_name(c.grad_fn))
    d = x * 1
    d.copy_(s)
    names.append(_name(d.grad_fn))
    (b + c + d * d).sum().backward()
    return names, x.grad, s.grad


@differential
def test_grad_fn_structure(T):
    a = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    c = T.tensor([1.0, 2.0], requires_grad=True)
    exprs = {
        "add_scalar": a + 2, "rsub": 2 - a, "rdiv": 2 / a, "rpow": 2 ** a, "mv": a @ c, "mm": a @ a.t(),
        "index2": a[0, 1], "outer": T.outer(c, c), "detach_add": a.detach() + c, "clamp_t": a.clamp(min=c),
        "max_dim": a.max(0)[0], "T": a.T, "double": a.double(),
    }
    out = {}
    for k, t in exprs.items():
        out[k] = (_name(t.grad_fn), [(_name(n), i) for n, i in t.grad_fn.next_functions])
    out["float_is_self"] = a.float() is a
    return out


@differential
def test_leaf_and_requires_grad_rules(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    out = {
        "leaf_a": a.is_leaf, "leaf_b": b.is_leaf, "req_b": b.requires_grad,
        "set_nonleaf": catch(lambda: setattr(b, "requires_grad", False)),
        "int_req": catch(lambda: T.tensor([1, 2]).requires_grad_()),
        "detach_leaf": b.detach().is_leaf, "detach_req": b.detach().requires_grad,
        "numpy_req": catch(lambda: a.numpy()),
        "grad_none": a.grad,
    }
    c = T.ones(2)
    c.requires_grad = True
    out["set_leaf"] = c.requires_grad
    with T.no_grad():
        d = a * 2
    out["no_grad"] = (d.requires_grad, d.grad_fn is None)
    return out


@differential
def test_grad_mode_switches(T):
    a = T.tensor([1.0], requires_grad=True)
    out = []
    with T.no_grad():
        out.append((a * 2).requires_grad)
        with T.enable_grad():
            out.append((a * 2).requires_grad)
        out.append(T.is_grad_enabled())
    with T.set_grad_enabled(False):
        out.append((a * 2).requires_grad)
    T.set_grad_enabled(False)
    out.append(T.is_grad_enabled())
    T.set_grad_enabled(True)
    with T.inference_mode():
        out.append((a * 2).requires_grad)

    @T.no_grad()
    def f(x):
        return x * 2

    @T.enable_grad()
    def g(x):
        return x * 2

    out.append(f(a).requires_grad)
    with T.no_grad():
        out.append(g(a).requires_grad)
    out.append(T.is_grad_enabled())
    return out


@differential
def test_assigning_grad_checks(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    out = [catch(lambda: setattr(a, "grad", T.ones(3))), catch(lambda: setattr(a, "grad", T.ones(2, dtype=T.float64))),
           catch(lambda: setattr(a, "grad", [1.0, 2.0]))]
    a.grad = T.ones(2)
    (a * 2).sum().backward()
    out.append(a.grad)
    return out


@differential
def test_create_graph_grad_has_graph_and_hooks_fire(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = (x ** 3).sum()
    x.register_hook(lambda g: log.append(("x", g.requires_grad)))
    (g,) = T.autograd.grad(y, x, create_graph=True)
    g.sum().backward()
    return log, g, x.grad


# ---- custom Functions -------------------------------------------------------------------------
def _square_fn(T):
    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_backward(x)
            ctx.k = k
            return x * x * k

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x * ctx.k, None

    return Square


@differential
def test_custom_function_forward_backward_and_node(T):
    Square = _square_fn(T)
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = Square.apply(x, 3.0)
    y.grad_fn.register_prehook(lambda go: log.append(("pre", go)))
    y.grad_fn.register_hook(lambda gi, go: log.append(("post", gi, go)))
    y.sum().backward()
    return log, x.grad, y.grad_fn.name(), [_name(n) for n, _ in y.grad_fn.next_functions]


@differential
def test_custom_function_needs_input_grad_and_non_differentiable(T):
    seen = []

    class Split(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            seen.append(ctx.needs_input_grad)
            idx = (x > 1.5)
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            seen.append(g_idx)
            return g * 2, None

    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = T.tensor([1.0, 2.0])
    out, idx = Split.apply(x, y)
    out.sum().backward()
    return seen, x.grad, idx.requires_grad


@differential
def test_custom_function_materialize_grads(T):
    seen = []

    class Two(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append((g1, g2))
            return g1 if g2 is None else g1 + g2, None

    x = T.tensor([1.0, 2.0], requires_grad=True)
    a, b = Two.apply(x, True)
    a.sum().backward()
    a, b = Two.apply(x, False)
    a.sum().backward()
    return seen, x.grad


@differential
def test_custom_function_mark_dirty(T):
    class AddOneInPlace(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    c = AddOneInPlace.apply(b)
    c.sum().backward()
    return c is b, a.grad, b


@differential
def test_custom_function_wrong_number_of_grads(T):
    class Bad(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    x = T.tensor([1.0], requires_grad=True)
    return catch(lambda: Bad.apply(x, x).sum().backward())


@differential
def test_custom_function_setup_context_style(T):
    class Cube(T.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = Cube.apply(x)
    (g,) = T.autograd.grad(y.sum(), x, create_graph=True)
    g.sum().backward()
    return y, g, x.grad


@differential
def test_anomaly_mode_names_nan_node(T):
    x = T.tensor([0.0, 1.0], requires_grad=True)
    with T.autograd.detect_anomaly():
        y = (x.sqrt() * 0).sum()
        r, cats = warns(lambda: (x / x).sum().backward())
    return r, "UserWarning" in cats or "RuntimeWarning" in cats


@differential
def test_anomaly_error_message_names_op(T):
    x = T.tensor([0.0, 1.0], requires_grad=True)
    with warns_silently():
        with T.autograd.detect_anomaly():
            r = catch(lambda: (x / x).sum().backward())
    return r.cls, "DivBackward0" in r.message, "nan" in r.message


class warns_silently:
    def __enter__(self):
        import warnings
        self._c = warnings.catch_warnings()
        self._c.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._c.__exit__(*exc)


@differential
def test_handles_ids_are_shared_counter_and_removable_twice(T):
    a = T.tensor([1.0], requires_grad=True)
    h1 = a.register_hook(lambda g: g)
    h2 = (a * 1).register_hook(lambda g: g)
    return h2.id - h1.id, type(h1).__name__


@differential
def test_grad_of_nonleaf_warns(T):
    a = T.tensor([1.0], requires_grad=True)
    b = a * 2
    b.sum().backward()
    return warns(lambda: b.grad)


@differential
def test_node_hook_none_entry_drops_gradient(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = T.tensor([3.0, 4.0], requires_grad=True)
    z = x * y
    z.grad_fn.register_hook(lambda gi, go: (None, gi[1]))
    z.sum().backward()
    first = (x.grad, y.grad)
    x.grad = y.grad = None
    z = x * y
    z.grad_fn.register_prehook(lambda go: (None,))
    z.sum().backward()
    return first, x.grad, y.grad


@differential
def test_inplace_on_function_output_returned_as_is_raises(T):
    class Identity(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    a = T.tensor([1.0, 2.0], requires_grad=True)
    out = Identity.apply(a * 1)
    return catch(lambda: out.add_(1)), out.grad_fn.name(), out._base is not None


@differential
def test_inplace_on_split_output_raises_only_with_grad(T):
    a = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    x, y = (a * 1).split(2)
    plain = T.zeros(4)
    p, q = plain.split(2)
    q.add_(1)
    return catch(lambda: x.mul_(2)), plain


@differential
def test_function_non_differentiable_input_returned(T):
    class Pass(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.mark_non_differentiable(y)
            return x * 2, y

        @staticmethod
        def backward(ctx, gx, gy):
            return gx * 2, gy

    x = T.tensor([1.0], requires_grad=True)
    y = T.tensor([5.0], requires_grad=True)
    a, b = Pass.apply(x, y)
    a.sum().backward()
    return b.requires_grad, x.grad, y.grad


@differential
def test_accumulate_grad_variable_and_metadata(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    acc = b.grad_fn.next_functions[0][0]
    b.grad_fn.metadata["tag"] = 7
    return acc.variable is a, b.grad_fn.metadata, b.grad_fn.next_functions[0][0] is acc


def test_removable_handle_pickles_and_removes():
    import pickle
    from collections import OrderedDict
    from hookgrad.utils.hooks import RemovableHandle
    hooks = OrderedDict()
    h = RemovableHandle(hooks)
    hooks[h.id] = print
    h2 = pickle.loads(pickle.dumps(h))
    assert h2.id == h.id and RemovableHandle.next_id > h.id
    with h:
        assert h.id in hooks
    assert h.id not in hooks
    h.remove()


@differential
def test_tied_accumulate_grads_run_in_torch_heap_order(T):
    # many leaves become ready at once: their order is the priority queue's tie-breaking
    log = []
    leaves = [T.tensor([float(i)], requires_grad=True) for i in range(9)]
    for i, leaf in enumerate(leaves):
        leaf.register_post_accumulate_grad_hook(lambda t, i=i: log.append(i))
    (T.stack(leaves) * T.arange(9.0).unsqueeze(1)).sum().backward()
    T.cat([leaves[3], leaves[1], leaves[4], leaves[1], leaves[5]]).sum().backward()
    return log


@differential
def test_grad_adoption_never_aliases_what_others_hold(T):
    a = T.ones(3, requires_grad=True)
    kept = []
    a.register_hook(lambda g: kept.append(g))
    (a * 2).sum().backward()
    (a * 2).sum().backward()
    b = T.ones(2, requires_grad=True)
    c = T.ones(2, requires_grad=True)
    (b + c).sum().backward()
    b.grad.add_(5)
    w = T.ones(2, 3, requires_grad=True)
    (T.ones(4, 3) @ w.t()).sum().backward()
    return kept, a.grad, b.grad, c.grad, w.grad, w.grad.is_contiguous()
