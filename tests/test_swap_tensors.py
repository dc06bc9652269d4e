"""torch.utils.swap_tensors and the module paths that use it (conversion and load_state_dict under
torch.__future__.set_swap_module_params_on_conversion(True)), against torch."""
from __future__ import annotations

import weakref

import pytest

from difftest import Raised, catch, differential


@pytest.fixture
def swap_on():
    import hookgrad
    import torch
    for framework in (torch, hookgrad):
        framework.__future__.set_swap_module_params_on_conversion(True)
    yield
    for framework in (torch, hookgrad):
        framework.__future__.set_swap_module_params_on_conversion(False)


def _describe(t):
    return (type(t).__name__, t.detach().clone(), t.requires_grad, t.is_leaf, dict(t.__dict__),
            None if t.grad is None else t.grad.clone())


@differential
def test_swap_exchanges_contents_type_and_attributes(T):
    a = T.nn.Parameter(T.tensor([1.0, 2.0]))
    a.grad = T.tensor([5.0, 6.0])
    a.note = "a's"
    b = T.arange(3, dtype=T.float64)
    ids = (id(a), id(b))
    T.utils.swap_tensors(a, b)
    return _describe(a), _describe(b), a.dtype, b.dtype, (id(a), id(b)) == ids


@differential
def test_autograd_state_and_hooks_follow_the_contents(T):
    log = []
    a = T.ones(2, requires_grad=True)
    b = T.zeros(2, requires_grad=True)
    a.register_hook(lambda g: log.append(("hook", g.clone())))
    a.register_post_accumulate_grad_hook(lambda t: log.append(("post", t is a, t is b)))
    T.utils.swap_tensors(a, b)
    (b * 3).sum().backward()
    x = T.ones(2, requires_grad=True)
    y = x * 2
    y.add_(1)
    z = T.zeros(3)
    T.utils.swap_tensors(y, z)
    z.sum().backward()
    # (the _version each ends with differs: hookgrad moves both counters one step, see below)
    return log, a.grad, b.grad, (z.is_leaf, z.grad_fn is None, y.is_leaf), x.grad


@differential
def test_a_graph_that_saved_a_swapped_tensor_never_uses_the_new_contents(T):
    """torch refuses to swap a tensor a graph saved (its use count); hookgrad swaps, and the graph's
    backward then raises the in-place-modification error: a RuntimeError either way, and no gradient
    computed from the swapped-in values."""
    x = T.ones(2)
    w = T.ones(2, requires_grad=True)
    y = (w * x).sum()
    plain = catch(lambda: (T.utils.swap_tensors(x, T.full((2,), 5.0)), y.backward()))
    a = T.ones(2, requires_grad=True)
    b = (a * a).sum()
    leaf = catch(lambda: (T.utils.swap_tensors(a, T.full((2,), 3.0, requires_grad=True)), b.backward()))
    return plain, w.grad, leaf, a.grad


@differential
def test_backward_through_a_graph_recorded_before_the_swap_is_refused(T):
    w = T.ones(2, requires_grad=True)
    loss = (w * 2).sum()
    T.utils.swap_tensors(w, T.zeros(2, requires_grad=True))
    refused = catch(loss.backward)
    message_ok = isinstance(refused, Raised) and "poisoned by swap_tensors" in refused.message
    (w * 3).sum().backward()  # a graph recorded after the swap is fine
    return refused, message_ok, w.grad


@differential
def test_refused_swaps_leave_both_tensors_intact(T):
    class Slotted(T.Tensor):
        __slots__ = ("extra",)

    a, b = T.ones(2), T.zeros(3)
    kept = weakref.ref(a)
    with_weakref = catch(T.utils.swap_tensors, a, b)
    x = T.ones(2, requires_grad=True)
    y = x * 2
    y.retain_grad()
    with_retain_grad = catch(T.utils.swap_tensors, y, T.zeros(2))
    y.sum().backward()
    slotted = catch(T.utils.swap_tensors, Slotted([1.0]), T.zeros(1))
    errors = [(r, r.message) for r in (with_weakref, with_retain_grad, slotted)]
    return errors, kept() is a, a, b, y.grad, x.grad


@differential
def test_module_conversion_swaps_parameters_in_place(T, swap_on):
    m = T.nn.Linear(2, 3)
    weight, bias = m.weight, m.bias
    m(T.ones(4, 2)).sum().backward()
    grad = m.weight.grad
    m.double()
    same_objects = (m.weight is weight, m.bias is bias, m.weight.grad is grad)
    out = m(T.ones(4, 2, dtype=T.float64))
    converted = catch(m.float)  # allowed between forward and backward; the backward is not
    poisoned = catch(out.sum().backward)
    return same_objects, type(m.weight).__name__, m.weight.dtype, m.weight.grad.dtype, converted is m, poisoned


@differential
def test_module_conversion_reports_the_parameter_it_could_not_swap(T, swap_on):
    m = T.nn.Linear(2, 2)
    m.weight.grad = T.ones(2, 2)
    keep = weakref.ref(m.weight)
    error = catch(m.double)
    cause = error.message
    return error, "Couldn't swap Linear.weight" in cause, m.weight.grad, m.weight.dtype, keep() is m.weight


@differential
def test_load_state_dict_swaps_into_the_same_parameter_objects(T, swap_on):
    m = T.nn.Linear(2, 2)
    m.register_buffer("running", T.zeros(2))
    weight, running = m.weight, m.running
    source = {"weight": T.full((2, 2), 3.0), "bias": T.ones(2), "running": T.arange(2.0)}
    m.load_state_dict(source)
    copied = (m.weight is weight, m.running is running, m.weight.requires_grad, type(m.weight).__name__,
              m.weight.detach().clone(), m.running.clone(), source["weight"].data_ptr() != m.weight.data_ptr())
    assigned_source = {"weight": T.full((2, 2), 7.0), "bias": T.ones(2), "running": T.ones(2)}
    m.load_state_dict(assigned_source, assign=True)
    assigned = (m.weight is weight, m.weight.requires_grad, m.weight.detach().clone(), m.running is running)
    wrong = catch(m.load_state_dict, {"weight": T.ones(3, 3), "bias": T.ones(2), "running": T.ones(2)})
    return copied, assigned, wrong, wrong.message.splitlines()[0]


@differential
def test_module_load_returning_an_input_is_reported(T, swap_on):
    class Broken(T.Tensor):
        def module_load(self, other, assign=False):
            return other

    m = T.nn.Module()
    m.register_buffer("b", T.zeros(2).as_subclass(Broken))
    error = catch(m.load_state_dict, {"b": T.ones(2)})
    return error, "module_load returned one of self or other" in error.message, m.b


@differential
def test_conversion_keeps_optimizer_and_module_hooks_but_not_tensor_hooks(T, swap_on):
    """Swapping keeps the Parameter objects an optimizer holds; module hooks stay, while a hook
    registered on a parameter follows its old contents into the discarded tensor (as in torch)."""
    T.manual_seed(0)
    m = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.Tanh(), T.nn.Linear(4, 2))
    m.register_buffer("running", T.zeros(2))
    opt = T.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    x = T.ones(5, 3)
    m(x).sum().backward()
    opt.step()
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append(("forward", out.dtype)))
    m[0].weight.register_hook(lambda g: seen.append(("weight hook", g.dtype)))
    m.double()
    opt.zero_grad()
    m(x.double()).sum().backward()
    opt.step()
    return seen, [p.dtype for p in m.parameters()], m.running.dtype, [p.detach() for p in m.parameters()]
