"""Finite-difference gradient checks (float64) of every differentiable function in nn.functional,
second-order checks for the ones with hand-written backwards, and double backward against torch."""
import numpy as np
import pytest

import hookgrad
from hookgrad.autograd import gradcheck
from difftest import differential

F = hookgrad.nn.functional
R = np.random.default_rng


def t(*shape, seed=0, low=None, high=None, grad=True):
    rng = R(seed)
    a = rng.uniform(low, high, shape) if low is not None else rng.standard_normal(shape)
    return hookgrad.tensor(a, dtype=hookgrad.float64, requires_grad=grad)


def idx(*values):
    return hookgrad.tensor(np.array(values, dtype=np.int64))


def _bn_train(x, w, b):
    return F.batch_norm(x, None, None, w, b, training=True)


def _bn_eval(x, w, b):
    rm = hookgrad.tensor([0.1, -0.2], dtype=hookgrad.float64)
    rv = hookgrad.tensor([0.5, 2.0], dtype=hookgrad.float64)
    return F.batch_norm(x, rm, rv, w, b, training=False)


CASES = {
    "linear": (lambda x, w, b: F.linear(x, w, b), [t(2, 3), t(2, 3, seed=1), t(2, seed=2)]),
    "linear3d": (lambda x, w: F.linear(x, w), [t(2, 2, 3), t(2, 3, seed=1)]),
    "bilinear": (lambda a, b, w, c: F.bilinear(a, b, w, c), [t(2, 2), t(2, 3, seed=1), t(2, 2, 3, seed=2),
                                                             t(2, seed=3)]),
    "conv1d": (lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), [t(1, 2, 5), t(2, 2, 3, seed=1),
                                                                        t(2, seed=2)]),
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, padding=1), [t(1, 2, 3, 3), t(2, 2, 2, 2, seed=1), t(2, seed=2)]),
    "conv2d_strided_groups": (lambda x, w: F.conv2d(x, w, stride=2, dilation=(1, 2), groups=2, padding=1),
                              [t(1, 2, 4, 5), t(2, 1, 2, 2, seed=1)]),
    "conv2d_same": (lambda x, w: F.conv2d(x, w, padding="same"), [t(1, 1, 3, 4), t(1, 1, 2, 3, seed=1)]),
    "conv_transpose2d": (lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
                         [t(1, 2, 2, 2), t(2, 1, 3, 3, seed=1), t(1, seed=2)]),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2, 1), [t(1, 2, 3, 3)]),
    "max_pool2d_pad_ceil": (lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), [t(1, 1, 4, 5)]),
    "max_pool1d": (lambda x: F.max_pool1d(x, 2), [t(1, 2, 5)]),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), [t(1, 1, 4, 5)]),
    "avg_pool1d": (lambda x: F.avg_pool1d(x, 2), [t(1, 2, 5)]),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), [t(1, 1, 3, 5)]),
    "adaptive_avg_pool1d": (lambda x: F.adaptive_avg_pool1d(x, 2), [t(1, 2, 5)]),
    "pad_constant": (lambda x: F.pad(x, (1, -1, 2, 0), value=3.0), [t(1, 2, 3)]),
    "pad_reflect": (lambda x: F.pad(x, (2, 1)), [t(1, 2, 4)]),
    "pad_reflect2d": (lambda x: F.pad(x, (1, 1, 2, 1), mode="reflect"), [t(1, 3, 3)]),
    "pad_replicate": (lambda x: F.pad(x, (2, 1, 1, 0), mode="replicate"), [t(1, 2, 3)]),
    "pad_circular": (lambda x: F.pad(x, (2, 1), mode="circular"), [t(1, 2, 3)]),
    "batch_norm_train": (_bn_train, [t(3, 2, 2), t(2, seed=1), t(2, seed=2)]),
    "batch_norm_eval": (_bn_eval, [t(3, 2, 2), t(2, seed=1), t(2, seed=2)]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (3,), w, b), [t(2, 3), t(3, seed=1), t(3, seed=2)]),
    "group_norm": (lambda x, w, b: F.group_norm(x, 2, w, b), [t(2, 4, 2), t(4, seed=1), t(4, seed=2)]),
    "embedding": (lambda w: F.embedding(idx(0, 2, 2, 3), w), [t(4, 2)]),
    "relu": (lambda x: F.relu(x), [t(2, 3)]),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), [t(2, 3)]),
    "elu": (lambda x: F.elu(x, 0.7), [t(2, 3)]),
    "gelu": (lambda x: F.gelu(x), [t(2, 3)]),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [t(2, 3)]),
    "silu": (lambda x: F.silu(x), [t(2, 3)]),
    "sigmoid": (lambda x: F.sigmoid(x), [t(2, 3)]),
    "tanh": (lambda x: F.tanh(x), [t(2, 3)]),
    "softplus": (lambda x: F.softplus(x, 2.0, 1.5), [t(2, 3)]),
    "hardtanh": (lambda x: F.hardtanh(x * 2), [t(2, 3)]),
    "relu6": (lambda x: F.relu6(x * 5), [t(2, 3)]),
    "softmax": (lambda x: F.softmax(x, 1), [t(2, 3)]),
    "log_softmax": (lambda x: F.log_softmax(x, 0), [t(2, 3)]),
    "normalize": (lambda x: F.normalize(x), [t(2, 3)]),
    "sdpa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), [t(1, 2, 2), t(1, 3, 2, seed=1),
                                                                                      t(1, 3, 2, seed=2)]),
    "mse_loss": (lambda x, y: F.mse_loss(x, y), [t(2, 3), t(2, 3, seed=1)]),
    "l1_loss": (lambda x, y: F.l1_loss(x, y, reduction="sum"), [t(2, 3), t(2, 3, seed=1)]),
    "smooth_l1_loss": (lambda x, y: F.smooth_l1_loss(x, y, beta=0.5), [t(2, 3), t(2, 3, seed=1)]),
    "huber_loss": (lambda x, y: F.huber_loss(x, y, reduction="none", delta=0.7), [t(2, 3), t(2, 3, seed=1)]),
    "cross_entropy": (lambda x: F.cross_entropy(x, idx(0, 2, 1)), [t(3, 3)]),
    "cross_entropy_smooth_weight": (lambda x: F.cross_entropy(
        x, idx(0, 2, 1), weight=hookgrad.tensor([1.0, 2.0, 0.5], dtype=hookgrad.float64), label_smoothing=0.2,
        ignore_index=1), [t(3, 3)]),
    "cross_entropy_probs": (lambda x, p: F.cross_entropy(x, p.softmax(1)), [t(2, 3), t(2, 3, seed=1)]),
    "nll_loss": (lambda x: F.nll_loss(x, idx(1, 0), reduction="none"), [t(2, 3)]),
    "binary_cross_entropy": (lambda x, y: F.binary_cross_entropy(x, y), [t(2, 3, low=0.1, high=0.9),
                                                                         t(2, 3, seed=1, low=0, high=1)]),
    "bce_with_logits": (lambda x, y: F.binary_cross_entropy_with_logits(
        x, y, pos_weight=hookgrad.tensor([1.0, 2.0, 0.5], dtype=hookgrad.float64)),
        [t(2, 3), t(2, 3, seed=1, low=0, high=1)]),
    "kl_div": (lambda x, y: F.kl_div(x, y, reduction="batchmean"), [t(2, 3), t(2, 3, seed=1, low=0.1, high=1)]),
    "kl_div_log_target": (lambda x, y: F.kl_div(x, y, reduction="sum", log_target=True), [t(2, 3), t(2, 3, seed=1)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    fn, inputs = CASES[name]
    assert gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3)


SECOND_ORDER = ["conv1d", "conv2d", "conv2d_strided_groups", "conv_transpose2d", "max_pool2d", "avg_pool2d",
                "adaptive_avg_pool2d", "pad_reflect2d", "pad_constant", "batch_norm_train", "batch_norm_eval",
                "layer_norm", "group_norm", "embedding", "elu", "gelu", "gelu_tanh", "silu", "softplus",
                "leaky_relu", "mse_loss", "smooth_l1_loss", "cross_entropy", "cross_entropy_probs", "nll_loss",
                "binary_cross_entropy", "bce_with_logits", "linear", "bilinear", "sdpa"]


def gradgradcheck(fn, inputs, **kw):
    """gradcheck of the map inputs -> (create_graph) gradients of ``fn`` against a fixed random cotangent.

    Grad mode is switched on inside, because gradcheck evaluates the function under no_grad for its
    finite differences, and the first gradients must still be built with a graph there.
    """
    outs = fn(*inputs)
    cot = hookgrad.tensor(R(7).standard_normal(tuple(outs.shape)), dtype=hookgrad.float64)

    def first_grads(*args):
        with hookgrad.enable_grad():
            out = fn(*args)
            diff = [a for a in args if a.requires_grad]
            grads = hookgrad.autograd.grad(out, diff, cot, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_grads, inputs, **kw)


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_gradgradcheck(name):
    fn, inputs = CASES[name]
    assert gradgradcheck(fn, inputs, eps=1e-6, atol=1e-4, rtol=1e-3)


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
