"""Matrix products and linear algebra: mm, mv, bmm, dot, matmul, addmm, einsum, inv, det, solve."""
from __future__ import annotations

import numpy as np

from .. import _dtype, return_types
from .. import _threads as _blas
from .._tensor import Tensor, _wrap_dim, wrap
from ..autograd.graph import Node
from ..autograd.profiler import _active as _profiling
from . import _dtype_rules as _rules
from ._declare import _InputShapeNode, module_all, op, pair_formula_node, record_op
from ._base import GRAD, as_tensor_arg, edge, ones_vector, record, sum_to_shape
from ._base import quiet_fp


_quiet = quiet_fp  # NumPy reports no inf/nan arithmetic (nor does torch)


_narrow = _dtype.narrow_to  # bfloat16 products come out of NumPy in float32: round them once


# the C++ type names torch's mm kernel prints in its dtype error
_C_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                 "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                 "uint8": "unsigned char", "bool": "bool"}


def _check_same_dtype(a, b, what):
    """torch's dtype error for a product of ``a`` and ``b``, in the wording of the kernel ``what``
    (and its NotImplementedError for float8_e8m0fnu and float4 pairs, which it multiplies nowhere)."""
    if a._ndarray.dtype == b._ndarray.dtype:
        if _dtype.is_lowprec_storage_np(a._ndarray.dtype) and a.dtype in (_dtype.float8_e8m0fnu,
                                                                        _dtype.float4_e2m1fn_x2, _dtype.complex32):
            _rules.refuse_lowprec(a._ndarray, "addmm_impl_cpu_")
        return
    name_a, name_b = _dtype.scalar_type_name(a._ndarray.dtype), _dtype.scalar_type_name(b._ndarray.dtype)
    if what == "mm":
        c_a, c_b = (_C_TYPE_NAMES.get(t._ndarray.dtype.name, t._ndarray.dtype.name) for t in (a, b))
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {c_a} != {c_b}")
    if what == "mv":  # torch checks addmv's (result, matrix, vector): the result takes the vector's dtype
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {name_b}, {name_a}, and {name_b}")
    if what == "dot":
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {name_a} and {name_b}")
    if what in ("self", "mat1"):  # addmm: self (the bias) against mat2, then mat1 against mat2
        raise RuntimeError(f"{what} and mat2 must have the same dtype, but got {name_a} and {name_b}")
    raise RuntimeError(f"expected scalar type {name_a} but found {name_b}")


def _conj(t: Tensor) -> Tensor:
    """Complex operands enter gradients conjugated (torch's convention); real ones as they are."""
    return t.conj() if t._ndarray.dtype.kind == "c" else t


def _conj_np(d: np.ndarray) -> np.ndarray:
    return d.conj() if d.dtype.kind == "c" else d


def _elements(strides, itemsize):
    return tuple(s // itemsize for s in strides)


def _layout_values(first: str, second: str, first_edge: int = 0) -> dict:
    """torch's saved sizes and strides of a product's two matrices (named ``first`` and ``second``,
    the node's inputs ``first_edge`` and the next), read from the node's ``layouts``: (first's shape,
    byte strides, second's shape, byte strides, itemsize) as they were when the product was recorded.
    A matrix's strides shape its own gradient: torch keeps them only when that gradient is needed
    (empty otherwise)."""
    def strides(n, i):
        return _elements(n.layouts[2 * i + 1], n.layouts[4]) if n.next_functions[first_edge + i][0] is not None else ()
    return {
        f"{first}_sym_sizes": lambda n: n.layouts[0],
        f"{first}_sym_strides": lambda n: strides(n, 0),
        f"{second}_sym_sizes": lambda n: n.layouts[2],
        f"{second}_sym_strides": lambda n: strides(n, 1),
    }


class MmBackward0(Node):
    __slots__ = ("b_transposed", "layouts")
    saved_names = ("mat2", "self")
    saved_values = _layout_values("self", "mat2")

    def apply(self, grads):
        b, a = self.saved()
        g = grads[0]
        # torch computes mat2's gradient first (what a create_graph pass records and saves follows)
        gb = _mm_grad_other(a, g, self.b_transposed, self.layouts) if self._should_compute_output(1) else None
        ga = _mm_grad_self(g, b, self.layouts) if self._should_compute_output(0) else None
        return ga, gb


def _column_major(layouts, i) -> bool:
    """torch's is_column_major test of the product's matrix ``i`` (0: the first) as it was recorded:
    where it holds, torch's backward computes that matrix's gradient transposed (its ops, and what
    they save under create_graph, follow)."""
    (rows, cols), (s0, s1) = layouts[2 * i], _elements(layouts[2 * i + 1], layouts[4])
    return s0 == 1 and (cols == 1 or s1 >= max(1, rows))


def _mm_grad_self(g, b, layouts):
    """d(a @ b)/da applied to g: ``g @ b.T``."""
    if GRAD.enabled or _unusual_operands(g, b):
        if _column_major(layouts, 0):
            return mm(_conj(b), g.t()).t()
        return mm(g, _conj(b).t())
    with _quiet():
        return wrap(_narrow(_blas.matmul(g._ndarray, (b._ndarray.conj() if b._ndarray.dtype.kind == "c" else b._ndarray).T), g._ndarray.dtype))


def _unusual_operands(x, y) -> bool:
    """Whether a saved matrix is no longer one of the gradient's dtype and rank (an unpack hook handed
    back another tensor): the product then goes through mm, which refuses it as torch does."""
    return x._ndarray.ndim != 2 or y._ndarray.ndim != 2 or x._ndarray.dtype != y._ndarray.dtype


def _is_transposed(m: np.ndarray) -> bool:
    return m.flags.f_contiguous and not m.flags.c_contiguous


def _mm_grad_other(a, g, b_transposed, layouts):
    """d(a @ b)/db applied to g: ``a.T @ g``, laid out like ``b``. When b is a transposed matrix
    (F-ordered, as ``weight.t()`` in a linear layer) the product is computed transposed, so the
    gradient that reaches the weight is C-contiguous and can become ``.grad`` without a copy."""
    if GRAD.enabled or _unusual_operands(a, g):
        if _column_major(layouts, 1):
            return mm(g.t(), _conj(a)).t()
        return mm(_conj(a).t(), g)
    with _quiet():
        if b_transposed:
            return wrap(_narrow(_blas.matmul(g._ndarray.T, _conj_np(a._ndarray)).T, g._ndarray.dtype))
        return wrap(_narrow(_blas.matmul(_conj_np(a._ndarray).T, g._ndarray), g._ndarray.dtype))


@op()
def mm(a: Tensor, b: Tensor) -> Tensor:
    if a._ndarray.ndim != 2 or b._ndarray.ndim != 2:
        raise RuntimeError(f"{'self' if a._ndarray.ndim != 2 else 'mat2'} must be a matrix")
    if a._ndarray.shape[1] != b._ndarray.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a._ndarray.shape[0]}x{a._ndarray.shape[1]} and "
                           f"{b._ndarray.shape[0]}x{b._ndarray.shape[1]})")
    _check_same_dtype(a, b, "mm")
    if a._ndarray.dtype.kind == "b":  # checked inline: this runs on every product
        _rules.refuse_kernel(a._ndarray, _rules.BOOL, "addmm_impl_cpu_")
    with _quiet():
        result = wrap(_narrow(_blas.matmul(a._ndarray, b._ndarray), a._ndarray.dtype))
    if GRAD.enabled and (a._requires_grad or b._requires_grad):
        node = record_op(MmBackward0, (a, b), result)
        ad, bd = a._ndarray, b._ndarray
        node.b_transposed = _is_transposed(bd)
        node.layouts = (ad.shape, ad.strides, bd.shape, bd.strides, ad.itemsize)
        # what each gradient needs, kept when that gradient has an edge (a view made under no_grad
        # requires grad yet has none, as in torch)
        edges = node.next_functions
        node.save(b if edges[0][0] is not None else None, a if edges[1][0] is not None else None)  # torch's order
    return result


class AddmmBackward0(Node):
    __slots__ = ("bias_shape", "beta", "alpha", "b_transposed", "layouts")
    saved_names = ("mat1", "mat2")
    saved_values = {"alpha": lambda n: n.alpha, "beta": lambda n: n.beta, **_layout_values("mat1", "mat2", 1)}

    def apply(self, grads):
        a, b = self.saved()
        g = grads[0]
        gbias = ga = gb = None
        if self._should_compute_output(0):
            gd = g._ndarray
            if not GRAD.enabled and gd.ndim == 2 and self.bias_shape == gd.shape[1:] and gd.dtype.kind == "f":
                # a linear layer's bias: the batch sum as ones @ g (a BLAS call, 3x faster than a reduction)
                gbias = wrap(_narrow(ones_vector(gd.shape[0], gd.dtype) @ gd, gd.dtype))
            else:
                gbias = sum_to_shape(g, self.bias_shape)
            if self.beta != 1:
                gbias = gbias * self.beta
        if self._should_compute_output(1):
            ga = _mm_grad_self(g, b, self.layouts)
            if self.alpha != 1:
                ga = ga * self.alpha
        if self._should_compute_output(2):
            gb = _mm_grad_other(a, g, self.b_transposed, self.layouts)
            if self.alpha != 1:
                gb = gb * self.alpha
        return gbias, ga, gb


@op(inplace=True)
def addmm(bias: Tensor, a: Tensor, b: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * bias + alpha * (a @ b)`` in one node (what ``F.linear`` records)."""
    if a._ndarray.dtype.kind == "b":  # checked inline: this runs on every product
        _rules.refuse_kernel(a._ndarray, _rules.BOOL, "addmm_impl_cpu_")
    if a._ndarray.shape[1] != b._ndarray.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a._ndarray.shape[0]}x{a._ndarray.shape[1]} and "
                           f"{b._ndarray.shape[0]}x{b._ndarray.shape[1]})")
    if bias._ndarray.dtype != b._ndarray.dtype or a._ndarray.dtype != b._ndarray.dtype:
        _check_same_dtype(bias, b, "self")
        _check_same_dtype(a, b, "mat1")
    ad, bd = a._ndarray, b._ndarray
    with _quiet():
        if alpha == 1 and beta == 1 and bd.shape[1] >= 4 * ad.shape[0] and _is_transposed(bd):
            # a linear layer much wider than its batch: OpenBLAS computes weight @ x^T faster than
            # x @ weight^T (MLP 784->256 at batch 64: 300 us instead of 390 us on one core, with
            # the bias added during the copy back to row-major order)
            out = np.empty((ad.shape[0], bd.shape[1]), dtype=np.result_type(ad, bd))
            np.add(_blas.matmul(bd.T, ad.T).T, bias._ndarray, out=out)
        else:
            out = _blas.matmul(ad, bd)
            if alpha != 1:
                out *= alpha
            out += bias._ndarray if beta == 1 else beta * bias._ndarray
    result = wrap(_narrow(out, ad.dtype))
    if GRAD.enabled and (bias._requires_grad or a._requires_grad or b._requires_grad):
        node = record_op(AddmmBackward0, (bias, a, b), result)
        node.bias_shape, node.beta, node.alpha = bias._ndarray.shape, beta, alpha
        node.b_transposed = _is_transposed(bd)
        node.layouts = (ad.shape, ad.strides, bd.shape, bd.strides, ad.itemsize)
        edges = node.next_functions  # as in mm: saved for a gradient that has an edge
        node.save(a if edges[2][0] is not None else None, b if edges[1][0] is not None else None)
    return result


MvBackward0 = pair_formula_node("MvBackward0", ("self", "vec"), lambda g, a, v: outer(g, _conj(v)),
                                lambda g, a, v: mv(_conj(a).t(), g))


@op()
def mv(a: Tensor, v: Tensor) -> Tensor:
    if a._ndarray.dtype.kind == "b":  # checked inline: this runs on every product
        _rules.refuse_kernel(a._ndarray, _rules.BOOL, "addmv_impl_cpu")
    if a._ndarray.ndim != 2 or v._ndarray.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {a._ndarray.ndim}, {v._ndarray.ndim}")
    if a._ndarray.shape[1] != v._ndarray.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({a._ndarray.shape[0]}), mat ({a._ndarray.shape[0]}x"
                           f"{a._ndarray.shape[1]}), vec ({v._ndarray.shape[0]})")
    _check_same_dtype(a, v, "mv")
    with _quiet():
        result = wrap(_narrow(a._ndarray @ v._ndarray, a._ndarray.dtype))
    if GRAD.enabled and (a._requires_grad or v._requires_grad):
        node = record_op(MvBackward0, (a, v), result)
        edges = node.next_functions  # as in mm: saved for a gradient that has an edge
        node.save(a if edges[1][0] is not None else None, v if edges[0][0] is not None else None)
    return result


DotBackward0 = pair_formula_node("DotBackward0", ("self", "tensor"), lambda g, a, b: g * _conj(b),
                                 lambda g, a, b: g * _conj(a))


@op()
def dot(a: Tensor, b: Tensor) -> Tensor:
    if a._ndarray.dtype.kind == "b":  # checked inline: this runs on every product
        _rules.refuse_kernel(a._ndarray, _rules.BOOL, "dot")
    if a._ndarray.ndim != 1 or b._ndarray.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a._ndarray.ndim}D and {b._ndarray.ndim}D tensors")
    if a._ndarray.shape != b._ndarray.shape:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a._ndarray.shape[0]}] and src "
                           f"[{b._ndarray.shape[0]}] to have the same number of elements, but got "
                           f"{a._ndarray.shape[0]} and {b._ndarray.shape[0]} elements respectively")
    _check_same_dtype(a, b, "dot")
    with np.errstate(over="ignore", invalid="ignore"):   # a float16 dot may overflow to inf, quietly as torch's
        result = wrap(_narrow(np.asanyarray(a._ndarray @ b._ndarray), a._ndarray.dtype))
    if GRAD.enabled and (a._requires_grad or b._requires_grad):
        node = record_op(DotBackward0, (a, b), result)
        edges = node.next_functions  # each operand is saved for the other's gradient only
        node.save(a if edges[1][0] is not None else None, b if edges[0][0] is not None else None)
    return result


# torch packs (and unpacks) vdot's other operand before self
VdotBackward0 = pair_formula_node("VdotBackward0", ("other", "self"), lambda g, b, a: _conj(g) * b,
                                  lambda g, b, a: g * a)


@op()
def vdot(a, b):
    """``sum(conj(a) * b)``: the first operand conjugated."""
    result = dot(_conj(a).detach(), b.detach())
    if GRAD.enabled and (a._requires_grad or b._requires_grad):
        node = record_op(VdotBackward0, (a, b), result)
        edges = node.next_functions
        node.save(b if edges[0][0] is not None else None, a if edges[1][0] is not None else None)
    return result


class BmmBackward0(Node):
    __slots__ = ()
    saved_names = ("mat2", "self")

    def apply(self, grads):
        b, a = self.saved()
        g = grads[0]
        if not GRAD.enabled and not _profiling:  # (a profile shows the backward's bmm ops)
            gd = g._ndarray
            with _quiet():
                # NumPy's batched product is about 1.5x slower with a transposed right operand than
                # with a contiguous copy of it (same BLAS sums: the same bits). The copy pays for itself
                # when many rows of g use each element (attention: 64); for a convolution's few output
                # channels against its unrolled windows (8 rows, 1.7M elements) it costs more than it saves
                ga = None
                if self._should_compute_output(0):
                    bc = _conj_np(b._ndarray)
                    if gd.shape[-2] < 32 and gd.shape[-1] >= 256:
                        # few rows against long ones (a convolution's weight gradient): OpenBLAS runs
                        # (b @ g^T)^T, the same sums, up to twice as fast (4 x (8, 5184) @ (5184, 81):
                        # 3.9 against 2.0 ms); the result is made contiguous, as the direct product is
                        ga = np.ascontiguousarray(_blas.matmul(bc, gd.transpose(0, 2, 1)).transpose(0, 2, 1))
                    else:
                        bt = bc.transpose(0, 2, 1)
                        if gd.shape[-2] >= 32:
                            bt = np.ascontiguousarray(bt)
                        ga = _blas.matmul(gd, bt)
                    ga = wrap(_narrow(ga, gd.dtype))
                gb = wrap(_narrow(_blas.matmul(_conj_np(a._ndarray).transpose(0, 2, 1), gd), gd.dtype)) \
                    if self._should_compute_output(1) else None
            return ga, gb
        # torch computes mat2's gradient first (what a create_graph pass records and saves follows)
        gb = bmm(_conj(a).transpose(1, 2), g) if self._should_compute_output(1) else None
        ga = bmm(g, _conj(b).transpose(1, 2)) if self._should_compute_output(0) else None
        return ga, gb


@op()
def bmm(a: Tensor, b: Tensor) -> Tensor:
    if a._ndarray.dtype.kind == "b":  # checked inline: this runs on every product
        _rules.refuse_kernel(a._ndarray, _rules.BOOL, "bmm")
    if a._ndarray.ndim != 3 or b._ndarray.ndim != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor" if a._ndarray.ndim != 3 else "batch2 must be a 3D tensor")
    if a._ndarray.shape[0] != b._ndarray.shape[0] or a._ndarray.shape[2] != b._ndarray.shape[1]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{a._ndarray.shape[0]}, {a._ndarray.shape[2]}] but got: [{b._ndarray.shape[0]}, {b._ndarray.shape[1]}].")
    _check_same_dtype(a, b, "bmm")
    with _quiet():
        result = wrap(_narrow(_blas.matmul(a._ndarray, b._ndarray), a._ndarray.dtype))
    if GRAD.enabled and (a._requires_grad or b._requires_grad):
        node = record_op(BmmBackward0, (a, b), result)
        node.save(b if a._requires_grad else None, a if b._requires_grad else None)
    return result


class UnsafeViewBackward0(_InputShapeNode):
    __slots__ = ()

    def apply(self, grads):
        return (grads[0].reshape(self.in_shape),)


class SqueezeBackward4(UnsafeViewBackward0):
    __slots__ = ()
    # recorded only by vector @ matrix, which squeezes dim 0 of the matrix product
    saved_values = {"self_sym_sizes": lambda n: n.in_shape, "dim": lambda n: 0}


def _unsafe_view(x: Tensor, shape, node_cls=UnsafeViewBackward0) -> Tensor:
    """Reshape of a fresh result; recorded as its own node (not a view) like torch's _unsafe_view."""
    result = wrap(x._ndarray.reshape(shape))
    if GRAD.enabled and x._requires_grad:
        node = record_op(node_cls, (x,), result)
        node.in_shape = x._ndarray.shape
    return result


@op()
def matmul(a, b) -> Tensor:
    a, b = as_tensor_arg(a), as_tensor_arg(b)
    da, db = a._ndarray.ndim, b._ndarray.ndim
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    if da == 1 and db == 1:
        return dot(a, b)
    if da == 2 and db == 1:
        return mv(a, b)
    if da == 1 and db == 2:
        if a._ndarray.shape[0] != b._ndarray.shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied (1x{a._ndarray.shape[0]} and "
                               f"{b._ndarray.shape[0]}x{b._ndarray.shape[1]})")
        return _unsafe_view(mm(a.unsqueeze(0), b), (b._ndarray.shape[1],), SqueezeBackward4)
    if da == 2 and db == 2:
        return mm(a, b)
    if da >= 3 and db <= 2:
        # fold the batch into the rows: one BLAS call
        lead = a._ndarray.shape[:-1]
        folded = a.reshape(-1, a._ndarray.shape[-1])
        out = mv(folded, b) if db == 1 else mm(folded, b)
        return _unsafe_view(out, lead if db == 1 else lead + (b._ndarray.shape[-1],))
    # general batched case: broadcast the batch dims, then bmm
    a2 = a.unsqueeze(0) if da == 1 else a
    b2 = b.unsqueeze(-1) if db == 1 else b
    try:
        batch = np.broadcast_shapes(a2._ndarray.shape[:-2], b2._ndarray.shape[:-2])
    except ValueError:
        from .pointwise import broadcast_mismatch
        raise RuntimeError(broadcast_mismatch(a2._ndarray.shape[:-2], b2._ndarray.shape[:-2])) from None
    if a2._ndarray.shape[-1] != b2._ndarray.shape[-2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{int(np.prod(batch))}, {a2._ndarray.shape[-1]}] but got: "
                           f"[{int(np.prod(batch))}, {b2._ndarray.shape[-2]}].")
    n, m, p = a2._ndarray.shape[-2], a2._ndarray.shape[-1], b2._ndarray.shape[-1]
    a3 = a2.expand(batch + (n, m)).reshape(-1, n, m)
    b3 = b2.expand(batch + (m, p)).reshape(-1, m, p)
    out_shape = batch + (n, p)
    if da == 1:
        out_shape = batch + (p,)
    elif db == 1:
        out_shape = batch + (n,)
    return _unsafe_view(bmm(a3, b3), out_shape)


@op(aliases=("ger",))
def outer(a: Tensor, b: Tensor) -> Tensor:
    return a.reshape(-1, 1) * b


ger = outer


@op(inplace=True)
def addmv(bias, mat, vec, *, beta=1, alpha=1):
    return bias * beta + mv(mat, vec) * alpha


class BaddbmmBackward0(Node):
    __slots__ = ("bias_shape", "beta", "alpha")
    saved_names = ("batch1", "batch2")
    saved_values = {"alpha": lambda n: n.alpha, "beta": lambda n: n.beta}

    def apply(self, grads):
        a, b = self.saved()
        g = grads[0]
        gbias = ga = gb = None
        if self._should_compute_output(0):
            gbias = sum_to_shape(g if self.beta == 1 else g * self.beta, self.bias_shape)
        if self._should_compute_output(1):
            ga = bmm(g, b.transpose(1, 2))
            if self.alpha != 1:
                ga = ga * self.alpha
        if self._should_compute_output(2):
            gb = bmm(a.transpose(1, 2), g)
            if self.alpha != 1:
                gb = gb * self.alpha
        return gbias, ga, gb


@op(inplace=True)
def baddbmm(bias, a, b, *, beta=1, alpha=1):
    """``beta * bias + alpha * (a @ b)`` over a batch, in one node (the bias broadcast), as torch's."""
    if not all(isinstance(t, Tensor) for t in (bias, a, b)):
        return bias * beta + bmm(a, b) * alpha
    enabled, GRAD.enabled = GRAD.enabled, False  # the values from the plain ops, nothing recorded
    try:
        product = bmm(a, b)
        out = (product * alpha if alpha != 1 else product) + (bias * beta if beta != 1 else bias)
    finally:
        GRAD.enabled = enabled
    if tuple(out._ndarray.shape) != tuple(product._ndarray.shape):
        raise RuntimeError(f"The size of tensor a ({bias._ndarray.shape[-1]}) must match the size of tensor b "
                           f"({product._ndarray.shape[-1]}) at non-singleton dimension 2")
    result = wrap(out._ndarray)
    if GRAD.enabled and (bias._requires_grad or a._requires_grad or b._requires_grad):
        node = record_op(BaddbmmBackward0, (bias, a, b), result)
        node.bias_shape, node.beta, node.alpha = bias._ndarray.shape, beta, alpha
        # each product side is kept for the other's gradient (torch's order: batch1, batch2)
        node.save(a if b._requires_grad else None, b if a._requires_grad else None)
    return result


# ---- einsum -----------------------------------------------------------------------------------
class EinsumBackward(Node):
    __slots__ = ("inputs_subs", "out_subs", "sizes")

    def apply(self, grads):
        g = grads[0]
        operands = self.saved()
        outs = []
        for i, subs in enumerate(self.inputs_subs):
            if not self._should_compute_output(i):
                outs.append(None)
                continue
            others = [(s, operands[j]) for j, s in enumerate(self.inputs_subs) if j != i]
            present = set(self.out_subs).union(*[set(s) for s, _ in others])
            missing = "".join(c for c in dict.fromkeys(subs) if c not in present)
            terms = [self.out_subs] + [s for s, _ in others]
            tensors = [g] + [_conj(t) for _, t in others]
            if missing:
                terms.append(missing)
                tensors.append(wrap(np.ones([self.sizes[c] for c in missing], dtype=g._ndarray.dtype)))
            target = "".join(dict.fromkeys(subs))
            gi = einsum(",".join(terms) + "->" + target, *tensors)
            if target != subs:
                # repeated index (a diagonal) in the operand: place the gradient on that diagonal
                gi = _undiagonal(gi, target, subs, self.sizes)
            outs.append(gi)
        return tuple(outs)


EinsumBackward.__name__ = EinsumBackward.__qualname__ = "EinsumBackward0"  # torch's grad_fn name


def _undiagonal(g, target, subs, sizes):
    full = np.zeros([sizes[c] for c in subs], dtype=g._ndarray.dtype)
    idx = np.indices([sizes[c] for c in target])
    pos = tuple(idx[target.index(c)] for c in subs)
    full[pos] = g._ndarray
    return wrap(full)


def _parse_einsum(equation, operands):
    """Subscripts per operand and for the output, with any ellipsis spelled out as letters."""
    import string
    arrow = equation.find("->")
    for i, c in enumerate(equation):
        allowed = c in string.ascii_letters or c in " ." or (c == "," and (arrow < 0 or i < arrow)) or \
            (arrow >= 0 and i in (arrow, arrow + 1))
        if not allowed:
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, subscripts "
                               "must be in [a-zA-Z]")
    eq = equation.replace(" ", "")
    lhs, out = eq.split("->") if "->" in eq else (eq, None)
    ins = lhs.split(",")
    if out is not None:
        plain = out.replace("...", "")
        if "." in plain:
            raise RuntimeError("einsum(): found '.' for output that is not part of any ellipsis (...)")
        for c in plain:
            if plain.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
            if c not in lhs:
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input "
                                   "operand")
    if len(ins) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                           if len(operands) > len(ins) else
                           "einsum(): fewer operands were provided than specified in the equation")
    ell = ""
    if "..." in eq:
        free = [c for c in string.ascii_letters if c not in eq]
        n_ell = max((t._ndarray.ndim - (len(s) - 3) for s, t in zip(ins, operands) if "..." in s), default=0)
        ell = "".join(free[:n_ell])
        ins = [s.replace("...", ell[n_ell - (t._ndarray.ndim - (len(s) - 3)):]) if "..." in s else s
               for s, t in zip(ins, operands)]
        if out is not None:
            out = out.replace("...", ell)
    if out is None:
        letters = "".join(ins)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    return ins, out


def _check_einsum_dtypes(ins, out, operands):
    """torch contracts the operands left to right: a pair with indices to sum goes through bmm, which
    wants one dtype; a pair without (an outer or elementwise product) multiplies, promoting the dtypes."""
    left_subs, left = set(ins[0]), operands[0]._ndarray.dtype
    for k in range(1, len(operands)):
        later = set(out).union(*(set(s) for s in ins[k + 1:]))
        right = operands[k]._ndarray.dtype
        if any(c not in later for c in left_subs & set(ins[k])):
            if left != right:
                raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(left)} but found "
                                   f"{_dtype.scalar_type_name(right)}")
        else:
            left = _dtype.promote_types(_dtype.from_numpy_dtype(left), _dtype.from_numpy_dtype(right)).np
        left_subs = {c for c in left_subs | set(ins[k]) if c in later}


def _sublist_equation(args):
    """The equation and operands of the sublist form ``einsum(op1, [0, 1], op2, [1, 2], [0, 2])``: subscripts
    0-25 are the letters A-Z, 26-51 a-z, ``...`` an ellipsis; an odd count of arguments ends with the output."""
    import string

    def letter(n):
        if n is Ellipsis:
            return "..."
        if not 0 <= n < 52:
            raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")
        return (string.ascii_uppercase + string.ascii_lowercase)[n]

    equation = ",".join("".join(map(letter, sub)) for sub in args[1::2])
    if len(args) % 2:
        return equation + "->" + "".join(map(letter, args[-1])), args[:-1:2]
    return equation, args[::2]


@op(method=False)
def einsum(equation, *operands) -> Tensor:
    if isinstance(equation, Tensor):
        equation, operands = _sublist_equation((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    operands = tuple(as_tensor_arg(t) for t in operands)
    for t in operands:
        _rules.refuse_kernel(t._ndarray, _rules.BOOL, "bmm")  # torch contracts through bmm
    ins, out = _parse_einsum(equation, operands)
    sizes = {}
    for i, (s, t) in enumerate(zip(ins, operands)):
        if len(s) != t._ndarray.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(s)}) does not match the "
                               f"number of dimensions ({t._ndarray.ndim}) for operand {i} and no ellipsis was given")
        for j, (c, n) in enumerate(zip(s, t._ndarray.shape)):
            first = s.index(c)
            if first < j and t._ndarray.shape[first] != n:
                raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {i} but the sizes don't match, "
                                   f"{n} != {t._ndarray.shape[first]}")
            if sizes.get(c, n) != n and n != 1 and sizes.get(c) != 1:
                if c in equation:
                    raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {i} which does not "
                                       f"broadcast with previously seen size {sizes[c]}")
                raise RuntimeError(f"einsum(): operands do not broadcast with remapped shapes (original->remapped)")
            sizes[c] = max(sizes.get(c, 1), n)
    _check_einsum_dtypes(ins, out, operands)
    dt = _dtype.result_type(*operands).np
    work = _dtype.compute_dtype(dt)  # bfloat16 operands: float32 products and sums, one rounding
    result = wrap(_narrow(np.asanyarray(np.einsum(",".join(ins) + "->" + out, *[t._ndarray.astype(work, copy=False)
                                                                             for t in operands],
                                               optimize=len(operands) > 2)), dt))
    if GRAD.enabled and any(t._requires_grad for t in operands):
        node = EinsumBackward(tuple(edge(t) for t in operands))
        node.inputs_subs, node.out_subs, node.sizes = ins, out, sizes
        node.save(*operands)
        record(node, result, inputs=tuple(operands))
    return result


@op(method=False)
def tensordot(a, b, dims=2):
    """Contract ``dims`` of ``a`` with ``dims`` of ``b`` as torch does, so that the graph has torch's
    nodes: sum away contracted dims of size 1 (a broadcast), permute the kept dims of ``a`` before and
    those of ``b`` after the contracted ones, reshape both to matrices, one ``mm`` (``dot`` when no
    dim is kept), and a reshape to the result's shape."""
    if isinstance(dims, Tensor):
        dims = dims.tolist() if dims.numel() > 1 else int(dims.item())
    if isinstance(dims, (bool, float)) or not isinstance(dims, (int, np.integer, tuple, list)):
        raise RuntimeError("tensordot expects dims to be int or tuple[list[int], list[int]] or list[list[int]] "
                           f"containing two lists, but got dims={dims}")
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, (int, np.integer)) else list(d) for d in dims)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    if a._ndarray.dtype != b._ndarray.dtype:
        raise RuntimeError("both inputs should have same dtype")
    wrapped_a = [_wrap_dim(d, a.ndim) for d in dims_a]
    wrapped_b = [_wrap_dim(d, b.ndim) for d in dims_b]
    ta, tb, contracted = a, b, 1
    for da, db, ia, ib in zip(dims_a, dims_b, wrapped_a, wrapped_b):
        sa, sb = a._ndarray.shape[ia], b._ndarray.shape[ib]
        if sb == 1:  # a broadcast dimension: summed right away
            ta = ta.sum(da, keepdim=True, dtype=ta.dtype)
        elif sa == 1:
            tb = tb.sum(db, keepdim=True, dtype=tb.dtype)
        elif sa != sb:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa} in dim {da} and "
                               f"second has size {sb} in dim {db}")
        else:
            contracted *= sa
    for wrapped, given in ((wrapped_a, dims_a), (wrapped_b, dims_b)):
        seen = set()
        for w, d in zip(wrapped, given):
            if w in seen:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
            seen.add(w)
    kept_a = [i for i in range(a.ndim) if i not in wrapped_a]
    kept_b = [i for i in range(b.ndim) if i not in wrapped_b]
    rows = int(np.prod([ta._ndarray.shape[i] for i in kept_a]))
    cols = int(np.prod([tb._ndarray.shape[i] for i in kept_b]))
    out_shape = [ta._ndarray.shape[i] for i in kept_a] + [tb._ndarray.shape[i] for i in kept_b]
    # each operand permuted and reshaped in turn: the nodes' creation order is torch's, and with it
    # the order the engine runs them in
    vector = rows == 1 and cols == 1
    ma = ta.permute(kept_a + dims_a)  # the contracted dims as given (torch's node saves them so)
    ma = ma.flatten() if vector else ma.reshape(rows, contracted)
    mb = tb.permute(dims_b + kept_b)
    mb = mb.flatten() if vector else mb.reshape(contracted, cols)
    return (dot(ma, mb) if vector else mm(ma, mb)).reshape(out_shape)


@op()
def inner(a, b):
    """The sum of products over the last dims of ``a`` and ``b``; with a scalar, their product."""
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a._ndarray.shape[-1] != b._ndarray.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(a._ndarray.shape)} and {list(b._ndarray.shape)}")
    return tensordot(a, b, dims=([-1], [-1]))


# ---- linear algebra ---------------------------------------------------------------------------
class LinalgInvExBackward0(Node):
    __slots__ = ()
    saved_names = ("inverse",)

    def apply(self, grads):
        (inv_a,) = self.saved()
        inv_t = inv_a.mH
        return (-(inv_t @ grads[0] @ inv_t),)


def _singular_message(data: np.ndarray) -> str:
    """torch's words for a matrix inv cannot invert: which batch element, and which diagonal element
    of its LU factor (counted from 1) is zero."""
    from scipy.linalg import lapack
    batch = data.reshape((-1,) + data.shape[-2:])
    for i, matrix in enumerate(batch):
        getrf = lapack.get_lapack_funcs("getrf", (matrix,))
        info = getrf(matrix)[2]
        if info > 0:
            where = f"(Batch element {i}): " if data.ndim > 2 else ""
            return (f"linalg.inv: {where}The diagonal element {info} is zero, the inversion could not be "
                    "completed because the input matrix is singular.")
    return "linalg.inv: The inversion could not be completed because the input matrix is singular."


@op("inverse")
def inv(a: Tensor) -> Tensor:
    _floating_matrix(a, "linalg.inv", "low precision")
    _square(a, "linalg.inv")
    try:
        data = np.linalg.inv(a._ndarray)
    except np.linalg.LinAlgError:
        from .decompositions import LinAlgError
        raise LinAlgError(_singular_message(a._ndarray)) from None
    result = wrap(data.astype(a._ndarray.dtype, copy=False))
    if GRAD.enabled and a._requires_grad:
        node = record_op(LinalgInvExBackward0, (a,), result)
        node.save(output=result)
    return result


def _floating_matrix(a, name, half):
    """torch's refusals of linalg inputs: integers and bools (RuntimeError), and float16/bfloat16,
    which ``half`` says how it refuses: ``"low precision"`` (RuntimeError) or a kernel name whose
    NotImplementedError torch raises."""
    dt = a._ndarray.dtype
    if not _dtype.is_inexact_np(dt):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_dtype.scalar_type_name(dt)}")
    if dt.name in _rules.HALF:
        if half == "low precision":
            raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {_dtype.scalar_type_name(dt)}")
        _rules.refuse_kernel(a._ndarray, _rules.HALF, half)


def _square(a, name):
    if a._ndarray.ndim < 2 or a._ndarray.shape[-1] != a._ndarray.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{a._ndarray.shape[-2] if a._ndarray.ndim >= 2 else 1} by {a._ndarray.shape[-1]} matrices")


class LinalgDetBackward0(Node):
    __slots__ = ()
    saved_names = ("A", "result")

    def apply(self, grads):
        a, det_a = self.saved()
        g = (grads[0] * _conj(det_a)).unsqueeze(-1).unsqueeze(-1)
        return (g * inv(a).mH,)


def _zero_signed_as_lu(data: np.ndarray, values: np.ndarray, signs=False) -> np.ndarray:
    """``values`` (determinants, or their signs with ``signs``) with each zero signed as torch's product of
    the LU factor's diagonal and the permutation's sign leaves it (a singular matrix's det may be -0.).
    torch hands its row-major matrix to LAPACK, which reads it column-major: it factors the transpose."""
    zeros = np.argwhere(np.asarray(values) == 0)
    if not len(zeros) or data.dtype.kind == "c":
        return values
    import warnings

    import scipy.linalg as sla
    values = np.array(values, copy=True)
    for index in map(tuple, zeros):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sla.LinAlgWarning)   # singular is what brought us here
            lu, pivots = sla.lu_factor(data[index].T, check_finite=False)
        diagonal = np.diagonal(lu)
        product = np.prod(np.sign(diagonal) if signs else diagonal)
        swaps = int(np.count_nonzero(pivots != np.arange(len(pivots))))
        values[index] = np.copysign(0.0, -product if swaps % 2 else product)
    return values


@op()
def det(a: Tensor) -> Tensor:
    _floating_matrix(a, "linalg.det", "lu_cpu")
    _square(a, "linalg.det")
    with _quiet():
        value = np.asanyarray(np.linalg.det(a._ndarray), dtype=a._ndarray.dtype)
        result = wrap(np.asanyarray(_zero_signed_as_lu(a._ndarray, value), dtype=a._ndarray.dtype))
    if GRAD.enabled and a._requires_grad:
        node = record_op(LinalgDetBackward0, (a,), result)
        node.save(a, output=result)
    return result


class LinalgSlogdetBackward0(Node):
    __slots__ = ("_num_outputs",)

    def apply(self, grads):
        (a,) = self.saved()
        g = grads[1]
        if a._ndarray.dtype.kind == "c":
            # d logabsdet and d sign both come through tr(A^-1 dA): the weight of A^-H is
            # g_logabsdet - i Im(conj(g_sign) sign)
            sign = wrap(np.asanyarray(np.linalg.slogdet(a._ndarray)[0]))
            w = g if g is not None else wrap(np.zeros(sign._ndarray.shape, dtype=a._ndarray.real.dtype))
            if grads[0] is not None:
                w = w - (grads[0].conj() * sign).imag * 1j
            return (w.unsqueeze(-1).unsqueeze(-1) * inv(a).mH,)
        if g is None:
            return (wrap(np.zeros(a._ndarray.shape, dtype=a._ndarray.dtype)),)
        return (g.unsqueeze(-1).unsqueeze(-1) * inv(a).mT,)


@op()
def slogdet(a: Tensor):
    _floating_matrix(a, "linalg.slogdet", "low precision")
    _square(a, "linalg.slogdet")
    with _quiet():
        sign, logabs = np.linalg.slogdet(a._ndarray)
        sign = _zero_signed_as_lu(a._ndarray, sign, signs=True)
    s = wrap(np.asanyarray(sign, dtype=a._ndarray.dtype))
    la = wrap(np.asanyarray(logabs, dtype=a._ndarray.real.dtype))  # real for a complex matrix too
    if GRAD.enabled and a._requires_grad:
        node = record_op(LinalgSlogdetBackward0, (a,), s, la)
        node._num_outputs = 2
        node.save(a)
    return return_types.make("slogdet", ("sign", "logabsdet"))(s, la)


class LinalgSolveExBackward0(Node):
    __slots__ = ("vector", "left")
    saved_names = ("A", "result")

    def apply(self, grads):
        a, x = self.saved()
        g = grads[0]
        gb = solve(a.mH, g, left=self.left)
        ga = None
        if self._should_compute_output(0):
            xc = _conj(x)
            if not self.left:   # X A = B: dA takes -X^H gB
                ga = -(xc.mT @ gb)
            elif self.vector:
                ga = -outer(gb, xc) if gb.ndim == 1 else -(gb.unsqueeze(-1) @ xc.unsqueeze(-2))
            else:
                ga = -(gb @ xc.mT)
        return ga, gb if self._should_compute_output(1) else None


def solve(a: Tensor, b: Tensor, *, left=True) -> Tensor:
    _floating_matrix(a, "linalg.solve", "lu_cpu")
    _square(a, "linalg.solve")
    if a._ndarray.dtype != b._ndarray.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{_dtype.scalar_type_name(a._ndarray.dtype)} and B of type "
                           f"{_dtype.scalar_type_name(b._ndarray.dtype)} instead")
    ad, bd = a._ndarray, b._ndarray
    # torch's rule: B is a vector when 1-d, or when its shape is A's without the last dim
    vector = bd.ndim == 1 or (bd.ndim == ad.ndim - 1 and bd.shape == ad.shape[:-1])
    if bd.ndim + vector < 2:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 2 dimensions.")
    b_matrix = bd[..., None] if vector else bd
    if (ad.shape[-2] != b_matrix.shape[-2]) if left else (ad.shape[-1] != b_matrix.shape[-1]):
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'} "
                           f"({ad.shape[-2]}x{ad.shape[-1]} and {b_matrix.shape[-2]}x{b_matrix.shape[-1]})")
    from .pointwise import _mismatch, _padded
    mismatch = _mismatch(*_padded(b_matrix.shape[:-2], ad.shape[:-2]))
    if mismatch:
        raise RuntimeError(mismatch)
    if not left and vector:
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not supported for left=False. "
                           "In this case linalg.solve is equivalent to B / A.squeeze(-1)")
    try:
        # X A = B is A^T X^T = B^T
        data = (np.linalg.solve(ad, b_matrix) if left else
                np.swapaxes(np.linalg.solve(np.swapaxes(ad, -1, -2), np.swapaxes(b_matrix, -1, -2)), -1, -2))
    except np.linalg.LinAlgError:
        from .decompositions import LinAlgError
        raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix is singular.") from None
    if vector:
        data = data[..., 0]
    result = wrap(data.astype(ad.dtype, copy=False))
    if GRAD.enabled and (a._requires_grad or b._requires_grad):
        node = record_op(LinalgSolveExBackward0, (a, b), result)
        node.vector = vector
        node.left = left
        node.save(a, output=result)
    return result


def matrix_norm(a, ord="fro", dim=(-2, -1), keepdim=False):
    from .reduce import vector_norm
    if ord != "fro":
        raise NotImplementedError(f"hookgrad: matrix_norm(ord={ord!r}) is not implemented")
    return vector_norm(a, 2, dim, keepdim)


def linalg_norm(a, ord=None, dim=None, keepdim=False, *, dtype=None):
    from .reduce import vector_norm
    if ord is None or (isinstance(ord, (int, float)) and (dim is None or isinstance(dim, int) or len(dim) == 1)):
        if ord is None and dim is not None and not isinstance(dim, int) and len(dim) == 2:
            return matrix_norm(a, "fro", dim, keepdim)
        return vector_norm(a, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    return matrix_norm(a, ord, dim if dim is not None else (-2, -1), keepdim)


__all__ = module_all(globals())
