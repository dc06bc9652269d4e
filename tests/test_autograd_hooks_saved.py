"""Saved-tensor hooks, differentially against torch: `saved_tensors_hooks` pack/unpack,
`disable_saved_tensors_hooks`, `save_on_cpu`, and the version check on saved tensors."""
import pytest

from difftest import catch, differential


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
def test_unpacked_view_made_under_no_grad_stands_in_without_a_gradient(T):
    """A view made under no_grad of a tensor that requires grad, saved under pack hooks: its unpacked
    stand-in gets no gradient (none reaches the view), and the other operand's gradient is right."""
    base = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True) * 1
    with T.no_grad():
        view = base.view(4)
    w = T.tensor([0.5, -1.0, 2.0, 3.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
        y = (view * w).sum()
    y.backward()
    return w.grad, view.requires_grad, view.grad_fn is None


@differential
def test_unpacked_view_made_under_no_grad_still_requires_grad_under_create_graph(T):
    """The stand-in of a view made under no_grad (or inference_mode) of a tensor that requires grad
    requires grad like the view itself, so a create_graph gradient computed from it does too."""
    results = []
    for mode in (T.no_grad, T.inference_mode):
        base = T.tensor([[0.1, -0.5, 0.3], [0.7, 0.2, -0.4]], dtype=T.float64, requires_grad=True) * 1
        with mode():
            view = base.reshape(-1).view(2, 3)
        weight = T.ones(3, 3, dtype=T.float64, requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(lambda t: t * 2.0, lambda t: t / 2.0):
            out = view.mm(weight)
        grad, = T.autograd.grad([out], [weight], [T.ones(2, 3, dtype=T.float64)], create_graph=True)
        results.append((grad, grad.requires_grad, out.grad_fn._saved_self.requires_grad))
    return results


@differential
def test_batch_norm_packs_its_running_statistics_before_updating_them(T):
    """In training mode torch packs the running statistics before its kernel updates them: a pack
    hook sees the old values, and one that raises leaves them unchanged (the module still counts
    the batch); the next forward then runs as usual."""
    bn = T.nn.BatchNorm1d(3).double()
    with T.no_grad():
        bn.running_var.fill_(3.0)
    x = T.tensor([[0.1, -0.5, 0.3], [0.7, 0.2, -0.4]], dtype=T.float64, requires_grad=True)
    seen = []

    def refuse(t):
        raise ValueError("no packing here")

    def record(t):
        seen.append(sorted(round(v, 6) for v in t.detach().reshape(-1).tolist()))
        return t
    with T.autograd.graph.saved_tensors_hooks(refuse, lambda t: t):
        raised = catch(bn, x)
    after_raise = (bn.running_mean.clone(), bn.running_var.clone(), bn.num_batches_tracked.clone())
    with T.autograd.graph.saved_tensors_hooks(record, lambda t: t):
        out = bn(x)
    out.sum().backward()
    return raised.cls, after_raise, sorted(seen), bn.running_mean, bn.running_var, x.grad


@pytest.mark.parametrize("keep", ["itself", "save_on_cpu", "clone"])
@differential
def test_a_packed_in_place_output_aliases_the_tensor_it_was_written_into(T, keep):
    """relu_ packs its output, which is the tensor itself: a pack hook that keeps it (or save_on_cpu,
    whose CPU copy of a CPU tensor is the tensor) sees a later in-place change (no version check
    under hooks), one that clones it does not."""
    w = T.tensor([[0.5, -1.0, 0.25], [-0.5, 1.5, -2.0]], dtype=T.float64, requires_grad=True)
    if keep == "save_on_cpu":
        hooks = T.autograd.graph.save_on_cpu()
    else:
        hooks = T.autograd.graph.saved_tensors_hooks(lambda t: t if keep == "itself" else t.clone(), lambda t: t)
    with hooks:
        h = T.relu_(w * 1.0)
    h.add_(1.0)  # every entry positive now: ReLU's mask read from the alias passes every gradient
    grad, = T.autograd.grad(h.sum(), [w])
    return grad, h


def _pack_log(T, log):
    """saved_tensors_hooks that log each packed and unpacked tensor's shape (and requires_grad)."""
    def pack(t):
        log.append(("pack", tuple(t.shape), bool(t.requires_grad)))
        return t

    def unpack(t):
        log.append(("unpack", tuple(t.shape)))
        return t
    return T.autograd.graph.saved_tensors_hooks(pack, unpack)


@differential
def test_dot_and_vdot_pack_only_what_a_gradient_needs(T):
    """Each operand is saved for the other's gradient only; vdot has its own node, which packs
    its second operand first."""
    log = []
    u = T.tensor([0.1, -0.5, 0.3], dtype=T.float64)
    w = T.tensor([0.7, 0.2, -0.9], dtype=T.float64, requires_grad=True)
    out = []
    for f in (T.dot, T.vdot):
        for a, b in ((u, w * 1), (w * 1, u), (w * 1, w * 2)):
            with _pack_log(T, log):
                y = f(a, b)
            log.append((y.grad_fn.name(), sorted(n for n in dir(y.grad_fn) if n.startswith("_saved_"))))
            out.append(T.autograd.grad(y * 3, w))
    return log, out


@differential
def test_bilinear_packs_only_what_a_gradient_needs(T):
    log = []
    x = T.tensor([[0.1, -0.5, 0.3], [0.7, 0.2, -0.9]], dtype=T.float64)
    layer = T.nn.Bilinear(3, 3, 2).double()
    with T.no_grad():
        layer.weight.copy_(T.linspace(-1, 1, 18, dtype=T.float64).reshape(2, 3, 3))
    grads = []
    for frozen_weight, x_grad in ((False, False), (True, True), (False, True)):
        layer.weight.requires_grad_(not frozen_weight)
        x.requires_grad_(x_grad)
        with _pack_log(T, log):
            y = layer(x, x * 2)
        y.sum().backward()
        grads.append((x.grad, layer.weight.grad))
    return log, grads


@differential
def test_group_norm_saves_its_statistics_as_its_outputs(T):
    """torch's group-norm node has three outputs (result, mean, rstd) and saves the last two as
    outputs: a pack hook sees them with the node as grad_fn, as do the _saved_ attributes."""
    log = []
    x = T.tensor([[0.1, -0.5, 0.3, 0.4], [0.7, 0.2, -0.9, 0.0]], dtype=T.float64, requires_grad=True)
    norm = T.nn.GroupNorm(2, 4).double()
    with _pack_log(T, log):
        y = norm(x)
    node = y.grad_fn
    saved = [(n, tuple(getattr(node, n).shape), getattr(node, n).requires_grad, getattr(node, n).grad_fn is node)
             for n in ("_saved_result1", "_saved_result2")]
    y.backward(T.arange(8.0, dtype=T.float64).reshape(2, 4))
    return log, saved, x.grad, norm.weight.grad, norm.bias.grad
