"""Complex tensors: their parts as views (``real``, ``imag``, ``view_as_real``, ``view_as_complex``),
conjugation, ``angle``, ``complex`` and ``polar``.

Gradients follow torch's convention for complex numbers: a backward receives and returns the
conjugate Wirtinger derivative, so for ``s = f(z)`` with incoming gradient ``g`` the input's gradient
is ``g * conj(ds/dz) + conj(g) * ds/dconj(z)``; for a real loss, ``z.grad`` is ``dL/dx + i dL/dy``.

NumPy has no conjugate bit: ``conj()`` of a complex tensor is a conjugated copy, not a view.
"""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype
from .._tensor import Tensor, wrap
from ..autograd.graph import Node
from ._base import GRAD, as_tensor_arg, quiet_fp, sum_to_shape
from . import _dtype_rules as _rules
from ._declare import formula_node, module_all, op, record_op
from .decompositions import LinAlgError, _result_type
from .views import make_view, select

_EIG = _result_type("linalg_eig", ["eigenvalues", "eigenvectors"])

_PART_DTYPES = {np.dtype(np.complex64): np.dtype(np.float32), np.dtype(np.complex128): np.dtype(np.float64)}
_PART_DTYPES[_dtype.complex32.np] = np.dtype(np.float16)  # two float16 fields: torch's layout
_COMPLEX_OF = {v: k for k, v in _PART_DTYPES.items()}


class _Interface:
    """An object exposing memory through ``__array_interface__`` (keeps ``owner`` alive)."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, owner: np.ndarray, dtype: np.dtype, shape: tuple, strides: tuple):
        self.owner = owner
        self.__array_interface__ = {"data": (owner.__array_interface__["data"][0], not owner.flags.writeable),
                                    "shape": shape, "strides": strides, "typestr": dtype.str, "version": 3}


def _reinterpret(data: np.ndarray, dtype: np.dtype, shape: tuple, strides: tuple) -> np.ndarray:
    """``data``'s memory (from its first element) read as ``dtype`` with the given layout; no copy."""
    view = np.asanyarray(_Interface(data, dtype, shape, strides))
    # the interface's type string of a structured type (complex32) is raw bytes: name the fields again
    return view.view(dtype) if view.dtype != dtype else view


def _is_complex(t: Tensor) -> bool:
    return _dtype.is_complex_np(t._ndarray.dtype)


# ---- views of the parts ---------------------------------------------------------------------------
class ViewAsRealBackward0(Node):
    __slots__ = ()

    def apply(self, grads):
        return (view_as_complex(grads[0].contiguous()),)


class ViewAsComplexBackward0(Node):
    __slots__ = ()

    def apply(self, grads):
        return (view_as_real(grads[0]),)


@op(method=False)
def view_as_real(input):
    """The complex tensor's memory as a real tensor with a last dimension of 2 (real, imaginary)."""
    x = input
    if not _is_complex(x):
        raise RuntimeError("view_as_real is only supported for complex tensors")
    data = x._ndarray
    part = _PART_DTYPES[data.dtype]
    view = _reinterpret(data, part, data.shape + (2,), data.strides + (part.itemsize,))
    return make_view(x, view, ViewAsRealBackward0)


@op(method=False)
def view_as_complex(input):
    """A real tensor whose last dimension is 2 (real, imaginary) viewed as a complex tensor."""
    x = input
    data = x._ndarray
    if data.dtype not in _COMPLEX_OF:
        name = _dtype.scalar_type_name(data.dtype)
        raise RuntimeError("view_as_complex is only supported for half, float and double tensors, but got a "
                           f"tensor of scalar type: {name}")
    if data.ndim == 0 or data.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    item = data.itemsize
    if data.strides[-1] != item:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % (2 * item) for n, s in zip(data.shape[:-1], data.strides[:-1]) if n > 1):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    base = x._base_value._ndarray if x._base_value is not None else data
    offset = data.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    if offset % (2 * item):
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    view = _reinterpret(data, _COMPLEX_OF[data.dtype], data.shape[:-1], data.strides[:-1])
    return make_view(x, view, ViewAsComplexBackward0)


@op(method=False)
def view_as_real_copy(input):
    """``view_as_real``'s values in storage of their own."""
    return view_as_real(input).clone()


@op(method=False)
def view_as_complex_copy(input):
    """``view_as_complex``'s values in storage of their own (not differentiable, as in torch)."""
    if GRAD.enabled and isinstance(input, Tensor) and input._requires_grad:
        raise RuntimeError("view_as_complex_copy does not support automatic differentiation for outputs with "
                           "complex dtype.")
    return view_as_complex(input).clone()


def _real_part(x):
    if not _is_complex(x):
        return x
    return select(view_as_real(x), x._ndarray.ndim, 0)  # torch's node reports the dim counted from the front


def _imag_part(x):
    if not _is_complex(x):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return select(view_as_real(x), x._ndarray.ndim, 1)


@op(method=False)  # Tensor.real and Tensor.imag are properties (set below)
def real(input):
    """The real part as a view (writes show through); a real tensor is its own real part."""
    return _real_part(as_tensor_arg(input))


@op(method=False)
def imag(input):
    """The imaginary part as a view (writes show through); complex tensors only."""
    return _imag_part(as_tensor_arg(input))


def _set_part(part_of):
    def setter(self, value):
        part = part_of(self)
        part.copy_(value if isinstance(value, Tensor) else as_tensor_arg(value))
    return setter


Tensor.real = property(real, _set_part(_real_part))
Tensor.imag = property(imag, _set_part(_imag_part))


# ---- conjugation ------------------------------------------------------------------------------
class ConjBackward0(Node):
    __slots__ = ()

    def apply(self, grads):
        return (conj(grads[0]),)


class ConjPhysicalBackward0(Node):
    __slots__ = ()

    def apply(self, grads):
        return (conj_physical(grads[0]),)


def _conjugated(x, node_cls):
    if x._ndarray.dtype == _dtype.complex32.np:  # two float16 fields: negate the imaginary one
        flipped = x._ndarray.copy()
        flipped["imag"] = -flipped["imag"]
        result = wrap(flipped)
    else:
        result = wrap(np.conjugate(x._ndarray))
    if GRAD.enabled and x._requires_grad:
        record_op(node_cls, (x,), result)
    return result


@op()
def conj(input):
    """The complex conjugate (the tensor itself for real tensors). torch returns a lazily
    conjugated view; NumPy has none, so here it is a conjugated copy."""
    x = as_tensor_arg(input)
    return _conjugated(x, ConjBackward0) if _is_complex(x) else x


@op()
def conj_physical(input):
    x = as_tensor_arg(input)
    return _conjugated(x, ConjPhysicalBackward0) if _is_complex(x) else x


@op("conj_physical_", function=False, method="conj_physical_")
def _conj_physical_in_place(self):
    if _is_complex(self):
        from .views import apply_inplace
        return apply_inplace(self, conj_physical, saves_self=False)
    return self


@op(aliases=("resolve_neg",))
def resolve_conj(input):
    """No tensor here carries a pending conjugation (or negation): the tensor itself."""
    return as_tensor_arg(input)


@op()
def is_conj(input) -> bool:
    return False


@op()
def is_neg(input) -> bool:
    return False


@op()
def isreal(input):
    d = as_tensor_arg(input)._ndarray
    if d.dtype.kind != "c":
        return wrap(np.ones(d.shape, dtype=bool))
    return wrap(d.imag == 0)


@op()
def adjoint(input):
    """The conjugate transpose of the last two dimensions."""
    x = input
    if x.dim() < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of matrices. "
                           f"Got {x.dim()}-D tensor.")
    return conj(x.transpose(-2, -1))


# ---- angle, complex, polar ----------------------------------------------------------------------
def _angle_backward(g, x):
    if not _is_complex(x):
        # the angle of a real number is a step function: torch's gradient is a constant zero
        return wrap(np.zeros_like(x._ndarray))
    # d angle / dz in torch's convention: i z / |z|^2, chosen away by a where at z = 0 (torch's
    # formula: its second derivative there is NaN, from the 0/0 of the branch not taken)
    from .pointwise import where
    with quiet_fp():
        return where(x == 0, wrap(np.zeros((), dtype=x._ndarray.dtype)), g * x / x.abs().pow(2) * 1j)


AngleBackward0 = formula_node("AngleBackward0", ("self",), _angle_backward)


@op()
def angle(input):
    """The argument of each element (a real tensor); for real tensors pi where negative, 0 elsewhere."""
    x = as_tensor_arg(input)
    d = x._ndarray
    if d.dtype in _rules.LOWPREC:  # float8, float4, complex32
        _rules.refuse_lowprec(d, "angle_cpu")
    if d.dtype.kind == "c":
        with quiet_fp():
            result = wrap(np.angle(d))
    else:
        source = d.dtype
        d = _dtype.widen(d)  # bfloat16 computes in float32 and keeps its dtype
        if d.dtype.kind not in "f":
            d = d.astype(_dtype.get_default_dtype().np)
        out = np.where(d < 0, d.dtype.type(math.pi), np.where(np.isnan(d), d, d.dtype.type(0)))
        result = wrap(_dtype.narrow_to(out, source) if _dtype.is_bfloat16_np(source) else out)
    if GRAD.enabled and x._requires_grad:
        record_op(AngleBackward0, (x,), result).save(x)
    return result


def _check_parts(a, b, name_a, name_b):
    for t, n in ((a, name_a), (b, name_b)):
        if not isinstance(t, Tensor):
            raise TypeError(f"argument '{n}' must be Tensor, not {type(t).__name__}")
    da, db = a._ndarray.dtype, b._ndarray.dtype
    if da not in _COMPLEX_OF or db not in _COMPLEX_OF:
        raise RuntimeError("Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_dtype.scalar_type_name(da)} and {_dtype.scalar_type_name(db)}")
    if da != db:
        raise RuntimeError(f"Expected object of scalar type {_dtype.scalar_type_name(da)} but got scalar type "
                           f"{_dtype.scalar_type_name(db)} for second argument")


def _broadcast(a, b):
    try:
        return np.broadcast_shapes(a._ndarray.shape, b._ndarray.shape)
    except ValueError:
        raise RuntimeError(f"The size of tensor a must match the size of tensor b: shapes {list(a.shape)} and "
                           f"{list(b.shape)} are not broadcastable") from None


class ComplexBackward0(Node):
    __slots__ = ("shapes",)
    saved_names = ("imag", "real")

    def apply(self, grads):
        g = grads[0]
        re_shape, im_shape = self.shapes
        g_re = sum_to_shape(_real_part(g), re_shape) if self._should_compute_output(0) else None
        g_im = sum_to_shape(_imag_part(g), im_shape) if self._should_compute_output(1) else None
        return g_re, g_im


@op(method=False)
def complex(real, imag):
    """``real + i imag`` (broadcast), a complex tensor of the parts' precision."""
    _check_parts(real, imag, "real", "imag")
    _broadcast(real, imag)
    out = np.empty(np.broadcast_shapes(real._ndarray.shape, imag._ndarray.shape), dtype=_COMPLEX_OF[real._ndarray.dtype])
    if out.dtype.kind == "c":
        out.real, out.imag = real._ndarray, imag._ndarray
    else:  # complex32: its two float16 fields
        out["real"], out["imag"] = real._ndarray, imag._ndarray
    result = wrap(out)
    if GRAD.enabled and (real._requires_grad or imag._requires_grad):
        node = record_op(ComplexBackward0, (real, imag), result)
        node.shapes = (real._ndarray.shape, imag._ndarray.shape)
        node.save(imag, real)
    return result


class PolarBackward0(Node):
    __slots__ = ("shapes",)
    saved_names = ("result",)

    def apply(self, grads):
        (z,) = self.saved()
        g = grads[0]
        abs_shape, angle_shape = self.shapes
        # z = r e^{i theta}: dL/dr = Re(conj(g) e^{i theta}), dL/dtheta = Re(conj(g) i z)
        cg = conj(g)
        g_abs = g_angle = None
        if self._should_compute_output(0):
            # as torch: the unit phasor taken as sgn(z), so the gradient is 0 where abs is 0
            g_abs = sum_to_shape(_real_part(cg * z.sgn()), abs_shape)
        if self._should_compute_output(1):
            g_angle = sum_to_shape(_real_part(cg * z * 1j), angle_shape)
        return g_abs, g_angle


@op(method=False)
def polar(abs, angle):
    """``abs * (cos(angle) + i sin(angle))`` (broadcast)."""
    _check_parts(abs, angle, "abs", "angle")
    _broadcast(abs, angle)
    r, theta = abs._ndarray, angle._ndarray
    if r.dtype == np.float16:  # no complex32 result: torch has no half-precision polar kernel
        raise NotImplementedError("\"polar_cpu\" not implemented for 'Half'")
    out = np.empty(np.broadcast_shapes(r.shape, theta.shape), dtype=_COMPLEX_OF[r.dtype])
    with quiet_fp():
        out.real, out.imag = r * np.cos(theta), r * np.sin(theta)
    result = wrap(out)
    if GRAD.enabled and (abs._requires_grad or angle._requires_grad):
        node = record_op(PolarBackward0, (abs, angle), result)
        node.shapes = (r.shape, theta.shape)
        node.save(output=result)
    return result


# ---- eigen decomposition of general square matrices ---------------------------------------------------
class LinalgEigBackward0(Node):
    __slots__ = ("_num_outputs", "real_input")
    saved_names = ("eigenvalues", "eigenvectors")

    def apply(self, grads):
        L, V = self.saved()
        gL, gV = grads
        Vh = adjoint(V)
        if gV is None:
            inner = _diag_embed(gL)
        else:
            VhgV = Vh @ gV
            diag_VhgV = VhgV.diagonal(0, -2, -1)
            # eigenvectors are fixed only up to a phase each: a loss that sees the phase has no gradient
            if not np.allclose(diag_VhgV._ndarray.imag, 0, rtol=1e-2, atol=1e-2):
                raise RuntimeError("linalg_eig_backward: The eigenvectors in the complex case are specified up to "
                                   "multiplication by e^{i phi}. The specified loss function depends on this "
                                   "quantity, so it is ill-defined.")
            Lc = L.conj()
            n = L._ndarray.shape[-1]
            # E[i, j] = conj(L_j) - conj(L_i), 1 on the diagonal (where the numerator is 0)
            E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + wrap(np.eye(n, dtype=L._ndarray.dtype))
            inner = (VhgV - Vh @ (V * _real_part(diag_VhgV).unsqueeze(-2))) / E
            if gL is not None:
                inner = inner + _diag_embed(gL)
        from .linalg import solve
        gA = solve(Vh, inner @ Vh)
        return (_real_part(gA) if self.real_input else gA,)


def _diag_embed(v):
    n = v._ndarray.shape[-1]
    return v.unsqueeze(-1) * wrap(np.eye(n, dtype=v._ndarray.dtype))


def _eig_input(A, name):
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg_{name}(): argument 'input' (position 1) must be Tensor, not {type(A).__name__}")
    d = A._ndarray
    if d.ndim < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor A must have at least 2 dimensions.")
    if d.shape[-1] != d.shape[-2]:
        raise RuntimeError(f"linalg.{name}: A must be batches of square matrices, but they are {d.shape[-2]} by "
                           f"{d.shape[-1]} matrices")
    if d.dtype == np.float16 or _dtype.is_bfloat16_np(d.dtype):  # no LAPACK kernel for the half types
        raise NotImplementedError(f"\"linalg_eig_out_cpu\" not implemented for '{_dtype.scalar_type_name(d.dtype)}'")
    if d.dtype.kind not in "fc":
        raise RuntimeError(f"Unknown Complex ScalarType for {_dtype.scalar_type_name(d.dtype)}")
    return A


def _eig(A, name):
    A = _eig_input(A, name)
    d = A._ndarray
    out = _COMPLEX_OF.get(d.dtype, d.dtype)
    with quiet_fp():
        if not np.isfinite(d).all():
            raise LinAlgError(f"linalg.{name}: The algorithm failed to converge because the input matrix contained "
                              "non-finite values.")
        w, v = np.linalg.eig(d)
    L, V = wrap(w.astype(out)), wrap(v.astype(out))
    if GRAD.enabled and A._requires_grad:
        node = record_op(LinalgEigBackward0, (A,), L, V)
        node._num_outputs = 2
        node.real_input = d.dtype.kind != "c"
        node.save(L, V)
    return L, V


def linalg_eig(A):
    """torch.linalg.eig: eigenvalues and unit-norm eigenvectors of a general square matrix (complex)."""
    return _EIG(*_eig(A, "eig"))


def linalg_eigvals(A):
    """torch.linalg.eigvals: the eigenvalues of ``linalg.eig`` (complex)."""
    return _eig(A, "eigvals")[0]


# ---- conversions ----------------------------------------------------------------------------------
def _dtype_method(name, dtype):
    def convert(self, memory_format=None):
        return self.to(dtype)
    convert.__name__ = convert.__qualname__ = name
    op(name, function=False)(convert)


_dtype_method("cfloat", _dtype.complex64)
_dtype_method("chalf", _dtype.complex32)
_dtype_method("cdouble", _dtype.complex128)

__all__ = module_all(globals())
