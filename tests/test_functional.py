"""nn.functional behaviour that is not one registry row: errors and warnings, dropout's randomness,
the structure of recorded graphs, random geometries (hypothesis), scenarios with a custom upstream
gradient or several backward passes, and gradient penalties through layers. Values, gradients,
grad_fn names and dtypes of nn.functional's parameter grids are rows of ``FUNCTIONAL_VS_TORCH`` in
tests/op_cases.py (checked in test_ops_differential.py).
"""
import numpy as np
import pytest

from difftest import catch, check_functional, differential, run_both, assert_same, warns

R = np.random.default_rng


def arr(*shape, seed=0, dtype=np.float64, low=None, high=None):
    rng = R(seed)
    if low is not None:
        return rng.uniform(low, high, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def ints(*shape, high=3, seed=0):
    return R(seed).integers(0, high, shape).astype(np.int64)


def check(fn, *arrays, rtol=1e-6, atol=1e-7, names=True):
    check_functional(fn, *arrays, rtol=rtol, atol=atol, grad_fn=names)


# ---- warnings --------------------------------------------------------------------------------

def test_softmax_implicit_dim_warns():
    @differential
    def scenario(T):
        x = T.tensor(arr(3, 4))
        return warns(T.nn.functional.softmax, x)
    scenario()


def test_mse_loss_broadcast_warns():
    @differential
    def scenario(T):
        return warns(T.nn.functional.mse_loss, T.tensor(arr(4, 5)), T.tensor(arr(5)))[1]
    scenario()



def test_kl_div_mean_warns():
    @differential
    def scenario(T):
        F = T.nn.functional
        return warns(F.kl_div, T.tensor(arr(2, 3)), T.tensor(arr(2, 3, seed=1, low=0, high=1)))
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


# ---- one_hot (integer only, no gradient) ------------------------------------------------------
@differential
def test_one_hot(T):
    F = T.nn.functional
    return (F.one_hot(T.tensor([0, 2, 1])), F.one_hot(T.tensor([[1], [3]]), 5), catch(F.one_hot, T.tensor([1.0])),
            catch(F.one_hot, T.tensor([5]), 3), catch(F.one_hot, T.tensor([-1]), 3))


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


@differential
def test_softmax_of_integers_and_bools_raises_torch_class(T):
    F = T.nn.functional
    out = []
    for x in (T.tensor([[1, 2], [3, 4]]), T.tensor([[True, False]]), T.tensor([[1, 2]], dtype=T.int16)):
        out += [catch(x.softmax, 1), catch(x.log_softmax, -1), catch(F.softmax, x, 0), catch(F.log_softmax, x, 1),
                F.softmax(x, 1, dtype=T.float64), x.log_softmax(0, T.float32)]
    return out


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


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
def test_regression_losses_weight_of_another_shape_raises(name):
    @differential
    def scenario(T):
        f = getattr(T.nn.functional, name)
        return catch(f, T.tensor(arr(4, 5)), T.tensor(arr(4, 5)), weight=T.tensor(arr(5)))
    scenario()



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


# ---- which column layout the convolution kernels take (the values: FUNCTIONAL_VS_TORCH's conv2d_layout rows)
from hookgrad.nn._functional import conv as _conv  # noqa: E402


@pytest.mark.parametrize("cin,cout", [(2, 4), (8, 32)])
@pytest.mark.parametrize("groups", [1, 2])
def test_conv2d_layout_choice(cin, cout, groups):
    # (8, 32) takes the channel-major path, (2, 4) the batch-major one
    assert _conv._batch_major((cout, cin // groups, 3, 3), groups) == (cin == 2)



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


# ---- double backward against torch: gradient penalties ---------------------------------------
def _weights(shape, seed):
    return R(seed).standard_normal(shape) * 0.5


@differential(rtol=1e-5, atol=1e-7)
def test_gradient_penalty_linear_tanh(T):
    T.manual_seed(0)
    model = T.nn.Sequential(T.nn.Linear(4, 5), T.nn.Tanh(), T.nn.Linear(5, 1)).double()
    with T.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(T.tensor(_weights(tuple(p.shape), i)))
    x = T.tensor(_weights((3, 4), 10), requires_grad=True)
    out = model(x).sum()
    (g,) = T.autograd.grad(out, x, create_graph=True)
    penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
    penalty.backward()
    return penalty, [p.grad for p in model.parameters()], g.grad_fn is not None


@differential(rtol=1e-5, atol=1e-7)
def test_gradient_penalty_conv2d(T):
    F = T.nn.functional
    w = T.tensor(_weights((3, 2, 3, 3), 1), requires_grad=True)
    b = T.tensor(_weights((3,), 2), requires_grad=True)
    w2 = T.tensor(_weights((1, 3, 2, 2), 3), requires_grad=True)
    x = T.tensor(_weights((2, 2, 5, 5), 4), requires_grad=True)
    h = F.avg_pool2d(F.softplus(F.conv2d(x, w, b, padding=1)), 2)
    h = F.max_pool2d(F.conv2d(h, w2, stride=1, padding=1), 2)
    out = F.layer_norm(h.flatten(1), (h[0].numel(),)).pow(3).sum()
    (gx,) = T.autograd.grad(out, x, create_graph=True)
    penalty = (gx ** 2).sum()
    penalty.backward()
    return penalty, w.grad, b.grad, w2.grad, x.grad


@differential(rtol=1e-5, atol=1e-7)
def test_double_backward_norms_and_losses(T):
    F = T.nn.functional
    x = T.tensor(_weights((4, 3, 2), 0), requires_grad=True)
    w = T.tensor(1 + _weights((3,), 1), requires_grad=True)
    b = T.tensor(_weights((3,), 2), requires_grad=True)
    y = F.batch_norm(x, None, None, w, b, training=True)
    y = F.group_norm(F.gelu(y), 3, w, b)
    loss = F.cross_entropy(y.flatten(1), T.tensor([0, 5, 2, 1]), label_smoothing=0.1)
    gx, gw = T.autograd.grad(loss, (x, w), create_graph=True)
    ((gx ** 2).sum() + (gw ** 2).sum()).backward()
    return loss, x.grad, w.grad, b.grad
