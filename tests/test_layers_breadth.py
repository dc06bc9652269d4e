"""The breadth layers and functions against torch: the margin/embedding/Poisson/Gaussian loss modules,
LP pooling, torch.* names of the nn kernels (the same functions where torch's are), window
functions, cov/corrcoef, random fills, and second derivatives of the registry's breadth rows."""
import warnings

import numpy as np
import pytest

import hookgrad
from difftest import catch, differential, warns
from op_cases import BREADTH, BREADTH_SECOND_ORDER
from hookgrad.autograd import gradgradcheck

import torch

R = np.random.default_rng


def _arr(*shape, seed=0):
    return R(seed).standard_normal(shape)


def _signs(*shape, seed=3):
    return np.sign(R(seed).standard_normal(shape))


# ---- loss modules: values, gradients, module hooks --------------------------------------------------
LOSS_MODULES = {
    "CosineEmbeddingLoss": (lambda T: T.nn.CosineEmbeddingLoss(margin=0.1), [(3, 4), (3, 4)],
                            lambda T: [T.tensor([1, -1, 1])]),
    "HingeEmbeddingLoss": (lambda T: T.nn.HingeEmbeddingLoss(margin=0.5, reduction="sum"), [(3, 4)],
                           lambda T: [T.tensor(_signs(3, 4))]),
    "MarginRankingLoss": (lambda T: T.nn.MarginRankingLoss(0.2), [(5,), (5,)], lambda T: [T.tensor(_signs(5))]),
    "TripletMarginLoss": (lambda T: T.nn.TripletMarginLoss(margin=1.5, p=1.0, swap=True), [(3, 4)] * 3,
                          lambda T: []),
    "TripletMarginWithDistanceLoss": (lambda T: T.nn.TripletMarginWithDistanceLoss(
        distance_function=T.nn.PairwiseDistance(p=3.0), reduction="none"), [(3, 4)] * 3, lambda T: []),
    "PoissonNLLLoss": (lambda T: T.nn.PoissonNLLLoss(full=True), [(3, 4)],
                       lambda T: [T.tensor(R(4).uniform(0, 4, (3, 4)))]),
    "PoissonNLLLoss_rate": (lambda T: T.nn.PoissonNLLLoss(log_input=False, eps=1e-4, reduction="none"), [(3, 4)],
                            lambda T: [T.tensor(R(4).uniform(0, 4, (3, 4)))]),
    "GaussianNLLLoss": (lambda T: T.nn.GaussianNLLLoss(full=True, eps=1e-3), [(3, 4), (3, 4)],
                        lambda T: [T.tensor(R(5).uniform(0.0, 2, (3, 1)))]),
    "SoftMarginLoss": (lambda T: T.nn.SoftMarginLoss(), [(3, 4)], lambda T: [T.tensor(_signs(3, 4))]),
    "MultiLabelSoftMarginLoss": (lambda T: T.nn.MultiLabelSoftMarginLoss(weight=T.tensor([1.0, 0.5, 2.0, 1.0],
                                                                                          dtype=T.float64)),
                                 [(3, 4)], lambda T: [T.tensor((_signs(3, 4) > 0).astype(np.float64))]),
    "MultiMarginLoss": (lambda T: T.nn.MultiMarginLoss(p=2, margin=0.5), [(3, 4)], lambda T: [T.tensor([3, 0, 0])]),
    "MultiLabelMarginLoss": (lambda T: T.nn.MultiLabelMarginLoss(), [(3, 4)],
                             lambda T: [T.tensor([[1, 2, -1, 0], [3, -1, 0, 0], [0, 1, 2, 3]])]),
    "NLLLoss2d": (lambda T: T.nn.NLLLoss2d(), [(2, 3, 2, 2)], lambda T: [T.tensor([[[0, 2], [1, 1]], [[2, 2], [0, 1]]])]),
}


@pytest.mark.parametrize("name", sorted(LOSS_MODULES))
@differential(rtol=1e-7, atol=1e-9)
def test_loss_module_values_gradients_and_hooks(T, name):
    make, shapes, extra = LOSS_MODULES[name]
    module = make(T)
    log = []
    module.register_forward_pre_hook(lambda m, args: log.append(("pre", len(args))))
    module.register_forward_hook(lambda m, args, out: log.append(("fwd", tuple(out.shape))))
    module.register_full_backward_hook(lambda m, gin, gout: log.append(
        ("bwd", [g is not None for g in gin], [tuple(g.shape) for g in gout])))
    inputs = [T.tensor(_arr(*s, seed=i), requires_grad=True) for i, s in enumerate(shapes)]
    if name == "NLLLoss2d":
        inputs = [T.tensor(_arr(*shapes[0]), requires_grad=True)]
        out = module(inputs[0].log_softmax(1), *extra(T))
    else:
        out = module(*inputs, *extra(T))
    out.backward(T.ones_like(out))
    return out, [x.grad for x in inputs], log, repr(module)


LP_POOLS = [("LPPool1d", (2, 3), (2, 3, 7)), ("LPPool1d", (1.5, 2, 1, True), (3, 5)),
            ("LPPool2d", (3, 2), (1, 2, 5, 4)), ("LPPool2d", (2, (2, 3), (1, 2)), (2, 4, 5)),
            ("LPPool3d", (2, 2), (1, 1, 4, 4, 4)), ("LPPool1d", (float("inf"), 2), (1, 2, 6))]


@pytest.mark.parametrize("cls, args, shape", LP_POOLS)
@differential(rtol=1e-7, atol=1e-9)
def test_lp_pool_modules(T, cls, args, shape):
    module = getattr(T.nn, cls)(*args)
    fired = []
    module.register_forward_hook(lambda m, a, out: fired.append(tuple(out.shape)))
    x = T.tensor(np.abs(_arr(*shape)) + 0.1, requires_grad=True)
    out = module(x)
    out.backward(T.ones_like(out))
    return out, x.grad, fired, repr(module)


def test_breadth_modules_are_in_nn():
    for name in list(LOSS_MODULES) + ["LPPool1d", "LPPool2d", "LPPool3d"]:
        name = name.split("_")[0]
        assert issubclass(getattr(hookgrad.nn, name), hookgrad.nn.Module)


# ---- bad input: torch's exception classes ---------------------------------------------------------------
BAD = {
    "cosine_target_2d": lambda T: T.nn.functional.cosine_embedding_loss(T.ones(2, 3), T.ones(2, 3), T.ones(2, 1)),
    "cosine_input_dims": lambda T: T.nn.functional.cosine_embedding_loss(T.ones(3), T.ones(3), T.ones(3)),
    "margin_ranking_dims": lambda T: T.nn.functional.margin_ranking_loss(T.ones(3), T.ones(3), T.ones(1, 3)),
    "triplet_dims": lambda T: T.nn.functional.triplet_margin_loss(T.ones(2, 3), T.ones(3), T.ones(2, 3)),
    "triplet_distance_margin": lambda T: T.nn.functional.triplet_margin_with_distance_loss(
        T.ones(2, 3), T.ones(2, 3), T.ones(2, 3), margin=0.0),
    "triplet_module_margin": lambda T: T.nn.TripletMarginLoss(margin=-1.0),
    "poisson_reduction": lambda T: T.nn.functional.poisson_nll_loss(T.ones(3), T.ones(3), reduction="avg"),
    "gaussian_negative_var": lambda T: T.nn.functional.gaussian_nll_loss(T.ones(3), T.ones(3), -T.ones(3)),
    "gaussian_var_shape": lambda T: T.nn.functional.gaussian_nll_loss(T.ones(3, 4), T.ones(3, 4), T.ones(2)),
    "multi_margin_p": lambda T: T.nn.functional.multi_margin_loss(T.ones(2, 3), T.tensor([0, 1]), p=3),
    "multi_margin_weight_dims": lambda T: T.nn.functional.multi_margin_loss(T.ones(2, 3), T.tensor([0, 1]),
                                                                            weight=T.ones(1, 3)),
    "multi_margin_target_range": lambda T: T.nn.functional.multi_margin_loss(T.ones(2, 3), T.tensor([0, 3])),
    "multilabel_margin_target_shape": lambda T: T.nn.functional.multilabel_margin_loss(T.ones(2, 3),
                                                                                       T.tensor([0, 1])),
    "soft_margin_reduction": lambda T: T.nn.functional.soft_margin_loss(T.ones(3), T.ones(3), reduction="x"),
    "window_dtype": lambda T: T.hann_window(4, dtype=T.int64),
    "window_length": lambda T: T.kaiser_window(-1),
    "cov_dims": lambda T: T.cov(T.ones(2, 2, 2)),
    "cov_fweights_dtype": lambda T: T.cov(T.ones(2, 3), fweights=T.ones(3)),
    "cov_aweights_dtype": lambda T: T.cov(T.ones(2, 3), aweights=T.ones(3, dtype=T.int64)),
    "cov_weights_numel": lambda T: T.cov(T.ones(2, 3), fweights=T.ones(2, dtype=T.int64)),
    "cov_negative_fweights": lambda T: T.cov(T.ones(2, 3), fweights=-T.ones(3, dtype=T.int64)),
    "addr_vec_dims": lambda T: T.addr(T.ones(2, 3), T.ones(2, 1), T.ones(3)),
    "addbmm_dims": lambda T: T.addbmm(T.ones(2, 3), T.ones(2, 4), T.ones(2, 4, 3)),
    "addbmm_sizes": lambda T: T.addbmm(T.ones(2, 3), T.ones(2, 2, 4), T.ones(2, 3, 3)),
    "feature_dropout_1d": lambda T: T.feature_dropout(T.ones(3), 0.5, True),
    "dropout_p": lambda T: T.dropout(T.ones(3), 1.5, True),
    "torch_batch_norm_non_tensor": lambda T: T.batch_norm(np.ones(3), None, None, None, None, True, 0.1, 1e-5, False),
    "torch_kl_div_reduction": lambda T: T.kl_div(T.ones(3), T.ones(3), 5),
    "geometric_p": lambda T: T.ones(3).geometric_(1.5),
}


@pytest.mark.parametrize("name", sorted(BAD))
@differential
def test_bad_input_raises_torch_class(T, name):
    return catch(BAD[name], T)


# ---- torch.* names: the same functions where torch's are, torch's signatures elsewhere -------------------
def test_torch_names_are_the_functional_functions_where_torch_shares_them():
    F = hookgrad.nn.functional
    for name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc",
                 "avg_pool1d", "adaptive_avg_pool1d", "bilinear", "channel_shuffle", "pairwise_distance",
                 "pixel_shuffle", "pixel_unshuffle", "prelu", "hardshrink", "celu_", "selu_", "rrelu_", "threshold_",
                 "pdist"):
        same_in_torch = getattr(torch, name) is getattr(torch.nn.functional, name)
        assert same_in_torch
        assert getattr(hookgrad, name) is getattr(F, name), name


@differential(rtol=1e-7, atol=1e-9)
def test_torch_functional_names_forward_backward(T):
    x = T.tensor(_arr(2, 3, 5), requires_grad=True)
    w = T.tensor(_arr(4, 3, 2, seed=1), requires_grad=True)
    out = [T.conv1d(x, w, None, 1, 1), T.conv_transpose1d(x, w.transpose(0, 1), stride=2),
           T.avg_pool1d(x, 2), T.adaptive_avg_pool1d(x, 3), T.pixel_shuffle(x[:, :, :4].reshape(2, 4, 3, 1), 2),
           T.channel_shuffle(x.reshape(2, 3, 5, 1), 3), T.pairwise_distance(x[0], x[1]),
           T.rms_norm(x, (5,)), T.dropout(x, 0.0, True), T.alpha_dropout(x, 0.2, False)]
    total = sum(o.sum() * (i + 1) for i, o in enumerate(out))
    total.backward()
    return out, x.grad, w.grad


@differential
def test_torch_kl_div_does_not_warn_where_functional_does(T):
    a, b = T.zeros(2, 3), T.full((2, 3), 1 / 3)
    return warns(T.kl_div, a, b, 1), warns(T.nn.functional.kl_div, a, b)


@differential
def test_inplace_activations_modify_their_input(T):
    results = []
    for fn, args in [(T.celu_, (0.5,)), (T.selu_, ()), (T.threshold_, (0.2, -1.0)), (T.rrelu_, ()),
                     (T.nn.functional.elu_, ()), (T.nn.functional.hardtanh_, ()), (T.nn.functional.leaky_relu_, ())]:
        x = T.tensor(_arr(2, 3))
        y = fn(x, *args)
        results.append((y is x, x, x._version > 0 if hasattr(x, "_version") else None))
    return results


@differential
def test_feature_dropout_masks_whole_channels(T):
    T.manual_seed(0)
    x = T.ones(4, 6, 5)
    y = T.feature_dropout(x, 0.5, True)
    per_channel = (y == y[:, :, :1]).all()
    values = set(np.unique(y.numpy()).tolist())
    x2 = T.ones(4, 6, 5)
    z = T.feature_dropout_(x2, 0.5, True)
    return bool(per_channel), values <= {0.0, 2.0}, z is x2, T.feature_dropout(x, 0.5, False) is x


# ---- windows, covariance, random fills -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
@pytest.mark.parametrize("length", [0, 1, 2, 5, 8])
@pytest.mark.parametrize("periodic", [True, False])
@differential(rtol=1e-6, atol=1e-7)
def test_window_functions(T, name, length, periodic):
    fn = getattr(T, name)
    return fn(length, periodic), fn(length, periodic, dtype=T.float64), fn(length, requires_grad=True).requires_grad


@differential(rtol=1e-6, atol=1e-7)
def test_window_parameters(T):
    return T.hamming_window(7, True, 0.5, 0.3), T.hamming_window(6, False, 0.6), T.kaiser_window(9, False, 3.5)


@differential(rtol=1e-6, atol=1e-8)
def test_cov_corrcoef_cases(T):
    x = T.tensor(_arr(3, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one_obs = T.cov(T.tensor(_arr(3, 1)))
    return (T.cov(x), T.cov(x[0]), T.cov(x, correction=0), T.cov(x.float(), fweights=T.tensor([1, 0, 2, 1, 3, 1])),
            T.cov(x, aweights=T.linspace(0.1, 1, 6, dtype=T.float64), correction=3), one_obs,
            T.cov(T.tensor([[1, 2, 4], [0, 1, 1]])), T.corrcoef(x), T.corrcoef(T.tensor([1.0, 2.0, 4.0])),
            T.corrcoef(T.tensor([[1, 2, 3], [3, 1, 0]])), warns(T.cov, T.ones(2, 1)))


@differential
def test_addbmm_addr_beta_zero_ignores_nan(T):
    nan_input = T.full((2, 2), float("nan"), requires_grad=True)
    y = T.addbmm(nan_input, T.ones(3, 2, 4), T.ones(3, 4, 2), beta=0)
    z = T.addr(nan_input, T.ones(2), T.ones(2), beta=0)
    (y.sum() + z.sum()).backward()
    return y, z, nan_input.grad


def test_random_fills_cauchy_and_geometric():
    hookgrad.manual_seed(0)
    c = hookgrad.empty(20000, dtype=hookgrad.float64).cauchy_(1.0, 2.0)
    assert c.dtype == hookgrad.float64
    assert abs(float(c.median()) - 1.0) < 0.1  # median of Cauchy(1, 2)
    q = np.quantile(c.numpy(), [0.25, 0.75])
    assert abs(q[0] + 1.0) < 0.15 and abs(q[1] - 3.0) < 0.15  # quartiles at median -/+ sigma
    g = hookgrad.zeros(20000, dtype=hookgrad.int64).geometric_(0.25)
    assert g.dtype == hookgrad.int64 and int(g.min()) >= 1
    assert abs(float(g.double().mean()) - 4.0) < 0.15  # mean 1/p


@differential
def test_multinomial_method_and_vdot(T):
    T.manual_seed(0)
    probs = T.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    return probs.multinomial(2, True), T.tensor([1.0, 2.0]).vdot(T.tensor([3.0, 4.0]))


# ---- second derivatives of the registry's breadth rows ---------------------------------------------------
@pytest.mark.parametrize("name", BREADTH_SECOND_ORDER)
def test_breadth_gradgradcheck(name):
    fn, shapes = BREADTH[name]
    inputs = [hookgrad.tensor(R(11 + i).uniform(-2, 2, s), requires_grad=True) for i, s in enumerate(shapes)]
    assert gradgradcheck(lambda *xs: fn(hookgrad, *xs), inputs, eps=1e-6, atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("name", ["cosine_embedding_loss", "multilabel_soft_margin_loss", "poisson_nll_loss",
                                  "triplet_margin_loss", "lp_pool2d", "cov_weights", "addbmm"])
def test_breadth_double_backward_matches_torch(name):
    fn, shapes = BREADTH[name]
    arrays = [R(21 + i).uniform(-2, 2, s) for i, s in enumerate(shapes)]

    def scenario(T):
        xs = [T.tensor(a, requires_grad=True) for a in arrays]
        out = fn(T, *xs)
        grads = T.autograd.grad(out.sum(), xs, create_graph=True, allow_unused=True)
        second = T.autograd.grad(sum((g * g).sum() for g in grads if g is not None), xs, allow_unused=True)
        return grads, second

    from difftest import assert_same, normalize
    assert_same(normalize(scenario(hookgrad)), normalize(scenario(torch)), rtol=1e-6, atol=1e-8)


@differential
def test_nll_loss2d_is_deprecated(T):
    return warns(lambda: repr(T.nn.NLLLoss2d())), isinstance(T.nn.NLLLoss2d(), T.nn.NLLLoss)


@differential(rtol=1e-7, atol=1e-9)
def test_torch_logit_in_place_function(T):
    x = T.tensor(_arr(2, 3), requires_grad=True)
    y = T.logit_(x.sigmoid() * 1, 0.2)
    z = T.logit_(x.sigmoid() * 1)
    (y.sum() + z.sum()).backward()
    return y, z, x.grad


CTC_CASES = {
    "mean": dict(reduction="mean"), "sum_tensor_lengths": dict(reduction="sum", tensors=True),
    "none_flat": dict(reduction="none", flat=True), "zero_infinity": dict(reduction="none", zero_infinity=True),
    "zero_infinity_mean": dict(reduction="mean", zero_infinity=True), "infinite": dict(reduction="sum"),
    "float32": dict(reduction="mean", dtype="float32"), "blank_last": dict(reduction="none", blank=4),
}


@pytest.mark.parametrize("case", sorted(CTC_CASES))
@differential(rtol=1e-5, atol=1e-6)
def test_ctc_loss_against_torch(T, case):
    """Varied input and target lengths (one sample too short for its target: an infinite loss)."""
    opts = dict(CTC_CASES[case])
    dtype = getattr(T, opts.pop("dtype", "float64"))
    flat, tensors, blank = opts.pop("flat", False), opts.pop("tensors", False), opts.pop("blank", 0)
    x = T.tensor(_arr(6, 3, 5), dtype=dtype, requires_grad=True)
    targets = T.tensor([[1, 2, 2], [3, 4, 0], [1, 1, 1]]) - (1 if blank == 4 else 0)
    input_lengths, target_lengths = [6, 5, 3], [3, 2, 3]
    if flat:
        targets = T.tensor([1, 2, 2, 3, 4, 1, 1, 1])
    if tensors:
        input_lengths, target_lengths = T.tensor(input_lengths), T.tensor(target_lengths)
    loss = T.nn.functional.ctc_loss(x.log_softmax(2), targets, input_lengths, target_lengths, blank=blank, **opts)
    (loss * T.arange(1, loss.numel() + 1, dtype=loss.dtype).reshape(loss.shape)).sum().backward()
    return loss, x.grad


@differential(rtol=1e-6, atol=1e-8)
def test_ctc_gradient_is_torchs_on_raw_log_probs(T):
    """torch's gradient in log_probs assumes normalized inputs (exp(log_probs) - posteriors)."""
    lp = T.tensor(_arr(4, 2, 3), requires_grad=True)
    module = T.nn.CTCLoss(reduction="sum")
    fired = []
    module.register_forward_hook(lambda m, args, out: fired.append(len(args)))
    loss = module(lp, T.tensor([[1, 2], [2, 2]]), (4, 4), (2, 2))
    loss.backward()
    return loss, lp.grad, fired, type(loss.grad_fn.next_functions[0][0]).__name__


@differential
def test_ctc_has_no_double_backward_and_checks_arguments(T):
    F = T.nn.functional
    lp = T.tensor(_arr(5, 2, 4), requires_grad=True)
    (g,) = T.autograd.grad(F.ctc_loss(lp.log_softmax(2), T.tensor([[1, 2], [3, 3]]), (5, 4), (2, 2)), lp,
                           create_graph=True)
    targets = T.tensor([[1, 2], [3, 3]])
    return (catch(lambda: g.sum().backward()),
            catch(F.ctc_loss, lp, targets, (6, 4), (2, 2)), catch(F.ctc_loss, lp, targets, (5, 4), (3, 2)),
            catch(F.ctc_loss, lp, targets, (5,), (2, 2)), catch(F.ctc_loss, lp, targets, (5, 4), (2, 2), blank=4),
            catch(F.ctc_loss, lp, T.tensor([1, 2, 3]), (5, 4), (2, 2)), catch(F.ctc_loss, lp, targets, (-1, 4), (2, 2)),
            catch(F.ctc_loss, lp, targets, (5, 4), (2, 2), reduction="avg"))


@differential
def test_tensor_methods_resize_set_subclass_and_legacy_attributes(T):
    out = {}
    x = T.arange(6.).reshape(2, 3).requires_grad_()
    y = warns(lambda: x.resize(3, 2))
    out["resize"] = y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = x.resize(3, 2)
        out["resize_as"] = x.resize_as(T.ones(6))
        out["resize_tuple"] = catch(x.resize, (6,))
        out["resize_names"] = type(r.grad_fn).__name__
        (r * T.arange(6.).reshape(3, 2)).sum().backward()
        out["grad"] = x.grad
        out["bad"] = catch(x.resize, 4)
    a, b = T.ones(2), T.arange(3.)
    out["set_"] = (a.set_(b) is a, a, a.is_set_to(b), b.is_set_to(a), a.is_set_to(b.clone()), b.is_set_to(b.view(3)), b.is_set_to(b[:2]))
    b.add_(1); out["shared"] = a
    out["set_empty"] = T.ones(2).set_()
    out["set_leaf"] = catch(lambda: T.ones(2, requires_grad=True).set_(T.ones(3)))
    out["set_storage"] = T.ones(4).set_(T.arange(5.).untyped_storage(), 1, (2,), (2,))
    out["name"] = x.name
    out["volatile"] = warns(lambda: x.volatile)
    out["grad_dtype"] = (x.grad_dtype, catch(lambda: (x * 2).grad_dtype), catch(lambda: setattr(x * 2, "grad_dtype", T.float64)))
    class M(T.Tensor):
        pass
    m = x.as_subclass(M)
    out["as_subclass"] = (type(m).__name__, m.requires_grad, m.is_leaf, type(m.grad_fn).__name__, m.data_ptr() == x.data_ptr(), catch(x.as_subclass, int))
    p = (x * 2).as_subclass(T.nn.Parameter)
    out["as_param"] = (type(p).__name__, p.requires_grad)
    out["misc"] = (x.is_distributed(), x.const_data_ptr() == x.data_ptr())
    out["removed"] = [catch(f) for f in (lambda: T.lstsq(x, x), lambda: T.solve(x, x), lambda: T.eig(x), lambda: T.symeig(x), lambda: T.matrix_rank(x), lambda: x.lstsq(x), lambda: x.eig())]
    return out


# ---- fractional max pooling: torch's windows for given samples ------------------------------------------
def _fractional_run(T, dtype, nd, shape, kernel, out, ratio=None):
    g = np.random.default_rng(0)
    x = T.tensor(g.standard_normal(shape), dtype=getattr(T, dtype), requires_grad=True)
    n = shape[0] if len(shape) == nd + 2 else 1
    c = shape[-nd - 1]
    s = T.tensor(g.uniform(0, 1, (n, c, nd)), dtype=getattr(T, dtype))
    fn = T.nn.functional.fractional_max_pool2d if nd == 2 else T.nn.functional.fractional_max_pool3d
    y, i = fn(x, kernel, out, ratio, True, _random_samples=s)
    (y * T.arange(y.numel(), dtype=y.dtype).reshape(y.shape)).sum().backward()
    return y, i, x.grad


FRACTIONAL = [("float64", 2, (2, 3, 9, 8), 3, (4, 5)), ("float32", 2, (3, 10, 11), (2, 3), (6, 4)), ("float64", 2, (1, 2, 7, 7), 2, None, (0.5, 0.7)),
             ("float64", 3, (2, 2, 6, 7, 8), 2, (3, 4, 5)), ("float32", 3, (2, 9, 6, 5), (3, 2, 2), (4, 3, 2)), ("float32", 2, (1, 1, 50, 50), 3, (17, 33))]


@pytest.mark.parametrize("case", range(len(FRACTIONAL)))
@differential(rtol=1e-6, atol=1e-7)
def test_fractional_max_pool_windows_values_gradients(T, case):
    return _fractional_run(T, *FRACTIONAL[case])


@differential(rtol=1e-7, atol=1e-9)
def test_fractional_max_pool_modules(T):
    samples = T.tensor([[[0.25, 0.75]], [[0.5, 0.1]]], dtype=T.float64)
    m2 = T.nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.6), return_indices=True, _random_samples=samples)
    m3 = T.nn.FractionalMaxPool3d((2, 2, 1), output_size=2, _random_samples=T.tensor([[[0.3, 0.6, 0.9]]],
                                                                                   dtype=T.float64))
    fired = []
    m2.register_forward_hook(lambda m, a, out: fired.append(tuple(out[0].shape)))
    x = T.tensor(_arr(2, 1, 8, 9), requires_grad=True)
    y, idx = m2(x)
    z = m3(T.tensor(_arr(1, 4, 4, 3, seed=2)))
    y.sum().backward()
    random_run = T.nn.FractionalMaxPool2d(2, output_size=(3, 3))(x).shape
    return (y, idx, x.grad, z, fired, sorted(dict(m2.named_buffers())), random_run,
            catch(T.nn.FractionalMaxPool2d, 2), catch(T.nn.FractionalMaxPool2d, 2, 3, 0.5),
            catch(T.nn.FractionalMaxPool2d, 2, output_ratio=1.5), catch(T.nn.FractionalMaxPool3d, 0, 2),
            catch(T.nn.functional.fractional_max_pool2d, x, 3, 7),
            catch(T.nn.functional.fractional_max_pool2d, x, 2, 3, _random_samples=T.rand(2, 2, 2)),
            catch(T.nn.functional.fractional_max_pool2d, x, 2),
            catch(T.nn.functional.fractional_max_pool2d, x, 2, output_ratio=0.5))


# ---- affine_grid, grid_sample, gumbel_softmax ----------------------------------------------------------
def _grid_sample_run(T, nd, mode, pad, align, dtype="float64"):
    g = np.random.default_rng(0)
    shape = (2, 3, 4, 5) if nd == 2 else (2, 2, 3, 4, 5)
    x = T.tensor(g.standard_normal(shape), dtype=getattr(T, dtype), requires_grad=True)
    gshape = (2, 3, 6, 2) if nd == 2 else (2, 2, 3, 4, 3)
    grid = T.tensor(g.uniform(-1.6, 1.6, gshape), dtype=getattr(T, dtype), requires_grad=True)
    y = T.nn.functional.grid_sample(x, grid, mode, pad, align)
    (y * T.arange(y.numel(), dtype=y.dtype).reshape(y.shape).sin()).sum().backward()
    return y, x.grad, grid.grad


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [True, False])
@differential(rtol=1e-7, atol=1e-9)
def test_grid_sample_values_and_gradients(T, nd, mode, padding_mode, align_corners):
    return _grid_sample_run(T, nd, mode, padding_mode, align_corners)


def _affine_grid_run(T, nd, align):
    th = T.tensor(np.random.default_rng(1).standard_normal((2, nd, nd + 1)), requires_grad=True)
    size = (2, 3, 4, 5) if nd == 2 else (2, 3, 2, 4, 5)
    gr = T.nn.functional.affine_grid(th, size, align)
    (gr * gr).sum().backward()
    return gr, th.grad


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("align_corners", [True, False])
@differential(rtol=1e-7, atol=1e-9)
def test_affine_grid_values_and_gradients(T, nd, align_corners):
    return _affine_grid_run(T, nd, align_corners)


@differential
def test_affine_grid_and_grid_sample_arguments(T):
    F = T.nn.functional
    theta = T.zeros(1, 2, 3)
    x = T.ones(1, 1, 3, 3)
    return (warns(F.affine_grid, theta, (1, 1, 2, 2)), F.affine_grid(theta, (1, 1, 1, 1), False),
            catch(F.affine_grid, theta.long(), (1, 1, 2, 2)), catch(F.affine_grid, theta, (1, 1, 2, 2, 2)),
            catch(F.affine_grid, theta, (1, 2)), catch(F.affine_grid, theta, (1, 1, 0, 2)),
            warns(F.grid_sample, x, T.zeros(1, 2, 2, 2)), catch(F.grid_sample, x, T.zeros(1, 2, 2, 2), "area"),
            catch(F.grid_sample, x, T.zeros(1, 2, 2, 2), padding_mode="wrap"),
            catch(F.grid_sample, x, T.zeros(1, 2, 2, 3), align_corners=False),
            catch(F.grid_sample, x, T.zeros(2, 2, 2, 2), align_corners=False),
            catch(F.grid_sample, x, T.zeros(1, 2, 2), align_corners=False))


@differential
def test_gumbel_softmax_samples(T):
    T.manual_seed(0)
    logits = T.tensor(_arr(4, 5), requires_grad=True)
    soft = T.nn.functional.gumbel_softmax(logits, tau=0.5)
    hard = T.nn.functional.gumbel_softmax(logits, hard=True, dim=0)
    (soft[:, 0].sum() + (hard * T.arange(20.0, dtype=T.float64).reshape(4, 5)).sum()).backward()
    one_hot = ((hard == 0) | (hard == 1)).all() and bool((hard.sum(0) == 1).all())
    return (soft.shape, bool(T.allclose(soft.sum(1), T.ones(4, dtype=T.float64))), bool(one_hot),
            logits.grad.shape, bool((logits.grad != 0).any()), hard.grad_fn is not None,
            warns(T.nn.functional.gumbel_softmax, logits, eps=1e-3)[1])


@differential(rtol=1e-7, atol=1e-9)
def test_multi_head_attention_forward_in_functional(T):
    T.manual_seed(0)
    mha = T.nn.MultiheadAttention(4, 2).double()
    with T.no_grad():
        for i, p in enumerate(mha.parameters()):
            p.copy_(T.tensor(_arr(*p.shape, seed=i)))
    q = T.tensor(_arr(3, 1, 4, seed=9), requires_grad=True)
    out, weights = T.nn.functional.multi_head_attention_forward(
        q, q, q, 4, 2, mha.in_proj_weight, mha.in_proj_bias, None, None, False, 0.0, mha.out_proj.weight,
        mha.out_proj.bias, training=False)
    out.sum().backward()
    return out, weights, q.grad


# grid_sample's and the recurrent cells' graphs are composed differently from torch's, so their rows are
# gradchecked here rather than in the registry, whose saved-attribute walk pairs nodes with torch's
COMPOSED_CASES = {
    "grid_sample_bicubic": (lambda T, x, g: T.nn.functional.grid_sample(x, g * 1.2, "bicubic", "reflection", True),
                            [(1, 2, 3, 4), (1, 2, 2, 2)]),
    "rnn_cells": (lambda T, x, h, w: T.lstm_cell(x, (h, h * 0.5), w, w[:, :3] * 0.3)[0] + T.gru_cell(
        x, h, w[:9], w[:9, :3]) + T.rnn_tanh_cell(x, h, w[:3], w[3:6, :3]), [(2, 3), (2, 3), (12, 3)]),
    "grid_sample_bilinear": (lambda T, x, g: T.nn.functional.grid_sample(x, g * 0.8, align_corners=False),
                             [(1, 2, 3, 4), (1, 2, 3, 2)]),
    "grid_sample_reflection_3d": (lambda T, x, g: T.nn.functional.grid_sample(
        x, g * 0.9, padding_mode="reflection", align_corners=True), [(1, 1, 2, 3, 3), (1, 2, 2, 1, 3)]),
    "grid_sample_border_nearest": (lambda T, x, g: T.nn.functional.grid_sample(
        x, g, mode="nearest", padding_mode="border", align_corners=False)
        + T.nn.functional.grid_sample(x, g * 0.7, padding_mode="border", align_corners=True), [(2, 1, 3, 3), (2, 2, 2, 2)]),
}


@pytest.mark.parametrize("name", sorted(COMPOSED_CASES))
def test_grid_sample_gradcheck_and_gradgradcheck(name):
    fn, shapes = COMPOSED_CASES[name]
    inputs = [hookgrad.tensor(R(31 + i).uniform(-1, 1, s), requires_grad=True) for i, s in enumerate(shapes)]
    assert hookgrad.autograd.gradcheck(lambda *xs: fn(hookgrad, *xs), inputs, eps=1e-6, atol=1e-5, rtol=1e-4)
    assert gradgradcheck(lambda *xs: fn(hookgrad, *xs), inputs, eps=1e-6, atol=1e-4, rtol=1e-3)


@pytest.mark.parametrize("name", sorted(COMPOSED_CASES))
def test_grid_sample_cases_match_torch(name):
    fn, shapes = COMPOSED_CASES[name]
    arrays = [R(41 + i).uniform(-1, 1, s) for i, s in enumerate(shapes)]

    def scenario(T):
        xs = [T.tensor(a, requires_grad=True) for a in arrays]
        out = fn(T, *xs)
        out.backward(T.ones_like(out))
        return out, [x.grad for x in xs]

    from difftest import assert_same, normalize
    assert_same(normalize(scenario(hookgrad)), normalize(scenario(torch)), rtol=1e-7, atol=1e-9)


@differential(rtol=1e-6, atol=1e-8)
def test_native_norms_convolution_cells_and_deprecated_norms(T):
    mk = lambda *s, seed=0: T.tensor(np.random.default_rng(seed).standard_normal(s), requires_grad=True)
    x, w, b = mk(3, 4, 5), mk(4, seed=1), mk(4, seed=2)
    out = {}
    r = T.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5); out["nbn"] = r
    rm, rv = T.zeros(4, dtype=T.float64), T.ones(4, dtype=T.float64)
    out["nbn_eval"] = T.native_batch_norm(x, None, None, rm, rv, False, 0.1, 1e-5)
    out["nln"] = T.native_layer_norm(x, (5,), None, None, 1e-5)
    out["ngn"] = T.native_group_norm(x, w, b, 3, 4, 5, 2, 1e-5)
    out["nd_eval"] = T.native_dropout(x, 0.5, False)
    kw = mk(6, 4, 2, seed=3)
    out["conv"] = T.convolution(x, kw, None, [1], [1], [1], False, [0], 1)
    out["convT"] = T.convolution(x, kw.transpose(0, 1), None, [2], [0], [1], True, [1], 1)
    h, c = mk(3, 6, seed=4), mk(3, 6, seed=5)
    wih, whh = mk(24, 5, seed=6), mk(24, 6, seed=7)
    xi = x[:, 0]
    out["lstm"] = T.lstm_cell(xi, (h, c), wih, whh, mk(24, seed=8), None)
    out["gru"] = T.gru_cell(xi, h, wih[:18], whh[:18], None, mk(18, seed=9))
    out["rnn"] = (T.rnn_tanh_cell(xi, h, wih[:6], whh[:6]), T.rnn_relu_cell(xi, h, wih[:6], whh[:6], whh[0], whh[1]))
    out["ned"] = (T.norm_except_dim(x, 2, 1), T.norm_except_dim(x, 3, -1), T.norm_except_dim(x, 1, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["fro"] = T.frobenius_norm(x, (1, 2)); out["nuc"] = (T.nuclear_norm(x[0]), T.nuclear_norm(x, (0, 2), True))
    tot = 0
    for k, v in out.items():
        for t in (v if isinstance(v, tuple) else (v,)):
            if isinstance(t, T.Tensor) and t.dtype == T.float64 and t.requires_grad:
                tot = tot + t.sum()
    tot.backward()
    out["grads"] = (x.grad, w.grad, b.grad, kw.grad, h.grad, c.grad, wih.grad, whh.grad)
    W = T.tensor(np.random.default_rng(1).standard_normal((5, 3)) * 3)
    out["renorm"] = (T.embedding_renorm_(W, T.tensor([0, 2, 2]), 1.0, 2.0), W)
    out["misc"] = (T.get_device(x), T.is_distributed(x), T.unfold_copy(x, 2, 2, 1), catch(T.binomial, T.tensor([5, 6]), T.tensor([0.2, 0.9])),
                   T.poisson(T.zeros(3)), T.binomial(T.tensor([3.0, 0.0]), T.tensor([0.0, 0.5])), catch(T.nuclear_norm, x))
    return out


@pytest.mark.parametrize("size, channels", [(3, 5), (4, 6), (5, 3), (1, 4), (2, 2)])
@differential(rtol=1e-7, atol=1e-9)
def test_cross_map_lrn2d_forward_backward(T, size, channels):
    module = T.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.6, k=1.5)
    fired = []
    module.register_forward_hook(lambda m, a, out: fired.append(tuple(out.shape)))
    x = T.tensor(_arr(2, channels, 3, 2), requires_grad=True)
    y = module(x)
    backward = catch(lambda: (y * T.tensor(_arr(2, channels, 3, 2, seed=4))).sum().backward())
    return y, x.grad, backward, fired, type(y.grad_fn).__name__, repr(module), catch(module, T.ones(2, 3))


@differential
def test_container_uninitialized_and_factory_kwargs(T):
    nn = T.nn
    c = warns(lambda: nn.Container(a=nn.ReLU(), b=nn.Linear(2, 3)))
    built = nn.Container(a=nn.ReLU())
    return (c[1], [n for n, _ in built.named_children()], issubclass(nn.UninitializedParameter, nn.Parameter),
            nn.factory_kwargs({"dtype": T.float64, "factory_kwargs": {"device": "cpu"}}) == {
                "dtype": T.float64, "device": "cpu"}, nn.factory_kwargs(None),
            catch(nn.factory_kwargs, {"bad": 1}), catch(nn.factory_kwargs, {"dtype": 1, "factory_kwargs": {"dtype": 2}}))


@differential
def test_functional_helpers(T):
    F = T.nn.functional

    def yes(x, flag=False):
        """doc"""
        return "yes"

    def no(x, flag=False):
        return "no"

    fn = F.boolean_dispatch("flag", 1, False, yes, no, "mod", "picked")
    return (fn(1), fn(1, True), fn(1, flag=True), fn.__name__, fn.__doc__, F.BroadcastingList2[int],
            catch(F.assert_int_or_pair, (1, 2, 3), "kernel", "{} must be int or pair"), F.assert_int_or_pair(3, "k", ""),
            F.has_torch_function((T.ones(1),)), F.has_torch_function_unary(T.ones(1)),
            F.has_torch_function_variadic(T.ones(1), 2))


def _bicubic_run(T, pad, align, scale):
    g = np.random.default_rng(0)
    x = T.tensor(g.standard_normal((2, 2, 4, 5)), requires_grad=True)
    grid = T.tensor(g.uniform(-scale, scale, (2, 3, 6, 2)), requires_grad=True)
    y = T.nn.functional.grid_sample(x, grid, "bicubic", pad, align)
    (y * T.arange(y.numel(), dtype=y.dtype).reshape(y.shape).sin()).sum().backward()
    return y, x.grad, grid.grad


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("scale", [0.9, 1.7])
@differential(rtol=1e-7, atol=1e-9)
def test_grid_sample_bicubic(T, padding_mode, align_corners, scale):
    return _bicubic_run(T, padding_mode, align_corners, scale)


@differential(rtol=1e-7, atol=1e-9)
def test_torch_grid_sampler_names(T):
    x = T.tensor(_arr(1, 2, 3, 4))
    grid = T.tensor(R(3).uniform(-1, 1, (1, 2, 3, 2)))
    theta = T.tensor(_arr(1, 2, 3, seed=2))
    return (T.grid_sampler(x, grid, 2, 1, True), T.grid_sampler_2d(x, grid, 1, 2, False),
            T.grid_sampler_3d(x[None], T.tensor(R(4).uniform(-1, 1, (1, 1, 2, 2, 3))), 0, 0, True),
            T.affine_grid_generator(theta, (1, 2, 3, 4), False), catch(T.grid_sampler_2d, x[None], grid, 0, 0, True),
            catch(T.nn.functional.grid_sample, x[None], T.zeros(1, 1, 2, 2, 3), "bicubic", align_corners=True))


@pytest.mark.parametrize("case", ["plain", "bias_weight", "k_dim", "probabilities", "unbatched", "options"])
@differential(rtol=1e-7, atol=1e-9)
def test_linear_cross_entropy(T, case):
    F = T.nn.functional
    x = T.tensor(_arr(4, 3), requires_grad=True)
    w = T.tensor(_arr(5, 3, seed=1), requires_grad=True)
    target = T.tensor([0, 4, 2, 2])
    kwargs = {}
    if case == "bias_weight":
        kwargs = dict(linear_bias=T.tensor(_arr(5, seed=2), requires_grad=True),
                      weight=T.tensor([1.0, 2.0, 0.5, 1.0, 3.0], dtype=T.float64), ignore_index=2,
                      label_smoothing=0.1, reduction="sum")
    elif case == "k_dim":
        w = T.tensor(_arr(5, 2, 3, seed=1), requires_grad=True)
        target = T.tensor([[0, 1], [4, 4], [2, 3], [1, 0]])
        kwargs = dict(reduction="none", linear_bias=T.tensor(_arr(5, 2, seed=2)))
    elif case == "probabilities":
        target = T.tensor(_arr(4, 5, seed=3)).softmax(1)
    elif case == "unbatched":
        x, target = T.tensor(_arr(3), requires_grad=True), T.tensor(3)
    elif case == "options":
        kwargs = dict(options=T.nn.LinearCrossEntropyOptions(batch_chunk_size=2))
    loss = F.linear_cross_entropy(x, w, target, **kwargs)
    loss.sum().backward()
    return loss, x.grad, w.grad


@differential(rtol=1e-7, atol=1e-9)
def test_linear_cross_entropy_module_and_errors(T):
    T.manual_seed(0)
    module = T.nn.LinearCrossEntropyLoss(3, 4, out_features=(2,), bias=True).double()
    with T.no_grad():
        module.linear.weight.copy_(T.tensor(_arr(8, 3)))
        module.linear.bias.copy_(T.tensor(_arr(8, seed=1)))
    x = T.tensor(_arr(2, 3, seed=2), requires_grad=True)
    loss = module(x, T.tensor([[0, 3], [2, 1]]))
    loss.backward()
    F = T.nn.functional
    return (loss, x.grad, module.linear.weight.grad, sorted(dict(module.named_parameters())),
            catch(F.linear_cross_entropy, T.ones(2, 2, 3), T.ones(4, 3), T.zeros(2, dtype=T.int64)),
            catch(F.linear_cross_entropy, T.ones(2, 3), T.ones(4, 2), T.zeros(2, dtype=T.int64)),
            catch(F.linear_cross_entropy, T.ones(3), T.ones(4, 2, 3), T.zeros(2, dtype=T.int64)),
            catch(T.nn.LinearCrossEntropyOptions, acc_policy="fast"),
            catch(T.nn.LinearCrossEntropyOptions, batch_chunk_size=0),
            catch(T.nn.LinearCrossEntropyLoss, 3, 4, weight=T.ones(3)),
            warns(F.linear_cross_entropy, T.ones(2, 3), T.ones(4, 3), T.zeros(2, dtype=T.int64), label_smoothing=0.2,
                  options=T.nn.LinearCrossEntropyOptions())[1])


@differential(rtol=1e-7, atol=1e-9)
def test_inplace_flags_write_into_the_input(T):
    F = T.nn.functional
    results = []
    for fn, args in [(F.selu, ()), (F.celu, (0.7,)), (F.threshold, (0.2, -1.0)), (F.rrelu, (0.1, 0.3)),
                     (F.mish, ()), (F.hardsigmoid, ()), (F.hardswish, ()), (F.alpha_dropout, (0.5, False)),
                     (F.dropout2d, (0.5, False)), (F.feature_alpha_dropout, (0.3, False))]:
        leaf = T.tensor(_arr(2, 3, 4), requires_grad=True)
        x = leaf * 1
        y = fn(x, *args, inplace=True)
        (y * T.tensor(_arr(2, 3, 4, seed=5))).sum().backward()
        results.append((y is x, x.detach(), leaf.grad))
    module = T.nn.SELU(inplace=True)
    z = T.tensor(_arr(2, 3))
    return results, module(z) is z, z
