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
