"""Differential tests of module forward pre-hooks and forward hooks (local and global):
order, arguments, return-value rules, kwargs, always_call, removal, errors and warnings; hook objects
of several callable kinds, hooks surviving deepcopy, and global registration hooks seen by containers."""
from __future__ import annotations

import copy
import functools
import gc
import weakref

import pytest

from difftest import catch, differential, warns
from test_module_fixtures import clean_globals, leaf, mods, shapes


# ------------------------------------------------------------------------------------------
# forward pre-hooks
# ------------------------------------------------------------------------------------------
@differential
def test_pre_hook_sees_positional_args_only(T):
    log = []
    mod = mods(T).Two()
    mod.register_forward_pre_hook(lambda m, args: log.append((type(m).__name__, len(args), args)))
    x = leaf(T)
    out = mod(x, x * 2, scale=3.0)
    return log, out


@differential
def test_pre_hook_returning_tuple_replaces_args(T):
    mod = mods(T).Two()
    mod.register_forward_pre_hook(lambda m, args: (args[0] + 1, args[1]))
    return mod(leaf(T), leaf(T))


@differential
def test_pre_hook_single_value_is_wrapped(T):
    mod = mods(T).Scale()
    mod.register_forward_pre_hook(lambda m, args: args[0] * 10)
    return mod(leaf(T))


@differential
def test_pre_hook_returning_list_is_wrapped_as_one_arg(T):
    seen = []
    mod = mods(T).Identity()
    mod.register_forward_pre_hook(lambda m, args: [1, 2])
    mod.register_forward_pre_hook(lambda m, args: seen.append(args))
    return mod(leaf(T)), seen


@differential
def test_pre_hooks_chain_in_registration_order(T):
    log = []
    mod = mods(T).Scale()
    mod.register_forward_pre_hook(lambda m, a: log.append("a") or (a[0] + 1,))
    mod.register_forward_pre_hook(lambda m, a: log.append("b") or (a[0] * 2,))
    mod.register_forward_pre_hook(lambda m, a: log.append(("c", a[0])))
    return mod(T.tensor([1.0])), log


@differential
def test_pre_hook_prepend(T):
    log = []
    mod = mods(T).Scale()
    mod.register_forward_pre_hook(lambda m, a: log.append("first"))
    mod.register_forward_pre_hook(lambda m, a: log.append("prepended"), prepend=True)
    mod.register_forward_pre_hook(lambda m, a: log.append("last"))
    mod.register_forward_pre_hook(lambda m, a: log.append("prepended2"), prepend=True)
    mod(leaf(T))
    return log


@differential
def test_pre_hook_with_kwargs_receives_kwargs(T):
    log = []
    mod = mods(T).Two()
    mod.register_forward_pre_hook(lambda m, a, kw: log.append((len(a), dict(kw))), with_kwargs=True)
    mod(leaf(T), leaf(T), scale=2.0)
    mod(leaf(T), leaf(T))
    return log


@differential
def test_pre_hook_with_kwargs_replaces_args_and_kwargs(T):
    mod = mods(T).Two()
    mod.register_forward_pre_hook(lambda m, a, kw: ((a[0], a[0]), {"scale": 5.0}), with_kwargs=True)
    return mod(T.tensor([2.0]), T.tensor([100.0]), scale=1.0)


@pytest.mark.parametrize("ret", ["tuple3", "not_tuple", "list2"])
@differential
def test_pre_hook_with_kwargs_bad_return_raises(T, ret):
    mod = mods(T).Two()
    value = {"tuple3": lambda a, kw: (a, kw, 1), "not_tuple": lambda a, kw: a[0],
             "list2": lambda a, kw: [a, kw]}[ret]
    mod.register_forward_pre_hook(lambda m, a, kw: value(a, kw), with_kwargs=True)
    return catch(mod, leaf(T), leaf(T))


@differential
def test_pre_hook_removed_with_handle(T):
    log = []
    mod = mods(T).Scale()
    h = mod.register_forward_pre_hook(lambda m, a: log.append(1))
    mod(leaf(T))
    h.remove()
    mod(leaf(T))
    h.remove()  # idempotent
    return log, len(mod._forward_pre_hooks), len(mod._forward_pre_hooks_with_kwargs)


@differential
def test_pre_hook_with_kwargs_removal_clears_flag(T):
    mod = mods(T).Scale()
    h = mod.register_forward_pre_hook(lambda m, a, k: None, with_kwargs=True)
    before = len(mod._forward_pre_hooks_with_kwargs)
    h.remove()
    return before, len(mod._forward_pre_hooks_with_kwargs)


@differential
def test_handle_as_context_manager(T):
    log = []
    mod = mods(T).Scale()
    with mod.register_forward_pre_hook(lambda m, a: log.append("in")):
        mod(leaf(T))
    mod(leaf(T))
    return log


@differential
def test_pre_hook_exception_propagates(T):
    mod = mods(T).Scale()

    def bad(m, a):
        raise KeyError("nope")

    mod.register_forward_pre_hook(bad)
    return catch(mod, leaf(T))


@differential
def test_hook_removing_itself_during_call(T):
    log = []
    mod = mods(T).Scale()
    handles = []

    def once(m, a):
        log.append("once")
        handles[0].remove()

    handles.append(mod.register_forward_pre_hook(once))
    mod.register_forward_pre_hook(lambda m, a: log.append("other"))
    mod(leaf(T))
    mod(leaf(T))
    return log


@differential
def test_hook_registered_during_call_runs_next_time(T):
    log = []
    mod = mods(T).Scale()

    def adder(m, a):
        log.append("adder")
        if len(log) < 2:
            m.register_forward_pre_hook(lambda m2, a2: log.append("added"))

    mod.register_forward_pre_hook(adder)
    mod(leaf(T))
    mod(leaf(T))
    return log


# ------------------------------------------------------------------------------------------
# forward hooks
# ------------------------------------------------------------------------------------------
@differential
def test_forward_hook_sees_args_and_output(T):
    log = []
    mod = mods(T).Two()
    mod.register_forward_hook(lambda m, a, out: log.append((len(a), a[0], out)))
    mod(leaf(T), leaf(T), scale=2.0)
    return log


@differential
def test_forward_hook_sees_args_modified_by_pre_hook(T):
    log = []
    mod = mods(T).Scale()
    mod.register_forward_pre_hook(lambda m, a: (a[0] * 0,))
    mod.register_forward_hook(lambda m, a, out: log.append((a, out)))
    mod(leaf(T))
    return log


@differential
def test_forward_hook_replaces_output(T):
    mod = mods(T).Scale()
    mod.register_forward_hook(lambda m, a, out: out * 100)
    mod.register_forward_hook(lambda m, a, out: None)
    mod.register_forward_hook(lambda m, a, out: out + 1)
    return mod(leaf(T))


@differential
def test_forward_hook_can_return_non_tensor(T):
    mod = mods(T).Scale()
    mod.register_forward_hook(lambda m, a, out: "replaced")
    return mod(leaf(T))


@differential
def test_forward_hook_prepend(T):
    log = []
    mod = mods(T).Scale()
    mod.register_forward_hook(lambda m, a, o: log.append(1))
    mod.register_forward_hook(lambda m, a, o: log.append(0), prepend=True)
    mod.register_forward_hook(lambda m, a, o: log.append(2))
    mod(leaf(T))
    return log


@differential
def test_forward_hook_with_kwargs(T):
    log = []
    mod = mods(T).Two()
    mod.register_forward_hook(lambda m, a, kw, out: log.append((dict(kw), out)), with_kwargs=True)
    mod.register_forward_hook(lambda m, a, kw, out: out * 0 + kw.get("scale", -1), with_kwargs=True)
    res = mod(T.tensor([1.0]), T.tensor([2.0]), scale=4.0)
    return log, res


@differential
def test_forward_hook_removal_clears_extra_dicts(T):
    mod = mods(T).Scale()
    h = mod.register_forward_hook(lambda m, a, k, o: None, with_kwargs=True, always_call=True)
    before = (len(mod._forward_hooks), len(mod._forward_hooks_with_kwargs), len(mod._forward_hooks_always_called))
    h.remove()
    after = (len(mod._forward_hooks), len(mod._forward_hooks_with_kwargs), len(mod._forward_hooks_always_called))
    return before, after


@differential
def test_forward_hook_exception_propagates(T):
    mod = mods(T).Scale()

    def bad(m, a, o):
        raise IndexError("bad")

    mod.register_forward_hook(bad)
    return catch(mod, leaf(T))


@differential
def test_nested_modules_hook_order(T):
    log = []
    net = mods(T).Net()
    for name, sub in net.named_modules():
        label = name or "net"
        sub.register_forward_pre_hook(lambda m, a, label=label: log.append(("pre", label)))
        sub.register_forward_hook(lambda m, a, o, label=label: log.append(("post", label)))
    net(leaf(T))
    return log


@differential
def test_repeated_calls_fire_each_time(T):
    log = []
    outer = mods(T).Twice()
    outer.inner.register_forward_pre_hook(lambda m, a: log.append(("pre", a[0])))
    outer.inner.register_forward_hook(lambda m, a, o: log.append(("post", o)))
    outer(T.tensor([1.0]))
    return log


@differential
def test_hooks_receive_module_itself(T):
    mod = mods(T).Scale()
    seen = []
    mod.register_forward_pre_hook(lambda m, a: seen.append(m is mod))
    mod.register_forward_hook(lambda m, a, o: seen.append(m is mod))
    mod(leaf(T))
    return seen


@differential
def test_forward_hooks_under_no_grad(T):
    log = []
    mod = mods(T).Scale()
    mod.register_forward_hook(lambda m, a, o: log.append(o.requires_grad))
    with T.no_grad():
        mod(leaf(T))
    mod(leaf(T))
    return log


@differential
def test_calling_forward_directly_skips_hooks(T):
    log = []
    mod = mods(T).Scale()
    mod.register_forward_pre_hook(lambda m, a: log.append("pre"))
    mod.register_forward_hook(lambda m, a, o: log.append("post"))
    mod.forward(leaf(T))
    return log


# ------------------------------------------------------------------------------------------
# always_call
# ------------------------------------------------------------------------------------------
@differential
def test_always_call_runs_when_forward_raises(T):
    log = []
    mod = mods(T).Fail()
    mod.register_forward_hook(lambda m, a, o: log.append(("always", o)), always_call=True)
    mod.register_forward_hook(lambda m, a, o: log.append("normal"))
    return catch(mod, leaf(T)), log


@differential
def test_always_call_with_kwargs_on_error(T):
    log = []
    mod = mods(T).Fail()
    mod.register_forward_hook(lambda m, a, kw, o: log.append(("kw", dict(kw), o)), with_kwargs=True,
                              always_call=True)
    return catch(mod, leaf(T)), log


@differential
def test_always_call_hook_error_becomes_warning(T):
    mod = mods(T).Fail()

    def bad(m, a, o):
        raise RuntimeError("hook failed too")

    mod.register_forward_hook(bad, always_call=True)
    return warns(mod, leaf(T))


@differential
def test_always_call_not_rerun_when_later_hook_raises(T):
    log = []
    mod = mods(T).Scale()
    mod.register_forward_hook(lambda m, a, o: log.append("always"), always_call=True)

    def bad(m, a, o):
        log.append("bad")
        raise ValueError("late")

    mod.register_forward_hook(bad)
    mod.register_forward_hook(lambda m, a, o: log.append("always2"), always_call=True)
    return catch(mod, leaf(T)), log


@differential
def test_always_call_when_pre_hook_raises(T):
    log = []
    mod = mods(T).Scale()

    def bad(m, a):
        raise ValueError("pre failed")

    mod.register_forward_pre_hook(bad)
    mod.register_forward_hook(lambda m, a, o: log.append(("always", o)), always_call=True)
    return catch(mod, leaf(T)), log


# ------------------------------------------------------------------------------------------

@differential
def test_plain_forward_hooks_replace_in_turn_and_an_always_call_hook_added_midway_sees_the_latest(T):
    """Plain forward hooks only (the fast path): each sees the result the one before returned; one
    of them adds an always_call hook and a later one raises: the new hook runs once on the error
    path with the result as the hooks before the error left it; removal during the loop does not
    stop a hook already listed for this call."""
    log = []
    mod = mods(T).Scale()
    handles = {}

    def double(m, a, o):
        log.append(("double", o.detach().clone()))
        handles["late"].remove()
        return o * 2

    def add_always(m, a, o):
        log.append(("add", o.detach().clone()))
        m.register_forward_hook(lambda m2, a2, o2: log.append(("always", o2.detach().clone())), always_call=True)

    def late(m, a, o):
        log.append(("late", o.detach().clone()))
        raise ValueError("late")

    mod.register_forward_hook(double)
    mod.register_forward_hook(add_always)
    handles["late"] = mod.register_forward_hook(late)
    first = catch(mod, leaf(T))
    second = mod(leaf(T))  # late was removed; the always_call hook now runs as a plain one
    return first, second, log

# global forward hooks
# ------------------------------------------------------------------------------------------
@differential
def test_global_pre_hook_runs_before_local(T):
    log = []
    mod = mods(T).Scale()
    mod.register_forward_pre_hook(lambda m, a: log.append("local"), prepend=True)
    with clean_globals(T) as mm:
        h = mm.register_module_forward_pre_hook(lambda m, a: log.append(("global", type(m).__name__)))
        mod(leaf(T))
        h.remove()
        mod(leaf(T))
    return log


@differential
def test_global_forward_hook_runs_before_local(T):
    log = []
    mod = mods(T).Scale()
    mod.register_forward_hook(lambda m, a, o: log.append("local"), prepend=True)
    with clean_globals(T) as mm:
        h = mm.register_module_forward_hook(lambda m, a, o: log.append("global"))
        mod(leaf(T))
        h.remove()
    return log


@differential
def test_global_hooks_fire_for_every_module(T):
    log = []
    net = mods(T).Net()
    with clean_globals(T) as mm:
        mm.register_module_forward_pre_hook(lambda m, a: log.append(("pre", type(m).__name__)))
        mm.register_module_forward_hook(lambda m, a, o: log.append(("post", type(m).__name__, tuple(o.shape))))
        net(leaf(T))
    return log


@differential
def test_global_pre_hook_return_replaces_args(T):
    mod = mods(T).Scale()
    with clean_globals(T) as mm:
        mm.register_module_forward_pre_hook(lambda m, a: a[0] + 100)
        out = mod(T.tensor([1.0]))
    return out


@differential
def test_global_forward_hook_return_replaces_output(T):
    mod = mods(T).Scale()
    with clean_globals(T) as mm:
        mm.register_module_forward_hook(lambda m, a, o: o * -1)
        out = mod(T.tensor([1.0]))
    return out


@differential
def test_global_forward_hook_with_kwargs(T):
    log = []
    mod = mods(T).Two()
    with clean_globals(T) as mm:
        mm.register_module_forward_hook(lambda m, a, kw, o: log.append(dict(kw)), with_kwargs=True)
        mod(T.tensor([1.0]), T.tensor([1.0]), scale=2.0)
    return log


@differential
def test_global_forward_hook_with_kwargs_flag_leaks_after_remove(T):
    # PyTorch quirk: the handle only tracks the always_call dict, not the with_kwargs dict.
    with clean_globals(T) as mm:
        h = mm.register_module_forward_hook(lambda m, a, kw, o: None, with_kwargs=True)
        hid = h.id
        h.remove()
        leaked = hid in mm._global_forward_hooks_with_kwargs
        mm._global_forward_hooks_with_kwargs.pop(hid, None)
    return leaked


@differential
def test_global_always_call_ignores_with_kwargs_on_error(T):
    log = []
    mod = mods(T).Fail()
    with clean_globals(T) as mm:
        def hook(*args):
            log.append(len(args))

        mm.register_module_forward_hook(hook, with_kwargs=True, always_call=True)
        res = catch(mod, leaf(T))
    return res, log


@differential
def test_global_always_call_error_warns(T):
    mod = mods(T).Fail()
    with clean_globals(T) as mm:
        def bad(m, a, o):
            raise RuntimeError("x")

        mm.register_module_forward_hook(bad, always_call=True)
        res = warns(mod, leaf(T))
    return res


@differential
def test_global_and_local_always_call_order_on_error(T):
    log = []
    mod = mods(T).Fail()
    mod.register_forward_hook(lambda m, a, o: log.append("local"), always_call=True)
    with clean_globals(T) as mm:
        mm.register_module_forward_hook(lambda m, a, o: log.append("global"), always_call=True)
        res = catch(mod, leaf(T))
    return res, log


@differential
def test_global_pre_hook_with_kwargs_id_not_honoured(T):
    # A global forward pre-hook never receives kwargs.
    log = []
    mod = mods(T).Two()
    with clean_globals(T) as mm:
        mm.register_module_forward_pre_hook(lambda *a: log.append(len(a)))
        mod(T.tensor([1.0]), T.tensor([1.0]), scale=3.0)
    return log


# ------------------------------------------------------------------------------------------
# handles, weak references, fast path, observer
# ------------------------------------------------------------------------------------------
@differential
def test_handle_ids_increase_across_kinds(T):
    mod = mods(T).Scale()
    hs = [mod.register_forward_pre_hook(lambda m, a: None), mod.register_forward_hook(lambda m, a, o: None),
          mod.register_full_backward_hook(lambda m, gi, go: None),
          mod.register_full_backward_pre_hook(lambda m, go: None)]
    ids = [h.id for h in hs]
    return [b - a for a, b in zip(ids, ids[1:])]


@differential
def test_hooked_module_is_freed(T):
    mod = mods(T).Net()
    handles = [mod.register_forward_pre_hook(lambda m, a: None),
               mod.register_forward_hook(lambda m, a, o: None),
               mod.register_full_backward_hook(lambda m, gi, go: None),
               mod.fc1.register_full_backward_pre_hook(lambda m, go: None),
               mod.register_state_dict_pre_hook(lambda m, p, k: None),
               mod.register_load_state_dict_pre_hook(lambda *a: None)]
    out = mod(leaf(T))
    out.sum().backward()
    ref = weakref.ref(mod)
    del mod, out
    gc.collect()
    dead = ref() is None
    for h in handles:
        h.remove()  # harmless after the module is gone
    return dead


@differential
def test_module_with_self_referencing_hook_is_freed(T):
    mod = mods(T).Scale()
    mod.register_forward_hook(lambda m, a, o: mod)  # a cycle through the hook
    ref = weakref.ref(mod)
    del mod
    gc.collect()
    return ref() is None


def test_fast_path_without_hooks_calls_forward_only():
    import hookgrad

    mm = hookgrad.nn.modules.module
    calls = []

    class M(hookgrad.nn.Module):
        def forward(self, x):
            calls.append(x)
            return x

    m = M()
    # No hooks anywhere: __call__ must not enter the slow path.
    original = hookgrad.nn.Module._call_impl
    try:
        hookgrad.nn.Module._call_impl = lambda self, *a, **k: (_ for _ in ()).throw(AssertionError("slow"))
        assert not mm._has_any_global_hook()
        assert m(3) == 3
    finally:
        hookgrad.nn.Module._call_impl = original
    assert calls == [3]


def test_hook_observer_reports_dispatches():
    import hookgrad

    mm = hookgrad.nn.modules.module
    events = []
    prev = mm._set_hook_observer(lambda kind, module, hook, start, end: events.append((kind, type(module).__name__, end >= start)))
    try:
        mod = mods(hookgrad).Scale()
        mod.register_forward_pre_hook(lambda m, a: None)
        mod.register_forward_hook(lambda m, a, o: None)
        mod.register_full_backward_pre_hook(lambda m, go: None)
        mod.register_full_backward_hook(lambda m, gi, go: None)
        mod(leaf(hookgrad)).sum().backward()
        mod.state_dict()
    finally:
        mm._set_hook_observer(prev)
    assert [e[0] for e in events] == ["forward_pre_hook", "forward_hook", "full_backward_pre_hook",
                                      "full_backward_hook"]
    assert all(e[1] == "Scale" and e[2] for e in events)
    # unset: nothing more is reported
    mod(leaf(hookgrad))
    assert len(events) == 4


def test_hook_observer_sees_hook_that_raises():
    import hookgrad

    mm = hookgrad.nn.modules.module
    events = []
    prev = mm._set_hook_observer(lambda *e: events.append(e[0]))
    try:
        mod = mods(hookgrad).Scale()

        def bad(m, a):
            raise ValueError("x")

        mod.register_forward_pre_hook(bad)
        with pytest.raises(ValueError):
            mod(leaf(hookgrad))
    finally:
        mm._set_hook_observer(prev)
    assert events == ["forward_pre_hook"]


def test_global_registration_functions_exposed_in_nn():
    # hookgrad.nn also offers the global register_module_* functions (as user documents call them);
    # torch keeps them in torch.nn.modules.module only.
    import hookgrad

    mm = hookgrad.nn.modules.module
    for name in mm.__all__:
        if name.startswith("register_module_"):
            assert getattr(hookgrad.nn, name) is getattr(mm, name)


@differential
def test_module_module_all(T):
    return sorted(T.nn.modules.module.__all__)


@differential
def test_subclass_overriding_call_impl_is_used(T):
    log = []

    class Traced(T.nn.Module):
        def forward(self, x):
            return x * 2

        def _call_impl(self, *args, **kwargs):
            log.append("call_impl")
            return super()._call_impl(*args, **kwargs)

    class Child(Traced):
        pass

    out = Traced()(T.tensor([1.0]))
    out2 = Child()(T.tensor([2.0]))
    return log, out, out2


# ------------------------------------------------------------------------------------------
# forward hooks in unusual places: hooks inside hooks, replaced inputs, mixed kinds
# ------------------------------------------------------------------------------------------

@differential
def test_pre_hook_changes_input_requiring_grad(T):
    log = []
    mod = mods(T).Scale()
    mod.register_forward_pre_hook(lambda m, a: (a[0].detach(),))
    mod.register_full_backward_hook(lambda m, gi, go: log.append(gi))
    x = leaf(T)
    res = warns(lambda: mod(x).sum().backward())
    return res, log, x.grad


@differential
def test_forward_pre_hook_kwargs_and_plain_mixed_order(T):
    log = []
    mod = mods(T).Two()
    mod.register_forward_pre_hook(lambda m, a: log.append("plain1"))
    mod.register_forward_pre_hook(lambda m, a, kw: log.append("kw") or (a, {"scale": 3.0}), with_kwargs=True,
                                  prepend=True)
    mod.register_forward_pre_hook(lambda m, a: log.append("plain2"))
    out = mod(T.tensor([1.0]), T.tensor([2.0]))
    return log, out


@differential
def test_hooks_fire_for_module_inside_hook(T):
    log = []
    inner = mods(T).Scale()
    outer = mods(T).Scale()
    inner.register_forward_hook(lambda m, a, o: log.append("inner"))
    outer.register_forward_hook(lambda m, a, o: log.append("outer") or inner(o))
    res = outer(T.tensor([1.0]))
    return log, res


@differential
def test_always_call_hook_result_replaces_on_error(T):
    # A result returned by an always_call hook on the error path is discarded (the error wins).
    mod = mods(T).Fail()
    mod.register_forward_hook(lambda m, a, o: "value", always_call=True)
    return catch(mod, leaf(T))


@differential
def test_global_forward_hook_sees_containers(T):
    log = []
    m = mods(T)
    seq = T.nn.Sequential(m.Scale(), T.nn.Sequential(m.Relu(), m.Identity()))
    with clean_globals(T) as mm:
        mm.register_module_forward_hook(lambda mod, a, o: log.append(type(mod).__name__))
        seq(leaf(T))
    return log


@differential
def test_global_always_call_removal_clears_flag(T):
    with clean_globals(T) as mm:
        h = mm.register_module_forward_hook(lambda m, a, o: None, always_call=True)
        before = h.id in mm._global_forward_hooks_always_called
        h.remove()
        after = h.id in mm._global_forward_hooks_always_called
    return before, after


# ------------------------------------------------------------------------------------------
# hook objects of several callable kinds; hooks surviving deepcopy
# ------------------------------------------------------------------------------------------

@differential
def test_hook_forms_partial_and_bound_method(T):
    log = []

    class Recorder:
        def __init__(self):
            self.n = 0

        def fwd(self, m, a, o):
            self.n += 1
            log.append(("method", self.n))

        def __call__(self, m, gi, go):
            log.append(("callable", shapes(gi)))

    def tagged(tag, m, a):
        log.append(("partial", tag))

    mod = mods(T).Scale()
    rec = Recorder()
    mod.register_forward_hook(rec.fwd)
    mod.register_forward_pre_hook(functools.partial(tagged, "t"))
    mod.register_full_backward_hook(rec)
    mod(leaf(T)).sum().backward()
    return log


@differential
def test_deepcopy_keeps_load_pre_hook_bound_to_copy(T):
    log = []
    m = mods(T).Scale()
    m.register_load_state_dict_pre_hook(lambda mod, *a: log.append(mod is m))
    c = copy.deepcopy(m)
    c.load_state_dict(c.state_dict())
    m.load_state_dict(m.state_dict())
    return log


# ------------------------------------------------------------------------------------------
# global registration hooks seen by containers
# ------------------------------------------------------------------------------------------

@differential
def test_registration_hook_sees_container_appends(T):
    log = []
    m = mods(T)
    with clean_globals(T) as mm:
        mm.register_module_module_registration_hook(lambda parent, n, c: log.append((type(parent).__name__, n)))
        seq = T.nn.Sequential(m.Relu())
        seq.append(m.Identity())
        ml = T.nn.ModuleList([m.Relu()])
        ml.extend([m.Relu()])
        md = T.nn.ModuleDict({"k": m.Relu()})
        seq[0] = m.Identity()
    return log


@differential
def test_parameter_registration_hook_sees_parameter_list(T):
    log = []
    with clean_globals(T) as mm:
        mm.register_module_parameter_registration_hook(lambda mod, n, p: log.append((type(mod).__name__, n)))
        pl = T.nn.ParameterList([T.tensor([1.0])])
        pd = T.nn.ParameterDict({"a": T.tensor([1.0])})
    return log


# ------------------------------------------------------------------------------------------
# hooks registered by the module's own forward
# ------------------------------------------------------------------------------------------
def _self_hooking(T, always_call=False, fail=False):
    """A module whose forward registers a forward hook on itself (once) and may then raise."""
    log = []

    class SelfHooking(T.nn.Module):
        def forward(self, x):
            if not getattr(self, "hooked", False):
                self.hooked = True
                self.register_forward_hook(lambda m, a, o: log.append(("fwd_hook", o)), always_call=always_call)
            if fail:
                raise ValueError("forward failed")
            return x * 2

    return SelfHooking(), log


@pytest.mark.parametrize("existing", ["none", "full_backward", "backward_pre", "forward_pre", "global_full"])
@differential
def test_forward_hook_registered_during_forward_fires_in_that_call(T, existing):
    mod, log = _self_hooking(T)
    with clean_globals(T) as mm:
        if existing == "full_backward":
            mod.register_full_backward_hook(lambda m, gi, go: log.append("bw"))
        elif existing == "backward_pre":
            mod.register_full_backward_pre_hook(lambda m, go: log.append("bw_pre"))
        elif existing == "forward_pre":
            mod.register_forward_pre_hook(lambda m, a: log.append("pre"))
        elif existing == "global_full":
            mm.register_module_full_backward_hook(lambda m, gi, go: log.append("global_bw"))
        first = mod(leaf(T))
        log.append("second call")
        second = mod(leaf(T))
        (first.sum() + second.sum()).backward()
    return log


@pytest.mark.parametrize("existing", ["none", "full_backward", "backward_pre"])
@differential
def test_always_call_hook_registered_during_failing_forward(T, existing):
    mod, log = _self_hooking(T, always_call=True, fail=True)
    if existing == "full_backward":
        mod.register_full_backward_hook(lambda m, gi, go: log.append("bw"))
    elif existing == "backward_pre":
        mod.register_full_backward_pre_hook(lambda m, go: log.append("bw_pre"))
    first = catch(mod, leaf(T))
    second = catch(mod, leaf(T))
    return log, first, second


@differential
def test_always_call_hooks_after_a_forward_hook_error_see_the_replaced_result(T):
    """When a forward hook raises, the always_call hooks that have not run yet get the result as
    the earlier forward hooks left it (a global hook's replacement included), as in torch."""
    log = []
    m = T.nn.Linear(2, 2).double()
    x = T.tensor([[1.0, -2.0]], dtype=T.float64)
    plain = m(x)
    h1 = T.nn.modules.module.register_module_forward_hook(lambda mod, args, out: out * 3)

    def failing(mod, args, out):
        log.append(("failing sees", out))
        raise ValueError("hook failed")

    m.register_forward_hook(failing, always_call=True)
    m.register_forward_hook(lambda mod, args, out: log.append(("always sees", out)), always_call=True)
    try:
        error = catch(lambda: m(x))
    finally:
        h1.remove()
    return error, [(what, out / plain) for what, out in log]


@differential
def test_always_call_hooks_after_a_pre_hook_error_see_the_args_earlier_pre_hooks_left(T):
    # fuzz seed 78533: a global pre-hook scaled the input, a local pre-hook then raised; the
    # always_call forward hook must see the scaled input, as torch's error path gives it
    lin = T.nn.Linear(3, 3)
    seen = []

    class Failed(Exception):
        pass

    def failing(module, args):
        raise Failed("pre-hook failed")

    lin.register_forward_pre_hook(failing)
    lin.register_forward_hook(lambda m, args, out: seen.append(args[0].clone()), always_call=True)
    handles = [T.nn.modules.module.register_module_forward_pre_hook(lambda m, args: (args[0] * 2,)),
               T.nn.modules.module.register_module_forward_pre_hook(lambda m, args: (args[0] + 1,))]
    try:
        x = T.tensor([[1.0, -2.0, 0.5]])
        outcome = catch(lin, x)
    finally:
        for handle in handles:
            handle.remove()
    return type(outcome).__name__, seen


@differential
def test_forward_pre_hook_handing_a_float_to_an_activation_raises_torchs_type_error(T):
    """A pre-hook replacing the input with a plain number: Sigmoid and Tanh raise torch's TypeError
    naming the argument, and the module runs again once the hook is removed."""
    results = []
    for module in (T.nn.Sigmoid(), T.nn.Tanh(), T.nn.Sequential(T.nn.Tanh())):
        handle = module.register_forward_pre_hook(lambda m, args: 1.5)
        raised = catch(module, T.ones(2))
        handle.remove()
        results.append((raised.cls, raised.message, module(T.zeros(2))))
    return results
