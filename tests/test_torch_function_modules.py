"""Tensor subclasses and function modes through module hooks, layers and ops, on torch and on hookgrad.

A module with full backward hooks (or backward pre-hooks) passes its inputs and outputs through an
identity Function whose outputs torch makes with ``view_as``, a call that reaches ``__torch_function__``:
a subclass input stays a subclass for the module, its forward hooks and the caller. The scenarios
record what reached ``__torch_function__`` (by ``torch.overrides.resolve_name``, with ``types``), in
order, and the classes of what each hook and the caller got. Every block of the hook fuzzer's
vocabulary, and every op row of the op registry, must keep the subclass as torch's default
``__torch_function__`` does, and compute the same bits on a subclass as on a plain tensor."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from difftest import catch, differential
from torch_function_logs import func_name as _name, logging_mode as _logging_mode, logging_subclass as _logging_subclass

import hookfuzz
import op_cases


def _classes(value):
    """The class names of ``value``'s tensors, in its structure (tuples, lists, dicts, dataclasses)."""
    if isinstance(value, (tuple, list)):
        return [_classes(v) for v in value]
    if isinstance(value, dict):
        return {k: _classes(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _classes(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return type(value).__name__


def _plain(T, value):
    """``value``'s tensors as plain, detached tensors (what the harness compares by value)."""
    if isinstance(value, (tuple, list)):
        return [_plain(T, v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(T, v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(T, getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, T.Tensor):
        return value.detach().as_subclass(T.Tensor)
    return value


class _TwoInputs:
    """A module of two inputs and two outputs (built per framework)."""

    @staticmethod
    def make(T):
        class TwoInputs(T.nn.Module):
            def forward(self, a, b):
                return a * b, a + 1
        return TwoInputs()


def _hooked_call(T, scenario, log):
    """One hooked module call on a logging subclass (or under a logging mode); returns what each
    hook and the caller saw."""
    seen = []
    Logged = _logging_subclass(T, log)
    T.manual_seed(0)
    two = scenario.startswith("two_inputs")
    module = _TwoInputs.make(T) if two else T.nn.Linear(3, 3).double()
    module.register_forward_pre_hook(lambda m, args: seen.append(("forward_pre", _classes(args))))
    module.register_forward_hook(lambda m, args, out: seen.append(("forward", _classes(args), _classes(out))))
    if scenario != "backward_pre_hook_only":
        module.register_full_backward_hook(lambda m, gi, go: seen.append(("backward", _classes(gi), _classes(go))))
    module.register_full_backward_pre_hook(lambda m, go: seen.append(("backward_pre", _classes(go))))
    x = T.linspace(-1, 1, 6, dtype=T.float64).reshape(2, 3)
    if scenario != "input_without_grad":
        x.requires_grad_()
    args = (x,)
    if scenario == "parameter_under_a_mode":
        args = (T.nn.Parameter(x.detach().clone()),)
    elif scenario != "plain_under_a_mode":
        args = (x.as_subclass(Logged),)
    if two:
        other = T.full((2, 3), 0.5, dtype=T.float64)
        args += (other if scenario == "two_inputs_one_plain" else other.as_subclass(Logged),)
    log.clear()
    if scenario.endswith("under_a_mode"):
        with _logging_mode(T, log)():
            out = module(*args)
    elif scenario == "under_no_grad":
        with T.no_grad():
            out = module(*args)
    else:
        out = module(*args)
    forward_log = list(log)
    first = out[0] if two else out
    refused = catch(lambda: first.add_(1)) if first.requires_grad else None
    log.clear()
    if first.requires_grad:
        T.autograd.backward(first if two else out, T.ones_like(first))
    grad = _plain(T, x.grad)
    return forward_log, list(log), seen, _classes(out), _plain(T, out), grad, refused


HOOKED_CALLS = ["one_input", "two_inputs", "two_inputs_one_plain", "backward_pre_hook_only", "input_without_grad",
                "under_no_grad", "plain_under_a_mode", "parameter_under_a_mode"]


@pytest.mark.parametrize("call", HOOKED_CALLS)
@differential
def test_backward_hook_views_are_made_through_the_overrides(T, call):
    """torch reads ``requires_grad`` twice per input (the set-up, the identity Function's
    ``mark_non_differentiable``), makes each view with ``view_as`` and reads ``grad_fn`` to find the
    node: a subclass (and a mode) sees each of these, and the views keep the subclass."""
    log = []
    return _hooked_call(T, call, log)


def _multi_grad_hook(T, subclass):
    """A multi-grad hook (mode all) on a leaf and an intermediate, under autograd.grad toward the leaf.
    torch finds the leaf's node through a ``view_as``: a subclass's view is re-wrapped by an alias, so
    the node found is one no pass runs and the hook fires once per gradient; a plain leaf raises."""
    Logged = _logging_subclass(T, [])
    x = T.tensor([1.0, 2.0], dtype=T.float64)
    if subclass:
        x = x.as_subclass(Logged)
    x.requires_grad_()
    y = x * 2
    calls = []
    T.autograd.graph.register_multi_grad_hook([x, y], lambda grads: calls.append(_plain(T, list(grads))))
    result = catch(T.autograd.grad, y.exp().sum(), [x])
    return _classes(result), _plain(T, result) if isinstance(result, tuple) else result, calls


@pytest.mark.parametrize("subclass", [True, False])
@differential
def test_multi_grad_hook_on_a_subclass_leaf(T, subclass):
    return _multi_grad_hook(T, subclass)


@differential
def test_l1_loss_hands_no_weight_to_overrides(T):
    """torch's F.l1_loss asks only input and target whether they override and hands the override no
    ``weight``: on a subclass the loss is unweighted; a subclass weight alone dispatches nothing."""
    log = []
    Logged = _logging_subclass(T, log)
    F = T.nn.functional
    x, t, w = T.tensor([1.0, 2.0]), T.tensor([0.5, 0.0]), T.tensor([2.0, 3.0])
    results = [F.l1_loss(x.as_subclass(Logged), t, weight=w), F.l1_loss(x, t, weight=w.as_subclass(Logged)),
               F.l1_loss(x.as_subclass(Logged), t, None, None, "sum", w.as_subclass(Logged))]
    with _logging_mode(T, log)():
        results.append(F.l1_loss(x, t, weight=w))
    return [entry for entry in log if "l1_loss" in entry[-2]], _classes(results), _plain(T, results)


# ---- every block of the fuzzer's vocabulary, every op of the registry ------------------------------
BLOCKS = [kind for kind in hookfuzz.BLOCK_KINDS + hookfuzz.EXTRA_BLOCK_KINDS + hookfuzz.MORE_BLOCK_KINDS
          if kind not in ("shared", "raise_once")]  # (no block of its own; refuses its first call)


def _block_run(T, kind, subclass):
    """The fuzzer's ``kind`` block on a float64 input (a subclass, or plain), with forward and full
    backward hooks on it: the classes each hook and the caller get, the values, the input's gradient
    and what reached ``__torch_function__`` in the backward pass."""
    log = []
    Logged = _logging_subclass(T, log)
    net = hookfuzz._classes(T)([{"kind": kind, "name": "b0"}]).double()
    with T.no_grad():
        for name, p in net.named_parameters():
            p.copy_(T.tensor(hookfuzz._values(1, name, p.numel()), dtype=T.float64).reshape(p.shape))
    seen = []
    net.b0.register_forward_hook(lambda m, args, out: seen.append((_classes(args), _classes(out))))
    net.b0.register_full_backward_hook(lambda m, gi, go: seen.append((_classes(gi), _classes(go))))
    x = T.tensor(hookfuzz._values(1, "x", hookfuzz.BATCH * hookfuzz.WIDTH), dtype=T.float64)
    x = x.reshape(hookfuzz.BATCH, hookfuzz.WIDTH)
    if subclass:
        x = x.as_subclass(Logged)
    x.requires_grad_()
    T.manual_seed(0)
    out = catch(net, x)
    first = next((t for t in _tensors(T, out) if t.requires_grad), None)
    if first is not None:
        log.clear()
        first.backward(T.ones_like(first))
    return seen, _classes(out), _plain(T, out), _plain(T, x.grad), [name for name, _ in log]


def _tensors(T, value) -> list:
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(T, v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(T, v)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [t for f in dataclasses.fields(value) for t in _tensors(T, getattr(value, f.name))]
    return [value] if isinstance(value, T.Tensor) else []


def _same_bits(T, a, b) -> bool:
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same_bits(T, x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_bits(T, a[k], b[k]) for k in a)
    if isinstance(a, T.Tensor):
        return np.array_equal(a.numpy(), b.numpy(), equal_nan=True)
    return type(a) is type(b)


@pytest.mark.parametrize("kind", BLOCKS)
@differential
def test_every_fuzzer_block_keeps_the_subclass_and_its_bits(T, kind):
    on_subclass = _block_run(T, kind, True)
    on_plain = _block_run(T, kind, False)
    # what a subclass computes is what a plain tensor computes, to the bit (values and gradient)
    return on_subclass, _same_bits(T, on_subclass[2:4], on_plain[2:4])


def _op_rows():
    """(name, fn(T, F, *tensors), inputs) for each unary, binary, matrix and functional row."""
    rng = np.random.default_rng(0)
    rows = [(f"unary:{name}", lambda T, F, x, fn=row[0]: fn(T, x), [rng.uniform(0.5, 2.5, (2, 3))])
            for name, row in op_cases.UNARY.items()]
    rows += [(f"binary:{name}", lambda T, F, a, b, fn=row[0]: fn(T, a, b),
              [rng.uniform(0.5, 2.5, (2, 3)), rng.uniform(0.5, 2.5, (2, 3))]) for name, row in op_cases.BINARY.items()]
    rows += [(f"matrix:{name}", lambda T, F, *tensors, fn=row[0]: fn(T, *tensors),
              [rng.standard_normal(shape) for shape in row[1]]) for name, row in op_cases.MATRIX.items()]
    rows += [(f"functional:{name}", fn, arrays) for name, (fn, arrays, _) in op_cases.FUNCTIONAL_VS_TORCH.items()]
    return rows


def _op_run(T, fn, inputs, subclass):
    Logged = _logging_subclass(T, [])
    tensors = []
    for i, array in enumerate(inputs):
        t = T.tensor(array)
        if subclass and i == 0:
            t = t.as_subclass(Logged)
        if t.is_floating_point():
            t.requires_grad_()
        tensors.append(t)
    out = fn(T, T.nn.functional, *tensors)
    outs = out if isinstance(out, (tuple, list)) else [out]
    first = next((o for o in outs if isinstance(o, T.Tensor) and o.requires_grad), None)
    grads = []
    if first is not None:
        wanted = [t for t in tensors if t.requires_grad]
        grads = [g for g in T.autograd.grad(first.sum(), wanted, allow_unused=True) if g is not None]
    return _classes(out), _classes(grads), _plain(T, [outs, grads])


@pytest.mark.slow
def test_every_registry_op_keeps_the_subclass_and_its_bits():
    """Each op row run with a subclass first input, on torch and on hookgrad: the classes of its results
    and gradients, and whether they hold the bits the plain call computes (torch's own differ where
    its Python function hands the override fewer arguments: l1_loss's weight). Rows whose inputs do
    not fit this generic run on one of the frameworks are left out."""
    import warnings

    import hookgrad
    import torch
    differ = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, fn, inputs in _op_rows():
            found = []
            for T in (torch, hookgrad):
                on_subclass = catch(_op_run, T, fn, inputs, True)
                on_plain = catch(_op_run, T, fn, inputs, False)
                if not (isinstance(on_subclass, tuple) and isinstance(on_plain, tuple)):
                    break
                found.append((on_subclass[:2], _same_bits(T, on_subclass[2], on_plain[2])))
            else:
                if found[0] != found[1]:
                    differ.append((name, found))
    assert not differ, differ
