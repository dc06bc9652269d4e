"""What a logging ``TorchFunctionMode`` sees of everyday code, on torch and on hookgrad: grad-mode
switches (``torch._C._set_grad_enabled``), hook registration, state dicts, tensor inspection; and the
tensor attributes torch refuses to change (``_grad_fn``, ``_base``) with their classes and messages.

Each scenario prepares its objects outside the mode, then runs the code under test inside it and
returns the full list of names the mode saw, in order."""
from __future__ import annotations

import contextlib
import io

import pytest
from difftest import Raised, catch, differential


def _name(T, func):
    return T.overrides.resolve_name(func) or getattr(func, "__qualname__", repr(func))


def _events(T, prepare):
    """The names a logging mode sees while the generator ``prepare(T)`` runs past its ``yield``."""
    log = []

    class LoggingMode(T.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            log.append(_name(T, func))
            return func(*args, **(kwargs or {}))

    steps = prepare(T)
    next(steps)
    with LoggingMode():
        for _ in steps:
            pass
    return log


def _mlp(T):
    T.manual_seed(0)
    return T.nn.Sequential(T.nn.Linear(4, 3), T.nn.ReLU(), T.nn.Linear(3, 2))


def no_grad_eval(T):
    model, x = _mlp(T), T.ones(2, 4)
    yield
    model.eval()
    with T.no_grad():
        model(x)


def grad_mode_decorators(T):
    x = T.ones(2, requires_grad=True)
    yield

    @T.no_grad()
    def called(a):
        return a * 2

    @T.no_grad
    def bare(a):
        return a * 2

    @T.enable_grad()
    def enabled(a):
        return a * 2

    @T.set_grad_enabled(False)
    def disabled(a):
        return a * 2
    called(x), bare(x), enabled(x), disabled(x)


def grad_mode_blocks(T):
    x = T.ones(2, requires_grad=True)
    yield
    with T.no_grad():
        with T.enable_grad():
            x * 2
    with T.set_grad_enabled(False):
        x * 2
    T.set_grad_enabled(True)
    previous = T.is_grad_enabled()
    T.set_grad_enabled(False)
    T.set_grad_enabled(previous)
    with T.inference_mode():
        x * 2
    with T.autograd.grad_mode.set_grad_enabled(True):
        pass


def tensor_and_node_hooks(T):
    x = T.ones(2, requires_grad=True)
    yield
    y = x * 2
    handle = y.register_hook(lambda g: g * 2)
    y.retain_grad()
    x.register_post_accumulate_grad_hook(lambda t: None)
    y.grad_fn.register_hook(lambda gi, go: None)
    y.grad_fn.register_prehook(lambda go: None)
    y.sum().backward()
    handle.remove()


def _multi_grad_hook(T, mode):
    a, b = T.ones(2, requires_grad=True), T.ones(2, requires_grad=True)
    yield
    c, d = a * 2, b * 3
    handle = T.autograd.graph.register_multi_grad_hook((c, d), lambda grads: None, mode=mode)
    (c + d).sum().backward()
    handle.remove()


def multi_grad_hook_all(T):
    return _multi_grad_hook(T, "all")


def multi_grad_hook_any(T):
    return _multi_grad_hook(T, "any")


def inspection(T):
    x = T.tensor([[1.5, 2.0], [3.0, 4.25]], requires_grad=True)
    yield
    x.detach(), x.clone(), x.sum().item(), x.tolist(), x.detach().numpy(), x.data, x.grad
    with contextlib.redirect_stdout(io.StringIO()):
        print(x)
        print(repr(x * 2))


def state_dict_round_trip(T):
    model, other = _mlp(T), _mlp(T)
    yield
    other.load_state_dict(model.state_dict())


def underscore_attributes(T):
    x = T.ones(2, requires_grad=True)
    yield
    y = x * 2
    view = y[:1]
    x._grad, x._version, view._base, y._base, y._grad_fn, x._backward_hooks, x._post_accumulate_grad_hooks
    y.is_leaf, y.grad_fn, x.requires_grad
    z = x * 3
    z._grad_fn = None
    x._grad = None
    y.detach_()


def checkpointed(T, use_reentrant):
    model, x = _mlp(T), T.ones(2, 4, requires_grad=True)
    yield
    T.utils.checkpoint.checkpoint(model, x, use_reentrant=use_reentrant).sum().backward()


def checkpoint_non_reentrant(T):
    return checkpointed(T, False)


def checkpoint_reentrant(T):
    return checkpointed(T, True)


def initialisers(T):
    w = T.empty(3, 4)
    yield
    T.nn.init.xavier_uniform_(w)
    T.nn.init.xavier_normal_(w)
    T.nn.init.kaiming_uniform_(w)
    T.nn.init.kaiming_normal_(w)
    T.nn.init.zeros_(w)
    T.nn.init.ones_(w)
    T.nn.init.normal_(w)
    T.nn.init.uniform_(w)
    T.nn.init.constant_(w, 0.5)


SWEEP = [no_grad_eval, grad_mode_decorators, grad_mode_blocks, tensor_and_node_hooks, multi_grad_hook_all,
         multi_grad_hook_any, inspection, state_dict_round_trip, underscore_attributes,
         checkpoint_non_reentrant, checkpoint_reentrant, initialisers]


@differential
@pytest.mark.parametrize("prepare", SWEEP, ids=[f.__name__ for f in SWEEP])
def test_a_logging_mode_sees_what_torch_shows(T, prepare):
    return _events(T, prepare)


@differential
def test_set_grad_enabled_takes_bools_only(T):
    results = [catch(T.set_grad_enabled, value) for value in (1, None, 0.0)]
    return [r.cls if isinstance(r, Raised) else "ok" for r in results], \
        [r.message for r in results if isinstance(r, Raised)], T.is_grad_enabled()


def _outcome(fn):
    result = catch(fn)
    return (result.cls, result.message) if isinstance(result, Raised) else ("ok", result)


@differential
def test_grad_fn_and_base_refuse_changes_as_torch(T):
    x = T.ones(3, requires_grad=True)
    y = x * 2
    view = y[:2]
    outcomes = {}

    def delete(t, name):
        return lambda: delattr(t, name)

    def assign(t, name, value):
        return lambda: setattr(t, name, value)
    outcomes["del _grad_fn"] = _outcome(delete(y, "_grad_fn"))
    outcomes["_grad_fn = node"] = _outcome(assign(x * 3, "_grad_fn", y.grad_fn))
    outcomes["_grad_fn = 5"] = _outcome(assign(x * 3, "_grad_fn", 5))
    outcomes["view._grad_fn = None"] = _outcome(assign(view, "_grad_fn", None))
    outcomes["del _base"] = _outcome(delete(view, "_base"))
    outcomes["_base = y"] = _outcome(assign(view, "_base", y))
    outcomes["leaf _base = view"] = _outcome(assign(x, "_base", view))
    outcomes["_version = 3"] = _outcome(assign(y, "_version", 3))
    # the refusals changed nothing: the graph still runs, the view still knows its base
    view.sum().backward(retain_graph=True)
    z = x * 3
    detached = _outcome(assign(z, "_grad_fn", None))
    return outcomes, view._base is y, y._grad_fn is y.grad_fn, x.grad, detached, z.is_leaf, z.requires_grad, \
        z.grad_fn, y.grad_fn.name()


@differential
def test_kwargs_handed_over_as_torch(T):
    """torch's C++ functions, methods and accessors hand None over when called without keywords; the
    functions it writes in Python hand a dict (their defaults included)."""
    seen = []

    class KeywordMode(T.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append((_name(T, func), kwargs if kwargs is None else sorted(kwargs)))
            return func(*args, **(kwargs or {}))

    x = T.ones(2, 3, requires_grad=True)
    with KeywordMode():
        x + x, x.sum(), T.sum(x), x.shape, T.zeros(2), x.sum(dim=0), T.stack([x]), x.clone(), x.grad
        T.nn.functional.relu(x), T.nn.functional.linear(x, T.ones(1, 3)), x.sum().backward()
        x.grad = None
        with T.no_grad():
            pass
    return seen
