"""The names that only their neighbours' tests reached: aliases, in-place variants, comparison and
bitwise families, the rarer layers and functional forms, distributions' transforms and the data
utilities, each run on torch and on hookgrad and compared (values, dtypes, gradients, errors)."""
from __future__ import annotations

import numpy as np
import pytest

from difftest import catch, differential


def _x(T, *shape, seed=0, grad=False, positive=False, dtype="float64"):
    rng = np.random.RandomState(seed)
    a = rng.rand(*shape) * 0.8 + 0.1 if positive else rng.randn(*shape)
    return T.tensor(a, dtype=getattr(T, dtype), requires_grad=grad)


def _ints(T, *shape, seed=0, low=0, high=8):
    return T.tensor(np.random.RandomState(seed).randint(low, high, shape))


def _with_grads(T, fn, *inputs):
    out = fn(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    total = sum((o.double() * (1 + T.arange(o.numel(), dtype=T.float64).reshape(o.shape) / 7)).sum()
                for o in outs if o.requires_grad)
    grads = T.autograd.grad(total, [t for t in inputs if t.requires_grad], allow_unused=True)
    return out, grads


UNARY_ALIASES = ["arccos", "arcsin", "arctan", "arccosh", "arcsinh", "arctanh", "negative", "fix", "absolute"]


@pytest.mark.parametrize("name", UNARY_ALIASES)
@differential
def test_unary_aliases(T, name):
    shift = 1.5 if name == "arccosh" else 0.0
    scale = 0.9 if name in ("arccos", "arcsin", "arctanh") else 2.0
    x = _x(T, 3, 4, positive=True, grad=True)
    fn = lambda t: getattr(T, name)(t * scale + shift)  # noqa: E731
    y = x.detach().clone() * scale + shift
    inplace = getattr(y, name + "_")()
    return _with_grads(T, fn, x), getattr(x * scale + shift, name)(), inplace, y


BINARY_ALIASES = ["divide", "multiply", "subtract", "greater", "greater_equal", "less", "less_equal", "not_equal",
                  "eq", "ne", "float_power", "true_divide"]


@pytest.mark.parametrize("name", BINARY_ALIASES)
@differential
def test_binary_aliases(T, name):
    a, b = _x(T, 3, 1, seed=1, positive=True), _x(T, 4, seed=2, positive=True)
    result = [getattr(T, name)(a, b), getattr(a, name)(b), getattr(T, name)(a, 2)]
    c = a.clone().expand(3, 4).contiguous()
    if name not in ("float_power",):
        getattr(c, name + "_")(b)
    else:
        c = catch(lambda: c.float().float_power_(b))
    return result, c


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or",
                                  "logical_xor", "bitwise_left_shift", "bitwise_right_shift"])
@differential
def test_bitwise_and_logical_families(T, name):
    a, b = _ints(T, 3, 4, seed=1), _ints(T, 4, seed=2, high=3)
    bools = (a > 3, b > 1)
    out = [getattr(T, name)(a, b), getattr(a, name)(b), catch(lambda: getattr(T, name)(*bools)),
           catch(lambda: getattr(T, name)(a, 1))]
    c = a.clone()
    getattr(c, name + "_")(b)
    return out, c, catch(lambda: getattr(T, name)(a.double(), b))


@differential
def test_bitwise_not_and_logical_not(T):
    a = _ints(T, 3, 4, low=-4)
    c, d = a.clone(), (a > 0).clone()
    c.bitwise_not_()
    d.logical_not_()
    return (T.bitwise_not(a), T.bitwise_not(a > 0), T.logical_not(a), a.logical_not(), c, d,
            catch(lambda: T.bitwise_not(a.double())))


@differential
def test_nan_reductions_and_classification(T):
    x = T.tensor([[1.0, float("nan"), -2.0], [float("inf"), 3.0, float("-inf")]], dtype=T.float64)
    g = T.tensor([[1.0, float("nan"), -2.0], [0.5, 3.0, 4.0]], dtype=T.float64, requires_grad=True)
    return (T.nansum(x[:, :2]), T.nansum(x, 1), x.nansum(0, keepdim=True), T.nanmean(g), g.nanmean(1),
            T.isinf(x), T.isneginf(x), T.isposinf(x), x.isneginf(), _with_grads(T, lambda t: t.nansum() + t.nanmean(0).sum(), g))


@differential
def test_shape_helpers(T):
    x = _x(T, 2, 3, 4, grad=True)
    return (_with_grads(T, lambda t: T.moveaxis(t, 0, -1), x), x.moveaxis((0, 1), (2, 0)).shape,
            _with_grads(T, lambda t: T.fliplr(t[0]) * T.flipud(t[1]), x), T.broadcast_shapes((2, 1), (3, 1, 4)),
            _with_grads(T, lambda t: T.broadcast_to(t[0, 0], (3, 4)), x),
            _with_grads(T, lambda t: T.hstack([t[0], t[1]]) + 0, x), [m.shape for m in T.meshgrid(T.arange(3), T.arange(2), indexing="xy")],
            T.meshgrid(T.arange(3.0), T.arange(2.0), indexing="ij"), _with_grads(T, lambda t: T.concat([t, t], 1), x),
            T.concatenate([x, x], dim=-1).shape, catch(lambda: T.broadcast_shapes((2, 3), (4,))),
            catch(lambda: T.fliplr(T.arange(3))))


@differential
def test_creation_and_casting_helpers(T):
    base = T.tensor([1.5, -2.0], dtype=T.float64)
    return (T.logspace(0, 2, 5), T.logspace(-1, 1, 3, base=2.0, dtype=T.float32), T.asarray([1, 2, 3]),
            T.asarray(np.array([1.0, 2.0])), T.can_cast(T.float64, T.int32), T.can_cast(T.int32, T.float64),
            base.new_full((2, 2), 7), base.new_tensor([1, 2]), base.byte(), base.char(), base.short(),
            base.ndimension(), base.nelement(), base.reshape_as(T.zeros(2, 1)))


@differential
def test_fused_multiply_adds_and_their_in_place_forms(T):
    a, b, c = _x(T, 3, 4, grad=True), _x(T, 3, 4, seed=1, grad=True), _x(T, 3, 4, seed=2, positive=True, grad=True)
    m, v = _x(T, 3, 5, seed=3, grad=True), _x(T, 5, 4, seed=4, grad=True)
    out = _with_grads(T, lambda a, b, c, m, v: (T.addcdiv(a, b, c, value=0.5), a.addcdiv(b, c), T.addcmul(a, b, c, value=-2),
                                                 T.ger(a[0], b[1]), T.clamp_max(a, 0.3), a.clamp_max(b)), a, b, c, m, v)
    d = a.detach().clone()
    d.addcdiv_(b.detach(), c.detach(), value=2).addcmul_(b.detach(), c.detach(), value=0.25)
    d.addmm_(m.detach(), v.detach(), beta=0.5, alpha=2)
    d.addr_(a.detach()[:, 0], b.detach()[0])
    e = _x(T, 2, 3, 4).baddbmm_(_x(T, 2, 3, 5, seed=5), _x(T, 2, 5, 4, seed=6))
    return out, d, e


@differential
def test_scatter_family_in_place(T):
    index = T.tensor([[0, 1, 2, 0], [2, 0, 0, 1]])
    src = _x(T, 2, 4, seed=3)
    x = _x(T, 3, 4).clone()
    x.scatter_(0, index, src)
    y = _x(T, 3, 4).clone()
    y.scatter_add_(0, index, src)
    z = _x(T, 3, 4, grad=True)
    reduce = _with_grads(T, lambda t, s: t.scatter_reduce(0, index, s, reduce="amax", include_self=False), z,
                         _x(T, 2, 4, seed=3, grad=True))
    w = _x(T, 3, 4).clone()
    w.index_add_(1, T.tensor([0, 3]), _x(T, 3, 2, seed=4), alpha=2)
    return x, y, reduce, w, _x(T, 3, 4).clone().scatter_(1, index[:, :2], 5.0)


@differential
def test_in_place_signs_and_remainders(T):
    x = _x(T, 3, 4) * 3
    c = [x.clone() for _ in range(6)]
    c[0].sgn_()
    c[1].sign_()
    c[2].remainder_(1.5)
    c[3].fmod_(-1.25)
    c[4].floor_divide_(0.75)
    c[5].absolute_()
    return c, x.divide(2, rounding_mode="floor"), x.clone().divide_(3, rounding_mode="trunc"), x.clone().multiply_(2), x.clone().subtract_(1, alpha=3)


@differential
def test_views_and_flags(T):
    x = _x(T, 2, 3, dtype="float64")
    z = T.complex(x, x.flip(1))
    leaf = _x(T, 3, grad=True)
    mid = leaf * 2
    mid.retain_grad()
    (mid ** 2).sum().backward()
    return z.mH, z.adjoint(), x.mH, mid.retains_grad, leaf.retains_grad, mid.grad, x.is_meta, x.dim_order()


@differential
def test_cdist(T):
    a, b = _x(T, 2, 3, 4, grad=True), _x(T, 2, 5, 4, seed=1, grad=True)
    big_a, big_b = _x(T, 30, 4, seed=2, grad=True), _x(T, 3, 27, 4, seed=3, grad=True)
    same = _x(T, 2, 3)
    return ([_with_grads(T, lambda a, b: T.cdist(a, b, p=p), a, b) for p in (0.0, 0.5, 1.0, 2.0, 3.0, float("inf"))],
            _with_grads(T, lambda a, b: T.cdist(a, b), big_a, big_b),
            _with_grads(T, lambda a, b: T.cdist(a, b, compute_mode="use_mm_for_euclid_dist"), a, b),
            _with_grads(T, lambda a, b: T.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist"), big_a, big_b),
            T.cdist(same, same), T.cdist(T.zeros(2, 0), T.zeros(3, 0)), T.cdist(T.zeros(0, 3), T.zeros(2, 3)).shape,
            [catch(bad) for bad in (lambda: T.cdist(a, b, p=-1), lambda: T.cdist(a, b[..., :3]), lambda: T.cdist(a[0, 0], b),
                                    lambda: T.cdist(a, b, compute_mode="x"), lambda: T.cdist(a.long(), b.long()),
                                    lambda: T.cdist(a.half(), b.half()), lambda: T.cdist(a.float(), b))])


@pytest.mark.parametrize("p", [1.0, 2.0, float("inf")])
@differential
def test_cdist_gradient_at_zero_distance_and_no_double_backward(T, p):
    x = T.zeros(1, 2, dtype=T.float64, requires_grad=True)
    (g,) = T.autograd.grad(T.cdist(x, x.detach(), p=p).sum(), x, create_graph=True)
    return g, catch(lambda: g.sum().backward())


# names spelled out (not built from the dim), so that the coverage count sees them
ADAPTIVE = {"adaptive_max_pool1d": "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d": "adaptive_max_pool2d_with_indices",
            "adaptive_max_pool3d": "adaptive_max_pool3d_with_indices", "adaptive_avg_pool3d": None}


@pytest.mark.parametrize("name", sorted(ADAPTIVE))
@differential
def test_adaptive_pools(T, name):
    nd = int(name[-2])
    x = _x(T, 2, 3, *([7, 5, 6][:nd]), grad=True)
    size = (4, 2, 3)[:nd] if nd > 1 else 3
    fn = getattr(T.nn.functional, name)
    result = _with_grads(T, lambda t: fn(t, size), x)
    if ADAPTIVE[name]:
        out, idx = fn(x, size, return_indices=True)
        with_indices = getattr(T.nn.functional, ADAPTIVE[name])(x, size)
        return result, idx, with_indices[1]
    return result


UNPOOL = [(1, "max_pool1d_with_indices", "max_unpool1d", "MaxUnpool1d"),
          (2, "max_pool2d_with_indices", "max_unpool2d", "MaxUnpool2d"),
          (3, "max_pool3d_with_indices", "max_unpool3d", "MaxUnpool3d")]


@pytest.mark.parametrize("names", UNPOOL, ids=str)
@differential
def test_max_pool_with_indices_and_unpool(T, names):
    nd, pool, unpool, layer_name = names
    F = T.nn.functional
    x = _x(T, 2, 3, *([6, 4, 4][:nd]), grad=True)
    out, idx = getattr(F, pool)(x, 2)
    unpooled = getattr(F, unpool)(out, idx, 2)
    layer = getattr(T.nn, layer_name)(2)
    grads = T.autograd.grad((unpooled * unpooled).sum(), x)
    return out, idx, unpooled, layer(out, idx, output_size=x.shape), grads


@pytest.mark.parametrize("names", [("fractional_max_pool2d_with_indices", 2), ("fractional_max_pool3d_with_indices", 3)])
@differential
def test_fractional_max_pool_with_indices(T, names):
    name, nd = names
    x = _x(T, 1, 2, *([6, 7, 6][:nd]), grad=True)
    samples = T.tensor(np.random.RandomState(4).rand(1, 2, nd), dtype=T.float64)
    out, idx = getattr(T.nn.functional, name)(x, 2, output_size=(3,) * nd, _random_samples=samples)
    return out, idx, T.autograd.grad(out.sum(), x)


INPLACE = ["absolute_", "addcmul_", "bitwise_and_", "bitwise_xor_", "divide_", "floor_divide_", "fmod_",
           "greater_equal_", "less_", "multiply_", "remainder_", "sgn_", "sign_", "subtract_", "tril_", "triu_",
           "true_divide_"]


@pytest.mark.parametrize("name", INPLACE)
@differential
def test_in_place_forms_match_their_functions(T, name):
    """Each in-place method writes what its function returns into the tensor, bumps its version and
    returns the tensor itself; a leaf that requires grad refuses."""
    integral = name.startswith("bitwise")
    x = _ints(T, 3, 4, low=-5, high=6) if integral else _x(T, 3, 4) * 3
    other = _ints(T, 4, seed=1, low=1, high=4) if integral else _x(T, 4, seed=1, positive=True) + 0.5
    args = {"addcmul_": (other, other), "tril_": (), "triu_": (1,), "sgn_": (), "sign_": (), "absolute_": ()}.get(name, (other,))
    y = x.clone()
    version = y._version
    returned = getattr(y, name)(*args)
    leaf = _x(T, 3, 4, grad=True)
    return y, returned is y, y._version > version, catch(lambda: getattr(leaf, name)(*[
        a.double() if not integral and hasattr(a, "double") else a for a in args]))


@differential
def test_shape_and_index_functions(T):
    x = _x(T, 3, 4, grad=True)
    rows, cols = T.tril_indices(4, 3, 1), T.triu_indices(3, 4, -1)
    return (_with_grads(T, lambda t: T.swapaxes(t, 0, 1) * T.swapdims(t, 1, 0), x), x.swapdims(0, 1),
            _with_grads(T, lambda t: T.take_along_dim(t, T.tensor([[0, 2, 1, 3]]), dim=1), x),
            x.take_along_dim(T.tensor([[1], [0], [2]]), 1), [t.shape for t in T.tensor_split(x, 3, dim=1)],
            T.tensor_split(x, [1, 3]), x.tensor_split(2), _with_grads(T, lambda t: T.tile(t, (2, 1, 2)), x),
            T.vstack([x, x]).shape, T.unsqueeze(x, -1).shape, rows, cols, x.to(T.short).dtype, x.short(),
            x.to_dense() is x, T.range(0, 3, 0.5), T.scatter_reduce(x, 1, T.tensor([[0, 0, 1, 1]] * 3), x, "sum"))


@differential
def test_rarer_functional_forms(T):
    F = T.nn.functional
    x = _x(T, 2, 4, 5, 5, grad=True)
    return [_with_grads(T, fn, x) for fn in (lambda t: F.glu(t, 1), lambda t: F.local_response_norm(t, 3),
                                              lambda t: F.softshrink(t, 0.3), lambda t: F.upsample(t, scale_factor=2),
                                              lambda t: F.upsample_bilinear(t, size=(7, 6)),
                                              lambda t: F.upsample_nearest(t, scale_factor=2),
                                              lambda t: F.channel_shuffle(t, 2))], catch(
        lambda: T.autograd.grad(F.native_channel_shuffle(x, 2).sum(), x)), F.native_channel_shuffle(x, 2)


@differential
def test_rarer_layers(T):
    T.manual_seed(0)
    x3 = _x(T, 1, 2, 3, 4, 4, grad=True)
    x1 = _x(T, 2, 3, 5, grad=True, dtype="float32")
    layers = [(T.nn.CircularPad3d((1, 0, 2, 1, 0, 1)), x3), (T.nn.ReflectionPad3d(1), x3),
              (T.nn.ReplicationPad1d((2, 1)), x1)]
    out = [_with_grads(T, layer, x) for layer, x in layers]
    drop = T.nn.FeatureAlphaDropout(0.3).eval()
    return out, drop(x1), T.nn.SyncBatchNorm(3).eval()(x1)


@pytest.mark.parametrize("case", range(8))
@differential
def test_distribution_transforms(T, case):
    tr = T.distributions.transforms
    x = _x(T, 3, 4, grad=True, seed=case)
    transform = [tr.AffineTransform(1.5, -2.0), tr.ExpTransform(), tr.SigmoidTransform(), tr.TanhTransform(),
                 tr.SoftplusTransform(), tr.PowerTransform(2.0), tr.ComposeTransform([tr.ExpTransform(), tr.AffineTransform(0.0, 3.0)]),
                 tr.AbsTransform()][case]
    inp = x.abs() + 0.1 if case == 5 else x
    y = transform(inp)
    out = [y, transform.sign if case not in (7,) else None, transform.domain.check(inp)]
    if case != 7:
        out += [transform.inv(y), transform.log_abs_det_jacobian(inp, y)]
    return out, T.autograd.grad(y.sum(), x)


@differential
def test_structured_transforms(T):
    tr = T.distributions.transforms
    x = _x(T, 2, 3, grad=True)
    stick = tr.StickBreakingTransform()
    soft = tr.SoftmaxTransform()
    chol = tr.LowerCholeskyTransform()
    corr = tr.CorrCholeskyTransform()
    m = _x(T, 3, 3, seed=1, grad=True)
    y = stick(x)
    reshape = tr.ReshapeTransform((2, 3), (6,))
    cat = tr.CatTransform([tr.ExpTransform(), tr.AffineTransform(1.0, 2.0)], dim=1, lengths=[1, 2])
    stack = tr.StackTransform([tr.ExpTransform(), tr.AffineTransform(1.0, 2.0)], dim=0)
    ind = tr.IndependentTransform(tr.ExpTransform(), 1)
    pd = tr.PositiveDefiniteTransform()
    return (y, stick.inv(y), stick.log_abs_det_jacobian(x, y), soft(x), chol(m), corr(x), reshape(x), cat(x),
            stack(x), ind.log_abs_det_jacobian(x, ind(x)), pd(m), tr.identity_transform(x),
            T.autograd.grad(stick.log_abs_det_jacobian(x, y).sum() + corr(x).sum(), x))


@differential
def test_data_utilities(T):
    data = T.utils.data
    a = data.TensorDataset(T.arange(6.0).reshape(3, 2), T.arange(3))
    b = data.TensorDataset(T.arange(4.0).reshape(2, 2) + 10, T.arange(2) + 10)
    concat = data.ConcatDataset([a, b])
    subset = data.Subset(concat, [4, 0, 2])
    stacked = data.StackDataset(a, labels=T.arange(3) * 2) if False else data.StackDataset(a, a)

    class Stream(data.IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

    chain = data.ChainDataset([Stream(2), Stream(3)])
    batches = list(data.BatchSampler(data.SequentialSampler(range(7)), batch_size=3, drop_last=False))
    collated = data.default_collate([{"x": T.ones(2), "y": 1}, {"x": T.zeros(2), "y": 2}])
    converted = data.default_convert([np.array([1.0, 2.0]), (np.int64(3), "s")])
    return (len(concat), concat[3], [subset[i] for i in range(len(subset))], stacked[1], list(chain), batches,
            collated, converted, data.get_worker_info(), list(data.DataLoader(subset, batch_size=2)))


@differential
def test_autocast_and_mode_state_functions(T):
    state = [T.is_autocast_cpu_enabled(), T.get_autocast_cpu_dtype(), T.get_autocast_gpu_dtype(),
             T.is_inference_mode_enabled()]
    T.set_autocast_cpu_enabled(True)
    T.set_autocast_cpu_dtype(T.bfloat16)
    state += [T.is_autocast_cpu_enabled(), T.get_autocast_cpu_dtype()]
    T.set_autocast_cpu_enabled(False)
    T.set_autocast_cpu_dtype(T.bfloat16)
    T.set_autocast_dtype("cpu", T.bfloat16)
    T.set_autocast_gpu_dtype(T.float16)
    T.set_autocast_cache_enabled(True)
    T.clear_autocast_cache()
    with T.inference_mode():
        state.append(T.is_inference_mode_enabled())
    return state, T.GradScaler is T.amp.GradScaler


@differential
def test_in_place_dropouts_and_conj(T):
    x = _x(T, 2, 3)
    outs = [T.dropout_(x.clone(), 0.5, False), T.alpha_dropout_(x.clone(), 0.5, False),
            T.feature_alpha_dropout_(x.clone(), 0.5, False)]
    z = T.complex(x, -x)
    T.conj_physical_(z)
    return outs, z, T.utils.dlpack.from_dlpack(T.to_dlpack(x)) if hasattr(T, "to_dlpack") else None


@differential
def test_autograd_enums_and_flags(T):
    ag = T.autograd
    before = ag.is_multithreading_enabled()
    ag.set_multithreading_enabled(False)
    during = ag.is_multithreading_enabled()
    ag.set_multithreading_enabled(True)
    return (before, during, ag.is_tensor_like(T.ones(1)), ag.is_tensor_like([1]), ag.kineto_available() in (True, False),
            [m.name for m in ag.ProfilerActivity.__members__.values()][:1], ag.ProfilerState.Disabled.name,
            ag.DeviceType.CPU.name, ag.ProfilerConfig is not None)


@differential
def test_lazy_3d_layers_dirac_and_ifft2(T):
    T.manual_seed(0)
    x = _x(T, 1, 2, 3, 4, 4, dtype="float32")
    conv = T.nn.LazyConvTranspose3d(3, 2)
    norm = T.nn.LazyInstanceNorm3d()
    out = conv(x)
    w = T.empty(4, 2, 3, 3)
    T.nn.init.dirac_(w, groups=2)
    old = T.empty(2, 2, 3)
    T.nn.init.dirac(old)
    z = T.complex(_x(T, 3, 4), _x(T, 3, 4, seed=1))
    return tuple(conv.weight.shape), out.shape, norm(x), w, old, T.fft.ifft2(z), T.fft.ifft2(z, s=(2, 6), norm="ortho")


@differential
def test_augmented_index_assignment_on_rows_of_one(T):
    """``w[i:j] += v`` reads a view, adds in place and assigns it back onto itself: views of the same
    elements, whatever their size-1 dims, are no partial overlap."""
    w, u = T.zeros(1, 4), T.zeros(4, 1)
    w[0:1] += T.ones(1, 4)
    u[1:3] += 1
    x = T.arange(6.0)
    return w, u, catch(lambda: x[1:4].copy_(x[0:3]))


@pytest.mark.parametrize("call", ["sum(0)", "mean(-1)", "amax(0)", "amin(-1)", "sum((0,))", "logsumexp(0)", "prod(0)",
                                  "var(0, correction=0)", "norm(dim=0)", "sum(0, keepdim=True)", "nansum(0)",
                                  "count_nonzero(0)", "flip(0)", "max(0)", "argmax(0)", "cumsum(0)", "softmax(0)",
                                  "median(0)", "sum(1)", "mean((0, 0))"])
@differential
def test_reducing_dim_0_of_a_0d_tensor(T, call):
    """A 0-d tensor has a dim 0 (and -1) to reduce over: the tensor itself."""
    x = T.tensor(3.0, dtype=T.float64, requires_grad=True)
    out = catch(lambda: eval("x." + call))
    if isinstance(out, tuple):
        out = out[0]
    grads = T.autograd.grad(out, x) if isinstance(out, T.Tensor) and out.requires_grad else None
    return out, grads, catch(lambda: eval("x.detach().bool()." + call.split("(")[0].replace("sum", "all") + "(0)"))


@differential
def test_variance_without_degrees_of_freedom_warns_as_torch(T):
    """var/std and their _mean forms warn, naming the call, when the correction leaves no degree of
    freedom; complex inputs warn once per part; the warning points at the caller's line."""
    import warnings
    calls = [lambda: T.randn(3, 1).var(1), lambda: T.randn(3, 1).std(dim=1, correction=0),
             lambda: T.randn(2, 3).var(1, correction=3), lambda: T.var_mean(T.randn(1)),
             lambda: T.std_mean(T.randn(2, 1), 1), lambda: T.randn(0).var(), lambda: T.tensor(3.0).std(),
             lambda: T.std(T.randn(1, dtype=T.complex64)), lambda: T.var(T.randn(4), unbiased=False)]
    seen = []
    for call in calls:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        seen.append([(w.category.__name__, str(w.message).split(" (Triggered internally")[0],
                      w.filename == __file__) for w in caught])
    return seen
