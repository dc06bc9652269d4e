"""Tensor methods that are not arithmetic: the deprecated out-of-place ``resize``/``resize_as``,
``set_`` (sharing another tensor's memory), ``is_set_to``, ``as_subclass``, the removed linear
algebra functions that torch keeps as errors (``torch.lstsq``, ``torch.solve``, ...), and the
legacy attributes ``name``, ``volatile`` and ``grad_dtype``."""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype
from .._tensor import Tensor, wrap
from ._declare import module_all, op
from .views import AliasBackward0, check_inplace, make_view


# ---- resize / resize_as: a reshape that keeps the element count (torch's Python ``Resize`` Function) ---
def _check_resize(x, sizes):
    # torch multiplies the sizes as given: a single tuple argument is not unpacked (and never matches)
    ints = all(isinstance(s, (int, np.integer)) for s in sizes)
    numel = math.prod(sizes) if ints else sizes
    if numel != x.numel():
        shape = "x".join(str(s) for s in x.shape)
        requested = "x".join(str(s) for s in sizes) if ints else str(sizes[0] if len(sizes) == 1 else sizes)
        raise RuntimeError(f"requested resize to {requested} ({numel if ints else requested} elements in total), "
                           f"but the given tensor has a size of {shape} ({x.numel()} elements). autograd's resize "
                           f"can only change the shape of a given tensor, while preserving the number of elements. ")


def _resize_function():
    from ..autograd.function import Function

    class Resize(Function):
        @staticmethod
        def forward(ctx, tensor, sizes):
            ctx.input_sizes = tuple(tensor.shape)
            return wrap(np.ascontiguousarray(tensor._ndarray).reshape(tuple(int(s) for s in sizes)))

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output.contiguous().view(ctx.input_sizes), None

    return Resize


_RESIZE = []


def _resize_copy(x, sizes):
    _check_resize(x, sizes)
    if not _RESIZE:
        _RESIZE.append(_resize_function())
    return _RESIZE[0].apply(x, sizes)


@op(function=False)
def resize(self, *sizes):
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _resize_copy(self, sizes)


@op(function=False)
def resize_as(self, tensor):
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _resize_copy(self, tuple(tensor.shape))


# ---- set_ / is_set_to: sharing memory ---------------------------------------------------------------
def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


@op("set_", function=False)
def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """``self`` takes ``source``'s memory, shape and strides (a tensor), or becomes empty (no
    argument); from a storage: ``size``/``stride`` elements from ``storage_offset``."""
    check_inplace(self)
    if source is None:
        data = np.empty(0, dtype=self._ndarray.dtype)
    elif isinstance(source, Tensor):
        if source._ndarray.dtype != self._ndarray.dtype:
            raise RuntimeError(f"Expected object of scalar type {self.dtype} but got scalar type {source.dtype} for "
                               f"argument 'source'")
        data = source._ndarray
    else:  # a storage: its bytes seen as self's dtype
        raw = np.frombuffer(source._bytes, dtype=self._ndarray.dtype) if hasattr(source, "_bytes") else None
        if raw is None:
            raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, not {type(source).__name__}")
        size = tuple(size) if size is not None else (raw.size - storage_offset,)
        if stride is None:
            stride = tuple(int(np.prod(size[i + 1:])) for i in range(len(size)))
        itemsize = raw.itemsize
        data = np.lib.stride_tricks.as_strided(raw[storage_offset:], shape=size,
                                               strides=tuple(s * itemsize for s in stride))
    self._ndarray = data
    self._version_counter[0] += 1
    if self._grad_fn_value is None:
        # as torch: a leaf gets a new gradient accumulator, so graphs recorded before do not reach
        # it by the tensor (their old accumulator, reached through its gradient edge, still does)
        self._accumulator = None
    return self


@op(function=False)
def is_set_to(self, tensor):
    """Whether both tensors look at the same memory with the same offset, sizes and strides."""
    a, b = self._ndarray, tensor._ndarray
    return _address(a) == _address(b) and a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype


# ---- as_subclass ----------------------------------------------------------------------------------------
@op(function=False)
def as_subclass(self, cls):
    """A ``cls`` instance over the same memory, attached to ``self``'s graph (an alias)."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not possible. "
                        "Make sure your class inherits from Tensor.")
    out = make_view(self, self._ndarray.view(), AliasBackward0)
    out.__class__ = cls
    return out


def _make_subclass(cls, data, require_grad=False, dispatch_sizes_strides_policy=None, dispatch_device=False,
                   dispatch_layout=False, _extra_dispatch_keys=None, storage_size=None):
    """``Tensor._make_subclass(cls, data, require_grad)``: a new leaf of class ``cls`` over ``data``'s
    memory (and version counter), detached from its graph (how Parameter-like subclasses are made)."""
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a type (got {type(cls).__name__})")
    if not issubclass(cls, Tensor):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not possible. "
                        "Make sure your class inherits from Tensor.")
    if not isinstance(data, Tensor):
        raise TypeError(f"_make_subclass(): argument 'data' (position 2) must be Tensor, not {type(data).__name__}")
    from ..nn.parameter import _alias
    from .._tensor import FACTORY_REFUSES_GRAD
    out = _alias(cls, data)
    out._set_requires_grad(bool(require_grad), FACTORY_REFUSES_GRAD)
    return out


Tensor._make_subclass = staticmethod(_make_subclass)


def _make_wrapper_subclass(cls, size, strides=None, storage_offset=None, memory_format=None, dtype=None, layout=None,
                           device=None, pin_memory=False, requires_grad=False, dispatch_sizes_strides_policy=None,
                           dispatch_device=False, dispatch_layout=False, _extra_dispatch_keys=None, storage_size=None):
    """``Tensor._make_wrapper_subclass(cls, size, ...)``: a ``cls`` instance of that size, dtype and device
    with no storage of its own (a meta array underneath); the subclass keeps the tensor it wraps and
    computes in its ``__torch_dispatch__``, which sees the ATen operators of the ops run on it."""
    if not isinstance(cls, type) or not issubclass(cls, Tensor):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not possible. "
                        "Make sure your class inherits from Tensor.")
    if getattr(cls, "__torch_dispatch__", None) is None:
        raise TypeError(f"{cls.__name__} must define __torch_dispatch__")
    from .._device import device as device_cls
    from .._meta import meta_array
    from .._tensor import FACTORY_REFUSES_GRAD, _init
    from .creation import _resolve_dtype, _size
    out = object.__new__(cls)
    _init(out, meta_array(_size((size,)), _resolve_dtype(dtype).np))
    out._set_requires_grad(bool(requires_grad), FACTORY_REFUSES_GRAD)
    out.__dict__["_wrapper_device"] = device_cls(device if device is not None else "cpu")
    from ..utils._python_dispatch import note_dispatch_subclass
    note_dispatch_subclass(out)
    return out


Tensor._make_wrapper_subclass = staticmethod(_make_wrapper_subclass)


# ---- trivial queries ------------------------------------------------------------------------------------
@op()
def is_distributed(self):
    return False


@op(function=False)
def const_data_ptr(self):
    return self.data_ptr()


# ---- removed functions: torch keeps the names, raising with directions ----------------------------------
_REMOVED = "This function was deprecated since version 1.9 and is now removed."
_LSTSQ = (f"{_REMOVED} `torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has "
          "reversed arguments and does not return the QR decomposition in the returned tuple (although it returns "
          "other information about the problem).\n\nTo get the QR decomposition consider using `torch.linalg.qr`.\n"
          "\nThe returned solution in `torch.lstsq` stored the residuals of the solution in the last m - n columns "
          "of the returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the field 'residuals' "
          "of the returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ = torch.lstsq(B, A).solution"
          "[:A.size(1)]\nshould be replaced with:\nX = torch.linalg.lstsq(A, B).solution")
_SOLVE = (f"{_REMOVED} `torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its "
          "arguments reversed and does not return the LU factorization.\n\nTo get the LU factorization see "
          "`torch.lu`, which can be used with `torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution "
          "should be replaced with:\nX = torch.linalg.solve(A, B)")
_EIG = (f"{_REMOVED} `torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real "
        "tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced with:\nL_complex = "
        "torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
        "L_complex, V_complex = torch.linalg.eig(A)")
_SYMEIG = (f"{_REMOVED} The default behavior has changed from using the upper triangular portion of the matrix by "
           "default to using the lower triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be "
           "replaced with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = "
           "torch.symeig(A, eigenvectors=True) should be replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if "
           "upper else 'L')")
_MATRIX_RANK = (f"{_REMOVED}\nPlease use the `torch.linalg.matrix_rank` function instead. The parameter "
                "'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.")


@op()
def lstsq(input, A, *, out=None):
    raise RuntimeError(_LSTSQ)


@op()
def solve(input, A, *, out=None):
    raise RuntimeError(_SOLVE)


@op()
def eig(input, eigenvectors=False, *, e=None, v=None):
    raise RuntimeError(_EIG)


@op()
def symeig(input, eigenvectors=False, upper=True, *, out=None):
    raise RuntimeError(_SYMEIG)


@op(method=False)
def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    raise RuntimeError(_MATRIX_RANK)


# ---- legacy attributes ------------------------------------------------------------------------------
def _volatile(self):
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
    return False


def _set_volatile(self, value):
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)


def _grad_dtype(self):
    if not self.is_leaf:
        raise RuntimeError("grad_dtype can only be accessed on leaf tensors.")
    return _dtype.from_numpy_dtype(self._ndarray.dtype)


def _set_grad_dtype(self, value):
    if not self.is_leaf:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    if value is not None and _dtype.to_dtype(value) != self.dtype:
        raise NotImplementedError("hookgrad: a gradient dtype other than the tensor's own is not supported")


# ---- module_load, record_stream, reinforce -------------------------------------------------------------
@op(function=False)
def module_load(self, other, assign=False):
    """What ``nn.Module.load_state_dict`` puts in place of ``self`` when swapping parameters: ``other``
    detached with ``assign``, else ``self`` with ``other`` copied in, detached."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()


@op(function=False)
def record_stream(self, stream):
    """A CUDA allocator's bookkeeping: torch has no CPU kernel for it (and takes only a Stream)."""
    from .._torch_extras import Stream
    from ..cuda import Stream as CudaStream
    if not isinstance(stream, (Stream, CudaStream)):
        raise RuntimeError("unknown parameter type")
    raise NotImplementedError("Could not run 'aten::record_stream' with arguments from the 'CPU' backend. This could "
                              "be because the operator doesn't exist for this backend.")


_REINFORCE_REMOVED = """reinforce() was removed.
Use torch.distributions instead.
See https://pytorch.org/docs/main/distributions.html

Instead of:

probs = policy_network(state)
action = probs.multinomial()
next_state, reward = env.step(action)
action.reinforce(reward)
action.backward()

Use:

probs = policy_network(state)
# NOTE: categorical is equivalent to what used to be called multinomial
m = torch.distributions.Categorical(probs)
action = m.sample()
next_state, reward = env.step(action)
loss = -m.log_prob(action) * reward
loss.backward()
"""


@op(function=False)
def reinforce(self, reward):
    raise RuntimeError(_REINFORCE_REMOVED)


Tensor.name = property(lambda self: None)
Tensor.volatile = property(_volatile, _set_volatile)
Tensor.grad_dtype = property(_grad_dtype, _set_grad_dtype)

__all__ = module_all(globals())
