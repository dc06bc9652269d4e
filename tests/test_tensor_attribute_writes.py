"""Deleting and assigning Tensor attributes that torch refuses, differentially: the exception class and
torch's message, and hook registries that stay usable afterwards."""
from __future__ import annotations

import pytest
from difftest import differential

READ_ONLY = ["grad_fn", "is_leaf", "_version", "retains_grad", "output_nr", "shape", "dtype", "device", "ndim",
             "name", "layout", "is_cuda", "is_sparse", "is_meta", "itemsize", "nbytes", "T", "mT"]
UNDELETABLE = ["_backward_hooks", "_post_accumulate_grad_hooks", "data", "requires_grad"]


def _outcome(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the class and message are the point
        return type(exc).__name__, str(exc)
    return "ok"


def _tensors(T):
    leaf = T.ones(2, 2, requires_grad=True)
    return {"leaf": leaf, "non-leaf": leaf * 2, "plain": T.zeros(3, 2)}


@pytest.mark.parametrize("name", READ_ONLY)
@differential
def test_read_only_attributes_refuse_assignment_and_deletion(T, name):
    out = {}
    for kind, t in _tensors(T).items():
        value = getattr(t, name)
        out[kind] = (_outcome(lambda: setattr(t, name, value)), _outcome(lambda: delattr(t, name)),
                     name in vars(t))  # nothing stored on the instance
    return out


@pytest.mark.parametrize("name", UNDELETABLE)
@differential
def test_attributes_whose_deletion_torch_refuses(T, name):
    out = {}
    for kind, t in _tensors(T).items():
        out[kind] = _outcome(lambda: delattr(t, name))
    return out


@differential
def test_hook_registries_usable_after_a_refused_deletion(T):
    log = []
    x = T.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: log.append(("y", g)))
    x.register_hook(lambda g: log.append(("x", g)))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("acc", t.grad)))
    refused = [_outcome(lambda: delattr(t, name)) for t in (x, y)
               for name in ("_backward_hooks", "_post_accumulate_grad_hooks")]
    (y * 3).sum().backward()
    return refused, log, x.grad, len(x._backward_hooks), len(x._post_accumulate_grad_hooks)


@differential
def test_deleting_grad_storage_clears_the_gradient(T):
    x = T.ones(2, requires_grad=True)
    (x * 3).sum().backward()
    before = x.grad.clone()
    del x._grad
    cleared = x.grad, x._grad
    (x * 2).sum().backward()
    return before, cleared, x.grad
