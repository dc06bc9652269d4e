"""Differential tests of Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict."""
from __future__ import annotations

import re
from collections import OrderedDict

import pytest

from difftest import catch, differential
from test_module_fixtures import leaf, mods


def _kinds(container):
    return [type(m).__name__ for m in container]


def _fix(T, s):
    """Dtype names print as torch.float32 / hookgrad.float32; legacy type names
    (torch.FloatTensor) are the same on both."""
    return re.sub(r"torch\.(?=(float|int|uint|bool|complex|double|half|long))", "hookgrad.", s) \
        if T.__name__ == "torch" else s


def _seq(T):
    m = mods(T)
    return T.nn.Sequential(m.Scale(2.0, 0.0), m.Relu(), m.Scale(3.0, 1.0))


# ------------------------------------------------------------------------------------------
# Sequential
# ------------------------------------------------------------------------------------------
@differential
def test_sequential_forward_and_backward(T):
    s = _seq(T)
    x = leaf(T)
    out = s(x)
    out.sum().backward()
    return out, x.grad, [p.grad for p in s.parameters()]


@differential
def test_sequential_ordered_dict(T):
    m = mods(T)
    s = T.nn.Sequential(OrderedDict([("first", m.Scale()), ("act", m.Relu())]))
    return list(s._modules), _kinds(s), type(s.first).__name__, type(s[1]).__name__, repr(s)


@differential
def test_sequential_indexing(T):
    s = _seq(T)
    return (_kinds([s[0], s[-1], s[1]]), catch(lambda: s[3]), catch(lambda: s[-4]), catch(lambda: s["0"]),
            len(s), _kinds(s))


@differential
def test_sequential_slicing(T):
    s = _seq(T)
    sub = s[1:]
    rev = s[::-1]
    return (type(sub).__name__, list(sub._modules), _kinds(sub), sub[0] is s[1], list(rev._modules),
            _kinds(rev), len(s[5:]))


@differential
def test_sequential_setitem_delitem(T):
    m = mods(T)
    s = _seq(T)
    s[1] = m.Identity()
    a = _kinds(s)
    del s[0]
    b = (list(s._modules), _kinds(s))
    s.append(m.Relu())
    del s[::2]
    return a, b, list(s._modules), _kinds(s), catch(s.__setitem__, 7, m.Relu())


@differential
def test_sequential_append_insert_extend_pop(T):
    m = mods(T)
    s = T.nn.Sequential()
    r = s.append(m.Scale())
    s.insert(0, m.Relu())
    s.insert(-1, m.Identity())
    s.insert(3, m.Pair())
    e = catch(s.insert, 10, m.Relu())
    e2 = catch(s.insert, 0, "notamodule")
    s.extend([m.Relu(), m.Identity()])
    popped = s.pop(1)
    popped_slice = s.pop(slice(0, 2))
    return r is s, type(popped).__name__, _kinds(popped_slice), list(s._modules), _kinds(s), e, e2


@differential
def test_sequential_add_mul(T):
    a = _seq(T)
    m = mods(T)
    b = T.nn.Sequential(m.Identity())
    c = a + b
    d = b * 3
    e = 2 * b
    a += b
    f = T.nn.Sequential(m.Relu())
    f *= 2
    return (_kinds(c), list(c._modules), _kinds(d), d[0] is d[2], _kinds(e), _kinds(a), _kinds(f),
            catch(lambda: a + [1]), catch(lambda: b * 0), catch(lambda: b * 1.5))


@differential
def test_sequential_iadd_type_error(T):
    s = _seq(T)

    def go():
        nonlocal s
        s += [1]

    return catch(go)


@differential
def test_sequential_repr(T):
    m = mods(T)
    s = T.nn.Sequential(m.Affine(), m.Relu(), T.nn.Sequential(m.Scale(), m.Relu()))
    return repr(s), repr(T.nn.Sequential())


@differential
def test_sequential_hooks_on_children(T):
    log = []
    s = _seq(T)
    for i, c in enumerate(s):
        c.register_forward_hook(lambda mod, a, o, i=i: log.append((i, o)))
    s.register_forward_pre_hook(lambda mod, a: log.append(("seq", a)))
    s(leaf(T))
    return log


@differential
def test_sequential_state_dict_keys(T):
    s = _seq(T)
    s2 = s[1:]
    return list(s.state_dict()), list(s2.state_dict())


@differential
def test_sequential_dir_no_digits(T):
    return [k for k in dir(_seq(T)) if k.isdigit()]


# ------------------------------------------------------------------------------------------
# ModuleList
# ------------------------------------------------------------------------------------------
@differential
def test_module_list_basics(T):
    m = mods(T)
    ml = T.nn.ModuleList([m.Scale(), m.Relu()])
    ml.append(m.Identity())
    ml.extend([m.Relu()])
    ml += [m.Scale(3.0, 0.0)]
    ml.insert(1, m.Pair())
    return (len(ml), _kinds(ml), list(ml._modules), _kinds(ml[1:3]), type(ml[1:3]).__name__,
            type(ml[-1]).__name__, catch(lambda: ml[10]), len(list(ml.parameters())))


@differential
def test_module_list_set_del_pop(T):
    m = mods(T)
    ml = T.nn.ModuleList([m.Scale(), m.Relu(), m.Identity(), m.Pair()])
    ml[0] = m.Relu()
    del ml[1]
    p = ml.pop(-1)
    del ml[0:1]
    return _kinds(ml), list(ml._modules), type(p).__name__, catch(ml.__setitem__, 9, m.Relu())


@differential
def test_module_list_add(T):
    m = mods(T)
    a = T.nn.ModuleList([m.Scale()])
    b = a + [m.Relu(), m.Identity()]
    return type(b).__name__, _kinds(b), list(b._modules), catch(a.extend, 3)


@differential
def test_module_list_repr_compresses_repeats(T):
    m = mods(T)
    ml = T.nn.ModuleList([m.Relu(), m.Relu(), m.Relu(), m.Affine(), m.Affine(), m.Scale(), m.Relu()])
    nested = T.nn.ModuleList([T.nn.Sequential(m.Relu(), m.Relu()), T.nn.Sequential(m.Relu(), m.Relu())])
    return repr(ml), repr(T.nn.ModuleList()), repr(nested)


@differential
def test_module_list_in_module(T):
    m = mods(T)

    class Stack(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = T.nn.ModuleList([m.Scale(2.0, 0.0) for _ in range(3)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    s = Stack()
    x = leaf(T)
    out = s(x)
    out.sum().backward()
    return out, x.grad, list(s.state_dict()), repr(s)


# ------------------------------------------------------------------------------------------
# ModuleDict
# ------------------------------------------------------------------------------------------
@differential
def test_module_dict_basics(T):
    m = mods(T)
    md = T.nn.ModuleDict({"b": m.Scale(), "a": m.Relu()})
    md["c"] = m.Identity()
    md.update([("d", m.Relu())])
    md.update(OrderedDict([("e", m.Scale())]))
    had = "a" in md
    popped = md.pop("a")
    del md["b"]
    return (list(md), list(md.keys()), [type(v).__name__ for v in md.values()],
            [(k, type(v).__name__) for k, v in md.items()], len(md), had, "a" in md, type(popped).__name__,
            catch(lambda: md["zz"]), repr(md))


@differential
def test_module_dict_update_errors(T):
    m = mods(T)
    md = T.nn.ModuleDict()
    return (catch(md.update, 3), catch(md.update, [m.Relu()]), catch(md.update, [("a", m.Relu(), 1)]))


@differential
def test_module_dict_clear(T):
    m = mods(T)
    md = T.nn.ModuleDict({"a": m.Relu()})
    md.clear()
    return len(md), list(md.state_dict())


# ------------------------------------------------------------------------------------------
# ParameterList
# ------------------------------------------------------------------------------------------
@differential
def test_parameter_list(T):
    pl = T.nn.ParameterList([T.nn.Parameter(T.tensor([1.0])), T.tensor([2.0, 3.0])])
    pl.append(T.tensor([[4.0]]))
    pl.extend([T.nn.Parameter(T.tensor(5.0))])
    pl.append("not a tensor")
    return (len(pl), [type(p).__name__ for p in pl], [getattr(p, "requires_grad", None) for p in pl],
            list(pl.state_dict()), len(list(pl.parameters())), _fix(T, repr(pl)), type(pl[1:3]).__name__,
            len(pl[1:3]), catch(lambda: pl[10]), catch(pl.extend, T.tensor([1.0])), catch(pl, 1))


@differential
def test_parameter_list_setitem(T):
    pl = T.nn.ParameterList([T.tensor([1.0]), T.tensor([2.0])])
    pl[0] = T.tensor([9.0])
    pl[-1] = T.nn.Parameter(T.tensor([8.0]), requires_grad=False)
    return list(pl), [p.requires_grad for p in pl], type(pl[0]).__name__


@differential
def test_parameter_list_used_in_forward(T):
    class M(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.ws = T.nn.ParameterList([T.tensor([2.0]), T.tensor([3.0])])

        def forward(self, x):
            for w in self.ws:
                x = x * w
            return x

    m = M()
    x = leaf(T, [1.0, 2.0])
    m(x).sum().backward()
    return [w.grad for w in m.ws], x.grad, list(m.state_dict()), _fix(T, repr(m))


# ------------------------------------------------------------------------------------------
# ParameterDict
# ------------------------------------------------------------------------------------------
@differential
def test_parameter_dict(T):
    pd = T.nn.ParameterDict({"b": T.tensor([1.0]), "a": T.nn.Parameter(T.tensor([2.0]))})
    pd["c"] = T.tensor([[3.0, 4.0]])
    pd["s"] = "a string"
    keys1 = list(pd)
    got = pd.get("zz", "default")
    sd = pd.setdefault("d", T.tensor([0.0]))
    popped = pd.pop("a")
    item = pd.popitem()
    return (keys1, list(pd.keys()), got, type(sd).__name__, popped, item[0], len(pd), "b" in pd,
            list(reversed(pd)), _fix(T, repr(pd)), list(pd.state_dict()), catch(lambda: pd[1]),
            catch(pd, 1))


@differential
def test_parameter_dict_update_and_copy(T):
    pd = T.nn.ParameterDict()
    pd.update([("x", T.tensor([1.0])), ("y", T.tensor([2.0]))])
    pd.update(OrderedDict([("z", T.tensor([3.0]))]))
    c = pd.copy()
    same = c["x"] is pd["x"]
    merged = pd | T.nn.ParameterDict({"w": T.tensor([4.0])})
    pd |= T.nn.ParameterDict({"v": T.tensor([5.0])})
    fk = pd.fromkeys(["k1", "k2"])
    pd.clear()
    return (list(c), same, list(merged), list(fk), len(pd), catch(pd.update, 3), catch(pd.update, [1]),
            catch(pd.update, [("a", 1, 2)]))


@differential
def test_parameter_dict_values_items(T):
    pd = T.nn.ParameterDict({"a": T.tensor([1.0]), "b": T.tensor([2.0])})
    return list(pd.values()), [k for k, _ in pd.items()], [p.requires_grad for p in pd.values()]


@pytest.mark.parametrize("cls", ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"])
@differential
def test_empty_container_repr(T, cls):
    return repr(getattr(T.nn, cls)())


@differential
def test_module_list_repr_blank_line_indentation(T):
    class Blank(T.nn.Module):
        def extra_repr(self):
            return "a\n\nb"

    ml = T.nn.ModuleList([Blank(), Blank(), mods(T).Relu()])
    seq = T.nn.Sequential(Blank())
    return repr(ml), repr(seq)


@differential
def test_container_hooks_and_state_dict_after_edits(T):
    log = []
    m = mods(T)
    seq = T.nn.Sequential(m.Scale(2.0, 0.0), m.Scale(3.0, 0.0), m.Scale(5.0, 0.0))
    seq[1].register_forward_hook(lambda mod, a, o: log.append(("mid", o)))
    del seq[0]
    seq.insert(0, m.Scale(7.0, 0.0))
    out = seq(T.tensor([1.0]))
    return log, out, list(seq.state_dict())
