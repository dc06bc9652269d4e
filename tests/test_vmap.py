"""torch.func.vmap runs the function once, over batched tensors: hooks, prints and counters inside fire
once; values, per-sample gradients and errors as torch's."""

import pytest

from difftest import catch, differential


def _data(T, *shape):
    n = 1
    for s in shape:
        n *= s
    return T.linspace(-2.0, 3.0, n, dtype=T.float64).reshape(*shape)


@differential
def test_function_runs_once_with_per_example_shapes(T):
    seen = []

    def f(t):
        seen.append(tuple(t.shape))
        seen.append((t.dim(), t.numel(), t.size(-1), len(t)))
        return t * 2

    out = T.func.vmap(f)(_data(T, 4, 3, 2))
    return out, seen


@differential
def test_module_hooks_fire_once(T):
    T.manual_seed(0)
    net = T.nn.Sequential(T.nn.Linear(3, 5), T.nn.ReLU(), T.nn.Linear(5, 2)).double()
    log = []
    for i, m in enumerate(net):
        m.register_forward_pre_hook(lambda m, a, i=i: log.append(("pre", i, tuple(a[0].shape))))
        m.register_forward_hook(lambda m, a, o, i=i: log.append(("post", i, tuple(o.shape))))
    x = _data(T, 6, 3)
    out = T.func.vmap(net)(x)
    return log, (out - net(x)).abs().max() < 1e-12


@differential
def test_print_of_batched_tensor(T):
    printed = []

    def f(t):
        printed.append(str(t))
        printed.append(repr(t))
        return t

    T.func.vmap(f)(T.arange(6.0).reshape(2, 3))
    T.func.vmap(T.func.vmap(f))(T.arange(6.0).reshape(2, 3))
    return printed


@differential
def test_elementwise_and_broadcasting(T):
    x, y = _data(T, 4, 3), _data(T, 3) + 0.5
    z = _data(T, 2, 4, 3)
    vm = T.func.vmap
    return [vm(lambda a: (a * 2 + 1).sin() / (a.abs() + 1) - a ** 2)(x),
            vm(lambda a, b: T.where(a > b, a, b) + T.maximum(a, b) * a.clamp(-1, 1))(x, y.expand(4, 3)),
            vm(lambda a: a + y)(x),
            vm(lambda a: a * z)(x),
            vm(lambda a, b: a - b, in_dims=(0, None))(x, y),
            vm(lambda a, b: a * b, in_dims=(1, 0))(x, T.ones(3, 4, dtype=T.float64)),
            vm(lambda a: T.nn.functional.gelu(a) + T.relu(a) + T.sigmoid(a) + a.exp().log1p())(x),
            vm(lambda a: (a > 0).float() + a.masked_fill(a < 0, 7.0))(x),
            vm(lambda a: 1 - a)(x), vm(lambda a: 2 ** a)(x)]


@differential
def test_reductions(T):
    x = _data(T, 3, 4, 5)
    vm = T.func.vmap
    return [vm(lambda a: a.sum())(x), vm(lambda a: a.sum(1))(x), vm(lambda a: a.sum(-1, keepdim=True))(x),
            vm(lambda a: a.mean((0, 1)))(x), vm(lambda a: a.var(0))(x), vm(lambda a: a.std())(x),
            vm(lambda a: a.norm())(x), vm(lambda a: a.norm(dim=1))(x), vm(lambda a: a.max())(x),
            vm(lambda a: a.max(1).values)(x), vm(lambda a: a.argmax())(x), vm(lambda a: a.argmin(0))(x),
            vm(lambda a: a.amax(-1))(x), vm(lambda a: T.logsumexp(a, 1))(x), vm(lambda a: a.prod(0))(x),
            vm(lambda a: T.softmax(a, -1))(x), vm(lambda a: T.nn.functional.log_softmax(a, 0))(x),
            vm(lambda a: a.cumsum(1))(x), vm(lambda a: T.sum(a, dim=0))(x), vm(lambda a: a.mean())(x)]


@differential
def test_views_and_shape_ops(T):
    x = _data(T, 2, 3, 4)
    vm = T.func.vmap
    return [vm(lambda a: a.view(12))(x), vm(lambda a: a.reshape(4, -1))(x), vm(lambda a: a.permute(1, 0))(x),
            vm(lambda a: a.transpose(0, 1))(x), vm(lambda a: a.t())(x), vm(lambda a: a.T)(x),
            vm(lambda a: a.unsqueeze(-1))(x), vm(lambda a: a.unsqueeze(0).squeeze())(x),
            vm(lambda a: a[:1].squeeze(0))(x), vm(lambda a: a.expand(5, 3, 4))(x), vm(lambda a: a.flatten())(x),
            vm(lambda a: a.select(1, 2))(x), vm(lambda a: a[1])(x), vm(lambda a: a[:, 1:3])(x),
            vm(lambda a: a[..., None, 0])(x), vm(lambda a: a[T.tensor([2, 0])])(x),
            vm(lambda a: a.chunk(2, 1)[1])(x), vm(lambda a: a.unbind(0)[2])(x), vm(lambda a: a.narrow(1, 1, 2))(x),
            vm(lambda a: a.movedim(0, 1))(x), vm(lambda a: a.mT)(x), vm(lambda a: a.contiguous().clone())(x),
            vm(lambda a: a[1:], in_dims=1)(x), vm(lambda a: a * 1, in_dims=2, out_dims=1)(x)]


@differential
def test_matmul_family(T):
    a, b = _data(T, 4, 2, 3), _data(T, 3, 5)
    v = _data(T, 4, 3)
    vm = T.func.vmap
    return [vm(lambda m: m @ b)(a), vm(lambda m: T.mm(m, b))(a), vm(lambda m, n: m @ n, in_dims=(None, 0))(b.t(), v),
            vm(lambda u: u @ b)(v), vm(lambda u: b.t() @ u)(v), vm(lambda u, w: T.dot(u, w))(v, v),
            vm(lambda m: T.bmm(m.unsqueeze(0), b.unsqueeze(0)))(a), vm(lambda u: T.mv(b.t(), u))(v),
            vm(lambda m, n: m @ n)(a, _data(T, 4, 3, 2)),
            vm(lambda m: T.nn.functional.linear(m, b.t(), T.ones(5, dtype=T.float64)))(a),
            vm(lambda m: T.addmm(T.ones(2, 5, dtype=T.float64), m, b, beta=0.5, alpha=2.0))(a),
            vm(lambda u, w: T.nn.functional.linear(u, w))(v, _data(T, 4, 6, 3))]


@differential
def test_conv_cat_stack_losses(T):
    T.manual_seed(0)
    conv = T.nn.Conv2d(2, 3, 3, padding=1).double()
    images = _data(T, 4, 5, 2, 6, 6)
    vm = T.func.vmap
    x, y = _data(T, 4, 3), _data(T, 4, 3).flip(0)
    logits, target = _data(T, 4, 6, 5), T.tensor([[0, 1, 2, 3, 4, 0]] * 4)
    return [vm(conv)(images), vm(conv)(images[:, 0]),
            vm(lambda a, b: T.cat([a, b, a], 0))(x, y), vm(lambda a: T.stack([a, y[0]], 1))(x),
            vm(lambda a: T.cat([a.unsqueeze(0), T.zeros(1, 3, dtype=T.float64)]))(x),
            vm(lambda a, b: T.nn.functional.mse_loss(a, b))(x, y),
            vm(lambda a, b: T.nn.functional.l1_loss(a, b, reduction="sum"))(x, y),
            vm(lambda a, b: T.nn.functional.mse_loss(a, b, reduction="none"))(x, y),
            vm(lambda a, t: T.nn.functional.cross_entropy(a, t))(logits, target),
            vm(lambda a, t: T.nn.functional.cross_entropy(a, t, reduction="none"))(logits, target),
            vm(lambda a, t: T.nn.functional.cross_entropy(a, t))(logits[:, 0], target[:, 0])]


@differential
def test_ops_without_a_rule_run_per_slice_inside_one_call(T):
    x = _data(T, 3, 4)
    calls = []

    def f(a):
        calls.append(1)
        return T.outer(a, a).diagonal() + T.flip(a, [0]) + T.kron(a[:2], T.ones(2, dtype=T.float64))

    return T.func.vmap(f)(x), len(calls)


@differential
def test_nested_vmap_and_dims(T):
    x = _data(T, 2, 3, 4)
    vm = T.func.vmap
    inner_calls = []

    def f(a, b):
        inner_calls.append(tuple(a.shape))
        return (a * b).sum(), a + b

    out = vm(vm(f, in_dims=(0, None)), in_dims=(0, 1), out_dims=(0, 1))(x, _data(T, 4, 2))
    return (out, inner_calls, vm(vm(lambda a: a.sum(0)), in_dims=2)(x),
            vm(lambda d: d["a"] * d["b"][0], in_dims=({"a": 0, "b": None},))({"a": x, "b": [T.ones(4, dtype=T.float64)]}),
            vm(lambda a: (a, a.shape[0]), out_dims=(0, None))(x))


@differential
def test_chunk_size_calls_once_per_chunk(T):
    calls = []
    lin = T.nn.Linear(3, 2).double()
    lin.register_forward_hook(lambda m, i, o: calls.append(tuple(o.shape)))
    out = T.func.vmap(lin, chunk_size=3)(_data(T, 7, 3))
    return (out - lin(_data(T, 7, 3))).abs().max() < 1e-12, calls


@differential
def test_per_sample_gradients(T):
    T.manual_seed(0)
    model = T.nn.Sequential(T.nn.Linear(4, 6), T.nn.Tanh(), T.nn.Linear(6, 3)).double()
    fired = []
    model[0].register_forward_hook(lambda m, i, o: fired.append(tuple(o.shape)))
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = _data(T, 5, 4), T.tensor([0, 2, 1, 1, 0])

    def loss(p, xb, yb):
        out = T.func.functional_call(model, p, (xb.unsqueeze(0),))
        return T.nn.functional.cross_entropy(out, yb.unsqueeze(0))

    per_sample = T.func.vmap(T.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    one = T.func.grad(loss)(params, x[3], y[3])
    values = T.func.vmap(T.func.grad_and_value(lambda w, a: ((a @ w) ** 2).mean()), in_dims=(None, 0))(
        T.ones(4, 2, dtype=T.float64), x)
    return per_sample, one, fired, values


@differential
def test_jacobians_through_vmap(T):
    x = _data(T, 3, 4)
    f = lambda a: a.sin() * a.sum()
    out, vjp_fn = T.func.vjp(lambda a: a.exp() * 2, x[0])
    y = x[0].clone().requires_grad_()
    z = y.sin() * y
    return (T.func.vmap(T.func.jacrev(f))(x), T.func.vmap(vjp_fn)(T.eye(4, dtype=T.float64)),
            T.func.vmap(lambda v: T.autograd.grad(z, y, v, retain_graph=True)[0])(T.eye(4, dtype=T.float64)),
            T.func.grad(lambda a: T.func.vmap(lambda r: (r ** 3).sum())(a).sum())(x))


@differential
def test_errors(T):
    x = _data(T, 2, 3)
    unbatched = T.zeros(3, dtype=T.float64)
    vm = T.func.vmap

    def control_flow(a):
        return a if a.sum() > 0 else -a

    results = [catch(vm(lambda a: a.item()), x), catch(vm(control_flow), x), catch(vm(lambda a: float(a.sum())), x),
               catch(vm(lambda a: unbatched.mul_(a)), x), catch(vm(lambda a: unbatched.copy_(a)), x),
               catch(vm(lambda a: a + T.randn(3, dtype=T.float64)), x),
               catch(vm(lambda a: T.nn.functional.dropout(a, 0.5)), x),
               catch(vm(lambda a: a, in_dims=2), x), catch(vm(lambda a: 3), x),
               catch(vm(lambda a, b: a + b), x, T.ones(3, 3)), catch(lambda: vm(lambda a: a, chunk_size=0)(x)),
               catch(lambda: vm(lambda a: a, randomness="bad")(x))]
    # the model, the graph and later vmaps still work after an error
    return results, vm(lambda a: a * 2)(x), unbatched


@differential
def test_inplace_on_batched_tensor(T):
    x = _data(T, 3, 4)

    def f(a):
        b = a.clone()
        b.add_(1.0)
        b.mul_(a)
        b[0] = 5.0
        b += T.ones(4, dtype=T.float64)
        return b

    return T.func.vmap(f)(x)


def test_randomness_same_and_different():
    import hookgrad as T
    x = T.zeros(4, 3)
    T.manual_seed(0)
    same = T.func.vmap(lambda a: a + T.rand(3), randomness="same")(x)
    assert tuple(same.shape) == (4, 3) and bool((same == same[0]).all())
    different = T.func.vmap(lambda a: a + T.rand(3), randomness="different")(x)
    assert tuple(different.shape) == (4, 3) and not bool((different == different[0]).all())
    dropped = T.func.vmap(lambda a: T.nn.functional.dropout(a + 1, 0.5), randomness="different")(T.zeros(64, 8))
    assert bool(((dropped == 0) | (dropped == 2)).all()) and 0 < int((dropped == 0).sum()) < 64 * 8
    evaluated = T.func.vmap(lambda a: T.nn.functional.dropout(a, 0.5, training=False))(x + 1)
    assert bool((evaluated == 1).all())


def test_batched_tensors_are_not_an_overloading_subclass():
    """The batching mode is pushed only while a vmap runs: plain programs keep the fast path."""
    import hookgrad as T
    from hookgrad._C import _torch_function as tf
    T.func.vmap(lambda a: a * 2)(T.ones(2, 3))
    before = tf.LIVE[0]
    T.func.vmap(lambda a: a.sum())(T.ones(2, 3))
    assert tf.LIVE[0] == before


@pytest.mark.parametrize("batch", [1, 5])
def test_vmap_matches_a_loop_on_many_ops(batch):
    import hookgrad as T
    x = T.randn(batch, 3, 4)
    ops = [lambda a: a.softmax(0) @ a.t(), lambda a: a.var(1, keepdim=True) * a.flatten(0).view(3, 4),
           lambda a: T.stack([a, a.exp()]).sum(0).amax(), lambda a: a.unsqueeze(1).expand(3, 2, 4).reshape(6, 4)]
    for op in ops:
        got = T.func.vmap(op)(x)
        want = T.stack([op(x[i]) for i in range(batch)])
        assert T.allclose(got, want, atol=1e-6), op


@differential
def test_tensor_hook_inside_vmap_of_grad_fires_once(T):
    log = []
    w = T.ones(3, 2, dtype=T.float64)

    def f(a):
        a = a * 1
        a.register_hook(lambda g: log.append(tuple(g.shape)))
        a.register_hook(lambda g: g * 2)
        return (a @ w).pow(2).sum()

    return T.func.vmap(T.func.grad(f))(_data(T, 4, 3)), log


@differential
def test_autograd_function_inside_vmap(T):
    log = []

    class Square(T.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(a):
            return a * a

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            log.append("backward")
            return 2 * g * ctx.saved_tensors[0]

    class NoRule(Square):
        generate_vmap_rule = False

    class OldStyle(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = _data(T, 4, 3)
    values = T.func.vmap(Square.apply)(x)
    grads = T.func.vmap(T.func.grad(lambda a: Square.apply(a).sum()))(x)
    return (values, grads, catch(T.func.vmap(NoRule.apply), x), catch(T.func.vmap(OldStyle.apply), x))


@differential
def test_module_backward_hook_inside_vmap_of_grad_refused(T):
    lin = T.nn.Linear(3, 2).double()
    log = []
    lin.register_full_backward_hook(lambda m, gi, go: log.append("hook"))
    x = _data(T, 4, 3)
    refused = catch(T.func.vmap(T.func.grad(lambda a: lin(a).sum())), x)
    # forward-only vmap with the hook registered still runs once
    return refused, T.func.vmap(lin)(x).shape, log


@differential
def test_custom_ops_inside_vmap(T):
    import numpy as np

    @T.library.custom_op("vmaptest::numpy_sin", mutates_args=())
    def numpy_sin(x: T.Tensor) -> T.Tensor:
        return T.from_numpy(np.sin(x.numpy()))

    @T.library.custom_op("vmaptest::twice", mutates_args=())
    def twice(x: T.Tensor, y: T.Tensor) -> T.Tensor:
        return x * 2 + y

    calls = []

    @twice.register_vmap
    def _(info, in_dims, x, y):
        calls.append((info.batch_size, in_dims))
        x = x if in_dims[0] is not None else x.unsqueeze(0)
        y = y if in_dims[1] is not None else y.unsqueeze(0)
        return x * 2 + y, 0

    x = _data(T, 2, 3)
    return (T.func.vmap(numpy_sin)(x), T.func.vmap(twice, in_dims=(0, None))(x, T.ones(3, dtype=T.float64)),
            T.func.vmap(T.func.vmap(twice))(x, x), calls)


@differential
def test_debug_unwrap(T):
    seen = []

    def f(a):
        seen.append((tuple(T.func.debug_unwrap(a).shape), tuple(T.func.debug_unwrap(a, recurse=False).shape)))
        return a

    T.func.vmap(T.func.vmap(f))(T.arange(6.0).reshape(2, 3))
    return seen, T.func.debug_unwrap(T.ones(2))


@differential
def test_common_modules(T):
    T.manual_seed(0)
    nn = T.nn
    x = _data(T, 3, 2, 4, 6, 6).float()
    modules = [nn.Sequential(nn.Conv2d(4, 3, 3), nn.BatchNorm2d(3)).eval(), nn.LayerNorm(6), nn.GroupNorm(2, 4),
               nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(1), nn.Dropout(0.5).eval(),
               nn.Sequential(nn.Flatten(), nn.Linear(144, 3)), nn.Upsample(scale_factor=2), nn.ConvTranspose2d(4, 2, 2)]
    results = []
    for m in modules:
        out = T.func.vmap(m)(x)
        results.append((tuple(out.shape), (out - T.stack([m(x[i]) for i in range(3)])).abs().max() < 1e-5))
    results.append(catch(T.func.vmap(nn.BatchNorm2d(4)), x))
    results.append(tuple(T.func.vmap(T.func.replace_all_batch_norm_modules_(nn.BatchNorm2d(4)))(x).shape))
    return results


@differential
def test_forward_mode_and_nested_transforms_inside_vmap(T):
    x = _data(T, 4, 3)
    f = lambda a: (a.sin() * a.sum()).sum()
    return (T.func.vmap(T.func.hessian(f))(x), T.func.vmap(T.func.jacfwd(lambda a: a.sin() * 2))(x),
            T.func.vmap(lambda a, t: T.func.jvp(lambda b: b.exp(), (a,), (t,))[1])(x, x * 0 + 1),
            T.func.jacrev(T.func.vmap(lambda a: a.sin() * a.sum()))(x[:2]),
            T.func.vmap(T.func.grad(T.func.grad(lambda s: s ** 3)))(x[:, 0]))


@differential
def test_randomness_structure(T):
    zeros = T.zeros(4, 3)
    same = T.func.vmap(lambda a: a + T.rand(3), randomness="same")(zeros)
    different = T.func.vmap(lambda a: a + T.rand(3), randomness="different")(zeros)
    factory = T.func.vmap(lambda a: T.rand(3), randomness="same")(zeros)
    return (bool((same == same[0]).all()), bool((different == different[0]).all()), tuple(same.shape),
            tuple(different.shape), tuple(factory.shape), bool((factory == factory[0]).all()))


@differential
def test_backward_inside_a_transform_and_escaped_tensors(T):
    w = T.ones(3, requires_grad=True)

    def f(a):
        loss = (a * w).sum()
        loss.backward()
        return loss

    escaped = []
    T.func.vmap(lambda a: escaped.append(a) or a)(T.ones(2, 3))
    return (catch(T.func.vmap(f), T.ones(2, 3)), catch(T.func.grad(lambda a: f(a)), T.ones(3)), w.grad,
            catch(lambda: escaped[0] + 1))


@differential
def test_model_ensembling_with_stacked_parameters(T):
    def make():
        return T.nn.Sequential(T.nn.Conv2d(1, 2, 3), T.nn.ReLU(), T.nn.Flatten(), T.nn.Linear(8, 3)).double()

    models = [make() for _ in range(4)]
    for k, m in enumerate(models):
        for p in m.parameters():
            p.data = T.linspace(-1, 1, p.numel(), dtype=T.float64).reshape(p.shape) * (k + 1) / 4
    params, buffers = T.func.stack_module_state(models)

    def f(p, b, x):
        return T.func.functional_call(models[0], (p, b), (x,))

    x = _data(T, 2, 1, 4, 4)
    same_input = T.func.vmap(f, in_dims=(0, 0, None))(params, buffers, x)
    own_inputs = T.func.vmap(f)(params, buffers, _data(T, 4, 2, 1, 4, 4))
    return same_input.detach(), own_inputs.detach()


@differential
def test_randomness_same_with_an_explicit_generator_inside_a_transform(T):
    # the draw comes from the generator passed in (not the default one); under grad the parameters
    # reach the random op as they do in torch, and the generator advances by one draw for the whole call
    probs = T.softmax(_data(T, 8, 3) / 7, 1)

    def pseudo_loss(w, v, gen):
        q = T.softmax(probs * w, 1)
        sample = q.detach().multinomial(num_samples=2, replacement=True, generator=gen)
        noise = T.normal(T.zeros(3, dtype=T.float64), 1.0, generator=gen)
        return (q * sample.sum() * v).sum() + noise.sum()

    gen = T.Generator().manual_seed(3)
    grads = T.func.vmap(T.func.grad(pseudo_loss), in_dims=(None, 0, None), randomness="same")(
        T.ones(3, dtype=T.float64), _data(T, 4), gen)
    return grads, T.rand(2, generator=gen)
