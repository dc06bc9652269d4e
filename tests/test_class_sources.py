"""Every public class of hookgrad.nn, hookgrad.optim, hookgrad.distributions (and amp) has a written-out
``class X(...)`` statement that ``inspect.getsource`` finds, as torch's do (tools such as torch.fx,
torchlens and debuggers read layer sources)."""
from __future__ import annotations

import importlib
import inspect
import re

import pytest

from difftest import differential

# public modules whose classes are checked (the submodules code in the wild imports classes from)
MODULES = ("nn", "nn.modules", "nn.parameter", "nn.utils", "nn.utils.parametrize", "nn.utils.prune",
           "nn.utils.rnn", "nn.parallel", "optim", "optim.lr_scheduler", "optim.swa_utils", "distributions",
           "distributions.transforms", "distributions.constraints", "distributions.constraint_registry",
           "amp", "cpu.amp", "cuda.amp")


def _public_classes(package: str) -> dict:
    classes = {}
    for module_name in MODULES:
        module = importlib.import_module(f"{package}.{module_name}")
        names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name, None)
            if inspect.isclass(obj) and obj.__module__.startswith(package + "."):
                classes[f"{module_name}.{name}"] = obj
    return classes


def _class_statement(cls) -> str:
    """The ``class`` line of ``cls``'s source, or the exception class that ``getsource`` raised."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError) as error:
        return type(error).__name__
    return next(line.strip() for line in source.splitlines() if not line.lstrip().startswith("@"))


def _names_its_class(cls, statement: str) -> bool:
    return re.match(rf"class {re.escape(cls.__name__)}\b", statement) is not None


def test_every_public_class_has_a_class_statement():
    import hookgrad

    classes = _public_classes(hookgrad.__name__)
    assert len(classes) > 250  # the walk reached the packages (a broken import would shrink it)
    missing = {path: _class_statement(cls) for path, cls in classes.items()
               if not _names_its_class(cls, _class_statement(cls))}
    assert missing == {}


@pytest.mark.parametrize("name", ["Conv2d", "ConvTranspose3d", "LazyConv1d", "MaxPool2d", "AvgPool3d",
                                  "ReflectionPad2d", "Dropout2d", "InstanceNorm1d", "LazyBatchNorm2d",
                                  "LazyInstanceNorm3d", "AdaptiveAvgPool2d", "LPPool1d", "MaxUnpool3d"])
@differential
def test_layer_family_source_is_its_own_class(T, name):
    cls = getattr(T.nn, name)
    statement = _class_statement(cls)
    return {"names_its_class": _names_its_class(cls, statement),
            "source_file_is_its_module": inspect.getsourcefile(cls) == inspect.getsourcefile(
                importlib.import_module(cls.__module__))}


@differential
def test_classes_torch_can_show_hookgrad_can_show(T):
    """The public classes both have: each one's source is found wherever torch's is."""
    import hookgrad
    import torch

    theirs, ours = _public_classes(torch.__name__), _public_classes(hookgrad.__name__)
    shared = sorted(set(theirs) & set(ours))
    classes = _public_classes(T.__name__)
    return {path: _names_its_class(classes[path], _class_statement(classes[path])) for path in shared
            if _names_its_class(theirs[path], _class_statement(theirs[path]))}


# classes outside the walked packages that torch builds in C++ or with a factory and hookgrad writes out
WRITTEN_OUT = ("profiler.ProfilerActivity", "autograd.profiler.ProfilerActivity", "autograd.profiler.ProfilerState",
               "autograd.profiler.DeviceType", "linalg.LinAlgError", "utils.collect_env.SystemEnv")


@pytest.mark.parametrize("path", WRITTEN_OUT)
def test_enums_errors_and_records_have_class_statements(path):
    import hookgrad

    module_name, name = path.rsplit(".", 1)
    cls = getattr(importlib.import_module(f"hookgrad.{module_name}"), name)
    assert _names_its_class(cls, _class_statement(cls)), _class_statement(cls)
    assert inspect.getsourcefile(cls) == inspect.getsourcefile(importlib.import_module(cls.__module__))
    assert hookgrad.linalg.LinAlgError.__name__ == "_LinAlgError"  # torch's class is torch._C._LinAlgError


def test_written_out_enums_keep_torch_members():
    import torch

    import hookgrad
    for ours, theirs in ((hookgrad.profiler.ProfilerActivity, torch.profiler.ProfilerActivity),
                         (hookgrad.autograd.profiler.DeviceType, torch.autograd.profiler.DeviceType)):
        assert [(n, int(m)) for n, m in ours.__members__.items()] == \
               [(n, int(m)) for n, m in theirs.__members__.items()]
    fields = hookgrad.utils.collect_env.get_env_info()._fields
    assert fields[0] == "torch_version" and "pip_packages" in fields
