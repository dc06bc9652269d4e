"""What PyTorch's own test files import from ``torch.testing._internal.common_utils``, for
hookgrad: a ``TestCase`` whose ``assertEqual`` compares tensors by value, ``run_tests``, the
platform and configuration flags, the skip decorators, and test parametrization.

hookgrad is a CPU-only build without TorchDynamo, TorchInductor, ROCm, sanitizers or TorchScript:
the flags say so, and each decorator behaves as torch's does on such a build (a test meant only
for dynamo or CUDA is skipped with a reason; one that only misbehaves under dynamo runs).
"""
from __future__ import annotations

import contextlib
import functools
import gc
import itertools
import os
import random
import re
import sys
import textwrap
import unittest
import warnings

import numpy as np

from ._equality import check_equal

# --------------------------------------------------------------------------- platform and build

IS_WINDOWS = sys.platform == "win32"
IS_MACOS = sys.platform == "darwin"
IS_LINUX = sys.platform.startswith("linux")
IS_ARM64 = os.uname().machine in ("arm64", "aarch64") if hasattr(os, "uname") else False
IS_PPC = os.uname().machine == "ppc64le" if hasattr(os, "uname") else False
IS_S390X = os.uname().machine == "s390x" if hasattr(os, "uname") else False
IS_X86 = os.uname().machine in ("x86_64", "i386") if hasattr(os, "uname") else False
IS_FBCODE = False
IS_SANDCASTLE = False
IS_REMOTE_GPU = False
IS_JETSON = False
IS_CI = bool(os.getenv("CI"))
IS_MEM_LEAK_CHECK = False

# what this build has: no accelerators, no compiler stack, no sanitizers; NumPy and SciPy yes
TEST_CUDA = False
TEST_MPS = False
TEST_XPU = False
TEST_HPU = False
TEST_PRIVATEUSE1 = False
TEST_MULTIGPU = False
TEST_CUDNN = False
TEST_MKL = False
TEST_MKLDNN = False
TEST_NUMPY = True
TEST_SCIPY = True
TEST_NUMBA = False
TEST_DILL = False
TEST_LIBROSA = False
TEST_WITH_ROCM = False
TEST_WITH_TORCHDYNAMO = False
TEST_WITH_TORCHINDUCTOR = False
TEST_WITH_AOT_EAGER = False
TEST_WITH_CROSSREF = False
TEST_WITH_ASAN = False
TEST_WITH_TSAN = False
TEST_WITH_UBSAN = False
TEST_WITH_DEV_DBG_ASAN = False
TEST_WITH_SLOW_GRADCHECK = False
TEST_WITH_SLOW = os.getenv("PYTORCH_TEST_WITH_SLOW", "0") == "1"
TEST_SKIP_FAST = os.getenv("PYTORCH_TEST_SKIP_FAST", "0") == "1"
TEST_WITH_MIOPEN_SUGGEST_NHWC = False
TEST_SAVE_XML = None
NO_MULTIPROCESSING_SPAWN = False
SEED = 1234
GRADCHECK_NONDET_TOL = 0.0
DEVICE_LIST_SUPPORT_PROFILING_TEST = ("cpu",)

# --------------------------------------------------------------------------- decorators


def _skip(reason):
    return unittest.skip(reason)


def _pass_through(fn):
    return fn


def _conditional_skip(condition, reason):
    """Skip when ``condition`` holds, else leave the test as it is."""
    return unittest.skip(reason) if condition else _pass_through


def _decorator_with_optional_message(default_message, skip_it):
    """A decorator usable bare (``@deco``) or called (``@deco("why")``, ``@deco(msg, condition)``)."""
    def decorator(msg=default_message, condition=True):
        if callable(msg) and not isinstance(msg, str):
            return (_skip(default_message) if skip_it else _pass_through)(msg)
        return _skip(msg) if (skip_it and condition) else _pass_through
    return decorator


# Tests that cannot work under TorchDynamo run here: there is no dynamo.
skipIfTorchDynamo = _decorator_with_optional_message("test doesn't currently work with dynamo", skip_it=False)
skipIfTorchInductor = _decorator_with_optional_message("test doesn't currently work with torchinductor",
                                                        skip_it=False)
skipIfCrossRef = _pass_through


def _func_or_msg_decorator(condition, default_message):
    """torch's ``skipIfX(func=None, *, msg=...)`` form: usable bare or as ``@skipIfX(msg="why")``."""
    def decorator(func=None, *, msg=default_message):
        apply = _conditional_skip(condition, msg)
        return apply if func is None else apply(func)
    return decorator


skipIfRocm = _func_or_msg_decorator(TEST_WITH_ROCM, "test doesn't currently work on the ROCm stack")
skipIfXpu = _func_or_msg_decorator(TEST_XPU, "test doesn't currently work on the XPU stack")
skipIfRocm_BUGGY, skipIfXpu_BUGGY = skipIfRocm, skipIfXpu
skipIfMPS = _pass_through
skipIfHpu = _pass_through
skipIfNoLapack = _pass_through      # linear algebra comes from NumPy's LAPACK
skipIfNoNumpy = _pass_through
skipIfNoSciPy = _pass_through
skipIfSlowGradcheckEnv = _pass_through
skipIfTBB = _decorator_with_optional_message("", skip_it=False)
skipIfWindows = _decorator_with_optional_message("Test doesn't work on Windows", skip_it=IS_WINDOWS)
skipIfNoDill = _skip("no dill")
skipIfNoXNNPACK = _skip("XNNPACK must be enabled for these tests")
skipIfNoQNNPACK = _skip("QNNPACK is not available")
skipIfCompiledWithoutNumpy = _pass_through
skipCUDAMemoryLeakCheckIf = lambda condition: _pass_through  # noqa: E731 - no CUDA to check
skipCUDANonDefaultStreamIf = lambda condition: _pass_through  # noqa: E731
skipIfRocmVersionLessThan = lambda version=None: _pass_through  # noqa: E731
serialTest = lambda condition=True: _pass_through  # noqa: E731
markDynamoStrictTest = lambda cls_or_func=None, nopython=False: (  # noqa: E731
    cls_or_func if cls_or_func is not None else _pass_through)
unMarkDynamoStrictTest = markDynamoStrictTest
skipRocmIfTorchInductor = _decorator_with_optional_message("", skip_it=False)


def xfailIfTorchDynamo(fn):
    """Expected to fail only under TorchDynamo: runs (and must pass) here."""
    return fn


expectedFailureIfTorchDynamo = xfailIfTorchDynamo
xfailIfTorchInductor = xfailIfTorchDynamo


def skipIfTorchDynamoFunc(fn):
    return fn


def slowTest(fn):
    """Run only with PYTORCH_TEST_WITH_SLOW=1, as in torch."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not TEST_WITH_SLOW:
            raise unittest.SkipTest("test is slow; run with PYTORCH_TEST_WITH_SLOW to enable test")
        return fn(*args, **kwargs)
    wrapper.__dict__["slow_test"] = True
    return wrapper


def suppress_warnings(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs)
    return wrapper


def scoped_load_inline(fn):
    """Tests that compile C++ extensions: there is no C++ toolchain behind hookgrad."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        raise unittest.SkipTest("C++ extensions (load_inline) are not available in hookgrad")
    return wrapper


def wrapDeterministicFlagAPITest(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with DeterministicGuard(_torch().are_deterministic_algorithms_enabled()):
            return fn(*args, **kwargs)
    return wrapper


# --------------------------------------------------------------------------- small helpers


def _torch():
    import hookgrad
    return hookgrad


def set_rng_seed(seed):
    _torch().manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)


@contextlib.contextmanager
def freeze_rng_state():
    """Restore torch's random state on exit, whatever the body drew."""
    torch = _torch()
    state = torch.get_rng_state()
    try:
        yield
    finally:
        torch.set_rng_state(state)


@contextlib.contextmanager
def _setting_for_block(read, write, value):
    """``write(value)`` for the block, then the setting ``read()`` gave back."""
    saved = read()
    write(value)
    try:
        yield
    finally:
        write(saved)


def set_default_dtype(dtype):
    torch = _torch()
    return _setting_for_block(torch.get_default_dtype, torch.set_default_dtype, dtype)


def set_warn_always_context(new_value: bool):
    torch = _torch()
    return _setting_for_block(torch.is_warn_always_enabled, torch.set_warn_always, new_value)


@contextlib.contextmanager
def disable_gc():
    if gc.isenabled():
        try:
            gc.disable()
            yield
        finally:
            gc.enable()
    else:
        yield


class DeterministicGuard:
    """Set ``torch.use_deterministic_algorithms`` inside the block; restore it after."""

    def __init__(self, deterministic, *, warn_only=False, fill_uninitialized_memory=True):
        self.deterministic, self.warn_only = deterministic, warn_only

    def __enter__(self):
        torch = _torch()
        self._saved = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(self.deterministic, warn_only=self.warn_only)

    def __exit__(self, *exc):
        _torch().use_deterministic_algorithms(self._saved)


def gradcheck(fn, inputs, **kwargs):
    """``torch.autograd.gradcheck`` with the suite's defaults (nondeterminism tolerance)."""
    kwargs.setdefault("nondet_tol", GRADCHECK_NONDET_TOL)
    return _torch().autograd.gradcheck(fn, inputs, **kwargs)


def gradgradcheck(fn, inputs, grad_outputs=None, **kwargs):
    kwargs.setdefault("nondet_tol", GRADCHECK_NONDET_TOL)
    return _torch().autograd.gradgradcheck(fn, inputs, grad_outputs, **kwargs)


def _assertGradAndGradgradChecks(test_case, apply_fn, inputs, **kwargs):
    """Assert gradcheck and gradgradcheck pass for ``apply_fn`` at ``inputs``."""
    test_case.assertTrue(gradcheck(apply_fn, inputs, **kwargs))
    test_case.assertTrue(gradgradcheck(apply_fn, inputs, **kwargs))


def dtype_name(dtype) -> str:
    """``torch.int64`` -> ``'int64'``."""
    return str(dtype).split(".")[1]


def get_function_arglist(func) -> list:
    return __import__("inspect").getfullargspec(func).args


def gcIfJetson(fn):
    """Collects garbage around the test on a Jetson board; elsewhere the test runs as it is (its
    return value dropped, as torch's wrapper drops it)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if IS_JETSON:
            gc.collect()
        fn(*args, **kwargs)
    return wrapper


def download_file(url, binary=True):
    """Fetch ``url`` into a ``data`` directory beside this file (once); skip the test, with torch's
    RuntimeWarning, when it cannot be downloaded."""
    from urllib import error, request
    from urllib.parse import urlsplit
    data_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    path = os.path.join(data_dir, os.path.basename(urlsplit(url)[2]))
    if os.path.exists(path):
        return path
    try:
        os.makedirs(data_dir, exist_ok=True)
        with request.urlopen(url, timeout=15) as source, open(path, "wb" if binary else "w") as target:
            target.write(source.read())
        return path
    except (error.URLError, OSError) as e:
        msg = f"could not download test file '{url}'"
        warnings.warn(msg, RuntimeWarning, stacklevel=2)
        raise unittest.SkipTest(msg) from e


def make_tensor(*args, **kwargs):
    from .. import make_tensor as _make_tensor
    return _make_tensor(*args, **kwargs)


def load_tests(loader, tests, pattern):
    """unittest's load_tests protocol: keep every test (torch uses it for sharding)."""
    return tests


def noncontiguous_like(t):
    """A tensor equal to ``t`` laid out with a non-unit stride."""
    torch = _torch()
    if t.numel() <= 1:
        return t.clone()
    doubled = torch.repeat_interleave(t.detach().reshape(-1), 2)
    result = doubled[::2].reshape(t.shape)
    return result.requires_grad_(t.requires_grad)


# --------------------------------------------------------------------------- parametrization


class subtest:
    """One explicitly named (and optionally decorated) case of a ``parametrize``."""
    __slots__ = ("arg_values", "name", "decorators")

    def __init__(self, arg_values, name=None, decorators=None):
        self.arg_values, self.name, self.decorators = arg_values, name, list(decorators or [])


class parametrize:
    """``@parametrize("x,y", [(1, 2), (3, 4)])``: one generated test per case, named after the base
    test and each argument (``test_f_x_1_y_2``) unless ``name_fn`` or a ``subtest`` names it.
    Takes effect through ``instantiate_parametrized_tests`` (or ``instantiate_device_type_tests``);
    stacked decorators multiply."""

    def __init__(self, arg_str, arg_values, name_fn=None):
        self.arg_names = [name.strip() for name in arg_str.split(",") if name.strip()]
        self.arg_values, self.name_fn = arg_values, name_fn

    def __call__(self, fn):
        previous = getattr(fn, "_hookgrad_parametrizers", [])
        fn._hookgrad_parametrizers = [*previous, self]
        return fn

    def _value_text(self, index, name, value):
        from ..._dtype import dtype as dtype_cls
        if isinstance(value, dtype_cls):
            return str(value).split(".")[-1]
        if type(value).__name__ == "device":
            return str(value)
        # hookgrad's layouts and memory formats are str subclasses; torch's are not strings, so they
        # are named by their position
        if isinstance(value, (int, float, str)) and type(value).__name__ not in ("layout", "memory_format"):
            return f"{name}_{str(value).replace('.', '_')}"
        return f"{name}{index}"

    def cases(self):
        """(name suffix, {argument: value}, decorators) for each case."""
        for index, values in enumerate(self.arg_values):
            explicit, decorators = None, []
            if isinstance(values, subtest):
                explicit, decorators, values = values.name, values.decorators, values.arg_values
            values = (values,) if len(self.arg_names) == 1 else tuple(values)
            if len(values) != len(self.arg_names):
                raise RuntimeError(f"Expected # values == # arg names, but got: {len(values)} values and "
                                   f"{len(self.arg_names)} names for test")
            if explicit:
                suffix = explicit
            elif self.name_fn is not None:
                suffix = self.name_fn(*values)
            else:
                suffix = "_".join(self._value_text(index, n, v) for n, v in zip(self.arg_names, values))
            yield suffix, dict(zip(self.arg_names, values)), decorators


class SwapTensorsGuard:
    """``torch.__future__.set_swap_module_params_on_conversion(value)`` inside the block (left as it
    is for None); the previous setting comes back after."""

    def __init__(self, use_swap_tensors):
        self.use_swap_tensors = use_swap_tensors

    def __enter__(self):
        future = _torch().__future__
        self._saved = future.get_swap_module_params_on_conversion()
        if self.use_swap_tensors is not None:
            future.set_swap_module_params_on_conversion(self.use_swap_tensors)

    def __exit__(self, *exc):
        _torch().__future__.set_swap_module_params_on_conversion(self._saved)


def wrapSwapTensorsTest(swap=None):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with SwapTensorsGuard(swap):
                return fn(*args, **kwargs)
        return wrapper
    return decorate


class swap(parametrize):
    """``@swap([True, False])``: one test per setting of swapping module parameters on conversion,
    named ``..._swap_True`` / ``..._swap_False``."""

    def __init__(self, swap_values):
        super().__init__("", [])
        self.swap_values = swap_values

    def cases(self):
        for value in self.swap_values:
            yield f"swap_{value}", {}, [wrapSwapTensorsTest(value)]


def expand_parametrized(name, fn):
    """All (test name, test function) pairs the parametrizers on ``fn`` produce."""
    parametrizers = getattr(fn, "_hookgrad_parametrizers", [])
    if not parametrizers:
        return [(name, fn)]
    expanded = []
    for combination in itertools.product(*(list(p.cases()) for p in reversed(parametrizers))):
        suffix = "_".join(s for s, _, _ in combination if s)
        kwargs, decorators = {}, []
        for _, case_kwargs, case_decorators in combination:
            kwargs.update(case_kwargs)
            decorators.extend(case_decorators)

        def make(kwargs=kwargs):
            @functools.wraps(fn)
            def test(self, *args, **more):
                return fn(self, *args, **kwargs, **more)
            return test
        test = make()
        del test._hookgrad_parametrizers
        for decorator in decorators:
            test = decorator(test)
        full_name = f"{name}_{suffix}" if suffix else name
        test.__name__ = full_name
        expanded.append((full_name, test))
    return expanded


def instantiate_parametrized_tests(generic_cls):
    """Replace each parametrized test of ``generic_cls`` with its generated cases; usable as a class
    decorator."""
    for name in list(vars(generic_cls)):
        fn = vars(generic_cls)[name]
        if not callable(fn) or not getattr(fn, "_hookgrad_parametrizers", None):
            continue
        delattr(generic_cls, name)
        for full_name, test in expand_parametrized(name, fn):
            if hasattr(generic_cls, full_name):
                raise RuntimeError(f"Redefinition of test {full_name}")
            setattr(generic_cls, full_name, test)
    return generic_cls


# --------------------------------------------------------------------------- TestCase


def _settable(attribute: str) -> property:
    """A property that reads and writes ``attribute`` (how TestCase exposes its minimum tolerances)."""
    return property(lambda self: getattr(self, attribute), lambda self, value: setattr(self, attribute, value))


class TestCase(unittest.TestCase):
    """unittest's TestCase plus what torch's test suite relies on: a tensor-aware ``assertEqual``
    (see ``_equality``), minimum tolerances (``precision``, ``rel_tol``), seeded random state in
    ``setUp``, and the warning and inline-expectation assertions."""

    _precision: float = 0
    _rel_tol: float = 0
    _do_cuda_memory_leak_check = False
    _do_cuda_non_default_stream = False
    _ignore_not_implemented_error = False
    _default_dtype_check_enabled = False
    maxDiff = None

    precision = _settable("_precision")
    rel_tol = _settable("_rel_tol")

    def setUp(self):
        set_rng_seed(SEED)

    def assertEqual(self, x, y, msg=None, *, atol=None, rtol=None, equal_nan=True, exact_dtype=True,
                    exact_device=False, exact_layout=False, exact_stride=False, exact_is_coalesced=False):
        __tracebackhide__ = True
        check_equal(x, y, msg, atol=atol, rtol=rtol, equal_nan=equal_nan, exact_dtype=exact_dtype,
                    exact_device=exact_device, exact_stride=exact_stride, atol_floor=self.precision,
                    rtol_floor=self.rel_tol, long_message=self.longMessage)

    def assertNotEqual(self, x, y, msg=None, *, atol=None, rtol=None, **kwargs):
        with self.assertRaises(AssertionError, msg=msg):
            self.assertEqual(x, y, msg, atol=atol, rtol=rtol, **kwargs)

    def assertEqualIgnoreType(self, *args, **kwargs):
        return self.assertEqual(*args, exact_dtype=False, **kwargs)

    def assertEqualBroadcasting(self, x, y, *args, **kwargs):
        torch = _torch()
        if not isinstance(y, torch.Tensor):
            y = torch.ones_like(x) * (y if not isinstance(y, (list, tuple)) else torch.tensor(y))
        return self.assertEqual(x, y, *args, **kwargs)

    def assertEqualTypeString(self, x, y):
        self.assertEqual(x.device, y.device)
        self.assertEqual(x.dtype, y.dtype)
        self.assertEqual(x.is_sparse, y.is_sparse)

    def assertObjectIn(self, obj, iterable):
        if not any(obj is item for item in iterable):
            raise AssertionError("object not found in iterable")

    def assertNotWarn(self, callable, msg=""):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with set_warn_always_context(True):
                callable()
        self.assertTrue(len(caught) == 0, msg)

    @contextlib.contextmanager
    def assertWarnsOnceRegex(self, category, regex=""):
        """The block must emit a ``category`` warning whose message matches ``regex`` (warn-once
        warnings are forced to fire)."""
        pattern = re.compile(regex)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with set_warn_always_context(True):
                yield
        if not caught:
            self.fail("no warning caught")
        self.assertTrue(any(type(w.message) is category for w in caught))
        self.assertTrue(any(re.match(pattern, str(w.message)) for w in caught),
                        f"{pattern}, {[w.message for w in caught if type(w.message) is category]}")

    def assertNoUnraisable(self, callable, *args, **kwargs):
        raised = []
        saved_hook = sys.unraisablehook
        sys.unraisablehook = raised.append
        try:
            with disable_gc():
                callable(*args, **kwargs)
        finally:
            sys.unraisablehook = saved_hook
        self.assertEqual(raised, [])

    def assertExpectedInline(self, actual, expect, skip=0):
        """``actual`` must equal the inline expectation, read the way expecttest reads it: a
        leading newline dropped and the common indentation removed."""
        if expect.startswith("\n"):
            expect = expect[1:]
        self.assertMultiLineEqual(textwrap.dedent(expect), actual)

    def assertExpectedRaisesInline(self, exc_type, callable, expect, *args, **kwargs):
        try:
            callable(*args, **kwargs)
        except exc_type as error:
            self.assertExpectedInline(str(error), expect, skip=1)
            return
        self.fail(msg="Did not raise when expected to")

    def assertExpected(self, s, subname=None):
        # the expectation lives in torch's test/expect/ directory, which hookgrad does not ship
        raise unittest.SkipTest("needs an expect file from torch's test/expect directory")

    def assertLeaksNoCudaTensors(self, name=None):
        return contextlib.nullcontext()

    def enforceNonDefaultStream(self):
        return contextlib.nullcontext()

    def wrap_with_cuda_memory_check(self, method):
        return method

    def compare_with_reference(self, torch_fn, ref_fn, sample_input, **kwargs):
        numpy_args = [a.detach().numpy() if isinstance(a, _torch().Tensor) else a for a in sample_input.args]
        self.assertEqual(torch_fn(*sample_input.args), ref_fn(*numpy_args), exact_dtype=False, **kwargs)

    @staticmethod
    def runWithPytorchAPIUsageStderr(code):
        raise unittest.SkipTest("PyTorch API-usage logging does not exist in hookgrad")


# --------------------------------------------------------------------------- running

# options torch's runner reads before handing the rest to unittest; value-taking ones listed first
_RUNNER_OPTIONS_WITH_VALUE = {"--seed", "--jit-executor", "--repeat", "--save-xml", "--discover-tests",
                              "--log-suffix", "--run-parallel", "--import-slow-tests", "--import-disabled-tests",
                              "--subprocess", "--sharding", "--shard-id", "--num-shards"}
_RUNNER_FLAGS = {"--accept", "--test-bailouts", "--rerun-disabled-tests", "--pytest", "--use-pytest",
                 "--showlocals", "--ge_config", "--export-disabled-tests"}


def _split_runner_argv(argv):
    global SEED
    rest = []
    items = iter(argv)
    for arg in items:
        option, has_value, value = arg.partition("=")
        if option in _RUNNER_OPTIONS_WITH_VALUE:
            value = value if has_value else next(items, None)
            if option == "--seed" and value is not None:
                SEED = int(value)
        elif option in _RUNNER_FLAGS:
            continue
        else:
            rest.append(arg)
    return rest


def run_tests(argv=None):
    """Run the calling script's tests with unittest, after taking out torch's own runner options
    (``--seed N`` sets the seed every test starts from)."""
    argv = list(sys.argv if argv is None else argv)
    rest = _split_runner_argv(argv[1:])
    unittest.main(module="__main__", argv=[argv[0], *rest])


def __getattr__(name):
    # dtype2prec_DONTUSE: per-dtype test precisions, keyed by hookgrad's dtypes (made on first use,
    # so that importing this module does not import the package)
    if name == "dtype2prec_DONTUSE":
        torch = _torch()
        value = globals()[name] = {torch.float: 1e-5, torch.double: 1e-5, torch.half: 1e-2, torch.bfloat16: 1e-1}
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
