"""torch.autograd.forward_ad: dual tensors and their tangents, against torch's forward-mode AD.

Every row of the op registry (unary, binary, matrix and nn.functional rows) runs with a tangent on
each floating input, on torch and on hookgrad; the floating outputs' tangents must agree. Rows
whose op torch has no forward-mode formula for are left out (torch raises for them). Then the API:
levels, errors, printing, in-place ops, modules, custom Functions, reverse mode over forward mode.
"""
from __future__ import annotations

import numpy as np
import pytest

import hookgrad
import torch
from difftest import Raised, catch, differential
from op_cases import BINARY, FUNCTIONAL_VS_TORCH, MATRIX, UNARY

FRAMEWORKS = {"torch": torch, "hookgrad": hookgrad}


def _tangents_of(T, fn, arrays, seed=7):
    """Run ``fn(T, *inputs)`` with a tangent on every floating input; the outputs' (value,
    tangent) pairs, or a Raised record."""
    fwAD = T.autograd.forward_ad
    rng = np.random.default_rng(seed)
    with fwAD.dual_level():
        inputs = []
        for a in arrays:
            x = T.tensor(a)
            if x.is_floating_point():
                x = fwAD.make_dual(x, T.tensor(rng.uniform(-1, 1, a.shape).astype(a.dtype)))
            inputs.append(x)
        try:
            out = fn(T, *inputs)
        except Exception as exc:  # noqa: BLE001 - recorded, compared by class
            return Raised(exc)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        found = []
        for o in outs:
            if isinstance(o, T.Tensor):
                primal, tangent = fwAD.unpack_dual(o)
                found.append((primal.detach().numpy().copy(),
                              None if tangent is None else tangent.detach().numpy().copy()))
        return found


def _compare(fn, arrays, rtol=1e-6, atol=1e-8):
    want = _tangents_of(torch, fn, arrays)
    if isinstance(want, Raised):
        pytest.skip(f"torch has no forward-mode formula here: {want.message[:120]}")
    got = _tangents_of(hookgrad, fn, arrays)
    assert not isinstance(got, Raised), got
    assert len(got) == len(want)
    for (gp, gt), (wp, wt) in zip(got, want):
        np.testing.assert_allclose(gp, wp, rtol=rtol, atol=atol)
        assert (gt is None) == (wt is None), (gt, wt)
        if wt is not None:
            assert gt.shape == wt.shape and gt.dtype == wt.dtype
            np.testing.assert_allclose(gt, wt, rtol=rtol, atol=atol)


def _draw(shapes, positive=False, seed=0):
    rng = np.random.default_rng(seed)
    low, high = (0.5, 2.5) if positive else (-2.0, 2.0)
    return [rng.uniform(low, high, s) for s in shapes]


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_rows(name):
    fn, _ = UNARY[name]
    _compare(fn, _draw([(3, 4)], positive=UNARY[name][1].get("positive", False)))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_rows_broadcasting(name):
    fn, _ = BINARY[name]
    _compare(fn, _draw([(3, 1), (1, 4)], positive=BINARY[name][1].get("positive", False)))


# rows where torch 2.13's forward AD silently returns no tangent (no error): hookgrad computes one, checked
# against finite differences in test_scatter_reduce_prod_tangent_is_the_derivative
TORCH_DROPS_TANGENT = {"scatter_reduce_prod"}


@pytest.mark.parametrize("name", sorted(MATRIX))
def test_matrix_rows(name):
    if name in TORCH_DROPS_TANGENT:
        pytest.skip("torch's forward AD drops this op's tangent without an error")
    fn, shapes = MATRIX[name][:2]
    _compare(fn, _draw(shapes, positive=(MATRIX[name][2] if len(MATRIX[name]) > 2 else {}).get("positive", False)), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", sorted(FUNCTIONAL_VS_TORCH))
def test_functional_rows(name):
    fn, arrays, _ = FUNCTIONAL_VS_TORCH[name]
    _compare(lambda T, *xs: fn(T, T.nn.functional, *xs), [np.asarray(a) for a in arrays], rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------------------------------- the API

def _x(T):
    return T.tensor([1.0, 2.0, 3.0]), T.tensor([1.0, 0.5, 0.0])


@differential
def test_dual_tensor_is_a_view_that_prints_its_tangent(T):
    fwAD = T.autograd.forward_ad
    x, v = _x(T)
    with fwAD.dual_level() as level:
        d = fwAD.make_dual(x, v)
        unpacked = fwAD.unpack_dual(d)
        plain = fwAD.unpack_dual(x)
        xr = x.clone().requires_grad_()
        dr = fwAD.make_dual(xr, v)
        printed = (repr(d), repr(dr), str(d * 2))
        facts = (level, d._base is x, d.requires_grad, unpacked.tangent is v, unpacked.primal._base is x,
                 fwAD.unpack_dual(unpacked.primal).tangent, plain.tangent, type(unpacked).__name__,
                 dr.grad_fn.name(), unpacked._fields)
    after = fwAD.unpack_dual(d)
    return printed, facts, after.tangent, after.primal is d


@differential
def test_levels_and_bad_input(T):
    fwAD = T.autograd.forward_ad
    x, v = _x(T)
    outside = catch(fwAD.make_dual, x, v), catch(fwAD.exit_dual_level), fwAD.unpack_dual(x).tangent
    with fwAD.dual_level():
        inside = [catch(fwAD.make_dual, x, T.ones(2)), catch(fwAD.make_dual, T.tensor([1, 2]), T.ones(2)),
                  catch(fwAD.make_dual, x, T.tensor([1, 2, 3])), catch(fwAD.enter_dual_level),
                  catch(fwAD.exit_dual_level, level=3)]
        d64 = fwAD.make_dual(x, v.double())
        inside.append(fwAD.unpack_dual(d64).tangent.dtype)
    level = fwAD.enter_dual_level()
    fwAD.exit_dual_level(level=level)

    @fwAD.dual_level()
    def decorated():
        return fwAD.unpack_dual(fwAD.make_dual(x, v) * 2).tangent

    return outside, inside, level, decorated(), [m.message for m in outside[:2] if isinstance(m, Raised)]


@differential
def test_tangents_through_ordinary_code(T):
    fwAD = T.autograd.forward_ad
    x, v = _x(T)
    out = {}
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        out["chain"] = fwAD.unpack_dual((d.sin() * 2 + d.exp() / 3).sum()).tangent
        out["detach"] = fwAD.unpack_dual(d.detach()).tangent
        out["argmax"] = fwAD.unpack_dual(d.argmax()).tangent
        out["compare"] = fwAD.unpack_dual(d > 1).tangent
        out["sign"] = fwAD.unpack_dual(d.sign()).tangent
        out["view"] = fwAD.unpack_dual(d[1:]).tangent
        plain = T.zeros(3)
        plain.add_(d)
        out["inplace_into_plain"] = fwAD.unpack_dual(plain).tangent
        w = d.clone()
        w.exp_()
        out["inplace_exp"] = fwAD.unpack_dual(w).tangent
        s = T.zeros(3)
        s[1] = d[0]
        out["setitem"] = fwAD.unpack_dual(s).tangent
        with T.no_grad():
            out["no_grad"] = fwAD.unpack_dual(d * 3).tangent
        out["cat"] = fwAD.unpack_dual(T.cat([d, x, d * d])).tangent
        out["where"] = fwAD.unpack_dual(T.where(d > 1.5, d * d, x)).tangent
        out["max"] = [fwAD.unpack_dual(r).tangent for r in d.reshape(1, 3).max(dim=1)]
        out["unbind"] = [fwAD.unpack_dual(r).tangent for r in d.unbind()]
    return out


@differential(rtol=1e-5, atol=1e-6)
def test_modules(T):
    fwAD = T.autograd.forward_ad
    T.manual_seed(0)
    mlp = T.nn.Sequential(T.nn.Linear(4, 8), T.nn.ReLU(inplace=True), T.nn.Linear(8, 3), T.nn.LogSoftmax(-1))
    conv = T.nn.Sequential(T.nn.Conv2d(2, 3, 3, padding=1), T.nn.BatchNorm2d(3), T.nn.GELU(), T.nn.MaxPool2d(2),
                           T.nn.Flatten(), T.nn.LayerNorm(12))
    x = T.randn(5, 4)
    img = T.randn(2, 2, 4, 4)
    out = []
    with fwAD.dual_level():
        out.append(fwAD.unpack_dual(mlp(fwAD.make_dual(x, T.ones_like(x)))))
        out.append(fwAD.unpack_dual(conv(fwAD.make_dual(img, T.full_like(img, 0.1)))))
        loss = T.nn.functional.mse_loss(mlp(fwAD.make_dual(x, T.zeros_like(x))), T.zeros(5, 3))
        out.append(fwAD.unpack_dual(loss))
        # a parameter carrying a tangent: the derivative of the outputs along a change of the weight
        w = mlp[0].weight
        out.append(fwAD.unpack_dual(T.func.functional_call(mlp, {"0.weight": fwAD.make_dual(w.detach(), T.ones_like(w))},
                                                            (x,))))
    return [tuple(o) if isinstance(o, tuple) else o for o in out]


@differential
def test_custom_function_needs_jvp(T):
    fwAD = T.autograd.forward_ad

    class Double(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x, v = _x(T)
    with fwAD.dual_level():
        raised = catch(Double.apply, fwAD.make_dual(x, v))
        plain = Double.apply(x)  # no tangent anywhere: nothing to differentiate
    return raised, plain, raised.message if isinstance(raised, Raised) else None


@differential
def test_reverse_mode_over_forward_mode(T):
    fwAD = T.autograd.forward_ad
    x, v = _x(T)
    xr = x.clone().requires_grad_()
    with fwAD.dual_level():
        primal, tangent = fwAD.unpack_dual((fwAD.make_dual(xr, v) ** 3).sum())
        facts = (tangent, tangent.requires_grad, primal.requires_grad)
        tangent.backward()
    return facts, xr.grad


def test_matches_func_jvp_on_a_transformer_layer():
    """Forward AD and torch.func.jvp (reverse mode twice) agree on a whole transformer layer (its
    attention on the math kernel: the fused CPU one has no forward derivative, as in torch)."""
    fwAD = hookgrad.autograd.forward_ad
    hookgrad.manual_seed(0)
    layer = hookgrad.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    x, v = hookgrad.randn(2, 5, 8), hookgrad.randn(2, 5, 8)
    math_kernel = hookgrad.nn.attention.sdpa_kernel(hookgrad.nn.attention.SDPBackend.MATH)
    with math_kernel, fwAD.dual_level():
        tangent = fwAD.unpack_dual(layer(fwAD.make_dual(x, v))).tangent
    with hookgrad.nn.attention.sdpa_kernel(hookgrad.nn.attention.SDPBackend.MATH):
        want = hookgrad.func.jvp(layer, (x,), (v,))[1]
    np.testing.assert_allclose(tangent.detach().numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    # leaving the level leaves no op hook behind
    assert not hookgrad.hooks._ops._forward_hooks


def test_a_failing_op_inside_a_level_leaves_it_usable():
    fwAD = hookgrad.autograd.forward_ad
    x, v = _x(hookgrad)
    with pytest.raises(RuntimeError):
        with fwAD.dual_level():
            d = fwAD.make_dual(x, v)
            d @ hookgrad.ones(2, 2)
    with fwAD.dual_level():
        assert fwAD.unpack_dual(fwAD.make_dual(x, v) * 2).tangent.tolist() == [2.0, 1.0, 0.0]


@differential
def test_random_ops_draw_once(T):
    """An op that draws random numbers is run again for its tangent with the same draws: the mask
    matches the value's, and the program's random stream goes on as if it ran once."""
    fwAD = T.autograd.forward_ad
    T.manual_seed(3)
    x, v = T.ones(4, 6), T.full((4, 6), 0.5)
    with fwAD.dual_level():
        y = T.nn.functional.dropout(fwAD.make_dual(x, v), 0.5)
        primal, tangent = fwAD.unpack_dual(y)
        after = T.rand(3)
    return primal, tangent, after


def test_scatter_reduce_prod_tangent_is_the_derivative():
    fwAD = hookgrad.autograd.forward_ad
    fn, shapes = MATRIX["scatter_reduce_prod"][:2]
    a, b = _draw(shapes, seed=3)
    ta, tb = _draw(shapes, seed=4)
    with fwAD.dual_level():
        out = fn(hookgrad, fwAD.make_dual(hookgrad.tensor(a), hookgrad.tensor(ta)),
                 fwAD.make_dual(hookgrad.tensor(b), hookgrad.tensor(tb)))
        tangent = fwAD.unpack_dual(out).tangent.numpy()
    eps = 1e-6
    plus = fn(hookgrad, hookgrad.tensor(a + eps * ta), hookgrad.tensor(b + eps * tb)).numpy()
    minus = fn(hookgrad, hookgrad.tensor(a - eps * ta), hookgrad.tensor(b - eps * tb)).numpy()
    np.testing.assert_allclose(tangent, (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-8)


@differential
def test_fused_attention_has_no_forward_derivative(T):
    """torch's fused CPU attention kernel refuses forward AD and func.jvp with NotImplementedError."""
    fwAD = T.autograd.forward_ad
    q = T.tensor(np.linspace(-1, 1, 24).reshape(1, 2, 3, 4))
    attention = T.nn.functional.scaled_dot_product_attention

    def dual():
        with fwAD.dual_level():
            return fwAD.unpack_dual(attention(fwAD.make_dual(q, q * 0.5), q, q)).tangent

    def math_dual():
        with T.nn.attention.sdpa_kernel(T.nn.attention.SDPBackend.MATH), fwAD.dual_level():
            return fwAD.unpack_dual(attention(fwAD.make_dual(q, q * 0.5), q, q)).tangent

    return (catch(dual), catch(T.func.jvp, lambda t: attention(t, q, q), (q,), (q * 0.5,)), math_dual(),
            attention(q[0], q[0], q[0]) is not None)
