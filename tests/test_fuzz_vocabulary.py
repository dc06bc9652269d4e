"""Behaviours the hook fuzzer's wider vocabulary (convolutions, normalization, attention, recurrent
layers, checkpointing, parametrizations, custom Functions, clipping, mode switches) found diverging
from torch, each pinned as a differential scenario."""
from __future__ import annotations

import importlib

import pytest

from difftest import catch, differential


def _filled(T, module):
    """``module`` with fixed parameter values (initializers draw differently)."""
    with T.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(T.linspace(-1.0, 1.0 + 0.1 * i, p.numel(), dtype=p.dtype).reshape(p.shape))
    return module


def _packs(T, log):
    """Saved-tensor hooks that record the shape and dtype of what is packed."""
    def pack(t):
        log.append(("pack", tuple(t.shape), str(t.dtype).split(".")[-1]))
        return t

    def unpack(t):
        log.append(("unpack", tuple(t.shape)))
        return t
    return T.autograd.graph.saved_tensors_hooks(pack, unpack)


@differential
def test_a_leaf_switched_off_after_the_forward_gets_no_grad_but_its_hooks_run(T):
    weight = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    bias = T.tensor([0.5, 0.5, 0.5], requires_grad=True)
    log = []
    bias.register_post_accumulate_grad_hook(lambda p: log.append(("post acc", p.grad)))
    loss = (weight * 2 + bias).sum()
    bias.requires_grad_(False)
    loss.backward()
    return log, weight.grad, bias.grad, bias.requires_grad


@differential
def test_a_linear_bias_switched_off_between_forward_and_backward(T):
    lin = T.nn.Linear(3, 2).double()
    with T.no_grad():
        lin.weight.copy_(T.arange(6.0).reshape(2, 3))
    out = lin(T.ones(4, 3, dtype=T.float64))
    lin.bias.requires_grad_(False)
    T.autograd.backward(list(out.unbind()), [T.full((2,), float(i)) .double() for i in range(4)])
    return lin.weight.grad, lin.bias.grad


class _Cube:
    @staticmethod
    def make(T):
        class Cube(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x * x

            @staticmethod
            def backward(ctx, grad):
                x, = ctx.saved_tensors
                return grad * 3 * x * x
        return Cube


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("grad_mode", [False, True])
@differential
def test_a_custom_function_packs_its_saved_tensors_only_when_recorded(T, requires_grad, grad_mode):
    Cube = _Cube.make(T)
    x = T.tensor([0.5, -1.0], requires_grad=requires_grad)
    log = []
    with _packs(T, log), T.set_grad_enabled(grad_mode):
        y = Cube.apply(x)
    if y.requires_grad:
        y.sum().backward()
    return log, y, y.requires_grad, x.grad


@pytest.mark.parametrize("how", ["grad", "inputs", "plain"])
@differential
def test_reentrant_checkpoint_refuses_passes_toward_chosen_inputs(T, how):
    checkpoint = importlib.import_module(T.__name__ + ".utils.checkpoint").checkpoint
    lin = _filled(T, T.nn.Linear(3, 3).double())
    x = T.ones(2, 3, dtype=T.float64, requires_grad=True)
    log = []
    lin.register_forward_hook(lambda m, args, out: log.append("forward"))
    y = checkpoint(lin, x, use_reentrant=True).sum()
    if how == "grad":
        result = catch(T.autograd.grad, y, [x])
    elif how == "inputs":
        result = catch(y.backward, inputs=[x])
    else:
        result = catch(y.backward)
    return log, result, x.grad, T.autograd._is_checkpoint_valid()


@pytest.mark.parametrize("foreach", [None, False])
@differential
def test_clip_grad_value_without_any_gradient_raises(T, foreach):
    lin = T.nn.Linear(2, 2)
    no_grads = catch(T.nn.utils.clip_grad_value_, lin.parameters(), 0.1, foreach=foreach)
    empty = catch(T.nn.utils.clip_grad_value_, [], 0.1, foreach=foreach)
    lin.bias.grad = T.tensor([3.0, -0.05])
    clipped = catch(T.nn.utils.clip_grad_value_, lin.parameters(), 0.1, foreach=foreach)
    return no_grads, empty, clipped, lin.bias.grad, lin.weight.grad


@pytest.mark.parametrize("x_requires_grad", [False, True])
@differential
def test_attention_with_weights_packs_in_torchs_order(T, x_requires_grad):
    attn = _filled(T, T.nn.MultiheadAttention(3, 1, batch_first=True).double())
    x = T.tensor([[[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]], dtype=T.float64, requires_grad=x_requires_grad)
    log = []
    with _packs(T, log):
        out, weights = attn(x, x, x, need_weights=True)
    (out.sum() + weights.sum()).backward()
    return log, out, weights, attn.in_proj_weight.grad, x.grad


@pytest.mark.parametrize("mode", ["plain", "clone", "float", "twice"])
@differential
def test_embedding_backward_unpacks_its_saved_indices(T, mode):
    weight = T.tensor([[0.1, 0.2], [0.3, -0.4], [0.5, 0.6]], dtype=T.float64, requires_grad=True)
    idx = T.tensor([0, 2, 2])
    log = []

    def pack(t):
        log.append(("pack", str(t.dtype).split(".")[-1]))
        return t.clone() if mode == "clone" else t

    def unpack(t):
        log.append(("unpack", str(t.dtype).split(".")[-1]))
        return t.double() if mode == "float" and t.dtype == T.int64 else t

    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        out = T.nn.functional.embedding(idx, weight)
    loss = (out * out).sum()
    first = catch(loss.backward, retain_graph=mode == "twice")
    second = catch(loss.backward) if mode == "twice" else None
    return log, first, second, weight.grad


@differential
def test_embedding_double_backward_through_a_freed_graph_raises_before_accumulating(T):
    lin = _filled(T, T.nn.Linear(3, 3).double())
    emb = _filled(T, T.nn.Embedding(5, 3).double())
    out = lin(T.ones(2, 3, dtype=T.float64)) + emb(T.tensor([1, 3]))
    T.autograd.backward([out.sum(), (out * out).sum()], create_graph=True, retain_graph=False)
    grads = [p.grad for p in list(lin.parameters()) + list(emb.parameters())]
    result = catch(sum((g * g).sum() for g in grads).backward)
    return result, emb.weight.grad, lin.weight.grad


@pytest.mark.parametrize("pin_memory", [False, True])
@differential
def test_save_on_cpu_keeps_a_cpu_tensor_itself_unless_pinning(T, pin_memory):
    w = T.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=T.float64, requires_grad=True)
    a = T.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=T.float64, requires_grad=True)
    h = a * 1.0
    with T.autograd.graph.save_on_cpu(pin_memory=pin_memory):
        out = h @ w
    with T.no_grad():
        h.mul_(2.0)
    grads = catch(T.autograd.grad, out.sum(), [w])
    return grads


@differential
def test_detach_in_place_refuses_every_view(T):
    def attempt(make):
        return catch(lambda: make().detach_())
    x = T.ones(2, 3, requires_grad=True)
    pool = T.nn.MaxPool1d(3, stride=1, padding=1)
    return [attempt(lambda: T.ones(3).view(3)), attempt(lambda: T.arange(4).view(2, 2)[0]),
            attempt(lambda: x.detach().unsqueeze(1)), attempt(lambda: pool(x.detach().unsqueeze(1)).squeeze(1)),
            attempt(lambda: (x * 2).view(6)), attempt(lambda: x * 2)]


@pytest.mark.parametrize("pack_mode", ["same", "clone"])
@differential
def test_convolution_weight_gradient_reads_the_unpacked_input(T, pack_mode):
    conv = _filled(T, T.nn.Conv1d(1, 1, 3, padding=1).double())
    lin = _filled(T, T.nn.Linear(3, 3).double())
    h = lin(T.tensor([[0.1, 0.2, 0.3], [0.4, -0.5, 0.6]], dtype=T.float64))
    with T.autograd.graph.saved_tensors_hooks(lambda t: t.clone() if pack_mode == "clone" else t, lambda t: t):
        out = conv(h.unsqueeze(1)).squeeze(1)
    h.add_(1.0)
    out.sum().backward()
    return conv.weight.grad, conv.bias.grad, lin.weight.grad


@differential
def test_convolution_double_backward_gives_no_gradient_to_an_unused_input(T):
    conv = _filled(T, T.nn.Conv1d(1, 1, 3, padding=1).double())
    x = T.tensor([[[0.1, 0.2, 0.3]], [[0.4, -0.5, 0.6]]], dtype=T.float64, requires_grad=True)
    log = []
    x.register_post_accumulate_grad_hook(lambda p: log.append(("post acc", p.grad)))
    out = conv(x)
    gb, = T.autograd.grad(list(out.unbind()), [conv.bias], [T.ones(1, 3, dtype=T.float64) * (i + 1) for i in range(2)],
                          create_graph=True)
    (gb * gb).sum().backward()
    return log, gb, x.grad, conv.weight.grad


@differential
def test_once_differentiable_results_require_grad_and_refuse_a_second_derivative(T):
    once = importlib.import_module(T.__name__ + ".autograd.function").once_differentiable

    class TanhOnce(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.tanh()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        @once
        def backward(ctx, grad):
            y, = ctx.saved_tensors
            return grad * (1 - y * y)

    x = T.tensor([0.5, -1.0], requires_grad=True)
    w = T.tensor([2.0], requires_grad=True)
    plain, = T.autograd.grad(TanhOnce.apply(x).sum(), [x], create_graph=True)
    g, = T.autograd.grad((TanhOnce.apply(x) * w).sum(), [x], create_graph=True)
    second = catch(g.sum().backward)
    return plain, plain.requires_grad, g, g.requires_grad, g.grad_fn.name(), second, w.grad, x.grad


@differential
def test_batch_norm_updates_running_statistics_without_a_version_bump(T):
    bn = T.nn.BatchNorm1d(3).double()
    x = T.tensor([[0.1, 0.2, 0.3], [0.4, -0.5, 0.6]], dtype=T.float64, requires_grad=True)
    versions = [bn.running_mean._version, bn.running_var._version, bn.num_batches_tracked._version]
    first = bn(x)
    second = bn(x * 2)  # a second training-mode forward before the first graph's backward
    versions += [bn.running_mean._version, bn.running_var._version, bn.num_batches_tracked._version]
    result = catch((first * T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).sum().backward)
    bn.eval()
    third = bn(x)
    with T.no_grad():
        bn.running_mean.add_(1.0)  # a real in-place op bumps it, and the eval-mode graph notices
    late = catch(third.sum().backward)
    return versions, result, x.grad, second, bn.running_mean, bn.running_var, late


@differential
def test_a_saved_input_detached_in_place_then_changed_names_the_detach(T):
    w = T.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=T.float64, requires_grad=True)
    h = T.tensor([[0.5, -1.0]], dtype=T.float64, requires_grad=True) * 2
    out = h @ w
    h.detach_()
    h.add_(1.0)
    raised = catch(out.sum().backward)
    return raised, "detached in-place" in raised.message, w.grad


@pytest.mark.parametrize("mode", ["same", "clone", "scale", "flip"])
@differential
def test_max_pool_packs_and_unpacks_its_indices(T, mode):
    x = T.tensor([[[0.1, 0.5, 0.3, 0.9]], [[0.4, -0.5, 0.6, 0.2]]], dtype=T.float64, requires_grad=True)
    log = []

    def pack(t):
        log.append(("pack", str(t.dtype).split(".")[-1], tuple(t.shape)))
        return t

    def unpack(t):
        log.append(("unpack", str(t.dtype).split(".")[-1]))
        if mode == "clone":
            return t.clone()
        if mode == "scale":
            return t / 2.0
        if mode == "flip" and t.dtype == T.int64:
            return t.flip(-1)
        return t

    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = T.nn.functional.max_pool1d(x, 2, stride=1)
    raised = catch((y * T.tensor([1.0, 2.0, 3.0], dtype=T.float64)).sum().backward)
    return log, raised, x.grad


@differential
def test_max_pool_indices_returned_and_changed_in_place_break_the_backward(T):
    x = T.tensor([[[0.1, 0.5, 0.3, 0.9]]], dtype=T.float64, requires_grad=True)
    y, idx = T.nn.functional.max_pool1d(x, 2, stride=1, return_indices=True)
    z, idx2 = T.nn.functional.max_pool1d(x, 2, stride=1, return_indices=True)
    idx.add_(0)
    return catch(y.sum().backward), idx, catch(z.sum().backward), x.grad


def _no_grad_view_scenario(T, make_base):
    """What torch does with a view made under no_grad of a tensor whose base requires grad."""
    w = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    base = make_base(T, w)
    record = {}
    with T.no_grad():
        v = base.view(3)
    record["attrs"] = (v.requires_grad, v.grad_fn is None, v.is_leaf, v._is_view())
    y = v * 3
    record["y"] = catch(lambda: (y.requires_grad, y.grad_fn.name(), [n is None for n, _ in y.grad_fn.next_functions]))
    record["backward"] = catch(lambda: y.sum().backward())
    record["v.grad"] = v.grad
    record["in place under grad mode"] = catch(v.add_, 1)
    record["view of it"] = catch(lambda: (v.view(3).requires_grad, v.view(3).grad_fn.name()))
    record["in place on a view of it"] = catch(v.view(3).mul_, 2)
    record["multi-grad hook"] = catch(T.autograd.graph.register_multi_grad_hook, [v], lambda grads: None)
    record["w.grad"] = catch(lambda: ((v * w).sum().backward(), w.grad)[1])
    record["grad wrt it"] = catch(T.autograd.grad, (v * w).sum(), [v])
    with T.no_grad():
        v.add_(1)  # allowed under no_grad, but the view is unusable under grad mode afterwards
    record["after in place under no_grad"] = (catch(lambda: v.grad_fn), catch(lambda: v * 2))
    return record


@pytest.mark.parametrize("base", ["leaf", "non-leaf", "view of a constant"])
@differential
def test_a_view_made_under_no_grad_requires_grad_but_gets_no_gradient(T, base):
    makers = {"leaf": lambda T, w: w, "non-leaf": lambda T, w: w * 2,
              "view of a constant": lambda T, w: T.tensor([[1.0, 2.0, 3.0]]).reshape(3).requires_grad_()}
    return _no_grad_view_scenario(T, makers[base])


@differential
def test_a_view_made_under_no_grad_of_a_view_whose_base_needs_no_grad(T):
    x = T.tensor([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]).reshape(2, 3)  # a view of a tensor without grad
    x.requires_grad_(True)
    with T.no_grad():
        u = x.unsqueeze(1)
        chain = x.reshape(-1).view(2, 3).t().t()
    return u.requires_grad, chain.requires_grad, catch(u.add_, 1)


@differential
def test_a_custom_function_reads_a_saved_input_detached_in_place(T):
    """ctx.saved_tensors names its node when unpacking: an input detached in place since is handed
    back (a built-in op's node refuses it, see the test above)."""
    Cube = _Cube.make(T)
    w = T.tensor([1.0, -2.0, 0.5], dtype=T.float64, requires_grad=True)
    h = w * 2
    out = Cube.apply(h)
    h.detach_()
    raised = catch(lambda: out.sum().backward())
    return raised, w.grad, h.requires_grad, h.grad_fn


@differential
def test_an_input_without_an_edge_gets_nothing_saved_for_its_gradient(T):
    """A view made under no_grad requires grad but has no edge: products keep nothing for its
    gradient (what pack hooks see, and a checkpoint's recomputation compares against)."""
    a = T.tensor([[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]], dtype=T.float64, requires_grad=True) * 1
    w = T.tensor([[0.5, 1.0, -1.5], [2.0, -0.5, 1.0]], dtype=T.float64, requires_grad=True)
    m = T.tensor([[1.0, 0.0, 2.0], [-1.0, 1.0, 0.0], [0.5, 0.5, 0.5]], dtype=T.float64, requires_grad=True)
    v = T.tensor([1.0, 2.0, -1.0], dtype=T.float64, requires_grad=True)
    lin = _filled(T, T.nn.Linear(3, 3).double())
    with T.no_grad():
        b = a.view(2, 3)
    results = []
    for make in (lambda: b * w, lambda: w * b, lambda: w / b, lambda: b @ m, lambda: T.mm(b, m), lambda: b.mv(v),
                 lambda: lin(b)):
        log = []
        with T.autograd.graph.saved_tensors_hooks(lambda t: log.append(tuple(t.shape)) or t, lambda t: t):
            out = make()
        out.sum().backward()
        results.append(log)
    return results, w.grad, m.grad, v.grad, lin.weight.grad


@differential
def test_checkpoint_over_a_view_made_under_no_grad_refuses_the_recomputation(T):
    checkpoint = importlib.import_module(T.__name__ + ".utils.checkpoint").checkpoint
    lin = _filled(T, T.nn.Linear(3, 3).double())
    inner = _filled(T, T.nn.Sequential(T.nn.Linear(3, 3), T.nn.Tanh()).double())
    x = T.tensor([[1.0, -2.0, 0.5], [0.25, 3.0, -1.0]], dtype=T.float64)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
        a = lin(x)
        with T.no_grad():
            b = a.view(2, 3)
        out = checkpoint(inner, b, use_reentrant=False)
    raised = catch(out.sum().backward)
    return raised, lin.weight.grad, inner[0].weight.grad


@differential
def test_a_view_of_a_leaf_that_is_itself_a_view_is_rebased_after_an_in_place_change(T):
    """x = plain.reshape(...).requires_grad_(): views of x share plain as their base. After x
    changes in place, such a view gets a new node whose edge leads nowhere (plain needs no grad)."""
    x = T.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype=T.float64).reshape(2, 3)
    x.requires_grad_(True)
    out = x.reshape(-1).view(x.shape).t().t()
    root = (out * out).sum()
    before = (out.grad_fn.name(), out.requires_grad)
    with T.no_grad():
        x.add_(1.0)
    after = (out.grad_fn.name(), out.requires_grad, out.grad_fn.next_functions[0][0], out.is_leaf,
             x.grad_fn, x.is_leaf)  # the leaf view itself had no node and gets none
    unused = T.autograd.grad([root], [out], allow_unused=True, retain_graph=True)
    return before, after, unused, catch(root.backward), x.grad


@pytest.mark.parametrize("pool", ["avg", "max", "adaptive"])
@differential
def test_a_pooling_backward_recorded_for_double_backward_has_an_edge_to_the_input(T, pool):
    """torch's pooling backward-of-backward node reads (grad_output, self), self's gradient being
    zeros: a second pass runs the input's history (a freed graph raises; hooks see the zeros)."""
    F = T.nn.functional
    fn = {"avg": lambda h: F.avg_pool1d(h, 3, stride=1, padding=1),
          "max": lambda h: F.max_pool1d(h, 3, stride=1, padding=1),
          "adaptive": lambda h: F.adaptive_avg_pool1d(h, 2)}[pool]
    results = []
    for retain in (False, True):
        w = T.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [1.0, 1.0, -2.0]], dtype=T.float64, requires_grad=True)
        b = T.tensor([0.1, -0.2, 0.3], dtype=T.float64, requires_grad=True)
        x = T.tensor([[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]], dtype=T.float64)
        log = []
        h = T.nn.functional.linear(x, w, b)
        h.register_hook(lambda g: log.append(("h", g)))
        pooled = fn(h.unsqueeze(1)).squeeze(1)
        out = F.linear(pooled, w[:, :pooled.shape[1]].detach().requires_grad_())
        loss = (out * T.tensor([1.0, 2.0, -1.0], dtype=T.float64)).sum()  # linear in the pooled values
        g, = T.autograd.grad(loss, [b], create_graph=True, retain_graph=retain)
        names, pending = [], [g.grad_fn]
        while pending:  # the second pass's pooling node, and how many edges it has
            node = pending.pop()
            if "Pool" in node.name():
                names.append((node.name(), sum(n is not None for n, _ in node.next_functions)))
            else:
                pending.extend(n for n, _ in node.next_functions if n is not None)
        raised = catch(lambda: (g * g).sum().backward())
        results.append((names, raised, log, w.grad, b.grad))
    return results


@differential
def test_a_second_backward_through_a_node_that_saved_nothing_runs(T):
    """A frozen linear layer on an input needing no grad keeps nothing (only the bias gets a
    gradient): a second backward without retain_graph finds nothing freed. A product with a
    number keeps it as a tensor, freed with the graph."""
    lin = _filled(T, T.nn.Linear(3, 3).double())
    lin.weight.requires_grad_(False)
    x = T.tensor([[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]], dtype=T.float64)
    loss = lin(x).sum()
    loss.backward()
    again = catch(loss.backward)
    node = loss.grad_fn.next_functions[0][0]
    saved = (node.name(), node._saved_mat1, node._saved_mat2)
    b = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    scaled = (b * 3.0).sum()
    scaled.backward()
    number = catch(scaled.backward)
    return again, saved, lin.bias.grad, number, b.grad


@pytest.mark.parametrize("dim", [0, 1, None])
@pytest.mark.parametrize("api", ["parametrization", "hook"])
@differential
def test_weight_norm_is_one_node_where_torch_fuses_it(T, dim, api):
    """dim first or last: torch's single _weight_norm_interface node (edges to v and g; packs g, v
    and the norms); other dims compose from ops, as torch's do."""
    lin = _filled(T, T.nn.Linear(4, 3).double())
    utils = T.nn.utils
    if api == "parametrization":
        lin = utils.parametrizations.weight_norm(lin, dim=dim)
        g, v = lin.parametrizations.weight.original0, lin.parametrizations.weight.original1
    else:
        lin = utils.weight_norm(lin, dim=dim)
        g, v = lin.weight_g, lin.weight_v
    x = T.tensor([[1.0, 2.0, -1.0, 0.5], [0.5, -0.5, 3.0, 1.0]], dtype=T.float64)
    log = []
    with T.autograd.graph.saved_tensors_hooks(lambda t: log.append(("pack", tuple(t.shape))) or t,
                                              lambda t: log.append(("unpack", tuple(t.shape))) or t):
        out = lin(x)
        node = out.grad_fn.next_functions[2][0].next_functions[0][0]  # addmm <- t <- the weight's node
        edges = [n.variable is v if n is not None and hasattr(n, "variable") else None
                 for n, _ in node.next_functions]
        saved = [getattr(node, name) for name in ("_saved_g", "_saved_v", "_saved_result1", "_saved_dim")
                 if hasattr(node, name)]
        (out * T.tensor([1.0, -2.0, 0.5], dtype=T.float64)).sum().backward()
    return log, node.name(), edges, saved, out, g.grad, v.grad


def _first_values(T, log):
    """Saved-tensor hooks that record the shape and first value of what is packed and unpacked:
    tensors of one shape (a norm's weight and running statistics) are told apart."""
    def note(event, t):
        flat = t.detach().reshape(-1)
        log.append((event, tuple(t.shape), round(float(flat[0]), 6) if flat.numel() else None))
        return t
    return T.autograd.graph.saved_tensors_hooks(lambda t: note("pack", t), lambda t: note("unpack", t))


@pytest.mark.parametrize("layer", ["batch_norm", "batch_norm_eval", "instance_norm_tracked", "layer_norm",
                                   "layer_norm_no_bias", "layer_norm_no_weight", "rms_norm", "group_norm"])
@differential
def test_normalization_layers_pack_and_unpack_in_torchs_order(T, layer):
    F = T.nn.functional
    x = T.linspace(-1.0, 2.0, 12, dtype=T.float64).reshape(4, 3).requires_grad_()
    w = T.full((3,), 0.7, dtype=T.float64, requires_grad=True)
    b = T.full((3,), 0.3, dtype=T.float64, requires_grad=True)
    rm, rv = T.full((3,), 0.25, dtype=T.float64), T.full((3,), 1.5, dtype=T.float64)
    run = {"batch_norm": lambda: F.batch_norm(x, rm, rv, w, b, training=True),
           "batch_norm_eval": lambda: F.batch_norm(x, rm, rv, w, b, training=False),
           "instance_norm_tracked": lambda: F.instance_norm(x.reshape(2, 3, 2), rm, rv, w, b, use_input_stats=True),
           "layer_norm": lambda: F.layer_norm(x, (3,), w, b),
           "layer_norm_no_bias": lambda: F.layer_norm(x, (3,), w, None),
           "layer_norm_no_weight": lambda: F.layer_norm(x, (3,), None, b),
           "rms_norm": lambda: F.rms_norm(x, (3,), w),
           "group_norm": lambda: F.group_norm(x.reshape(2, 3, 2), 3, w, b)}[layer]
    log = []
    with _first_values(T, log):
        out = run()
    (out * out).sum().backward()
    return log, out, x.grad, w.grad, rm, rv


@pytest.mark.parametrize("case", ["plain", "materialize", "unused", "create_graph", "wrong_shape", "sizes_differ"])
@differential
def test_autograd_grad_with_batched_gradients(T, case):
    x = T.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], dtype=T.float64, requires_grad=True)
    w = T.tensor([0.3, -0.7, 1.1], dtype=T.float64, requires_grad=True)
    unused = T.ones(2, dtype=T.float64, requires_grad=True)
    y = (x * w).tanh()
    z = (y * y).sum()
    batch = T.stack([T.ones(2, 3, dtype=T.float64), T.full((2, 3), -0.5, dtype=T.float64),
                     T.arange(6.0, dtype=T.float64).reshape(2, 3)])
    if case == "plain":
        return T.autograd.grad(y, [x, w], batch, is_grads_batched=True)
    if case == "materialize":
        return T.autograd.grad(y, [w, unused], batch, is_grads_batched=True, materialize_grads=True)
    if case == "unused":
        return catch(T.autograd.grad, y, [w, unused], batch, is_grads_batched=True)
    if case == "create_graph":
        gx, = T.autograd.grad(y, [x], batch, is_grads_batched=True, create_graph=True)
        return gx, gx.requires_grad, T.autograd.grad(gx.sum(), w)
    if case == "wrong_shape":
        return catch(T.autograd.grad, y, [x], batch[:, :1], is_grads_batched=True)
    return catch(T.autograd.grad, [y, z], [x], [batch, T.ones(2, dtype=T.float64)], is_grads_batched=True)


@pytest.mark.parametrize("needs", ["mat1", "mat2", "both"])
@pytest.mark.parametrize("op", ["mm", "addmm", "linear"])
@differential
def test_a_product_keeps_an_operands_strides_only_when_its_gradient_is_needed(T, op, needs):
    a = T.ones(2, 3, dtype=T.float64, requires_grad=needs != "mat2")
    b = T.ones(3, 4, dtype=T.float64, requires_grad=needs != "mat1")
    out = {"mm": lambda: a @ b, "addmm": lambda: T.addmm(T.ones(4, dtype=T.float64), a, b),
           "linear": lambda: T.nn.functional.linear(a, b.t(), T.ones(4, dtype=T.float64))}[op]()
    fn = out.grad_fn
    return fn.name(), [(n, getattr(fn, n)) for n in sorted(dir(fn)) if n.endswith(("_sym_strides", "_sym_sizes"))]


@pytest.mark.parametrize("unpacked", ["float32", "flat", "float32_weight_only"])
@differential
def test_a_linear_refuses_a_saved_matrix_an_unpack_hook_changed(T, unpacked):
    lin = _filled(T, T.nn.Linear(3, 3).double())
    x = T.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]], dtype=T.float64, requires_grad=True)

    def unpack(t):
        if unpacked == "flat":
            return t.reshape(-1)
        if unpacked == "float32_weight_only" and t.shape != (3, 3):
            return t
        return t.float()
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
        out = lin(x)
    return catch(out.sum().backward), lin.weight.grad, x.grad


@differential
def test_a_saved_attribute_reads_a_tensor_detached_in_place_where_the_backward_refuses_it(T):
    w = T.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=T.float64, requires_grad=True)
    x = T.tensor([[0.5, -1.0]], dtype=T.float64, requires_grad=True)
    a = x * 2
    out = a @ w
    a.detach_()
    seen = out.grad_fn._saved_self
    refused = catch(out.sum().backward)
    b = x * 3
    out2 = b @ w
    b.detach_()
    b.add_(1.0)  # changed after the detach: the version check still applies
    return seen, refused, catch(lambda: out2.grad_fn._saved_self), w.grad


@pytest.mark.parametrize("name", ["tanh", "sigmoid"])
@differential
def test_tanh_and_sigmoid_backward_under_create_graph_is_one_node_with_hooks(T, name):
    x = T.tensor([0.3, -0.8, 1.2], dtype=T.float64, requires_grad=True)
    g = T.tensor([1.0, 2.0, -0.5], dtype=T.float64, requires_grad=True)
    log = []
    with _first_values(T, log):
        gx, = T.autograd.grad(getattr(x, name)(), x, g, create_graph=True)
    fn = gx.grad_fn
    saved = fn._saved_grad_output, fn._saved_output
    fn.register_hook(lambda grad_inputs, grad_outputs: log.append(("post", grad_inputs, grad_outputs)))
    fn.register_prehook(lambda grad_outputs: log.append(("pre", grad_outputs)))
    with _first_values(T, log):
        second = T.autograd.grad((gx * gx * T.tensor([1.0, -1.0, 2.0], dtype=T.float64)).sum(), [x, g],
                                 create_graph=True)
    third = T.autograd.grad(second[0].sum() + second[1].sum(), [x, g])
    return (fn.name(), [n for n in dir(fn) if n.startswith("_saved_")], saved, catch(lambda: fn._saved_output),
            [f.name() if f else None for f, _ in fn.next_functions], log, second, third)


@pytest.mark.parametrize("x_layout", ["rows", "columns"])
@differential
def test_a_linear_backward_under_create_graph_follows_torchs_column_major_products(T, x_layout):
    """torch computes the gradient of a column-major matrix of a product (the weight's transpose in
    a linear layer, an input that is a transposed view) transposed: grad.t() @ x, then .t(). Under
    create_graph that decides what the products save (pack hooks around the pass see it) and the
    node the weight's gradient hangs from (TBackward0)."""
    from test_attention_graph import walk
    base = T.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=T.float64)
    x = (base.t().contiguous().t() if x_layout == "columns" else base.clone()).requires_grad_()
    lin = _filled(T, T.nn.Linear(3, 2, dtype=T.float64))
    out = lin(x)
    log = []
    with _packs(T, log):
        gx, gw = T.autograd.grad((out * out).sum(), [x, lin.weight], create_graph=True)
    return log, walk(gx), walk(gw), T.autograd.grad((gx * gx).sum() + gw.sum(), [x, lin.weight])


@differential
def test_softplus_backward_under_create_graph_is_one_node_saving_the_gradient_and_input(T):
    """torch records softplus's backward as SoftplusBackwardBackward0 (saving the incoming gradient
    and the input: pack hooks around the pass see two float tensors, no mask), whose input part is
    its softplus_double_backward; one input past the threshold."""
    from test_attention_graph import walk
    x = T.tensor([[0.5, -1.0, 30.0], [2.0, 0.1, -3.0]], dtype=T.float64, requires_grad=True)
    y = T.nn.functional.softplus(x * 1.0, beta=2.0, threshold=20.0)
    log = []
    with _packs(T, log):
        (g,) = T.autograd.grad((y * y).sum(), [x], create_graph=True)
    (gg,) = T.autograd.grad((g * g).sum(), [x], create_graph=True)
    return log, walk(g), gg, T.autograd.grad(gg.sum(), [x])


@differential
def test_enable_grad_inside_inference_mode_reports_grad_mode_and_records_nothing(T):
    """Inside inference_mode, enable_grad / set_grad_enabled(True) turn grad mode on (is_grad_enabled
    says so) but ops still record no graph; leaving them restores both."""
    seen = []
    leaf = T.ones(2, requires_grad=True)
    with T.inference_mode():
        inner = T.ones(2, requires_grad=True)
        with T.enable_grad():
            for t in (leaf, inner):
                y = t * 2.0
                seen.append((T.is_grad_enabled(), y.requires_grad, y.grad_fn is None, y.is_inference()))
        T.set_grad_enabled(True)
        seen.append((T.is_grad_enabled(), (inner * 2.0).requires_grad))
        T.set_grad_enabled(False)
        with T.inference_mode(False):
            seen.append((T.is_grad_enabled(), (leaf * 2.0).requires_grad))
        seen.append((T.is_grad_enabled(), T.is_inference_mode_enabled()))
    seen.append((T.is_grad_enabled(), (leaf * 2.0).requires_grad))
    return seen


@pytest.mark.parametrize("op", ["mm", "bmm", "matmul"])
@differential
def test_a_product_backward_under_create_graph_computes_the_second_operands_gradient_first(T, op):
    """torch's mm and bmm backwards compute mat2's gradient before self's: under create_graph the
    products are recorded, and pack hooks around the pass see their saves, in that order."""
    batch = (1,) if op == "bmm" else ()
    a = T.linspace(-1.0, 1.0, 6, dtype=T.float64).reshape(batch + (2, 3)).requires_grad_()
    b = T.linspace(0.5, 2.0, 12, dtype=T.float64).reshape(batch + (3, 4)).requires_grad_()
    g = T.full(batch + (2, 4), 2.0, dtype=T.float64, requires_grad=True)
    out = getattr(T, op)(a, b)
    log = []
    with _packs(T, log):
        ga, gb = T.autograd.grad(out, [a, b], g, create_graph=True)
    return log, ga, gb, T.autograd.grad((ga * ga).sum() + (gb * gb).sum(), [a, b, g])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@differential(rtol=1e-9, atol=1e-12)
def test_gelu_backward_under_create_graph_is_one_node_saving_the_gradient_and_input(T, approximate):
    """torch records GELU's backward as GeluBackwardBackward0 (saving the incoming gradient and the
    input), whose input part is the incoming gradients times GELU's second derivative: a node hook
    on a first-order gradient sees that node, and the second and third orders agree."""
    from test_attention_graph import walk
    x = T.tensor([[0.5, -1.0, 3.0], [2.0, 0.1, -3.0]], dtype=T.float64, requires_grad=True)
    y = T.nn.functional.gelu(x * 1.0, approximate=approximate)
    log = []
    with _packs(T, log):
        (g,) = T.autograd.grad((y * y).sum(), [x], create_graph=True)
    (gg,) = T.autograd.grad((g * g).sum(), [x], create_graph=True)
    return log, walk(g), gg, T.autograd.grad(gg.sum(), [x])
