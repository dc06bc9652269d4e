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
