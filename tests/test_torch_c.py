"""torch._C's names that libraries use, against torch: the op namespaces, TensorBase, Generator, the
torch-function helpers, DispatchKey/DispatchKeySet, the guards and flags, TorchScript's types."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from difftest import catch, differential

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)


# ---- op namespaces ---------------------------------------------------------------------------------
@differential
def test_public_functions_are_the_namespace_functions(T):
    C = T._C
    return [C._fft.fft_rfft is T.fft.rfft, C._linalg.linalg_svd is T.linalg.svd,
            C._special.special_erf is T.special.erf, C._VariableFunctions.add is T.add,
            C._VariableFunctionsClass.matmul is T.matmul, T.nn.functional.gelu is C._nn.gelu,
            T.nn.functional.linear is C._nn.linear, T.nn.functional.softplus is C._nn.softplus]


@differential
def test_namespace_functions_compute(T):
    C = T._C
    x = T.tensor(X[0, 0])
    return [C._fft.fft_rfft(x).abs(), C._linalg.linalg_det(x[:3, :3]), C._special.special_expit(x),
            C._VariableFunctions.exp(x), C._VariableFunctions.einsum("ij,jk->ik", [x, x]),
            C._VariableFunctions.split(x, 4), C._VariableFunctions.block_diag([x[:2, :2], x[:1, :1]]),
            C._VariableFunctions.broadcast_tensors([x[:1], x]), C._VariableFunctions.atleast_2d(x[0]),
            C._VariableFunctions.atleast_3d([x, x[0]]), C._VariableFunctions.tensordot(x, x, [1], [0]),
            C._VariableFunctions.cartesian_prod([x[0, :2], x[1, :3]]),
            C._VariableFunctions.chain_matmul([x, x, x]), C._VariableFunctions.meshgrid([x[0], x[1]], indexing="xy")]


@differential
def test_vf_module_calls_the_operator_forms(T):
    # (kronfluence computes its scores with ``from torch import _VF; _VF.einsum(expr, operands, path=...)``)
    from importlib import import_module
    VF = import_module(f"{T.__name__}._VF")
    x = T.tensor(X[0, 0], dtype=T.float64)
    return [VF is T._VF, VF.add is T.add, VF.einsum("ij,jk->ik", (x, x), path=[0, 1]),
            VF.einsum("ij,jk,kl->il", [x, x, x], path=[1, 2, 0, 1]), VF.split(x, 4), VF.tensordot(x, x, [1], [0]),
            catch(lambda: VF.no_such_op)]


def _nn_cases(T):
    rng = np.random.default_rng(1)
    C, x = T._C._nn, T.tensor(X, requires_grad=True)
    logits = T.tensor(X[:, :, 0, 0], requires_grad=True)
    classes = T.tensor([1, 0])
    probs = T.tensor(1 / (1 + np.exp(-X)))
    w = T.tensor(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    return {
        "gelu": lambda: C.gelu(x, approximate="tanh"),
        "linear": lambda: C.linear(x, T.ones(5, 6), T.ones(5)),
        "elu": lambda: C.elu(x, 0.5),
        "elu_scaled": lambda: C.elu(x, 1.6732632423543772, 1.0507009873554805, 1),
        "hardtanh": lambda: C.hardtanh(x, -0.5, 0.5),
        "leaky_relu": lambda: C.leaky_relu(x, 0.2),
        "softplus": lambda: C.softplus(x, 2, 10),
        "softshrink": lambda: C.softshrink(x, 0.3),
        "hardsigmoid": lambda: C.hardsigmoid(x), "hardswish": lambda: C.hardswish(x),
        "relu6": lambda: C.relu6(x), "silu": lambda: C.silu(x), "mish": lambda: C.mish(x),
        "log_sigmoid": lambda: C.log_sigmoid(x), "glu": lambda: C.glu(x, 2),
        "mse_loss_none": lambda: C.mse_loss(x, T.zeros_like(x), 0),
        "mse_loss_sum": lambda: C.mse_loss(x, T.zeros_like(x), 2),
        "l1_loss": lambda: C.l1_loss(x, T.ones_like(x)),
        "smooth_l1_loss": lambda: C.smooth_l1_loss(x, T.zeros_like(x), 1, 0.5),
        "huber_loss": lambda: C.huber_loss(x, T.zeros_like(x), 2, 0.7),
        "soft_margin_loss": lambda: C.soft_margin_loss(x, T.ones_like(x)),
        "binary_cross_entropy": lambda: C.binary_cross_entropy(probs.requires_grad_(), T.ones_like(probs) / 2),
        "nll_loss": lambda: C.nll_loss(logits.log_softmax(1), classes, None, 2, -100),
        "nll_loss_nd": lambda: C.nll_loss_nd(logits.log_softmax(1), classes),
        "cross_entropy_loss": lambda: C.cross_entropy_loss(logits, classes, None, 1, -100, 0.1),
        "multi_margin_loss": lambda: C.multi_margin_loss(logits, classes, 1, 1.0, None, 0),
        "multilabel_margin_loss": lambda: C.multilabel_margin_loss(logits, T.tensor([[0, -1, 1], [2, 1, -1]])),
        "adaptive_avg_pool2d": lambda: C.adaptive_avg_pool2d(x, [2, 3]),
        "adaptive_max_pool2d": lambda: C.adaptive_max_pool2d(x, [3, 2]),
        "avg_pool2d": lambda: C.avg_pool2d(x, [2, 2]),
        "max_pool2d_with_indices": lambda: C.max_pool2d_with_indices(x, [3, 3], [], [1, 1]),
        "max_pool2d_with_stride": lambda: C.max_pool2d_with_indices(x, [2, 2], [1, 2]),
        "pad": lambda: C.pad(x, [1, 2], "constant", 0.5),
        "pad_reflect": lambda: C.pad(x, [1, 1, 2, 0], "reflect"),
        "reflection_pad2d": lambda: C.reflection_pad2d(x, [1, 2, 0, 1]),
        "replication_pad1d": lambda: C.replication_pad1d(x[0], [2, 1]),
        "_pad_circular": lambda: C._pad_circular(x, [1, 1, 1, 1]),
        "im2col": lambda: C.im2col(x, [2, 2], [1, 1], [0, 0], [2, 2]),
        "col2im": lambda: C.col2im(C.im2col(x, [2, 2], [1, 1], [0, 0], [1, 1]), [6, 6], [2, 2], [1, 1], [0, 0],
                                   [1, 1]),
        "thnn_conv2d": lambda: C.thnn_conv2d(x, w, [3, 3], None, [1, 1], [1, 1]),
        "slow_conv_dilated2d": lambda: C.slow_conv_dilated2d(x, w, [3, 3], T.ones(4), [1, 1], [0, 0], [2, 2]),
        "slow_conv_transpose2d": lambda: C.slow_conv_transpose2d(x, w.transpose(0, 1), [3, 3], None, [2, 2]),
        "one_hot": lambda: C.one_hot(classes, 3),
        "pad_sequence": lambda: C.pad_sequence([x[0, 0], x[0, 1, :3]], True, -1.0),
        "flatten_dense_tensors": lambda: C.flatten_dense_tensors([x[0, 0], x[1, 1, 0]]),
        "unflatten_dense_tensors": lambda: C.unflatten_dense_tensors(T.arange(8.0), [T.ones(2, 3), T.ones(2)]),
        "scaled_dot_product_attention": lambda: C.scaled_dot_product_attention(x[0], x[0], x[1]),
        "bad_reduction": lambda: C.mse_loss(x, x, 5),
        "conv_depthwise2d": lambda: C._conv_depthwise2d(x, w[:3, :1], [3, 3], None, [1, 1], [1, 1], [1, 1]),
        "conv_depthwise3d": lambda: C.conv_depthwise3d(x[None], w[:3, :1, None], [1, 3, 3], T.ones(3), [1, 1, 1],
                                                       [0, 1, 1], [1, 1, 1]),
        "silu_": lambda: C.silu_(x * 1), "mish_": lambda: C.mish_(x * 1), "relu6_": lambda: C.relu6_(x * 3),
        "hardsigmoid_": lambda: C.hardsigmoid_(x * 1), "hardswish_": lambda: C.hardswish_(x * 1),
        "upsample_nearest2d": lambda: C.upsample_nearest2d(x, [9, 12]),
        "upsample_nearest2d_vec": lambda: C.upsample_nearest2d(x, None, [1.5, 2.0]),
        "upsample_nearest2d_scales": lambda: C.upsample_nearest2d(x, [12, 9], 2.0, 1.5),
        "upsample_nearest1d": lambda: C.upsample_nearest1d(x[0], [10]),
        "upsample_nearest3d": lambda: C.upsample_nearest3d(x[None], [4, 7, 7]),
        "nearest_exact2d": lambda: C._upsample_nearest_exact2d(x, [9, 4]),
        "upsample_linear1d": lambda: C.upsample_linear1d(x[0], [11], False),
        "upsample_bilinear2d": lambda: C.upsample_bilinear2d(x, [9, 4], True),
        "upsample_bilinear2d_vec": lambda: C.upsample_bilinear2d(x, None, False, [1.5, 0.5]),
        "upsample_trilinear3d": lambda: C.upsample_trilinear3d(x[None], [4, 5, 8], False),
        "upsample_both_sizes": lambda: C.upsample_nearest2d(x, [4, 4], [2.0, 2.0]),
        "max_unpool2d": lambda: C.max_unpool2d(*C.max_pool2d_with_indices(x, [2, 2]), [6, 6]),
        "max_unpool2d_bigger": lambda: C.max_unpool2d(*C.max_pool2d_with_indices(x, [2, 2]), [7, 7]),
        "max_unpool3d": lambda: C.max_unpool3d(*C.max_pool3d_with_indices(x[None], [1, 2, 2]), [3, 6, 6],
                                               [1, 2, 2], [0, 0, 0]),
        "max_unpool3d_bad_index": lambda: C.max_unpool3d(*C.max_pool3d_with_indices(x[None], [1, 2, 2]), [2, 6, 6],
                                                         [1, 2, 2], [0, 0, 0]),
        "fractional_max_pool2d": lambda: C.fractional_max_pool2d(x, [2, 2], [4, 4],
                                                                 T.tensor(rng.random((2, 3, 2)).astype(np.float32))),
        "_pad_enum_reflect": lambda: C._pad_enum(x, [1, 2], 0),
        "_pad_enum_replicate": lambda: C._pad_enum(x, [2, 0, 1, 1], 1),
        "_pad_enum_circular": lambda: C._pad_enum(x, [1, 1, 2, 1], 2),
        "_pad_enum_constant": lambda: C._pad_enum(x, [1, 2, 1, 0], 3, 2.5),
        "_pad_enum_value_with_reflect": lambda: C._pad_enum(x, [1, 2], 0, 2.5),
    }, x


@pytest.mark.parametrize("case", [
    "gelu", "linear", "elu", "elu_scaled", "hardtanh", "leaky_relu", "softplus", "softshrink", "hardsigmoid",
    "hardswish", "relu6", "silu", "mish", "log_sigmoid", "glu", "mse_loss_none", "mse_loss_sum", "l1_loss",
    "smooth_l1_loss", "huber_loss", "soft_margin_loss", "binary_cross_entropy", "nll_loss", "nll_loss_nd",
    "cross_entropy_loss", "multi_margin_loss", "multilabel_margin_loss", "adaptive_avg_pool2d",
    "adaptive_max_pool2d", "avg_pool2d", "max_pool2d_with_indices", "max_pool2d_with_stride", "pad",
    "pad_reflect", "reflection_pad2d", "replication_pad1d", "_pad_circular", "im2col", "col2im", "thnn_conv2d",
    "slow_conv_dilated2d", "slow_conv_transpose2d", "one_hot", "pad_sequence", "flatten_dense_tensors",
    "unflatten_dense_tensors", "scaled_dot_product_attention", "bad_reduction", "conv_depthwise2d",
    "conv_depthwise3d", "silu_", "mish_", "relu6_", "hardsigmoid_", "hardswish_", "upsample_nearest2d",
    "upsample_nearest2d_vec", "upsample_nearest2d_scales", "upsample_nearest1d", "upsample_nearest3d",
    "nearest_exact2d", "upsample_linear1d", "upsample_bilinear2d", "upsample_bilinear2d_vec",
    "upsample_trilinear3d", "upsample_both_sizes", "max_unpool2d", "max_unpool2d_bigger", "max_unpool3d",
    "max_unpool3d_bad_index", "fractional_max_pool2d", "_pad_enum_reflect", "_pad_enum_constant",
    "_pad_enum_circular", "_pad_enum_replicate", "_pad_enum_value_with_reflect"])
@differential(rtol=1e-4, atol=1e-5)
def test_nn_namespace(T, case):
    cases, x = _nn_cases(T)
    out = catch(cases[case])
    if not hasattr(out, "cls"):
        first = out[0] if isinstance(out, tuple) else out
        if first.requires_grad:
            first.sum().backward()
            return out, x.grad
    return out


@differential
def test_parse_to(T):
    def parse(*args, **kwargs):
        device, dtype, non_blocking, memory_format = T._C._nn._parse_to(*args, **kwargs)
        return None if device is None else str(device), dtype, non_blocking, memory_format

    return [parse("cpu", T.float64), parse(T.ones(1, dtype=T.float16)), parse(dtype=T.int32, non_blocking=True),
            parse(T.float32), parse("cpu")]


@differential
def test_missing_namespace_names_raise_attribute_error(T):
    return [catch(lambda: T._C._fft.fft_nothing), catch(lambda: T._C._nn.no_such_op),
            catch(lambda: T._C._VariableFunctions.no_such_op)]


# ---- classes -------------------------------------------------------------------------------------------
@differential
def test_tensor_base_and_generator(T):
    C = T._C
    p = T.nn.Parameter(T.ones(2))
    return [isinstance(T.ones(1), C.TensorBase), isinstance(p, C.TensorBase), isinstance(p, C._TensorBase),
            C.TensorBase is C._TensorBase, issubclass(T.Tensor, C.TensorBase), C.Generator is T.Generator,
            isinstance(T.Generator().manual_seed(3), C.Generator), isinstance(3, C.TensorBase)]


@differential
def test_torchscript_types_never_match(T):
    C = T._C
    kinds = [C.ScriptMethod, C.ScriptObject, C.ScriptFunction, C.Value, C.Node, C.Block, C.TracingState]
    things = [T.ones(1), T.nn.Linear(1, 1), T.nn.Linear(1, 1).forward, len, lambda: 0]
    return ([any(isinstance(t, k) for t in things) for k in kinds], [catch(k) for k in kinds],
            C.ScriptFunction is T.jit.ScriptFunction, C._get_tracing_state())


# ---- torch-function helpers ------------------------------------------------------------------------------
@differential
def test_disabled_torch_function_impl_subclass_recipe(T):
    class Plain(T.Tensor):
        __torch_function__ = T._C._disabled_torch_function_impl

    y = T.tensor([1.0, -2.0]).as_subclass(Plain)
    results = [y + 1, y.sum(), T.relu(y), y[0], y.detach(), y.clone(), T.nn.functional.gelu(y)]
    return ([type(r) is T.Tensor for r in results], results, type(y) is Plain,
            T._C._disabled_torch_function_impl(T.add, (), (T.ones(2), 2), {}),
            T._C._disabled_torch_function_impl(T.mul, (), (T.ones(2),), {"other": 3}),
            T._C._has_torch_function([y]), T._C._has_torch_function_unary(y))


@differential
def test_torch_function_switches(T):
    C = T._C

    class Sub(T.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    z = T.ones(1).as_subclass(Sub)
    seen = [C._has_torch_function([z]), C._has_torch_function([T.ones(1), T.nn.Parameter(T.ones(1))]),
            C._has_torch_function_variadic(T.ones(1), z), C._is_torch_function_enabled(),
            C._is_torch_function_all_disabled(), C._is_torch_function_mode_enabled(), C._len_torch_function_stack()]
    with C.DisableTorchFunctionSubclass():
        seen += [C._has_torch_function([z]), C._is_torch_function_enabled(), C._is_torch_function_all_disabled()]
    with C.DisableTorchFunction():
        seen += [C._has_torch_function([z]), C._is_torch_function_enabled(), C._is_torch_function_all_disabled()]
        with C.DisableTorchFunctionSubclass():
            seen.append(C._is_torch_function_all_disabled())
        with C._EnableTorchFunction():
            seen += [C._is_torch_function_enabled(), C._has_torch_function([z])]
        seen.append(C._is_torch_function_all_disabled())
    seen += [C._is_torch_function_enabled(), catch(C._get_function_stack_at, 0)]
    return seen


# ---- flags and small queries ------------------------------------------------------------------------------
@differential
def test_flags(T):
    C = T._C
    seen = [C._get_cudnn_enabled(), C._get_mkldnn_enabled(), C._get_float32_matmul_precision(),
            C._is_any_autocast_enabled(), C._get_privateuse1_backend_name(), C._get_default_device(),
            C._get_accelerator().type, catch(C._get_accelerator, True), C._get_autograd_fallback_mode(),
            C._get_cpu_capability() == T.backends.cpu.get_cpu_capability()]
    C._set_mkldnn_enabled(False)
    seen += [C._get_mkldnn_enabled(), T.backends.mkldnn.enabled, catch(C._set_mkldnn_enabled, 3)]
    C._set_mkldnn_enabled(True)
    C._set_cudnn_enabled(False)
    seen += [C._get_cudnn_enabled(), T.backends.cudnn.enabled]
    C._set_cudnn_enabled(True)
    with T.autocast("cpu"):
        seen.append(C._is_any_autocast_enabled())
    with T.autocast("cpu", enabled=False):
        seen.append(C._is_any_autocast_enabled())
    C._set_autograd_fallback_mode("nothing")
    seen += [C._get_autograd_fallback_mode(), catch(C._set_autograd_fallback_mode, "bogus")]
    C._set_autograd_fallback_mode("warn")
    C._set_grad_enabled(False)
    seen += [T.is_grad_enabled(), (T.ones(1, requires_grad=True) * 2).requires_grad]
    C._set_grad_enabled(True)
    seen += [T.is_grad_enabled(), catch(C._set_grad_enabled, 1)]
    return seen


@differential
def test_backend_flags_and_build_facts(T):
    C = T._C
    seen = [C._get_cudnn_benchmark(), C._get_cudnn_deterministic(), C._get_cudnn_allow_tf32(),
            C._get_mkldnn_deterministic(), C.has_lapack, C._has_mps, C._mps_is_available(),
            C.has_mkl == T.backends.mkl.is_available(), C.has_openmp == T.backends.openmp.is_available(),
            C._is_multithreading_enabled(), C._is_grad_layout_enforcement_enabled()]
    for name, module, flag in [("cudnn_benchmark", T.backends.cudnn, "benchmark"),
                               ("cudnn_deterministic", T.backends.cudnn, "deterministic"),
                               ("cudnn_allow_tf32", T.backends.cudnn, "allow_tf32"),
                               ("mkldnn_deterministic", T.backends.mkldnn, "deterministic")]:
        before = getattr(C, "_get_" + name)()
        getattr(C, "_set_" + name)(not before)
        seen += [getattr(C, "_get_" + name)(), getattr(module, flag), catch(getattr(C, "_set_" + name), 1),
                 catch(getattr(C, "_set_" + name), value=before), catch(getattr(C, "_set_" + name), enabled=before)]
        getattr(C, "_set_" + name)(before)
    C._set_multithreading_enabled(False)
    seen += [C._is_multithreading_enabled(), T.autograd.is_multithreading_enabled(),
             catch(C._set_multithreading_enabled, 0)]
    C._set_multithreading_enabled(True)
    C._set_grad_layout_enforcement_enabled(False)
    seen.append(C._is_grad_layout_enforcement_enabled())
    C._set_grad_layout_enforcement_enabled(True)
    return seen


@differential
def test_increment_version(T):
    C = T._C
    x, y, rows = T.ones(2), T.zeros(1), T.ones(3, 2)
    C._increment_version([x])
    C._increment_version([x, y, x])
    C._increment_version(rows)  # a tensor is iterated: one bump per row
    return [x._version, y._version, rows._version, catch(C._increment_version, 3),
            catch(C._increment_version, T.tensor(1.0)), catch(C._increment_version, [x, 3]),
            C._log_api_usage_metadata("event", {"a": "b"}), catch(C._log_api_usage_metadata, "event", {"a": 1})]


@differential
def test_small_queries(T):
    C = T._C

    def undocumented():
        pass

    documented = T.nn.functional.relu
    return [C._log_api_usage_once("python.my_library"), catch(C._log_api_usage_once, 3),
            catch(C._add_docstr, undocumented, "doc"), catch(C._add_docstr, len, "doc"),
            catch(C._add_docstr, documented, "doc"), catch(C._add_docstr, len, 3), C._current_graph_task_id(),
            type(C._to_dlpack(T.ones(2))).__name__, T.from_dlpack(C._to_dlpack(T.arange(3.0)))]


@differential
def test_worker_bookkeeping(T):
    C = T._C
    key = 424242
    return [C._set_worker_signal_handlers(), catch(C._set_worker_signal_handlers, 1), C._set_worker_pids(key, (1, 2)),
            catch(C._set_worker_pids, key, (1, 2)), catch(C._set_worker_pids, key + 1, [1]),
            C._error_if_any_worker_fails(), C._remove_worker_pids(key), catch(C._remove_worker_pids, key)]


# ---- dispatch keys ---------------------------------------------------------------------------------------
_KEYS = ["Undefined", "CPU", "CUDA", "Meta", "AutogradCPU", "AutogradCUDA", "AutogradFunctionality", "Dense",
         "Python", "PythonTLSSnapshot", "BackendSelect", "ADInplaceOrView", "AutocastCPU", "AutocastCUDA",
         "SparseCPU", "QuantizedCPU", "NestedTensorCPU", "Autograd", "CompositeImplicitAutograd", "FuncTorchBatched"]


@differential
def test_dispatch_key_members(T):
    DK = T._C.DispatchKey
    return [(name, int(member), member.name, repr(member), str(member))
            for name, member in DK.__members__.items()] + [DK(49).name, DK.CPU == DK.CPU, DK.CPU == 49]


@differential
def test_dispatch_key_set_algebra(T):
    DK, S = T._C.DispatchKey, T._C.DispatchKeySet
    seen = []
    for a, b in itertools.product(_KEYS, repeat=2):
        x, y = S(getattr(DK, a)), S(getattr(DK, b))
        both = x | y
        seen.append([repr(both), repr(x & y), repr(both - y), both.raw_repr(), both.has(getattr(DK, a)),
                     x.has(getattr(DK, b)), repr(both.remove(getattr(DK, b))), repr(x.add(getattr(DK, b))),
                     both.highestPriorityTypeId().name, x == y])
    seen.append([repr(S.from_raw_repr(0x1000000003)), catch(S), catch(S, 3)])
    return seen


@differential
def test_exclude_dispatch_key_guard(T):
    C = T._C
    DK, S = C.DispatchKey, C.DispatchKeySet
    autocast = S(DK.AutocastCPU) | S(DK.AutocastCUDA)
    a, b = T.ones(2, 2), T.ones(2, 2)
    with T.autocast("cpu", dtype=T.bfloat16):
        inside = (a @ b).dtype
        with C._ExcludeDispatchKeyGuard(autocast):
            excluded = (a @ b).dtype
        after = (a @ b).dtype
    w = T.ones(2, requires_grad=True)
    with C._ExcludeDispatchKeyGuard(S(DK.AutogradCPU)):
        below = w * 2
    return [inside, excluded, after, below.requires_grad, below.grad_fn is None, (w * 2).requires_grad,
            catch(C._ExcludeDispatchKeyGuard, 3)]


def test_exclude_guard_refuses_keys_without_an_effect():
    import hookgrad
    C = hookgrad._C
    with pytest.raises(NotImplementedError, match="ADInplaceOrView"):
        C._ExcludeDispatchKeyGuard(C.DispatchKeySet(C.DispatchKey.ADInplaceOrView))


def test_exclude_python_key_hides_ops_from_dispatch_modes():
    import hookgrad
    from hookgrad.utils._python_dispatch import TorchDispatchMode
    C = hookgrad._C
    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with Log():
        hookgrad.ones(2) + 1
        count = len(seen)
        with C._ExcludeDispatchKeyGuard(C.DispatchKeySet(C.DispatchKey.Python)):
            hookgrad.ones(2) * 3
        assert len(seen) == count
    assert count > 0


# ---- the tables follow the installed torch ------------------------------------------------------------------
def test_generated_tables_are_what_torch_says():
    import importlib.util
    import os
    import hookgrad._C as ours
    path = os.path.join(os.path.dirname(ours.__file__), "_generate.py")
    spec = importlib.util.spec_from_file_location("torch_c_generate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(os.path.join(os.path.dirname(ours.__file__), "_tables.py"), encoding="utf-8") as fh:
        assert fh.read() == module.render(), "run python src/hookgrad/_C/_generate.py --write"


def test_build_facts_answer_for_hookgrad():
    import hookgrad
    C = hookgrad._C
    # torch is built with oneDNN and says so; hookgrad does not use it
    assert C._has_mkldnn is False and hookgrad.backends.mkldnn.is_available() is False


def test_left_out_names_are_missing_under_run():
    import hookgrad
    for name in hookgrad._C.LEFT_OUT:
        assert not hasattr(hookgrad._C, name), name


def test_under_run_torch_c_names_resolve_and_missing_ones_say_so(tmp_path):
    import os
    import subprocess
    import sys
    script = tmp_path / "uses_c.py"
    script.write_text(
        "import torch\n"
        "from torch._C import ScriptMethod, TensorBase, DispatchKeySet, _disabled_torch_function_impl\n"
        "import torch._C._nn\n"
        "print(torch._C._nn.gelu is torch.nn.functional.gelu, isinstance(torch.ones(1), TensorBase))\n"
        "print(torch._C.DispatchKeySet, torch._C.ScriptMethod, type(torch._C.Generator()))\n"
        "for get in (lambda: torch._C._cxx_flags, lambda: torch._C._nn.mkldnn_linear,\n"
        "            lambda: torch._C._VariableFunctions.quantize_per_tensor):\n"
        "    try:\n"
        "        get()\n"
        "    except AttributeError as exc:\n"
        "        print(exc)\n")
    env = dict(os.environ)
    out = subprocess.run([sys.executable, "-m", "hookgrad", "run", str(script)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "True True",
        "<class 'torch.DispatchKeySet'> <class 'torch.ScriptMethod'> <class 'torch._C.Generator'>",
        # Python's own wording first (code in the wild matches it), then where hookgrad says what it lacks
        "module 'torch._C' has no attribute '_cxx_flags' (hookgrad has no torch._C._cxx_flags; "
        "see docs/api-coverage.md)",
        "module 'torch._C._nn' has no attribute 'mkldnn_linear' (hookgrad has no torch._C._nn.mkldnn_linear; "
        "see docs/api-coverage.md)",
        "hookgrad has no torch._C._VariableFunctions.quantize_per_tensor; see docs/api-coverage.md"]


def test_nn_names_left_out_are_torch_names_hookgrad_lacks():
    import torch

    import hookgrad._C._nn as ours
    for name in ours.LEFT_OUT:
        assert hasattr(torch._C._nn, name), name
        assert not hasattr(ours, name), name


@differential
def test_dispatch_key_set_is_not_iterable(T):
    S, DK = T._C.DispatchKeySet, T._C.DispatchKey
    return catch(list, S(DK.CPU))
