"""The backward entry points that hooks run under, differentially against torch:
`backward` / `autograd.grad` arguments and errors, retain_graph, inputs=, grad accumulation and
adoption, grad mode switches, leaf rules and anomaly mode."""
from difftest import catch, differential, warns


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
def test_grad_of_nonleaf_warns(T):
    a = T.tensor([1.0], requires_grad=True)
    b = a * 2
    b.sum().backward()
    return warns(lambda: b.grad)


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


class warns_silently:
    def __enter__(self):
        import warnings
        self._c = warnings.catch_warnings()
        self._c.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._c.__exit__(*exc)


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
