"""``torch.testing._internal.common_device_type`` for a CPU-only build.

``instantiate_device_type_tests(TestFoo, globals())`` replaces the generic class with ``TestFooCPU``,
whose tests are named ``test_x_cpu`` (``test_x_cpu_float32`` and so on under ``@dtypes``) and
receive ``device="cpu"`` (and the dtype). Decorators for other device types skip or pass through as
they do on a machine without those devices.
"""
from __future__ import annotations

import functools
import inspect
import unittest

from .common_utils import TestCase, expand_parametrized

_DEVICE = "cpu"


class DeviceTypeTestBase(TestCase):
    device_type = "generic_device_type"
    precision_overrides: dict = {}

    @classmethod
    def get_primary_device(cls):
        return cls.device_type

    @classmethod
    def get_all_devices(cls):
        return [cls.get_primary_device()]


class CPUTestBase(DeviceTypeTestBase):
    device_type = _DEVICE


def _dtype_suffix(dtype) -> str:
    return str(dtype).split(".")[-1]


def _device_variants(name, fn):
    """(name, test) for each device/dtype variant of one generic test."""
    dtype_list = getattr(fn, "_hookgrad_dtypes", {}).get(_DEVICE, getattr(fn, "_hookgrad_dtypes", {}).get("all"))
    needs_devices = getattr(fn, "_hookgrad_device_count", None)
    # as in torch, a test gets the device only when its signature asks for one
    parameters = inspect.signature(fn).parameters
    takes_device = "device" in parameters or "devices" in parameters
    variants = []
    for dtype in (dtype_list if dtype_list is not None else [None]):
        def make(dtype=dtype):
            @functools.wraps(fn)
            def test(self, *args, **kwargs):
                device = [_DEVICE] if needs_devices is not None else _DEVICE
                precision = self.precision
                if dtype is not None and dtype in getattr(fn, "_hookgrad_precision", {}):
                    self.precision = fn._hookgrad_precision[dtype]
                leading = (device,) if takes_device else ()
                try:
                    if dtype is None:
                        return fn(self, *leading, *args, **kwargs)
                    if isinstance(dtype, (list, tuple)):
                        return fn(self, *leading, list(dtype), *args, **kwargs)
                    return fn(self, *leading, dtype, *args, **kwargs)
                finally:
                    self.precision = precision
            return test

        suffix = _DEVICE
        if dtype is not None:
            suffix += "_" + ("_".join(_dtype_suffix(d) for d in dtype) if isinstance(dtype, (list, tuple))
                             else _dtype_suffix(dtype))
        test = make()
        test.__name__ = f"{name}_{suffix}"
        variants.append((test.__name__, test))
    return variants


def instantiate_device_type_tests(generic_test_class, scope, except_for=None, only_for=None, include_lazy=False,
                                  allow_mps=False, allow_xpu=False, allow_callable=False):
    """Put ``<Generic>CPU`` into ``scope`` in place of ``generic_test_class`` (unless ``except_for``
    or ``only_for`` rule the CPU out)."""
    scope.pop(generic_test_class.__name__, None)
    as_list = (lambda v: [v] if isinstance(v, str) else list(v or []))
    if _DEVICE in as_list(except_for) or (only_for and _DEVICE not in as_list(only_for)):
        return
    class_name = generic_test_class.__name__ + _DEVICE.upper()
    members = {}
    for name, value in vars(generic_test_class).items():
        if name.startswith("test") and callable(value):
            for param_name, param_test in expand_parametrized(name, value):
                for variant_name, variant in _device_variants(param_name, param_test):
                    members[variant_name] = variant
        elif name not in ("__dict__", "__weakref__"):
            members[name] = value
    bases = (CPUTestBase, *[b for b in generic_test_class.__bases__ if b is not TestCase], TestCase)
    bases = tuple(dict.fromkeys(bases))
    device_class = type(class_name, bases, members)
    device_class.__module__ = generic_test_class.__module__
    device_class.__qualname__ = class_name
    scope[class_name] = device_class


# --------------------------------------------------------------------------- decorators

def dtypes(*args, device_type="all"):
    """The dtypes (or tuples of dtypes) a device-generic test runs for."""
    def decorator(fn):
        table = dict(getattr(fn, "_hookgrad_dtypes", {}))
        table[device_type] = list(args)
        fn._hookgrad_dtypes = table
        return fn
    return decorator


def dtypesIfCPU(*args):
    return dtypes(*args, device_type="cpu")


def _other_device_dtypes(*args, **kwargs):
    return lambda fn: fn


dtypesIfCUDA = dtypesIfMPS = dtypesIfXPU = dtypesIfHPU = dtypesIfPRIVATEUSE1 = _other_device_dtypes


def onlyCPU(fn):
    return fn


def onlyNativeDeviceTypes(fn):
    return fn


onlyNativeDeviceTypesAnd = lambda devices=None: onlyNativeDeviceTypes  # noqa: E731


def _only(device):
    def decorator(fn):
        @functools.wraps(fn)
        def wrapper(self, *args, **kwargs):
            raise unittest.SkipTest(f"Only runs on {device}")
        return wrapper
    return decorator


onlyCUDA = _only("cuda")
onlyMPS = _only("mps")
onlyXPU = _only("xpu")
onlyHPU = _only("hpu")
onlyCUDAAndPRIVATEUSE1 = _only("cuda")


def onlyOn(device_type):
    return (lambda fn: fn) if device_type == _DEVICE else _only(device_type)


def deviceCountAtLeast(num_required_devices):
    """The test receives the list of devices; one CPU is all there is."""
    def decorator(fn):
        if num_required_devices > 1:
            return unittest.skip(f"fewer than {num_required_devices} devices detected")(fn)
        fn._hookgrad_device_count = num_required_devices
        return fn
    return decorator


def skipCPUIf(condition, reason):
    return unittest.skip(reason) if condition else (lambda fn: fn)


def _never(*args, **kwargs):
    return lambda fn: fn


skipCUDAIf = skipMPSIf = skipXPUIf = skipMetaIf = skipHPUIf = _never
skipCUDAIfRocm = skipMeta = skipMPS = skipXLA = skipHPU = skipCUDAIfNoCudnn = skipCUDAIfNoMagma = (lambda fn: fn)
skipCUDAIfCudnnVersionLessThan = skipCUDAIfRocmVersionLessThan = _never
skipCUDAIfNotRocm = (lambda fn: fn)  # skips CUDA tests only: a CPU test runs
expectedFailureMPS = expectedFailureMeta = expectedFailureXLA = expectedFailureXPU = (lambda fn: fn)
expectedFailureCUDA = (lambda fn: fn)
largeTensorTest = _never


def expectedFailureCPU(fn):
    return unittest.expectedFailure(fn)


def precisionOverride(precisions):
    """Per-dtype minimum absolute tolerance for a device-generic test."""
    def decorator(fn):
        fn._hookgrad_precision = dict(precisions)
        return fn
    return decorator


def get_all_device_types():
    return [_DEVICE]
