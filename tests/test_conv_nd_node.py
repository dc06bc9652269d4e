"""3-D convolutions and transposed convolutions record torch's one ConvolutionBackward0 node: its
next_functions, saved tensors and values, pack-hook order, node-hook arguments, and gradients only
for the inputs that need one."""
import numpy as np
import pytest

import hookgrad
from difftest import catch, differential
from hookgrad.autograd import gradcheck, gradgradcheck

# (name, transposed, constructor kwargs, input shape); channels 4 -> 6 unless groups say otherwise
CASES = [
    ("plain", False, dict(kernel_size=3), (2, 4, 5, 6, 5)),
    ("no_bias", False, dict(kernel_size=3, bias=False), (2, 4, 5, 5, 6)),
    ("unbatched", False, dict(kernel_size=2), (4, 4, 5, 3)),
    ("unbatched_no_bias", False, dict(kernel_size=2, bias=False), (4, 3, 4, 5)),
    ("groups_stride", False, dict(kernel_size=(2, 3, 1), stride=(2, 1, 2), padding=1, groups=2), (2, 4, 5, 6, 7)),
    ("dilation", False, dict(kernel_size=2, dilation=(2, 1, 3), padding=(1, 0, 2)), (1, 4, 6, 5, 7)),
    ("depthwise", False, dict(kernel_size=3, padding=1, groups=4, out=8), (2, 4, 4, 5, 3)),
    ("same_even", False, dict(kernel_size=(2, 3, 4), padding="same", dilation=(1, 2, 1)), (2, 4, 5, 6, 7)),
    ("valid_unit_stride", False, dict(kernel_size=(1, 2, 3), padding="valid"), (3, 4, 3, 4, 5)),
    ("t_plain", True, dict(kernel_size=3), (2, 4, 3, 4, 3)),
    ("t_no_bias", True, dict(kernel_size=2, bias=False), (2, 4, 3, 3, 4)),
    ("t_unbatched", True, dict(kernel_size=2, stride=2), (4, 3, 2, 3)),
    ("t_groups", True, dict(kernel_size=(3, 2, 2), stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2),
                            groups=2), (2, 4, 3, 4, 3)),
    ("t_dilation", True, dict(kernel_size=2, dilation=3, output_padding=(2, 0, 1), stride=(1, 2, 2),
                              bias=False), (1, 4, 3, 4, 2)),
]


def _layer(T, transposed, kwargs):
    kwargs = dict(kwargs)
    out = kwargs.pop("out", 6)
    cls = T.nn.ConvTranspose3d if transposed else T.nn.Conv3d
    T.manual_seed(0)
    layer = cls(4, out, **kwargs).double()
    rng = np.random.default_rng(7)
    with T.no_grad():
        for p in layer.parameters():
            p.copy_(T.tensor(rng.standard_normal(tuple(p.shape))))
    return layer


def _names(node):
    return [None if f is None else type(f).__name__ for f, _ in node.next_functions]


@differential(rtol=1e-9, atol=1e-10)
@pytest.mark.parametrize("name, transposed, kwargs, shape", CASES, ids=[c[0] for c in CASES])
def test_node_hooks_and_saved_tensors(T, name, transposed, kwargs, shape):
    log = []
    layer = _layer(T, transposed, kwargs)
    x = T.tensor(np.random.default_rng(1).standard_normal(shape), requires_grad=True)
    h = x * 1.0

    def pack(t):
        log.append(("pack", tuple(t.shape)))
        return t

    def unpack(t):
        log.append(("unpack", tuple(t.shape)))
        return t

    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = layer(h)
    node = y.grad_fn
    if name.endswith("unbatched") or "unbatched" in name:
        log.append(("outer", type(node).__name__))
        node = node.next_functions[0][0]
    log.append(("node", type(node).__name__, _names(node)))
    log.append(("saved", [tuple(node._saved_input.shape), tuple(node._saved_weight.shape)]))
    for attr in ("stride", "padding", "dilation", "transposed", "output_padding", "groups", "bias_sym_sizes_opt"):
        log.append((attr, getattr(node, "_saved_" + attr)))
    node.register_prehook(lambda grad_outputs: log.append(("pre", list(grad_outputs))))
    node.register_hook(lambda grad_inputs, grad_outputs: log.append(("post", list(grad_inputs), list(grad_outputs))))
    upstream = T.tensor(np.random.default_rng(2).standard_normal(tuple(y.shape)))
    y.backward(upstream)
    return log, y, x.grad, [p.grad for p in layer.parameters()]


@differential(rtol=1e-9, atol=1e-10)
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("wanted", ["input_only", "weight_only", "bias_only", "none_of_input"])
def test_gradients_only_where_needed(T, transposed, wanted):
    log = []
    layer = _layer(T, transposed, dict(kernel_size=2, stride=(1, 2, 1)))
    x = T.tensor(np.random.default_rng(3).standard_normal((2, 4, 3, 4, 5)), requires_grad=wanted == "input_only")
    layer.weight.requires_grad_(wanted in ("weight_only", "none_of_input"))
    layer.bias.requires_grad_(wanted in ("bias_only", "none_of_input"))
    y = layer(x)
    node = y.grad_fn
    log.append(_names(node))
    node.register_hook(lambda grad_inputs, grad_outputs: log.append(list(grad_inputs)))
    y.sum().backward()
    return log, x.grad, layer.weight.grad, layer.bias.grad


@differential
@pytest.mark.parametrize("transposed", [False, True])
def test_input_changed_in_place_after_forward(T, transposed):
    layer = _layer(T, transposed, dict(kernel_size=2))
    x = T.ones(1, 4, 3, 3, 3, dtype=T.float64, requires_grad=True)
    h = x * 2
    y = layer(h)
    with T.no_grad():
        h.add_(1)
    first = catch(lambda: y.sum().backward())
    # the graph and layer stay usable
    layer(x * 2).sum().backward()
    return first, x.grad, layer.weight.grad


@differential(rtol=1e-4, atol=1e-3)  # float32 sums of gradients up to ~300 in size
@pytest.mark.parametrize("transposed", [False, True])
def test_float32_values(T, transposed):
    layer = _layer(T, transposed, dict(kernel_size=3, padding=1)).float()
    x = T.tensor(np.random.default_rng(4).standard_normal((2, 4, 6, 5, 4)).astype(np.float32), requires_grad=True)
    y = T.relu(layer(x))
    (y * y).sum().backward()
    return y, x.grad, layer.weight.grad, layer.bias.grad


@pytest.mark.parametrize("name, transposed, kwargs, shape", [c for c in CASES if "unbatched" not in c[0]],
                         ids=[c[0] for c in CASES if "unbatched" not in c[0]])
def test_gradgradcheck(name, transposed, kwargs, shape):
    layer = _layer(hookgrad, transposed, kwargs)
    fn = hookgrad.nn.functional.conv_transpose3d if transposed else hookgrad.nn.functional.conv3d
    keys = ("stride", "padding", "dilation", "groups") + (("output_padding",) if transposed else ())
    options = {k: getattr(layer, k) for k in keys}
    small = (1,) + shape[1:2] + tuple(min(n, 4) for n in shape[2:])
    if name == "same_even":
        small = (1, 4, 3, 3, 4)
    x = hookgrad.tensor(np.random.default_rng(5).standard_normal(small), requires_grad=True)
    w = layer.weight.detach().clone().requires_grad_()
    args = [x, w] + ([layer.bias.detach().clone().requires_grad_()] if layer.bias is not None else [])

    def conv(x, w, b=None):
        return fn(x, w, b, **options)

    assert gradcheck(conv, args, eps=1e-6, atol=1e-5, rtol=1e-4)
    assert gradgradcheck(conv, args, eps=1e-6, atol=1e-4, rtol=1e-3)


@differential(rtol=2e-2, atol=2e-2)
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_low_precision_values(T, transposed, dtype):
    dtype = getattr(T, dtype)
    layer = _layer(T, transposed, dict(kernel_size=3, groups=2, stride=(1, 2, 1))).to(dtype)
    x = T.tensor(np.random.default_rng(6).standard_normal((2, 4, 5, 4, 5))).to(dtype).requires_grad_()
    y = layer(x)
    y.sum().backward()
    return y.grad_fn.name(), y, x.grad, layer.weight.grad, layer.bias.grad


@differential
@pytest.mark.parametrize("transposed", [False, True])
def test_empty_batch(T, transposed):
    layer = _layer(T, transposed, dict(kernel_size=3))
    x = T.zeros(0, 4, 5, 5, 5, dtype=T.float64, requires_grad=True)
    y = layer(x)
    y.sum().backward()
    return y.grad_fn.name(), y, x.grad, layer.weight.grad, layer.bias.grad


@differential
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "int64", "bool"])
def test_integer_inputs(T, dtype):
    dtype = getattr(T, dtype)
    x = T.tensor(np.arange(2 * 4 * 5 * 4) % 3).reshape(1, 2, 4, 5, 4).to(dtype)
    w = T.tensor(np.arange(2 * 2 * 8) % 2).reshape(2, 2, 2, 2, 2).to(dtype)
    F = T.nn.functional
    return [catch(F.conv3d, x, w, padding=1), catch(F.conv3d, x, w, padding=1, dilation=(1, 2, 1)),
            catch(F.conv3d, x, w, stride=2), catch(F.conv_transpose3d, x, w),
            catch(F.conv_transpose3d, x, w, dilation=2)]


@differential(rtol=1e-9, atol=1e-10)
@pytest.mark.parametrize("transposed", [False, True])
def test_pack_hook_hands_back_another_tensor(T, transposed):
    # the weight gradient must come from what unpacking gives, not from the forward's columns
    layer = _layer(T, transposed, dict(kernel_size=2, padding=1))
    x = T.tensor(np.random.default_rng(8).standard_normal((2, 4, 3, 4, 3)), requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t):
        y = layer(x)
    (y * y).sum().backward()
    return x.grad, layer.weight.grad, layer.bias.grad


@differential(rtol=2e-2, atol=2e-2)
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("which", ["input", "weight", "neither"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_channels_last_3d_result(T, transposed, which, dtype):
    layer = _layer(T, transposed, dict(kernel_size=2)).to(getattr(T, dtype))
    x = T.tensor(np.random.default_rng(9).standard_normal((2, 4, 3, 4, 5))).to(getattr(T, dtype))
    weight = layer.weight.detach()
    if which == "input":
        x = x.contiguous(memory_format=T.channels_last_3d)
    if which == "weight":
        weight = weight.contiguous(memory_format=T.channels_last_3d)
    fn = T.nn.functional.conv_transpose3d if transposed else T.nn.functional.conv3d
    y = fn(x, weight, layer.bias.detach())
    return y, y.is_contiguous(), y.is_contiguous(memory_format=T.channels_last_3d)
