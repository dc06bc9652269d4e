"""complex32 (chalf) against torch: creation, conversions both ways (each part rounded to float16),
printing, Python values, promotion (float16 with a Python complex is complex32), the few ops torch
computes on it (add, sub, mul, neg, abs, conj, comparisons, copies and views, the float16 views of
its parts) and torch's NotImplementedError for the rest."""
from __future__ import annotations

import pytest

import hookgrad
from difftest import catch, differential

VALUES = [1 + 2j, 0.1 - 3.3j, 70000 + 1j, -0.0 + 0j, 1e-8 - 1e-8j, 65504 - 65520j, float("nan") + 1j]


def _shown(T, t):
    """repr as torch spells it (hookgrad prints ``torch.`` under ``hookgrad run``; the line breaks
    depend on that name's length, so it is printed with torch's name here)."""
    if T is hookgrad:
        original = hookgrad._dtype.shown_name
        hookgrad._dtype.shown_name = lambda: "torch"
        try:
            return repr(t)
        finally:
            hookgrad._dtype.shown_name = original
    return repr(t)


@differential(rtol=0, atol=0)
def test_creation_and_conversions(T):
    c64 = T.tensor(VALUES)
    c32 = c64.to(T.complex32)
    return [c32, T.tensor(VALUES, dtype=T.chalf), c64.chalf(), T.tensor(VALUES, dtype=T.complex128).to(T.chalf),
            T.tensor([1.5, -2.0]).to(T.chalf), T.tensor([1.5, -2.0], dtype=T.float16).to(T.chalf),
            T.tensor([3, -4]).to(T.chalf), T.tensor([True, False]).to(T.chalf),
            c32.to(T.complex64), c32.to(T.complex128), c32[:6].tolist(), c32[1].item(),
            T.zeros(2, dtype=T.chalf), T.ones(2, dtype=T.chalf), T.full((2,), 1.1 + 2j, dtype=T.chalf),
            T.empty(3, dtype=T.chalf).shape, T.zeros_like(c32), T.ones_like(c32)]


@differential(rtol=0, atol=0)
def test_conversions_to_real_types_keep_the_real_part(T):
    # (both warn "Casting complex values to real discards the imaginary part" once per process; which
    # test comes first decides who warns here, so the warning is not compared)
    import warnings
    c32 = T.tensor(VALUES).chalf()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [c32.to(T.float32), c32.half(), c32.to(T.float64), c32.to(T.bfloat16)]


@differential
def test_dtype_facts_and_promotion(T):
    c32 = T.zeros(2, dtype=T.chalf)
    f16 = T.tensor([1.0], dtype=T.float16)
    return [T.complex32 is T.chalf, c32.dtype, c32.element_size(), c32.is_complex(), c32.is_floating_point(),
            T.complex32.itemsize, T.complex32.is_complex, T.complex32.to_real() if hasattr(T.complex32, "to_real")
            else T.float16, (f16 + 1j).dtype, (f16 * (1 + 1j)).dtype, T.result_type(f16, 1j),
            T.promote_types(T.float16, T.complex32), T.promote_types(T.float32, T.complex32),
            T.promote_types(T.bfloat16, T.complex32), T.promote_types(T.int64, T.complex32),
            (c32 + T.ones(2, dtype=T.complex64)).dtype, (c32 + T.ones(2)).dtype, (c32 + T.ones(2).half()).dtype,
            c32.requires_grad_().requires_grad, catch(lambda: c32.detach().numpy())]


OPS = {
    "add": lambda T, x: x + x, "sub": lambda T, x: x - x, "mul": lambda T, x: x * x, "div": lambda T, x: x / x,
    "add_float": lambda T, x: x + 1.5, "add_complex": lambda T, x: x + 1.5j, "mul_complex": lambda T, x: x * (2 - 1j),
    # finite values only: torch's complex64 add multiplies its second operand by alpha (1 + 0j), which
    # makes a part NaN next to an infinite one; hookgrad's complex64 add does not (a known difference)
    "add_c64": lambda T, x: x[:2] + T.tensor(VALUES[:2]), "add_f16": lambda T, x: x + T.ones(len(VALUES)).half(),
    "sub_alpha": lambda T, x: T.sub(x, x * 0.5, alpha=2), "neg": lambda T, x: -x, "abs": lambda T, x: x.abs(),
    "conj": lambda T, x: x.conj(), "real": lambda T, x: x.real, "imag": lambda T, x: x.imag,
    "view_as_real": lambda T, x: T.view_as_real(x), "view_float16": lambda T, x: x.view(T.float16),
    "view_as_complex": lambda T, x: T.view_as_complex(T.tensor([[1.0, 2.0], [3.0, -4.0]]).half()),
    "complex": lambda T, x: T.complex(T.ones(2).half(), T.tensor([0.5, -2.0]).half()),
    "cat": lambda T, x: T.cat([x, x]), "stack": lambda T, x: T.stack([x, x]), "clone": lambda T, x: x.clone(),
    "index": lambda T, x: x[1:3], "index_tensor": lambda T, x: x[T.tensor([0, 2])], "reshape": lambda T, x: x.reshape(7, 1),
    "t": lambda T, x: x[:6].reshape(2, 3).t().contiguous(), "where": lambda T, x: T.where(x == x, x, -x),
    "eq": lambda T, x: x == x, "ne": lambda T, x: x != x, "isnan": lambda T, x: x.isnan(),
    "fill_": lambda T, x: x.clone().fill_(1.1 + 3j),
    "setitem": lambda T, x: (lambda t: (t.__setitem__(0, 5.1 + 0.1j), t)[1])(x.clone()),
    "copy_": lambda T, x: x.clone().copy_(T.tensor(VALUES)), "exp": lambda T, x: x.exp(),
    "sqrt": lambda T, x: x.sqrt(), "sin": lambda T, x: x.sin(), "tanh": lambda T, x: x.tanh(),
    "log": lambda T, x: x.log(), "sigmoid": lambda T, x: x.sigmoid(), "reciprocal": lambda T, x: x.reciprocal(),
    "pow": lambda T, x: x ** 2, "sum": lambda T, x: x.sum(), "mean": lambda T, x: x.mean(),
    "angle": lambda T, x: x.angle(), "mm": lambda T, x: x[:2].reshape(1, 2) @ x[:2].reshape(2, 1),
    "polar": lambda T, x: T.polar(T.ones(2).half(), T.ones(2).half()),
    "fft": lambda T, x: T.fft.fft(x[:2]),
}


@pytest.mark.parametrize("op_name", sorted(OPS))
@differential(rtol=0, atol=0)
def test_ops_run_or_refuse_as_in_torch(T, op_name):
    return catch(OPS[op_name], T, T.tensor(VALUES).chalf())


@differential
def test_printing(T):
    c32 = T.tensor(VALUES).chalf()
    return [_shown(T, c32), _shown(T, c32[1]), _shown(T, T.zeros(2, dtype=T.chalf)), _shown(T, c32[:2] * 1000),
            _shown(T, T.full((2,), 1.1 + 2j, dtype=T.chalf)), _shown(T, c32[:3].reshape(3, 1))]


@differential
def test_random_complex32(T):
    T.manual_seed(0)
    return [T.randn(3, dtype=T.chalf).dtype, T.rand(2, 2, dtype=T.chalf).shape]


def test_parts_are_float16_views_that_write_through():
    c = hookgrad.tensor([1 + 2j, 3 - 4j], dtype=hookgrad.chalf)
    c.real[0] = 7.0
    hookgrad.view_as_real(c)[1, 1] = 0.5
    assert c.tolist() == [7 + 2j, 3 + 0.5j]


GRADIENTS = {
    "mul_add": lambda T, c, d: c * d + c, "sub_neg": lambda T, c, d: -(c - d * 2), "abs": lambda T, c, d: c.abs(),
    "sgn": lambda T, c, d: c.sgn() * d, "conj": lambda T, c, d: c.conj() * d,
    "real_imag": lambda T, c, d: c.real * d.imag, "view_as_real": lambda T, c, d: T.view_as_real(c) * 2,
    "mul_scalar": lambda T, c, d: c * (1 - 2j), "to_c64": lambda T, c, d: c.to(T.complex64) * d.to(T.complex64),
    "cat": lambda T, c, d: T.cat([c, d]), "index": lambda T, c, d: c[1:] * d[:1],
    "where": lambda T, c, d: T.where(T.tensor([True, False]), c, d), "clone": lambda T, c, d: c.clone(),
    "broadcast": lambda T, c, d: c.reshape(2, 1) + d,
}


@pytest.mark.parametrize("case", sorted(GRADIENTS))
@differential(rtol=0, atol=0)
def test_gradients(T, case):
    """torch's convention (the gradient carries conj(df/dz)), each step rounded to complex32; a
    broadcast's gradient needs a complex32 sum, which torch has no kernel for."""
    c = T.tensor([1 + 2j, 3 - 1j], dtype=T.chalf).requires_grad_()
    d = T.tensor([0.5 - 1j, 2 + 2j], dtype=T.chalf).requires_grad_()
    y = GRADIENTS[case](T, c, d)
    return [y.grad_fn.name(), catch(lambda: y.backward(T.ones_like(y))), c.grad, d.grad]
