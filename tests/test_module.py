"""Differential tests of Module itself: registration of parameters/buffers/submodules, traversal,
train/eval, requires_grad_/zero_grad, conversions, repr, dir, deepcopy and pickling."""
from __future__ import annotations

import copy
import pickle

import pytest

from difftest import catch, differential, warns
from test_module_fixtures import clean_globals, leaf, mods


def _names(pairs):
    return [name for name, _ in pairs]


def _fix_repr(T, s):
    return s.replace("torch", "hookgrad") if T.__name__ == "torch" else s


# ------------------------------------------------------------------------------------------
# registration through attributes and register_*
# ------------------------------------------------------------------------------------------
@differential
def test_setattr_registers_parameter_buffer_module(T):
    m = T.nn.Module()
    m.p = T.nn.Parameter(T.tensor([1.0]))
    m.child = T.nn.Module()
    m.register_buffer("buf", T.tensor([2.0]))
    m.plain = 3
    return (list(m._parameters), list(m._buffers), list(m._modules), "plain" in m.__dict__,
            "p" in m.__dict__, m.p, m.buf)


@differential
def test_plain_tensor_attribute_is_not_registered(T):
    m = T.nn.Module()
    m.t = T.tensor([1.0])
    return list(m._parameters), list(m._buffers), "t" in m.__dict__


@differential
def test_assigning_tensor_to_buffer_name_updates_buffer(T):
    m = mods(T).WithBuffers()
    m.running = T.tensor([7.0, 7.0])
    m.scratch = T.tensor([1.0])
    return m.running, sorted(m._non_persistent_buffers_set), list(m.state_dict())


@differential
def test_assigning_non_tensor_to_buffer_raises(T):
    m = mods(T).WithBuffers()
    return catch(setattr, m, "running", 3.0)


@differential
def test_assigning_tensor_to_parameter_name_raises(T):
    m = mods(T).Scale()
    return catch(setattr, m, "w", T.tensor(1.0)), catch(setattr, m, "w", None), m.w


@differential
def test_assigning_non_module_to_module_name_raises(T):
    m = mods(T).Net()
    return catch(setattr, m, "fc1", 3), catch(setattr, m, "fc1", None), m.fc1


@differential
def test_reassign_changes_kind(T):
    m = T.nn.Module()
    m.x = T.nn.Parameter(T.tensor([1.0]))
    r = catch(setattr, m, "x", T.nn.Module())  # a parameter name only takes a Parameter or None
    m.x = None
    m.z = T.nn.Module()
    m.z = T.nn.Parameter(T.tensor([3.0]))  # a parameter replaces the module
    kinds1 = (r, list(m._parameters), list(m._modules))
    m.register_buffer("y", T.tensor([1.0]), persistent=False)
    m.y = T.nn.Parameter(T.tensor([2.0]))
    return kinds1, list(m._parameters), list(m._buffers), sorted(m._non_persistent_buffers_set)


@differential
def test_buffer_class_marks_buffer(T):
    m = T.nn.Module()
    m.a = T.nn.Buffer(T.tensor([1.0]))
    m.b = T.nn.Buffer(T.tensor([2.0]), persistent=False)
    b = T.nn.Buffer(T.tensor([1.0], requires_grad=True))
    return (list(m._buffers), sorted(m._non_persistent_buffers_set), list(m.state_dict()),
            isinstance(m.a, T.nn.Buffer), type(m.a).__name__, b.requires_grad, b.is_leaf)


@pytest.mark.parametrize("name", ["a.b", "", 3])
@differential
def test_register_buffer_bad_names(T, name):
    m = T.nn.Module()
    return catch(m.register_buffer, name, T.tensor([1.0]))


@pytest.mark.parametrize("name", ["a.b", "", 3])
@differential
def test_register_parameter_bad_names(T, name):
    m = T.nn.Module()
    return catch(m.register_parameter, name, T.nn.Parameter(T.tensor([1.0])))


@pytest.mark.parametrize("name", ["a.b", "", 3])
@differential
def test_add_module_bad_names(T, name):
    m = T.nn.Module()
    return catch(m.add_module, name, T.nn.Module())


@differential
def test_register_existing_attribute_raises(T):
    m = T.nn.Module()
    m.plain = 1
    return (catch(m.register_buffer, "plain", T.tensor([1.0])),
            catch(m.register_parameter, "plain", T.nn.Parameter(T.tensor([1.0]))),
            catch(m.add_module, "plain", T.nn.Module()),
            catch(m.register_buffer, "training", None))


@differential
def test_register_wrong_types(T):
    m = T.nn.Module()
    return (catch(m.register_buffer, "b", [1.0]),
            catch(m.register_parameter, "p", T.tensor([1.0])),
            catch(m.add_module, "c", 3))


@differential
def test_register_non_leaf_parameter_raises(T):
    m = T.nn.Module()
    p = T.nn.Parameter(T.tensor([1.0]))
    q = p * 2
    q.__class__ = T.nn.Parameter
    return catch(m.register_parameter, "q", q)


@differential
def test_register_before_init_raises(T):
    class Early(T.nn.Module):
        def __init__(self):
            self.p = T.nn.Parameter(T.tensor([1.0]))

    class EarlyMod(T.nn.Module):
        def __init__(self):
            self.c = T.nn.Module()

    class EarlyBuf(T.nn.Module):
        def __init__(self):
            self.register_buffer("b", T.tensor([1.0]))

    return catch(Early), catch(EarlyMod), catch(EarlyBuf)


@differential
def test_none_entries(T):
    m = T.nn.Module()
    m.register_parameter("p", None)
    m.register_buffer("b", None)
    m.add_module("c", None)
    return (m.p, m.b, m.c, list(m.parameters()), list(m.buffers()), list(m.children()),
            list(m.state_dict()), _names(m.named_modules()))


@differential
def test_delattr(T):
    m = mods(T).WithBuffers()
    m.child = T.nn.Module()
    m.extra = 1
    del m.w
    del m.scratch
    del m.child
    del m.extra
    return (list(m._parameters), list(m._buffers), list(m._modules), sorted(m._non_persistent_buffers_set),
            catch(delattr, m, "missing"))


@differential
def test_getattr_missing_raises_attribute_error(T):
    m = mods(T).Scale()
    return catch(getattr, m, "nope"), hasattr(m, "w"), hasattr(m, "nope")


@differential
def test_init_rejects_arguments(T):
    return catch(T.nn.Module, 1), catch(T.nn.Module, foo=1)


@differential
def test_call_super_init(T):
    class Base:
        def __init__(self, *args, **kwargs):
            self.got = (args, kwargs)

    class M(T.nn.Module, Base):
        call_super_init = True

    return M(1, k=2).got


@differential
def test_forward_not_implemented(T):
    return catch(T.nn.Module(), 1)


# ------------------------------------------------------------------------------------------
# get_submodule / get_parameter / get_buffer / set_submodule
# ------------------------------------------------------------------------------------------
@differential
def test_get_submodule_parameter_buffer(T):
    t = mods(T).Tree()
    return (type(t.get_submodule("b.0")).__name__, t.get_submodule("") is t,
            t.get_parameter("b.2.w"), t.get_buffer("a.running"),
            catch(t.get_submodule, "b.9"), catch(t.get_submodule, "a.w"),
            catch(t.get_parameter, "a.running"), catch(t.get_parameter, "a.zzz"),
            catch(t.get_buffer, "a.w"), catch(t.get_buffer, "a.zzz"))


@differential
def test_set_submodule(T):
    t = mods(T).Tree()
    m = mods(T)
    t.set_submodule("b.1", m.Identity())
    t.set_submodule("b.new", m.Relu())
    r1 = catch(t.set_submodule, "b.other", m.Relu(), strict=True)
    r2 = catch(t.set_submodule, "", m.Relu())
    r3 = catch(t.set_submodule, "a.w", m.Relu())
    r4 = catch(t.set_submodule, "b.1", 3)
    return [type(c).__name__ for c in t.b.children()], _names(t.b.named_children()), r1, r2, r3, r4


# ------------------------------------------------------------------------------------------
# traversal
# ------------------------------------------------------------------------------------------
@differential
def test_named_parameters_and_buffers(T):
    t = mods(T).Tree()
    return (_names(t.named_parameters()), _names(t.named_buffers()),
            _names(t.named_parameters(prefix="root")), _names(t.named_parameters(recurse=False)),
            _names(t.named_buffers(recurse=False)), len(list(t.parameters())), len(list(t.buffers())))


@differential
def test_shared_parameters_dedup(T):
    m = T.nn.Module()
    p = T.nn.Parameter(T.tensor([1.0]))
    m.a = p
    m.b = p
    m.child = T.nn.Module()
    m.child.c = p
    return (_names(m.named_parameters()), _names(m.named_parameters(remove_duplicate=False)),
            len(list(m.parameters())))


@differential
def test_named_modules_and_children(T):
    t = mods(T).Tree()
    return (_names(t.named_modules()), _names(t.named_modules(prefix="root")),
            _names(t.named_modules(remove_duplicate=False)), _names(t.named_children()),
            [type(c).__name__ for c in t.children()], [type(c).__name__ for c in t.modules()])


@differential
def test_named_modules_shared_child_dedup(T):
    m = mods(T)
    s = m.Scale()
    root = T.nn.Module()
    root.x = s
    root.y = s
    return (_names(root.named_modules()), _names(root.named_modules(remove_duplicate=False)),
            _names(root.named_children()), _names(root.named_parameters()))


@differential
def test_train_eval(T):
    t = mods(T).Tree()
    t.eval()
    a = [m.training for m in t.modules()]
    t.b.train()
    b = [m.training for m in t.modules()]
    r = t.train(True) is t
    return a, b, r, catch(t.train, "yes"), catch(t.train, 1)


@differential
def test_requires_grad_(T):
    t = mods(T).Tree()
    t.requires_grad_(False)
    a = [p.requires_grad for p in t.parameters()]
    t.b.requires_grad_()
    return a, [p.requires_grad for p in t.parameters()]


@differential
def test_zero_grad(T):
    net = mods(T).Net()
    net(leaf(T)).sum().backward()
    net.zero_grad(set_to_none=False)
    a = [p.grad for p in net.parameters()]
    net(leaf(T)).sum().backward()
    net.zero_grad()
    return a, [p.grad for p in net.parameters()]


@differential
def test_apply_order(T):
    order = []
    t = mods(T).Tree()
    r = t.apply(lambda m: order.append(type(m).__name__))
    return order, r is t


# ------------------------------------------------------------------------------------------
# conversions
# ------------------------------------------------------------------------------------------
@differential
def test_double_float_half_keep_identity(T):
    m = mods(T).WithBuffers()
    m.register_buffer("count", T.tensor([3]))
    w = m.w
    m.double()
    a = (m.w is w, m.w.dtype, m.running.dtype, m.count.dtype, m.w.requires_grad, m.w.is_leaf)
    m.float()
    b = (m.w.dtype, m.running.dtype, m.count.dtype)
    m.half()
    c = (m.w.dtype, m.scratch.dtype, m.count.dtype)
    return a, b, c


@differential
def test_to_dtype_and_device(T):
    m = mods(T).WithBuffers()
    m.register_buffer("count", T.tensor([3]))
    r = m.to(T.float64)
    a = (r is m, m.w.dtype, m.count.dtype)
    m.to("cpu")
    m.to(T.device("cpu"), T.float32)
    m.to(dtype=T.float64)
    m.to(T.zeros(1, dtype=T.float32))
    return a, m.w.dtype, m.running.dtype, catch(m.to, T.int64)


@differential
def test_conversion_converts_grad(T):
    m = mods(T).Scale()
    m(leaf(T)).sum().backward()
    m.double()
    return m.w.grad.dtype, m.w.grad, m.w.dtype


@differential
def test_cpu_and_type(T):
    m = mods(T).Scale()
    r = m.cpu()
    return r is m, m.w.dtype


@differential
def test_forward_after_double(T):
    net = mods(T).Net().double()
    x = T.tensor([[1.0, 2.0]], dtype=T.float64, requires_grad=True)
    out = net(x)
    out.sum().backward()
    return out, x.grad, net.fc1.weight.grad


# ------------------------------------------------------------------------------------------
# repr and dir
# ------------------------------------------------------------------------------------------
@differential
def test_repr_forms(T):
    m = mods(T)
    empty = T.nn.Module()
    leaf_mod = m.Affine()
    t = m.Tree()
    net = m.Net()
    return [repr(empty), repr(leaf_mod), repr(t), repr(net), str(net)]


@differential
def test_repr_multiline_extra_repr(T):
    class Multi(T.nn.Module):
        def extra_repr(self):
            return "line1\nline2"

    class OneLine(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.c = Multi()

        def extra_repr(self):
            return "k=1"

    class Blank(T.nn.Module):
        def extra_repr(self):
            return "a\n\nb"

    outer = T.nn.Module()
    outer.inner = Blank()
    return repr(Multi()), repr(OneLine()), repr(outer)


@differential
def test_repr_none_child(T):
    m = T.nn.Module()
    m.add_module("gone", None)
    return repr(m)


@differential
def test_parameter_repr(T):
    p = T.nn.Parameter(T.tensor([1.0, 2.0]))
    q = T.nn.Parameter(T.tensor([1.0]), requires_grad=False)
    return _fix_repr(T, repr(p)), _fix_repr(T, repr(q)), _fix_repr(T, str(p))


@differential
def test_parameter_basics(T):
    t = T.tensor([1.0, 2.0])
    p = T.nn.Parameter(t)
    p2 = T.nn.Parameter(t, requires_grad=False)
    e = T.nn.Parameter()
    return (type(p).__name__, p.requires_grad, p.is_leaf, p2.requires_grad, isinstance(p, T.Tensor),
            tuple(e.shape), p.grad_fn is None, (p * 2).requires_grad, type(p * 2).__name__,
            type(p.detach()).__name__, type(p.data).__name__)


@differential
def test_parameter_shares_memory(T):
    t = T.tensor([1.0, 2.0])
    p = T.nn.Parameter(t)
    with T.no_grad():
        p.mul_(3)
    return t, p


@differential
def test_parameter_int_requires_grad_raises(T):
    return catch(T.nn.Parameter, T.tensor([1, 2]))


@differential
def test_dir_lists_members(T):
    t = mods(T).Tree()
    d = dir(t)
    return [n in d for n in ("a", "b", "shared", "forward", "training", "_parameters")], d == sorted(d)


@differential
def test_dir_skips_digit_names(T):
    s = T.nn.Sequential(T.nn.Module(), T.nn.Module())
    return [k for k in dir(s) if k.isdigit()]


# ------------------------------------------------------------------------------------------
# copies and pickling
# ------------------------------------------------------------------------------------------
@differential
def test_deepcopy_module(T):
    t = mods(T).Tree()
    c = copy.deepcopy(t)
    with T.no_grad():
        c.a.w.add_(10)
    return (t.a.w, c.a.w, c.shared is c.a, c.a.w is not t.a.w, type(c.a.w).__name__, c.a.w.requires_grad,
            list(c.state_dict()), sorted(c.a._non_persistent_buffers_set))


@differential
def test_deepcopy_keeps_hooks(T):
    log = []
    m = mods(T).Scale()
    m.register_forward_hook(lambda mod, a, o: log.append(type(mod).__name__))
    m.register_full_backward_hook(lambda mod, gi, go: log.append("bw"))
    c = copy.deepcopy(m)
    c(leaf(T)).sum().backward()
    return log, len(c._forward_hooks), c._is_full_backward_hook


@differential
def test_deepcopy_drops_param_grad(T):
    m = mods(T).Scale()
    m(leaf(T)).sum().backward()
    c = copy.deepcopy(m)
    return c.w.grad, m.w.grad


@differential
def test_deepcopy_non_leaf_tensor_attr_raises(T):
    m = mods(T).Scale()
    m.cache = m.w * 2
    return catch(copy.deepcopy, m)


def _pickled_hook(m, a, o):
    return o * 2


def _picklable(T, name):
    """A module-level (hence picklable) copy of test class ``name`` for framework ``T``."""
    base = getattr(mods(T), name)
    qual = f"Pickle{name}_{T.__name__}"
    if qual not in globals():
        cls = type(qual, (base,), {"__module__": __name__, "__qualname__": qual})
        globals()[qual] = cls
    return globals()[qual]


@differential
def test_pickle_module_roundtrip(T):
    t = _picklable(T, "Tree")()
    t.b = T.nn.Sequential(_picklable(T, "Scale")(), _picklable(T, "Relu")())
    t.a = _picklable(T, "WithBuffers")()
    t.shared = t.a
    t.eval()
    c = pickle.loads(pickle.dumps(t))
    return (list(c.state_dict()), [m.training for m in c.modules()], c.a.w, type(c.a.w).__name__,
            c.a.w.requires_grad, c.shared is c.a, c(T.tensor([1.0, 2.0])))


@differential
def test_pickle_keeps_picklable_hooks(T):
    m = _picklable(T, "Scale")()
    m.register_forward_hook(_pickled_hook)
    c = pickle.loads(pickle.dumps(m))
    return c(T.tensor([1.0])), len(c._forward_hooks)


@differential
def test_pickle_with_lambda_hook_fails(T):
    m = _picklable(T, "Scale")()
    m.register_forward_hook(lambda mod, a, o: None)
    try:
        pickle.dumps(m)
        return "ok"
    except Exception as e:  # noqa: BLE001
        return "failed"


@differential
def test_getstate_setstate_fill_missing(T):
    m = mods(T).Scale()
    state = m.__getstate__()
    for k in ("_forward_pre_hooks", "_state_dict_hooks", "_backward_pre_hooks", "_non_persistent_buffers_set",
              "_is_full_backward_hook", "_forward_hooks_always_called"):
        state.pop(k)
    n = type(m).__new__(type(m))
    n.__setstate__(state)
    return (type(n._forward_pre_hooks).__name__, n._is_full_backward_hook, n._non_persistent_buffers_set,
            n(T.tensor([1.0])))


# ------------------------------------------------------------------------------------------
# registration hooks
# ------------------------------------------------------------------------------------------
@differential
def test_parameter_registration_hook(T):
    log = []
    with clean_globals(T) as mm:
        h = mm.register_module_parameter_registration_hook(lambda m, n, p: log.append((type(m).__name__, n)))
        mods(T).Scale()
        m = T.nn.Module()
        m.register_parameter("none", None)
        h.remove()
        mods(T).Scale()
    return log


@differential
def test_parameter_registration_hook_replaces(T):
    with clean_globals(T) as mm:
        mm.register_module_parameter_registration_hook(
            lambda m, n, p: T.nn.Parameter(p.detach() * 0) if n == "w" else None)
        s = mods(T).Scale()
    return s.w, s.b


@differential
def test_buffer_registration_hook(T):
    log = []
    with clean_globals(T) as mm:
        mm.register_module_buffer_registration_hook(lambda m, n, b: log.append((n, b)) or (None if b is None else b + 1))
        w = mods(T).WithBuffers()
        w.running = T.tensor([0.0, 0.0])
    return log, w.running, w.scratch


@differential
def test_module_registration_hook(T):
    log = []
    with clean_globals(T) as mm:
        mm.register_module_module_registration_hook(lambda m, n, c: log.append((type(m).__name__, n, type(c).__name__)))
        net = mods(T).Net()
        net.add_module("extra", T.nn.Module())
        net.register_module("extra2", None)
        net.fc1 = None
    return log


@differential
def test_module_registration_hook_replaces(T):
    m = mods(T)
    with clean_globals(T) as mm:
        mm.register_module_module_registration_hook(lambda parent, n, c: m.Identity() if n == "act" else None)
        net = m.Net()
    return type(net.act).__name__, _names(net.named_children())


@differential
def test_registration_hooks_order(T):
    log = []
    with clean_globals(T) as mm:
        mm.register_module_parameter_registration_hook(lambda m, n, p: log.append(("p1", n)))
        mm.register_module_parameter_registration_hook(lambda m, n, p: log.append(("p2", n)))
        mods(T).Scale()
    return log


@differential
def test_parameter_deepcopy_and_pickle_attributes(T):
    p = T.nn.Parameter(T.tensor([1.0, 2.0]))
    p.tag = "weights"
    d = copy.deepcopy(p)
    q = pickle.loads(pickle.dumps(p))
    frozen = pickle.loads(pickle.dumps(T.nn.Parameter(T.tensor([3.0]), requires_grad=False)))
    return (hasattr(d, "tag"), getattr(q, "tag", None), type(d).__name__, type(q).__name__, d, q,
            q.requires_grad, frozen.requires_grad, d is not p)


@differential
def test_parameter_deepcopy_memo_shared(T):
    p = T.nn.Parameter(T.tensor([1.0]))
    a, b = copy.deepcopy([p, p])
    return a is b


@differential
def test_buffer_deepcopy_and_pickle(T):
    m = _picklable(T, "WithBuffers")()
    c = copy.deepcopy(m)
    q = pickle.loads(pickle.dumps(m))
    return (list(c._buffers), sorted(c._non_persistent_buffers_set), c.running, q.running, q.scratch,
            sorted(q._non_persistent_buffers_set))
