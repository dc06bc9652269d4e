"""Layer modules against torch: shared weights, forward values, gradients of inputs and parameters,
buffers, train/eval, default initialization, state_dict, repr and constructor errors."""
import math

import numpy as np
import pytest

from difftest import catch, differential, run_both, assert_same

R = np.random.default_rng


def arr(*shape, seed=0, low=None, high=None):
    rng = R(seed)
    if low is not None:
        return rng.uniform(low, high, shape)
    return rng.standard_normal(shape)


def load(T, m, seed=100, dtype=None):
    """Fill every floating parameter of ``m`` with the same NumPy values on both frameworks."""
    with T.no_grad():
        for i, (name, p) in enumerate(m.named_parameters()):
            p.copy_(T.tensor(arr(*p.shape, seed=seed + i) * 0.5))
    return m


def layer_case(T, make, inputs, modes=("train",), double=True, upstream_seed=7):
    """Build a layer, share weights, run it in each mode; record outputs, grads and buffers."""
    T.manual_seed(0)
    m = make(T)
    if double:
        m = m.double()
    load(T, m)
    rec = []
    for mode in modes:
        m.train(mode == "train")
        xs = [T.tensor(a, requires_grad=np.asarray(a).dtype.kind == "f") for a in inputs]
        out = m(*xs)
        main = out[0] if isinstance(out, tuple) else out
        entry = {"out": out, "grad_fn": main.grad_fn.name() if main.grad_fn is not None else None}
        if main.requires_grad:
            m.zero_grad()
            g = R(upstream_seed).standard_normal(tuple(main.shape))
            main.backward(T.tensor(g, dtype=main.dtype))
            entry["input_grads"] = [x.grad for x in xs if x.requires_grad]
            entry["param_grads"] = {n: p.grad for n, p in m.named_parameters()}
        entry["buffers"] = {n: b for n, b in m.named_buffers()}
        rec.append(entry)
    return rec


def check(make, *inputs, modes=("train",), rtol=1e-6, atol=1e-7, double=True):
    got, want = run_both(layer_case, make, list(inputs), modes, double)
    assert_same(got, want, rtol, atol)


# ---- linear and shape layers -----------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 3), (2, 5, 3), (3,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(shape, bias):
    check(lambda T: T.nn.Linear(3, 2, bias=bias), arr(*shape))


def test_linear_float32():
    check(lambda T: T.nn.Linear(6, 4), arr(5, 6).astype(np.float32), double=False, rtol=1e-5, atol=1e-6)


def test_bilinear():
    check(lambda T: T.nn.Bilinear(3, 4, 2), arr(5, 3), arr(5, 4, seed=1))
    check(lambda T: T.nn.Bilinear(3, 4, 2, bias=False), arr(2, 5, 3), arr(2, 5, 4, seed=1))


def test_identity_flatten_unflatten():
    check(lambda T: T.nn.Identity(54, unused="x"), arr(2, 3))
    check(lambda T: T.nn.Flatten(), arr(2, 3, 4))
    check(lambda T: T.nn.Flatten(0, 1), arr(2, 3, 4))
    check(lambda T: T.nn.Unflatten(1, (2, 3)), arr(4, 6))


# ---- convolution -----------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(), dict(padding=1, stride=2), dict(padding="same", dilation=2),
                                dict(padding=1, padding_mode="reflect"), dict(padding=(1, 2), padding_mode="replicate"),
                                dict(padding=1, padding_mode="circular"), dict(groups=2, bias=False),
                                dict(padding="same", padding_mode="reflect")])
def test_conv2d(kw):
    check(lambda T: T.nn.Conv2d(4, 6, 3, **kw), arr(2, 4, 7, 6))


@pytest.mark.parametrize("kw", [dict(), dict(padding=2, stride=2), dict(padding="same"),
                                dict(padding=1, padding_mode="reflect"), dict(groups=2)])
def test_conv1d(kw):
    check(lambda T: T.nn.Conv1d(4, 6, 3, **kw), arr(2, 4, 9))


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, output_padding=1), dict(stride=2, padding=1, groups=2),
                                dict(dilation=2, bias=False)])
def test_conv_transpose2d(kw):
    check(lambda T: T.nn.ConvTranspose2d(4, 6, 3, **kw), arr(2, 4, 5, 4))


def test_conv_transpose_output_size():
    @differential
    def scenario(T):
        T.manual_seed(0)
        m = load(T, T.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).double())
        x = T.tensor(arr(1, 2, 4, 4))
        return (m(x, output_size=(8, 8)), m(x, output_size=[1, 3, 7, 7]).shape,
                catch(m, x, output_size=(10, 10)))
    scenario()

    check(lambda T: T.nn.ConvTranspose1d(2, 3, 3, stride=2), arr(2, 2, 5))


# ---- pooling ---------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda T: T.nn.MaxPool2d(2), lambda T: T.nn.MaxPool2d(3, 2, 1, ceil_mode=True),
    lambda T: T.nn.MaxPool2d(2, return_indices=True), lambda T: T.nn.AvgPool2d(2),
    lambda T: T.nn.AvgPool2d(3, 2, 1, count_include_pad=False), lambda T: T.nn.AvgPool2d(2, divisor_override=3),
    lambda T: T.nn.AdaptiveAvgPool2d((2, 3)), lambda T: T.nn.AdaptiveAvgPool2d(1),
    lambda T: T.nn.AdaptiveAvgPool2d((None, 2)),
])
def test_pool2d(make):
    check(make, arr(2, 3, 7, 8))


@pytest.mark.parametrize("make", [lambda T: T.nn.MaxPool1d(2), lambda T: T.nn.MaxPool1d(3, 2, 1, return_indices=True),
                                  lambda T: T.nn.AvgPool1d(3), lambda T: T.nn.AvgPool1d(2, 1, 1),
                                  lambda T: T.nn.AdaptiveAvgPool1d(4)])
def test_pool1d(make):
    check(make, arr(2, 3, 9))


# ---- normalization ---------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [dict(), dict(momentum=None), dict(affine=False), dict(bias=False),
                                dict(track_running_stats=False), dict(momentum=0.5, eps=1e-3)])
def test_batchnorm2d_train_then_eval(kw):
    check(lambda T: T.nn.BatchNorm2d(3, **kw), arr(4, 3, 3, 2), modes=("train", "train", "eval", "train"))


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 6)])
def test_batchnorm1d(shape):
    check(lambda T: T.nn.BatchNorm1d(3, momentum=None), arr(*shape), modes=("train", "train", "eval"))


def test_batchnorm_float32_running_stats():
    check(lambda T: T.nn.BatchNorm2d(4), arr(8, 4, 3, 3).astype(np.float32), modes=("train", "eval"),
          double=False, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kw", [dict(normalized_shape=5), dict(normalized_shape=(3, 5)),
                                dict(normalized_shape=5, elementwise_affine=False), dict(normalized_shape=5, bias=False),
                                dict(normalized_shape=5, eps=1e-2)])
def test_layernorm(kw):
    check(lambda T: T.nn.LayerNorm(**kw), arr(2, 3, 5))


@pytest.mark.parametrize("kw", [dict(), dict(affine=False), dict(bias=False), dict(eps=0.1)])
def test_groupnorm(kw):
    check(lambda T: T.nn.GroupNorm(2, 4, **kw), arr(3, 4, 5))
    check(lambda T: T.nn.GroupNorm(4, 4, **kw), arr(3, 4, 2, 2))


# ---- dropout and embedding -------------------------------------------------------------------
@differential
def test_dropout_train_eval(T):
    T.manual_seed(0)
    m = T.nn.Dropout(0.25)
    x = T.ones(100, 40)
    y = m(x)
    m.eval()
    return (round((y == 0).double().mean().item(), 1), bool((y[y != 0] == 1 / 0.75).all()), m(x) is x,
            catch(T.nn.Dropout, 1.2))


@pytest.mark.parametrize("kw", [dict(), dict(padding_idx=2), dict(scale_grad_by_freq=True), dict(max_norm=0.5)])
def test_embedding(kw):
    check(lambda T: T.nn.Embedding(6, 3, **kw), np.array([[0, 2, 2], [5, 1, 2]]))


@differential
def test_embedding_init_and_from_pretrained(T):
    T.manual_seed(0)
    m = T.nn.Embedding(5, 3, padding_idx=1)
    w = T.tensor(arr(4, 2))
    frozen = T.nn.Embedding.from_pretrained(w)
    free = T.nn.Embedding.from_pretrained(w, freeze=False, padding_idx=0)
    out = free(T.tensor([0, 3, 3]))
    out.sum().backward()
    return (m.weight[1], m.weight.shape, frozen.weight.requires_grad, frozen.weight.data_ptr() == w.data_ptr(),
            free.weight.requires_grad, free.weight.grad, repr(free), catch(T.nn.Embedding, 3, 2, padding_idx=5))


# ---- activations -----------------------------------------------------------------------------
ACTIVATIONS = [
    lambda T: T.nn.ReLU(), lambda T: T.nn.LeakyReLU(0.2), lambda T: T.nn.ELU(0.5), lambda T: T.nn.GELU(),
    lambda T: T.nn.GELU("tanh"), lambda T: T.nn.SiLU(), lambda T: T.nn.Sigmoid(), lambda T: T.nn.Tanh(),
    lambda T: T.nn.Softplus(2, 3), lambda T: T.nn.Softmax(1), lambda T: T.nn.LogSoftmax(-1),
    lambda T: T.nn.Hardtanh(-0.5, 1.5), lambda T: T.nn.ReLU6(),
]


@pytest.mark.parametrize("make", ACTIVATIONS)
def test_activation_layers(make):
    check(make, arr(3, 4) * 4)


@pytest.mark.parametrize("name", ["ReLU", "LeakyReLU", "ELU", "SiLU", "Hardtanh", "ReLU6"])
def test_inplace_activation_layers(name):
    @differential
    def scenario(T):
        m = getattr(T.nn, name)(inplace=True)
        x = T.tensor(arr(3, 4) * 4, requires_grad=True)
        y = x * 1
        out = m(y)
        out.sum().backward()
        return out is y, out, x.grad, y._version if hasattr(y, "_version") else None
    scenario()


# ---- losses ----------------------------------------------------------------------------------
def _loss_case(T, make, x, t, dtype_t=None):
    m = make(T)
    xt = T.tensor(x, requires_grad=True)
    tt = T.tensor(t)
    loss = m(xt, tt)
    loss.backward(T.ones_like(loss))
    return loss, xt.grad, list(m.state_dict().keys())


LOSSES = [
    (lambda T: T.nn.MSELoss(), "reg"), (lambda T: T.nn.MSELoss(reduction="sum"), "reg"),
    (lambda T: T.nn.L1Loss(), "reg"), (lambda T: T.nn.SmoothL1Loss(beta=0.5), "reg"),
    (lambda T: T.nn.HuberLoss(reduction="none", delta=0.8), "reg"), (lambda T: T.nn.CrossEntropyLoss(), "cls"),
    (lambda T: T.nn.CrossEntropyLoss(weight=T.tensor([1.0, 2.0, 0.5, 1.0], dtype=T.float64), ignore_index=1,
                                     label_smoothing=0.1), "cls"),
    (lambda T: T.nn.CrossEntropyLoss(reduction="none"), "prob"), (lambda T: T.nn.NLLLoss(reduction="sum"), "cls"),
    (lambda T: T.nn.BCELoss(weight=T.tensor([1.0, 2.0, 0.5, 1.0], dtype=T.float64)), "bin"),
    (lambda T: T.nn.BCEWithLogitsLoss(pos_weight=T.tensor([1.0, 2.0, 0.5, 3.0], dtype=T.float64)), "logit"),
    (lambda T: T.nn.KLDivLoss(reduction="batchmean"), "kl"), (lambda T: T.nn.KLDivLoss(reduction="sum",
                                                                                       log_target=True), "reg"),
    (lambda T: T.nn.MSELoss(size_average=False), "reg"),
]


@pytest.mark.parametrize("make,kind", LOSSES)
def test_loss_layers(make, kind):
    x, t = arr(5, 4), arr(5, 4, seed=1)
    if kind == "cls":
        t = np.array([0, 3, 1, 1, 2])
    elif kind == "prob":
        t = R(1).dirichlet(np.ones(4), 5)
    elif kind == "bin":
        x, t = arr(5, 4, low=0.05, high=0.95), arr(5, 4, seed=1, low=0, high=1)
    elif kind == "logit":
        t = arr(5, 4, seed=1, low=0, high=1)
    elif kind == "kl":
        x, t = np.log(arr(5, 4, low=0.1, high=1)), arr(5, 4, seed=1, low=0.1, high=1)
    got, want = run_both(_loss_case, make, x, t)
    assert_same(got, want, 1e-6, 1e-7)


# ---- initialization --------------------------------------------------------------------------
INIT_LAYERS = [
    lambda T: T.nn.Linear(30, 20), lambda T: T.nn.Bilinear(10, 12, 6), lambda T: T.nn.Conv1d(4, 8, 5),
    lambda T: T.nn.Conv2d(6, 10, 3), lambda T: T.nn.Conv2d(6, 10, 3, groups=2), lambda T: T.nn.ConvTranspose2d(6, 10, 3),
    lambda T: T.nn.BatchNorm2d(7), lambda T: T.nn.LayerNorm((3, 4)), lambda T: T.nn.GroupNorm(2, 6),
    lambda T: T.nn.Embedding(50, 8),
]


def _init_summary(T, make):
    T.manual_seed(0)
    m = make(T)
    out = {}
    for name, t in m.state_dict().items():
        a = np.array(t.tolist(), dtype=float)
        out[name] = (str(t.dtype).split(".")[-1], tuple(t.shape), t.requires_grad if name in dict(
            m.named_parameters()) else None, round(float(np.abs(a).max()) if a.size else 0.0, 1))
    return out


@pytest.mark.parametrize("make", INIT_LAYERS)
def test_default_init_shapes_and_bounds(make):
    got, want = run_both(_init_summary, make)
    # same names, dtypes, shapes; values drawn from the same distributions (bounds agree to 0.1,
    # except normal draws, whose maximum is random: compare those loosely)
    assert list(got) == list(want)
    for k in want:
        assert got[k][:3] == want[k][:3], k
        if "Embedding" not in repr(make(__import__("hookgrad"))):
            assert abs(got[k][3] - want[k][3]) <= 0.15 * max(1.0, want[k][3]), (k, got[k], want[k])


def test_kaiming_uniform_bound():
    import hookgrad
    m = hookgrad.nn.Conv2d(8, 4, 3)
    bound = 1 / math.sqrt(8 * 9)
    assert float(m.weight.abs().max()) <= bound + 1e-7 and float(m.weight.abs().max()) > 0.8 * bound
    assert float(m.bias.abs().max()) <= bound + 1e-7


# ---- state_dict and buffers ------------------------------------------------------------------
@differential
def test_batchnorm_state_dict(T):
    T.manual_seed(0)
    m = T.nn.BatchNorm1d(3)
    m(T.tensor(arr(4, 3)).float())
    sd = m.state_dict()
    fresh = T.nn.BatchNorm1d(3)
    fresh.load_state_dict(sd)
    # a checkpoint written before num_batches_tracked existed (metadata version 1) still loads strictly
    old = {k: v for k, v in sd.items() if k != "num_batches_tracked"}
    old_meta = type(sd)(old) if hasattr(sd, "_metadata") else dict(old)
    old_meta._metadata = {"": {"version": 1}}
    legacy = T.nn.BatchNorm1d(3)
    legacy.load_state_dict(old_meta)
    missing = catch(T.nn.BatchNorm1d(3).load_state_dict, old)
    no_track = T.nn.BatchNorm1d(3, track_running_stats=False)
    return (list(sd.keys()), sd["num_batches_tracked"], fresh.running_mean, fresh.num_batches_tracked,
            legacy.num_batches_tracked, legacy.running_var, missing, list(no_track.state_dict().keys()),
            [n for n, _ in no_track.named_buffers()])


@differential
def test_loss_weight_buffers(T):
    ce = T.nn.CrossEntropyLoss(weight=T.tensor([1.0, 2.0]))
    bce = T.nn.BCEWithLogitsLoss(pos_weight=T.tensor([3.0]))
    return (list(ce.state_dict().keys()), list(bce.state_dict().keys()), [n for n, _ in bce.named_buffers()],
            list(T.nn.CrossEntropyLoss().state_dict().keys()), T.nn.MSELoss(size_average=False).reduction,
            T.nn.L1Loss(reduce=False).reduction)


# ---- errors ----------------------------------------------------------------------------------
@differential
def test_constructor_and_input_errors(T):
    nn = T.nn
    return [
        catch(nn.Conv2d, 3, 4, 3, groups=2), catch(nn.Conv2d, 4, 3, 3, groups=2), catch(nn.Conv2d, 4, 4, 3, groups=0),
        catch(nn.Conv2d, 4, 4, 3, padding="foo"), catch(nn.Conv2d, 4, 4, 3, stride=2, padding="same"),
        catch(nn.Conv2d, 4, 4, 3, padding_mode="bad"), catch(nn.ConvTranspose2d, 4, 4, 3, padding_mode="reflect"),
        catch(nn.GroupNorm, 3, 4), catch(nn.Unflatten, 1, 5), catch(nn.Unflatten, 1, (2, 2.0)),
        catch(nn.BatchNorm1d(3), T.tensor(arr(2, 3, 4, 5)).float()),
        catch(nn.BatchNorm2d(3), T.tensor(arr(2, 3)).float()),
        catch(nn.Linear(3, 2), T.tensor(arr(2, 4)).float()),
        catch(nn.Conv2d(3, 2, 3), T.tensor(arr(1, 2, 5, 5)).float()),
        catch(nn.Conv2d(3, 2, 3), T.tensor(arr(1, 3, 5, 5))),
        catch(nn.Embedding(3, 2), T.tensor([3])),
        catch(nn.CrossEntropyLoss(), T.tensor(arr(2, 3)).float(), T.tensor([0.5, 1.0])),
    ]


# ---- repr ------------------------------------------------------------------------------------
def _big_model(T):
    nn = T.nn
    return nn.Sequential(
        nn.Identity(), nn.Linear(3, 4), nn.Linear(3, 4, bias=False), nn.Bilinear(2, 3, 4), nn.Flatten(),
        nn.Unflatten(1, (2, 3)), nn.Conv1d(2, 3, 3), nn.Conv2d(1, 16, 3, padding=1),
        nn.Conv2d(4, 8, (3, 5), stride=2, padding=(1, 2), dilation=2, groups=2, bias=False, padding_mode="reflect"),
        nn.Conv2d(2, 2, 3, padding="same"), nn.ConvTranspose1d(2, 2, 3), nn.ConvTranspose2d(4, 2, 3, stride=2,
                                                                                              output_padding=1),
        nn.MaxPool1d(2), nn.MaxPool2d(2), nn.MaxPool2d(3, 2, 1, ceil_mode=True, return_indices=True),
        nn.AvgPool1d(3), nn.AvgPool2d(2), nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False),
        nn.AdaptiveAvgPool1d(3), nn.AdaptiveAvgPool2d((2, None)), nn.AdaptiveAvgPool2d(1),
        nn.BatchNorm1d(4), nn.BatchNorm2d(4, momentum=None, affine=False, track_running_stats=False),
        nn.LayerNorm(4), nn.LayerNorm((2, 3), elementwise_affine=False, bias=False), nn.GroupNorm(2, 4),
        nn.GroupNorm(2, 4, affine=False), nn.Dropout(), nn.Dropout(0.2, inplace=True), nn.Embedding(10, 3),
        nn.Embedding(10, 3, padding_idx=0, max_norm=1.0, norm_type=1.0, scale_grad_by_freq=True, sparse=True),
        nn.ReLU(), nn.ReLU(inplace=True), nn.LeakyReLU(), nn.LeakyReLU(0.2, True), nn.ELU(), nn.ELU(0.5, inplace=True),
        nn.GELU(), nn.GELU("tanh"), nn.SiLU(), nn.SiLU(True), nn.Sigmoid(), nn.Tanh(), nn.Softplus(),
        nn.Softplus(2, 10), nn.Softmax(), nn.Softmax(dim=1), nn.LogSoftmax(1), nn.Hardtanh(), nn.Hardtanh(-2, 2, True),
        nn.ReLU6(), nn.ReLU6(True), nn.MSELoss(), nn.L1Loss(reduction="sum"), nn.SmoothL1Loss(beta=0.5),
        nn.HuberLoss(delta=2.0), nn.CrossEntropyLoss(), nn.NLLLoss(), nn.BCELoss(), nn.BCEWithLogitsLoss(),
        nn.KLDivLoss(reduction="batchmean", log_target=True),
    )


@differential
def test_repr_of_every_layer(T):
    return repr(_big_model(T)).replace("torch.", "")


@differential
def test_parameter_names_and_shapes_of_every_layer(T):
    m = _big_model(T)
    return [(n, tuple(p.shape)) for n, p in m.named_parameters()], [(n, tuple(b.shape)) for n, b in
                                                                    m.named_buffers()]


# ---- end to end --------------------------------------------------------------------------------
@differential(rtol=1e-4, atol=1e-5)
def test_cnn_training_steps(T):
    nn = T.nn
    T.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 3, padding=1), nn.GroupNorm(2, 6), nn.GELU(), nn.AvgPool2d(2),
        nn.Flatten(), nn.Linear(6 * 2 * 2, 8), nn.LayerNorm(8), nn.SiLU(), nn.Dropout(0.0), nn.Linear(8, 3),
    )
    load(T, model)
    opt = T.optim.SGD(model.parameters(), lr=0.1)
    x = T.tensor(arr(5, 1, 8, 8)).float()
    y = T.tensor([0, 2, 1, 1, 0])
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = nn.CrossEntropyLoss(label_smoothing=0.05)(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return losses, model(x), dict(model.state_dict())


# ---- hooks on the layers -----------------------------------------------------------------------
@differential(rtol=1e-5, atol=1e-6)
def test_module_hooks_see_torch_values(T):
    nn = T.nn
    T.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(12, 4), nn.LogSoftmax(1)).double()
    load(T, model)
    log = []
    for name, m in model.named_children():
        m.register_forward_hook(lambda mod, inp, out, name=name: log.append(("fwd", name, out.shape)))
        m.register_full_backward_hook(lambda mod, gin, gout, name=name: log.append(
            ("bwd", name, [g for g in gin], [g for g in gout])))
    x = T.tensor(arr(2, 2, 4, 4), requires_grad=True)
    out = model(x)
    nn.NLLLoss()(out, T.tensor([1, 3])).backward()
    return log, x.grad


@differential
def test_inplace_relu_after_hooked_module(T):
    nn = T.nn
    lin = nn.Linear(3, 3).double()
    lin.register_full_backward_hook(lambda *a: None)
    relu = nn.ReLU(inplace=True)
    x = T.tensor(arr(2, 3), requires_grad=True)
    return catch(lambda: relu(lin(x)))
