"""Public classes have torch's public ancestry: ``isinstance(m, nn.Softmax)`` is False for a
LogSoftmax, True for a ZeroPad2d asked whether it is a ConstantPad2d, as in torch. Private bases that
hold shared bodies are free; the public classes each inherits from must be torch's."""
from __future__ import annotations

import inspect

import pytest

from difftest import differential

NAMESPACES = ["nn", "optim", "optim.lr_scheduler", "distributions", "distributions.transforms",
              "distributions.constraints", "utils.data", "amp"]


def _public_ancestry(cls) -> list:
    return [c.__name__ for c in cls.__mro__[1:]
            if not c.__name__.startswith("_") and c.__module__.split(".")[0] in ("torch", "hookgrad")]


def _classes(T, namespace):
    import importlib
    module = importlib.import_module(f"{T.__name__}.{namespace}")
    return {name: getattr(module, name) for name in dir(module)
            if not name.startswith("_") and inspect.isclass(getattr(module, name))}


@pytest.mark.parametrize("namespace", NAMESPACES)
@differential
def test_public_classes_have_torchs_public_bases(T, namespace):
    import hookgrad
    import torch
    shared = sorted(set(_classes(torch, namespace)) & set(_classes(hookgrad, namespace)))
    classes = _classes(T, namespace)
    # Tensor's own bases (torch's C-level TensorBase) are the tensor work's, not the layers'
    return {name: _public_ancestry(classes[name]) for name in shared
            if not issubclass(classes[name], T.Tensor)}


@differential
def test_sibling_layers_are_not_instances_of_each_other(T):
    nn = T.nn
    layers = [nn.Softmax(1), nn.LogSoftmax(1), nn.Softmin(1), nn.Hardshrink(), nn.Softshrink(),
              nn.FractionalMaxPool2d(2, output_size=2), nn.FractionalMaxPool3d(2, output_size=2), nn.ZeroPad2d(1)]
    kinds = [nn.Softmax, nn.LogSoftmax, nn.Softmin, nn.Hardshrink, nn.Softshrink, nn.FractionalMaxPool2d,
             nn.FractionalMaxPool3d, nn.ConstantPad2d, nn.ZeroPad2d]
    x = T.arange(8.0).reshape(2, 4) - 3
    return ([[isinstance(layer, kind) for kind in kinds] for layer in layers],
            [repr(layer) for layer in layers], [layer(x) for layer in layers[:5]],
            nn.ZeroPad2d(1)(T.ones(1, 2, 2)), nn.ZeroPad2d(1).value)
