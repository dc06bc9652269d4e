"""Differential tests of module backward hooks: full backward hooks and pre-hooks (local and
global), the deprecated legacy hooks, and their argument, return-value, warning and error rules, also
in unusual graphs (outputs independent of inputs, double backward, modules shared by two graphs)."""
from __future__ import annotations

import pytest

from difftest import catch, differential, warns
from test_module_fixtures import clean_globals, leaf, mods, shapes


def _record(log, label):
    def hook(m, grad_input, grad_output):
        log.append((label, type(m).__name__, grad_input, grad_output))
    return hook


def _record_pre(log, label):
    def hook(m, grad_output):
        log.append((label, type(m).__name__, grad_output))
    return hook


# ------------------------------------------------------------------------------------------
# full backward hooks: arguments
# ------------------------------------------------------------------------------------------
@differential
def test_full_hook_grad_input_and_output(T):
    log = []
    mod = mods(T).Affine()
    mod.register_full_backward_hook(_record(log, "h"))
    x = leaf(T)
    mod(x).sum().backward()
    return log, x.grad


@differential
def test_full_hook_two_inputs(T):
    log = []
    mod = mods(T).Two()
    mod.register_full_backward_hook(_record(log, "h"))
    x, y = leaf(T), leaf(T, [[3.0, 4.0], [5.0, 6.0]])
    (mod(x, y, scale=2.0) ** 2).sum().backward()
    return log, x.grad, y.grad


@differential
def test_full_hook_input_not_requiring_grad_is_none(T):
    log = []
    mod = mods(T).Two()
    mod.register_full_backward_hook(_record(log, "h"))
    x, y = leaf(T), leaf(T, requires_grad=False)
    mod(x, y).sum().backward()
    return log


@differential
def test_full_hook_non_tensor_arg_is_none(T):
    log = []
    mod = mods(T).Mixed()
    mod.register_full_backward_hook(_record(log, "h"))
    x, y = leaf(T), leaf(T)
    mod(x, 3.0, y).sum().backward()
    return log


@differential
def test_full_hook_kwargs_tensor_not_in_grad_input(T):
    log = []
    mod = mods(T).Two()
    mod.register_full_backward_hook(_record(log, "h"))
    x = leaf(T)
    s = T.tensor(2.0, requires_grad=True)
    mod(x, x, scale=s).sum().backward()
    return [(e[0], len(e[2]), shapes(e[2]), shapes(e[3])) for e in log], s.grad


@differential
def test_full_hook_tuple_output(T):
    log = []
    mod = mods(T).Pair()
    mod.register_full_backward_hook(_record(log, "h"))
    x = leaf(T)
    a, b = mod(x)
    (a.sum() + (b * b).sum()).backward()
    return log, x.grad


@differential
def test_full_hook_tuple_output_one_unused(T):
    log = []
    mod = mods(T).Pair()
    mod.register_full_backward_hook(_record(log, "h"))
    x = leaf(T)
    a, b = mod(x)
    a.sum().backward()
    return log, x.grad


@differential
def test_full_hook_output_with_none_entry(T):
    log = []
    mod = mods(T).PairWithNone()
    mod.register_full_backward_hook(_record(log, "h"))
    x = leaf(T)
    a, b = mod(x)
    a.sum().backward()
    return log, b


@differential
def test_full_hook_parameters_not_in_grad_input(T):
    log = []
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: log.append(len(gi)))
    x = leaf(T)
    mod(x).sum().backward()
    return log, mod.w.grad, mod.b.grad


# ------------------------------------------------------------------------------------------
# full backward hooks: return values
# ------------------------------------------------------------------------------------------
@differential
def test_full_hook_return_replaces_grad_input(T):
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: (gi[0] * 10,))
    x = leaf(T)
    mod(x).sum().backward()
    return x.grad, mod.w.grad


@differential
def test_full_hook_return_chain(T):
    log = []
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: (gi[0] + 1,))
    mod.register_full_backward_hook(lambda m, gi, go: log.append(gi))
    mod.register_full_backward_hook(lambda m, gi, go: (gi[0] * 2,))
    x = leaf(T)
    mod(x).sum().backward()
    return log, x.grad


@differential
def test_full_hook_return_none_entry_drops_gradient(T):
    mod = mods(T).Two()
    mod.register_full_backward_hook(lambda m, gi, go: (None, gi[1]))
    x, y = leaf(T), leaf(T)
    mod(x, y).sum().backward()
    return x.grad, y.grad


@differential
def test_full_hook_wrong_length_raises(T):
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    x = leaf(T)
    out = mod(x).sum()
    return catch(out.backward)


@differential
def test_full_hook_return_list_accepted(T):
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: [gi[0] * 3])
    x = leaf(T)
    mod(x).sum().backward()
    return x.grad


@differential
def test_full_hook_exception_propagates(T):
    mod = mods(T).Scale()

    def bad(m, gi, go):
        raise ValueError("in hook")

    mod.register_full_backward_hook(bad)
    return catch(mod(leaf(T)).sum().backward)


# ------------------------------------------------------------------------------------------
# full backward hooks: order and repetition
# ------------------------------------------------------------------------------------------
@differential
def test_full_hooks_prepend_order(T):
    log = []
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: log.append("a"))
    mod.register_full_backward_hook(lambda m, gi, go: log.append("b"), prepend=True)
    mod.register_full_backward_hook(lambda m, gi, go: log.append("c"))
    mod(leaf(T)).sum().backward()
    return log


@differential
def test_full_hooks_nested_order(T):
    log = []
    net = mods(T).Net()
    for name, sub in net.named_modules():
        sub.register_full_backward_hook(lambda m, gi, go, name=name: log.append(("h", name, shapes(gi), shapes(go))))
        sub.register_full_backward_pre_hook(lambda m, go, name=name: log.append(("pre", name, shapes(go))))
    net(leaf(T)).sum().backward()
    return log


@differential
def test_full_hook_same_module_called_twice(T):
    log = []
    outer = mods(T).Twice()
    outer.inner.register_full_backward_hook(lambda m, gi, go: log.append(("h", gi, go)))
    outer.inner.register_full_backward_pre_hook(lambda m, go: log.append(("pre", go)))
    x = leaf(T, [1.0, 2.0])
    outer(x).sum().backward()
    return log, x.grad


@differential
def test_full_hook_two_backward_passes(T):
    log = []
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: log.append(gi))
    x = leaf(T)
    out = mod(x).sum()
    out.backward(retain_graph=True)
    out.backward()
    return log, x.grad


@differential
def test_full_hook_module_reused_on_two_inputs_then_summed(T):
    log = []
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: log.append(("h", gi[0])))
    x = leaf(T, [1.0])
    y = leaf(T, [5.0])
    (mod(x) * 3 + mod(y)).sum().backward()
    return log


@differential
def test_full_hook_removed_before_backward_still_fires(T):
    # The hook list is captured at call time.
    log = []
    mod = mods(T).Scale()
    h = mod.register_full_backward_hook(lambda m, gi, go: log.append("fired"))
    out = mod(leaf(T)).sum()
    h.remove()
    out.backward()
    out2 = mod(leaf(T)).sum()
    out2.backward()
    return log


@differential
def test_full_hook_registered_after_forward_does_not_fire(T):
    log = []
    mod = mods(T).Scale()
    out = mod(leaf(T)).sum()
    mod.register_full_backward_hook(lambda m, gi, go: log.append("late"))
    out.backward()
    return log


@differential
def test_full_hook_with_tensor_hooks_order(T):
    log = []
    mod = mods(T).Scale()
    mod.register_full_backward_pre_hook(lambda m, go: log.append("module_pre"))
    mod.register_full_backward_hook(lambda m, gi, go: log.append("module_post"))
    x = leaf(T)
    x.register_hook(lambda g: log.append("x_hook"))
    out = mod(x)
    out.register_hook(lambda g: log.append("out_hook"))
    out.sum().backward()
    return log


# ------------------------------------------------------------------------------------------
# no input requires grad / no output requires grad / grad mode
# ------------------------------------------------------------------------------------------
@differential
def test_full_hook_no_input_requires_grad_warns(T):
    log = []
    mod = mods(T).Scale()
    mod.register_full_backward_hook(_record(log, "h"))
    x = leaf(T, requires_grad=False)
    out = mod(x).sum()
    return warns(out.backward), log, mod.w.grad


def _warning_sites(fn):
    """(file name, line) of each warning ``fn`` emits."""
    import os
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [(os.path.basename(w.filename), w.lineno) for w in caught]


@differential
def test_full_hook_no_input_warning_points_at_the_backward_line(T):
    import inspect
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: None)
    out = mod(leaf(T, requires_grad=False)).sum()
    line = inspect.currentframe().f_lineno + 1
    sites = _warning_sites(lambda: out.backward())
    return [(name, lineno - line) for name, lineno in sites]


def test_full_hook_no_input_warning_points_at_the_autograd_grad_line():
    # torch's fixed stacklevel fits Tensor.backward only (for autograd.grad it reports "sys", 1);
    # hookgrad points at the caller's line for every entry point
    import inspect
    import hookgrad as T
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: None)
    out = mod(leaf(T, requires_grad=False)).sum()
    line = inspect.currentframe().f_lineno + 1
    sites = _warning_sites(lambda: T.autograd.grad(out, [mod.w]))
    assert sites == [("test_module_hooks_backward.py", line)]
    out = mod(leaf(T, requires_grad=False)).sum()
    line = inspect.currentframe().f_lineno + 1
    sites = _warning_sites(lambda: T.autograd.backward([out]))
    assert sites == [("test_module_hooks_backward.py", line)]


@differential
def test_full_hook_no_input_requires_grad_nonnone_return_raises(T):
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: (T.ones(1),))
    out = mod(leaf(T, requires_grad=False)).sum()
    res = warns(out.backward)
    return res


@differential
def test_full_hook_no_input_requires_grad_all_none_return_ok(T):
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: (None,))
    out = mod(leaf(T, requires_grad=False)).sum()
    return warns(out.backward), mod.b.grad


@differential
def test_full_hook_no_output_requires_grad_never_fires(T):
    log = []
    mod = mods(T).Identity()
    mod.register_full_backward_hook(_record(log, "h"))
    out = mod(leaf(T, requires_grad=False))
    return out.requires_grad, log


@differential
def test_full_hook_under_no_grad(T):
    log = []
    mod = mods(T).Scale()
    mod.register_full_backward_hook(_record(log, "h"))
    with T.no_grad():
        out = mod(leaf(T))
    return out.requires_grad, out.grad_fn is None, log


@differential
def test_full_hook_output_not_tensor_warns(T):
    log = []
    mod = mods(T).ListOut()
    mod.register_full_backward_hook(_record(log, "h"))
    x = leaf(T)
    res = warns(mod, x)
    outs = res[0]
    (outs[0].sum() + outs[1].sum()).backward()
    return res[1], log, x.grad


@differential
def test_full_hook_dict_output_warns_and_does_not_fire(T):
    log = []
    mod = mods(T).DictOut()
    mod.register_full_backward_hook(_record(log, "h"))
    x = leaf(T)
    res, w = warns(mod, x)
    res["a"].sum().backward()
    return w, log, x.grad


# ------------------------------------------------------------------------------------------
# views and in-place
# ------------------------------------------------------------------------------------------
@differential
def test_full_hook_output_grad_fn_name(T):
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: None)
    out = mod(leaf(T))
    return out.grad_fn.name(), out.grad_fn.next_functions[0][0].name()


@differential
def test_full_hook_forward_sees_identity_wrapped_input(T):
    seen = []

    class Peek(T.nn.Module):
        def forward(self, x):
            seen.append(x.grad_fn.name() if x.grad_fn is not None else None)
            return x * 2

    mod = Peek()
    mod.register_full_backward_hook(lambda m, gi, go: None)
    mod(leaf(T))
    return seen


@differential
def test_full_hook_inplace_on_output_raises(T):
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: None)
    out = mod(leaf(T))
    return catch(lambda: out.add_(1))


@differential
def test_full_hook_inplace_on_input_in_forward_raises(T):
    class Inplace(T.nn.Module):
        def forward(self, x):
            x.mul_(2)
            return x

    mod = Inplace()
    mod.register_full_backward_hook(lambda m, gi, go: None)
    x = leaf(T) * 1.0
    return catch(mod, x)


@differential
def test_inplace_without_backward_hooks_is_fine(T):
    class Inplace(T.nn.Module):
        def forward(self, x):
            x.mul_(2)
            return x

    mod = Inplace()
    x = leaf(T)
    y = x * 1.0
    out = mod(y)
    out.sum().backward()
    return out, x.grad


@differential
def test_full_hook_identity_module(T):
    log = []
    mod = mods(T).Identity()
    mod.register_full_backward_hook(_record(log, "h"))
    x = leaf(T)
    out = mod(x)
    (out * 3).sum().backward()
    return log, x.grad


@differential
def test_full_hook_identity_module_inplace_output_raises(T):
    mod = mods(T).Identity()
    mod.register_full_backward_hook(lambda m, gi, go: None)
    out = mod(leaf(T))
    return catch(lambda: out.mul_(2))


# ------------------------------------------------------------------------------------------
# full backward pre-hooks
# ------------------------------------------------------------------------------------------
@differential
def test_pre_hook_receives_grad_output(T):
    log = []
    mod = mods(T).Affine()
    mod.register_full_backward_pre_hook(_record_pre(log, "pre"))
    x = leaf(T)
    (mod(x) * T.tensor([1.0, 2.0, 3.0])).sum().backward()
    return log


@differential
def test_pre_hook_replaces_grad_output(T):
    mod = mods(T).Scale()
    mod.register_full_backward_pre_hook(lambda m, go: (go[0] * 0.5,))
    x = leaf(T)
    mod(x).sum().backward()
    return x.grad, mod.w.grad, mod.b.grad


@differential
def test_pre_hook_replacement_seen_by_full_hook(T):
    log = []
    mod = mods(T).Scale()
    mod.register_full_backward_pre_hook(lambda m, go: (go[0] + 1,))
    mod.register_full_backward_hook(lambda m, gi, go: log.append((gi, go)))
    mod(leaf(T)).sum().backward()
    return log


@differential
def test_pre_hooks_chain_and_prepend(T):
    log = []
    mod = mods(T).Scale()
    mod.register_full_backward_pre_hook(lambda m, go: log.append(("a", go)) or (go[0] * 2,))
    mod.register_full_backward_pre_hook(lambda m, go: log.append(("b", go)) or (go[0] * 3,), prepend=True)
    mod.register_full_backward_pre_hook(lambda m, go: log.append(("c", go)))
    x = leaf(T)
    mod(x).sum().backward()
    return log, x.grad


@differential
def test_pre_hook_wrong_length_raises(T):
    mod = mods(T).Scale()
    mod.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
    return catch(mod(leaf(T)).sum().backward)


@differential
def test_pre_hook_tuple_outputs(T):
    log = []
    mod = mods(T).Pair()
    mod.register_full_backward_pre_hook(_record_pre(log, "pre"))
    x = leaf(T)
    a, b = mod(x)
    (a.sum() * 2 + b.sum()).backward()
    return log, x.grad


@differential
def test_pre_hook_zeroing_one_output_grad(T):
    mod = mods(T).Pair()
    mod.register_full_backward_pre_hook(lambda m, go: (go[0], None))
    x = leaf(T)
    a, b = mod(x)
    (a.sum() + b.sum()).backward()
    return x.grad


@differential
def test_pre_hook_no_input_requires_grad_fires_with_warning(T):
    log = []
    mod = mods(T).Scale()
    mod.register_full_backward_pre_hook(_record_pre(log, "pre"))
    out = mod(leaf(T, requires_grad=False)).sum()
    return warns(out.backward), log


@differential
def test_pre_hook_only_no_input_requires_grad_warns(T):
    mod = mods(T).Scale()
    mod.register_full_backward_pre_hook(lambda m, go: (go[0] * 4,))
    out = mod(leaf(T, requires_grad=False)).sum()
    return warns(out.backward), mod.w.grad, mod.b.grad


@differential
def test_pre_hook_removed_via_handle(T):
    log = []
    mod = mods(T).Scale()
    h = mod.register_full_backward_pre_hook(lambda m, go: log.append(1))
    mod(leaf(T)).sum().backward()
    h.remove()
    mod(leaf(T)).sum().backward()
    return log


# ------------------------------------------------------------------------------------------
# global backward hooks
# ------------------------------------------------------------------------------------------
@differential
def test_global_full_hook_before_local(T):
    log = []
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: log.append("local"), prepend=True)
    mod.register_full_backward_pre_hook(lambda m, go: log.append("local_pre"), prepend=True)
    with clean_globals(T) as mm:
        mm.register_module_full_backward_hook(lambda m, gi, go: log.append("global"))
        mm.register_module_full_backward_pre_hook(lambda m, go: log.append("global_pre"))
        mod(leaf(T)).sum().backward()
    return log


@differential
def test_global_full_hook_all_modules(T):
    log = []
    net = mods(T).Net()
    with clean_globals(T) as mm:
        mm.register_module_full_backward_hook(lambda m, gi, go: log.append((type(m).__name__, shapes(gi), shapes(go))))
        net(leaf(T)).sum().backward()
    return log


@differential
def test_global_full_hook_return_replaces(T):
    net = mods(T).Net()
    x = leaf(T)
    with clean_globals(T) as mm:
        mm.register_module_full_backward_hook(lambda m, gi, go: tuple(None if g is None else g * 0.5 for g in gi))
        net(x).sum().backward()
    return x.grad, net.fc1.weight.grad


@differential
def test_global_pre_hook_scales_incoming(T):
    net = mods(T).Net()
    x = leaf(T)
    with clean_globals(T) as mm:
        mm.register_module_full_backward_pre_hook(lambda m, go: tuple(None if g is None else g * 0.1 for g in go))
        net(x).sum().backward()
    return x.grad, [p.grad for p in net.parameters()]


@differential
def test_global_full_hook_removed(T):
    log = []
    mod = mods(T).Scale()
    with clean_globals(T) as mm:
        h = mm.register_module_full_backward_hook(lambda m, gi, go: log.append(1))
        mod(leaf(T)).sum().backward()
        h.remove()
        mod(leaf(T)).sum().backward()
        flag = mm._global_is_full_backward_hook
    return log, flag


@differential
def test_global_mixing_full_then_legacy_raises(T):
    with clean_globals(T) as mm:
        h = mm.register_module_full_backward_hook(lambda m, gi, go: None)
        h.remove()
        res = catch(mm.register_module_backward_hook, lambda m, gi, go: None)
    return res


@differential
def test_global_mixing_legacy_then_full_raises(T):
    with clean_globals(T) as mm:
        res1 = warns(mm.register_module_backward_hook, lambda m, gi, go: None)
        res2 = catch(mm.register_module_full_backward_hook, lambda m, gi, go: None)
    return res1[1], res2


@differential
def test_global_full_hook_with_local_legacy_hook(T):
    log = []
    mod = mods(T).Scale()
    mod.register_backward_hook(lambda m, gi, go: log.append(("legacy", len(gi))))
    with clean_globals(T) as mm:
        mm.register_module_full_backward_hook(lambda m, gi, go: log.append(("full", len(gi))))
        x = leaf(T)
        res = warns(lambda: mod(x).sum().backward())
    return res, log


# ------------------------------------------------------------------------------------------
# legacy (deprecated) backward hooks
# ------------------------------------------------------------------------------------------
@differential
def test_legacy_hook_registration_does_not_warn(T):
    mod = mods(T).Scale()
    return warns(mod.register_backward_hook, lambda m, gi, go: None)[1]


@differential
def test_legacy_hook_sees_last_node_grads(T):
    log = []
    mod = mods(T).Scale()
    mod.register_backward_hook(lambda m, gi, go: log.append((gi, go)))
    x = leaf(T)
    res = warns(lambda: mod(x).sum().backward())
    return res, log, x.grad


@differential
def test_legacy_hook_return_replaces_node_grad_inputs(T):
    mod = mods(T).Scale()
    mod.register_backward_hook(lambda m, gi, go: tuple(None if g is None else g * 0 for g in gi))
    x = leaf(T)
    mod(x).sum().backward()
    return x.grad, mod.w.grad, mod.b.grad


@differential
def test_legacy_hook_single_node_module_no_warning(T):
    log = []

    class Mul(T.nn.Module):
        def forward(self, x, y):
            return x * y

    mod = Mul()
    mod.register_backward_hook(lambda m, gi, go: log.append((gi, go)))
    x, y = leaf(T), leaf(T, [[2.0, 2.0], [3.0, 3.0]])
    res = warns(lambda: mod(x, y).sum().backward())
    return res, log


@differential
def test_legacy_hook_tuple_output_warns(T):
    log = []
    mod = mods(T).Pair()
    mod.register_backward_hook(lambda m, gi, go: log.append(len(go)))
    x = leaf(T)

    def run():
        a, b = mod(x)
        (a + b).sum().backward()

    return warns(run), log


@differential
def test_legacy_hook_non_tensor_input_warns(T):
    mod = mods(T).Mixed()
    mod.register_backward_hook(lambda m, gi, go: None)
    return warns(mod, leaf(T), 2.0, leaf(T))[1]


@differential
def test_legacy_hook_dict_output(T):
    mod = mods(T).DictOut()
    mod.register_backward_hook(lambda m, gi, go: None)
    return warns(mod, leaf(T))[1]


@differential
def test_mixing_full_then_legacy_on_module_raises(T):
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: None)
    return catch(mod.register_backward_hook, lambda m, gi, go: None)


@differential
def test_mixing_legacy_then_full_on_module_raises(T):
    mod = mods(T).Scale()
    mod.register_backward_hook(lambda m, gi, go: None)
    return catch(mod.register_full_backward_hook, lambda m, gi, go: None)


@differential
def test_mixing_after_remove_still_raises(T):
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: None).remove()
    return catch(mod.register_backward_hook, lambda m, gi, go: None), mod._is_full_backward_hook


@differential
def test_pre_hook_and_legacy_hook_together(T):
    log = []
    mod = mods(T).Scale()
    mod.register_backward_hook(lambda m, gi, go: log.append("legacy"))
    mod.register_full_backward_pre_hook(lambda m, go: log.append("pre"))
    x = leaf(T)
    res = warns(lambda: mod(x).sum().backward())
    return res, log


@differential
def test_global_legacy_hook(T):
    log = []
    mod = mods(T).Scale()
    with clean_globals(T) as mm:
        mm.register_module_backward_hook(lambda m, gi, go: log.append(type(m).__name__))
        x = leaf(T)
        res = warns(lambda: mod(x).sum().backward())
    return res, log


# ------------------------------------------------------------------------------------------
# full hooks combined with autograd features
# ------------------------------------------------------------------------------------------
@differential
def test_full_hook_with_autograd_grad(T):
    log = []
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: log.append((gi, go)))
    x = leaf(T)
    (g,) = T.autograd.grad(mod(x).sum(), [x])
    return g, log


@differential
def test_full_hook_autograd_grad_wrt_params_only(T):
    log = []
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: log.append("h"))
    mod.register_full_backward_pre_hook(lambda m, go: log.append("pre"))
    x = leaf(T)
    (g,) = T.autograd.grad(mod(x).sum(), [mod.w])
    return g, log


@differential
def test_full_hook_backward_inputs_restricts(T):
    log = []
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: log.append("h"))
    x = leaf(T)
    mod(x).sum().backward(inputs=[mod.b])
    return log, mod.b.grad, x.grad


@differential
def test_full_hook_on_sequential_container(T):
    log = []
    m = mods(T)
    seq = T.nn.Sequential(m.Scale(), m.Relu(), m.Scale(3.0, 0.0))
    seq.register_full_backward_hook(lambda mod, gi, go: log.append(("seq", gi, go)))
    seq[1].register_full_backward_hook(lambda mod, gi, go: log.append(("relu", gi, go)))
    x = leaf(T, [[1.0, -2.0]])
    seq(x).sum().backward()
    return log, x.grad


@pytest.mark.parametrize("n_hooks", [1, 3])
@differential
def test_full_and_pre_hook_counts(T, n_hooks):
    log = []
    mod = mods(T).Affine()
    for i in range(n_hooks):
        mod.register_full_backward_hook(lambda m, gi, go, i=i: log.append(("h", i)))
        mod.register_full_backward_pre_hook(lambda m, go, i=i: log.append(("p", i)))
    mod(leaf(T)).sum().backward()
    return log


# ------------------------------------------------------------------------------------------
# invalid replacements
# ------------------------------------------------------------------------------------------
def _bad(T, kind):
    return {"float": lambda g: (3.0,), "bare_tensor": lambda g: g[0], "double": lambda g: (g[0].double(),),
            "shape": lambda g: (T.ones(3),), "bigger": lambda g: (T.ones(2, 2, 2),)}[kind]


@pytest.mark.parametrize("kind", ["float", "bare_tensor", "double", "shape", "bigger"])
@differential
def test_full_hook_invalid_replacement(T, kind):
    mod = mods(T).Scale()
    bad = _bad(T, kind)
    mod.register_full_backward_hook(lambda m, gi, go: bad(gi))
    return catch(mod(leaf(T)).sum().backward)


@pytest.mark.parametrize("kind", ["float", "bare_tensor", "double", "shape", "bigger"])
@differential
def test_pre_hook_invalid_replacement(T, kind):
    mod = mods(T).Scale()
    bad = _bad(T, kind)
    mod.register_full_backward_pre_hook(lambda m, go: bad(go))
    return catch(mod(leaf(T)).sum().backward)


@differential
def test_invalid_replacement_fixed_by_later_hook(T):
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: (T.ones(3),))
    mod.register_full_backward_hook(lambda m, gi, go: (T.ones(2, 2) * 7,))
    x = leaf(T)
    mod(x).sum().backward()
    return x.grad


def test_invalid_replacement_error_names_module_and_hook():
    import hookgrad

    mod = mods(hookgrad).Scale()

    def widen(m, gi, go):
        return (hookgrad.ones(3),)

    mod.register_full_backward_hook(widen)
    with pytest.raises(RuntimeError, match=r"module Scale, hook .*widen"):
        mod(leaf(hookgrad)).sum().backward()

    mod2 = mods(hookgrad).Scale()

    def too_many(m, go):
        return (go[0], go[0])

    mod2.register_full_backward_pre_hook(too_many)
    with pytest.raises(RuntimeError, match=r"invalid number of grad_output.*module Scale, hook .*too_many"):
        mod2(leaf(hookgrad)).sum().backward()


@differential
def test_unused_output_gradient_stays_undefined_inside_the_module(T):
    # the output identity node passes a missing gradient on as missing: hooks on the tensors that
    # produced the unused output inside the module do not fire (no zeros are invented)
    log = []

    class TwoOut(T.nn.Module):
        def forward(self, x):
            a, b = x * 2, x * 3
            a.register_hook(lambda g: log.append(("a", g)))
            b.register_hook(lambda g: log.append(("b", g)))
            return a, b

    mod = TwoOut()
    mod.register_full_backward_hook(_record(log, "h"))
    x = leaf(T)
    a, b = mod(x)
    a.sum().backward()
    return log, x.grad


# ------------------------------------------------------------------------------------------
# unusual graphs: outputs independent of inputs, double backward, shared modules
# ------------------------------------------------------------------------------------------

@differential
def test_output_independent_of_input(T):
    log = []

    class ParamOnly(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = T.nn.Parameter(T.tensor([1.0, 2.0]))

        def forward(self, x):
            return self.w * 2

    mod = ParamOnly()
    mod.register_full_backward_pre_hook(lambda m, go: log.append(("pre", go)))
    mod.register_full_backward_hook(lambda m, gi, go: log.append(("post", gi, go)))
    x = leaf(T)
    mod(x).sum().backward()
    return log, mod.w.grad, x.grad


@differential
def test_double_backward_with_full_hook(T):
    log = []

    class Cube(T.nn.Module):
        def forward(self, x):
            return x * x * x

    mod = Cube()
    mod.register_full_backward_hook(lambda m, gi, go: log.append(("h", gi, go)))
    x = leaf(T, [1.0, 2.0])
    y = mod(x).sum()
    (g,) = T.autograd.grad(y, x, create_graph=True)
    g.sum().backward()
    return log, g, x.grad


@differential
def test_module_shared_by_two_graphs(T):
    log = []
    mod = mods(T).Scale()
    mod.register_full_backward_hook(lambda m, gi, go: log.append(gi))
    a = leaf(T, [1.0])
    b = leaf(T, [2.0])
    out_a = mod(a)
    out_b = mod(b)
    (out_b * 5).sum().backward()
    (out_a * 7).sum().backward()
    return log, a.grad, b.grad


@differential
def test_backward_hook_with_kwargs_forward(T):
    log = []
    mod = mods(T).Two()
    mod.register_full_backward_hook(lambda m, gi, go: log.append((shapes(gi), shapes(go))))
    mod.register_forward_pre_hook(lambda m, a, kw: log.append(("pre", sorted(kw))), with_kwargs=True)
    x = leaf(T)
    y = leaf(T)
    mod(x, y=y, scale=2.0).sum().backward()
    return log, x.grad, y.grad


@differential
def test_forward_hook_output_replacement_then_backward_hook(T):
    log = []
    mod = mods(T).Scale()
    mod.register_forward_hook(lambda m, a, o: o * 10)
    mod.register_full_backward_hook(lambda m, gi, go: log.append((gi, go)))
    mod.register_full_backward_pre_hook(lambda m, go: log.append(("pre", go)))
    x = leaf(T)
    mod(x).sum().backward()
    return log, x.grad


@differential
def test_forward_hook_returning_tuple_with_backward_hooks(T):
    log = []
    mod = mods(T).Scale()
    mod.register_forward_hook(lambda m, a, o: (o, o * 2))
    mod.register_full_backward_hook(lambda m, gi, go: log.append((gi, go)))
    x = leaf(T)
    a, b = mod(x)
    (a + b).sum().backward()
    return log, x.grad


@differential
def test_nested_tuple_output_warns_free(T):
    log = []

    class Nested(T.nn.Module):
        def forward(self, x):
            return (x * 2, (x * 3,))

    mod = Nested()
    mod.register_full_backward_hook(lambda m, gi, go: log.append(shapes([g for g in go if not isinstance(g, tuple)])))
    x = leaf(T)
    res, w = warns(mod, x)
    res[0].sum().backward()
    return w, log


@differential
def test_int_tensor_input_with_backward_hook(T):
    log = []

    class Index(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.table = T.nn.Parameter(T.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))

        def forward(self, idx, x):
            return self.table[idx] * x

    mod = Index()
    mod.register_full_backward_hook(lambda m, gi, go: log.append((len(gi), gi[0], shapes(gi))))
    x = leaf(T, [2.0, 3.0])
    mod(T.tensor([2, 0]), x).sum().backward()
    return log, x.grad, mod.table.grad


@differential
def test_global_backward_pre_hook_validates_nan(T):
    log = []
    net = mods(T).Net()
    with clean_globals(T) as mm:
        def check(m, go):
            log.append((type(m).__name__, any(bool(T.isnan(g).any()) for g in go if g is not None)))

        mm.register_module_full_backward_pre_hook(check)
        (net(leaf(T)) * float("nan")).sum().backward()
    return log


# ------------------------------------------------------------------------------------------
# a backward pre-hook that returns a bare Tensor instead of a tuple
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("input_requires_grad", [True, False])
@differential
def test_pre_hook_returning_bare_tensor(T, batch, input_requires_grad):
    # the length check sees len(tensor); a tensor of matching length is taken as grad_output,
    # and the full hooks run (when no input requires grad) before the size check fails
    log = []
    mod = T.nn.Linear(3, 3)
    mod.register_full_backward_pre_hook(lambda m, go: log.append("pre") or T.ones(batch, 3))
    mod.register_full_backward_hook(
        lambda m, gi, go: log.append(("full", gi, [tuple(g.shape) for g in go])))
    x = T.ones(batch, 3, requires_grad=input_requires_grad)
    out = mod(x).sum()
    result = warns(out.backward)
    return log, result, x.grad


# ------------------------------------------------------------------------------------------
# in-place changes of the views a hooked module hands out
# ------------------------------------------------------------------------------------------
def _error_head(fn):
    """What ``fn`` raised, up to torch's explanation (which names the node and the kind of change)."""
    try:
        fn()
    except RuntimeError as exc:
        return str(exc).split(" This view")[0]
    return "no error"


def _hooked_linear(T):
    T.manual_seed(0)
    mod = T.nn.Linear(3, 3)
    mod.register_full_backward_hook(lambda m, gi, go: None)
    return mod


@pytest.mark.parametrize("then", ["grad_fn", "retain_grad", "register_hook", "backward"])
@differential
def test_inplace_under_no_grad_on_hooked_output_raises_later(T, then):
    out = _hooked_linear(T)(T.ones(2, 3, requires_grad=True))
    with T.no_grad():
        out.add_(1)
    later = {"grad_fn": lambda: out.grad_fn, "retain_grad": out.retain_grad,
             "register_hook": lambda: out.register_hook(lambda g: g),
             "backward": lambda: out.sum().backward()}[then]
    return _error_head(later)


@pytest.mark.parametrize("view", ["flatten", "select", "view", "t"])
@pytest.mark.parametrize("input_requires_grad", [True, False])
@differential
def test_inplace_on_view_of_hooked_output_raises(T, view, input_requires_grad):
    out = _hooked_linear(T)(T.ones(2, 3, requires_grad=input_requires_grad))
    make = {"flatten": lambda: out.flatten(1), "select": lambda: out[0], "view": lambda: out.view(6),
            "t": lambda: out.t()}[view]
    return _error_head(lambda: make().add_(1))


@differential
def test_view_of_hooked_output_changed_under_no_grad_raises_later(T):
    out = _hooked_linear(T)(T.ones(2, 3, requires_grad=True))
    v = out.view(6)
    with T.no_grad():
        v.add_(1)
    return _error_head(lambda: v.grad_fn), _error_head(lambda: out.grad_fn)


@pytest.mark.parametrize("hook", ["pre", "full"])
@differential
def test_base_changed_in_place_under_a_view_the_hooks_see(T, hook):
    log = []
    mod = T.nn.Identity()
    if hook == "pre":
        mod.register_full_backward_pre_hook(lambda m, go: log.append("pre"))
    else:
        mod.register_full_backward_hook(lambda m, gi, go: log.append("full"))
    x = T.ones(4, requires_grad=True)
    base = x * 1
    out = mod(base[:2])
    name = out.grad_fn.name()

    def change_then_backward():
        base.add_(1)
        out.sum().backward()

    return name, _error_head(change_then_backward), log


@differential
def test_custom_function_view_error_names_the_op(T):
    class Id(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    o = Id.apply(T.ones(2, 3, requires_grad=True) * 1)
    heads = [_error_head(lambda: o.add_(1)), _error_head(lambda: o[0].add_(1))]
    with T.no_grad():
        o.mul_(2)
    heads.append(_error_head(lambda: o.grad_fn))
    return heads


@differential
def test_full_hooks_only_and_forward_registers_an_output_replacing_hook(T):
    """A module whose only hooks are full backward hooks registers, in its first forward, a forward
    hook that replaces the output: it runs in that call, and the backward hooks see the gradient
    w.r.t. the replaced output (the backward set-up wraps what the forward hooks returned)."""
    log = []

    class Registers(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = T.nn.Parameter(T.tensor([1.5, -2.0]))

        def forward(self, x):
            if not self._forward_hooks:
                self.register_forward_hook(lambda m, a, o: o * 3)
            return x * self.w

    mod = Registers()
    mod.register_full_backward_hook(lambda m, gi, go: log.append(("bw", gi, go)))
    x = T.tensor([0.5, 1.0], requires_grad=True)
    out = mod(x)
    (out * T.tensor([1.0, 2.0])).sum().backward()
    return out, log, x.grad, mod.w.grad, out.grad_fn.name()


@pytest.mark.parametrize("calls_counted", [False, True])
def test_full_hooks_only_output_warning_points_at_the_callers_line(calls_counted):
    """However many hookgrad frames lie between (hookgrad.hooks counts calls through extra ones)."""
    import sys
    import warnings

    import hookgrad
    import hookgrad.hooks  # noqa: F401 - loading it turns call counting on
    from hookgrad.autograd import _hook_context
    was_on, _hook_context.ON[0] = _hook_context.ON[0], calls_counted

    class Dict(hookgrad.nn.Module):
        def forward(self, x):
            return {"y": x * 2}

    mod = Dict()
    mod.register_full_backward_hook(lambda m, gi, go: None)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            line = sys._getframe().f_lineno + 1
            mod(hookgrad.ones(2, requires_grad=True))
    finally:
        _hook_context.ON[0] = was_on
    [w] = [w for w in caught if "module output should be" in str(w.message)]
    assert (w.filename, w.lineno) == (__file__, line)


def test_one_tensor_view_and_node_match_the_general_steps():
    """_view_through_new_node writes out Node.__init__, edge and _identity_view for one-tensor calls:
    its node and view must have every slot those set, with the same values where they do not differ."""
    import hookgrad
    from hookgrad._ops._base import edge
    from hookgrad._tensor import Tensor
    from hookgrad.autograd.graph import Node
    from hookgrad.nn.modules._backward_hook import _OneOutputNode, _identity_view, _view_through_new_node

    def slots(cls):
        return [n for c in cls.__mro__ for n in getattr(c, "__slots__", ()) if n not in ("__weakref__", "__dict__")]

    leaf = hookgrad.ones(2, 3, requires_grad=True)
    sources = {"leaf": leaf, "non-leaf": leaf * 2, "view": (leaf * 2)[0], "view of a leaf": leaf[1]}
    for what, t in sources.items():
        view, node = _view_through_new_node(t, _OneOutputNode, "owner")
        reference = object.__new__(_OneOutputNode)
        Node.__init__(reference, (edge(t),))
        for name in slots(Node):
            assert hasattr(node, name) == hasattr(reference, name), (what, name)
            if name != "_seq" and hasattr(reference, name):
                assert getattr(node, name) == getattr(reference, name), (what, name)
        assert node._seq == reference._seq - 1 and node._num_outputs == 1 and node.owner == "owner"
        expected = _identity_view(t, node, 0)
        for name in slots(Tensor):
            if name != "_ndarray":
                assert getattr(view, name) is getattr(expected, name) or getattr(view, name) == getattr(expected, name), (what, name)
        assert view.__dict__ == expected.__dict__
        assert view._ndarray.base is expected._ndarray.base and view._ndarray is not t._ndarray


def test_identity_view_sets_every_tensor_slot():
    """The identity views of full backward hooks are built slot by slot (not through wrap): every
    slot a tensor made by wrap has must be set, to the same value where the view does not differ."""
    import hookgrad
    from hookgrad._tensor import Tensor, wrap
    from hookgrad.nn.modules._backward_hook import _identity_view

    slots = [n for cls in Tensor.__mro__ for n in getattr(cls, "__slots__", ())
             if n not in ("__weakref__", "__dict__")]
    node = (hookgrad.ones(2, requires_grad=True) * 2).grad_fn
    for requires_grad in (True, False):
        t = hookgrad.ones(2, 3, requires_grad=requires_grad)
        plain = wrap(t._ndarray.view())
        view = _identity_view(t, node, 0)
        for name in slots:
            assert hasattr(view, name), name
            if name not in ("_ndarray", "_base_value", "_version_counter", "_grad_fn_value", "_requires_grad"):
                assert getattr(view, name) == getattr(plain, name), name
        assert view._base is t and view._version_counter is t._version_counter
        assert (view._grad_fn is node) == requires_grad and view._requires_grad == requires_grad
        assert view._ndarray.base is t._ndarray and view.shape == t.shape


def test_backward_hook_made_inline_matches_init(monkeypatch):
    """Module._call_with_hooks makes the BackwardHook of a call with only full backward hooks
    without calling __init__: it must hold what __init__ would store, and nothing else."""
    import hookgrad
    from hookgrad.autograd import _hook_context
    from hookgrad.nn.modules import module as module_mod

    # that path is taken while no other kind of hook exists anywhere and hookgrad.hooks' contexts
    # are off: the module-wide registries are emptied for this test (others may have filled them)
    monkeypatch.setattr(_hook_context, "ON", [False])
    from collections import OrderedDict
    for name in ("_global_backward_pre_hooks", "_global_backward_hooks", "_global_forward_pre_hooks",
                 "_global_forward_hooks", "live_hook_ids"):
        monkeypatch.setattr(module_mod, name, OrderedDict())
    monkeypatch.setattr(module_mod, "_global_is_full_backward_hook", None)
    from hookgrad.nn.modules._backward_hook import BackwardHook

    made = []
    real_setup = BackwardHook.setup_input_hook

    def spy(self, args):
        made.append(self)
        return real_setup(self, args)

    lin = hookgrad.nn.Linear(3, 2)
    hook = lambda m, gi, go: None  # noqa: E731
    lin.register_full_backward_hook(hook)
    BackwardHook.setup_input_hook = spy
    try:
        lin(hookgrad.ones(4, 3, requires_grad=True)).sum().backward()
    finally:
        BackwardHook.setup_input_hook = real_setup
    (inline,) = made
    reference = BackwardHook(lin, [hook], module_mod._NO_PRE_HOOKS, module_mod._dispatch)
    before_setup = {k: v for k, v in inline.__dict__.items()
                    if k in ("user_hooks", "user_pre_hooks", "module", "dispatch")}
    assert before_setup == reference.__dict__
    assert set(inline.__dict__) - set(reference.__dict__) <= {
        "n_inputs", "input_tensors_index", "n_outputs", "output_tensors_index", "grad_outputs"}


@differential
def test_engine_warning_reaches_code_run_by_exec_without_a_module_name(T):
    """Code exec'd with globals that have no ``__name__`` (a notebook runner, a test harness) still
    sees the warnings the backward pass raises at its line, under an "always" filter."""
    import warnings
    code = ("m = T.nn.Linear(2, 2)\nm.register_full_backward_hook(lambda *a: None)\n"
            "m(T.ones(1, 2)).sum().backward()\n")
    exec("x = T.ones(3, requires_grad=True)\n(x * x).sum().backward()", {"T": T})  # an earlier pass
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(code, {"T": T})
    return [(w.category.__name__, str(w.message)[:70], w.filename, w.lineno) for w in caught]


@pytest.mark.parametrize("kind", ["pre", "full"])
@pytest.mark.parametrize("change", ["size", "type"])
@differential
def test_a_backward_hook_changing_a_gradient_is_named_as_torch_names_it(T, kind, change):
    """The size and type errors quote the hook's ``__name__`` (torch's wording; context may follow),
    and the module runs again once the hook is removed."""
    lin = T.nn.Linear(3, 2).double()
    with T.no_grad():
        lin.weight.copy_(T.tensor([[0.5, -1.0, 0.25], [1.5, 0.75, -0.5]], dtype=T.float64))

    def reshaping_hook(module, *grads):
        g = grads[-1][0]
        return (g.unsqueeze(0) if change == "size" else g.float(),) if kind == "pre" else \
            (grads[0][0].unsqueeze(0) if change == "size" else grads[0][0].float(),)
    register = lin.register_full_backward_pre_hook if kind == "pre" else lin.register_full_backward_hook
    handle = register(reshaping_hook)
    x = T.ones(2, 3, dtype=T.float64, requires_grad=True)
    raised = catch(lambda: lin(x).sum().backward())
    handle.remove()
    lin(x).sum().backward()
    return raised.cls, raised.message.split(" of value")[0], x.grad
