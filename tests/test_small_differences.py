"""Small differences from torch found by the day-one sweeps, each checked on both frameworks:
integer scalars that wrap around, the sign of a zero remainder, floor division through fmod,
bool operands of subtraction, complex add/sub through a complex product with alpha."""
from __future__ import annotations

import math

import pytest
from difftest import catch, differential

INF = float("inf")


def text(x) -> str:
    """A tensor's printed form (it shows the sign of a zero, NaNs and infinities), under torch's name."""
    return str(x).replace("hookgrad.", "torch.")


@differential
def test_python_ints_wrap_around_integer_types(T):
    u = T.tensor([0, 1, 250], dtype=T.uint8)
    i8 = T.tensor([100, -100], dtype=T.int8)
    out = []
    for v in (-1, 256, 1000, 2 ** 31, 2 ** 63 - 1, 2 ** 63, -2 ** 63):
        out += [text(u + v), text(u - v), text(u * v), text(i8 * v), text(T.tensor([1], dtype=T.int32) + v)]
    out += [text(u // 257), text(u % 258), text(u & 257), text(u | -1), text(T.remainder(u, -1)), text(u == 256),
            text(u < 300), text(u.clone().mul_(-1)), text(i8.clone().add_(1000))]
    out.append(catch(lambda: u + 2 ** 64))
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@differential
def test_remainder_and_floor_division_of_floats(T, dtype):
    dt = getattr(T, dtype)
    a = T.tensor([7.5, -7.5, 7.5, -7.5, -0.0, 0.0, -3.0, 3.0, 1.0, 5.0, INF, -INF], dtype=dt)
    b = T.tensor([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 3.0, -3.0, 0.1, 0.0, 2.0, 2.0], dtype=dt)
    return [text(a % b), text(a // b), text(T.fmod(a, b)), text(a % -1.5), text(a // 0.1), text(a % 0.3),
            text(3 % b), text(5 // b), text(a % INF), text(a // INF), text(T.div(a, 0.1, rounding_mode="floor")),
            text(T.div(a, 0.1, rounding_mode="trunc"))]


@differential
def test_remainder_and_floor_division_of_integers(T):
    a = T.tensor([7, -7, 7, -7, 0])
    b = T.tensor([2, 2, -2, -2, 5])
    return [text(a // b), text(a % b), text(T.fmod(a, b)), text(a // -3), text(a % -3), text(10 // b), text(10 % b),
            catch(lambda: a // 0), catch(lambda: a % 0)]


@pytest.mark.parametrize("expression", ["a - True", "a - False", "True - a", "T.rsub(a, True)", "a.sub_(True)",
                                        "a - T.tensor(True)", "a + True", "a.sub(1, alpha=True)",
                                        "a.add(1, alpha=True)", "f - True", "f.sub(True)",
                                        "T.tensor([True]).add(True, alpha=True)"])
@differential
def test_bool_operands_of_subtraction(T, expression):
    a, f = T.tensor([1, 2]), T.tensor([1.5])
    return catch(lambda: text(eval(expression)))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@differential
def test_complex_add_and_sub_multiply_by_alpha(T, dtype):
    dt = getattr(T, dtype)
    a = T.tensor([1 + 0j, 1 + 1j, complex(INF, 0), complex(0, -INF)], dtype=dt)
    b = T.tensor([complex(INF, 1), complex(1, INF), complex(INF, INF), 2 + 0j], dtype=dt)
    return [text(x) for x in (a + b, a - b, b - a, T.add(a, b, alpha=2), T.sub(a, b, alpha=2), T.add(a, b, alpha=1j),
                             a + complex(INF, 1), a - complex(INF, 1), complex(INF, 1) - a, a + 1, a.add(INF, alpha=2),
                             b.clone().add_(a), T.rsub(a, b, alpha=2), T.add(a, 2, alpha=3), a + a.real)]


_NOT_BROADCASTING = [
    "T.maximum(T.ones(2, 3), T.ones(4))", "T.minimum(T.ones(2, 3), T.ones(4))", "T.max(T.ones(2), T.ones(3))",
    "T.fmax(T.ones(2, 3), T.ones(4))", "T.isclose(T.ones(2), T.ones(3))", "T.allclose(T.ones(2), T.ones(3))",
    "T.addcmul(T.ones(3), T.ones(2), T.ones(3))", "T.addcmul(T.ones(3), T.ones(3), T.ones(2))",
    "T.addcdiv(T.ones(3), T.ones(2), T.ones(3))", "T.addcmul(T.ones(2), T.ones(3), T.ones(3))",
    "T.lerp(T.ones(2), T.ones(3), 0.5)", "T.lerp(T.ones(2), T.ones(2), T.ones(3))", "T.atan2(T.ones(2), T.ones(3))",
    "T.heaviside(T.ones(2), T.ones(3))", "T.clamp(T.ones(2), T.ones(3))", "T.clamp(T.ones(2), None, T.ones(3))",
    "T.ones(2, dtype=T.bool) & T.ones(3, dtype=T.bool)", "T.pow(T.ones(2), T.ones(3))",
    "T.float_power(T.ones(2), T.ones(3))", "T.logical_and(T.ones(2), T.ones(3))", "T.logical_xor(T.ones(2), T.ones(3))",
    "T.remainder(T.ones(2), T.ones(3))", "T.floor_divide(T.ones(2), T.ones(3))", "T.fmod(T.ones(2), T.ones(3))",
    "T.masked_select(T.ones(2), T.ones(3, dtype=T.bool))", "T.ones(3).masked_fill(T.tensor([True, False]), 0.)",
    "T.ones(3).masked_fill_(T.ones(2, 3, dtype=T.bool), 0.)", "T.ones(2).eq(T.ones(3))", "T.ones(2) % T.ones(3)",
    "T.where(T.ones(2, dtype=T.bool), T.ones(3), 0.)", "T.bitwise_xor(T.ones(2, dtype=T.long), T.ones(3, dtype=T.long))",
]


@pytest.mark.parametrize("expression", _NOT_BROADCASTING)
@differential
def test_operands_that_do_not_broadcast(T, expression):
    try:
        eval(expression)
    except Exception as exc:  # noqa: BLE001 - the class and torch's message are compared
        return type(exc).__name__, str(exc)
    return None


@differential
def test_masked_fill_broadcasts_self_and_sums_its_gradient(T):
    x = T.ones(3, requires_grad=True)
    v = T.tensor(2.0, requires_grad=True)
    mask = T.tensor([[True, False, False], [False, False, True]])
    weights = T.arange(6.0).reshape(2, 3)
    y = x.masked_fill(mask, 0.0)
    z = x.masked_fill(mask, v)
    (y * weights).sum().backward()
    first = x.grad.clone()
    (z * weights).sum().backward()
    return y, z, first, x.grad, v.grad, type(y.grad_fn).__name__, type(z.grad_fn).__name__


_MIXED_DTYPES_AND_INDEX_RULES = [
    # gather / scatter: int32 or int64 index, no negative index, index no larger than self (and src)
    "x.gather(1, T.tensor([[0], [1]], dtype=T.int32))", "x.gather(1, T.tensor([[0.], [1.]]))",
    "x.gather(1, T.tensor([[0], [1]], dtype=T.int16))", "x.gather(1, T.tensor([[0], [1], [0]]))",
    "x.gather(0, T.tensor([[0, 1, 0]]))", "x.gather(1, T.tensor([[0], [-1]]))", "x.gather(1, T.tensor([[0], [-3]]))",
    "x.gather(1, T.tensor([[2], [0]]))", "T.zeros(3).scatter(0, T.tensor([0.]), 1.)",
    "T.zeros(3).scatter(0, T.tensor([0], dtype=T.int32), 1.)", "T.zeros(3).scatter_(0, T.tensor([5]), 1.)",
    "T.zeros(3).scatter_(0, T.tensor([-1]), 1.)", "T.zeros(3).scatter_(0, T.tensor([0]), T.ones(1, dtype=T.float64))",
    "T.zeros(3).scatter(0, T.tensor([0]), T.ones(1, dtype=T.float64))",
    "T.zeros(3).scatter_add(0, T.tensor([0]), T.ones(1, dtype=T.float64))",
    "T.zeros(3).scatter_add(0, T.tensor([0], dtype=T.int32), T.ones(1))", "T.zeros(3).scatter_add(0, T.tensor([7]), T.ones(1))",
    "T.zeros(3, 2).scatter_(0, T.tensor([[0, 1, 2, 0]]), 1.)", "T.zeros(3, 2).scatter_(0, T.tensor([[0], [1]]), T.ones(1, 1))",
    "T.zeros(3).scatter_reduce(0, T.tensor([0]), T.ones(1, dtype=T.float64), 'sum')",
    # index_* / put / take / masked_scatter / index_put: self's dtype for the source, torch's index rules
    "T.zeros(3).index_add(0, T.tensor([0]), T.ones(1, dtype=T.float64))",
    "T.zeros(3).index_add(0, T.tensor([0]), T.ones(1, dtype=T.float64), alpha=2)",
    "T.zeros(3).index_add(0, T.tensor([0], dtype=T.int32), T.ones(1))", "T.zeros(3).index_add(0, T.tensor([0.]), T.ones(1))",
    "T.zeros(3).index_copy(0, T.tensor([0]), T.ones(1, dtype=T.float64))",
    "T.zeros(3).index_copy(0, T.tensor([0], dtype=T.int32), T.ones(1))", "T.zeros(3).index_copy(0, T.tensor([0.]), T.ones(1))",
    "T.zeros(3).index_fill(0, T.tensor([0], dtype=T.int32), 1.)", "T.zeros(3).index_fill(0, T.tensor([0.]), 1.)",
    "T.zeros(3).index_reduce(0, T.tensor([0]), T.ones(1, dtype=T.float64), 'prod')",
    "T.zeros(3).index_reduce(0, T.tensor([0.]), T.ones(1), 'prod')",
    "T.zeros(3).masked_scatter(T.tensor([True, False, True]), T.ones(2, dtype=T.float64))",
    "T.zeros(3).masked_scatter_(T.tensor([True, False, True]), T.ones(2, dtype=T.float64))",
    "T.zeros(3).masked_fill(T.tensor([True, False, True]), T.tensor(1., dtype=T.float64))",
    "T.zeros(3).put_(T.tensor([0]), T.ones(1, dtype=T.float64))", "T.zeros(3).put(T.tensor([0]), T.ones(1, dtype=T.float64))",
    "T.zeros(3).put_(T.tensor([0], dtype=T.int32), T.ones(1))", "T.take(T.zeros(3), T.tensor([0], dtype=T.int32))",
    "T.take(T.zeros(3), T.tensor([0.]))", "T.zeros(3).index_put_((T.tensor([0]),), T.ones(1, dtype=T.float64))",
    "T.zeros(3).index_put((T.tensor([0]),), T.ones(1, dtype=T.float64))",
    "T.zeros(3).index_put_((T.tensor([0]),), T.tensor(1, dtype=T.int64))",
    # pointwise ops with one dtype rule
    "T.lerp(T.zeros(3), T.ones(3, dtype=T.float64), 0.5)", "T.lerp(T.zeros(3, dtype=T.float64), T.ones(3), 0.5)",
    "T.lerp(T.zeros(3), T.ones(3), T.tensor(0.5, dtype=T.float64))",
    "T.lerp(T.zeros(3), T.ones(3), T.full((3,), 0.5, dtype=T.float64))",
    "T.lerp(T.zeros(3), T.ones(3), T.tensor([0.5], dtype=T.float64))", "T.zeros(3).lerp_(T.ones(3, dtype=T.float64), 0.5)",
    "T.lerp(T.zeros(2, dtype=T.float16), T.zeros(2), 0.5)", "T.lerp(T.zeros(2, dtype=T.complex64), T.zeros(2, dtype=T.complex128), 0.5)",
    "T.cross(T.zeros(3, dtype=T.float64), T.ones(3), dim=0)", "T.linalg.cross(T.zeros(3), T.ones(3, dtype=T.float64))",
    "T.where(T.tensor([1, 0]), 1., 0.)", "T.where(T.tensor([1., 0.]), T.ones(2), T.zeros(2))",
    "T.ones(2).where(T.tensor([1, 0]), 0.)", "T.where(T.tensor([1, 0], dtype=T.uint8), T.ones(2), T.zeros(2))",
    "T.where(T.tensor([3, 0]))", "T.addcmul(T.zeros(3), T.ones(3, dtype=T.float64), T.ones(3))",
    "F.huber_loss(T.zeros(3), T.ones(3, dtype=T.float64))", "F.huber_loss(T.zeros(3), T.ones(3, dtype=T.float64), reduction='none')",
    "F.huber_loss(T.zeros(3), T.ones(3, dtype=T.long))", "F.huber_loss(T.zeros(3, dtype=T.float64), T.ones(3))",
    "F.huber_loss(T.zeros(3, requires_grad=True), T.ones(3, dtype=T.float64)).backward()",
    "F.huber_loss(T.zeros(3, dtype=T.float64, requires_grad=True), T.ones(3)).backward()",
    "F.huber_loss(T.zeros(3), T.ones(3, dtype=T.float64, requires_grad=True)).backward()",
    "F.huber_loss(T.zeros(3, requires_grad=True), T.ones(3, dtype=T.float16)).backward()",
    "F.smooth_l1_loss(T.zeros(3, requires_grad=True), T.ones(3, dtype=T.float64)).backward()",
]


@pytest.mark.parametrize("expression", _MIXED_DTYPES_AND_INDEX_RULES)
@differential
def test_mixed_dtypes_and_index_rules(T, expression):
    import warnings
    F = T.nn.functional
    x = T.ones(2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = eval(expression)
        except Exception as exc:  # noqa: BLE001 - the class and torch's message are compared
            return type(exc).__name__, str(exc)
    return result


@pytest.mark.parametrize("args,dtype", [((0, 5, 1.5), "int64"), ((0, 5, 1.5), "int32"), ((0.5, 5, 1.5), "int64"),
                                        ((0.5, 5, 1.5), "int32"), ((0, 5, 0.5), "int64"), ((0, 5, 0.5), "int32"),
                                        ((0, -5, -1.5), "int16"), ((0, 2.5), "int64"), ((0.9, 3.9), "uint8"),
                                        ((10, 0, -3), "int64"), ((5,), "bool"), ((0, 10, 0.1), "float32"),
                                        ((0, 10, 0.1), "float16"), ((0, 3, 0.1), "bfloat16"),
                                        ((0, 100, 0.37), "float32"), ((5, -3, -0.11), "float16"),
                                        ((0, 300, 0.013), "float32"), ((0, 1, 1 / 3), "bfloat16")])
@differential(rtol=0, atol=0)
def test_arange_values_as_torch_rounds_them(T, args, dtype):
    result = catch(T.arange, *args, dtype=getattr(T, dtype))
    return result if not hasattr(result, "float") else (result.dtype, result.float().tolist())


_MESSAGES = [
    "a.grad = T.ones(3)", "a.grad = T.ones(2, dtype=T.float64)", "a.grad = T.ones(2, dtype=T.long)",
    "a.grad = T.ones(2, dtype=T.float16)", "a.grad = [1., 1.]", "a.grad = T.ones(1, 2)",
    "T.cat(T.ones(2))", "T.stack(T.ones(2))", "T.cat(T.nn.Parameter(T.ones(1)))", "T.relu(Foo())",
    "T.cat(Foo())", "T.relu(np.ones(1))",
    "T.einsum('ij->ik', x)", "T.einsum('ij->ii', x)", "T.einsum('ij->i.', x)", "T.einsum('ij-ji', x)",
    "T.einsum('ij->j->i', x)", "T.einsum('i1->i', x)", "T.einsum('ij->ij,', x)", "T.einsum('i j->j i', x)",
    "T.einsum('...ij->...', x)", "x.tile(2)", "x.tile(2, 1)", "x.tile((2,))", "T.tile(x, (2,))", "T.tile(x, 2)",
    "T.ones(2).expand(-1, 2)", "T.ones(2).expand(3, -1)", "x[[0, 1], [0, 1, 0]]", "x[[]]", "x[[], []]",
]


@pytest.mark.parametrize("statement", _MESSAGES)
@differential
def test_errors_in_torch_words(T, statement):
    import numpy as np

    class Foo:
        pass
    a = T.ones(2, requires_grad=True)
    x = T.ones(2, 2)
    try:
        exec(statement)
    except Exception as exc:  # noqa: BLE001 - the class and torch's message are compared
        return type(exc).__name__, str(exc)
    return a.grad, x


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("value", [None, 0.0, 0, 1.5])
@pytest.mark.parametrize("shape,pad", [((1, 2, 3), (1, 1)), ((1, 1, 3, 4), (1, 1, 1, 1)), ((1, 2, 3), (1,)),
                                       ((1, 2, 3), (3, 3)), ((3,), (1, 1)), ((1, 1, 3, 4), (1, 1))])
@differential
def test_pad_modes_and_values(T, mode, value, shape, pad):
    x = T.arange(float(math.prod(shape))).reshape(shape)
    kwargs = {} if value is None else {"value": value}
    try:
        return T.nn.functional.pad(x, pad, mode=mode, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the class and torch's message are compared
        return type(exc).__name__, str(exc)


@differential
def test_writes_into_views_of_expanded_tensors(T):
    x = T.zeros(3).expand(2, 3)
    x[0, 0] = 1
    y = T.zeros(1, 3).expand(2, 3)
    y[1] = T.tensor([1.0, 2.0, 3.0])
    refused = []
    for write in (lambda: y.add_(1), lambda: y.__setitem__((slice(None), 0), 2.0), lambda: T.ones(3).expand(2, 3).mul_(2)):
        try:
            write()
            refused.append(None)
        except RuntimeError as exc:
            refused.append(str(exc))
    return x, y, refused


@differential
def test_angle_gradients_and_second_derivative_at_zero(T):
    out = []
    for value in (0j, 1 + 0j, 1j, -2 + 1j):
        z = T.tensor(value, requires_grad=True)
        (g,) = T.autograd.grad(T.angle(z), z, create_graph=True)
        out += [g, T.autograd.grad(g.real, z)[0]]
    z = T.tensor([0j, 1 + 1j, -3j, 0j], requires_grad=True)
    (g,) = T.autograd.grad(T.angle(z).sum(), z, create_graph=True)
    out += [g, T.autograd.grad(g.imag.sum(), z)[0]]
    x = T.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    (g,) = T.autograd.grad(T.angle(x).sum(), x, create_graph=True)
    out += [g, g.requires_grad, g.grad_fn is None]
    return out


@pytest.mark.parametrize("expression", ["T.autograd.detect_anomaly()(lambda: 1)", "T.autograd.detect_anomaly(lambda: 1)()",
                                        "T.autograd.set_detect_anomaly(True)(lambda: 1)",
                                        "callable(T.autograd.detect_anomaly())"])
@differential
def test_detect_anomaly_is_no_decorator(T, expression):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = eval(expression)
        except Exception as exc:  # noqa: BLE001 - the class and torch's message are compared
            result = type(exc).__name__, str(exc)
        T.autograd.set_detect_anomaly(False)
    return result


_IN_PLACE_VIEWS = {
    "squeeze_": lambda x: x.squeeze_(), "squeeze_ dim": lambda x: x.squeeze_(1), "squeeze_ -dim": lambda x: x.squeeze_(-2),
    "squeeze_ dims": lambda x: x.squeeze_((1,)), "squeeze_ -dims": lambda x: x.squeeze_((-2, 0)),
    "unsqueeze_": lambda x: x.unsqueeze_(0), "unsqueeze_ -dim": lambda x: x.unsqueeze_(-1),
    "transpose_": lambda x: x.transpose_(0, 2), "transpose_ -dim": lambda x: x.transpose_(-1, 0),
    "swapdims_": lambda x: x.swapdims_(0, 1), "t_": lambda x: x.squeeze_(1).t_(), "mul": lambda x: x * 2,
    "relu_": lambda x: x.relu_(),
}


@pytest.mark.parametrize("name", list(_IN_PLACE_VIEWS))
@differential
def test_saved_attributes_of_in_place_view_ops(T, name):
    leaf = T.ones(2, 1, 3, requires_grad=True)
    y = _IN_PLACE_VIEWS[name](leaf.clone())
    node = y.grad_fn
    saved = {a: getattr(node, a) for a in dir(node) if a.startswith("_saved") and a not in ("_saved_result", "_saved_self")}
    underscored = [a for a in dir(node) if a.startswith("_") and not a.startswith("__")
                   and a not in ("_input_metadata", "_set_sequence_nr")]   # torch's C++ node API hookgrad lacks
    y.sum().backward()
    return type(node).__name__, saved, underscored, leaf.grad


@differential
def test_add_with_a_zero_dim_tensor_alpha(T):
    # torch_optimizer's Lamb steps with alpha=-lr * trust_ratio, a 0-d tensor
    p = T.tensor([1.0, 2.0, 3.0])
    step = T.tensor([0.5, -0.5, 1.0])
    ratio = T.tensor(0.25)
    p.add_(step, alpha=-0.1 * ratio)
    q = T.add(p, step, alpha=T.tensor(2.0))
    return p, q, T.sub(q, step, alpha=T.tensor(3.0))
