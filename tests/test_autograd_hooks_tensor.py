"""Tensor hooks, differentially against torch: `Tensor.register_hook`, `retain_grad` and
`register_post_accumulate_grad_hook` - what fires, in which order, with which arguments, what a
return value replaces, how handles remove them, and which errors bad hooks raise."""
from autograd_helpers import node_name
from difftest import catch, differential


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
    return log, a.grad, node_name(b.grad_fn)


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
def test_create_graph_grad_has_graph_and_hooks_fire(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = (x ** 3).sum()
    x.register_hook(lambda g: log.append(("x", g.requires_grad)))
    (g,) = T.autograd.grad(y, x, create_graph=True)
    g.sum().backward()
    return log, g, x.grad


@differential
def test_handles_ids_are_shared_counter_and_removable_twice(T):
    a = T.tensor([1.0], requires_grad=True)
    h1 = a.register_hook(lambda g: g)
    h2 = (a * 1).register_hook(lambda g: g)
    return h2.id - h1.id, type(h1).__name__


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
def test_root_gradients_are_cast_to_their_outputs_dtype(T):
    """The engine casts a root's gradient to the dtype of its output (tensor hooks, autograd.grad
    and a leaf's .grad all see the output's dtype)."""
    x = T.randn(3, dtype=T.float64, requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.dtype))
    grads = [T.autograd.grad(y, x, g, retain_graph=True)[0].dtype
             for g in (T.ones(3), T.ones(3, dtype=T.int64), T.ones(3, dtype=T.float16))]
    z = T.randn(3, requires_grad=True)
    z.backward(T.ones(3, dtype=T.float64))
    return grads, seen, z.grad.dtype
