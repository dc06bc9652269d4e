"""More differential module-hook scenarios: unusual graphs (outputs independent of inputs,
double backward, shared modules across graphs), kwargs with backward hooks, hook objects of
several callable kinds, and hooks surviving deepcopy/pickling."""
from __future__ import annotations

import copy
import functools

from difftest import catch, differential, warns
from test_module_fixtures import clean_globals, leaf, mods, shapes


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
def test_hooks_fire_for_module_inside_hook(T):
    log = []
    inner = mods(T).Scale()
    outer = mods(T).Scale()
    inner.register_forward_hook(lambda m, a, o: log.append("inner"))
    outer.register_forward_hook(lambda m, a, o: log.append("outer") or inner(o))
    res = outer(T.tensor([1.0]))
    return log, res


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


@differential
def test_always_call_hook_result_replaces_on_error(T):
    # A result returned by an always_call hook on the error path is discarded (the error wins).
    mod = mods(T).Fail()
    mod.register_forward_hook(lambda m, a, o: "value", always_call=True)
    return catch(mod, leaf(T))


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
