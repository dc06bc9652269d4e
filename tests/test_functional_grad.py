"""Finite-difference gradient checks (float64) of every differentiable function in nn.functional,
second-order checks for the ones with hand-written backwards, and double backward against torch."""
import numpy as np
import pytest

import hookgrad
from hookgrad.autograd import gradcheck
from difftest import differential
from op_cases import FUNCTIONAL as CASES

F = hookgrad.nn.functional
R = np.random.default_rng


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
