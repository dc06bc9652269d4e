"""Differential tests of state_dict / load_state_dict and their hooks."""
from __future__ import annotations

from collections import OrderedDict

from difftest import Raised, catch, differential, warns
from test_module_fixtures import leaf, mods


def _msg(T, r):
    """The message of a recorded error, with the framework's name normalised."""
    if isinstance(r, Raised):
        return r.cls, r.message.replace("torch.", "hookgrad.").replace("hookgrad.Size", "Size")
    return r


@differential
def test_state_dict_keys_values_and_metadata(T):
    t = mods(T).Tree()
    sd = t.state_dict()
    return (type(sd).__name__, list(sd), sd["a.w"], sd["a.w"].requires_grad, type(sd["a.w"]).__name__,
            dict(sd._metadata))


@differential
def test_state_dict_keep_vars(T):
    t = mods(T).Tree()
    sd = t.state_dict(keep_vars=True)
    return sd["a.w"] is t.a.w, sd["a.w"].requires_grad, type(sd["a.w"]).__name__


@differential
def test_state_dict_prefix_and_destination(T):
    t = mods(T).Scale()
    dest = {"keep": 1}
    sd = t.state_dict(destination=dest, prefix="model.")
    return sd is dest, list(sd)


@differential
def test_state_dict_positional_args_warn(T):
    t = mods(T).Scale()
    dest = OrderedDict()
    res, w = warns(t.state_dict, dest, "p.")
    return list(res), w


@differential
def test_state_dict_shares_memory(T):
    t = mods(T).Scale()
    sd = t.state_dict()
    with T.no_grad():
        t.w.add_(1)
    return sd["w"]


@differential
def test_state_dict_shared_module_listed_twice(T):
    t = mods(T).Tree()
    return [k for k in t.state_dict() if "shared" in k]


@differential
def test_extra_state(T):
    class WithExtra(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = T.nn.Parameter(T.tensor([1.0]))
            self.note = "start"

        def get_extra_state(self):
            return {"note": self.note}

        def set_extra_state(self, state):
            self.note = state["note"] + "!"

    a = WithExtra()
    sd = a.state_dict()
    b = WithExtra()
    res = b.load_state_dict(sd)
    sd2 = dict(sd)
    del sd2["_extra_state"]
    return list(sd), sd["_extra_state"], b.note, repr(res), _msg(T, catch(b.load_state_dict, sd2))


@differential
def test_extra_state_unexpected_without_setter(T):
    m = mods(T).Scale()
    sd = dict(m.state_dict())
    sd["_extra_state"] = 1
    return _msg(T, catch(m.load_state_dict, sd)), repr(m.load_state_dict(sd, strict=False))


# ------------------------------------------------------------------------------------------
# load_state_dict
# ------------------------------------------------------------------------------------------
@differential
def test_load_roundtrip(T):
    a = mods(T).Net()
    b = mods(T).Net()
    with T.no_grad():
        for p in a.parameters():
            p.mul_(-1)
    res = b.load_state_dict(a.state_dict())
    return repr(res), str(res), list(res), [p for p in b.parameters()], res.missing_keys


@differential
def test_load_copies_in_place(T):
    m = mods(T).Scale()
    w = m.w
    m.load_state_dict({"w": T.tensor(9.0), "b": T.tensor(1.0)})
    return m.w is w, m.w, m.w.requires_grad


@differential
def test_load_missing_and_unexpected_strict(T):
    m = mods(T).Tree()
    sd = m.state_dict()
    del sd["a.w"]
    sd["a.bogus"] = T.tensor([1.0])
    sd["zzz.x"] = T.tensor([1.0])
    sd["top"] = T.tensor([1.0])
    return _msg(T, catch(m.load_state_dict, sd))


@differential
def test_load_missing_and_unexpected_not_strict(T):
    m = mods(T).Tree()
    sd = m.state_dict()
    del sd["b.0.w"]
    sd["b.0.extra"] = T.tensor(1.0)
    res = m.load_state_dict(sd, strict=False)
    return res.missing_keys, res.unexpected_keys, repr(res)


@differential
def test_load_size_mismatch(T):
    m = mods(T).Affine()
    sd = m.state_dict()
    sd["weight"] = T.zeros(3, 2)
    return _msg(T, catch(m.load_state_dict, sd)), _msg(T, catch(m.load_state_dict, sd, strict=False))


@differential
def test_load_size_mismatch_and_missing_order(T):
    m = mods(T).Affine()
    sd = {"weight": T.zeros(1), "other": T.zeros(1)}
    return _msg(T, catch(m.load_state_dict, sd))


@differential
def test_load_non_tensor_value(T):
    m = mods(T).Scale()
    return _msg(T, catch(m.load_state_dict, {"w": 1.0, "b": T.tensor(0.0)}))


@differential
def test_load_not_a_mapping(T):
    m = mods(T).Scale()
    return catch(m.load_state_dict, [("w", T.tensor(1.0))])


@differential
def test_load_one_element_into_scalar(T):
    m = mods(T).Scale()
    m.load_state_dict({"w": T.tensor([4.0]), "b": T.tensor([5.0])})
    return m.w, m.b


@differential
def test_load_dtype_cast(T):
    m = mods(T).Scale()
    m.load_state_dict({"w": T.tensor(4.0, dtype=T.float64), "b": T.tensor(2)})
    return m.w, m.b


@differential
def test_load_assign(T):
    m = mods(T).Scale()
    new_w = T.tensor(7.0, dtype=T.float64)
    res = m.load_state_dict({"w": new_w, "b": T.tensor(1.0)}, assign=True)
    return (type(m.w).__name__, m.w.dtype, m.w.requires_grad, m.w, repr(res))


@differential
def test_load_assign_keeps_requires_grad_false(T):
    m = mods(T).Scale()
    m.w.requires_grad_(False)
    m.load_state_dict({"w": T.nn.Parameter(T.tensor(3.0)), "b": T.tensor(1.0)}, assign=True)
    return m.w.requires_grad, m.b.requires_grad


@differential
def test_load_into_non_persistent_ignored(T):
    m = mods(T).WithBuffers()
    sd = m.state_dict()
    sd["scratch"] = T.tensor([1.0])
    return _msg(T, catch(m.load_state_dict, sd)), m.scratch


@differential
def test_load_buffer_values(T):
    a = mods(T).WithBuffers()
    b = mods(T).WithBuffers()
    a.running = T.tensor([3.0, 4.0])
    b.load_state_dict(a.state_dict())
    return b.running


# ------------------------------------------------------------------------------------------
# state_dict hooks
# ------------------------------------------------------------------------------------------
@differential
def test_state_dict_pre_hook(T):
    log = []
    t = mods(T).Tree()
    t.register_state_dict_pre_hook(lambda m, prefix, keep_vars: log.append((type(m).__name__, prefix, keep_vars)))
    t.b.register_state_dict_pre_hook(lambda m, prefix, keep_vars: log.append((type(m).__name__, prefix, keep_vars)))
    t.state_dict(keep_vars=True)
    return log


@differential
def test_state_dict_post_hook_can_edit_in_place(T):
    log = []
    t = mods(T).Tree()

    def post(m, sd, prefix, meta):
        log.append((prefix, sorted(sd), dict(meta)))
        sd[prefix + "added"] = T.tensor(1.0)

    t.b.register_state_dict_post_hook(post)
    sd = t.state_dict()
    return log, list(sd)


@differential
def test_state_dict_post_hook_must_return_none(T):
    m = mods(T).Scale()
    m.register_state_dict_post_hook(lambda m, sd, p, meta: {})
    return catch(m.state_dict)


@differential
def test_private_state_dict_hook_return_replaces_at_root(T):
    net = mods(T).Net()
    net.register_state_dict_post_hook  # noqa: B018 - the public one exists too
    net._register_state_dict_hook(lambda m, sd, p, meta: OrderedDict(root=T.tensor(1.0)))
    net.fc1._register_state_dict_hook(lambda m, sd, p, meta: OrderedDict(child=T.tensor(1.0)))
    return list(net.state_dict())


@differential
def test_private_hook_rejects_public_function(T):
    m = mods(T).Scale()

    def hook(m, sd, p, meta):
        return None

    m.register_state_dict_post_hook(hook)
    return catch(m._register_state_dict_hook, hook)


@differential
def test_state_dict_hook_order(T):
    log = []
    m = mods(T).Scale()
    m.register_state_dict_post_hook(lambda *a: log.append("post1"))
    m.register_state_dict_pre_hook(lambda *a: log.append("pre1"))
    m._register_state_dict_hook(lambda *a: log.append("private"))
    m.register_state_dict_post_hook(lambda *a: log.append("post2"))
    m.register_state_dict_pre_hook(lambda *a: log.append("pre2"))
    m.state_dict()
    return log


@differential
def test_state_dict_hook_removal(T):
    log = []
    m = mods(T).Scale()
    h1 = m.register_state_dict_pre_hook(lambda *a: log.append("pre"))
    h2 = m.register_state_dict_post_hook(lambda *a: log.append("post"))
    m.state_dict()
    h1.remove()
    h2.remove()
    m.state_dict()
    return log


# ------------------------------------------------------------------------------------------
# load_state_dict hooks
# ------------------------------------------------------------------------------------------
@differential
def test_load_pre_hook_arguments(T):
    log = []
    t = mods(T).Tree()

    def pre(module, sd, prefix, meta, strict, missing, unexpected, errors):
        log.append((type(module).__name__, sorted(sd), prefix, dict(meta), strict, list(missing), list(unexpected),
                    list(errors)))

    t.b.register_load_state_dict_pre_hook(pre)
    t.load_state_dict(t.state_dict(), strict=False)
    return log


@differential
def test_load_pre_hook_can_rename_keys(T):
    m = mods(T).Scale()

    def pre(module, sd, prefix, *rest):
        if prefix + "old_w" in sd:
            sd[prefix + "w"] = sd.pop(prefix + "old_w")

    m.register_load_state_dict_pre_hook(pre)
    res = m.load_state_dict({"old_w": T.tensor(5.0), "b": T.tensor(6.0)})
    return repr(res), m.w, m.b


@differential
def test_private_load_pre_hook_without_module(T):
    log = []
    m = mods(T).Scale()
    m._register_load_state_dict_pre_hook(lambda *a: log.append(len(a)))
    m._register_load_state_dict_pre_hook(lambda *a: log.append(len(a)), with_module=True)
    m.load_state_dict(m.state_dict())
    return log


@differential
def test_load_post_hook_receives_incompatible_keys(T):
    log = []
    t = mods(T).Tree()
    t.register_load_state_dict_post_hook(lambda m, keys: log.append(("root", list(keys.missing_keys),
                                                                         list(keys.unexpected_keys))))
    t.b.register_load_state_dict_post_hook(lambda m, keys: log.append(("b", list(keys.missing_keys),
                                                                         list(keys.unexpected_keys))))
    sd = t.state_dict()
    del sd["a.w"]
    sd["b.9.x"] = T.tensor(1.0)
    res = catch(t.load_state_dict, sd)
    return log, _msg(T, res)


@differential
def test_load_post_hook_can_clear_keys(T):
    m = mods(T).Scale()

    def post(module, keys):
        keys.missing_keys.clear()
        keys.unexpected_keys.clear()

    m.register_load_state_dict_post_hook(post)
    res = m.load_state_dict({"extra": T.tensor(1.0)})
    return repr(res)


@differential
def test_load_post_hook_returning_value_raises(T):
    m = mods(T).Scale()
    m.register_load_state_dict_post_hook(lambda module, keys: 1)
    return catch(m.load_state_dict, m.state_dict())


@differential
def test_load_hooks_order(T):
    log = []
    t = mods(T).Net()
    for name, sub in t.named_modules():
        sub.register_load_state_dict_pre_hook(lambda *a, name=name: log.append(("pre", name)))
        sub.register_load_state_dict_post_hook(lambda *a, name=name: log.append(("post", name)))
    t.load_state_dict(t.state_dict())
    return log


@differential
def test_load_pre_hook_error_msgs_raise(T):
    m = mods(T).Scale()
    m.register_load_state_dict_pre_hook(lambda module, sd, prefix, meta, strict, missing, unexpected, errors:
                                        errors.append("custom problem"))
    return _msg(T, catch(m.load_state_dict, m.state_dict(), strict=False))


@differential
def test_metadata_passed_to_load(T):
    log = []

    class Versioned(T.nn.Module):
        _version = 3

        def __init__(self):
            super().__init__()
            self.w = T.nn.Parameter(T.tensor([1.0]))

        def _load_from_state_dict(self, sd, prefix, meta, *rest):
            log.append(meta.get("version"))
            super()._load_from_state_dict(sd, prefix, meta, *rest)

    v = Versioned()
    sd = v.state_dict()
    v.load_state_dict(sd)
    plain = OrderedDict(sd)
    v.load_state_dict(plain)
    return log, dict(sd._metadata)


@differential
def test_incompatible_keys_type(T):
    m = mods(T).Scale()
    res = m.load_state_dict(m.state_dict())
    return type(res).__name__, res == ([], []), res._fields, isinstance(res, tuple)


@differential
def test_load_state_dict_train_forward_after(T):
    a = mods(T).Net()
    b = mods(T).Net()
    with T.no_grad():
        for p in a.parameters():
            p.add_(0.5)
    b.load_state_dict(a.state_dict())
    x = leaf(T)
    out = b(x)
    out.sum().backward()
    return out, x.grad


@differential
def test_load_pre_hook_of_dead_module_raises(T):
    import gc

    m = mods(T).Scale()
    m.register_load_state_dict_pre_hook(lambda *a: None)
    wrapped = next(iter(m._load_state_dict_pre_hooks.values()))
    del m
    gc.collect()
    return catch(wrapped, {}, "", {}, True, [], [], []), type(wrapped).__name__


@differential
def test_wrapped_load_pre_hook_pickles_with_module(T):
    import pickle

    from test_module import _picklable

    m = _picklable(T, "Scale")()
    m._register_load_state_dict_pre_hook(_noop_load_hook, with_module=True)
    c = pickle.loads(pickle.dumps(m))
    wrapped = next(iter(c._load_state_dict_pre_hooks.values()))
    return wrapped.module() is c, wrapped.with_module, repr(c.load_state_dict(c.state_dict()))


def _noop_load_hook(*args):
    return None
