"""Behaviours that more client libraries (torch-optimizer, torchdiffeq, kornia, ignite, ...) rely on,
each checked against torch on its own as a differential scenario."""
from __future__ import annotations

import pytest

from difftest import catch, differential

NUMBER_FIRST = ("add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide")


@pytest.mark.parametrize("name", NUMBER_FIRST)
@differential
def test_number_as_first_operand(T, name):
    """torch.div(1.0, t): torch's parser takes a Python number for the tensor of these ops, promoted as
    a wrapped number (the tensor's dtype decides); bool and complex numbers keep their errors."""
    fn = getattr(T, name)
    out = []
    tensors = [T.tensor([1.5, 2.0], dtype=T.float64), T.tensor([3, 4]), T.tensor([3, 4], dtype=T.uint8),
               T.tensor(2, dtype=T.uint8), T.tensor([1.0, 2.0]), T.tensor([1.0, 2.0], dtype=T.float16)]
    for t in tensors:
        for number in (2, 2.5, True, 1j) if t.dtype != T.float16 else (2, 2.5):  # (float16 and 1j: complex32)
            out.append(catch(fn, number, t))
    out.append(catch(fn, 2, 3))
    out.append(catch(fn, 2.5, 4))
    x = T.tensor([1.5, 2.0], dtype=T.float64, requires_grad=True)
    y = fn(3.0, x)
    out.append((y, type(y.grad_fn).__name__, [type(f).__name__ for f, _ in y.grad_fn.next_functions]))
    out.append(catch(lambda: y.sum().backward()))
    out.append(x.grad)
    return out


@differential
def test_number_first_with_alpha(T):
    x = T.tensor([1.0, -2.0], dtype=T.float64, requires_grad=True)
    y = T.sub(2.0, x, alpha=3) + T.add(1, x, alpha=2)
    y.sum().backward()
    return y, x.grad, catch(T.sub, True, T.tensor([1, 2])), catch(T.add, "a", x)


@differential
def test_floor_divide_has_no_derivative(T):
    """torch's floor_divide records a NotImplemented node (edges to the inputs needing grad only), whose
    backward raises; div(rounding_mode='floor') has its zero derivative."""
    x = T.tensor([2.5, 3.0], dtype=T.float64, requires_grad=True)
    y = T.tensor([1.0, 2.0], dtype=T.float64)
    out = []
    for r in (T.floor_divide(x, y), T.floor_divide(y, x), x // 2, T.floor_divide(2, x), T.floor_divide(x, x)):
        out.append((r, type(r.grad_fn).__name__, r.grad_fn.name(),
                    [type(f).__name__ for f, _ in r.grad_fn.next_functions]))
        out.append(catch(lambda: r.sum().backward()))
    z = x.clone()
    z.floor_divide_(y)
    out.append((z, type(z.grad_fn).__name__, [type(f).__name__ for f, _ in z.grad_fn.next_functions]))
    d = T.div(x, 2, rounding_mode="floor")
    d.sum().backward()
    out.append((d, x.grad, catch(T.floor_divide, T.tensor([1.0]), 1j)))
    return out


FACTORIES = {"eye": ((3,), (2, 3)), "zeros": ((2, 2), ((3,),)), "ones": ((3,),), "empty": ((2,),),
             "full": (((2,), 3.5),), "arange": ((0, 1, 0.25), (5,)), "range": ((0, 2),), "linspace": ((0, 1, 5),),
             "logspace": ((0, 1, 3),), "rand": ((2,),), "randn": ((3,),), "randint": ((0, 5, (3,)), (7, (2,))),
             "randperm": ((4,),)}


@pytest.mark.parametrize("name", list(FACTORIES))
@differential
def test_factory_out(T, name):
    """torch.eye(n, out=t) (torch-optimizer's Shampoo): a factory makes its values in out's dtype (random
    ones draw in it), resizes out and writes it in place; another dtype= is a RuntimeError; requires_grad
    marks out; an out that requires grad is refused."""
    fn = getattr(T, name)
    out = []
    for args in FACTORIES[name]:
        for dtype in (T.float64, T.int64, T.float32):
            if dtype is T.int64 and name in ("rand", "randn", "logspace"):
                continue
            T.manual_seed(0)
            target = T.empty(0, dtype=dtype)
            made = catch(fn, *args, out=target)
            if not isinstance(made, T.Tensor):
                out.append(made)  # arange(0, 1, 0.25) in int64: step 0
                continue
            out.append((made is target, made.dtype, made.shape, made if name != "empty" else None))
    base = T.zeros(2, *fn(*FACTORIES[name][0]).shape, dtype=T.float64)
    view = base[1]  # written in place: the base sees it
    made = catch(fn, *FACTORIES[name][0], out=view)
    out.append((base._version, base if name != "empty" else None))
    out.append(catch(fn, *FACTORIES[name][0], out=T.empty(0, dtype=T.float64), dtype=T.float32))
    out.append(catch(fn, *FACTORIES[name][0], out=T.empty(0, dtype=T.float64, requires_grad=True)))
    marked = T.empty(0, dtype=T.float64)
    fn(*FACTORIES[name][0], out=marked, requires_grad=True)
    out.append(marked.requires_grad)
    return out


@differential
def test_range_warnings(T):
    def run():
        a = T.range(0, 2)
        b = T.arange(3.0, out=T.empty(2, 2))   # a non-empty out of another size: arange's own warning
        return a, b
    from difftest import warns
    return warns(run)


@differential
def test_arange_integer_dtypes_truncate(T):
    """arange in an integer dtype counts with start, end and step truncated toward zero (int64 also
    sizes the result from them; the narrower types size it from the given values)."""
    out = []
    for dtype in (T.int64, T.int32, T.int16, T.uint8):
        for args in ((0, 1, 0.25), (0, 5, 1.5), (0.5, 5, 2), (0.5, 5.7, 1), (-3.2, 2, 1.1), (5, 0.5, -1.5),
                     (2.7, 9.9, 2.5), (0.0, 7), (0, 1, 0)):
            if dtype is T.uint8 and args[0] < 0:
                continue
            out.append(catch(T.arange, *args, dtype=dtype))
    return out


@differential
def test_range_integer_dtypes(T):
    import warnings
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for dtype in (T.int64, T.int32, T.float32, T.float64):
            for args in ((0, 2), (0.5, 3.7, 1.5), (5, 0.5, -1.5), (1, 1), (-2.5, 3.9, 1.2), (0, 1, -1)):
                out.append(catch(T.range, *args, dtype=dtype))
    return out


def _deprecated_calls(T):
    a = T.tensor([1.0, 2.0], dtype=T.float64)
    b = T.tensor([3.0, 5.0], dtype=T.float64)
    M = T.tensor([[1.0, 2.0], [0.5, -1.0]], dtype=T.float64)
    v = T.tensor([1.0, -1.0], dtype=T.float64)
    return {
        "add": lambda: T.add(a, 2, b), "Tensor.add": lambda: a.add(2, b), "add_": lambda: a.clone().add_(-0.5, b),
        "sub": lambda: T.sub(a, 2, b), "Tensor.sub": lambda: a.sub(2, b), "sub_": lambda: a.clone().sub_(2, b),
        "addcmul": lambda: T.addcmul(a, 0.5, a, b), "Tensor.addcmul": lambda: a.addcmul(0.5, a, b),
        "addcmul_": lambda: a.clone().addcmul_(0.5, a, b), "addcdiv": lambda: T.addcdiv(a, 0.5, a, b),
        "Tensor.addcdiv": lambda: a.addcdiv(0.5, a, b), "addcdiv_": lambda: a.clone().addcdiv_(0.5, a, b),
        "addmm": lambda: T.addmm(2, M, 3, M, M), "addmm_beta": lambda: T.addmm(2, M, M, M),
        "Tensor.addmm": lambda: M.addmm(2, 3, M, M), "Tensor.addmm_": lambda: M.clone().addmm_(2, 3, M, M),
        "Tensor.addmm_beta": lambda: M.clone().addmm_(2, M, M), "addmv": lambda: T.addmv(2, v, 3, M, v),
        "addmv_beta": lambda: T.addmv(2, v, M, v), "Tensor.addmv_": lambda: v.clone().addmv_(2, 3, M, v),
        "addr": lambda: T.addr(2, M, 3, v, v), "Tensor.addr_": lambda: M.clone().addr_(2, 3, v, v),
        "baddbmm": lambda: T.baddbmm(2, M[None], 3, M[None], M[None]),
        "addbmm": lambda: T.addbmm(2, M, 3, M[None], M[None]),
        "Tensor.baddbmm_": lambda: M[None].clone().baddbmm_(2, 3, M[None], M[None]),
        "Tensor.addbmm_": lambda: M.clone().addbmm_(2, 3, M[None], M[None]),
        # not a deprecated form: the ordinary errors
        "add_bad": lambda: T.add(a, "x", b), "addcmul_bad": lambda: a.addcmul(0.5, a, [1.0, 2.0]),
        "addmm_bad": lambda: T.addmm(2, M, 3, M, [1]),
    }


@differential
def test_deprecated_positional_overloads(T):
    """p.add_(-lr, grad), x.addcmul_(value, t1, t2), torch.addmm(beta, m, alpha, m1, m2): torch's deprecated
    overloads (old optimizers use them) give the current forms' results, with a UserWarning."""
    from difftest import warns
    T.set_warn_always(True)
    try:
        out = {name: warns(call) for name, call in _deprecated_calls(T).items()}
    finally:
        T.set_warn_always(False)
    x = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    y = T.tensor([3.0, 4.0], dtype=T.float64, requires_grad=True)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = x.add(3, y).addcmul(0.5, x, y)
    z.sum().backward()
    out["grads"] = (z, x.grad, y.grad)
    return out


@differential
def test_vmap_over_autograd_grad(T):
    """vmap(lambda v: autograd.grad(y, x, v)) (torchjd's Jacobians): torch runs the backward once for the
    whole batch, so retain_graph=False frees the graph only after the mapped call; also nested."""
    x = T.tensor([1.0, 2.0, 3.0], dtype=T.float64, requires_grad=True)
    y = x.sin() * x

    def vjp(v):
        return T.autograd.grad(y, x, v)[0]
    jacobian = T.vmap(vjp)(T.eye(3, dtype=T.float64))
    freed = catch(lambda: T.autograd.grad(y.sum(), x))
    z = x.exp() * 2
    nested = T.vmap(T.vmap(lambda v: T.autograd.grad(z, x, v)[0]))(T.ones(2, 2, 3, dtype=T.float64))
    return jacobian, freed, nested, catch(lambda: T.autograd.grad(z.sum(), x))


@differential
def test_keyword_names_of_binary_ops(T):
    """torch's own argument names: pow(input, exponent) (geoopt passes exponent=), float_power,
    linalg.cross(input, other), cholesky_solve(input, input2)."""
    a = T.tensor([[1.5, 2.0], [0.5, 3.0]], dtype=T.float64)
    b = T.tensor([[0.5, 1.0], [2.0, -1.0]], dtype=T.float64)
    return [T.pow(a, exponent=2), T.pow(input=a, exponent=b), a.pow(exponent=0.5), T.float_power(a, exponent=2),
            T.linalg.cross(T.ones(3), other=T.tensor([1.0, 2.0, 3.0])),
            T.cholesky_solve(b, input2=T.eye(2, dtype=T.float64)), catch(T.pow, a, exponent="x")]


@differential
def test_remainder_sign_of_zero(T):
    """torch's remainder is fmod moved by the divisor: a zero result keeps the dividend's sign."""
    a = T.tensor([3.0, -3.0, 2.5, -2.5, 0.0, -0.0, 7.0, float("inf")], dtype=T.float64)
    b = T.tensor([-1.0, 1.0, -0.5, 0.5, -2.0, 2.0, -2.5, 2.0], dtype=T.float64)
    r = T.remainder(a, b)
    return (r, T.signbit(r), T.signbit(a % -1.0), T.signbit(T.remainder(a.float(), 1.0)),
            T.remainder(T.tensor([7, -7]), 3))



@differential
def test_make_subclass(T):
    class Located(T.Tensor):
        def __new__(cls, data, place="here", requires_grad=False):
            instance = T.Tensor._make_subclass(cls, data, requires_grad)
            instance.place = place
            return instance

    data = T.tensor([1.0, 2.0], dtype=T.float64)
    made = Located(data, place="there", requires_grad=True)
    with T.no_grad():
        made.mul_(3)  # the same memory as data
    out = (made * 2).sum()
    out.backward()
    return (type(made).__name__, made.place, made.requires_grad, made.is_leaf, data, made.grad,
            isinstance(made, T.Tensor), catch(T.Tensor._make_subclass, int, data),
            catch(T.Tensor._make_subclass, Located, T.tensor([1, 2]), True))


@differential
def test_names_kornia_reaches_for(T):
    """torch.torch is torch; torch._assert_async and torch._assert; functorch transforms reported active
    inside torch.func's transforms only; no fake tensor and no proxy-tracing mode outside compilation."""
    import importlib
    fake = importlib.import_module(T.__name__ + "._subclasses.fake_tensor")
    proxy = importlib.import_module(T.__name__ + ".fx.experimental.proxy_tensor")
    seen = []

    def probe(x):
        seen.append(T._C._are_functorch_transforms_active())
        return x.sin().sum()
    T.func.grad(probe)(T.tensor([1.0, 2.0]))
    T.vmap(lambda x: probe(x) * 1)(T.ones(2, 3))  # (hookgrad maps slice by slice: it calls probe twice)
    return (T.torch is T, T.torch.Tensor is T.Tensor, T._assert_async(T.tensor(True)),
            catch(T._assert_async, T.tensor(0.0)), catch(T._assert_async, T.tensor(False), "my message"),
            catch(T._assert_async, T.tensor([1, 1])), catch(T._assert_async, T.tensor([])), catch(T._assert_async, 1),
            catch(T._assert, False, "no"), T._assert(True, "fine"),
            T._C._are_functorch_transforms_active(), sorted(set(seen)), fake.is_fake(T.ones(2)), fake.is_fake(3),
            proxy.get_proxy_mode())


def test_distributed_optim_and_rpc_names():
    """Ignite's Checkpoint imports ZeroRedundancyOptimizer for an isinstance check, torchopt imports
    torch.distributed.rpc: both modules exist; hookgrad shards nothing and has no RPC, and says so
    (torch on a build without RPC answers is_available() False too)."""
    import hookgrad
    from hookgrad.distributed.optim import ZeroRedundancyOptimizer
    from hookgrad.distributed import rpc
    optimizer = hookgrad.optim.SGD([hookgrad.zeros(2, requires_grad=True)], lr=0.1)
    assert not isinstance(optimizer, ZeroRedundancyOptimizer)
    with pytest.raises(RuntimeError, match="ZeroRedundancyOptimizer"):
        ZeroRedundancyOptimizer([hookgrad.zeros(2, requires_grad=True)], hookgrad.optim.SGD, lr=0.1)
    assert rpc.is_available() is False


FOREACH_UNARY = ("abs", "ceil", "cos", "erf", "exp", "expm1", "floor", "frac", "lgamma", "log1p", "neg",
                 "reciprocal", "round", "sigmoid", "sign", "sin", "sqrt", "tanh", "trunc", "rsqrt")


@differential
def test_foreach_functions(T):
    """torch._foreach_* (ema-pytorch's use_foreach, optimizers' foreach paths): each op across a list of
    tensors with numbers, number lists, tensor lists or a tensor as the other operand; the in-place
    forms update the tensors and return the list; torch's errors for empty and mismatched lists."""
    def fresh():
        return [T.tensor([1.5, -2.0, 0.25], dtype=T.float64), T.tensor([[3.0, 0.5]], dtype=T.float64)]
    others = [T.tensor([0.5, 1.0, 2.0], dtype=T.float64), T.tensor([[1.0, -1.0]], dtype=T.float64)]
    out = {}
    for name in FOREACH_UNARY:
        a = [t.abs() + 0.1 for t in fresh()]
        out[name] = (getattr(T, f"_foreach_{name}")(a), getattr(T, f"_foreach_{name}_")(a), a)
    for name in ("add", "sub", "mul", "div", "maximum", "minimum", "clamp_min", "clamp_max", "pow"):
        for other in (2.0, [0.5, 3.0], others, T.tensor(1.5, dtype=T.float64)):
            a = fresh() if name != "pow" else [t.abs() for t in fresh()]
            out[f"{name}_{type(other).__name__}"] = (getattr(T, f"_foreach_{name}")(a, other),
                                                     getattr(T, f"_foreach_{name}_")(a, other), a)
    a = fresh()
    out["alpha"] = (T._foreach_add(a, others, alpha=2), T._foreach_sub_(a, others, alpha=0.5), a)
    for name in ("addcmul", "addcdiv"):
        a = fresh()
        out[name] = (getattr(T, f"_foreach_{name}")(a, others, others, 0.5),
                     getattr(T, f"_foreach_{name}")(a, others, others, [0.5, 2.0]),
                     getattr(T, f"_foreach_{name}_")(a, others, others, T.tensor([1.0, 3.0], dtype=T.float64)), a)
    a = fresh()
    out["lerp"] = (T._foreach_lerp(a, others, 0.3), T._foreach_lerp_(a, others, [0.1, 0.9]), a)
    a = fresh()
    out["reductions"] = (T._foreach_norm(a), T._foreach_norm(a, 1), T._foreach_max(a), T._foreach_clone(a),
                         T._foreach_copy_(a, others), T._foreach_zero_(a), a)
    x = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    y, = T._foreach_mul([x], 3.0)
    (y * y).sum().backward()
    out["grad"] = x.grad
    out["errors"] = (catch(T._foreach_add, [], 1.0), catch(T._foreach_add, fresh(), [1.0]),
                     catch(T._foreach_add, fresh(), others[:1]))
    return out


@differential
def test_tensor_subclass_construction(T):
    """A subclass's own __new__ (super().__new__(cls, data) or _make_subclass) makes the instance; its
    __init__ arguments change nothing in Tensor; a subclass without __new__ takes Tensor's constructor."""
    class Tagged(T.Tensor):
        def __new__(cls, data, tag="x"):
            made = super().__new__(cls, data)
            made.tag = tag
            return made

    class Plain(T.Tensor):
        pass

    class Scaled(T.Tensor):
        def __new__(cls, x, scale):
            return T.Tensor._make_subclass(cls, x * scale, True)

        def __init__(self, x, scale):
            self.scale = scale
    a, b, c, d = Tagged([1.0, 2.0], tag="y"), Plain([3.0, 4.0]), Plain(2, 3), Scaled(T.ones(2), 3.0)
    return (type(a).__name__, a.tag, a.tolist(), a.dtype, type(b).__name__, b.tolist(), tuple(c.shape),
            type(d).__name__, d.tolist(), d.requires_grad, d.scale)
