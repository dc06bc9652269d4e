"""nn.functional against torch: values, gradients of every input, grad_fn names and dtypes.

Each case is a function ``(T, F, *tensors) -> output`` plus NumPy inputs; ``run_case`` builds the
tensors on each framework (floating inputs require grad), backpropagates the same random upstream
gradient and records the output, the input gradients and the grad_fn name.
"""
import numpy as np
import pytest

from difftest import catch, differential, run_both, assert_same, warns

R = np.random.default_rng


def arr(*shape, seed=0, dtype=np.float64, low=None, high=None):
    rng = R(seed)
    if low is not None:
        return rng.uniform(low, high, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def ints(*shape, high=3, seed=0):
    return R(seed).integers(0, high, shape).astype(np.int64)


def run_case(T, fn, arrays, upstream_seed=123):
    xs = [T.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = fn(T, T.nn.functional, *xs)
    outs = out if isinstance(out, tuple) else (out,)
    main = outs[0]
    rec = {"out": [o for o in outs], "grad_fn": main.grad_fn.name() if main.grad_fn is not None else None}
    if main.requires_grad:
        g = R(upstream_seed).standard_normal(tuple(main.shape)).astype(str(main.dtype).split(".")[-1])
        main.backward(T.tensor(g))
        rec["grads"] = [x.grad for x in xs if x.requires_grad]
    return rec


def check(fn, *arrays, rtol=1e-6, atol=1e-7, names=True):
    got, want = run_both(run_case, fn, arrays)
    if not names:
        got.pop("grad_fn"), want.pop("grad_fn")
    assert_same(got, want, rtol, atol)


# ---- linear ----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 5), (5,), (1, 5), (2, 1, 3, 5)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(shape, bias):
    w, b = arr(3, 5, seed=1), arr(3, seed=2)
    if bias:
        check(lambda T, F, x, w, b: F.linear(x, w, b), arr(*shape), w, b, names=len(shape) != 1)
    else:
        check(lambda T, F, x, w: F.linear(x, w), arr(*shape), w, names=len(shape) != 1)


def test_linear_float32_stays_float32():
    check(lambda T, F, x, w, b: F.linear(x, w, b), arr(4, 5, dtype=np.float32), arr(3, 5, seed=1, dtype=np.float32),
          arr(3, seed=2, dtype=np.float32), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(4,), (2, 3)])
def test_bilinear(shape):
    check(lambda T, F, a, b, w, bias: F.bilinear(a, b, w, bias), arr(*shape, 3), arr(*shape, 4, seed=1),
          arr(2, 3, 4, seed=2), arr(2, seed=3), names=False)


# ---- convolution -----------------------------------------------------------------------------
CONV2D = [
    dict(),
    dict(stride=2),
    dict(padding=1),
    dict(padding=(2, 0), stride=(1, 2)),
    dict(dilation=2, padding=2),
    dict(padding="same"),
    dict(padding="same", dilation=(2, 1)),
    dict(padding="valid"),
    dict(groups=2, padding=1),
    dict(stride=3, padding=1, dilation=2, groups=2),
]


@pytest.mark.parametrize("kw", CONV2D)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(kw, bias):
    x = arr(2, 4, 7, 6)
    w = arr(6, 4 // kw.get("groups", 1), 3, 2, seed=1)
    if bias:
        check(lambda T, F, x, w, b: F.conv2d(x, w, b, **kw), x, w, arr(6, seed=2))
    else:
        check(lambda T, F, x, w: F.conv2d(x, w, **kw), x, w)


def test_conv2d_unbatched_and_1x1():
    check(lambda T, F, x, w: F.conv2d(x, w, padding=1), arr(3, 5, 5), arr(2, 3, 3, 3, seed=1))
    check(lambda T, F, x, w, b: F.conv2d(x, w, b), arr(2, 3, 4, 4), arr(5, 3, 1, 1, seed=1), arr(5, seed=2))


def test_conv2d_float32():
    check(lambda T, F, x, w, b: F.conv2d(x, w, b, padding=1), arr(4, 3, 9, 9, dtype=np.float32),
          arr(8, 3, 3, 3, seed=1, dtype=np.float32), arr(8, seed=2, dtype=np.float32), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(dilation=2, padding="same"),
                                dict(groups=3, padding=2)])
def test_conv1d(kw):
    check(lambda T, F, x, w, b: F.conv1d(x, w, b, **kw), arr(2, 3, 11), arr(6, 3 // kw.get("groups", 1), 3, seed=1),
          arr(6, seed=2))
    check(lambda T, F, x, w: F.conv1d(x, w, **kw), arr(3, 11), arr(6, 3 // kw.get("groups", 1), 3, seed=1))


@pytest.mark.parametrize("kw", [dict(), dict(stride=2), dict(stride=2, output_padding=1),
                                dict(stride=2, padding=1, output_padding=1), dict(padding=1, dilation=2),
                                dict(groups=2, stride=2), dict(stride=(2, 3), padding=(0, 1), output_padding=(1, 2))])
def test_conv_transpose2d(kw):
    check(lambda T, F, x, w, b: F.conv_transpose2d(x, w, b, **kw), arr(2, 4, 5, 4), arr(4, 3, 3, 3, seed=1),
          arr(3 * kw.get("groups", 1), seed=2))


def test_conv_transpose1d():
    check(lambda T, F, x, w: F.conv_transpose1d(x, w, stride=2, padding=1), arr(2, 4, 6), arr(4, 3, 3, seed=1))


# ---- pooling ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, ceil_mode=True), dict(kernel_size=2, stride=1),
                                dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 1)),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)])
def test_max_pool2d(kw):
    x = arr(2, 3, 7, 8)
    check(lambda T, F, x: F.max_pool2d(x, return_indices=True, **kw), x)
    check(lambda T, F, x: F.max_pool2d(x, **kw), x[0])


def test_max_pool2d_ties_pick_first():
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1, 1] = 1
    check(lambda T, F, x: F.max_pool2d(x, 2, return_indices=True), x)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                dict(kernel_size=3, dilation=2)])
def test_max_pool1d(kw):
    check(lambda T, F, x: F.max_pool1d(x, return_indices=True, **kw), arr(2, 3, 11))


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                dict(kernel_size=3, stride=2, ceil_mode=True),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                                dict(kernel_size=(2, 3), divisor_override=5), dict(kernel_size=5, stride=1)])
def test_avg_pool2d(kw):
    check(lambda T, F, x: F.avg_pool2d(x, **kw), arr(2, 3, 7, 8))
    check(lambda T, F, x: F.avg_pool2d(x, **kw), arr(3, 7, 8))


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)])
def test_avg_pool1d(kw):
    check(lambda T, F, x: F.avg_pool1d(x, **kw), arr(2, 3, 10))


@pytest.mark.parametrize("size", [(3, 3), 1, (2, None), (5, 7), (4, 3), (9, 11)])
def test_adaptive_avg_pool2d(size):
    check(lambda T, F, x: F.adaptive_avg_pool2d(x, size), arr(2, 3, 7, 9))


@pytest.mark.parametrize("size", [1, 3, 4])
def test_adaptive_avg_pool1d(size):
    check(lambda T, F, x: F.adaptive_avg_pool1d(x, size), arr(2, 3, 10))


# ---- padding ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mode,shape,p", [
    ("constant", (2, 3), (1, 2)), ("constant", (2, 3, 4), (1, 0, 2, 1)), ("constant", (2, 3, 4), (-1, 1)),
    ("reflect", (2, 3, 5), (2, 1)), ("reflect", (1, 2, 4, 5), (1, 2, 3, 1)), ("replicate", (2, 3, 5), (3, 1)),
    ("replicate", (1, 2, 4, 5), (2, 2, 1, 3)), ("circular", (1, 2, 5), (2, 1)),
])
def test_pad(mode, shape, p):
    check(lambda T, F, x: F.pad(x, p, mode=mode), arr(*shape), names=mode != "circular")


def test_pad_value():
    check(lambda T, F, x: F.pad(x, (1, 1, 2, 0), value=2.5), arr(2, 3, 3))


# ---- normalization ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training(shape, affine):
    def fn(T, F, x, w, b):
        rm, rv = T.zeros(3, dtype=T.float64), T.ones(3, dtype=T.float64)
        out = F.batch_norm(x, rm, rv, w if affine else None, b if affine else None, training=True, momentum=0.3)
        return out, rm, rv
    check(fn, arr(*shape), arr(3, seed=1), arr(3, seed=2))


@pytest.mark.parametrize("shape", [(6, 3), (2, 3, 4, 5)])
def test_batch_norm_eval(shape):
    def fn(T, F, x, w, b):
        rm, rv = T.tensor(arr(3, seed=5)), T.tensor(arr(3, seed=6, low=0.5, high=2.0))
        return F.batch_norm(x, rm, rv, w, b, training=False)
    check(fn, arr(*shape), arr(3, seed=1), arr(3, seed=2))


def test_batch_norm_no_running_stats():
    check(lambda T, F, x: F.batch_norm(x, None, None, training=True), arr(5, 3, 2))


@pytest.mark.parametrize("shape,ns", [((4, 5), (5,)), ((2, 3, 4), (4,)), ((2, 3, 4), (3, 4)), ((5,), (5,))])
def test_layer_norm(shape, ns):
    check(lambda T, F, x, w, b: F.layer_norm(x, ns, w, b, eps=1e-4), arr(*shape), arr(*ns, seed=1),
          arr(*ns, seed=2))
    check(lambda T, F, x: F.layer_norm(x, ns), arr(*shape))


@pytest.mark.parametrize("shape,groups", [((2, 6, 5), 3), ((2, 4, 3, 3), 2), ((3, 4), 4), ((2, 4, 3), 1)])
def test_group_norm(shape, groups):
    c = shape[1]
    check(lambda T, F, x, w, b: F.group_norm(x, groups, w, b), arr(*shape), arr(c, seed=1), arr(c, seed=2))
    check(lambda T, F, x: F.group_norm(x, groups), arr(*shape))


def test_norms_float32():
    check(lambda T, F, x, w, b: F.layer_norm(x, (8,), w, b), arr(4, 8, dtype=np.float32),
          arr(8, seed=1, dtype=np.float32), arr(8, seed=2, dtype=np.float32), rtol=1e-4, atol=1e-5)

    def bn(T, F, x):
        rm, rv = T.zeros(3), T.ones(3)
        return F.batch_norm(x, rm, rv, training=True), rm, rv
    check(bn, arr(8, 3, 4, dtype=np.float32), rtol=1e-4, atol=1e-5)


# ---- activations -----------------------------------------------------------------------------
ACTS = [
    ("relu", {}), ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {}), ("elu", {"alpha": 0.5}),
    ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("sigmoid", {}), ("tanh", {}),
    ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 1.0}), ("hardtanh", {}),
    ("hardtanh", {"min_val": -0.5, "max_val": 2.0}), ("relu6", {}),
]


@pytest.mark.parametrize("name,kw", ACTS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_activation(name, kw, dtype):
    x = arr(3, 7, dtype=dtype) * 4
    tol = dict(rtol=1e-6, atol=1e-7) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-6)
    check(lambda T, F, x: getattr(F, name)(x, **kw), x, **tol)


@pytest.mark.parametrize("name", ["relu", "leaky_relu", "elu", "silu", "hardtanh", "relu6"])
def test_activation_inplace(name):
    def fn(T, F, x):
        y = x * 1.0
        out = getattr(F, name)(y, inplace=True)
        return out, y, out is y
    check(fn, arr(3, 4) * 3, names=False)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_log_softmax(dim):
    check(lambda T, F, x: F.softmax(x, dim), arr(3, 4, 5))
    check(lambda T, F, x: F.log_softmax(x, dim), arr(3, 4, 5))
    check(lambda T, F, x: F.softmax(x, dim, dtype=T.float64), arr(3, 4, 5, dtype=np.float32), rtol=1e-5)


def test_softmax_implicit_dim_warns():
    @differential
    def scenario(T):
        x = T.tensor(arr(3, 4))
        return warns(T.nn.functional.softmax, x)
    scenario()


# ---- dropout ---------------------------------------------------------------------------------
@differential
def test_dropout_statistics(T):
    F = T.nn.functional
    T.manual_seed(0)
    x = T.ones(200, 50, requires_grad=True)
    y = F.dropout(x, 0.3)
    y.sum().backward()
    kept = (y != 0).double().mean().item()
    scale_ok = bool(((y == 0) | ((y - 1 / 0.7).abs() < 1e-6)).all())
    grad_matches = bool((x.grad == y.detach()).all())
    return (round(kept, 1), scale_ok, grad_matches, y.grad_fn.name(), F.dropout(x, 0.5, training=False) is x,
            bool((F.dropout(x, 1.0) == 0).all()), catch(F.dropout, x, 1.5))


def test_dropout_uses_default_generator():
    import hookgrad
    F = hookgrad.nn.functional
    hookgrad.manual_seed(3)
    a = F.dropout(hookgrad.ones(10, 10), 0.5)
    hookgrad.manual_seed(3)
    b = F.dropout(hookgrad.ones(10, 10), 0.5)
    assert hookgrad.equal(a, b)


# ---- embedding, one_hot, normalize -----------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(), dict(padding_idx=1), dict(padding_idx=-1), dict(scale_grad_by_freq=True),
                                dict(padding_idx=0, scale_grad_by_freq=True)])
def test_embedding(kw):
    idx = np.array([[0, 1, 1, 4], [4, 4, 2, 0]])

    def fn(T, F, w):
        return F.embedding(T.tensor(idx), w, **kw)
    check(fn, arr(5, 3))


def test_embedding_max_norm():
    def fn(T, F, w):
        out = F.embedding(T.tensor([[0, 2], [2, 3]]), w, max_norm=1.0)
        return out, w.detach().clone()
    check(fn, arr(5, 3) * 2)


@differential
def test_one_hot(T):
    F = T.nn.functional
    return (F.one_hot(T.tensor([0, 2, 1])), F.one_hot(T.tensor([[1], [3]]), 5), catch(F.one_hot, T.tensor([1.0])),
            catch(F.one_hot, T.tensor([5]), 3), catch(F.one_hot, T.tensor([-1]), 3))


@pytest.mark.parametrize("kw", [dict(), dict(p=1.0), dict(dim=0), dict(p=3.0, dim=-1)])
def test_normalize(kw):
    check(lambda T, F, x: F.normalize(x, **kw), arr(3, 4), names=False)


# ---- attention -------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(), dict(is_causal=True), dict(scale=0.3), dict(mask="bool"), dict(mask="float"),
                                dict(mask="dead")])
def test_scaled_dot_product_attention(kw):
    kw = dict(kw)
    mask = kw.pop("mask", None)

    def fn(T, F, q, k, v):
        m = None
        if mask == "bool":
            m = T.tensor(R(5).random((4, 6)) > 0.3)
            m[:, 0] = True
        elif mask == "float":
            m = T.tensor(arr(4, 6, seed=7))
        elif mask == "dead":
            m = T.tensor(np.array([[True] * 6, [False] * 6, [True, False] * 3, [False] * 5 + [True]]))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kw)
    check(fn, arr(2, 4, 3), arr(2, 6, 3, seed=1), arr(2, 6, 5, seed=2), names=False)


# ---- losses ----------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,kw", [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {}),
                                     ("smooth_l1_loss", {"beta": 0.5}), ("smooth_l1_loss", {"beta": 0.0}),
                                     ("huber_loss", {}), ("huber_loss", {"delta": 0.3})])
def test_regression_losses(name, kw, reduction):
    check(lambda T, F, x, t: getattr(F, name)(x, t, reduction=reduction, **kw), arr(4, 5) * 2, arr(4, 5, seed=1),
          names=not (name == "smooth_l1_loss" and kw.get("beta") == 0.0))


def test_mse_loss_broadcast_warns():
    def fn(T, F, x, t):
        return F.mse_loss(x, t)
    check(fn, arr(4, 5), arr(1, 5, seed=1), names=False)

    @differential
    def scenario(T):
        return warns(T.nn.functional.mse_loss, T.tensor(arr(4, 5)), T.tensor(arr(5)))[1]
    scenario()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("kw", [dict(), dict(weight=True), dict(ignore_index=1), dict(weight=True, ignore_index=2),
                                dict(label_smoothing=0.2), dict(label_smoothing=0.1, weight=True),
                                dict(label_smoothing=0.1, ignore_index=0),
                                dict(label_smoothing=0.1, weight=True, ignore_index=0)])
def test_cross_entropy_indices(kw, reduction):
    kw = dict(kw)
    use_w = kw.pop("weight", False)
    target = np.array([0, 2, 1, 2, 0, 1])

    def fn(T, F, x, w):
        return F.cross_entropy(x, T.tensor(target), weight=w.detach() if use_w else None, reduction=reduction,
                               **kw)
    check(fn, arr(6, 3), arr(3, seed=1, low=0.5, high=2.0), names=not kw.get("label_smoothing"))


@pytest.mark.parametrize("kw", [dict(), dict(label_smoothing=0.1), dict(weight=True), dict(reduction="sum"),
                                dict(reduction="none")])
def test_cross_entropy_probabilities(kw):
    kw = dict(kw)
    use_w = kw.pop("weight", False)
    probs = R(3).dirichlet(np.ones(4), size=5)

    def fn(T, F, x, w):
        return F.cross_entropy(x, T.tensor(probs), weight=w.detach() if use_w else None, **kw)
    check(fn, arr(5, 4), arr(4, seed=1, low=0.5, high=2.0), names=False)


def test_cross_entropy_spatial_and_unbatched():
    t = ints(2, 3, 4, high=5)
    t[0, 0, 0] = -100
    check(lambda T, F, x: F.cross_entropy(x, T.tensor(t)), arr(2, 5, 3, 4))
    check(lambda T, F, x: F.cross_entropy(x, T.tensor(t), reduction="none"), arr(2, 5, 3, 4))
    check(lambda T, F, x: F.cross_entropy(x, T.tensor(2)), arr(5))


def test_cross_entropy_float32():
    check(lambda T, F, x: F.cross_entropy(x, T.tensor(ints(64, high=10))), arr(64, 10, dtype=np.float32),
          rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction):
    def fn(T, F, x, w):
        return F.nll_loss(x, T.tensor(np.array([1, 0, 3, 3])), weight=w.detach(), reduction=reduction,
                          ignore_index=0)
    check(fn, arr(4, 4), arr(4, seed=2, low=0.1, high=1.0))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(reduction, weighted):
    def fn(T, F, x, t, w):
        return F.binary_cross_entropy(x, t, weight=w.detach() if weighted else None, reduction=reduction)
    check(fn, arr(3, 4, low=0.05, high=0.95), arr(3, 4, seed=1, low=0, high=1), arr(4, seed=2, low=0.5, high=1.5))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("pos", [False, True])
def test_bce_with_logits(reduction, weighted, pos):
    def fn(T, F, x, t, w, pw):
        return F.binary_cross_entropy_with_logits(x, t, weight=w.detach() if weighted else None,
                                                  pos_weight=pw.detach() if pos else None, reduction=reduction)
    check(fn, arr(3, 4) * 3, arr(3, 4, seed=1, low=0, high=1), arr(4, seed=2, low=0.5, high=1.5),
          arr(4, seed=3, low=0.5, high=3.0))


@pytest.mark.parametrize("reduction", ["sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    t = arr(3, 4, seed=1, low=0.05, high=1.0)
    if log_target:
        t = np.log(t)
    x = np.log(arr(3, 4, low=0.1, high=1.0))
    check(lambda T, F, x, t: F.kl_div(x, t, reduction=reduction, log_target=log_target), x, t, names=False)
    t[0, 0] = 0.0 if not log_target else -np.inf
    check(lambda T, F, x, t: F.kl_div(x, t.detach(), reduction=reduction, log_target=log_target), x, t,
          names=False)


def test_kl_div_mean_warns():
    @differential
    def scenario(T):
        F = T.nn.functional
        return warns(F.kl_div, T.tensor(arr(2, 3)), T.tensor(arr(2, 3, seed=1, low=0, high=1)))
    scenario()


# ---- errors ----------------------------------------------------------------------------------
@differential
def test_bad_inputs_raise_torch_classes(T):
    F = T.nn.functional
    x4 = T.tensor(arr(2, 3, 8, 8))
    logits = T.tensor(arr(4, 5))
    return [
        catch(F.conv2d, x4, T.tensor(arr(4, 5, 3, 3))),
        catch(F.conv2d, T.tensor(arr(2, 3, 2, 2)), T.tensor(arr(4, 3, 3, 3))),
        catch(F.conv2d, x4, T.tensor(arr(4, 3, 3, 3)), stride=2, padding="same"),
        catch(F.conv2d, x4, T.tensor(arr(4, 3, 3, 3)), padding="foo"),
        catch(F.conv2d, T.tensor(arr(3, 8)), T.tensor(arr(4, 3, 3, 3))),
        catch(F.conv_transpose2d, x4, T.tensor(arr(4, 3, 3, 3))),
        catch(F.cross_entropy, logits, T.tensor([0, 1, 2])),
        catch(F.cross_entropy, logits, T.tensor([0, 1, 2, 7])),
        catch(F.cross_entropy, logits, T.tensor([0.0, 1, 2, 3])),
        catch(F.cross_entropy, logits, T.tensor([0, 1, 2, 3], dtype=T.int32)),
        catch(F.cross_entropy, logits, T.tensor(arr(4, 6))),
        catch(F.nll_loss, logits, T.tensor([0, 1, 2, 3]), reduction="foo"),
        catch(F.nll_loss, logits, T.tensor(arr(4))),
        catch(F.mse_loss, logits, T.tensor(arr(3, 5))),
        catch(F.binary_cross_entropy, T.tensor(arr(4, low=0, high=1)), T.tensor(arr(3, low=0, high=1))),
        catch(F.binary_cross_entropy, T.tensor(arr(4) * 3), T.tensor(arr(4, low=0, high=1))),
        catch(F.binary_cross_entropy_with_logits, T.tensor(arr(4)), T.tensor(arr(3))),
        catch(F.linear, logits, T.tensor(arr(3, 6))),
        catch(F.embedding, T.tensor([5]), T.tensor(arr(5, 3))),
        catch(F.embedding, T.tensor([1.0]), T.tensor(arr(5, 3))),
        catch(F.max_pool2d, x4, 2, padding=2),
        catch(F.avg_pool2d, x4, 2, padding=2),
        catch(F.layer_norm, x4, (7,)),
        catch(F.group_norm, x4, 2),
        catch(F.batch_norm, x4, T.zeros(4), T.ones(4)),
        catch(F.batch_norm, T.tensor(arr(1, 3)), T.zeros(3), T.ones(3), training=True),
        catch(F.pad, x4, (1,)),
        catch(F.pad, x4, (9, 9), mode="reflect"),
        catch(F.dropout, x4, 1.5),
        catch(F.softmax, T.tensor([1, 2]), 0),
        catch(F.bilinear, T.tensor(arr(4, 5)), T.tensor(arr(4, 5)), T.tensor(arr(2, 5, 6))),
    ]


# ---- structure of the recorded graph ---------------------------------------------------------
def _chain(fn, depth):
    if fn is None or depth == 0:
        return None
    return (fn.name(), [_chain(f, depth - 1) for f, _ in fn.next_functions])


@differential
def test_graph_structure_matches_torch(T):
    F = T.nn.functional
    x = T.tensor(arr(4, 5), requires_grad=True)
    w = T.tensor(arr(3, 5), requires_grad=True)
    b = T.tensor(arr(3), requires_grad=True)
    img = T.tensor(arr(2, 3, 6, 6), requires_grad=True)
    y = T.tensor([0, 1, 2, 1])
    return [
        _chain(F.linear(x, w, b).grad_fn, 3),
        _chain(F.linear(x, w).grad_fn, 3),
        _chain(F.linear(x.reshape(2, 2, 5), w, b).grad_fn, 3),
        _chain(F.cross_entropy(x, y).grad_fn, 4),
        _chain(F.max_pool1d(x.unsqueeze(0), 2).grad_fn, 3),
        _chain(F.avg_pool1d(x.unsqueeze(0), 2).grad_fn, 3),
        _chain(F.adaptive_avg_pool2d(img, 1).grad_fn, 2),
        _chain(F.adaptive_avg_pool1d(x.unsqueeze(0), 2).grad_fn, 3),
        _chain(F.conv1d(x.t().unsqueeze(0), w.unsqueeze(-1).expand(3, 5, 2).contiguous()).grad_fn, 1),
        _chain(F.l1_loss(x, x.detach() * 2).grad_fn, 4),
        _chain(F.pad(img, (1, 1, 2, 0), mode="reflect").grad_fn, 2),
        _chain(F.pad(x.unsqueeze(0), (1, 1), mode="replicate").grad_fn, 2),
    ]


def test_max_pool2d_nan_wins_like_torch():
    x = np.array([[[[1.0, np.nan, 3, np.nan], [np.nan, 2, 0, 5]]]])
    check(lambda T, F, x: F.max_pool2d(x, 2, return_indices=True), x)
    check(lambda T, F, x: F.max_pool2d(x, (1, 3), 1, padding=(0, 1)), x)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses_weight(name, reduction):
    check(lambda T, F, x, t, w: getattr(F, name)(x, t, reduction=reduction, weight=w.detach()), arr(4, 5) * 2,
          arr(4, 5, seed=1), arr(4, 5, seed=2, low=0.5, high=2.0), names=False)

    @differential
    def scenario(T):
        f = getattr(T.nn.functional, name)
        return catch(f, T.tensor(arr(4, 5)), T.tensor(arr(4, 5)), weight=T.tensor(arr(5)))
    scenario()


@pytest.mark.parametrize("name", ["logsigmoid", "softsign", "tanhshrink", "mish", "hardsigmoid", "hardswish"])
def test_more_activations(name):
    check(lambda T, F, x: getattr(F, name)(x), arr(3, 5) * 4, names=False)


def test_softmin_relu_flatten():
    check(lambda T, F, x: F.softmin(x, 1), arr(3, 5), names=False)
    check(lambda T, F, x: F.relu_(x * 1), arr(3, 5), names=False)
    check(lambda T, F, x: F.relu6(F.hardtanh(x, -2.0, 2.0) * 4), arr(3, 2, 4), names=False)


# ---- random geometries (hypothesis) ------------------------------------------------------------
from hypothesis import given, settings, strategies as st  # noqa: E402


@st.composite
def conv_geometry(draw):
    groups = draw(st.sampled_from([1, 2]))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    if draw(st.booleans()):  # narrow layers: batch-major columns
        cin, cout = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    else:  # wide enough for channel-major columns (one large matmul over the batch)
        cin, cout = groups * draw(st.integers(64 // (kh * kw) + 1, 70 // (kh * kw) + 2)), groups * 34
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    dh, dw = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    ph, pw = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    h = draw(st.integers(dh * (kh - 1) + 1 - 2 * ph if dh * (kh - 1) + 1 - 2 * ph > 1 else 1, 7))
    w = draw(st.integers(dw * (kw - 1) + 1 - 2 * pw if dw * (kw - 1) + 1 - 2 * pw > 1 else 1, 7))
    return dict(n=draw(st.integers(1, 2)), cin=cin, cout=cout, k=(kh, kw), stride=(sh, sw), dil=(dh, dw),
                pad=(ph, pw), hw=(h, w), groups=groups, seed=draw(st.integers(0, 1000)))


@settings(max_examples=40, deadline=None)
@given(conv_geometry())
def test_conv2d_random_geometry(geo):
    x = arr(geo["n"], geo["cin"], *geo["hw"], seed=geo["seed"])
    w = arr(geo["cout"], geo["cin"] // geo["groups"], *geo["k"], seed=geo["seed"] + 1)
    kw = dict(stride=geo["stride"], padding=geo["pad"], dilation=geo["dil"], groups=geo["groups"])
    check(lambda T, F, x, w, b: F.conv2d(x, w, b, **kw), x, w, arr(geo["cout"], seed=2))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(0, 1), st.booleans(), st.integers(3, 8), st.integers(0, 99))
def test_pools_random_geometry(k, s, p, ceil, size, seed):
    if 2 * p > k:
        p = 0
    x = arr(2, 2, size, size + 1, seed=seed)
    check(lambda T, F, x: F.max_pool2d(x, k, s, p, ceil_mode=ceil, return_indices=True), x)
    check(lambda T, F, x: F.avg_pool2d(x, k, s, p, ceil_mode=ceil, count_include_pad=bool(seed % 2)), x)


@settings(max_examples=40, deadline=None)
@given(conv_geometry(), st.integers(0, 2))
def test_conv_transpose2d_random_geometry(geo, op):
    output_padding = tuple(min(op, max(s, d) - 1) for s, d in zip(geo["stride"], geo["dil"]))
    x = arr(geo["n"], geo["cin"], *geo["hw"], seed=geo["seed"])
    w = arr(geo["cin"], geo["cout"] // geo["groups"], *geo["k"], seed=geo["seed"] + 1)
    kw = dict(stride=geo["stride"], padding=geo["pad"], dilation=geo["dil"], groups=geo["groups"],
              output_padding=output_padding)

    def scenario(T):
        xt, wt = T.tensor(x, requires_grad=True), T.tensor(w, requires_grad=True)
        out = catch(T.nn.functional.conv_transpose2d, xt, wt, **kw)
        if not isinstance(out, T.Tensor):
            return out
        out.backward(T.tensor(R(1).standard_normal(tuple(out.shape))))
        return out, xt.grad, wt.grad
    got, want = run_both(scenario)
    assert_same(got, want, 1e-6, 1e-7)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 12), st.integers(1, 12), st.integers(0, 99))
def test_adaptive_pool_random_sizes(oh, ow, h, w, seed):
    check(lambda T, F, x: F.adaptive_avg_pool2d(x, (oh, ow)), arr(1, 2, h, w, seed=seed), names=(oh, ow) != (1, 1))


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["constant", "reflect", "replicate", "circular"]), st.lists(st.integers(0, 3), min_size=4,
                                                                                  max_size=4), st.integers(0, 99))
def test_pad_random(mode, p, seed):
    x = arr(2, 3, 4, 5, seed=seed)

    @differential
    def scenario(T):
        xt = T.tensor(x, requires_grad=True)
        out = catch(T.nn.functional.pad, xt, tuple(p), mode=mode)
        if not isinstance(out, T.Tensor):
            return out
        out.backward(T.tensor(R(1).standard_normal(tuple(out.shape))))
        return out, xt.grad
    scenario()


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(0, 2), st.integers(1, 2), st.integers(3, 9),
       st.integers(0, 99))
def test_conv1d_random(k, s, p, d, size, seed):
    x, w = arr(2, 2, size, seed=seed), arr(3, 2, k, seed=seed + 1)

    @differential
    def scenario(T):
        xt, wt = T.tensor(x, requires_grad=True), T.tensor(w, requires_grad=True)
        out = catch(T.nn.functional.conv1d, xt, wt, stride=s, padding=p, dilation=d)
        if not isinstance(out, T.Tensor):
            return out
        out.backward(T.tensor(R(1).standard_normal(tuple(out.shape))))
        return out, xt.grad, wt.grad
    scenario()


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.sampled_from([(), (3,), (2, 2)]), st.booleans(),
       st.sampled_from([-100, 0, 1]), st.sampled_from([0.0, 0.3]), st.sampled_from(["mean", "sum", "none"]),
       st.integers(0, 99))
def test_cross_entropy_random(n, c, spatial, weighted, ignore, smoothing, reduction, seed):
    x = arr(n, c, *spatial, seed=seed)
    t = ints(n, *spatial, high=c, seed=seed + 1)
    wt = arr(c, seed=seed + 2, low=0.2, high=2.0)

    @differential
    def scenario(T):
        xt = T.tensor(x, requires_grad=True)
        out = T.nn.functional.cross_entropy(xt, T.tensor(t), weight=T.tensor(wt) if weighted else None,
                                            ignore_index=ignore, label_smoothing=smoothing, reduction=reduction)
        out.backward(T.tensor(R(1).standard_normal(tuple(out.shape))))
        return out, xt.grad
    scenario()


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 4), st.sampled_from([1, 2, 4]), st.sampled_from([(), (3,), (2, 3)]), st.integers(0, 99))
def test_norms_random(n, groups, spatial, seed):
    c = 4
    x = arr(n, c, *spatial, seed=seed)
    check(lambda T, F, x, w, b: F.group_norm(x, groups, w, b), x, arr(c, seed=1), arr(c, seed=2))
    check(lambda T, F, x, w, b: F.batch_norm(x, None, None, w, b, training=True), x, arr(c, seed=1), arr(c, seed=2))
    ns = x.shape[-1:]
    check(lambda T, F, x, w, b: F.layer_norm(x, ns, w, b), x, arr(*ns, seed=1), arr(*ns, seed=2))


@differential(rtol=1e-6, atol=1e-6)
def test_extreme_values(T):
    F = T.nn.functional
    out = []
    x = T.tensor([0.0, 1.0, 0.5, 1e-8, 1 - 1e-7], dtype=T.float64, requires_grad=True)
    t = T.tensor([0.0, 1.0, 1.0, 0.3, 0.0], dtype=T.float64)
    for red in ("mean", "none"):
        loss = F.binary_cross_entropy(x, t, reduction=red)
        loss.sum().backward()
        out += [loss, x.grad]
        x.grad = None
    z = T.tensor([-800.0, -30, 0, 30, 800], dtype=T.float64, requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(z, t, pos_weight=T.tensor(2.0, dtype=T.float64))
    loss.backward()
    out += [loss, z.grad]
    for beta, th in ((1.0, 20.0), (2.0, 1.0)):
        z.grad = None
        s = F.softplus(z, beta, th)
        s.sum().backward()
        out += [s, z.grad]
    y = T.tensor([[-float("inf"), 0.0, 1.0], [2.0, 3.0, -float("inf")]], dtype=T.float64, requires_grad=True)
    loss = F.cross_entropy(y, T.tensor([1, 0]))
    loss.backward()
    out += [loss, y.grad]
    out.append(F.gelu(T.tensor([-40.0, -5.0, 0.0, 5.0, 40.0])))
    out.append(F.elu(T.tensor([-800.0, 0.0, 3.0])))
    out.append(F.silu(T.tensor([-800.0, 0.0, 800.0])))
    out.append(F.log_softmax(T.tensor([[1000.0, 0.0, -1000.0]]), 1))
    return out


# ---- both column layouts and both window-copy methods of the convolution kernels ----------------
from hookgrad.nn._functional import conv as _conv  # noqa: E402


@pytest.mark.parametrize("cin,cout", [(2, 4), (8, 32)])
@pytest.mark.parametrize("kw", [dict(padding=1), dict(padding="same", dilation=2), dict(padding=(0, 1)),
                                dict(padding=(2, 0)), dict(stride=2, padding=1), dict(padding=0),
                                dict(padding=1, groups=2)])
def test_conv2d_layouts_and_copy_methods(cin, cout, kw):
    # (8, 32) takes the channel-major path, (2, 4) the batch-major one; padding that keeps the width
    # takes the flat-shift window copy, the rest the strided one
    w = arr(cout, cin // kw.get("groups", 1), 3, 3, seed=1)
    assert _conv._batch_major(w.shape, kw.get("groups", 1)) == (cin == 2)
    check(lambda T, F, x, w, b: F.conv2d(x, w, b, **kw), arr(3, cin, 7, 6), w, arr(cout, seed=2))
    check(lambda T, F, x, w, b: F.conv_transpose2d(x, w, b, padding=1), arr(3, cout, 7, 6), arr(cout, cin, 3, 3),
          arr(cin, seed=2))
    # a non-contiguous input (channels and rows swapped in memory)
    check(lambda T, F, x, w, b: F.conv2d(x.transpose(1, 2), w, b, **kw), arr(3, 7, cin, 6), w, arr(cout, seed=2))


def test_conv2d_channel_major_double_backward():
    from hookgrad.autograd import gradcheck, gradgradcheck
    import hookgrad as hg
    x = hg.tensor(arr(2, 8, 5, 4), requires_grad=True)
    w = hg.tensor(arr(32, 8, 3, 3, seed=1) * 0.1, requires_grad=True)
    b = hg.tensor(arr(32, seed=2), requires_grad=True)
    fn = lambda x, w, b: hg.nn.functional.conv2d(x, w, b, padding=1)  # noqa: E731
    assert gradcheck(fn, (x, w, b)) and gradgradcheck(fn, (x, w, b))


# ---- MaxPool2d(2): the pairwise fast path, its fallbacks and its lazily derived indices -----------
@pytest.mark.parametrize("shape", [(2, 3, 6, 8), (3, 5, 7), (1, 2, 2, 2), (2, 1, 5, 3)])
@pytest.mark.parametrize("values", ["ties", "random", "nan", "inf"])
def test_max_pool2d_2x2(shape, values):
    x = R(3).integers(0, 3, shape).astype(np.float64) if values == "ties" else arr(*shape, seed=4)
    if values == "nan":
        x.flat[::5] = np.nan
    if values == "inf":
        x.flat[::4], x.flat[1::6] = np.inf, -np.inf
    check(lambda T, F, x: F.max_pool2d(x, 2), x)
    check(lambda T, F, x: F.max_pool2d(x, 2, return_indices=True), x)
    check(lambda T, F, x: F.max_pool2d(x, (2, 2), 2, return_indices=True)[1], x)  # indices only


def test_max_pool2d_2x2_double_backward_and_no_grad():
    x = R(5).integers(0, 4, (2, 3, 6, 6)).astype(np.float64)

    def scenario(T):
        xt = T.tensor(x, requires_grad=True)
        out = T.nn.functional.max_pool2d(xt, 2)
        (g,) = T.autograd.grad(out.pow(2).sum(), xt, create_graph=True)
        (gg,) = T.autograd.grad(g.sum(), xt)
        with T.no_grad():
            plain = T.nn.functional.max_pool2d(xt, 2)
        return out, g, gg, plain
    got, want = run_both(scenario)
    assert_same(got, want, 1e-9, 1e-12)


@pytest.mark.parametrize("bias_shape", [(24,), (3, 24), (1, 24), None])
def test_linear_and_addmm_wider_than_batch(bias_shape):
    # out_features >= 4 x batch takes the weight @ x^T product path
    x, w = arr(3, 7), arr(24, 7, seed=1)
    if bias_shape is None:
        check(lambda T, F, x, w: F.linear(x, w), x, w)
        return
    b = arr(*bias_shape, seed=2)
    if len(bias_shape) == 1:
        check(lambda T, F, x, w, b: F.linear(x, w, b), x, w, b)
    check(lambda T, F, x, w, b: T.addmm(b, x, w.t()), x, w, b)
    check(lambda T, F, x, w, b: T.addmm(b, x, w.t(), beta=0.5, alpha=2.0), x, w, b)
    check(lambda T, F, x, w, b: F.linear(x, w, b[..., :24]).contiguous().view(-1), x, w, b)


@pytest.mark.parametrize("bad", [10, -1, -100])
def test_cross_entropy_out_of_range_target(bad):
    # -100 is the default ignore_index: that row is skipped; the others are errors (IndexError)
    def scenario(T):
        t = T.tensor(np.array([1, bad, 3]))
        return catch(T.nn.functional.cross_entropy, T.tensor(arr(3, 10)), t)
    got, want = run_both(scenario)
    assert_same(got, want, 1e-6, 1e-7)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=2, stride=1)])
def test_max_pool2d_backward_of_non_finite_gradients(kw):
    # positions that win nothing get 0 even where the incoming gradient is inf or NaN
    x = arr(2, 2, 6, 6, seed=7)

    def scenario(T):
        xt = T.tensor(x, requires_grad=True)
        out = T.nn.functional.max_pool2d(xt, **kw)
        up = R(8).standard_normal(tuple(out.shape))
        up.flat[::3], up.flat[1::5] = np.inf, np.nan
        out.backward(T.tensor(up))
        return xt.grad
    got, want = run_both(scenario)
    assert_same(got, want, 1e-9, 1e-12)


def test_conv2d_kernel_wider_than_a_tiny_image():
    """A 3x3 same-size convolution of a 1x2 image: some kernel offsets shift by more than the
    whole image, which must contribute nothing (found by the random-geometry test)."""
    geo = {'n': 1, 'cin': 1, 'cout': 1, 'k': (3, 3), 'stride': (1, 1), 'dil': (1, 1), 'pad': (1, 1), 'hw': (1, 2),
           'groups': 1, 'seed': 0}
    test_conv2d_random_geometry.hypothesis.inner_test(geo)
    for hw in [(1, 1), (2, 1), (1, 3), (3, 1)]:
        test_conv2d_random_geometry.hypothesis.inner_test(dict(geo, hw=hw, k=(3, 3), pad=(1, 1)))
        test_conv2d_random_geometry.hypothesis.inner_test(dict(geo, hw=hw, k=(3, 3), pad=(2, 2), dil=(2, 2)))
