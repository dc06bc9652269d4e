"""What PyTorch's own hook test files need from hookgrad beyond the hooks themselves.

Those files (test/nn/test_module_hooks.py, the hook tests of test/test_autograd.py) are run
unmodified under ``hookgrad run`` outside this repository; what they import is checked here:

* ``hookgrad.testing._internal``: ``TestCase.assertEqual`` against torch's own on a table of
  cases (same verdict, same exception class), the skip/pass-through decorators, parametrization
  and device-type instantiation (same generated test names), ``run_tests``' option handling;
* the private ``torch._C`` entry points and autograd details the autograd hook tests exercise,
  differentially against torch.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
import textwrap
import types
import unittest
import warnings

import numpy as np
import pytest

import hookgrad
import torch
from difftest import Raised, catch, differential

from hookgrad.testing._internal import common_device_type as hg_device
from hookgrad.testing._internal import common_nn as hg_nn
from hookgrad.testing._internal import common_utils as hg_utils


def _torch_common_utils():
    """torch's own common_utils; it needs ``expecttest`` only for its TestCase base class, which a
    plain unittest.TestCase stands in for when that package is not installed. Importing it changes
    global torch state (it locks torch.backends flags), so it is only imported in a subprocess:
    see ``torch_reference``."""
    if "expecttest" not in sys.modules:
        try:
            import expecttest  # noqa: F401
        except ImportError:
            shim = types.ModuleType("expecttest")
            shim.TestCase = unittest.TestCase
            sys.modules["expecttest"] = shim
    from torch.testing._internal import common_utils
    return common_utils


# --------------------------------------------------------------------------- assertEqual

def _cases(T):
    """(name, x, y, keyword arguments) built with framework T."""
    t = T.tensor
    return [
        ("same floats", t([1.0, 2.0]), t([1.0, 2.0]), {}),
        ("float32 within default rtol", t([1.0, 2.0]), t([1.0 + 1e-6, 2.0]), {}),
        ("float32 beyond default tolerance", t([1.0, 2.0]), t([1.0 + 1e-4, 2.0]), {}),
        ("float64 beyond its tighter tolerance", t([1.0], dtype=T.float64), t([1.0 + 1e-6], dtype=T.float64), {}),
        ("dtype differs", t([1.0]), t([1.0], dtype=T.float64), {}),
        ("dtype differs, exact_dtype off", t([1.0]), t([1.0], dtype=T.float64), {"exact_dtype": False}),
        ("shape differs", t([1.0, 2.0]), t([[1.0, 2.0]]), {}),
        ("tensor vs list", t([1.0, 2.0]), [1.0, 2.0], {}),
        ("list vs tensor, values differ", [1.0, 3.0], t([1.0, 2.0]), {}),
        ("int vs float number", 1, 1.0, {}),
        ("float sum within float32 tolerance", 0.1 + 0.2, 0.3, {}),
        ("numbers far apart", 1.0, 1.001, {}),
        ("one-element tensor vs number", t(3.0), 3, {}),
        ("many-element tensor vs number", t([1.0, 2.0]), 3.0, {}),
        ("bool vs int", True, 1, {}),
        ("bool vs one-element tensor", True, t(False), {}),
        ("None vs None", None, None, {}),
        ("None vs 0", None, 0, {}),
        ("equal strings", "abc", "abc", {}),
        ("different strings", "abc", "abd", {}),
        ("equal sets", {1, 2}, {2, 1}, {}),
        ("dicts of tensors", {"a": t([1.0]), "b": 2}, {"b": 2, "a": t([1.0])}, {}),
        ("dict keys differ", {"a": 1}, {"b": 1}, {}),
        ("sequence lengths differ", [1, 2], [1, 2, 3], {}),
        ("nan equals nan by default", t([math.nan]), t([math.nan]), {}),
        ("nan with equal_nan off", t([math.nan]), t([math.nan]), {"equal_nan": False}),
        ("explicit tolerances", t([1.0]), t([1.1]), {"atol": 0.2, "rtol": 0}),
        ("explicit tolerances too tight", t([1.0]), t([1.1]), {"atol": 0.01, "rtol": 0}),
        ("only atol given", t([1.0]), t([1.0]), {"atol": 0.1}),
        ("integer tensors exact", t([1]), t([2]), {}),
        ("bool tensors", t([True, False]), t([True, False]), {}),
        ("array vs tensor", np.array([1.0, 2.0], dtype=np.float32), t([1.0, 2.0]), {}),
        ("float64 array vs float32 tensor", np.array([1.0, 2.0]), t([1.0, 2.0]), {}),
        ("Size vs tuple", T.Size([2, 3]), (2, 3), {}),
        ("tensor requiring grad", t([1.0, 2.0], requires_grad=True), t([1.0, 2.0]), {}),
        ("nested tuples", (t([1.0]), [2, (3.0,)]), (t([1.0]), [2, (3.0,)]), {}),
        ("types", int, int, {}),
        ("different types", int, float, {}),
    ]


def _verdict(test_case, x, y, kwargs):
    try:
        test_case.assertEqual(x, y, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the class is the verdict
        return type(exc).__name__
    return "equal"


def _build_parametrized(utils, T):
    class Suite(utils.TestCase):
        @utils.parametrize("x", [1, 2.5, "s", utils.subtest(7, name="seven"), T.float32])
        @utils.parametrize("flag", [True, False])
        def test_p(self, x, flag):
            pass

        @utils.parametrize("a,b", [(1, 2), (3, 4)], name_fn=lambda a, b: f"sum{a + b}")
        def test_q(self, a, b):
            assert b == a + 1

        # layouts and memory formats are not strings in torch: named by position
        @utils.parametrize("layout", [T.strided, T.sparse_coo, T.sparse_bsc, T.channels_last])
        def test_l(self, layout):
            pass

    utils.instantiate_parametrized_tests(Suite)
    return Suite


def _build_optim_suite(utils, device, optimizers, T):
    """A device-generic suite parametrized with @optims over SGD, Adam and LBFGS, instantiated;
    the class and what its tests received."""
    infos = [i for i in optimizers.optim_db if i.name in ("SGD", "Adam", "LBFGS")]
    seen = []

    class TestOptimSuite(utils.TestCase):
        @optimizers.optims(infos, dtypes=[T.float32, T.float64])
        def test_o(self, device, dtype, optim_info):
            seen.append((device, str(dtype).split(".")[-1], optim_info.name, optim_info.step_requires_closure))

        @optimizers.optims(infos)
        def test_default_dtype(self, device, dtype, optim_info):
            seen.append((device, str(dtype).split(".")[-1], optim_info.name))

    scope = {"TestOptimSuite": TestOptimSuite}
    device.instantiate_device_type_tests(TestOptimSuite, scope)
    return scope["TestOptimSuiteCPU"], seen


def _torch_reference_values():
    """What torch's own test helpers answer for the cases here (run in the subprocess)."""
    utils = _torch_common_utils()
    from torch.testing._internal import common_device_type, common_optimizers
    optim_suite, seen = _build_optim_suite(utils, common_device_type, common_optimizers, torch)
    names = sorted(n for n in vars(optim_suite) if n.startswith("test"))
    for name in names:
        _run_case(optim_suite, name)
    from torch.testing._internal import common_dtype

    def sample(a, b=2, *args, c, **kw):
        return a
    helpers = {"dtype_name": utils.dtype_name(torch.int64), "arglist": utils.get_function_arglist(sample),
               "dtype2prec": sorted((str(k).split(".")[-1], v) for k, v in utils.dtype2prec_DONTUSE.items()),
               "math_dtypes": [str(d).split(".")[-1] for d in common_dtype.get_all_math_dtypes("cpu")]}
    return {"helpers": helpers, "verdicts": [_verdict(utils.TestCase(), *case[1:]) for case in _cases(torch)],
            "names": sorted(n for n in vars(_build_parametrized(utils, torch)) if n.startswith("test")),
            "optim_names": names, "optim_seen": sorted(map(list, seen))}


@pytest.fixture(scope="module")
def torch_reference():
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here] + [p for p in sys.path if p]))
    code = "import json, test_pytorch_hook_suites as t; print(json.dumps(t._torch_reference_values()))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=here,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("index", range(len(_cases(hookgrad))))
def test_assert_equal_matches_torch(index, torch_reference):
    name, *ours_case = _cases(hookgrad)[index]
    want = torch_reference["verdicts"][index]
    got = _verdict(hg_utils.TestCase(), *ours_case)
    assert got == want, f"{name}: hookgrad says {got}, torch says {want}"


def test_assert_equal_verdicts_do_not_depend_on_torch():
    """The table's expected verdicts, fixed (so a change on either side shows up here too)."""
    verdicts = {name: _verdict(hg_utils.TestCase(), x, y, kw) for name, x, y, kw in _cases(hookgrad)}
    assert verdicts["same floats"] == "equal"
    assert verdicts["float32 beyond default tolerance"] == "AssertionError"
    assert verdicts["dtype differs"] == "AssertionError"
    assert verdicts["dtype differs, exact_dtype off"] == "equal"
    assert verdicts["many-element tensor vs number"] == "ValueError"
    assert verdicts["only atol given"] == "ValueError"
    assert verdicts["nan with equal_nan off"] == "AssertionError"
    assert verdicts["int vs float number"] == "equal"


def test_assert_equal_message_names_the_mismatch_and_appends_msg():
    case = hg_utils.TestCase()
    with pytest.raises(AssertionError) as info:
        case.assertEqual(hookgrad.tensor([1.0, 2.0, 3.0]), hookgrad.tensor([1.0, 2.5, 3.0]), "while checking x")
    text = str(info.value)
    assert "Tensor-likes are not close!" in text
    assert "Mismatched elements: 1 / 3" in text
    assert text.endswith("\nwhile checking x")
    with pytest.raises(AssertionError) as info:
        case.assertEqual([1, 2], [1, 3])
    assert "The failure occurred for item [1]" in str(info.value)


def test_precision_floor_loosens_the_default_tolerance():
    case = hg_utils.TestCase()
    case.precision = 0.5
    case.assertEqual(hookgrad.tensor([1.0]), hookgrad.tensor([1.3]))
    case.precision = 0
    with pytest.raises(AssertionError):
        case.assertEqual(hookgrad.tensor([1.0]), hookgrad.tensor([1.3]))


def test_assert_not_equal_and_ignore_type():
    case = hg_utils.TestCase()
    case.assertNotEqual(hookgrad.tensor([1.0]), hookgrad.tensor([2.0]))
    with pytest.raises(AssertionError):
        case.assertNotEqual(hookgrad.tensor([1.0]), hookgrad.tensor([1.0]))
    case.assertEqualIgnoreType(hookgrad.tensor([1]), hookgrad.tensor([1.0]))


def test_assert_expected_inline_dedents():
    case = hg_utils.TestCase()
    case.assertExpectedInline("a\n  b\n", """\
a
  b
""")
    with pytest.raises(AssertionError):
        case.assertExpectedInline("a", "b")


def test_set_up_seeds_the_generator():
    case = hg_utils.TestCase()
    case.setUp()
    first = hookgrad.rand(3)
    case.setUp()
    assert hookgrad.equal(first, hookgrad.rand(3))


# --------------------------------------------------------------------------- decorators


def _run_case(cls, name):
    result = unittest.TestResult()
    cls(name).run(result)
    return (len(result.failures) + len(result.errors), len(result.skipped))


def test_decorators_skip_or_run_as_on_a_cpu_build_without_dynamo():
    ran = []

    class Suite(hg_utils.TestCase):
        @hg_utils.skipIfTorchDynamo("no dynamo here")
        def test_dynamo_called(self):
            ran.append("called")

        @hg_utils.skipIfTorchDynamo
        def test_dynamo_bare(self):
            ran.append("bare")

        @hg_utils.xfailIfTorchDynamo
        def test_xfail_dynamo(self):
            ran.append("xfail")

        @hg_utils.skipIfNoLapack
        def test_lapack(self):
            ran.append("lapack")

        @hg_utils.slowTest
        def test_slow(self):
            ran.append("slow")

        @hg_device.onlyCUDA
        def test_cuda(self):
            ran.append("cuda")

        @hg_utils.skipIfXpu(msg="not on xpu")
        def test_xpu_msg(self):
            ran.append("xpu")

        @hg_utils.skipIfRocm
        def test_rocm_bare(self):
            ran.append("rocm")

    outcomes = {name: _run_case(Suite, name) for name in
                ("test_dynamo_called", "test_dynamo_bare", "test_xfail_dynamo", "test_lapack", "test_slow", "test_cuda",
                 "test_xpu_msg", "test_rocm_bare")}
    assert ran == ["called", "bare", "xfail", "lapack", "xpu", "rocm"]
    assert outcomes["test_slow"] == (0, 1) and outcomes["test_cuda"] == (0, 1)
    assert outcomes["test_dynamo_called"] == (0, 0)
    assert hg_utils.TEST_WITH_TORCHDYNAMO is False and hg_utils.TEST_CUDA is False


def test_parametrized_names_match_torch(torch_reference):
    ours = _build_parametrized(hg_utils, hookgrad)
    names = sorted(n for n in vars(ours) if n.startswith("test"))
    assert names == torch_reference["names"]
    assert "test_p_seven_flag_True" in names and "test_q_sum3" in names
    assert _run_case(ours, "test_q_sum7") == (0, 0)


def test_device_type_instantiation_names_and_arguments():
    seen = []

    class TestThing(hg_utils.TestCase):
        @hg_device.dtypes(hookgrad.float32, hookgrad.float64)
        def test_typed(self, device, dtype):
            seen.append((device, dtype))

        def test_plain(self, device):
            seen.append((device,))

        @hg_device.deviceCountAtLeast(1)
        def test_devices(self, devices):
            seen.append(tuple(devices))

    scope = {"TestThing": TestThing}
    hg_device.instantiate_device_type_tests(TestThing, scope)
    assert "TestThing" not in scope
    cls = scope["TestThingCPU"]
    names = sorted(n for n in vars(cls) if n.startswith("test"))
    assert names == ["test_devices_cpu", "test_plain_cpu", "test_typed_cpu_float32", "test_typed_cpu_float64"]
    for name in names:
        assert _run_case(cls, name) == (0, 0)
    assert sorted(seen, key=str) == sorted([("cpu", hookgrad.float32), ("cpu", hookgrad.float64), ("cpu",),
                                            ("cpu",)], key=str)


def test_create_basic_net_shares_the_net():
    layer, net, seq = hg_nn._create_basic_net()
    assert [n for n, _ in seq.named_parameters()] == ["0.dummy_param", "0.l1.layer_dummy_param"]
    assert [n for n, _ in net.named_buffers()] == ["dummy_buf", "l1.layer_dummy_buf"]
    assert seq[0] is seq[1] is net and isinstance(hg_nn.NNTestCase(), hg_utils.TestCase)


def test_run_tests_takes_out_torch_runner_options(tmp_path):
    script = tmp_path / "suite.py"
    script.write_text(textwrap.dedent("""
        import torch
        from torch.testing._internal.common_utils import TestCase, run_tests
        import torch.testing._internal.common_utils as cu

        class T(TestCase):
            def test_seed(self):
                self.assertEqual(cu.SEED, 7)

            def test_other(self):
                self.assertEqual(torch.ones(2), [1.0, 1.0])

        if __name__ == "__main__":
            run_tests()
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-m", "hookgrad", "run", str(script), "--seed", "7", "-v", "-k", "seed"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "test_seed" in done.stderr and "test_other" not in done.stderr and "Ran 1 test" in done.stderr


# --------------------------------------------------------------------------- torch._C pieces


@differential
def test_post_hook_registered_while_its_node_runs_sees_no_grad_outputs(T):
    """A node post hook registered from inside the node's own backward (here: from an unpack
    hook) gets an empty grad_outputs; its returned grad_inputs still count."""
    seen = []
    a = T.tensor([0.5, 1.5], requires_grad=True)

    def unpack(saved):
        node = T._C._current_autograd_node()

        def post(grad_inputs, grad_outputs):
            seen.append(("post", [g is None for g in grad_outputs], grad_inputs[0]))
            return (grad_inputs[0] * 3,)

        if node is not None:
            seen.append(("node", type(node).__name__))
            node.register_hook(post)
        return saved

    with T.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
        y = a.exp()
    y.sum().backward()
    return seen, a.grad, T._C._current_autograd_node()


@differential
def test_post_hook_registered_before_the_pass_sees_the_grad_outputs(T):
    seen = []
    a = T.tensor([0.5, 1.5], requires_grad=True)
    y = a.exp()
    y.grad_fn.register_hook(lambda gi, go: seen.append([g for g in go]))
    (y * 2).sum().backward()
    return seen


@differential
def test_will_engine_execute_node_answers_inside_a_pass(T):
    answers = []
    a = T.rand(3, requires_grad=True)
    b = T.rand(3, requires_grad=True)
    c = a * b
    d = c.sin()
    out = (c * 2).sum()

    def probe(_grad):
        answers.append([T._C._will_engine_execute_node(n) for n in (c.grad_fn, d.grad_fn, out.grad_fn)])

    c.register_hook(probe)
    T.autograd.backward(out, inputs=(a,), retain_graph=True)
    out.backward(retain_graph=True)
    errors = [catch(T._C._will_engine_execute_node, c.grad_fn), catch(T._C._will_engine_execute_node, c)]
    return answers, errors


@differential
def test_weak_tensor_ref_and_retain_grad_do_not_keep_tensors_alive(T):
    x = T.ones(2, 2, requires_grad=True)

    def make():
        y = x * 2
        y.retain_grad()
        return y / 2, T._C._WeakTensorRef(y)

    z, ref = make()
    alive = T.ones(1)
    kept = T._C._WeakTensorRef(alive)
    z.sum().backward()
    return ref.expired(), kept.expired(), x.grad


@differential
def test_original_view_tracking_off_keeps_as_strided_regeneration(T):
    x = T.rand(4, requires_grad=True)
    T.autograd._force_original_view_tracking(False)
    base = x.clone()
    view = base[1:3]
    base.mul_(2)
    name = type(view.grad_fn).__name__
    with T.autograd._force_original_view_tracking(False):
        inside = T._C._is_view_replay_enabled()
    return name, inside, T._C._is_view_replay_enabled()


def test_view_replay_on_is_refused_loudly():
    """torch can replay view chains; hookgrad cannot, and says so instead of ignoring the request."""
    with pytest.raises(NotImplementedError, match="view replay"):
        hookgrad.autograd._force_original_view_tracking(True)
    assert hookgrad._C._is_view_replay_enabled() is False
    assert isinstance(catch(hookgrad._C._set_view_replay_enabled, True), Raised)


# --------------------------------------------------------------------------- raw saved tensors


@differential
def test_raw_saved_tensor_data_and_unpack_hook(T):
    """``.data`` of a raw saved tensor: the packed object as-is under hooks, the original input
    itself, or a detached stand-in for the node's own output; ``.unpack_hook`` likewise."""
    def pack(t):
        return ("packed", t)

    def unpack(p):
        return p[1]

    a = T.tensor(2.0, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        b = a ** 2
    c = b.exp()
    d = c ** 2
    pow_sv, exp_sv, sq_sv = b.grad_fn._raw_saved_self, c.grad_fn._raw_saved_result, d.grad_fn._raw_saved_self
    return [pow_sv.data[0] == "packed", pow_sv.data[1] is a, pow_sv.unpack_hook is unpack,
            exp_sv.data is c, exp_sv.data.requires_grad, exp_sv.data, exp_sv.unpack_hook,
            sq_sv.data is c, sq_sv.unpack_hook]


@differential
def test_register_hooks_packs_a_detached_alias_with_grad_off(T):
    seen = []

    def pack(t):
        seen.append((T.is_grad_enabled(), t.requires_grad, t.is_leaf))
        return t

    a = T.tensor([0.1, 0.2, 0.3], requires_grad=True)
    b = a * 1
    for y, raw in ((a.sin(), "_raw_saved_self"), (b.sin(), "_raw_saved_self"), (b.exp(), "_raw_saved_result")):
        getattr(y.grad_fn, raw).register_hooks(pack, lambda t: t)
        y.sum().backward(retain_graph=True)
    return seen, a.grad


@differential
def test_register_hooks_pack_hook_may_not_modify_its_input(T):
    def inplace_double(t):
        t *= 2
        return t

    a = T.tensor([0.1, 0.2, 0.3], requires_grad=True)
    y = a * a
    first = catch(y.grad_fn._raw_saved_self.register_hooks, inplace_double, lambda t: t)
    # the hook did change the data (and its version): hooks may still be set, the backward refuses
    second = catch(y.grad_fn._raw_saved_self.register_hooks, lambda t: t * 1, lambda t: t)
    return first, second, catch(y.sum().backward), a.detach()


@differential
def test_saved_input_detached_in_place_is_refused(T):
    a = T.tensor(1.0, requires_grad=True).clone()
    b = a.sin()
    a.detach_()
    refused = catch(b.backward)
    a = T.tensor(1.0, requires_grad=True).clone()
    b = a.exp()  # saves its output, not a
    a.detach_()
    return refused, catch(b.backward)


@differential
def test_leaf_saved_under_hooks_by_a_function_stays_alive(T):
    import gc
    import weakref

    log = []

    class Func(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            leaf = x.exp().detach().requires_grad_(True)
            ctx.save_for_backward(leaf)
            ctx.leaf_ref = weakref.ref(leaf)
            return x.exp()

        @staticmethod
        def backward(ctx, grad):
            (leaf,) = ctx.saved_tensors
            log.append((ctx.leaf_ref() is None, leaf.requires_grad, leaf.is_leaf))
            return grad * leaf

    a = T.tensor(1.0, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
        out = Func.apply(a)
    gc.collect()
    out.backward()
    return log, a.grad


@differential
def test_saved_tensors_hooks_enabled_flag(T):
    flags = [T._C._autograd._saved_tensors_hooks_is_enabled()]
    with T.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        flags.append(T._C._autograd._saved_tensors_hooks_is_enabled())
        with T.autograd.graph.disable_saved_tensors_hooks("inner"):
            flags.append(T._C._autograd._saved_tensors_hooks_is_enabled())
        flags.append(T._C._autograd._saved_tensors_hooks_is_enabled())
    flags.append(T._C._autograd._saved_tensors_hooks_is_enabled())
    return flags


# --------------------------------------------------------------------------- module conversion switches


def test_swap_parametrizer_names_and_sets_the_switch():
    seen = []

    class Suite(hg_utils.TestCase):
        @hg_utils.swap([True, False])
        @hg_utils.parametrize("keep", [True, False])
        def test_x(self, keep):
            seen.append((hookgrad.__future__.get_swap_module_params_on_conversion(), keep))

    hg_utils.instantiate_parametrized_tests(Suite)
    names = sorted(n for n in vars(Suite) if n.startswith("test"))
    assert names == ["test_x_swap_False_keep_False", "test_x_swap_False_keep_True",
                     "test_x_swap_True_keep_False", "test_x_swap_True_keep_True"]
    for name in names:
        assert _run_case(Suite, name) == (0, 0)
    assert sorted(seen) == [(False, False), (False, True), (True, False), (True, True)]
    assert hookgrad.__future__.get_swap_module_params_on_conversion() is False


@differential
def test_overwrite_params_on_conversion_replaces_parameter_objects(T):
    """With the overwrite switch on, converting a module puts new Parameter objects (and new
    gradients) in place of the old ones; off, the old objects take the new data."""
    results = []
    for overwrite in (False, True):
        T.__future__.set_overwrite_module_params_on_conversion(overwrite)
        try:
            layer = T.nn.Linear(2, 2)
            layer(T.ones(1, 2)).sum().backward()
            weight, grad = layer.weight, layer.weight.grad
            layer.double()
            results.append((layer.weight is weight, layer.weight.grad is grad, layer.weight.dtype,
                            layer.weight.grad.dtype, type(layer.weight).__name__, layer.weight.requires_grad,
                            T.__future__.get_overwrite_module_params_on_conversion()))
        finally:
            T.__future__.set_overwrite_module_params_on_conversion(False)
    return results


@differential
def test_load_state_dict_rejects_a_non_tensor_with_torchs_words(T):
    layer = T.nn.Linear(2, 2, bias=False)
    outcomes = []
    for value in (np.ones((2, 2)), ((1.0, 1.0), (2.0, 2.0))):
        try:
            layer.load_state_dict({"weight": value})
        except RuntimeError as exc:
            outcomes.append("expected torch.Tensor or Tensor-like object from checkpoint but received" in str(exc))
    return outcomes, layer.weight.shape


# --------------------------------------------------------------------------- graph-task entry points


@differential
def test_current_graph_task_id_counts_passes(T):
    seen = []
    t = T.tensor(1.0, requires_grad=True).clone()
    t.register_hook(lambda g: seen.append(T._C._current_graph_task_id()))
    for _ in range(3):
        t.backward(retain_graph=True)
    T.autograd.grad(t, t.grad_fn.next_functions[0][0].variable, retain_graph=True)
    return [s - seen[0] for s in seen], T._C._current_graph_task_id()


@differential
def test_current_graph_task_execution_order_names(T):
    """The order predicted from a hook on the root, for single and several roots, with and without
    ``inputs``; refused outside a pass and with multithreading on."""
    predicted = []

    def hook(_):
        predicted.append([n.name().split(" ")[-1] for n in T._C._current_graph_task_execution_order()])

    with T.autograd.set_multithreading_enabled(False):
        t = T.tensor(1.0, requires_grad=True).clone().sin().exp()
        t.register_hook(hook)
        t.backward()
        a, b = T.tensor(1.0, requires_grad=True), T.tensor(2.0, requires_grad=True)
        out = b.sin() * a.cos()
        out.register_hook(hook)
        out.backward()
        a = T.tensor(1.0, requires_grad=True)
        b = a * 2
        outs = (b.sin(), b.cos(), b.cos())
        outs[2].register_hook(hook)  # the root that runs first (a later one would see counts torch erased)
        T.autograd.grad(outs, inputs=(a,))
        c = a * T.tensor(3.0, requires_grad=True)
        out = c.sin()
        out.register_hook(hook)
        T.autograd.grad((out,), inputs=(a, c))
    outside = catch(T._C._current_graph_task_execution_order)
    t = T.tensor(1.0, requires_grad=True).clone().exp()
    t.register_hook(hook)
    with T.autograd.set_multithreading_enabled(True):
        threaded = catch(t.backward)
    return predicted, outside, threaded


@differential
def test_delayed_error_raises_only_when_reached(T):
    x = T.rand(2, requires_grad=True)
    y = T.rand(2, requires_grad=True)
    y_safe = T._C._functions.DelayedError("Boom!", 1)(y)
    results = [y_safe.grad_fn.name(), y_safe.data_ptr() == y.data_ptr(), y_safe._version]
    out = x * 2 + y_safe
    try:
        out.sum().backward(retain_graph=True)
    except RuntimeError as exc:
        results.append(str(exc))
    results.append(T.autograd.grad(out.sum(), x, retain_graph=True)[0])
    results.append(T.autograd.grad(out.sum(), y_safe)[0])
    with T.no_grad():
        results.append(T._C._functions.DelayedError("x", 1)(y).grad_fn.name())
    results.append(T._C._functions.DelayedError("x", 1)(T.rand(2)).grad_fn)
    pair = T._C._functions.DelayedError("x", 2)(y, y * 2)
    results.append([p.output_nr for p in pair])
    results.append(catch(T._C._functions.DelayedError("x", 2), y))
    return results


@differential
def test_undefined_grad_passes_undefined_gradients(T):
    seen = []

    class Probe(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            seen.append(None if grad is None else grad.clone())
            return grad, None

    for materialize in (True, False):
        x = T.ones(2, requires_grad=True)
        out = T._C._functions.UndefinedGrad()(Probe.apply(x, materialize))
        seen.append(out.grad_fn.name())
        out.sum().backward()
        seen.append(x.grad)
    return seen


# --------------------------------------------------------------------------- anomaly mode's reports


def _anomaly_reports(T, run):
    """The warnings ``run()`` gives inside detect_anomaly, each as (category, its first non-empty
    line, whether the user's forward line is quoted), and the error it raised."""
    import warnings as _warnings
    with _warnings.catch_warnings(record=True) as caught:
        _warnings.simplefilter("always")
        with T.autograd.detect_anomaly():
            error = catch(run)
    reports = []
    for w in caught:
        text = str(w.message)
        first = next(line for line in text.splitlines() if line.strip())
        reports.append((w.category.__name__, first.split(" (Triggered")[0], "FORWARD_LINE" in text))
    return reports, error


@differential
def test_anomaly_reports_any_error_of_a_node_with_its_forward_stack(T):
    results = []

    def inplace_error():
        a = T.randn(5, requires_grad=True)
        d1 = a + 1
        d2 = d1 ** 2  # FORWARD_LINE
        d1 += 1
        T.autograd.grad(d2.sum(), a)
    results.append(_anomaly_reports(T, inplace_error))

    def hook_error():
        z = (T.ones(2, requires_grad=True) * 3).sum()  # FORWARD_LINE

        def bad(g):
            raise ValueError("from a hook")
        z.register_hook(bad)
        z.backward()
    results.append(_anomaly_reports(T, hook_error))

    def callback_error():
        y = (T.ones(2, requires_grad=True) * 2).sum()

        def bad():
            raise ValueError("from a callback")
        y.register_hook(lambda g: T.autograd.Variable._execution_engine.queue_callback(bad))
        y.backward()
    results.append(_anomaly_reports(T, callback_error))
    return results


@differential
def test_anomaly_reports_the_chain_of_nodes_that_built_the_failing_one(T):
    class Outer(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sum(0, keepdim=True)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return Inner.apply(g.expand(3) * x)

    class Inner(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    def built_under_anomaly():
        x = T.rand(3, requires_grad=True)
        out = Outer.apply(x)  # FORWARD_LINE
        (gx,) = T.autograd.grad(out, (x,), create_graph=True)
        gx.sum().backward()

    x = T.rand(3, requires_grad=True)
    (gx,) = T.autograd.grad(Outer.apply(x), (x,), create_graph=True)
    return _anomaly_reports(T, built_under_anomaly), _anomaly_reports(T, gx.sum().backward)


def test_anomaly_report_goes_to_stderr_when_warnings_are_errors(capsys):
    import warnings as _warnings
    with _warnings.catch_warnings():
        with hookgrad.autograd.detect_anomaly():
            _warnings.simplefilter("error")
            a = hookgrad.randn(3, requires_grad=True)
            d1 = a + 1
            d2 = d1 ** 2
            d1 += 1
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                d2.sum().backward()
    err = capsys.readouterr().err
    assert "UserWarning: Error detected in PowBackward0. Traceback of forward call" in err
    assert "d2 = d1 ** 2" in err


@differential
def test_no_node_is_current_during_final_callbacks(T):
    seen = []
    y = (T.ones(2, requires_grad=True) * 2).sum()
    y.register_hook(lambda g: T.autograd.Variable._execution_engine.queue_callback(
        lambda: seen.append(T._C._current_autograd_node())))
    y.backward()
    return seen


@differential
def test_in_place_op_on_a_view_saving_its_output_makes_no_reference_cycle(T):
    """relu_ on a view saves its output, whose new history leads back to relu's node: held weakly,
    so the graph is freed by reference counting alone; double backward still goes through it."""
    import gc as _gc
    freed = []

    class NoteDeletion:
        def __del__(self):
            freed.append(True)

    def build():
        root = T.randn(3, 3, requires_grad=True)
        copy = root.clone()
        copy.grad_fn.register_hook(NoteDeletion())
        T.nn.functional.relu(copy.view(9), inplace=True)

    enabled = _gc.isenabled()
    _gc.disable()
    try:
        build()
        after_build = len(freed)
    finally:
        if enabled:
            _gc.enable()
    root = T.tensor([[1.0, -2.0], [3.0, -4.0]], requires_grad=True)
    view = (root * root).view(4)
    out = view.relu_()
    (g,) = T.autograd.grad(out.sum(), root, create_graph=True)
    (gg,) = T.autograd.grad(g.sum(), root)
    return after_build, g, gg


@differential
def test_function_ctx_lets_go_of_what_forward_handed_it(T):
    """After apply, ctx.to_save / dirty_tensors / non_differentiable / saved_for_forward are None, so
    an output saved for backward is freed by reference counting (also when checkpoint's early stop
    interrupts the save during recomputation)."""
    import gc as _gc
    import weakref as _weakref
    refs = []

    class Func(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            y = x * 3
            ctx.mark_non_differentiable(y)
            z = x.clone()
            ctx.save_for_backward(z, y)
            refs.append(_weakref.ref(z))
            return x, y, z

        @staticmethod
        def backward(ctx, gx, gy, gz):
            ctx.saved_tensors
            return gx + gz

    x = T.ones(2, requires_grad=True).clone()
    a, b, c = Func.apply(x)
    attrs = [getattr(a.grad_fn, k) for k in ("to_save", "dirty_tensors", "non_differentiable", "saved_for_forward")]

    def run(checkpointed):
        inp = T.ones(2, requires_grad=True)
        fn = lambda t: Func.apply(t.clone())[2]  # noqa: E731
        out = T.utils.checkpoint.checkpoint(fn, inp, use_reentrant=False) if checkpointed else fn(inp)
        out.sum().backward()
        return inp.grad

    enabled = _gc.isenabled()
    _gc.disable()
    try:
        del a, b, c
        alive = [r() is not None for r in refs]
        refs.clear()
        grads = [run(False), run(True)]
        # the plain call's output and the recomputed one (torch keeps the checkpointed forward's
        # own output in a cycle until the collector runs: not a behaviour to copy)
        alive_after_runs = [refs[0]() is not None, refs[-1]() is not None, len(refs)]
    finally:
        if enabled:
            _gc.enable()
    return attrs, alive, grads, alive_after_runs


@differential
def test_unpack_hook_result_is_handed_back_as_is_for_a_tensor_without_autograd(T):
    """Under saved-tensor hooks, a saved tensor that neither requires grad nor has history comes
    back from unpacking as the very object the unpack hook returned (so checkpointing keeps the
    identity of such inputs); one with autograd identity comes back as a new tensor."""
    seen = []

    class Keep(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            seen.extend([x is returned[0], y is returned[1], x.requires_grad, y.requires_grad])
            return g, None

    returned = []

    def unpack(t):
        returned.append(t)
        return t

    a = T.tensor(1.0, requires_grad=True)
    b = T.tensor(2.0)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
        out = Keep.apply(a, b)
    out.backward()
    x_backward = []

    class Identity(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(y)
            return x

        @staticmethod
        def backward(ctx, g):
            x_backward.extend(ctx.saved_tensors)
            return g, None

    T.utils.checkpoint.checkpoint(Identity.apply, a, b, use_reentrant=False).backward()
    return seen, x_backward[0] is b


# --------------------------------------------------------------------------- checkpoint


@differential
def test_checkpoint_recomputes_under_the_forwards_autocast_state(T):
    dtypes = []

    def fn(x, y):
        z = T.mm(x, y)
        dtypes.append(z.dtype)
        return T.mm(z, y)

    results = []
    for use_reentrant in (False, True):
        for enabled in (True, False):
            x = T.randn(3, 3, requires_grad=True)
            y = T.randn(3, 3, requires_grad=True)
            with T.autocast(device_type="cpu", dtype=T.bfloat16, enabled=enabled):
                out = T.utils.checkpoint.checkpoint(fn, x, y, use_reentrant=use_reentrant)
            out.float().sum().backward()
            results.append((out.dtype, x.grad.dtype, y.grad is not None))
    return results, dtypes


@differential
def test_checkpoint_recomputes_once_per_backward_pass(T):
    """A second unpack of the same saved tensor within one pass raises CheckpointError; outside a
    pass every unpack recomputes."""
    count = [0]
    errors = []

    class Twice(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            try:
                ctx.saved_tensors
            except RuntimeError as exc:
                errors.append((type(exc).__name__, "already unpacked once" in str(exc)))
            return g * 2

    def fn(x):
        count[0] += 1
        return Twice.apply(x * x).exp()

    x = T.tensor([0.5, 1.0], requires_grad=True)
    out = T.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)
    out.grad_fn._saved_result
    out.grad_fn._saved_result
    counts = [count[0]]
    out.sum().backward()
    counts.append(count[0])
    return counts, errors, x.grad


# --------------------------------------------------------------------------- SavedTensor objects


@differential
def test_custom_function_raw_saved_tensors(T):
    class Save(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, None)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    a = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = Save.apply(a)
    saved = y.grad_fn._raw_saved_tensors
    results = [type(s).__name__ for s in saved]
    results.append(catch(saved[1].register_hooks, lambda x: x, lambda x: x))
    results.append(catch(saved[0].register_hooks, lambda x: x))
    results.append(catch(saved[0].register_hooks, 1, 1))
    saved[0].register_hooks(lambda x: x * 2, lambda x: x)
    results.append(catch(saved[0].register_hooks, lambda x: x, lambda x: x))
    results.append(y.grad_fn.saved_tensors)
    y.sum().backward()
    results.append(catch(lambda: y.grad_fn._raw_saved_tensors))
    results.append(catch(lambda: y.grad_fn.saved_tensors))
    results.append(catch(T.autograd.SavedTensor))
    mul = a * a
    results.append(type(T.nn.functional.nll_loss(T.ones(2, 3, requires_grad=True), T.tensor([0, 1]))
                        .grad_fn._raw_saved_weight).__name__)
    results.append(mul.grad_fn._raw_saved_self is not None)
    return results


@differential
def test_make_saved_tensor_runs_the_hooks_in_force(T):
    log = []
    a = T.tensor([1.0, 2.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: log.append("pack") or t,
                                              lambda t: log.append("unpack") or t):
        saved = T._C._autograd._make_saved_tensor(a, is_output=False)
        first, second = saved.unpack(), saved.unpack()
    plain = T._C._autograd._make_saved_tensor(a, is_output=False)
    return log, first is a, second is a, plain.unpack() is a, plain.data is a, type(saved).__name__


@differential
def test_clear_saved_tensors_on_access(T):
    import weakref as _weakref
    log = []

    class Once(T.autograd.Function):
        clear_saved_tensors_on_access = True

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            ref = _weakref.ref(x)
            del x
            log.append(ref() is None)
            log.append(catch(lambda: ctx.saved_tensors))
            return g

    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    Once.apply(x.clone()).sum().backward()
    y = Once.apply(x.clone())
    log.append(y.grad_fn.saved_tensors[0].shape)
    log.append(catch(lambda: y.grad_fn.saved_tensors))
    log.append(T.autograd.Function.clear_saved_tensors_on_access)
    return log, x.grad


@differential
def test_graph_exec_group_recomputes_once_across_backward_calls(T):
    results = []
    for grouped in (True, False):
        count = [0]

        def fn(x):
            count[0] += 1
            y = x.sin().cos()
            return y, y.sin().cos()

        x = T.tensor([[0.1, 0.2], [0.3, 0.4]], requires_grad=True)
        y, z = T.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)
        import contextlib as _contextlib
        with T.utils.checkpoint.GraphExecGroup() if grouped else _contextlib.nullcontext():
            (gy,) = T.autograd.grad(z, inputs=(y,), grad_outputs=(T.ones(2, 2),))
            (gx,) = T.autograd.grad(y, inputs=(x,), grad_outputs=(gy,))
        results.append((count[0], gx))
    x = T.tensor([0.5, 1.5], requires_grad=True)
    out = T.utils.checkpoint.checkpoint(lambda t: t.sin().cos(), x, use_reentrant=False)
    with T.utils.checkpoint.GraphExecGroup() as group:
        out.sum().backward(retain_graph=True)
        overlap = catch(out.sum().backward)
        nested = catch(T.utils.checkpoint.GraphExecGroup().__enter__)
        current = T.utils.checkpoint.GraphExecGroup._get_current_group() is group
    return results, overlap, nested, current, T.utils.checkpoint.GraphExecGroup._get_current_group()



def test_optims_instantiation_matches_torch(torch_reference):
    from hookgrad.testing._internal import common_optimizers as hg_optimizers
    suite, seen = _build_optim_suite(hg_utils, hg_device, hg_optimizers, hookgrad)
    names = sorted(n for n in vars(suite) if n.startswith("test"))
    assert names == torch_reference["optim_names"]
    for name in names:
        assert _run_case(suite, name) == (0, 0)
    assert sorted(map(list, seen)) == torch_reference["optim_seen"]


def test_optim_inputs_with_implementation_flags():
    from hookgrad.testing._internal import common_optimizers as hg_optimizers
    info = {i.name: i for i in hg_optimizers.optim_db}
    sgd = hg_optimizers._get_optim_inputs_including_global_cliquey_kwargs("cpu", hookgrad.float32, info["SGD"])
    base = info["SGD"].optim_inputs_func("cpu")
    assert len(sgd) == 2 * len(base)  # each input with fused off, then on (no foreach kernels on the CPU)
    assert [i.kwargs.get("fused") for i in sgd[:2]] == [False, True] and "foreach" not in sgd[0].kwargs
    assert hg_optimizers._get_optim_inputs_including_global_cliquey_kwargs("cpu", hookgrad.float32,
                                                                           info["LBFGS"])[0] is not None
    with pytest.raises(AssertionError):
        hg_optimizers._get_optim_inputs_including_global_cliquey_kwargs("cpu", hookgrad.float32, info["SGD"],
                                                                        skip=("bogus",))
    for optim_info in hg_optimizers.optim_db:  # every listed input constructs and steps
        param = hookgrad.zeros(2, 2, requires_grad=True)
        param.grad = hookgrad.ones(2, 2)
        for optim_input in hg_optimizers._get_optim_inputs_including_global_cliquey_kwargs(
                "cpu", hookgrad.float32, optim_info):
            if optim_info.only_supports_sparse_grads:
                continue
            optimizer = optim_info.optim_cls([param], **optim_input.kwargs)
            optimizer.step((lambda: hookgrad.tensor(1.0)) if optim_info.step_requires_closure else None)


@differential
def test_deeply_nested_reentrant_backward(T):
    """Reentrant backward calls nested past the depth at which the engine continues on a fresh
    thread: gradients, hook order and an error raised at the bottom are as without nesting."""
    order = []

    class Deep(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, fail_at):
            ctx.fail_at = fail_at
            with T.enable_grad():
                ctx.x = x.detach().requires_grad_() - 1
            return ctx.x.detach()

        @staticmethod
        def backward(ctx, g):
            order.append(int(ctx.x.item()))
            if ctx.x.item() == ctx.fail_at:
                raise ValueError(f"bottom reached at {ctx.fail_at}")
            if ctx.x < 0:
                return g, None
            with T.enable_grad():
                out = Deep.apply(ctx.x, ctx.fail_at).sum()
                out.register_hook(lambda grad: order.append("hook"))
                out.backward()
            return g * 2, None

    v = T.tensor(200.0, requires_grad=True)
    Deep.apply(v, -100).sum().backward()
    finished = (len(order), order[:3], order[-3:], v.grad)
    order.clear()
    w = T.tensor(70.0, requires_grad=True)  # the error is raised on the second thread
    error = catch(lambda: Deep.apply(w, 3).sum().backward())
    return finished, error, len(order), w.grad


@differential
def test_dispatch_mode_names_arithmetic_with_a_python_number_as_tensor_overloads(T):
    """torch's bindings wrap a Python number operand into a tensor: a mode sees aten.mul.Tensor,
    not aten.mul.Scalar (and div with a rounding mode is aten.div.Tensor_mode)."""
    from hookgrad.utils import _python_dispatch as hg_dispatch
    import torch.utils._python_dispatch as torch_dispatch
    module = hg_dispatch if T is hookgrad else torch_dispatch
    seen = []

    class Names(module.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    x = T.tensor([1.0, 2.0])
    with Names():
        x.mul(2)
        T.add(x, 2, alpha=3)
        x / 2
        x.div(2, rounding_mode="floor")
        x.sub(x)
    return seen


@differential
def test_legacy_resize_and_type_functions(T):
    """torch.autograd._functions (test_autograd imports it): Resize keeps the element count and
    reshapes the gradient back; Type casts, warns that it is deprecated, and casts the gradient back."""
    import importlib
    functions = importlib.import_module(f"{T.__name__}.autograd._functions")
    x = T.arange(6.0, dtype=T.float64).requires_grad_()
    y = functions.Resize.apply(x, (2, 3))
    y.sum().backward()
    resized = (y.shape, type(y.grad_fn).__name__, x.grad.clone())
    refused = catch(functions.Resize.apply, x, (4, 2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        z = functions.Type.apply(x, T.FloatTensor)
    (z * 2).sum().backward()
    return resized, refused, refused.message, [w.category.__name__ for w in caught], z.dtype, x.grad


@differential
def test_no_dispatch_hides_ops_from_a_dispatch_mode(T):
    import importlib
    mode_utils = importlib.import_module(f"{T.__name__}.utils._mode_utils")
    dispatch = importlib.import_module(f"{T.__name__}.utils._python_dispatch")
    seen = []

    class Names(dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    x = T.ones(2)
    with Names():
        x.mul(3)
        with mode_utils.no_dispatch():
            x.add(1)
        x.sub(1)
    return seen, mode_utils.all_same_mode([1, 1]), mode_utils.all_same_mode([1, 2])


@differential
def test_calculate_shape_names_output_and_grad_shapes(T):
    out, grad, batched = T.ones(2, 3), T.ones(4), T.ones(5, 2, 3)
    return (tuple(T.autograd._calculate_shape(out, grad, False)[0]),
            tuple(T.autograd._calculate_shape(out, grad, False)[1]),
            tuple(T.autograd._calculate_shape(out, batched, True)[1]))


def test_mask_not_all_zeros_is_a_boolean_mask_with_a_true_element():
    from hookgrad.testing._internal.common_methods_invocations import mask_not_all_zeros
    for shape in [(1,), (3, 4), (2, 1, 2)]:
        for _ in range(20):
            mask = mask_not_all_zeros(shape)
            assert mask.dtype == hookgrad.bool and tuple(mask.shape) == shape and bool(mask.any())
    with pytest.raises(AssertionError):
        mask_not_all_zeros(())


@differential
def test_views_of_inference_tensors_have_no_history_outside_inference_mode(T):
    """A view of an inference tensor (even one requiring grad) is an inference tensor with no
    grad_fn and no base, outside inference_mode too; other ops on it are tracked."""
    with T.inference_mode():
        c = T.ones(2, 3, requires_grad=True)
    views = {"view": lambda t: t.view(-1), "t": lambda t: t.t(), "select": lambda t: t[0],
             "split": lambda t: t.split(1)[0], "unbind": lambda t: t.unbind()[1], "chunk": lambda t: t.chunk(2, 1)[0],
             "as_strided": lambda t: t.as_strided((2,), (1,)), "expand": lambda t: t[:1].expand(4, 3),
             "mul": lambda t: t * 2}
    return {name: (T.is_inference(out), out.requires_grad, out.is_leaf, out._is_view(), out._base is None)
            for name, f in views.items() for out in [f(c)]}


@differential
def test_resize_of_a_tensor_requiring_grad_is_allowed_in_inference_mode(T):
    outcomes = []
    for make_inside in (True, False):
        if make_inside:
            with T.inference_mode():
                x = T.ones(1, 2, 3, requires_grad=True)
        else:
            x = T.ones(1, 2, 3, requires_grad=True)
        with T.inference_mode():
            x.resize_(1, 2)
            x.resize_as_(T.ones(2, 1))
        outcomes.append((tuple(x.shape), x.requires_grad, T.is_inference(x)))
    with T.no_grad():
        outcomes.append(catch(T.ones(2, requires_grad=True).resize_, 1, 2))
    outcomes.append(catch(T.ones(2, requires_grad=True).resize_, 1, 2))
    return outcomes


@differential
def test_grad_inside_a_checkpoint_without_early_stop(T):
    """autograd.grad(create_graph=True) inside a non-reentrant checkpoint with early_stop=False:
    the rerun its backward triggers during the forward saves more than the forward had so far,
    which torch accepts (and stops comparing counts for that checkpoint)."""
    from torch.utils import checkpoint as torch_checkpoint
    ck = hookgrad.utils.checkpoint if T is hookgrad else torch_checkpoint

    def inner_grad(x):
        with T.enable_grad():
            out = x.sin().exp().sin()
            (g,) = T.autograd.grad(out, (x,), create_graph=True)
        return g

    results = []
    for early_stop in (True, False):
        x = T.tensor(0.7, requires_grad=True)
        with ck.set_checkpoint_early_stop(early_stop):
            g = ck.checkpoint(inner_grad, x, use_reentrant=False)
            (gg,) = T.autograd.grad(g, (x,), create_graph=True)
        (ggg,) = T.autograd.grad(gg, (x,))
        results.append((g, gg, ggg))
    return results


@differential
def test_custom_function_backward_may_be_named_vjp_but_not_both(T):
    class ViaVjp(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def vjp(ctx, g):
            return g * 3

    class Both(ViaVjp):
        @staticmethod
        def backward(ctx, g):
            return g

    x = T.ones(2, requires_grad=True)
    ViaVjp.apply(x).sum().backward()
    refused = catch(lambda: Both.apply(x).sum().backward())
    return x.grad, refused, refused.message


@differential
def test_materialize_non_diff_grads_switch_keeps_none_for_non_differentiable_outputs(T):
    seen = []

    def make(materialize_non_diff):
        class Func(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                out0, out1 = x.clone(), x.clone()
                ctx.mark_non_differentiable(out1)
                if not materialize_non_diff:
                    ctx._materialize_non_diff_grads = False
                return out0, out1

            @staticmethod
            def backward(ctx, g0, g1):
                seen.append((materialize_non_diff, None if g1 is None else g1.clone()))
                return g0
        return Func

    for flag in (True, False):
        a = T.tensor(1.0, requires_grad=True)
        make(flag).apply(a)[0].backward()
    return seen, T._C.is_grad_enabled()


@differential
def test_setup_context_sees_forward_defaults_as_inputs(T):
    seen = []

    class Pow(T.autograd.Function):
        @staticmethod
        def forward(x, y=3):
            return x ** y

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen.append(tuple(type(i).__name__ for i in inputs))
            x, y = inputs
            ctx.save_for_backward(x)
            ctx.y = y

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.y * x ** (ctx.y - 1), None

    x = T.tensor(2.0, requires_grad=True)
    results = []
    for call in (lambda: Pow.apply(x), lambda: Pow.apply(x, 4), lambda: Pow.apply(x, y=5)):
        out = call()
        (g,) = T.autograd.grad(out, x)
        results.append((out, g))
    return seen, results


@differential
def test_set_gives_a_leaf_a_new_gradient_accumulator(T):
    x = T.rand(2, requires_grad=True)
    old_edge = T.autograd.graph.get_gradient_edge(x)
    out = x.clone()
    with T.no_grad():
        x.set_(T.ones(2))
    new_node = T.autograd.graph.get_gradient_edge(x).node
    by_tensor = catch(T.autograd.grad, out.sum(), x, retain_graph=True)
    by_edge = T.autograd.grad(out.sum(), old_edge, retain_graph=True)
    out.sum().backward()  # the old accumulator still accumulates into x
    return new_node is old_edge.node, by_tensor, by_edge, x.grad, (x * 3).sum().backward(), x.grad


@differential
def test_writing_part_of_an_expanded_tensor_refuses_only_true_self_overlap(T):
    """torch refuses a write into a tensor whose own elements share memory (a zero stride over more
    than one element); one element or one row of an expanded tensor can be written."""
    g = T.arange(3.0).clone().expand(4, 3)
    g[0, 1] = 7
    e = T.zeros(1).expand(5)
    e[2] = 3
    row = catch(g.__setitem__, 0, 5)
    block = catch(T.ones(2, 1).expand(2, 3).__setitem__, (slice(None), slice(1, None)), 0)
    return g, e, row if isinstance(row, Raised) else g.clone(), block


@differential
def test_checkpoint_debug_reports_operator_logs_on_non_determinism(T):
    """checkpoint(debug=True) (or set_checkpoint_debug_enabled(True)) turns a recomputation mismatch
    into torch's report: the operators of both runs and the guidance text; the global switch off
    wins over debug=True; debug=True with a context_fn is a ValueError."""
    from torch.utils import checkpoint as torch_checkpoint
    ck = hookgrad.utils.checkpoint if T is hookgrad else torch_checkpoint

    def non_deterministic():
        calls = [0]

        def fn(x):
            calls[0] += 1
            return x.sin().exp() if calls[0] == 1 else x.sin() * T.tensor([1.0, 2.0])
        return fn

    a = T.randn(1, requires_grad=True)
    reports = []
    for debug, switch in ((True, None), (False, True), (True, False)):
        def run():
            out = ck.checkpoint(non_deterministic(), a, use_reentrant=False, debug=debug)
            out.backward()
        if switch is None:
            error = catch(run)
        else:
            with ck.set_checkpoint_debug_enabled(switch):
                error = catch(run)
        text = error.message
        reports.append((error, "passed `debug=True` to checkpoint" in text,
                        "Operations executed during recomputation" in text, "aten.sin.default" in text,
                        "have different metadata" in text))
    refused = catch(ck.checkpoint, non_deterministic(), a, use_reentrant=False, debug=True,
                    context_fn=lambda: (contextlib.nullcontext(), contextlib.nullcontext()))
    return reports, refused, refused.message


@differential
def test_node_is_a_virtual_base_class(T):
    Node = T.autograd.graph.Node
    a = T.rand(3, requires_grad=True)
    b = a.exp()

    class Func(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g

    c = Func.apply(a)
    acc = b.grad_fn.next_functions[0][0]
    functions = T._C._functions
    return (isinstance(b.grad_fn, Node), issubclass(type(b.grad_fn), Node), Node in type(b.grad_fn).mro(),
            isinstance(acc, Node), Node in type(acc).mro(), isinstance(c.grad_fn, Node), Node in type(c.grad_fn).mro(),
            isinstance(functions.AccumulateGrad, Node), issubclass(functions.AccumulateGrad, Node),
            issubclass(functions.DelayedError, Node), isinstance(None, Node), isinstance(Node, Node),
            issubclass(Node, Node), issubclass(T.autograd.function.BackwardCFunction, Node), issubclass(int, Node))


def test_small_helpers_test_nn_imports_behave_as_torchs(monkeypatch, torch_reference):
    from hookgrad.testing._internal import common_cuda as hg_cuda, common_mkldnn as hg_mkldnn
    from hookgrad.testing._internal import common_dtype as hg_dtype

    want = torch_reference["helpers"]
    assert hg_utils.dtype_name(hookgrad.int64) == want["dtype_name"] == "int64"

    def sample(a, b=2, *args, c, **kw):
        return a
    assert hg_utils.get_function_arglist(sample) == want["arglist"] == ["a", "b"]
    ran = []
    assert hg_utils.gcIfJetson(lambda: ran.append(1) or "dropped")() is None and ran == [1]
    assert sorted((str(k).split(".")[-1], v) for k, v in hg_utils.dtype2prec_DONTUSE.items()) == \
        [tuple(pair) for pair in want["dtype2prec"]]
    assert [str(d).split(".")[-1] for d in hg_dtype.get_all_math_dtypes("cpu")] == want["math_dtypes"]

    class Case(hg_utils.TestCase):
        def runTest(self):
            pass
    case = Case()
    case.precision = 1e-7
    with hg_cuda.tf32_on(case, 1e-3):
        assert case.precision == 1e-3
    assert case.precision == 1e-7
    calls = []
    for decorator in (hg_cuda.tf32_on_and_off(0.005), hg_mkldnn.reduced_f32_on_and_off(),
                      hg_device.skipCUDAIfNotRocm):
        decorator(lambda self, device: calls.append(device))(case, "cpu")
    assert calls == ["cpu"] * 3  # each runs the test once on the CPU
    hg_utils._assertGradAndGradgradChecks(case, lambda x: (x * x).sum(),
                                          (hookgrad.randn(3, dtype=hookgrad.float64, requires_grad=True),))

    from urllib import error, request

    def unreachable(*args, **kwargs):
        raise error.URLError("no network")
    monkeypatch.setattr(request, "urlopen", unreachable)
    with pytest.warns(RuntimeWarning, match="could not download test file"), pytest.raises(unittest.SkipTest):
        hg_utils.download_file("https://example.invalid/hookgrad-missing-file.pt")


@differential
def test_gradient_edge_as_output_of_grad_and_backward(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)

    def fn(reduce=True):
        tmp = x.sin().cos()
        if reduce:
            tmp = tmp.sum()
        return tmp.exp().clone().sin().sum(), T.autograd.graph.get_gradient_edge(tmp)

    out, edge = fn()
    (tmp_grad,) = T.autograd.grad(out, (edge,))
    (two_steps,) = T.autograd.grad(edge, (x,), grad_outputs=(tmp_grad,))
    (one_step,) = T.autograd.grad(fn()[0], (x,))
    errors = [catch(T.autograd.grad, fn(reduce=False)[1], (x,)),
              catch(T.autograd.grad, fn()[1], (x,), grad_outputs=T.tensor([1.0, 2.0, 3.0])),
              catch(T.autograd.grad, fn()[1], (x,), grad_outputs=T.rand_like(tmp_grad, dtype=T.complex64))]
    _, edge = fn()
    T.autograd.backward(edge, retain_graph=True)
    by_backward = x.grad.clone()
    x.grad = None
    T.autograd.backward((edge, fn()[0]))
    return two_steps, one_step, errors, by_backward, x.grad


def test_profiler_itt_is_reachable_and_not_built():
    """torch.profiler is an attribute of torch (test files read torch.profiler.itt.is_available() at
    import). hookgrad has no ITT (torch's x86 builds have): is_available() is False and the range
    functions raise the RuntimeError torch raises on a build without it."""
    itt = hookgrad.profiler.itt
    assert itt.is_available() is False
    for call in (lambda: itt.range_push("x"), lambda: itt.mark("x"), itt.range_pop):
        with pytest.raises(RuntimeError, match="ITT functions not installed"):
            call()
    assert "profiler" in dir(hookgrad)


@differential
def test_autograd_debug_logging_names_each_node_as_it_runs(T):
    import logging
    import re

    records = []

    class Collect(logging.Handler):
        def emit(self, record):
            records.append(re.sub(r" object at 0x[0-9a-f]+", "", record.getMessage()))

    logger = logging.getLogger("torch.autograd")
    handler, level, propagate = Collect(), logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        a = T.rand(10, requires_grad=True)
        b = a.mul(2).div(3).sum()
        T.autograd.backward((b, b.clone()))
        x = T.ones(2, 3, dtype=T.float64, requires_grad=True)
        T.autograd.grad(x.exp().sum(), x)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
    quiet = T.rand(2, requires_grad=True)
    (quiet * 2).sum().backward()  # nothing logged once the logger is back at its level
    return records


@differential
def test_grad_mode_decorated_generator_switches_only_while_it_runs(T):
    log = []

    class Recoverable(Exception):
        pass

    @T.no_grad()
    def counter(n):
        for i in range(n):
            try:
                log.append(("inside", T.is_grad_enabled()))
                received = yield i
                log.append(("received", received, T.is_grad_enabled()))
            except Recoverable:
                log.append(("thrown in", T.is_grad_enabled()))
            except GeneratorExit:
                log.append(("closing", T.is_grad_enabled()))
                raise
        return "done"

    with T.enable_grad():
        gen = counter(4)
        log.append(("first", next(gen), T.is_grad_enabled()))
        log.append(("sent", gen.send("x"), T.is_grad_enabled()))
        log.append(("after throw", gen.throw(Recoverable()), T.is_grad_enabled()))
        gen.close()
        log.append(("closed", T.is_grad_enabled()))
        finished = counter(1)
        next(finished)
        log.append(("return value", catch(lambda: finished.send(None))))

    @T.enable_grad()
    def grows():
        yield T.is_grad_enabled()

    with T.no_grad():
        log.append(("enable_grad generator", [(v, T.is_grad_enabled()) for v in grows()]))
    return log


@differential
def test_grad_mode_decorating_a_class_warns_and_builds_it_inside_the_mode(T):
    import warnings
    seen = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        @T.no_grad()
        class Built:
            def __init__(self):
                seen.append(("init", T.is_grad_enabled()))

            def method(self):
                seen.append(("method", T.is_grad_enabled()))

    built = Built()
    built.method()
    return seen, [(w.category.__name__, "Decorating classes is deprecated" in str(w.message)) for w in caught]


def test_device_type_test_without_a_device_parameter_gets_none():
    received = []

    class Generic(hg_utils.TestCase):
        def test_plain(self):
            received.append("plain")

        @hg_device.dtypes(hookgrad.float64)
        def test_typed(self, device, dtype):
            received.append((device, dtype))

    scope = {"Generic": Generic}
    hg_device.instantiate_device_type_tests(Generic, scope)
    suite = scope["GenericCPU"]
    assert _run_case(suite, "test_plain_cpu") == (0, 0)
    assert _run_case(suite, "test_typed_cpu_float64") == (0, 0)
    assert received == ["plain", ("cpu", hookgrad.float64)]


@differential
def test_grad_with_batched_grad_outputs(T):
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = T.tensor([0.5, -1.0], requires_grad=True)
    out = x * y
    batched = T.arange(3.0).reshape(3, 1, 1).expand(3, 2, 2) + T.tensor([[0.0, 1.0], [2.0, 3.0]])
    both = T.autograd.grad(out, (x, y), (batched,), is_grads_batched=True, retain_graph=True)
    scalar = T.autograd.grad(out.sum(), (x,), (T.tensor([1.0, -2.0, 3.0]),), is_grads_batched=True)
    wrong = catch(lambda: T.autograd.grad(out, (x,), (T.ones(2, 2),), is_grads_batched=True))
    wrong_text = wrong.message.split(". If you")[0] if isinstance(wrong, Raised) else wrong
    return both, scalar, wrong, wrong_text


@differential
def test_implicit_gradient_needs_a_real_floating_scalar(T):
    a = T.zeros(1, requires_grad=True)
    complex_out = a * 0.5j
    records = [catch(complex_out.backward), catch(lambda: T.autograd.grad(complex_out, a))]
    for dtype in (T.bfloat16, T.float16, T.float64):  # every real floating dtype gets its implicit gradient
        b = T.ones(1, dtype=dtype, requires_grad=True)
        records.append(T.autograd.grad((b * 3).sum(), b))
    records += [m.message for m in records if isinstance(m, Raised)]
    return records


@differential
def test_version_counter_resize_increment_and_unsafe_setting(T):
    record = []
    x = T.rand(1)
    for shape in [(1, 2), (1, 2), (2, 1), (2,)]:
        x.resize_(shape)
        record.append(x._version)
    x.resize_as_(T.rand(2))
    record.append(x._version)
    with T.inference_mode():
        frozen = T.rand(3)
    record.append(catch(T.autograd.graph.increment_version, frozen))
    y = T.ones(2, requires_grad=True).clone()
    view = y[:1]
    y.add_(1)
    y.add_(2)
    with T.autograd._unsafe_preserve_version_counter(y):
        y.mul_(2)
        view.mul_(3)
    record.append((y._version, view._version))
    T._C._autograd._unsafe_set_version_counter((y,), (0,))
    record.append((y._version, view._version))
    record.append(catch(T._C._autograd._unsafe_set_version_counter, (y,), (-1,)))
    record.append(catch(T.autograd._unsafe_preserve_version_counter, [y]))
    z = T.ones(2, requires_grad=True).clone()
    with T.autograd._unsafe_preserve_version_counter((y, z)):
        y.mul_(2)
        z.mul_(3)
    record.append((y._version, z._version))
    # a saved tensor changed inside the block passes the saved-version check afterwards
    w = T.ones(2, requires_grad=True)
    s = w * 1
    out = (s * s).sum()
    with T.autograd._unsafe_preserve_version_counter(s):
        s.mul_(1)
    out.backward()
    record.append(w.grad)
    return record


@differential
def test_node_call_counts_arguments_and_keep_graph_is_visible_to_backward(T):
    import warnings
    record = []
    x = T.ones(1, requires_grad=True)
    y = x ** 2
    record += [catch(y.grad_fn, x.detach(), x.detach()), catch(y.grad_fn), y.grad_fn(x.detach())]
    record += [r.message if isinstance(r, Raised) else None for r in record[:2]]
    record.append(T._C._autograd._get_current_graph_task_keep_graph())
    seen = []

    class Probe(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a.clone()

        @staticmethod
        def backward(ctx, g):
            seen.append(T._C._autograd._get_current_graph_task_keep_graph())
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                (saved,) = ctx.saved_variables
            seen.append([(w.category.__name__, str(w.message)) for w in caught])
            return g * saved

    out = Probe.apply(x).sum()
    out.backward(retain_graph=True)
    out.backward()
    record.append(seen)
    return record


@differential
def test_tensor_attribute_assignments_check_as_torch_does(T):
    import warnings
    record = []
    a = T.tensor(1.0, requires_grad=True)
    record.append(catch(setattr, a, "data", T.tensor(3)))
    record.append(catch(setattr, a, "data", None))
    a.data = T.tensor(2.0)
    record.append((a.data, a.requires_grad, a._version))
    for dtype in (T.bfloat16, T.float16, T.complex64):  # every floating or complex dtype is accepted
        a.data = T.ones(2, dtype=dtype)
        record.append((a.dtype, a.requires_grad))
    x = T.randn(2)
    record.append(catch(setattr, x, "grad", x))
    record.append(catch(setattr, x, "grad", T.zeros(2, dtype=T.int64)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        record.append(x.volatile)
    record.append([(w.category.__name__, str(w.message)) for w in caught])
    record.append(T.autograd.torch is T)
    r = T.ones(2, requires_grad=True)
    record.append(catch(r.numpy))
    with T.no_grad():
        record.append((r.numpy().tolist(), T.tensor(1.0).numpy().tolist()))
    return [m.message if isinstance(m, Raised) else m for m in record] + record


@differential
def test_input_returned_as_is_by_a_custom_function_keeps_its_subclass(T):
    class Fn(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Plain(T.Tensor):
        pass

    class Wrapping(T.Tensor):
        def __init__(self, data):
            super().__init__()
            self._inner = data

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            args = tuple(a._inner if isinstance(a, cls) else a for a in args)
            out = func(*args, **(kwargs or {}))
            return cls(out) if isinstance(out, T.Tensor) else out

    record = []
    sub = T.ones(2).as_subclass(Plain)
    sub.extra = 5
    out = Fn.apply(sub)
    record.append((type(out).__name__, sorted(out.__dict__), out is sub))
    with T.no_grad():
        record.append(type(Fn.apply(sub)).__name__)
    param = T.nn.Parameter(T.ones(2))
    from_param = Fn.apply(param)
    record.append((type(from_param).__name__, from_param.grad_fn is not None))
    from_param.sum().backward()
    record.append(param.grad)
    record.append(type(Fn.apply(Wrapping(T.randn(2, 3)))).__name__)
    leaf = T.ones(2, requires_grad=True)
    record.append(type(Fn.apply(leaf)).__name__)
    return record


@differential
def test_once_differentiable_results_hang_from_an_error_node(T):
    def describe(fn):
        if fn is None:
            return "None"
        inner = ", ".join(describe(n) for n, _ in fn.next_functions)
        return f"{type(fn).__name__}({inner})"

    class Twice(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, scale, b):
            ctx.save_for_backward(a, b)
            return a * scale + a * b

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * 2 + g * b, None, g * a

    x = T.randn(3, requires_grad=True)
    y = T.randn(3, requires_grad=True)
    Twice.apply(x, 2, y).sum().backward(T.ones((), requires_grad=True), create_graph=True)
    again = catch(lambda: x.grad.sum().backward())
    return describe(x.grad.grad_fn), describe(y.grad.grad_fn), x.grad.grad_fn.name(), again


@differential
def test_autograd_attributes_refuse_deletion(T):
    x = T.randn(2, 2, requires_grad=True)
    x.grad = T.ones(2, 2)
    del x.grad
    record = [x.grad]
    # (torch refuses deleting _grad_fn and _backward_hooks too; hookgrad's are plain slots: guarding
    # them would slow every attribute write on a tensor)
    for name in ("data", "requires_grad"):
        outcome = catch(delattr, x, name)
        record.append((name, outcome, outcome.message if isinstance(outcome, Raised) else None))
    (x * 2).sum().backward()  # the tensor is still whole
    record.append((x.grad, x.requires_grad, x.grad_fn))
    return record
