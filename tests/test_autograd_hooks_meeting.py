"""Where two hook features meet, differentially against torch: hooks that remove other hooks during
backward, in-place ops on hooked tensors, ``autograd.grad`` with hooks on inputs nobody asked for,
``retain_grad`` with hooks and in-place ops on views, module hooks with tensor hooks."""
from __future__ import annotations

import pytest
from difftest import catch, differential


@pytest.mark.parametrize("kind", ["tensor", "node_pre", "node_post", "post_accumulate", "leaf_tensor"])
@differential
def test_a_hook_removing_a_later_hook_of_its_kind_during_backward(T, kind):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    handles = {}

    def first(*args):
        log.append("first")
        handles["second"].remove()
        handles["first"].remove()  # itself, too

    def second(*args):
        log.append("second")

    register = {"tensor": y.register_hook, "node_pre": y.grad_fn.register_prehook,
                "node_post": y.grad_fn.register_hook, "post_accumulate": x.register_post_accumulate_grad_hook,
                "leaf_tensor": x.register_hook}[kind]
    handles["first"] = register(first)
    handles["second"] = register(second)
    third = register(lambda *args: log.append("third"))
    y.sum().backward(retain_graph=True)
    log.append("second pass")
    y.sum().backward()
    third.remove()
    return log, x.grad


@differential
def test_a_tensor_hook_removing_the_node_hooks_of_its_node(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    pre = y.grad_fn.register_prehook(lambda go: log.append(("pre", go)))
    post = y.grad_fn.register_hook(lambda gi, go: log.append(("post", gi)))

    def hook(g):
        log.append(("tensor hook", g))
        pre.remove()
        post.remove()
        return g * 2

    y.register_hook(hook)
    y.sum().backward()
    return log, x.grad


@pytest.mark.parametrize("op", ["mul_", "add_", "relu_", "zero_"])
@differential
def test_in_place_op_on_a_hooked_output(T, op):
    log = []
    x = T.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: log.append(("before", g)))
    y.retain_grad()
    args = {"mul_": (3.0,), "add_": (1.0,), "relu_": (), "zero_": ()}[op]
    getattr(y, op)(*args)
    y.register_hook(lambda g: log.append(("after", g)) or g + 1)
    (y * y).sum().backward()
    return log, x.grad, y.grad, y.grad_fn.name()


@differential
def test_autograd_grad_with_hooks_on_inputs_nobody_asked_for(T):
    log = []
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    a.register_hook(lambda g: log.append(("a", g)))
    b.register_hook(lambda g: log.append(("b", g)))
    b.register_post_accumulate_grad_hook(lambda t: log.append(("b acc", t.grad)))
    ya = a * 2
    yb = b.exp()
    yb.register_hook(lambda g: log.append(("yb", g)))
    yb.grad_fn.register_prehook(lambda go: log.append(("yb pre", go)))
    yb.grad_fn.register_hook(lambda gi, go: log.append(("yb post", gi, go)))
    out = (ya * yb).sum()
    got = T.autograd.grad(out, [a], retain_graph=True)
    log.append("then inputs=yb")
    got_yb = T.autograd.grad(out, [yb])
    return log, got, got_yb, a.grad, b.grad


@differential
def test_retain_grad_and_hooks_on_a_view_changed_in_place(T):
    log = []
    x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    base = x * 1
    base.retain_grad()
    base.register_hook(lambda g: log.append(("base", g)))
    view = base[1:3]
    view.retain_grad()
    view.register_hook(lambda g: log.append(("view before", g)))
    view.mul_(10)
    view.register_hook(lambda g: log.append(("view after", g)) or g * 2)
    view.retain_grad()
    (base * T.arange(4.0)).sum().backward()
    return log, x.grad, base.grad, view.grad, view.grad_fn.name(), base.grad_fn.name()


@differential
def test_module_full_backward_hook_with_tensor_hooks_on_its_input_and_output(T):
    log = []
    T.manual_seed(0)
    layer = T.nn.Linear(2, 2)
    with T.no_grad():
        layer.weight.copy_(T.tensor([[1.0, 2.0], [3.0, 4.0]]))
        layer.bias.zero_()
    layer.register_full_backward_pre_hook(lambda m, go: log.append(("module pre", go)) or (go[0] * 2,))
    layer.register_full_backward_hook(lambda m, gi, go: log.append(("module", gi, go)))
    x = T.tensor([[1.0, -1.0]], requires_grad=True)
    h = x * 1
    h.register_hook(lambda g: log.append(("input", g)))
    out = layer(h)
    out.register_hook(lambda g: log.append(("output", g)) or g + 1)
    out.sum().backward()
    return log, x.grad


@differential
def test_multi_grad_hook_with_a_tensor_removed_from_the_graph_by_an_in_place_op(T):
    log = []
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    c = a * 3
    T.autograd.graph.register_multi_grad_hook((b, c), lambda grads: log.append(grads))
    b.mul_(5)  # the hook on b stays with b's old node
    out = (b + c).sum()
    out.backward()
    return log, a.grad, catch(lambda: T.autograd.grad((b * c).sum(), [a]))


@differential
def test_hooks_registered_during_backward_by_other_hooks(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    b = a.exp()
    c = b * 3

    def on_c(g):
        log.append(("c", g))
        # a's node has not run yet: its new hooks fire in this pass; c's own node is running
        a.register_hook(lambda g: log.append(("a, added", g)) or g * 10)
        a.grad_fn.register_prehook(lambda go: log.append(("a pre, added", go)))
        c.grad_fn.register_hook(lambda gi, go: log.append(("c post, added", gi)))
        c.register_hook(lambda g: log.append(("c, added late", g)))
        x.register_post_accumulate_grad_hook(lambda t: log.append(("x acc, added", t.grad)))
        b.retain_grad()

    c.register_hook(on_c)
    c.sum().backward(retain_graph=True)
    log.append("second pass")
    c.sum().backward()
    return log, x.grad, b.grad


@differential
def test_reentrant_backward_from_a_post_accumulate_hook_under_other_torch_function_states(T):
    log = []

    class Logged(T.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            name = T.overrides.resolve_name(func) or getattr(func, "__name__", "?")
            if not name.endswith(("__get__", "__set__")):
                log.append(("subclass", name))
            return super().__torch_function__(func, types, args, kwargs or {})

    w = T.full((2,), 2.0).as_subclass(Logged)
    other = T.tensor([1.0, 1.0], requires_grad=True)
    other.register_hook(lambda g: log.append(("inner hook", g * w)))
    x = T.tensor([1.0, 2.0], requires_grad=True)

    def after(t):
        log.append(("acc", t.grad))
        with T.enable_grad():  # (the pass runs its hooks with grad mode as create_graph says: off)
            with T._C.DisableTorchFunctionSubclass():
                (other * 3).sum().backward()  # its hooks see subclasses off
            (other * 4).sum().backward()      # and on again

    x.register_post_accumulate_grad_hook(after)
    (x * x).sum().backward()
    return log, x.grad, other.grad


@differential
def test_saved_tensor_hooks_with_tensor_hooks_and_an_in_place_change(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)

    def pack(t):
        log.append(("pack", t))
        return t.clone()

    def unpack(t):
        log.append(("unpack", t))
        return t

    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.exp()
        y.register_hook(lambda g: log.append(("y", g)))
        z = y * y
    y.add_(1)  # saved through the hooks: a copy, so no version error
    z.register_hook(lambda g: log.append(("z", g)) or g * 2)
    z.sum().backward()
    return log, x.grad
