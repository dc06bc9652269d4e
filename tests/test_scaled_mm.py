"""Scaled and grouped matrix products against torch's CPU build: torch._scaled_mm and
nn.functional.scaled_mm (float8 operands, tensor-wise and row-wise scales, bias, output types, the
recipe enums and every refusal), torch._grouped_mm and nn.functional.grouped_mm (3-D batches and jagged
2-D groups, values and gradients, layout and argument errors, the backward that fails on an
expanded gradient), and scaled_grouped_mm, which torch's CPU build has no kernel for."""
from __future__ import annotations

import numpy as np
import pytest

from difftest import catch, differential

pytest.importorskip("ml_dtypes")


def _f8(T, array, dtype="float8_e4m3fn"):
    return T.tensor(array.astype(np.float32)).to(getattr(T, dtype))


def _operands(T, m=16, k=32, n=16, seed=0, dtype_a="float8_e4m3fn", dtype_b="float8_e4m3fn"):
    rng = np.random.default_rng(seed)
    a = _f8(T, rng.standard_normal((m, k)), dtype_a)
    b = _f8(T, rng.standard_normal((n, k)), dtype_b).t()  # column-major, as the kernels want it
    return a, b


@differential
def test_enums(T):
    S, W = T.nn.functional.ScalingType, T.nn.functional.SwizzleType
    return [[(name, member.value, int(member), member.name) for name, member in S.__members__.items()],
            [(name, member.value) for name, member in W.__members__.items()], repr(S.RowWise), str(S.RowWise),
            S(1) == S.RowWise, S.RowWise == 1, S.__name__, W.__name__, S.__module__, W(0) == W.NO_SWIZZLE]


@pytest.mark.parametrize("out", [None, "float32", "bfloat16", "float16", "float8_e5m2"])
@differential(rtol=1e-6, atol=1e-6)
def test_scaled_mm_tensorwise(T, out):
    a, b = _operands(T)
    out_dtype = getattr(T, out) if out else None
    return [T._scaled_mm(a, b, T.tensor(0.37), T.tensor(1.9), out_dtype=out_dtype),
            T._scaled_mm(a, b, T.tensor([0.5]), T.tensor([2.0]), out_dtype=out_dtype)]


@differential(rtol=1e-6, atol=1e-6)
def test_scaled_mm_small_integers_exactly(T):
    """Exactly representable products: every output type rounds the same value."""
    a = T.tensor([[1.0, 2.0, -1.0, 0.5], [3.0, 0.0, 1.0, -2.0]]).to(T.float8_e4m3fn)
    b = T.tensor([[1.0, 0.0, 2.0, 1.0], [0.5, 1.0, -1.0, 4.0], [2.0, 2.0, 2.0, 2.0]]).to(T.float8_e4m3fn).t()
    return [T._scaled_mm(a, b, T.tensor(2.0), T.tensor(0.25), out_dtype=getattr(T, d))
            for d in ("float32", "bfloat16", "float8_e4m3fn", "float8_e5m2")]


@differential(rtol=1e-6, atol=1e-6)
def test_scaled_mm_rowwise_bias_and_mixed_formats(T):
    rng = np.random.default_rng(1)
    a, b = _operands(T, seed=1)
    row = T.tensor(rng.uniform(0.5, 1.5, (16, 1)).astype(np.float32))
    col = T.tensor(rng.uniform(0.5, 1.5, (1, 16)).astype(np.float32))
    bias = T.tensor(rng.standard_normal(16).astype(np.float32))
    a5, b5 = _operands(T, seed=2, dtype_a="float8_e5m2", dtype_b="float8_e5m2")
    return [T._scaled_mm(a, b, row, col, out_dtype=T.float32),
            T._scaled_mm(a, b, T.tensor(0.5), T.tensor(2.0), bias=bias, out_dtype=T.float32),
            T._scaled_mm(a, b, T.tensor(0.5), T.tensor(2.0), bias=bias.to(T.bfloat16), out_dtype=T.bfloat16),
            T._scaled_mm(a5, b5, T.tensor(1.0), T.tensor(1.0), out_dtype=T.float32),
            T._scaled_mm(a, b5, T.tensor(1.0), T.tensor(1.0), out_dtype=T.float32),
            T._scaled_mm(a, b.contiguous(), T.tensor(1.0), T.tensor(1.0), out_dtype=T.float32),
            T._scaled_mm(a, b, T.tensor(0.5), T.tensor(2.0), scale_result=T.tensor(4.0), out_dtype=T.float32),
            T._scaled_mm(a[:3, :12], b[:12, :8], T.tensor(1.0), T.tensor(1.0), out_dtype=T.float32)]


@differential(rtol=1e-6, atol=1e-6)
def test_functional_scaled_mm(T):
    F = T.nn.functional
    S, W = F.ScalingType, F.SwizzleType
    a, b = _operands(T, seed=3)
    sa, sb = T.tensor(0.5), T.tensor(2.0)
    return [F.scaled_mm(a, b, sa, S.TensorWise, sb, S.TensorWise),
            F.scaled_mm(a, b, sa, S.TensorWise, sb, S.TensorWise, output_dtype=T.float32),
            F.scaled_mm(a, b, sa, S.TensorWise, sb, S.TensorWise, output_dtype=None),
            F.scaled_mm(a, b, T.ones(16, 1), S.RowWise, T.ones(1, 16), S.RowWise, output_dtype=T.float32),
            F.scaled_mm(a, b, [sa], [S.TensorWise], [sb], [S.TensorWise], swizzle_a=W.NO_SWIZZLE,
                        swizzle_b=W.NO_SWIZZLE, bias=T.ones(16, dtype=T.bfloat16), contraction_dim=[1, 0],
                        use_fast_accum=True)]


@differential
def test_scaled_mm_refusals(T):
    F = T.nn.functional
    S, W = F.ScalingType, F.SwizzleType
    a, b = _operands(T, seed=4)
    sa, sb = T.tensor(0.5), T.tensor(2.0)
    return [catch(T._scaled_mm, a.float(), b.float(), sa, sb), catch(T._scaled_mm, a, b, sa.double(), sb.double()),
            catch(T._scaled_mm, a, b[:16], sa, sb), catch(T._scaled_mm, a[None], b, sa, sb),
            catch(F.scaled_mm, a, b, T.ones(16, 2), S.BlockWise1x16, T.ones(2, 16), S.BlockWise1x16),
            catch(F.scaled_mm, a, b, sa, S.TensorWise, sb, S.TensorWise, swizzle_a=W.SWIZZLE_32_4_4),
            catch(F.scaled_mm, a, b, sa, S.TensorWise, sb, S.TensorWise, swizzle_a=W.SWIZZLE_32_4_4,
                  swizzle_b=W.NO_SWIZZLE),
            catch(F.scaled_mm, a, b, T.ones(16, 1), S.TensorWise, T.ones(1, 16), S.TensorWise),
            catch(F.scaled_mm, a, b, sa, S.RowWise, sb, S.TensorWise),
            catch(F.scaled_mm, a.float(), b.float(), sa, S.TensorWise, sb, S.TensorWise),
            catch(F.scaled_mm, a, b, sa, S.RowWise, sb, S.RowWise),
            catch(F.scaled_grouped_mm, a[None], b[None], T.ones(1, 16), S.RowWise, T.ones(1, 16), S.RowWise),
            catch(T._scaled_grouped_mm, a[None], b[None], T.ones(16), T.ones(16))]


@differential
def test_scaled_mm_records_no_derivative(T):
    a, b = _operands(T, seed=5)
    x = a.float().requires_grad_()
    s = T.tensor(0.5, requires_grad=True)
    y = T._scaled_mm(x.to(T.float8_e4m3fn), b, s, T.tensor(2.0), out_dtype=T.float32)
    y2 = T.nn.functional.scaled_mm(x.to(T.float8_e4m3fn), b, T.tensor(0.5), T.nn.functional.ScalingType.TensorWise,
                                   T.tensor(2.0), T.nn.functional.ScalingType.TensorWise, output_dtype=T.float32)
    return [y.requires_grad, y.grad_fn.name(), [type(f).__name__ for f, _ in y.grad_fn.next_functions],
            catch(lambda: y.sum().backward()), catch(lambda: y2.sum().backward())]


def _grouped_inputs(T, shapes, dtype="bfloat16", seed=0, requires_grad=False):
    rng = np.random.default_rng(seed)
    return [T.tensor(rng.standard_normal(s).astype(np.float32)).to(getattr(T, dtype)).requires_grad_(requires_grad)
            for s in shapes]


def _offs(T, *ends):
    return T.tensor(list(ends), dtype=T.int32)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@differential(rtol=1e-5, atol=1e-5)
def test_grouped_mm_values(T, dtype):
    F = T.nn.functional
    a3, b3 = _grouped_inputs(T, [(2, 4, 16), (2, 16, 8)], dtype)
    a2, b23 = _grouped_inputs(T, [(10, 16), (3, 16, 8)], dtype, seed=1)
    a22, b22 = _grouped_inputs(T, [(8, 16), (16, 8)], dtype, seed=2)
    a32, b32 = _grouped_inputs(T, [(3, 8, 16), (16, 24)], dtype, seed=3)
    bt = _grouped_inputs(T, [(2, 8, 16)], dtype, seed=4)[0].transpose(1, 2)
    return [F.grouped_mm(a3, b3), T._grouped_mm(a3, b3), F.grouped_mm(a2, b23, offs=_offs(T, 3, 7, 10)),
            F.grouped_mm(a22, b22, offs=_offs(T, 8, 16)), F.grouped_mm(a32, b32, offs=_offs(T, 8, 16, 24)),
            F.grouped_mm(a3, bt), F.grouped_mm(a3, b3, out_dtype=getattr(T, dtype)),
            F.grouped_mm(a2, b23, offs=_offs(T, 3, 7, 10))[:10]]


@differential
def test_grouped_mm_errors(T):
    F = T.nn.functional
    bf = T.bfloat16
    a3, b3 = _grouped_inputs(T, [(2, 4, 16), (2, 16, 8)])
    a2, b23 = _grouped_inputs(T, [(10, 16), (3, 16, 8)])
    offs = _offs(T, 3, 7, 10)
    return [catch(F.grouped_mm, *_grouped_inputs(T, [(2, 4, 8), (2, 8, 3)])),
            catch(F.grouped_mm, a3, b3, out_dtype=T.float32), catch(F.grouped_mm, a3, b3, bias=T.ones(2, 8, dtype=bf)),
            catch(F.grouped_mm, a3, b3, offs=offs), catch(F.grouped_mm, a2, b23),
            catch(F.grouped_mm, a2, b23, offs=offs.long()), catch(F.grouped_mm, a2, b23, offs=offs[None]),
            catch(F.grouped_mm, a2, b23, offs=_offs(T, 3, 10)),
            catch(F.grouped_mm, a3, _grouped_inputs(T, [(2, 8, 8)])[0]),
            catch(F.grouped_mm, a3, _grouped_inputs(T, [(3, 16, 8)])[0]),
            catch(F.grouped_mm, a3, b3.float()), catch(F.grouped_mm, a3[0, 0], b3),
            catch(F.grouped_mm, T.ones(2, 4, 16, dtype=T.int32), T.ones(2, 16, 8, dtype=T.int32)),
            catch(F.grouped_mm, *_grouped_inputs(T, [(8, 10), (10, 8)]), offs=offs)]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@differential(rtol=1e-5, atol=1e-5)
def test_grouped_mm_gradients(T, dtype):
    F = T.nn.functional
    x, w = _grouped_inputs(T, [(2, 4, 16), (2, 16, 8)], dtype, requires_grad=True)
    y = F.grouped_mm(x, w)
    y.backward(T.ones_like(y))
    x2, w2 = _grouped_inputs(T, [(10, 16), (3, 16, 8)], dtype, seed=1, requires_grad=True)
    y2 = F.grouped_mm(x2, w2, offs=_offs(T, 3, 7, 10))
    saved = [y2.grad_fn._saved_offs, y2.grad_fn._saved_self_sym_sizes, y2.grad_fn._saved_mat2_sym_strides,
             y2.grad_fn._saved_self.shape]
    (y2 * 2).sum().backward()
    x3, w3 = _grouped_inputs(T, [(2, 4, 16), (2, 16, 8)], dtype, seed=2, requires_grad=True)
    y3 = F.grouped_mm(x3, w3)
    # the gradient of a sum reaches the product as an expanded tensor, which torch's kernel refuses
    return [y.grad_fn.name(), x.grad, w.grad, x2.grad, w2.grad, catch(lambda: y3.sum().backward()), saved]
