"""Scaled and grouped matrix products, as torch's CPU build computes them.

* ``torch._scaled_mm`` (and ``nn.functional.scaled_mm``, its newer interface with scaling recipes):
  float8 operands, each multiplied by its decoding scale (one per tensor, or one per row of ``mat_a``
  and per column of ``mat_b``) in float32, multiplied in float32, the bias added, the result rounded
  once to the output type. torch records no derivative for it (backward raises).
* ``torch._grouped_mm`` (``nn.functional.grouped_mm``): one product per group, the groups either a
  leading batch dimension or slices of a jagged dimension delimited by int32 ``offs``; float32,
  bfloat16 or float16 operands in the layouts grouped-GEMM kernels accept (torch checks the strides
  on the CPU too: a backward whose incoming gradient is an expanded tensor fails there, as here).
* ``torch._scaled_grouped_mm`` (``nn.functional.scaled_grouped_mm``): torch's CPU build has no kernel.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor, wrap
from ..autograd.graph import Node
from ..utils._numbered_enum import NumberedEnum
from ._base import GRAD
from ._declare import module_all, no_derivative_node, op, record_op
from .linalg import _C_TYPE_NAMES

# ---- the recipes of nn.functional.scaled_mm ------------------------------------------------------


class ScalingType(NumberedEnum):
    """How a float8 operand of ``scaled_mm`` was scaled (torch's ``_ScalingType``)."""

    TensorWise = 0
    RowWise = 1
    BlockWise1x16 = 2
    BlockWise1x32 = 3
    BlockWise1x128 = 4
    BlockWise128x128 = 5


class SwizzleType(NumberedEnum):
    """The memory layout of ``scaled_mm``'s scales (torch's ``_SwizzleType``)."""

    NO_SWIZZLE = 0
    SWIZZLE_32_4_4 = 1


ScalingType.__name__ = ScalingType.__qualname__ = "_ScalingType"
SwizzleType.__name__ = SwizzleType.__qualname__ = "_SwizzleType"
ScalingType.__module__ = SwizzleType.__module__ = "torch.nn.functional"


# ---- _scaled_mm -------------------------------------------------------------------------------------
_ScaledMmBackward = no_derivative_node("_scaled_mm")
_ScaledMmV2Backward = no_derivative_node("_scaled_mm_v2")


def _float32_of(t: Tensor) -> np.ndarray:
    return _dtype.cast(t._ndarray, np.dtype(np.float32)) if t._ndarray.dtype != np.float32 else t._ndarray


def _is_float8(t: Tensor) -> bool:
    return _dtype.is_float8_np(t._ndarray.dtype)


def _scaled_product(mat_a, mat_b, scale_a, scale_b, bias, out_dtype, node_cls):
    """``(a * scale_a) @ (b * scale_b) + bias`` in float32, rounded once to ``out_dtype``."""
    if mat_a._ndarray.ndim != 2:
        raise RuntimeError("mat1 must be a matrix")
    if mat_b._ndarray.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    (m, k), (k2, n) = mat_a._ndarray.shape, mat_b._ndarray.shape
    if k != k2:
        raise RuntimeError(f"mat_a and mat_b shapes cannot be multiplied ({m}x{k} and {k2}x{n})")
    out = _dtype.to_dtype(out_dtype) if out_dtype is not None else mat_a.dtype
    with np.errstate(all="ignore"):
        product = (_float32_of(mat_a) * _float32_of(scale_a)) @ (_float32_of(mat_b) * _float32_of(scale_b))
        if bias is not None:
            product = product + _float32_of(bias)
    result = wrap(_dtype.cast(product.astype(np.float32, copy=False), out.np))
    inputs = [t for t in (mat_a, mat_b, scale_a, scale_b, bias) if t is not None and t._requires_grad]
    if GRAD.enabled and inputs:
        record_op(node_cls, tuple(inputs), result)  # edges to the inputs that require grad, as torch's
    return result


def _scales_fit(mat_a, mat_b, scale_a, scale_b) -> bool:
    """torch's CPU recipes: float8 operands with float32 scales, one per tensor or one per row of
    ``mat_a`` ((M, 1)) and per column of ``mat_b`` ((1, N))."""
    if not (_is_float8(mat_a) and _is_float8(mat_b)):
        return False
    if scale_a._ndarray.dtype != np.float32 or scale_b._ndarray.dtype != np.float32:
        return False
    if scale_a._ndarray.size == 1 and scale_b._ndarray.size == 1:
        return True
    m, n = mat_a._ndarray.shape[0], mat_b._ndarray.shape[-1]
    return scale_a._ndarray.shape == (m, 1) and scale_b._ndarray.shape == (1, n)


def _invalid_scaling(mat_a, mat_b) -> ValueError:
    m, n = mat_a._ndarray.shape[0], mat_b._ndarray.shape[-1]
    return ValueError(
        "Invalid scaling configuration.\n"
        "- For TensorWise scaling, a and b should be float8, scales should be float and singletons.\n"
        f"- For RowWise scaling, a and b should be float8, scales should be float, scale_a should be ({m}, 1) and "
        f"scale_b should be (1, {n})")


@op(method=False)
def _scaled_mm(input, mat2, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False):
    """torch._scaled_mm on the CPU: ``scale_result`` and ``use_fast_accum`` change nothing there."""
    if input._ndarray.ndim == 2 and mat2._ndarray.ndim == 2 and not _scales_fit(input, mat2, scale_a, scale_b):
        raise _invalid_scaling(input, mat2)
    return _scaled_product(input, mat2, scale_a, scale_b, bias, out_dtype, _ScaledMmBackward)


def _listed(value):
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def scaled_mm(mat_a, mat_b, scale_a, scale_recipe_a, scale_b, scale_recipe_b, swizzle_a=None, swizzle_b=None,
              bias=None, output_dtype=_dtype.bfloat16, contraction_dim=(), use_fast_accum=False):
    """nn.functional.scaled_mm: ``mm(mat_a, mat_b)`` of float8 operands decoded by their scales, as
    described by the recipes (TensorWise or RowWise on the CPU; no swizzled scales there)."""
    scales_a, scales_b = _listed(scale_a), _listed(scale_b)
    recipes_a, recipes_b = _listed(scale_recipe_a), _listed(scale_recipe_b)
    swizzles_a, swizzles_b = _listed(swizzle_a), _listed(swizzle_b)
    # torch checks the swizzles only when both operands name theirs
    if swizzles_a and swizzles_b and any(int(w) != SwizzleType.NO_SWIZZLE.value for w in swizzles_a + swizzles_b):
        raise ValueError("CPU does not support swizzle.")
    recipes = [int(r) for r in recipes_a + recipes_b]
    if len(scales_a) != 1 or len(scales_b) != 1 or recipes not in ([0, 0], [1, 1]):
        raise _invalid_scaling(mat_a, mat_b)
    sa, sb = scales_a[0], scales_b[0]
    floats = _is_float8(mat_a) and _is_float8(mat_b) and sa._ndarray.dtype == np.float32 == sb._ndarray.dtype
    if recipes == [0, 0]:
        if not floats:
            raise _invalid_scaling(mat_a, mat_b)
        for name, s in (("scale_a", sa), ("scale_b", sb)):
            if s._ndarray.size != 1:
                raise ValueError(f"{name} must have 1 Float element")
    else:
        for s in (sa, sb):
            if s._ndarray.ndim == 0:
                raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        if not _scales_fit(mat_a, mat_b, sa, sb):
            raise _invalid_scaling(mat_a, mat_b)
    return _scaled_product(mat_a, mat_b, sa, sb, bias, output_dtype, _ScaledMmV2Backward)


def _no_cpu_kernel(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"Could not run 'aten::{name}' with arguments from the 'CPU' backend. This could be because the operator "
        "doesn't exist for this backend, or was omitted during the selective/custom build process (if using "
        f"custom build). hookgrad, like torch's CPU build, has no kernel for {name}.")


@op(method=False)
def _scaled_grouped_mm(input, mat2, scale_a, scale_b, offs=None, bias=None, scale_result=None, out_dtype=None,
                       use_fast_accum=False):
    """torch._scaled_grouped_mm: no CPU kernel in torch, none here."""
    raise _no_cpu_kernel("_scaled_grouped_mm")


def scaled_grouped_mm(mat_a, mat_b, scale_a, scale_recipe_a, scale_b, scale_recipe_b, swizzle_a=None,
                      swizzle_b=None, bias=None, offs=None, output_dtype=_dtype.bfloat16, contraction_dim=(),
                      use_fast_accum=False):
    """nn.functional.scaled_grouped_mm: no CPU kernel in torch, none here."""
    raise _no_cpu_kernel("_scaled_grouped_mm_v2")


# ---- _grouped_mm ------------------------------------------------------------------------------------
_GROUPED_DTYPES = frozenset(map(np.dtype, (np.float32, np.float16)))


def _check_grouped_operand(t: Tensor, name: str) -> None:
    d = t._ndarray.dtype
    if d not in _GROUPED_DTYPES and not _dtype.is_bfloat16_np(d):
        raise RuntimeError(f"Expected {name} to be Float32, BFloat16 or Float16 matrix, got "
                           f"{_dtype.scalar_type_name(d)}")
    if t._ndarray.ndim not in (2, 3):
        raise RuntimeError(f"{name} has to be 2 or 3d")


def _check_grouped_layout(data: np.ndarray) -> None:
    """Grouped-GEMM layouts: the matrices row- or column-major, their leading stride a multiple of
    16 bytes (torch's check, made on the CPU too)."""
    item = data.itemsize
    strides = [s // item for s in data.strides]
    sizes = data.shape
    alignment = 16 // item
    if strides[-2] == 1 and strides[-1] >= max(1, sizes[-2]):
        leading = strides[-1]
    elif strides[-1] == 1 and strides[-2] >= max(1, sizes[-1]):
        leading = strides[-2]
    else:
        raise RuntimeError(f"Invalid strides/sizes, got {strides} for strides and {list(sizes)} for sizes")
    if leading % alignment:
        raise RuntimeError("strides should be multiple of 16 bytes")


def _group_bounds(offs: np.ndarray) -> list:
    ends = [int(e) for e in offs.tolist()]
    return list(zip([0] + ends[:-1], ends))


def _grouped_values(a: np.ndarray, b: np.ndarray, offs) -> np.ndarray:
    """The grouped product in float32 (the operands widened), zeros where no group writes."""
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    if a.ndim == 3 and b.ndim == 3:
        return np.matmul(a32, b32)
    bounds = _group_bounds(offs)
    if a.ndim == 2 and b.ndim == 3:   # groups of rows of a, one matrix of b each
        out = np.zeros((a.shape[0], b.shape[2]), np.float32)
        for g, (lo, hi) in enumerate(bounds):
            out[lo:hi] = a32[lo:hi] @ b32[g]
        return out
    if a.ndim == 3 and b.ndim == 2:   # groups of columns of b, one matrix of a each
        out = np.zeros((a.shape[1], b.shape[1]), np.float32)
        for g, (lo, hi) in enumerate(bounds):
            out[:, lo:hi] = a32[g] @ b32[:, lo:hi]
        return out
    out = np.zeros((len(bounds), a.shape[0], b.shape[1]), np.float32)  # groups of the shared dimension
    for g, (lo, hi) in enumerate(bounds):
        out[g] = a32[:, lo:hi] @ b32[lo:hi]
    return out


def _checked_grouped(mat_a, mat_b, offs, bias, out_dtype) -> None:
    _check_grouped_operand(mat_a, "mat_a")
    _check_grouped_operand(mat_b, "mat_b")
    a, b = mat_a._ndarray, mat_b._ndarray
    has_2d = a.ndim == 2 or b.ndim == 2
    if has_2d != (offs is not None):
        raise RuntimeError("Have to provide offsets if there is a 2d matrix, or no offset if both matrices are 3d")
    if offs is not None:
        if offs._ndarray.ndim != 1:
            raise RuntimeError("offs has to be 1D")
        if offs._ndarray.dtype != np.int32:
            raise RuntimeError("Offsets have to be int32")
    if a.shape[-1] != b.shape[-2 if b.ndim == 3 else 0]:
        raise RuntimeError("contraction dimension of mat_a and mat_b must match")
    if a.ndim == 3 and b.ndim == 3 and a.shape[0] != b.shape[0]:
        raise RuntimeError("batched dimension has to match")
    groups = a.shape[0] if a.ndim == 3 else (b.shape[0] if b.ndim == 3 else None)
    if offs is not None and groups is not None and offs._ndarray.shape[0] != groups:
        raise RuntimeError("matrix batch sizes have to match")
    if bias is not None:
        raise RuntimeError("Bias not supported yet")
    if out_dtype is not None and _dtype.to_dtype(out_dtype) is not mat_a.dtype:
        raise RuntimeError("Grouped gemm output dtype must match `mat_a` dtype")
    _check_grouped_layout(a)
    _check_grouped_layout(b)
    if a.dtype != b.dtype:  # the product is written into a tensor of mat_a's type
        want, got = (_C_TYPE_NAMES.get(d.name, d.name) for d in (b.dtype, a.dtype))
        raise RuntimeError(f"Expected out tensor to have dtype {want}, but got {got} instead")


class GroupedMmBackward0(Node):
    """Gradients of a grouped product are grouped products: ``g @ b^T`` and ``a^T @ g`` over the same
    groups (torch computes them with the same kernel, and its layout checks apply to ``g``)."""

    __slots__ = ("layouts",)
    saved_names = ("mat2", "offs", "self")
    # layouts: (self's shape, strides, mat2's shape, strides), in elements, when recorded
    saved_values = {
        "self_sym_sizes": lambda n: n.layouts[0], "self_sym_strides": lambda n: n.layouts[1],
        "mat2_sym_sizes": lambda n: n.layouts[2], "mat2_sym_strides": lambda n: n.layouts[3],
    }

    def apply(self, grads):
        b, offs, a = self.saved()
        g = grads[0]
        grad_a = grad_b = None
        if self._should_compute_output(0):
            grad_a = _grouped_mm(g, b.transpose(-2, -1), offs=offs)
        if self._should_compute_output(1):
            grad_b = _grouped_mm(a.transpose(-2, -1), g, offs=offs)
        return grad_a, grad_b


@op(method=False)
def _grouped_mm(input, mat2, offs=None, bias=None, out_dtype=None):
    """torch._grouped_mm: one product per group (see the module's description)."""
    mat_a, mat_b = input, mat2
    _checked_grouped(mat_a, mat_b, offs, bias, out_dtype)
    offsets = offs._ndarray if offs is not None else None
    values = _grouped_values(mat_a._ndarray, mat_b._ndarray, offsets)
    result = wrap(_dtype.cast(values, mat_a._ndarray.dtype) if mat_a._ndarray.dtype != np.float32 else values)
    if GRAD.enabled and (mat_a._requires_grad or mat_b._requires_grad):
        node = record_op(GroupedMmBackward0, (mat_a, mat_b), result)
        a, b = mat_a._ndarray, mat_b._ndarray
        node.layouts = (a.shape, tuple(st // a.itemsize for st in a.strides), b.shape,
                        tuple(st // b.itemsize for st in b.strides))
        node.save(mat_b, offs, mat_a)
    return result


def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """nn.functional.grouped_mm: ``torch._grouped_mm``."""
    return _grouped_mm(mat_a, mat_b, offs=offs, bias=bias, out_dtype=out_dtype)


__all__ = module_all(globals())
