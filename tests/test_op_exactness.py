"""Op-layer facts compared with torch: the public namespace, what backward results require under
create_graph, which tensors an op packs and in which order, keyword sizes, diag_embed's dims and
in-place ops on 0-d results."""
import types

import numpy as np

import hookgrad
from difftest import catch, differential
from hookgrad.autograd.graph import Node

import torch

# public hookgrad names that are not torch's (documented in the README)
HOOKGRAD_ADDITIONS = {"tools"}
# what leaked from the op modules before every _ops module had __all__
INTERNALS = {"np", "GRAD", "Node", "wrap", "MulBackward0", "annotations", "builtins", "math", "record", "edge",
             "as_tensor_arg", "data_of", "quiet_fp", "sum_to_shape", "pointwise", "creation", "views", "range_",
             "rdiv", "NONE_EDGE", "is_number", "result_np_dtype", "float_dtype_for"}


def test_public_names_are_torch_names_or_documented_additions():
    public = {n for n in dir(hookgrad) if not n.startswith("_")} | HOOKGRAD_ADDITIONS
    assert not public & INTERNALS
    # hookgrad's own submodules (cli, demo, ...) appear as attributes once something imports them
    own_modules = {n for n in public if isinstance(getattr(hookgrad, n), types.ModuleType)
                   and getattr(hookgrad, n).__name__ == f"hookgrad.{n}"}
    assert sorted(n for n in public - own_modules if not hasattr(torch, n) and n not in HOOKGRAD_ADDITIONS) == []
    for name in public:
        value = getattr(hookgrad, name)
        assert not (isinstance(value, type) and issubclass(value, Node)), name
        if isinstance(value, types.ModuleType) and value is not hookgrad:  # torch.torch is torch itself
            assert value.__name__.startswith("hookgrad."), name
    assert isinstance(hookgrad.tools, types.ModuleType)


def test_every_ops_module_declares_all():
    import importlib
    import pkgutil
    import hookgrad._ops as ops
    for info in pkgutil.iter_modules(ops.__path__):
        module = importlib.import_module(f"hookgrad._ops.{info.name}")
        assert isinstance(getattr(module, "__all__", None), list), info.name


@differential
def test_factories_take_size_keyword(T):
    out = [T.zeros(size=(2, 3)), T.ones(size=[2]), T.empty(size=(0, 2)).shape, T.rand(size=(2, 2)).shape,
           T.randn(size=(3,)).shape, T.zeros(2, 3).new_zeros(size=(1, 2)), T.ones(2).new_ones(size=(2,)),
           T.zeros(()).new_empty(size=(2,)).shape]
    out.append(catch(lambda: T.zeros(2, size=(2,))))
    return out


@differential
def test_diag_embed_dims(T):
    x = T.arange(6.0).reshape(2, 3)
    return [T.diag_embed(x), T.diag_embed(x, 1, 0, 2), T.diag_embed(x, -1, 2, 0), T.diag_embed(x, 0, -1, -3),
            catch(lambda: T.diag_embed(x, 0, 1, -2))]


@differential
def test_inplace_ops_on_zero_dim_results(T):
    a = T.ones(3)
    x = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
    total = (a * 2).sum() * 3
    total += 1
    count = T.tensor(0)
    count += a.numel()
    both = a.sum() + a.sum()
    both *= 2
    loss = (x * 2).sum() * 1
    loss += 1
    loss.backward()
    return total, count, both, loss, x.grad


@differential
def test_create_graph_results_require_grad_as_torch(T):
    T.manual_seed(0)
    nn, F = T.nn, T.nn.functional
    x = T.randn(2, 3, 6, 6)
    out = []
    for make, inp in [(lambda: nn.LayerNorm(6), x), (lambda: nn.Conv2d(3, 4, 3), x), (lambda: nn.Conv1d(3, 4, 3), x[:, :, 0]),
                      (lambda: nn.BatchNorm2d(3), x), (lambda: nn.GroupNorm(1, 3), x),
                      (lambda: nn.Sequential(nn.Linear(6, 4), nn.ReLU()), x),
                      (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.MaxPool2d(2)), x),
                      (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.AvgPool2d(2)), x),
                      (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1)), x),
                      (lambda: nn.Sequential(nn.LayerNorm(6), nn.ReLU()), x)]:
        m = make()
        m(inp).sum().backward(create_graph=True)
        out.append([p.grad.requires_grad for p in m.parameters()])
    xg = T.randn(3, 4, requires_grad=True)
    for f in (F.relu, F.leaky_relu, F.hardtanh, F.relu6, lambda t: F.max_pool1d(t.unsqueeze(0), 2),
              lambda t: F.layer_norm(t, (4,)), lambda t: F.pad(t, (1, 1))):
        (g,) = T.autograd.grad(f(xg).sum(), xg, create_graph=True)
        out.append((g.requires_grad, g.grad_fn is not None))
    return out


@differential
def test_saved_tensors_are_packed_in_torchs_order(T):
    a = T.randn(3, 3, requires_grad=True)
    b = T.randn(3, 3, requires_grad=True)
    c = T.randn(3, 3)
    names = {id(a): "a", id(b): "b", id(c): "c"}
    F = T.nn.functional
    out = {}
    for name, f in [("mul", lambda: a * b), ("mm", lambda: a.mm(b)), ("matmul", lambda: a @ b), ("div", lambda: a / b),
                    ("mul_const", lambda: a * c), ("mm_const", lambda: c.mm(a)), ("pow", lambda: a.pow(b)),
                    ("atan2", lambda: T.atan2(a, b)), ("maximum", lambda: T.maximum(a, b)),
                    ("lerp", lambda: T.lerp(a, b, 0.3)), ("addmm", lambda: T.addmm(a, a, b)),
                    ("bmm", lambda: a.unsqueeze(0).bmm(b.unsqueeze(0))), ("linear", lambda: F.linear(a, b)),
                    ("conv1d_input_no_grad", lambda: F.conv1d(c.unsqueeze(0), b.unsqueeze(0))),
                    ("layer_norm", lambda: F.layer_norm(a, (3,), b[0], b[1]))]:
        log = []

        def pack(t):
            base = t._base if t._base is not None else t
            log.append(names.get(id(base), "other") + ("_view" if t._base is not None else ""))
            return t
        with T.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            f()
        out[name] = log
    return out


@differential
def test_layer_norm_bias_changed_in_place_breaks_backward(T):
    ln = T.nn.LayerNorm(4)
    x = T.randn(2, 4, requires_grad=True)
    y = ln(x)
    with T.no_grad():
        ln.bias.add_(1)
    return catch(lambda: y.sum().backward())


SAVED = {  # case -> (fn(T, a, b, v), the _saved_<name> attributes compared)
    "mul": (lambda T, a, b, v: a * b, ["self", "other"]), "div": (lambda T, a, b, v: a / b, ["self", "other"]),
    "pow": (lambda T, a, b, v: a.abs().pow(b), ["exponent", "result"]), "pow_number": (lambda T, a, b, v: a.pow(3), ["self"]),
    "atan2": (lambda T, a, b, v: T.atan2(a, b), ["self", "other"]), "maximum": (lambda T, a, b, v: T.maximum(a, b), ["self", "other"]),
    "mm": (lambda T, a, b, v: a.mm(b), ["self", "mat2"]), "bmm": (lambda T, a, b, v: a[None].bmm(b[None]), ["mat2"]),
    "addmm": (lambda T, a, b, v: T.addmm(v, a, b), ["mat1", "mat2"]), "mv": (lambda T, a, b, v: a.mv(v), ["self", "vec"]),
    "dot": (lambda T, a, b, v: v.dot(v * 2), ["self", "tensor"]), "clamp": (lambda T, a, b, v: a.clamp(-1, 1), ["self"]),
    "clamp_tensors": (lambda T, a, b, v: a.clamp(b, b + 1), ["self", "min", "max"]),
    "where": (lambda T, a, b, v: T.where(a > 0, a, b), ["condition"]), "exp": (lambda T, a, b, v: a.exp(), ["result"]),
    "sin": (lambda T, a, b, v: a.sin(), ["self"]), "relu": (lambda T, a, b, v: a.relu(), ["result"]),
    "conv1d": (lambda T, a, b, v: T.nn.functional.conv1d(a[None], b[None]), ["input", "weight"]),
    "layer_norm": (lambda T, a, b, v: T.nn.functional.layer_norm(a, (3,), v, v * 2),
                   ["input", "weight", "bias", "result1", "result2"]),
    "batch_norm": (lambda T, a, b, v: T.nn.functional.batch_norm(a, None, None, v, v, True), ["input", "weight"]),
    "max_pool2d": (lambda T, a, b, v: T.nn.functional.max_pool2d(a[None], 2), ["self"]),
    "leaky_relu": (lambda T, a, b, v: T.nn.functional.leaky_relu(a), ["self"]),
    "softmax": (lambda T, a, b, v: a.softmax(1), ["result"]), "prod": (lambda T, a, b, v: a.prod(), ["self", "result"]),
    "var": (lambda T, a, b, v: a.var(1), ["self"]), "logsumexp": (lambda T, a, b, v: a.logsumexp(1), ["self", "result"]),
    "gather": (lambda T, a, b, v: a.gather(1, T.zeros(3, 1, dtype=T.int64)), ["index"]),
    "masked_fill": (lambda T, a, b, v: a.masked_fill(a > 0, 1.0), ["mask"]),
    "mse_loss": (lambda T, a, b, v: T.nn.functional.mse_loss(a, b), ["self", "target"]),
}


@differential
def test_nodes_expose_torchs_saved_tensors(T):
    rng = np.random.default_rng(0)
    a, b = (T.tensor(rng.uniform(-1, 1, (3, 3)), requires_grad=True) for _ in range(2))
    v = T.tensor(rng.uniform(0.5, 1, 3), requires_grad=True)
    out = {}
    for case, (fn, names) in SAVED.items():
        fn_node = fn(T, a, b, v).grad_fn
        out[case] = [type(fn_node).__name__ == fn_node.name()] + [getattr(fn_node, "_saved_" + n) for n in names]
    return out


@differential
def test_raw_saved_tensor_hooks_and_freed_access(T):
    a = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = a * b
    raw = y.grad_fn._raw_saved_self
    log = []
    raw.register_hooks(lambda t: (log.append("pack"), t * 2)[1], lambda t: (log.append("unpack"), t)[1])
    second = catch(lambda: raw.register_hooks(lambda t: t, lambda t: t))
    y.sum().backward()
    freed = catch(lambda: y.grad_fn._saved_self)
    return log, second, b.grad, freed


@differential
def test_var_mean_and_std_mean_are_one_node_and_reshape_copies_unsafely(T):
    x = T.tensor(np.arange(12.0).reshape(3, 4) ** 1.5, requires_grad=True)
    out = []
    for fn in (T.var_mean, T.std_mean):
        s, m = fn(x, 1, correction=0)
        out += [s, m, s.grad_fn is m.grad_fn, type(s.grad_fn).__name__, (s.output_nr, m.output_nr)]
        out.append(T.autograd.grad(m.sum(), x, retain_graph=True)[0])
        out.append(T.autograd.grad((s * m).sum(), x)[0])
    y = x.t().reshape(-1)
    out += [y.grad_fn.name(), y._base is None, y.grad_fn.next_functions[0][0].name()]
    return out


@differential
def test_atan2_and_clamp_result_dtypes(T):
    i, b = T.tensor([1, 2, -3]), T.tensor([True, False, True])
    f = T.tensor([0.5, -2.0, 3.0])
    out = [T.atan2(i, i), T.atan2(b, b), T.arctan2(i, f), T.atan2(f, f * 3), T.clamp(b, 0, 1), T.clamp_min(b, 0),
           T.clamp(b, 0.5), T.clip(b, 0, 1), T.clamp(i, 0.5, 1), T.clamp(b, T.tensor(0), T.tensor(1)),
           T.clamp(f, T.tensor(0.0, dtype=T.float64)), T.clamp(f.double(), 0, 1)]
    out.append(catch(lambda: T.tensor([True, False]).clamp_(0, 1)))
    out.append(catch(lambda: T.tensor([1, 2]).clamp_(0.5, 1.0)))
    return [(o.dtype, o) if hasattr(o, "dtype") else o for o in out]


@differential
def test_clamp_backward_selects_gradients(T):
    x = T.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    lo, hi = T.tensor([0.0, 0.0, 0.0], requires_grad=True), T.tensor([1.0, 1.0, 1.0], requires_grad=True)
    nan_grad = T.tensor([float("nan"), 1.0, float("inf")])
    x.clamp(min=0, max=1).backward(nan_grad)
    first = x.grad.clone()
    x.grad = None
    T.clamp(x, lo, hi).backward(nan_grad)
    return first, x.grad, lo.grad, hi.grad


@differential
def test_integer_pow_with_negative_tensor_exponents_and_bool_negation(T):
    base = T.tensor([2, 3, 1, -1, -1, 0])
    exponent = T.tensor([-1, 2, -3, -3, -2, -1])
    return [base ** exponent, T.pow(base, exponent), 2 ** T.tensor([-1, 3]), base.pow(exponent),
            T.tensor([2.0, 3.0]) ** T.tensor([-1, 2]), catch(lambda: base ** -1),
            catch(lambda: -T.tensor([True, False])), catch(lambda: T.tensor([True]).neg_()),
            catch(lambda: T.neg(T.tensor([True]))), -T.tensor([1, -2])]


@differential
def test_raw_saved_tensor_after_free_and_index_bindings(T):
    """The bindings test_autograd's test_grad_fn_attr_bindings reads: a freed node still hands out
    its raw SavedTensor (data None, register_hooks refused with torch's message); an indexing node's
    indices as a tuple, raw ones as SavedTensors (the empty one refuses hooks); logit's eps."""
    a = T.ones(2, 2, requires_grad=True)
    out = a * a
    out.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: x)
    out.sum().backward()
    freed = out.grad_fn._raw_saved_self
    result = [type(freed).__name__, freed.data, catch(lambda: freed.register_hooks(lambda x: x, lambda x: x))]
    out = a * a
    out.sum().backward()
    result.append(catch(lambda: out.grad_fn._raw_saved_other.register_hooks(lambda x: x, lambda x: x)))
    indices = T.tensor([0, 1])
    out = a[:, indices]
    raw = out.grad_fn._raw_saved_indices
    result += [out.grad_fn._saved_indices, type(raw).__name__, [type(r).__name__ for r in raw],
               raw[1].register_hooks(lambda x: x + 0, lambda x: x),
               catch(lambda: raw[0].register_hooks(lambda x: x, lambda x: x))]
    out.sum().backward()
    result.append(a.grad)
    x = T.tensor([[0.2, 0.7]], requires_grad=True)
    result += [T.logit(x, 0.25).grad_fn._saved_eps, T.logit(x).grad_fn._saved_eps]
    return result


@differential
def test_div_by_a_number_saves_it_as_a_tensor(T):
    """x / 2 keeps the number as torch does, a 0-d tensor (its dtype by the number's kind), as x * 2 does;
    a second backward finds it freed."""
    x = T.tensor([1.0, 4.0], requires_grad=True)
    out = []
    for y in (x / 2, x / 2.5, x * 3, x.div(4)):
        out += [type(y.grad_fn).__name__, y.grad_fn._saved_other, y.grad_fn._saved_self]
    y = x / 2
    y.sum().backward()
    out += [x.grad, catch(lambda: y.grad_fn._saved_other), catch(lambda: y.sum().backward())]
    return out
