"""The ATen operators a dispatch mode sees, recorded the same way on torch and on hookgrad, for the
op-test registry's cases (tests/op_cases.py): forward and backward apart.

A record is ``(name, args, kwargs)`` with ``name`` as ``str(func)`` prints it (``aten.add.Tensor``)
and the arguments' structure: a tensor as ``("T", shape, dtype)``, a list as a list, a tuple as a
tuple, a float rounded, other values as they are. ``python tests/aten_trace.py`` prints the match
rate over the registry and the first difference of each case that differs.
"""
from __future__ import annotations

import importlib
import sys

import numpy as np

import hookgrad
import torch

import op_cases

FRAMEWORKS = {"torch": torch, "hookgrad": hookgrad}


def _structure(value, T):
    if isinstance(value, T.Tensor):
        return ("T", tuple(value.shape), str(value.dtype).replace("torch.", "").replace("hookgrad.", ""))
    if isinstance(value, list):
        return [_structure(v, T) for v in value]
    if isinstance(value, tuple):
        return tuple(_structure(v, T) for v in value)
    if isinstance(value, dict):
        return {k: _structure(v, T) for k, v in sorted(value.items())}
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, str) and type(value) is not str:   # hookgrad's layouts and memory formats
        return str(value).replace("torch.", "")
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    return str(value).replace("torch.", "").replace("hookgrad.", "")


def recorder(T, log):
    base = importlib.import_module(T.__name__ + ".utils._python_dispatch").TorchDispatchMode

    class Recorder(base):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            log.append((str(func), _structure(tuple(args), T), _structure(kwargs, T)))
            return func(*args, **kwargs)
    return Recorder()


def _tensors(T, arrays, dtype):
    out = []
    for a in arrays:
        a = np.asarray(a)
        if a.dtype.kind == "f":
            out.append(T.tensor(a.astype(dtype), requires_grad=True))
        else:
            out.append(T.tensor(a))
    return out


def _first_tensor(value, T):
    if isinstance(value, T.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        for v in value:
            found = _first_tensor(v, T)
            if found is not None:
                return found
    return None


def trace(T, fn, arrays, dtype=np.float64):
    """``(forward records, backward records)`` of ``fn(T, *tensors)``; the backward runs from the
    output (its first tensor) with a gradient of ones made outside the mode."""
    import warnings
    inputs = _tensors(T, arrays, dtype)
    forward: list = []
    backward: list = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with recorder(T, forward):
            out = fn(T, *inputs)
        out = _first_tensor(out, T)
        if out is not None and out.requires_grad and out.dtype.is_floating_point:
            grad = T.ones_like(out)
            with recorder(T, backward):
                out.backward(grad)
    return forward, backward


def cases():
    """name -> (fn(T, *tensors), arrays) over the registry's tables."""
    rng = np.random.default_rng(0)
    found = {}
    for name, (fn, _opts) in op_cases.UNARY.items():
        found["unary:" + name] = (fn, [rng.uniform(0.5, 2.0, (2, 3, 4))])
    for name, (fn, _opts) in op_cases.BINARY.items():
        found["binary:" + name] = (fn, [rng.uniform(0.5, 2.0, (2, 3)), rng.uniform(0.5, 2.0, (2, 3))])
    for name, row in op_cases.MATRIX.items():
        fn, shapes = row[:2]
        found["matrix:" + name] = (fn, [rng.standard_normal(s) for s in shapes])
    F = {"torch": torch.nn.functional, "hookgrad": hookgrad.nn.functional}
    for name, (fn, arrays, _opts) in op_cases.FUNCTIONAL_VS_TORCH.items():
        found["functional:" + name] = ((lambda fn: lambda T, *xs: fn(T, F[T.__name__], *xs))(fn), arrays)
    return found


def compare(fn, arrays):
    """``(forward same, backward same, first difference or None)``."""
    results = {}
    for key, T in FRAMEWORKS.items():
        try:
            results[key] = trace(T, fn, arrays)
        except Exception as exc:  # noqa: BLE001 - a failure is a difference to report
            results[key] = (("raised", type(exc).__name__, str(exc)[:200]),) * 2
    same = [results["torch"][i] == results["hookgrad"][i] for i in range(2)]
    difference = None
    for i, phase in enumerate(("forward", "backward")):
        if not same[i]:
            ours, theirs = results["hookgrad"][i], results["torch"][i]
            at = next((k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
            difference = (phase, at, theirs[at:at + 2], ours[at:at + 2])
            break
    return same[0], same[1], difference


def main(selected=None, write_gaps=False):
    rows = cases()
    forward = backward = 0
    gaps: dict = {"forward": [], "backward": []}
    names = [n for n in rows if selected is None or any(s in n for s in selected)]
    for name in names:
        fw, bw, difference = compare(*rows[name])
        forward += fw
        backward += bw
        for phase, same in (("forward", fw), ("backward", bw)):
            if not same:
                gaps[phase].append(name)
        if difference is not None:
            print(f"{name}: {difference}")
    print(f"forward {forward}/{len(names)}, backward {backward}/{len(names)}")
    if write_gaps:
        import json
        import os
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "dispatch_aten_gaps.json"), "w") as file:
            json.dump(gaps, file, indent=0)
            file.write("\n")


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "--gaps"]
    main(arguments or None, write_gaps="--gaps" in sys.argv)
