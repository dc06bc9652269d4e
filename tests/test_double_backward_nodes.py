"""Batch norm, layer norm, convolution and PReLU under create_graph: torch differentiates each
backward as one node (NativeBatchNormBackwardBackward0, NativeLayerNormBackwardBackward0,
ConvolutionBackwardBackward0, PreluKernelBackwardBackward0) that saves its inputs; group norm's
backward is composed of ops on the saved input and statistics (which lead back to its node), and
bilinear's gradients are _trilinear products again (TrilinearBackward0).
Compared with torch: the nodes, their edges, saved values and pack/unpack order, second- and
third-order gradients, and the freed-graph error of a second pass."""
from __future__ import annotations

import numpy as np
import pytest

from difftest import catch, differential
from test_attention_graph import walk

import torch  # noqa: F401 - the harness runs each scenario on torch too


def arr(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _bilinear_of_tanh(T):
    class BilinearOfTanh(T.nn.Bilinear):
        def __init__(self, features, out, dtype):
            super().__init__(features, features, out, dtype=dtype)

        def forward(self, x):
            return super().forward(x, x.tanh())
    return BilinearOfTanh


def make_layer(T, kind):
    """(module, input shape) for ``kind``, with fixed parameters (and running statistics)."""
    if kind == "layernorm":
        m, shape = T.nn.LayerNorm(3, dtype=T.float64), (4, 3)
    elif kind == "layernorm_2d":
        m, shape = T.nn.LayerNorm([2, 3], dtype=T.float64), (2, 2, 3)
    elif kind in ("batchnorm", "batchnorm_eval"):
        m, shape = T.nn.BatchNorm1d(3, dtype=T.float64), (4, 3)
    elif kind == "batchnorm2d":
        m, shape = T.nn.BatchNorm2d(2, dtype=T.float64), (3, 2, 2, 2)
    elif kind == "groupnorm":
        m, shape = T.nn.GroupNorm(2, 4, dtype=T.float64), (3, 4, 2)
    elif kind == "groupnorm_one_group":
        m, shape = T.nn.GroupNorm(1, 3, dtype=T.float64), (2, 3)
    elif kind == "prelu":
        m, shape = T.nn.PReLU(3, dtype=T.float64), (4, 3, 2)
    elif kind == "bilinear":  # the input and its tanh as the two operands (batch dims flattened)
        m, shape = _bilinear_of_tanh(T)(3, 2, dtype=T.float64), (2, 2, 3)
    elif kind == "conv1d":
        m, shape = T.nn.Conv1d(2, 3, 2, dtype=T.float64), (2, 2, 5)
    elif kind == "conv2d_strided_groups":
        m, shape = T.nn.Conv2d(2, 4, 2, stride=2, padding=1, groups=2, dtype=T.float64), (2, 2, 5, 4)
    elif kind == "conv_transpose1d":
        m, shape = T.nn.ConvTranspose1d(2, 3, 3, stride=2, output_padding=1, dtype=T.float64), (2, 2, 4)
    elif kind == "conv_transpose1d_plain":
        m, shape = T.nn.ConvTranspose1d(2, 3, 3, stride=2, padding=1, dtype=T.float64), (2, 2, 4)
    elif kind == "conv_transpose2d_groups":
        m, shape = T.nn.ConvTranspose2d(2, 4, 2, stride=2, groups=2, dilation=2, padding=1, output_padding=1,
                                        dtype=T.float64), (2, 2, 3, 4)
    elif kind == "conv_transpose1d_cut":  # output_padding past the stride (under the dilation): a cut input gradient
        m, shape = T.nn.ConvTranspose1d(2, 3, 2, stride=1, dilation=3, output_padding=2, dtype=T.float64), (2, 2, 4)
    else:
        raise ValueError(kind)
    with T.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(T.tensor(arr(tuple(p.shape), 20 + i)))
        if kind == "batchnorm_eval":
            m.running_mean.copy_(T.tensor([0.1, -0.2, 0.3]))
            m.running_var.copy_(T.tensor([0.5, 1.5, 2.0]))
            m.eval()
    return m, shape


KINDS = ["layernorm", "layernorm_2d", "batchnorm", "batchnorm_eval", "batchnorm2d", "conv1d",
         "conv2d_strided_groups", "conv_transpose1d", "conv_transpose1d_plain", "conv_transpose2d_groups",
         "conv_transpose1d_cut", "groupnorm", "groupnorm_one_group", "bilinear"]
WANTED = {"all": ("x", "w", "b", "g"), "input": ("x",), "affine": ("w", "b"), "input_and_grad": ("x", "g"),
          "weight": ("w",), "bias": ("b",)}
# group norm's bias gradient is the incoming gradient summed, bilinear's weight and bias gradients
# products of the inputs and the incoming gradient (each requires grad only when those do: a second
# order of them alone has nothing to differentiate); PReLU has no bias
_NOTHING_TO_DIFFERENTIATE = {("groupnorm", "bias"), ("groupnorm_one_group", "bias"), ("bilinear", "bias"),
                             ("bilinear", "weight"), ("bilinear", "affine")}
CASES = [(kind, wanted) for kind in KINDS for wanted in WANTED if (kind, wanted) not in _NOTHING_TO_DIFFERENTIATE] + [
    ("prelu", wanted) for wanted in WANTED if wanted != "bias"]


@pytest.mark.parametrize("kind, wanted", CASES)
@differential(rtol=1e-6, atol=1e-9)
def test_second_and_third_order(T, kind, wanted):
    need = WANTED[wanted]
    m, shape = make_layer(T, kind)
    x = T.tensor(arr(shape, 0), requires_grad="x" in need)
    out = m(x)
    g0 = T.tensor(arr(tuple(out.shape), 1), requires_grad="g" in need)
    inputs = [t for t, n in ((x, "x"), (m.weight, "w"), (getattr(m, "bias", None), "b")) if n in need and t is not None]
    grads = T.autograd.grad(out, inputs, g0, create_graph=True)
    node = grads[0].grad_fn
    rec = {"graph": walk(grads[0]), "output_nr": [g.output_nr for g in grads],
           "saved": {a: (tuple(getattr(node, a).shape) if hasattr(getattr(node, a), "shape") else getattr(node, a))
                     for a in sorted(dir(node)) if a.startswith("_saved_")}}
    loss = sum((g * T.tensor(arr(tuple(g.shape), 2))).sum() + (g * g).sum() for g in grads)
    everything = inputs + ([g0] if "g" in need else [])
    second = T.autograd.grad(loss, everything, create_graph=True, allow_unused=True)
    rec["second"] = list(second)
    third_loss = [(s * s).sum() for s in second if s is not None and s.requires_grad]
    # (torch's third order through a transposed convolution with output_padding raises "output_padding
    # is not supported for non-transposed convolutions"; hookgrad computes it, not compared here)
    if third_loss and not getattr(m, "output_padding", (0,))[0]:
        rec["third"] = list(T.autograd.grad(sum(third_loss), everything, allow_unused=True))
    return rec


@pytest.mark.parametrize("kind", ["layernorm", "batchnorm", "batchnorm_eval", "conv1d", "conv_transpose1d", "groupnorm",
                                  "prelu", "bilinear"])
@differential
def test_pack_order_and_freed_second_pass(T, kind):
    m, shape = make_layer(T, kind)
    x = T.tensor(arr(shape, 0), requires_grad=True)
    out = m(x)
    g0 = T.tensor(arr(tuple(out.shape), 1), requires_grad=True)
    names = {id(x): "x", id(g0): "g"}
    names.update({id(p): n for n, p in m.named_parameters()})
    names.update({id(b): n for n, b in m.named_buffers()})
    log = []

    def pack(t):
        log.append(("pack", names.get(id(t), tuple(t.shape))))
        return t

    def unpack(t):
        log.append(("unpack", names.get(id(t), tuple(t.shape))))
        return t

    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        gx, gw = T.autograd.grad(out, [x, m.weight], g0, create_graph=True)
    second = (gx * gx).sum() + (gw * gw).sum()
    second.backward()
    # the double-backward node freed what it saved: a second pass through it raises
    return log, catch(second.backward), x.grad, m.weight.grad, g0.grad


@differential
def test_hooked_conv_double_backward_reaches_upstream(T):
    """The conv node's undefined input gradient still reaches the nodes upstream (torch runs them): a
    full backward hook on the module sees the second pass."""
    conv = T.nn.Conv1d(1, 1, 2, dtype=T.float64)
    with T.no_grad():
        conv.weight.copy_(T.tensor([[[0.5, -1.0]]]))
        conv.bias.fill_(0.1)
    log = []
    conv.register_full_backward_hook(lambda mod, gin, gout: log.append(
        [None if g is None else g.detach().clone() for g in gin + gout]))
    x = T.tensor(arr((1, 1, 4), 0), requires_grad=True)
    out = conv(x * 1)
    (gw,) = T.autograd.grad(out.pow(2).sum(), [conv.weight], create_graph=True)
    gw.sum().backward()
    return log, x.grad, conv.weight.grad


@pytest.mark.parametrize("kind", ["groupnorm", "groupnorm_one_group", "prelu", "bilinear"])
@differential
def test_gradgradcheck_in_float64(T, kind):
    """Second derivatives checked numerically, on every input and parameter at once (x has no zero
    entries: PReLU's kink stays out of the finite differences)."""
    m, shape = make_layer(T, kind)
    x = T.tensor(np.abs(arr(shape, 0)) * np.sign(arr(shape, 3)) + 0.05 * np.sign(arr(shape, 3)), requires_grad=True)
    params = list(m.parameters())

    def f(x, *ps):
        return T.func.functional_call(m, dict(zip([n for n, _ in m.named_parameters()], ps)), (x,))
    return T.autograd.gradgradcheck(f, (x, *params))
