"""The meta device, differentially: meta tensors have shapes, dtypes, strides and autograd and no
values; factories, conversions, module construction, ``to_empty`` and ``load_state_dict(assign=True)``
behave as torch's; what would read values raises torch's exception classes."""
from __future__ import annotations

import tracemalloc
import warnings

import pytest

from difftest import catch, differential, warns


def describe(t):
    """What a meta tensor has: compared instead of values."""
    if not hasattr(t, "shape"):
        return t
    fn = t.grad_fn
    return (tuple(t.shape), str(t.dtype).split(".")[-1], t.device.type, t.is_meta, t.requires_grad,
            None if fn is None else type(fn).__name__)


def described(value):
    if isinstance(value, (tuple, list)):
        return [described(v) for v in value]
    return describe(value)


@differential
def test_factories_and_metadata(T):
    made = [T.empty(3, 4, device="meta"), T.zeros(2, device="meta", dtype=T.int64), T.ones((2, 3), device="meta"),
            T.full((2,), 1.5, device="meta"), T.rand(2, 2, device="meta"), T.randn(3, device="meta", requires_grad=True),
            T.randint(0, 5, (4,), device="meta"), T.arange(5, device="meta"), T.tensor([1, 2], device="meta"),
            T.empty(0, 3, device=T.device("meta")), T.eye(3, device="meta"), T.linspace(0, 1, 5, device="meta")]
    m = made[0]
    return ([describe(t) for t in made], m.stride(), m.is_cpu, m.numel(), m.nbytes, m.element_size(), m.dim(),
            str(m.device), repr(m.device), T.device("meta").type, m.get_device(), m.is_contiguous(), m.data_ptr(),
            m.storage_offset(), repr(T.device("meta:0")), T.device("meta") == "meta", T.device("meta") != T.device("cpu"),
            T.device("cpu") == T.device("cpu", 0), T.device("meta") == T.device("meta"), T.device("cpu") != "cpu",
            len({T.device("cpu"), T.device("cpu", 0), T.device("cpu")}), m.device == T.device("meta"))


@differential
def test_factories_do_not_draw_from_the_generator(T):
    T.manual_seed(0)
    T.rand(1000, device="meta")
    T.randn(3, device="meta")
    T.nn.Linear(30, 40, device="meta")
    return T.rand(3)


@differential
def test_repr(T):
    return [repr(t).replace("hookgrad.", "torch.") for t in (T.empty(3, 4, device="meta"), T.zeros((), device="meta"),
                              T.zeros(2, 3, device="meta", dtype=T.int64), T.ones(2, device="meta", dtype=T.float64),
                              T.zeros(2, device="meta", requires_grad=True), T.zeros(2, device="meta", requires_grad=True) * 2,
                              T.empty(0, device="meta"))]


@differential
def test_ops_give_meta_results(T):
    a = T.empty(3, 4, device="meta")
    b = T.empty(4, 5, device="meta")
    v = T.empty(4, device="meta")
    results = [a + 1, a * a, a - v, -a, a.exp(), a.sigmoid(), T.relu(a), a @ b, a @ v, a.sum(), a.sum(1),
               a.mean(0, keepdim=True), a.max(), a.amax(1), a.argmax(), a.argmax(1), a > 0, a == a, a.float().double(),
               a.to(T.int32), a.t(), a.reshape(12), a.view(2, 6), a[1:, ::2], a[0], a.unsqueeze(0), a.transpose(0, 1),
               a.permute(1, 0), a.expand(2, 3, 4), a.clone(), a.contiguous(), T.cat([a, a]), T.stack([a, a], 1),
               a.softmax(-1), a.log_softmax(0), T.where(a > 0, a, a), a.cumsum(0), a.var(0), a.std(), a.norm(),
               T.tanh(a), a.clamp(0, 1), a.abs(), a.pow(2), a / 2, a.any(), a.all(), a.split(2), a.chunk(2, 1),
               a.flatten(), a.squeeze(), a.repeat(2, 1), a.sort(1).values, a.topk(2).indices, a.new_zeros(2),
               a.new_empty((2, 3)), a.new_ones(1), a.new_full((2,), 3.0), a.new_tensor([1.0]), a.type_as(v),
               a.max(0).values, a.max(0).indices, a.min(1)[0], a[T.tensor([0, 2])], a[:, [1, 2]],
               a[T.empty(3, dtype=T.long, device="meta")], a.index_select(0, T.tensor([1])), a.median(),
               a.kthvalue(1).values, a.gather(1, T.empty(3, 2, dtype=T.long, device="meta"))]
    return [described(r) for r in results]


@differential
def test_nn_functional_on_meta(T):
    F = T.nn.functional
    x = T.empty(2, 3, 8, 8, device="meta")
    w = T.empty(4, 3, 3, 3, device="meta")
    seq = T.empty(5, 2, 6, device="meta")
    return [describe(r) for r in (
        F.conv2d(x, w, padding=1), F.conv2d(x, w, stride=2), F.conv1d(T.empty(2, 3, 9, device="meta"),
                                                                     T.empty(4, 3, 3, device="meta")),
        F.conv_transpose2d(x, T.empty(3, 4, 3, 3, device="meta"), stride=2), F.max_pool2d(x, 2), F.avg_pool2d(x, 2),
        F.linear(T.empty(5, 3, device="meta"), T.empty(4, 3, device="meta"), T.empty(4, device="meta")),
        F.batch_norm(x, T.zeros(3, device="meta"), T.ones(3, device="meta")), F.layer_norm(seq, (6,)),
        F.gelu(seq), F.dropout(seq, 0.5, training=False), F.embedding(T.empty(2, 3, dtype=T.long, device="meta"),
                                                                        T.empty(10, 4, device="meta")),
        F.adaptive_avg_pool2d(x, 1), F.mse_loss(seq, seq), F.cross_entropy(T.empty(4, 5, device="meta"),
                                                                          T.empty(4, dtype=T.long, device="meta")))]


@differential
def test_autograd_on_meta(T):
    x = T.empty(4, 3, device="meta", requires_grad=True)
    layer = T.nn.Linear(3, 2, device="meta")
    out = T.tanh(layer(x) * 2).sum()
    out.backward()
    grads = [x.grad, layer.weight.grad, layer.bias.grad]
    y = T.empty(3, device="meta", requires_grad=True)
    (g,) = T.autograd.grad((y * y).sum(), y, create_graph=True)
    hooked = []
    z = T.empty(2, device="meta", requires_grad=True)
    z.register_hook(lambda grad: hooked.append(describe(grad)))
    (z * 3).sum().backward()
    return describe(out), described(grads), describe(g), hooked, describe(z.grad)


@differential
def test_modules_built_on_meta(T):
    with T.device("meta"):
        model = T.nn.Sequential(T.nn.Conv2d(3, 4, 3), T.nn.BatchNorm2d(4), T.nn.ReLU(), T.nn.Flatten(),
                                T.nn.Linear(4 * 6 * 6, 10), T.nn.LayerNorm(10), T.nn.Dropout(0.1))
        emb = T.nn.Embedding(7, 3)
        made_inside = T.empty(2)
    outside = T.empty(2)
    model.train()
    out = model(T.empty(2, 3, 8, 8, device="meta"))
    described_state = {k: describe(v) for k, v in model.state_dict().items()}
    lin = T.nn.Linear(3, 4, device="meta", dtype=T.float64)
    return (described_state, describe(out), describe(emb.weight), describe(made_inside), describe(outside),
            describe(lin.weight), [describe(p) for p in T.nn.LSTM(4, 5, device="meta").parameters()])


@differential
def test_to_empty_and_moves(T):
    with T.device("meta"):
        model = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.BatchNorm1d(4))
    model.to_empty(device="cpu")
    after = [(n, tuple(p.shape), p.device.type, type(p).__name__) for n, p in model.named_parameters()]
    buffers = [(n, b.device.type, str(b.dtype).split(".")[-1]) for n, b in model.named_buffers()]
    back = model.to("meta")
    cpu = T.ones(2, 3)
    moved = [describe(cpu.to("meta")), describe(cpu.to(T.device("meta"), T.float64)),
             describe(T.ones(2, requires_grad=True).to("meta")), describe(T.empty_like(T.empty(2, device="meta"))),
             describe(T.empty_like(T.empty(2, device="meta"), device="cpu")), describe(T.zeros_like(cpu, device="meta")),
             describe(T.ones_like(T.empty(2, device="meta"), device="cpu")), describe(T.rand_like(T.empty(2, device="meta")))]
    lin = T.nn.Linear(2, 2).to("meta")
    return after, buffers, back is model, [p.device.type for p in model.parameters()], moved, describe(lin.weight), \
        T.ones_like(T.empty(2, device="meta"), device="cpu"), T.zeros_like(T.empty(2, device="meta"), device="cpu")


@differential
def test_skip_init(T):
    layer = T.nn.utils.skip_init(T.nn.Linear, 5, 3)
    return tuple(layer.weight.shape), layer.weight.device.type, layer.bias.device.type


@differential
def test_errors_where_torch_raises(T):
    m = T.empty(3, 4, device="meta")
    one = T.empty((), device="meta")
    g = T.empty(2, device="meta", requires_grad=True)
    out = []
    for fn in (m.item, one.item, m.tolist, m.numpy, m.cpu, lambda: m.to("cpu"), lambda: bool(one), lambda: float(one),
               lambda: int(one), lambda: m + T.ones(3, 4), lambda: T.ones(3, 4) + m, lambda: m.nonzero(),
               lambda: m[m > 0], lambda: T.ones(3, 4).copy_(m), g.numpy, lambda: T.device("nope"),
               lambda: m.unique(), lambda: T.equal(m, m), lambda: one.to("cuda"), lambda: T.allclose(m, m),
               lambda: m.unique_consecutive(), lambda: T.where(m > 0), lambda: m.masked_select(m > 0),
               lambda: T.is_nonzero(one), lambda: m.max().item()):
        out.append(catch(fn))
    # what torch allows: a CPU scalar with a meta tensor, a CPU tensor copied into a meta one
    ok = [describe(m + T.tensor(2.0)), describe(m.copy_(T.ones(3, 4))), describe(m * T.ones(()))]
    return out, ok


@differential
def test_bad_input_leaves_things_usable(T):
    m = T.empty(3, device="meta", requires_grad=True)
    caught = [catch(lambda: m + T.ones(3)), catch(m.item)]
    (m * 2).sum().backward()
    return caught, describe(m.grad), describe(m + 1)


@differential
def test_in_place_and_init_on_meta(T):
    w = T.empty(4, 3, device="meta")
    results = [describe(T.nn.init.kaiming_uniform_(w)), describe(T.nn.init.normal_(w)), describe(T.nn.init.zeros_(w)),
               describe(T.nn.init.ones_(w)), describe(T.nn.init.xavier_normal_(w)), describe(w.uniform_()),
               describe(w.add_(1)), describe(w.mul_(T.empty(4, 3, device="meta"))), describe(w.zero_()),
               describe(w.fill_(2)), describe(T.nn.init.trunc_normal_(w)), describe(T.nn.init.orthogonal_(w))]
    T.manual_seed(3)
    T.nn.init.normal_(T.empty(100, device="meta"))
    return results, T.rand(2)


def _module_for_assign(T):
    class Net(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = T.nn.Linear(3, 4)
            self.bn = T.nn.BatchNorm1d(4)

        def forward(self, x):
            return self.bn(self.fc(x))
    return Net


@pytest.mark.parametrize("swap", [False, True])
@differential
def test_load_state_dict_assign_onto_meta(T, swap):
    T.__future__.set_swap_module_params_on_conversion(swap)
    try:
        Net = _module_for_assign(T)
        T.manual_seed(0)
        net = Net()
        sd = net.state_dict()
        with T.device("meta"):
            meta_net = Net()
        result = meta_net.load_state_dict(sd, assign=True)
        x = T.randn(5, 3)
        return (str(result), [(n, p.device.type, type(p).__name__, p.requires_grad)
                              for n, p in meta_net.named_parameters()], meta_net(x), net(x))
    finally:
        T.__future__.set_swap_module_params_on_conversion(False)


@differential
def test_load_state_dict_copy_into_meta_warns(T):
    with T.device("meta"):
        m = T.nn.Linear(3, 5)
    sd = {k: T.zeros(v.shape) for k, v in m.state_dict().items()}
    result, categories = warns(m.load_state_dict, sd)
    return str(result), categories, describe(m.weight)


@differential
def test_deepcopy_and_detach_stay_meta(T):
    import copy
    with T.device("meta"):
        model = T.nn.Linear(2, 3)
    twin = copy.deepcopy(model)
    p = T.nn.Parameter(T.empty(2, device="meta"))
    return describe(twin.weight), describe(model.weight.detach()), describe(model.weight.data), describe(p), \
        type(p).__name__


def test_meta_tensors_cost_no_memory():
    import hookgrad
    tracemalloc.start()
    try:
        big = hookgrad.empty(4096, 4096, 64, device="meta")   # 4 GiB of float32 on the CPU
        total = (big * 2 + big).sum(-1)
        with hookgrad.device("meta"):
            layer = hookgrad.nn.Linear(16384, 16384)
        out = layer(hookgrad.empty(8, 16384, device="meta"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2 ** 20, peak
    assert total.shape == (4096, 4096) and out.shape == (8, 16384) and total.is_meta and out.is_meta


def test_a_cpu_op_pays_nothing_for_the_meta_device():
    """A CPU tensor's array is a plain ndarray: the meta checks are only in the MetaArray class."""
    import numpy as np
    import hookgrad
    x = hookgrad.ones(3)
    assert type((x * 2 + 1)._ndarray) is np.ndarray and not x.is_meta and x.is_cpu


# ---- wrapper subclasses (``Tensor._make_wrapper_subclass`` + ``__torch_dispatch__``) -----------------
def _wrapper_class(T, log):
    class Wrapper(T.Tensor):
        @staticmethod
        def __new__(cls, data):
            return T.Tensor._make_wrapper_subclass(cls, data.shape, dtype=data.dtype, device=data.device,
                                                   requires_grad=data.requires_grad, strides=data.stride())

        def __init__(self, data):
            self._data = data   # the name torch's tests use for the wrapped tensor

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            log.append((str(func), [t.__name__ for t in types]))

            def unwrap(t):
                return t._data if isinstance(t, Wrapper) else t

            def rewrap(t):
                return Wrapper(t) if isinstance(t, T.Tensor) and not isinstance(t, Wrapper) else t
            out = func(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in (kwargs or {}).items()})
            return tuple(rewrap(o) for o in out) if isinstance(out, tuple) else rewrap(out)
    return Wrapper


@differential
def test_wrapper_subclass_sees_aten_calls(T):
    log = []
    Wrapper = _wrapper_class(T, log)
    w = Wrapper(T.arange(6.0).reshape(2, 3))
    meta = (w.device.type, w.is_meta, tuple(w.shape), w.stride(), str(w.dtype).split(".")[-1], w.requires_grad,
            type(w).__name__)
    results = [w + 1, w * w, w.sum(), w.t(), T.mm(w, T.ones(3, 2)), w.detach(), w.clone(),
               T.nn.functional.linear(w, T.ones(4, 3)), w.relu()]
    values = [(type(r).__name__, r._data) for r in results]
    scalar = w.sum().item()
    return meta, values, scalar, log


@differential
def test_parameter_of_a_subclass_keeps_it(T):
    log = []
    Wrapper = _wrapper_class(T, log)

    class Plain(T.Tensor):
        pass

    p = T.nn.Parameter(Wrapper(T.ones(2)))
    q = T.nn.Parameter(Plain(T.ones(2)), requires_grad=False)
    r = T.nn.Parameter(T.ones(2))
    return ([type(x).__name__ for x in (p, q, r)], [isinstance(x, T.nn.Parameter) for x in (p, q, r)],
            [getattr(x, "_is_param", None) for x in (p, q)], p.requires_grad, q.requires_grad, log,
            isinstance(Wrapper(T.ones(1)), T.nn.Parameter))


@differential
def test_make_wrapper_subclass_refuses_a_non_tensor_class(T):
    class Undispatched(T.Tensor):
        pass
    return catch(T.Tensor._make_wrapper_subclass, int, (2,)), catch(T.Tensor._make_wrapper_subclass, T.Tensor, (2,)), \
        catch(T.Tensor._make_wrapper_subclass, Undispatched, (2,)), \
        describe(T.Tensor._make_wrapper_subclass(_wrapper_class(T, []), (2, 3), dtype=T.float64, device="meta"))


@differential
def test_subclass_keeping_its_tensor_as_underscore_data(T):
    # a subclass that stores the tensor it wraps as ``self._data`` (torch's own tests do): the name is
    # the subclass's own, and the tensor keeps working
    class Custom(T.Tensor):
        def __init__(self, data):
            super().__init__()
            self._data = data

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            kwargs = {} if kwargs is None else kwargs
            args = tuple(a._data if isinstance(a, cls) else a for a in args)
            out = func(*args, **kwargs)
            return cls(out) if isinstance(out, T.Tensor) else out

    class Identity(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    x = Custom(T.arange(4.0))
    y = Identity.apply(x)
    return type(y).__name__, (x * 2)._data, x._data, tuple(x.shape)


@differential
def test_to_other_as_tensor_and_loading_from_meta(T):
    m = T.empty(2, 3, device="meta")
    c = T.ones(2, 3, dtype=T.float64)
    moved = [describe(c.to(m)), describe(T.as_tensor(c, device="meta")), describe(T.as_tensor(m)),
             describe(T.as_tensor(c, device="cpu")), catch(m.to, c)]
    with T.device("meta"):
        source = T.nn.Linear(2, 3)
    target = T.nn.Linear(2, 3)
    loading = catch(target.load_state_dict, source.state_dict())
    return moved, loading, describe(T.nn.Linear(2, 3).to_empty(device="meta").weight)


@differential
def test_layers_and_optimizers_on_meta(T):
    with T.device("meta"):
        enc = T.nn.TransformerEncoderLayer(16, 4, 32, batch_first=True)
        mha = T.nn.MultiheadAttention(16, 4, batch_first=True)
        lstm = T.nn.LSTM(16, 8, batch_first=True)
        gru = T.nn.GRU(16, 8)
        gn = T.nn.GroupNorm(2, 4)
    x = T.empty(2, 5, 16, device="meta")
    img = T.empty(1, 3, 4, 4, device="meta")
    F = T.nn.functional
    outs = [enc(x), mha(x, x, x)[0], lstm(x)[0], lstm(x)[1][1], gru(x)[0], gn(T.empty(2, 4, 3, device="meta")),
            T.nn.Upsample(scale_factor=2)(img), T.nn.AdaptiveAvgPool2d((2, 2))(T.empty(1, 3, 5, 5, device="meta")),
            F.scaled_dot_product_attention(x, x, x), F.interpolate(img, size=(7, 7), mode="bilinear"),
            T.einsum("bij,bjk->bik", T.empty(2, 3, 4, device="meta"), T.empty(2, 4, 5, device="meta")),
            T.bmm(T.empty(2, 3, 4, device="meta"), T.empty(2, 4, 5, device="meta")), F.pad(img, (1, 1, 2, 2)),
            F.pad(img, (1, 1, 1, 1), mode="reflect"), T.empty(3, 4, device="meta").tril(), F.softplus(img)]
    lstm(x)[0].sum().backward()
    gru(x)[0].sum().backward()
    grads = [describe(p.grad) for p in list(lstm.parameters()) + list(gru.parameters())]
    logits = T.empty(4, 5, device="meta", requires_grad=True)
    F.cross_entropy(logits, T.empty(4, dtype=T.long, device="meta")).backward()
    steps = []
    for make in (lambda ps: T.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.1), lambda ps: T.optim.Adam(ps),
                 lambda ps: T.optim.AdamW(ps), lambda ps: T.optim.RMSprop(ps)):
        p = T.nn.Parameter(T.empty(3, device="meta"))
        p.grad = T.empty(3, device="meta")
        opt = make([p])
        opt.step()
        opt.step()
        steps.append((describe(p), sorted((k, describe(v)) for k, v in opt.state[p].items() if hasattr(v, "shape")
                                          and v.dim())))
    return [describe(o) for o in outs], describe(logits.grad), steps, grads


def test_the_dispatch_hook_goes_with_the_last_wrapper_instance():
    """Wrapper instances turn hookgrad's op hook on (their __torch_dispatch__ is fed from it); once the
    last one is gone, ops no longer pay for it."""
    import copy
    import gc
    import hookgrad
    from hookgrad.utils import _python_dispatch
    gc.collect()
    assert _python_dispatch._HOOK[0] is None
    Wrapper = _wrapper_class(hookgrad, [])
    w = Wrapper(hookgrad.ones(2))
    twin = copy.deepcopy(w)
    assert _python_dispatch._HOOK[0] is not None
    assert (twin + 1)._data.tolist() == [2.0, 2.0]
    del w
    gc.collect()
    assert _python_dispatch._HOOK[0] is not None   # the copy still lives
    del twin
    gc.collect()
    assert _python_dispatch._HOOK[0] is None


@differential
def test_deepcopy_of_a_wrapper_clones_it(T):
    import copy
    log = []
    Wrapper = _wrapper_class(T, log)
    w = Wrapper(T.arange(3.0))
    w.tag = "kept"
    twin = copy.deepcopy(w)
    return type(twin).__name__, twin._data, twin.tag, twin._data is w._data, log
