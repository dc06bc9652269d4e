"""Layers declared once per 1-d/2-d/3-d family (padding, pooling, convolution, dropout, instance and
batch norm, and their lazy variants) look and behave as torch's written-out classes: names, paths,
signatures, docstrings, reprs, state dicts, pickling, outputs, and what a lazy layer becomes."""
from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest

from difftest import catch, differential

# class name -> (constructor arguments, input shape) for one instance of each
FAMILIES = {
    **{f"{stem}{d}d": (args, (2, 3) + (6,) * d) for d in (1, 2, 3)
       for stem, args in (("ConstantPad", (1, 0.5)), ("ZeroPad", (1,)), ("ReflectionPad", (2,)),
                          ("ReplicationPad", (1,)), ("CircularPad", (1,)), ("MaxPool", (2,)),
                          ("AdaptiveAvgPool", (3,)), ("AdaptiveMaxPool", (2,)), ("LPPool", (2.0, 2)),
                          ("Conv", (3, 4, 3)), ("ConvTranspose", (3, 4, 3)), ("Dropout", (0.5,)),
                          ("InstanceNorm", (3,)), ("BatchNorm", (3,)), ("LazyConv", (4, 3)),
                          ("LazyConvTranspose", (4, 3)), ("LazyInstanceNorm", ()), ("LazyBatchNorm", ()))},
    "AvgPool2d": ((2,), (2, 3, 6, 6)),
    "AvgPool3d": ((2,), (2, 3, 6, 6, 6)),
}


def _public_path(cls) -> str:
    return f"{cls.__module__.split('.', 1)[1]}.{cls.__qualname__}"


@pytest.mark.parametrize("name", sorted(FAMILIES))
@differential(rtol=1e-6, atol=1e-6)
def test_family_member_matches_torch(T, name):
    args, shape = FAMILIES[name]
    cls = getattr(T.nn, name)
    T.manual_seed(0)
    layer = cls(*args).double().eval()
    x = T.tensor(np.random.default_rng(1).normal(size=shape), dtype=T.float64)
    out = catch(layer, x)
    record = {"path": _public_path(cls), "name": cls.__name__,
              "parameters": list(inspect.signature(cls).parameters),
              "documented": bool(cls.__doc__) if name.startswith("Dropout") else None,
              "repr": repr(layer), "state": sorted(layer.state_dict()), "after_call": type(layer).__name__,
              "output": out[0] if isinstance(out, tuple) else out}
    copy = pickle.loads(pickle.dumps(layer))
    record["pickled"] = (type(copy).__name__, repr(copy))
    return record


@differential
def test_families_are_distinct_classes_with_one_dimension_each(T):
    seen = {}
    for name in sorted(FAMILIES):
        cls = getattr(T.nn, name)
        seen[name] = (cls.__name__, isinstance(cls, type), name.startswith("Lazy") or cls not in
                      [getattr(T.nn, other) for other in FAMILIES if other != name])
    return seen


@differential
def test_dimension_checks_keep_their_messages(T):
    return [catch(T.nn.InstanceNorm2d(3), T.zeros(3, 4)), catch(T.nn.LazyBatchNorm3d(), T.zeros(2, 3, 4)),
            catch(T.nn.ConvTranspose2d(3, 4, 3), T.zeros(1, 3, 5, 5), output_size=(1,)),
            catch(T.nn.ConvTranspose1d, 3, 4, 3, padding_mode="reflect"),
            catch(T.nn.Conv3d, 3, 4, 3, padding="same", stride=2)]


@pytest.mark.parametrize("name", ["InstanceNorm2d", "LazyInstanceNorm1d", "LazyBatchNorm2d", "BatchNorm3d"])
@differential(rtol=1e-6, atol=1e-6)
def test_norms_without_bias(T, name):
    cls = getattr(T.nn, name)
    args = () if name.startswith("Lazy") else (3,)
    layer = cls(*args, affine=True, bias=False).double()
    shape = {"1": (2, 3, 5), "2": (2, 3, 4, 4), "3": (2, 3, 2, 3, 3)}[name[-2]]
    x = T.tensor(np.random.default_rng(2).normal(size=shape), dtype=T.float64, requires_grad=True)
    out = layer(x)
    out.square().sum().backward()
    return (type(layer).__name__, repr(layer), [(n, tuple(p.shape)) for n, p in layer.named_parameters()],
            layer.bias, out, x.grad, layer.weight.grad)
