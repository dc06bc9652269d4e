"""``torch.utils._python_dispatch.TorchDispatchMode`` against torch's: which ATen operators a mode
sees for the common ops of models, in the forward and the backward pass, and for the factories; what
a mode's result does, nesting, the mode stack helpers and ``torch._C._DisableTorchDispatch``."""
from __future__ import annotations

import importlib

import pytest

import hookgrad
from difftest import catch, differential


def _mode_class(T):
    return importlib.import_module(T.__name__ + ".utils._python_dispatch").TorchDispatchMode


def _recorder(T, log, tag="", change=None):
    class Recorder(_mode_class(T)):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            log.append(tag + str(func._overloadpacket))
            out = func(*args, **(kwargs or {}))
            return change(func, out) if change is not None else out
    return Recorder()


PROGRAMS = {
    "conv2d": lambda T, F, x4, x2: F.conv2d(x4, T.ones(4, 3, 3, 3), T.ones(4)),
    "relu": lambda T, F, x4, x2: F.relu(x4),
    "relu_inplace": lambda T, F, x4, x2: F.relu(x4.clone(), inplace=True),
    "max_pool2d": lambda T, F, x4, x2: F.max_pool2d(x4, 2),
    "avg_pool2d": lambda T, F, x4, x2: F.avg_pool2d(x4, 2),
    "adaptive_avg_pool2d": lambda T, F, x4, x2: F.adaptive_avg_pool2d(x4, 2),
    "adaptive_avg_pool2d_global": lambda T, F, x4, x2: F.adaptive_avg_pool2d(x4, 1),
    "flatten": lambda T, F, x4, x2: x4.flatten(1),
    "view": lambda T, F, x4, x2: x4.view(2, -1),
    "linear": lambda T, F, x4, x2: F.linear(x2, T.ones(3, 8), T.ones(3)),
    "linear_no_bias": lambda T, F, x4, x2: F.linear(x2, T.ones(3, 8)),
    "linear_3d": lambda T, F, x4, x2: F.linear(x2.view(2, 2, 8), T.ones(3, 8), T.ones(3)),
    "batch_norm": lambda T, F, x4, x2: F.batch_norm(x4, T.zeros(3), T.ones(3), T.ones(3), T.zeros(3), False),
    "layer_norm": lambda T, F, x4, x2: F.layer_norm(x2, (8,)),
    "dropout_eval": lambda T, F, x4, x2: F.dropout(x2, 0.5, False),
    "add_mul": lambda T, F, x4, x2: x2 + x2 * 2,
    "activations": lambda T, F, x4, x2: F.gelu(T.tanh(T.sigmoid(F.silu(F.hardswish(F.leaky_relu(x2)))))),
    "softmax": lambda T, F, x4, x2: F.log_softmax(F.softmax(x2, -1), -1),
    "reductions": lambda T, F, x4, x2: x2.mean() + x2.sum(),
    "shape_ops": lambda T, F, x4, x2: T.cat([x2.transpose(0, 1).contiguous(), x2.t()]),
    "getitem": lambda T, F, x4, x2: x2[0],
    "relu6": lambda T, F, x4, x2: F.relu6(x2),
    "interpolate": lambda T, F, x4, x2: F.interpolate(x4, scale_factor=2),
    "interpolate_bilinear": lambda T, F, x4, x2: F.interpolate(x4, scale_factor=2, mode="bilinear"),
    "pad": lambda T, F, x4, x2: F.pad(x4, (1, 1)),
    "matmul_2d": lambda T, F, x4, x2: x2 @ x2.t(),
    "group_norm": lambda T, F, x4, x2: F.group_norm(x4, 3),
    "conv_transpose2d": lambda T, F, x4, x2: F.conv_transpose2d(x4, T.ones(3, 4, 3, 3)),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
@differential
def test_operators_seen(T, name):
    x4, x2 = T.randn(2, 3, 8, 8), T.randn(4, 8)
    log = []
    with T.no_grad(), _recorder(T, log):
        out = PROGRAMS[name](T, T.nn.functional, x4, x2)
    return log, tuple(out.shape)


@differential
def test_module_operators_seen(T):
    T.manual_seed(0)
    nn = T.nn
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 4, 3, stride=2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 5),
                          nn.Dropout(0.1)).eval()
    x = T.randn(2, 3, 16, 16)
    log = []
    with T.no_grad(), _recorder(T, log):
        out = model(x)
    return log, out


@differential
def test_result_replaces_the_op_result(T):
    def zero_relu(func, out):
        return out * 0 if str(func._overloadpacket) == "aten.relu" else out
    x = T.tensor([[-1.0, 2.0], [3.0, -4.0]])
    log = []
    with _recorder(T, log, change=zero_relu):
        y = T.relu(x) + 1
    return log, y


@differential
def test_func_with_other_arguments_computes(T):
    class Doubling(_mode_class(T)):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if str(func._overloadpacket) == "aten.add":
                return func(args[0], args[0])
            return func(*args, **(kwargs or {}))
    a, b = T.tensor([1.0, 2.0]), T.tensor([10.0, 20.0])
    with Doubling():
        return a + b


@differential
def test_nested_modes(T):
    from importlib import import_module
    dispatch = import_module(T.__name__ + ".utils._python_dispatch")
    log = []
    outer, inner = _recorder(T, log, "outer:"), _recorder(T, log, "inner:")
    x = T.randn(3)
    with outer:
        with inner:
            depth = dispatch._len_torch_dispatch_stack()
            current = dispatch._get_current_dispatch_mode() is inner
            T.relu(x)
        T.neg(x)
    return log, depth, current, dispatch._len_torch_dispatch_stack(), dispatch._get_current_dispatch_mode()


@differential
def test_disabled_dispatch_hides_ops(T):
    log = []
    x = T.randn(3)
    from importlib import import_module
    fcm = import_module(T.__name__ + ".utils.flop_counter")
    with fcm.FlopCounterMode(display=False) as fc, _recorder(T, log):
        with T._C._DisableTorchDispatch():
            T.mm(T.randn(2, 3), T.randn(3, 4))
            T.relu(x)
        T.neg(x)
    return log, fc.get_total_flops()


@differential
def test_dispatch_key_and_base_method(T):
    Mode = _mode_class(T)
    base = Mode()
    return catch(base.__torch_dispatch__, None, (), ()), Mode.is_infra_mode()


def _full_recorder(T, log):
    class Recorder(_mode_class(T)):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            log.append(str(func))
            return func(*args, **(kwargs or {}))
    return Recorder()


MODELS = {
    "mlp pow mean": lambda T, m, x: m(x).pow(2).mean(),
    "mlp mse": lambda T, m, x: T.nn.functional.mse_loss(m(x), T.zeros(3, 2)),
    "mlp sum": lambda T, m, x: m(x).relu().sum(),
    "matmul chain": lambda T, m, x: (x @ m[0].weight.t()).mean(),
}


@pytest.mark.parametrize("name", list(MODELS))
@differential
def test_forward_and_backward_operators_of_models(T, name):
    """Two training steps' operators, by overload: the second accumulates into .grad (aten.add_)
    where the first took the gradient as it came (aten.detach)."""
    T.manual_seed(0)
    m = T.nn.Sequential(T.nn.Linear(4, 8), T.nn.ReLU(), T.nn.Linear(8, 2))
    x = T.randn(3, 4)
    logs = []
    for _ in range(2):
        log = []
        with _full_recorder(T, log):
            MODELS[name](T, m, x).backward()
        logs.append(log)
    return logs, [p.grad for p in m.parameters()]


@pytest.mark.parametrize("how", ["backward", "grad", "scalar view"])
@differential
def test_implicit_gradient_is_seen(T, how):
    """backward()/grad() on a scalar make its gradient with aten.ones_like (preserve_format), outside
    any node; the modes see it with the output as its argument."""
    log = []

    class Recorder(_mode_class(T)):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            node = T._C._current_autograd_node()
            first = args[0] if args else None
            log.append((str(func), type(node).__name__ if node else None,
                        tuple(first.shape) if isinstance(first, T.Tensor) else None,
                        type(first.grad_fn).__name__ if isinstance(first, T.Tensor) and first.grad_fn else None,
                        sorted((k, str(v)) for k, v in (kwargs or {}).items())))
            return func(*args, **(kwargs or {}))

    a = T.rand(4, requires_grad=True)
    with Recorder():
        out = a.mul(2).div(3).sum()
        if how == "backward":
            out.backward()
        elif how == "grad":
            T.autograd.grad(out, a)
        else:
            a.mul(2)[1].backward()
    return log, a.grad


@pytest.mark.parametrize("hooks", ["none", "pack hooks", "checkpoint forward"])
@differential
def test_saved_outputs_are_detached_only_without_pack_hooks(T, hooks):
    """torch's node detaches an output it saves itself (exp's, relu's): a mode sees aten.detach after
    the op; an output handed to a pack hook (checkpoint's forward) is not detached."""
    import contextlib
    log = []
    x = T.tensor([0.5, -1.0], requires_grad=True)

    def run(x):
        return x.exp() + x.sin() + (x * 2).relu()

    with _full_recorder(T, log):
        if hooks == "pack hooks":
            with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                out = run(x)
        elif hooks == "checkpoint forward":
            from importlib import import_module
            checkpoint = import_module(T.__name__ + ".utils.checkpoint").checkpoint
            mode = _full_recorder(T, log)
            out = checkpoint(run, x, use_reentrant=False, context_fn=lambda: (mode, contextlib.nullcontext()))
        else:
            out = run(x)
    return log, out


@differential
def test_factories_are_seen(T):
    log = []
    like = T.ones(2, 3)
    with _full_recorder(T, log):
        made = [T.zeros(2), T.ones(2, 3), T.randn(2, 3), T.rand(3), T.empty(1), T.full((2,), 3.0),
                T.zeros_like(like), T.ones_like(like), T.arange(4), T.eye(2)]
    return log, [tuple(t.shape) for t in made]


@differential
def test_backward_result_replaces_the_gradient(T):
    class Halving(_mode_class(T)):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            return out / 2 if str(func) == "aten.threshold_backward.default" else out
    x = T.tensor([[-1.0, 2.0, 3.0]], requires_grad=True)
    with Halving():
        T.relu(x).sum().backward()
    return x.grad


def test_backward_of_an_undispatched_node_warns_once():
    log = []
    x = hookgrad.randn(3, requires_grad=True)
    with pytest.warns(UserWarning, match="TanBackward0's are not dispatched") as caught:
        with _recorder(hookgrad, log):
            x.tan().sum().backward()
            x.tan().sum().backward()
    assert len([w for w in caught if "not dispatched" in str(w.message)]) == 1
    assert log == ["aten.tan", "aten.detach", "aten.sum", "aten.ones_like", "aten.expand", "aten.detach", "aten.tan",
                   "aten.detach", "aten.sum", "aten.ones_like", "aten.expand", "aten.add_"]


def test_modes_leave_no_hook_behind():
    from hookgrad.autograd import graph
    log = []
    with pytest.raises(ValueError):
        with _recorder(hookgrad, log):
            raise ValueError
    assert not graph._op_forward_hooks and not graph._op_backward_hooks


def test_unknown_ops_do_not_join_torch_ops_aten():
    """An op without a known decomposition is dispatched under its own name, by a packet that is not
    added to torch.ops.aten (torch may have no such operator): attention with a padding mask."""
    log = []
    mha = hookgrad.nn.MultiheadAttention(4, 2)
    x = hookgrad.randn(3, 1, 4)
    with hookgrad.no_grad(), _recorder(hookgrad, log):
        mha(x, x, x, key_padding_mask=hookgrad.tensor([[False, False, True]]))
    assert "aten.multi_head_attention_forward" in log
    with pytest.raises(AttributeError):
        hookgrad.ops.aten.multi_head_attention_forward


@differential
def test_a_deep_copy_of_an_op_is_the_op(T):
    """Tables keyed by ``torch.ops.aten.*`` (a FLOP counter's, deep-copied before use) keep finding
    the ops a mode receives: deepcopy returns the same packet and overload."""
    import copy
    table = {T.ops.aten.convolution: "conv", T.ops.aten.addmm.default: "addmm"}
    copied = copy.deepcopy(table)
    return (copy.deepcopy(T.ops.aten.mm) is T.ops.aten.mm, copy.deepcopy(T.ops.aten.mm.default) is T.ops.aten.mm.default,
            copied.get(T.ops.aten.convolution), copied.get(T.ops.aten.addmm.default))
