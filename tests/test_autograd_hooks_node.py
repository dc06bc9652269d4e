"""Node hooks, differentially against torch: `grad_fn.register_prehook` / `register_hook` on
ordinary nodes and on AccumulateGrad - their arguments, what a return value replaces, the order of
every hook kind around one node and across branches, and the graph structure they are attached to."""
import warnings

from autograd_helpers import node_name
from difftest import catch, differential


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
    return log, node_name(acc)


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
        n.register_prehook(lambda go, n=n: log.append(node_name(n)))
    x.register_hook(lambda g: log.append("x"))
    w.register_hook(lambda g: log.append("w"))
    e.backward()
    return log, x.grad, w.grad


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
def test_accumulate_grad_variable_and_metadata(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    acc = b.grad_fn.next_functions[0][0]
    b.grad_fn.metadata["tag"] = 7
    return acc.variable is a, b.grad_fn.metadata, b.grad_fn.next_functions[0][0] is acc


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
        out[k] = (node_name(t.grad_fn), [(node_name(n), i) for n, i in t.grad_fn.next_functions])
    out["float_is_self"] = a.float() is a
    return out


@differential
def test_node_hooks_cannot_fill_a_slot_without_gradient(T):
    out = {}
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = T.tensor([3.0, 4.0])
    y = a * b  # b needs no grad: its slot of grad_inputs is None
    y.grad_fn.register_hook(lambda gi, go: (gi[0], T.ones(2)))
    out["post"] = catch(lambda: y.sum().backward())
    x, unused = (a * 2).split(1)  # the unused output's slot of grad_outputs is None
    x.grad_fn.register_prehook(lambda go: (go[0], T.ones(1)))
    out["pre"] = catch(lambda: x.sum().backward())
    x, unused = (a * 2).split(1)
    x.grad_fn.register_prehook(lambda go: (go[0], None))
    out["pre_none_ok"] = catch(lambda: x.sum().backward())
    return out, a.grad


@differential
def test_group_norm_node_hooks_see_three_gradients(T):
    """torch's NativeGroupNormBackward0 has three outputs: its pre-hook and a legacy module backward
    hook get (grad, None, None)."""
    log = []
    x = T.tensor([[0.1, -0.5, 0.3], [0.7, 0.2, -0.9]], dtype=T.float64, requires_grad=True)
    norm = T.nn.GroupNorm(1, 3).double()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy hook's deprecation warning
        norm.register_backward_hook(lambda m, gin, gout: log.append(
            ("legacy", [None if g is None else tuple(g.shape) for g in gin], [g is None for g in gout])))
    y = norm(x)
    y.grad_fn.register_prehook(lambda gout: log.append(("pre", [g is None for g in gout])))
    y.grad_fn.register_hook(lambda gin, gout: log.append(("post", [g is None for g in gin], len(gout))))
    y.backward(T.ones_like(y) * 2)
    return log, x.grad, norm.weight.grad
