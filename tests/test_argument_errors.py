"""Non-tensor arguments get torch's error (class, and the argument named as torch names it)."""
from __future__ import annotations

import inspect
import re

import numpy as np
import pytest
import torch

import hookgrad
from difftest import Raised, catch, differential

A = np.ones((2, 4))


def _calls(T):
    F = T.nn.functional
    t = T.ones(2, 4)
    img = np.ones((1, 1, 4, 4))
    return {
        "linear module": lambda: T.nn.Linear(4, 3)(A),
        "linear input": lambda: F.linear(A, T.ones(3, 4)),
        "linear weight": lambda: F.linear(t, np.ones((3, 4))),
        "linear bias": lambda: F.linear(t, T.ones(3, 4), [0.0, 0.0, 0.0]),
        "mse target": lambda: F.mse_loss(t, A),
        "mse input": lambda: F.mse_loss(A, t),
        "l1": lambda: F.l1_loss(t, A),
        "smooth_l1": lambda: F.smooth_l1_loss(t, A),
        "bce": lambda: F.binary_cross_entropy(T.rand(2), A[0, :2]),
        "cross_entropy": lambda: F.cross_entropy(t, [0, 1]),
        "cross_entropy none": lambda: F.cross_entropy(t, None),
        "nll": lambda: F.nll_loss(t, [0, 1]),
        "kl": lambda: F.kl_div(t, A, reduction="batchmean"),
        "relu": lambda: F.relu(A),
        "relu list": lambda: F.relu([1.0]),
        "relu int": lambda: F.relu(3),
        "gelu": lambda: F.gelu(A),
        "leaky": lambda: F.leaky_relu(A),
        "F.sigmoid": lambda: F.sigmoid(A),
        "F.tanh": lambda: F.tanh(A),
        "F.softmax": lambda: F.softmax(A, dim=1),
        "F.log_softmax": lambda: F.log_softmax(A, 1),
        "dropout": lambda: F.dropout(A),
        "layer_norm": lambda: F.layer_norm(A, (4,)),
        "batch_norm": lambda: F.batch_norm(A, None, None, training=True),
        # F.group_norm reads input.dim() first; torch.group_norm is the built-in
        "group_norm": lambda: F.group_norm(1.5, 1),
        "group_norm module": lambda: T.nn.GroupNorm(1, 4)(A),
        "torch.group_norm": lambda: T.group_norm(A, 1),
        "group_norm weight": lambda: F.group_norm(t, 1, weight=1.5),
        "embedding": lambda: F.embedding([0, 1], T.ones(3, 2)),
        "conv2d": lambda: F.conv2d(img, T.ones(1, 1, 2, 2)),
        "conv module": lambda: T.nn.Conv2d(1, 1, 2)(img),
        "max_pool2d": lambda: F.max_pool2d(img, 2),
        "pad": lambda: F.pad(A, (1, 1)),
        "cat element": lambda: T.cat([t, A]),
        "cat array": lambda: T.cat(A),
        "stack element": lambda: T.stack([t, A]),
        "torch.sigmoid": lambda: T.sigmoid(A),
        "torch.tanh": lambda: T.tanh(A),
        "add input": lambda: T.add(A, t),
        "add other": lambda: T.add(t, A),
        "add number": lambda: T.add(t, 2),
        "mul list": lambda: T.mul(t, [1.0]),
        "matmul": lambda: T.matmul(t, A.T),
        "exp": lambda: T.exp(A),
        "sum": lambda: T.sum(A),
        "sum None": lambda: T.sum(None),
        "mean": lambda: T.mean(A),
        "flatten": lambda: T.flatten(A),
        "reshape": lambda: T.reshape(A, (8,)),
        "where": lambda: T.where(t > 0, t, A),
        "where scalars": lambda: T.where(t > 0, 1.0, 0.0),
        "clamp": lambda: T.clamp(A, 0, 1),
        "zeros_like": lambda: T.zeros_like(A),
        "pow number base": lambda: T.pow(2, t),
        "gather index": lambda: T.gather(t, 1, [[0], [1]]),
        "masked_fill": lambda: T.masked_fill(t, A > 0, 1.0),
        "is_floating_point": lambda: T.is_floating_point(A),
        "method add": lambda: t.add(A),
        "method add number": lambda: t.add(2.5),
        "method mul list": lambda: t.mul([1.0, 2.0, 3.0, 4.0]),
        "method matmul": lambda: t.matmul(A.T),
        "method eq": lambda: t.eq(A),
        "method eq number": lambda: t.eq(1),
        "method masked_fill": lambda: t.masked_fill(A > 0, 1.0),
        "method expand_as": lambda: t.expand_as(A),
        "method copy_": lambda: t.clone().copy_(A),
        "method pow": lambda: t.pow(A),
        "method view_as": lambda: t.view_as(A),
        "method type_as": lambda: t.type_as(A),
        "method gather": lambda: t.gather(1, [[0], [1]]),
        "method movedim": lambda: t.movedim(0, 1),
        "method add_": lambda: t.clone().add_(A),
        "method add_ tensor": lambda: t.clone().add_(t, alpha=2),
        "method mul_ list": lambda: t.clone().mul_([1.0, 2.0, 3.0, 4.0]),
        "method div_ number": lambda: t.clone().div_(2),
        "method masked_fill_": lambda: t.clone().masked_fill_(A > 0, 1.0),
    }


CASES = list(_calls(torch))


@pytest.mark.parametrize("case", CASES)
@differential
def test_non_tensor_argument_raises_torch_class(T, case):
    result = catch(_calls(T)[case])
    return result if isinstance(result, Raised) else "ok"


TORCH_WORDING = {
    "linear module": "linear(): argument 'input' (position 1) must be Tensor, not numpy.ndarray",
    "linear weight": "linear(): argument 'weight' (position 2) must be Tensor, not numpy.ndarray",
    "cross_entropy": "cross_entropy_loss(): argument 'target' (position 2) must be Tensor, not list",
    "nll": "nll_loss_nd(): argument 'target' (position 2) must be Tensor, not list",
    "relu": "relu(): argument 'input' (position 1) must be Tensor, not numpy.ndarray",
    "relu int": "relu(): argument 'input' (position 1) must be Tensor, not int",
    "cat element": "expected Tensor as element 1 in argument 0, but got numpy.ndarray",
    "cat array": "cat(): argument 'tensors' (position 1) must be tuple of Tensors, not numpy.ndarray",
    "add other": "add(): argument 'other' (position 2) must be Tensor, not numpy.ndarray",
    "sum None": "sum(): argument 'input' (position 1) must be Tensor, not NoneType",
    "embedding": "embedding(): argument 'indices' (position 2) must be Tensor, not list",
    "F.softmax": "'numpy.ndarray' object has no attribute 'softmax'",
    "group_norm module": "'numpy.ndarray' object has no attribute 'dim'",
    "kl": "kl_div(): argument 'target' (position 2) must be Tensor, not numpy.ndarray",
    "gelu": "gelu(): argument 'input' (position 1) must be Tensor, not numpy.ndarray",
    "method add": "add(): argument 'other' (position 1) must be Tensor, not numpy.ndarray",
    "method expand_as": "expand_as(): argument 'other' (position 1) must be Tensor, not numpy.ndarray",
    "method view_as": "view_as(): argument 'other' (position 1) must be Tensor, not numpy.ndarray",
}


@pytest.mark.parametrize("case", sorted(TORCH_WORDING))
def test_message_has_torch_wording(case):
    for T in (torch, hookgrad):
        result = catch(_calls(T)[case])
        assert isinstance(result, Raised), (T.__name__, result)
        assert TORCH_WORDING[case] in result.message, (T.__name__, result.message)


def _single_array_probe(T, namespace, name):
    """What ``namespace.name(ndarray)`` raises: (class, the argument torch's message names, if any)."""
    result = catch(getattr(namespace, name), np.ones(3))
    if not isinstance(result, Raised):
        return None
    named = re.search(r"argument '(\w+)' \(position (\d)\) must be Tensor, not numpy\.ndarray", result.message)
    return result.cls, named.groups() if named else None


def _guarded_names(module):
    return [n for n in sorted(getattr(module, "__all__", None) or dir(module))
            if not n.startswith("_") and getattr(getattr(module, n, None), "__hookgrad_checked__", False)]


@pytest.mark.parametrize("space", ["torch", "torch.nn.functional"])
def test_every_checked_function_rejects_an_array_first_argument_as_torch_does(space):
    """Sweep: each checked function called with one NumPy array; where torch names a tensor argument
    in its TypeError, hookgrad must name the same one."""
    ours = hookgrad if space == "torch" else hookgrad.nn.functional
    theirs = torch if space == "torch" else torch.nn.functional
    names = _guarded_names(ours)
    assert len(names) > (100 if space == "torch" else 30)
    mismatches = []
    for name in names:
        if not hasattr(theirs, name) or name == "repeat_interleave":  # torch reads a lone argument as `repeats`
            continue
        want = _single_array_probe(torch, theirs, name)
        if want is None or want[1] is None:
            continue
        got = _single_array_probe(hookgrad, ours, name)
        if got != want:
            mismatches.append((name, got, want))
    assert not mismatches, mismatches


@differential
def test_forward_pre_hook_returning_a_number(T):
    m = T.nn.Linear(4, 3)
    handle = m.register_forward_pre_hook(lambda mod, args: 5)
    raised = catch(m, T.ones(1, 4))
    handle.remove()
    return raised, m(T.ones(1, 4)).shape  # the model stays usable


@differential
def test_bad_argument_leaves_graph_usable(T):
    w = T.ones(3, 4, requires_grad=True)
    x = T.ones(2, 4)
    raised = catch(T.nn.functional.linear, A, w)
    T.nn.functional.linear(x, w).sum().backward()
    return raised, w.grad


def test_checked_functions_keep_their_signature():
    assert inspect.signature(hookgrad.nn.functional.linear) == inspect.signature(
        hookgrad.nn.functional.linear.__wrapped__)
    assert hookgrad.cat.__name__ == "cat"


def test_every_checked_tensor_method_names_the_argument_torch_names():
    """Sweep over the checked Tensor methods: each called with a NumPy array as its first argument;
    where torch's TypeError names a tensor argument, hookgrad's names the same one."""
    names = [n for n in dir(hookgrad.Tensor) if not n.startswith("_")
             and getattr(hookgrad.Tensor.__dict__.get(n), "__hookgrad_checked__", False)]
    assert len(names) > 40
    mismatches = []
    for name in names:
        if not hasattr(torch.Tensor, name):
            continue
        want = _single_array_probe(torch, torch.ones(3), name)
        if want is None or want[1] is None:
            continue
        got = _single_array_probe(hookgrad, hookgrad.ones(3), name)
        if got != want:
            mismatches.append((name, got, want))
    assert not mismatches, mismatches
