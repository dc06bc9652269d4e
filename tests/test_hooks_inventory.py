"""``hookgrad.hooks.inventory`` and ``hookgrad.hooks.remove``: every registered hook as a
``HookRecord``, removable in bulk. The same calls read torch's registries, so the scenarios run
differentially: the records (less what only hookgrad knows: where, and ``prepend``) and what
still fires after a bulk removal must be torch's."""
from __future__ import annotations

import importlib
import os
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hookgrad
import hookgrad.hooks as H
from difftest import Raised, catch, differential

HERE = os.path.basename(__file__)


def _summary(records, names):
    """What both frameworks can report: kind, scope, owner, flags (prepend is hookgrad's note) and
    which of the scenario's hooks the record holds."""
    return [(r.kind, r.scope, r.owner, sorted(r.flags - {"prepend"}), names.get(id(r.fn), "?"))
            for r in records]


def _model(T):
    T.manual_seed(0)
    return T.nn.Sequential(
        T.nn.Sequential(T.nn.Linear(3, 4), T.nn.ReLU()),
        T.nn.Linear(4, 2),
    )


def _register_everything(T, model, log):
    """One hook of each module and tensor kind, each logging its name when it fires; returns
    {id(hook): name}."""
    names = {}

    def make(name):
        def hook(*args, **kwargs):
            log.append(name)
        names[id(hook)] = name
        return hook

    enc, head = model[0][0], model[1]
    enc.register_forward_pre_hook(make("fpre"))
    enc.register_forward_pre_hook(make("fpre_kw"), with_kwargs=True)
    enc.register_forward_hook(make("fwd"))
    enc.register_forward_hook(make("fwd_always"), always_call=True)
    head.register_forward_hook(make("fwd_kw"), with_kwargs=True)
    head.register_full_backward_pre_hook(make("bpre"))
    head.register_full_backward_hook(make("bfull"))
    model[0].register_state_dict_pre_hook(make("sd_pre"))
    model.register_load_state_dict_post_hook(make("load_post"))
    model.register_load_state_dict_pre_hook(make("load_pre"))
    enc.weight.register_hook(make("w_hook"))
    head.bias.register_post_accumulate_grad_hook(make("b_acc"))
    return names


@differential
def test_inventory_of_a_module_tree_lists_its_hooks_and_its_parameters_hooks(T):
    model = _model(T)
    names = _register_everything(T, model, [])
    return _summary(H.inventory(model), names)


@differential
def test_inventory_of_a_submodule_names_owners_from_there(T):
    model = _model(T)
    names = _register_everything(T, model, [])
    return _summary(H.inventory(model[0]), names), _summary(H.inventory(model[1]), names)


@differential
def test_legacy_backward_hooks_are_listed_as_backward_hook(T):
    lin = T.nn.Linear(2, 2)

    def legacy(module, gi, go):
        return None
    lin.register_backward_hook(legacy)
    return _summary(H.inventory(lin), {id(legacy): "legacy"})


@pytest.mark.parametrize("kind", [None, "forward_hook", ["tensor_hook", "post_accumulate_grad_hook"],
                                  "full_backward_hook", "load_state_dict_pre_hook"])
@differential
def test_bulk_removal_stops_exactly_the_removed_hooks(T, kind):
    model = _model(T)
    log = []
    names = _register_everything(T, model, log)
    count = H.remove(model, kind=kind)
    left = _summary(H.inventory(model), names)
    x = T.randn(5, 3, requires_grad=True)
    model(x).sum().backward()
    model.load_state_dict(model.state_dict())
    return count, left, log


@differential
def test_removal_by_predicate_and_handles_stay_harmless(T):
    model = _model(T)
    log = []
    names = _register_everything(T, model, [])
    handle = model[1].register_forward_hook(lambda *a: log.append("kept"))
    count = H.remove(model, where=lambda r: r.owner == "0.0" or r.kind == "full_backward_pre_hook")
    handle.remove()  # a handle whose hook is gone or present: both fine
    again = H.remove(model, where=lambda r: r.owner == "0.0")
    model(T.randn(1, 3)).sum()
    return count, again, _summary(H.inventory(model), names), log


@differential
def test_tensor_hooks_of_a_plain_tensor(T):
    x = T.randn(3, requires_grad=True)
    y = x * 2
    log = []

    def leaf_hook(g):
        log.append("leaf")

    def mid_hook(g):
        log.append("mid")
    x.register_hook(leaf_hook)
    y.register_hook(mid_hook)
    names = {id(leaf_hook): "leaf", id(mid_hook): "mid"}
    records = [(r.kind, r.scope, names.get(id(r.fn))) for r in H.inventory(x, y)]
    n = H.remove(y)
    y.sum().backward()
    return records, n, log


@differential
def test_global_hooks_of_the_framework(T):
    log = []

    def fwd(*a):
        log.append("global fwd")

    def step_pre(*a):
        log.append("global step")
    handles = [T.nn.modules.module.register_module_forward_hook(fwd, always_call=True),
               importlib.import_module(T.__name__ + ".optim.optimizer").register_optimizer_step_pre_hook(step_pre)]
    try:
        names = {id(fwd): "fwd", id(step_pre): "step_pre"}
        listed = [s for s in _summary(H.inventory(T), names) if s[-1] != "?"]
        lin = T.nn.Linear(2, 2)
        opt = T.optim.SGD(lin.parameters(), lr=0.1)
        n = H.remove(T, where=lambda r: id(r.fn) in names)
        lin(T.ones(1, 2)).sum().backward()
        opt.step()
        return listed, n, log
    finally:
        for h in handles:
            h.remove()


@differential
def test_optimizer_hooks(T):
    lin = T.nn.Linear(2, 1)
    opt = T.optim.SGD(lin.parameters(), lr=0.1)
    log = []
    hooks = {}
    for name, register in [("pre", opt.register_step_pre_hook), ("post", opt.register_step_post_hook),
                           ("sd_pre", opt.register_state_dict_pre_hook),
                           ("load_post", opt.register_load_state_dict_post_hook)]:
        def hook(*a, name=name):
            log.append(name)
        hooks[id(hook)] = name
        register(hook)
    listed = _summary(H.inventory(opt), hooks)
    n = H.remove(opt, kind=["optimizer_step_pre_hook", "optimizer_step_post_hook"])
    lin(T.ones(1, 2)).sum().backward()
    opt.step()
    opt.load_state_dict(opt.state_dict())
    return listed, n, log


# ---- what only hookgrad knows: where, prepend, live; node hooks ------------------------------------
def test_registered_at_is_the_users_line_and_prepend_is_a_flag():
    lin = hookgrad.nn.Linear(2, 2)
    line = sys._getframe().f_lineno + 1
    lin.register_forward_hook(lambda *a: None, prepend=True)
    x = hookgrad.ones(2, requires_grad=True)
    x.register_hook(lambda g: None)
    [fwd] = H.inventory(lin)
    assert fwd.registered_at == f"{HERE}:{line}"
    assert fwd.flags == {"prepend"}
    assert H.inventory(x)[0].registered_at == f"{HERE}:{line + 2}"


def test_registered_at_skips_hookgrad_frames_and_is_none_for_torch():
    import torch
    lin = hookgrad.nn.Linear(2, 2)
    line = sys._getframe().f_lineno + 1
    handle = hookgrad.autograd.graph.register_multi_grad_hook((lin.weight, lin.bias), lambda grads: None)
    assert {r.registered_at for r in H.inventory(lin)} == {f"{HERE}:{line}"}
    handle.remove()
    tlin = torch.nn.Linear(2, 2)
    tlin.register_forward_hook(lambda *a: None)
    assert H.inventory(tlin)[0].registered_at is None


def test_registration_sites_stay_bounded_and_live_hooks_keep_theirs():
    """A hook registered on a fresh tensor every step leaves no lasting trace: the notes of dead
    registries and removed hooks are swept out, those of live hooks stay."""
    import hookgrad.utils.hooks as uh
    lin = hookgrad.nn.Linear(2, 2)
    line = sys._getframe().f_lineno + 1
    lin.register_forward_hook(lambda *a: None)
    x = hookgrad.ones(2, requires_grad=True)
    removed = x.register_hook(lambda g: None)
    removed.remove()
    for _ in range(3 * uh._SWEEP_AT_LEAST):
        (x * 2).register_hook(lambda g: None)
    assert len(uh._registration_sites) <= max(uh._sweep_at[0], 2 * uh._SWEEP_AT_LEAST) + 1
    assert removed.id not in uh._registration_sites
    assert [r.registered_at for r in H.inventory(lin)] == [f"{HERE}:{line}"]
    y = x * 2
    y.register_hook(lambda g: None)
    assert H.inventory(y)[0].registered_at == f"{HERE}:{line + 10}"


def test_node_hooks_of_a_tensor_and_of_a_node():
    x = hookgrad.ones(2, requires_grad=True)
    y = x * 3
    log = []
    y.grad_fn.register_prehook(lambda g: log.append("pre"))
    y.grad_fn.register_hook(lambda gi, go: log.append("post"))
    records = H.inventory(y)
    assert [(r.kind, r.scope, r.owner) for r in records] == [("node_pre_hook", "node", "MulBackward0"),
                                                              ("node_hook", "node", "MulBackward0")]
    assert H.inventory(y.grad_fn) == records
    assert H.remove(y.grad_fn, kind="node_hook") == 1
    y.sum().backward()
    assert log == ["pre"]


def test_global_lifecycle_and_live_hooks_are_listed_and_removed():
    log = []
    start = H.register_backward_start_hook(lambda info: log.append("start"))
    live = hookgrad.nn.modules.module.register_module_full_backward_hook(lambda *a: log.append("live"), live=True)
    try:
        records = {(r.kind, frozenset(r.flags)) for r in H.inventory() if r.handle_id in (start.id, live.id)}
        assert records == {("backward_start_hook", frozenset()), ("full_backward_hook", frozenset({"live"}))}
        assert H.inventory(hookgrad) == H.inventory()
        assert H.remove(where=lambda r: r.handle_id in (start.id, live.id)) == 2
        from hookgrad.nn.modules._live_backward_hook import live_hook_ids
        assert live.id not in live_hook_ids
        lin = hookgrad.nn.Linear(2, 2)
        lin(hookgrad.ones(1, 2, requires_grad=True)).sum().backward()
        assert log == []
    finally:
        start.remove()
        live.remove()


def test_bad_input_raises_and_leaves_the_hooks_in_place():
    lin = hookgrad.nn.Linear(2, 2)
    lin.register_forward_hook(lambda *a: None)
    assert isinstance(catch(H.inventory, lin, object()), Raised)
    with pytest.raises(TypeError, match="expects modules, optimizers, tensors"):
        H.remove(lin, 42)
    with pytest.raises(ValueError, match="unknown hook kind"):
        H.remove(lin, kind="forward_hooks")
    with pytest.raises(TypeError, match="where must be a callable"):
        H.remove(lin, where="forward_hook")

    def picky(record):
        raise KeyError("no")
    with pytest.raises(KeyError):
        H.remove(lin, where=picky)
    assert len(H.inventory(lin)) == 1


def test_no_frame_walk_on_module_calls(monkeypatch):
    """Noting where a hook was registered happens in the register_* calls only, never in the
    per-call machinery of module backward hooks (default, live or legacy)."""
    import hookgrad.utils.hooks as uh
    calls = []
    # every noted registration is told to the watchers: count them
    monkeypatch.setattr(uh, "_registration_watchers", [lambda *a: calls.append(1)])
    full, legacy, live = hookgrad.nn.Linear(2, 2), hookgrad.nn.Linear(2, 2), hookgrad.nn.Linear(2, 2)
    full.register_full_backward_hook(lambda *a: None)
    legacy.register_backward_hook(lambda *a: None)
    live.register_full_backward_pre_hook(lambda *a: None, live=True)
    assert len(calls) == 3
    x = hookgrad.ones(1, 2, requires_grad=True)
    for _ in range(3):
        (full(x).sum() + legacy(x).sum() + live(x).sum()).backward()
    assert len(calls) == 3


# ---- a property: whatever was registered is listed, removal removes exactly what it picked -------
REGISTER = {
    "forward_pre_hook": lambda m, f: m.register_forward_pre_hook(f),
    "forward_hook": lambda m, f: m.register_forward_hook(f),
    "full_backward_hook": lambda m, f: m.register_full_backward_hook(f),
    "full_backward_pre_hook": lambda m, f: m.register_full_backward_pre_hook(f, live=True),
    "state_dict_hook": lambda m, f: m.register_state_dict_post_hook(f),
    "tensor_hook": lambda m, f: m.weight.register_hook(f),
}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(REGISTER)), st.integers(0, 2), st.booleans()),
                max_size=12),
       st.sets(st.sampled_from(sorted(REGISTER))))
def test_property_inventory_matches_registrations_and_removal_is_exact(regs, removed_kinds):
    model = hookgrad.nn.Sequential(*[hookgrad.nn.Linear(2, 2) for _ in range(3)])
    expected = []
    for i, (kind, which, remove_now) in enumerate(regs):
        def hook(*a):
            return None
        handle = REGISTER[kind](model[which], hook)
        if remove_now:
            handle.remove()
        else:
            owner = f"{which}.weight" if kind == "tensor_hook" else str(which)
            expected.append((kind, owner, hook))
    records = H.inventory(model)
    assert sorted((r.kind, r.owner, id(r.fn)) for r in records) == sorted((k, o, id(f)) for k, o, f in expected)
    assert all(r.registered_at and r.registered_at.startswith(HERE) for r in records)
    n = H.remove(model, kind=removed_kinds) if removed_kinds else 0
    assert n == sum(1 for k, _, _ in expected if k in removed_kinds)
    left = H.inventory(model)
    assert sorted(id(r.fn) for r in left) == sorted(id(f) for k, _, f in expected if k not in removed_kinds)


def test_live_flag_on_a_user_module_subclass():
    class Net(hookgrad.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = hookgrad.nn.Linear(2, 2)

        def forward(self, x):
            return self.fc(x)
    net = Net()
    net.fc.register_full_backward_pre_hook(lambda *a: None, live=True)
    net.register_full_backward_hook(lambda *a: None, live=True, prepend=True)
    assert [(r.owner, r.kind, r.flags) for r in H.inventory(net)] == [
        ("", "full_backward_hook", {"live", "prepend"}), ("fc", "full_backward_pre_hook", {"live"})]
    assert H.remove(net, where=lambda r: "live" in r.flags) == 2
    assert H.inventory(net) == []


def test_op_hooks_are_listed_and_removed_with_the_global_hooks():
    """Op hooks are global hooks: inventory() lists them (owner: the ops they are limited to),
    remove() unregisters them and op functions run their own code again; hookgrad's own users of
    op hooks (forward AD) are neither listed nor removed."""
    seen = []

    def fwd(op, inputs, outputs):
        seen.append(str(op))

    def bwd(node, grad_inputs, grad_outputs):
        seen.append("b:" + str(node))

    h1, h1_line = H.register_op_hook(forward=fwd), sys._getframe().f_lineno
    h2 = H.register_op_hook(backward=bwd, ops=["mul", "add"])
    import hookgrad.autograd.forward_ad as fwAD
    try:
        with fwAD.dual_level():
            records = [r for r in H.inventory() if r.kind.startswith("op_")]
            assert [(r.kind, r.scope, r.owner, r.fn) for r in records] == [
                ("op_forward_hook", "global", None, fwd), ("op_backward_hook", "global", "add,mul", bwd)]
            assert records[0].registered_at == f"{HERE}:{h1_line}"
            assert H.remove(kind=["op_forward_hook", "op_backward_hook"]) == 2
            # forward AD's own op hook is still there and still works
            x = fwAD.make_dual(hookgrad.tensor([1.0, 2.0]), hookgrad.tensor([1.0, 0.0]))
            assert fwAD.unpack_dual(x * x).tangent.tolist() == [2.0, 0.0]
        a = hookgrad.tensor([1.0], requires_grad=True)
        (a * 2 + 1).sum().backward()
        assert seen == [] and not H.inventory()
    finally:
        h1.remove()
        h2.remove()

