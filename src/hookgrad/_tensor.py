"""Tensor: a NumPy ndarray plus the autograd metadata PyTorch users expect.

The arithmetic lives in ``_ops``; this module holds the class, its metadata (grad, grad_fn,
version counter, view base, hooks) and the methods that are about the tensor itself rather
than about an operation. Operation methods are attached by ``_ops/__init__.py``.
"""
from __future__ import annotations

import builtins
import weakref
from collections import OrderedDict

import numpy as np

from . import _dtype
from ._device import device as _device_cls, CPU
from ._memory_format import STRIDED
from ._meta import META, MetaArray, NO_DATA, NO_NUMPY
from ._dtype import Size
from . import autograd as _autograd
from .autograd import grad_mode
from .autograd.graph import AccumulateGrad, Node
from .utils.hooks import RemovableHandle, note_registration

_GRAD = grad_mode.STATE
_InferenceCounter = grad_mode.InferenceCounter


class Tensor:
    """An n-dimensional array with autograd. See the README for what differs from torch (little)."""

    __slots__ = ("_ndarray", "_requires_grad", "_grad_fn_value", "_grad_value", "_output_nr",
                 "_version_counter", "_base_value", "_view_version", "_tensor_hooks", "_post_accumulate_hooks",
                 "_accumulator", "_retains_grad", "__weakref__", "__dict__")

    # -- construction -------------------------------------------------------------------------
    def __new__(cls, *args, **kwargs):
        self = object.__new__(cls)
        _init(self, np.empty(0, dtype=_dtype.get_default_dtype().np))
        if args or kwargs:
            # as in torch, whose constructor is all in __new__: a subclass's own __init__ (which may call
            # ``super().__init__()`` with no arguments) does not undo it
            self._construct(*args, **kwargs)
        return self

    def __init__(self, *args, **kwargs):
        # everything happened in __new__ (``Tensor(data)``, a subclass's ``super().__new__(cls, data)``,
        # ``_make_subclass``): the arguments change nothing here
        return

    def _construct(self, *args, **kwargs):
        # ``hookgrad.Tensor(2, 3)`` is an uninitialized 2x3 tensor, ``Tensor([1, 2])`` a float tensor
        kwargs.pop("device", None)   # the one keyword torch's legacy constructor takes (CPU here)
        if kwargs:
            raise TypeError(_legacy_constructor_message(args, kwargs))
        if len(args) == 1 and isinstance(args[0], Size):   # a Size is the sizes, any other tuple the data
            args = tuple(args[0])
        if len(args) == 1 and not isinstance(args[0], (builtins.int, np.integer)):
            data = args[0]
            if isinstance(data, str):
                raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
            if not isinstance(data, (Tensor, np.ndarray)) and not hasattr(data, "__len__"):
                raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
            self._ndarray = np.asarray(_to_array(data), dtype=_dtype.get_default_dtype().np)
        elif args:
            self._ndarray = np.zeros(tuple(args), dtype=_dtype.get_default_dtype().np)

    # -- metadata ----------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._ndarray.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._ndarray.shape)
        return self._ndarray.shape[_wrap_dim(dim, self._ndarray.ndim)]

    @property
    def dtype(self):
        return _dtype.from_numpy_dtype(self._ndarray.dtype)

    @property
    def device(self):
        if self._ndarray.__class__ is not MetaArray:
            return CPU
        # a wrapper subclass instance (``_make_wrapper_subclass``) is on the device it was given
        return self.__dict__.get("_wrapper_device", META)

    @property
    def is_meta(self) -> bool:
        return self._ndarray.__class__ is MetaArray and self.__dict__.get("_wrapper_device", META).type == "meta"

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    is_cuda = False
    is_sparse = False
    is_quantized = False
    # the other back ends' and layouts' flags: a hookgrad tensor is a dense CPU tensor
    is_mps = is_xpu = is_xla = is_ipu = is_mtia = is_maia = is_vulkan = is_mkldnn = False
    is_nested = is_sparse_csr = False
    layout = STRIDED

    @property
    def ndim(self) -> int:
        return self._ndarray.ndim

    def dim(self) -> int:
        return self._ndarray.ndim

    ndimension = dim

    def numel(self) -> int:
        return self._ndarray.size

    nelement = numel

    def element_size(self) -> int:
        return self._ndarray.itemsize

    @property
    def itemsize(self) -> int:
        return self._ndarray.itemsize

    @property
    def nbytes(self) -> int:
        return self._ndarray.nbytes

    def stride(self, dim=None):
        if self._ndarray.__class__ is MetaArray:   # its NumPy strides are all zero; report contiguous ones
            from ._meta import contiguous_strides
            strides = contiguous_strides(self._ndarray.shape)
        else:
            strides = tuple(s // self._ndarray.itemsize for s in self._ndarray.strides)
        return strides if dim is None else strides[_wrap_dim(dim, self._ndarray.ndim)]

    def is_contiguous(self, memory_format=None) -> bool:
        if self._ndarray.__class__ is MetaArray:
            return memory_format is None or memory_format == "torch.contiguous_format"
        if memory_format is None:
            return self._ndarray.flags.c_contiguous
        from . import _memory_format
        return _memory_format.is_contiguous(self._ndarray, memory_format)

    def is_floating_point(self) -> bool:
        return _dtype.is_floating_np(self._ndarray.dtype)

    def is_complex(self) -> bool:
        return _dtype.is_complex_np(self._ndarray.dtype)

    def get_device(self) -> int:
        return -1

    # -- autograd metadata ----------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        if self._requires_grad:
            return True
        if self._base_value is not None and self._view_version != self._version_counter[0]:
            self.grad_fn  # an in-place op on the base gave it history: the view's node regenerates
            return self._requires_grad
        return self._base_value is not None and _view_requires_grad_by_base(self)

    @requires_grad.setter
    def requires_grad(self, value) -> None:
        self._set_requires_grad(value, "only Tensors of floating point and complex dtype can require gradients")

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        return self._set_requires_grad(requires_grad, "only Tensors of floating point dtype can require gradients")

    def _set_requires_grad(self, requires_grad, refusal: str) -> "Tensor":
        """``requires_grad_``; ``refusal`` is the message for an integer tensor, which torch words
        differently for the method, the attribute and the factories' ``requires_grad=True``."""
        requires_grad = builtins.bool(requires_grad)
        if requires_grad and self._version_counter.__class__ is _InferenceCounter and not _GRAD.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        if self._grad_fn_value is not None and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to "
                               "use a computed variable in a subgraph that doesn't require differentiation "
                               "use var_no_grad = var.detach().")
        if requires_grad and self._ndarray.dtype.kind not in "fc" and not _dtype.is_inexact_np(self._ndarray.dtype):
            raise RuntimeError(refusal)
        self._requires_grad = requires_grad
        return self

    @requires_grad.deleter
    def requires_grad(self) -> None:
        # (deleters on the properties, not a __delattr__: a class defining __delattr__ makes every
        # attribute write on its instances go through Python, and wrap() writes twelve)
        raise RuntimeError(_UNDELETABLE["requires_grad"])

    def _current_grad_fn(self):
        """``grad_fn`` as the library reads it (the property consults ``__torch_function__``)."""
        fn = self._grad_fn_value
        if self._base_value is not None and self._view_version != self._version_counter[0]:
            fn = self._regenerate_view_grad_fn()
        return fn

    grad_fn = property(_current_grad_fn)

    @property
    def is_leaf(self) -> bool:
        return self._current_grad_fn() is None

    @property
    def grad(self):
        if self._grad_fn_value is not None and not self._retains_grad and _warn_nonleaf_grad[0]:
            import warnings
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
                "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
                "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
                "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
                "github.com/pytorch/pytorch/pull/30531 for more information.",
                UserWarning, stacklevel=2)
        return self._grad_value

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad")
            if value._ndarray.shape != self._ndarray.shape:
                raise RuntimeError(f"attempting to assign a gradient of size '{list(value._ndarray.shape)}' to a tensor "
                                   f"of size '{list(self._ndarray.shape)}'. Please ensure that the gradient and the "
                                   f"tensor are the same size")
            if value._ndarray.dtype != self._ndarray.dtype:
                raise RuntimeError(f"attempting to assign a gradient with dtype '{_dtype.cpp_type_name(value._ndarray.dtype)}'"
                                   f" to a tensor with grad_dtype '{_dtype.scalar_type_name(self._ndarray.dtype)}'. The "
                                   "gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). You "
                                   "can set the tensor's grad_dtype attribute with a specific dtype, or None to allow "
                                   "any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and its "
                                   "gradient may break downstream systems that assume they match.")
        self._grad_value = value

    @grad.deleter
    def grad(self) -> None:
        self._grad_value = None

    @property
    def _version(self) -> int:
        counter = self._version_counter
        if counter.__class__ is _InferenceCounter:
            raise RuntimeError("Inference tensors do not track version counter.")
        return counter[0]

    def _bump_version(self) -> None:
        self._version_counter[0] += 1

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    @property
    def data(self) -> "Tensor":
        # same storage, own version counter (as in torch): changes through .data are invisible to autograd
        return wrap(self._ndarray)

    @data.setter
    def data(self, value: "Tensor") -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self._requires_grad and not _dtype.is_inexact_np(value._ndarray.dtype):
            raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
        self._ndarray = value._ndarray

    @data.deleter
    def data(self) -> None:
        raise RuntimeError(_UNDELETABLE["data"])

    @property
    def volatile(self) -> bool:
        import warnings
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
        return False

    @property
    def _base(self):
        """The tensor this one is a view of (None for a non-view); read-only, as torch's."""
        return self._base_value

    def _is_view(self) -> bool:
        return self._base_value is not None

    def _edge(self):
        """(node, output_nr) where this tensor's gradient enters the graph."""
        fn = self._current_grad_fn()
        if fn is not None:
            return fn, self._output_nr
        if self._requires_grad:
            if self._base_value is not None and self.__dict__:
                from ._ops.views import is_no_grad_view
                if is_no_grad_view(self):
                    return None, 0
            return self._grad_accumulator(), 0
        return None, 0

    def _grad_accumulator(self) -> AccumulateGrad:
        ref = self._accumulator
        acc = ref() if ref is not None else None
        if acc is None:
            acc = AccumulateGrad(self)
            self._accumulator = weakref.ref(acc)
        return acc

    def _set_grad_fn(self, node: Node, output_nr: int = 0) -> None:
        self._grad_fn_value = node
        self._output_nr = output_nr
        self._requires_grad = True

    def _regenerate_view_grad_fn(self):
        """After an in-place change through the base (or another view), this view's gradient comes
        from the base's new history: torch gives it an AsStridedBackward0 node, and so do we."""
        error = self.__dict__.get("_inplace_error") if self.__dict__ else None
        if type(error) is tuple and self._requires_grad:
            # a view made inside a custom Function (a hooked module's output, too) cannot be rebased
            raise RuntimeError(error[0](*error[1:], base_modified=True))
        from ._ops.views import as_strided_node
        self._view_version = self._version_counter[0]
        base = self._base_value
        # a view with a node is rebased even when its base needs no grad (a view of a leaf that is
        # itself a view of a plain tensor): its new node then leads nowhere, as in torch; such a
        # leaf itself (no node) keeps none
        if base._requires_grad or self._grad_fn_value is not None:
            old, old_output_nr = self._grad_fn_value, self._output_nr
            self._grad_fn_value = as_strided_node(base, self)
            self._requires_grad = True
            self._tensor_hooks = None
            self._move_retain_grad_hook(old, old_output_nr)
        return self._grad_fn_value

    # -- hooks ------------------------------------------------------------------------------
    def register_hook(self, hook) -> RemovableHandle:
        """Run ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces it."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if not callable(hook):
            raise TypeError(f"register_hook expects a callable, got {type(hook).__name__}")
        if self._tensor_hooks is None:
            # as torch: the dict first, then grad_fn is read, for the first hook only (for a view
            # whose base changed in place, the read gives the view its new node and a fresh dict;
            # a read that raises leaves the dict, so a second registration goes through)
            self._tensor_hooks = OrderedDict()
            fn = self.grad_fn
            if self._tensor_hooks is None:
                self._tensor_hooks = OrderedDict()
            if fn is not None:
                fn._add_tensor_hooks(self._output_nr, self._tensor_hooks)
        handle = RemovableHandle(self._tensor_hooks)
        self._tensor_hooks[handle.id] = hook
        note_registration(self._tensor_hooks, handle.id, holder=self)
        return handle

    def register_post_accumulate_grad_hook(self, hook) -> RemovableHandle:
        """Run ``hook(tensor)`` after a gradient has been accumulated into this leaf's ``.grad``."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_accumulate_hooks is None:
            self._post_accumulate_hooks = OrderedDict()
        handle = RemovableHandle(self._post_accumulate_hooks)
        self._post_accumulate_hooks[handle.id] = hook
        note_registration(self._post_accumulate_hooks, handle.id, holder=self)
        return handle

    def retain_grad(self) -> None:
        """Keep this non-leaf tensor's gradient in ``.grad`` (a no-op on leaves)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        fn = self.grad_fn
        if fn is None or self._retains_grad:
            return
        self._install_retain_grad(fn)

    def _install_retain_grad(self, fn) -> None:
        import weakref
        ref = weakref.ref(self)

        def retain(grad):
            t = ref()
            if t is None or grad is None:
                return
            if t._grad_value is None:
                t._grad_value = wrap(grad._ndarray.copy()) if not _GRAD.enabled else grad.clone()
            else:
                t._grad_value = t._grad_value + grad

        if fn._retains_grad_hooks is None:
            fn._retains_grad_hooks = {}
            fn._has_hooks = True
        fn._retains_grad_hooks[self._output_nr] = retain
        self._retains_grad = True

    def _after_inplace(self, node: Node) -> None:
        """History bookkeeping when an in-place op rewrote this (non-view) tensor."""
        old, old_output_nr = self._grad_fn_value, self._output_nr
        self._grad_fn_value = node
        self._output_nr = 0
        self._requires_grad = True
        # hooks registered from now on belong to the new node; old ones stay with the old node
        self._tensor_hooks = None
        self._move_retain_grad_hook(old, old_output_nr)

    def _move_retain_grad_hook(self, old, old_output_nr: int) -> None:
        """retain_grad follows the tensor to its new grad_fn (after an in-place op, or when a view's
        node is regenerated): .grad is the gradient of its newest version, as in torch."""
        node = self._grad_fn_value
        if self._retains_grad and old is not None and old is not node and old._retains_grad_hooks:
            hook = old._retains_grad_hooks.pop(old_output_nr, None)
            if hook is not None:
                if node._retains_grad_hooks is None:
                    node._retains_grad_hooks = {}
                    node._has_hooks = True
                node._retains_grad_hooks[self._output_nr] = hook

    # -- autograd entry points --------------------------------------------------------------
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        autograd = _autograd_module[0]
        if autograd is None:  # imported on first use (hookgrad.autograd imports this module)
            from . import autograd
            _autograd_module[0] = autograd
        # looked up on each call, as torch's: a patched autograd.backward is what runs
        autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self) -> "Tensor":
        out = wrap(self._ndarray)
        out._version_counter = self._version_counter
        return out

    def detach_(self) -> "Tensor":
        # torch refuses every view (whether or not anything requires grad); inference mode makes none
        if self._base_value is not None and not _GRAD.inference:
            raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                               "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as "
                               "True, gradients are views of DDP buckets, and hence detach_() cannot be called on "
                               "these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
                               "function in torch/optim/optimizer.py as the solution.")
        self._grad_fn_value = None
        self._requires_grad = False
        self._output_nr = 0
        return self

    # -- conversion ------------------------------------------------------------------------
    def item(self):
        if self._ndarray.size != 1:
            raise RuntimeError(f"a Tensor with {self._ndarray.size} elements cannot be converted to Scalar")
        if self._ndarray.__class__ is MetaArray:
            return _meta_item(self)
        if self._ndarray.dtype.kind == "V":  # bfloat16, float8, complex32 (float8_e5m2 has kind "f": its item() serves)
            return _dtype.python_values(self._ndarray.reshape(()))
        return self._ndarray.reshape(()).item()

    def tolist(self):
        if self._ndarray.dtype.kind == "V":
            return _dtype.python_values(self._ndarray)
        return self._ndarray.tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        if self._ndarray.__class__ is MetaArray:
            raise TypeError(NO_NUMPY)
        if self._requires_grad and not force and _GRAD.enabled:  # allowed with grad mode off, as in torch
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        _dtype.refuse_bfloat16_numpy(self._ndarray)
        return self._ndarray.view()   # a new array object on the tensor's memory each call, as torch's

    def __array__(self, dtype=None, copy=None):
        if self._ndarray.__class__ is MetaArray:
            raise TypeError(NO_NUMPY)
        if self._requires_grad and _GRAD.enabled:   # np.array(t) goes through numpy(), as in torch
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        _dtype.refuse_bfloat16_numpy(self._ndarray)
        if dtype is not None:
            return self._ndarray.astype(dtype, copy=False)
        return self._ndarray

    def __array_wrap__(self, array):
        # NumPy's result for a tensor operand (``np.sin(t)``, ``ndarray + t``) comes back as a tensor on
        # it; a bool result as uint8, as torch's (the one-argument form NumPy warns about is torch's too)
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return wrap(array)

    def cpu(self) -> "Tensor":
        if self._ndarray.__class__ is MetaArray:
            raise NotImplementedError(NO_DATA)
        return self

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        from ._device import device as as_device, require_cpu
        if isinstance(device, bool):
            raise TypeError("cuda(): argument 'device' (position 1) must be torch.device, not bool")
        if device is not None and as_device(device).type != "cuda":   # an index raises there already
            raise RuntimeError("Invalid device, must be cuda device")
        require_cpu("cuda")

    def pin_memory(self, device=None):
        # torch's CPU-only build has no accelerator to pin host memory for
        from ._device import NO_ACCELERATOR
        raise RuntimeError(NO_ACCELERATOR)

    def is_pinned(self, device=None) -> bool:
        return False

    def __len__(self) -> int:
        if self._ndarray.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._ndarray.shape[0]

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        if self._ndarray.size != 1:
            how_many = "no values" if self._ndarray.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {how_many} is ambiguous")
        if self._ndarray.__class__ is MetaArray:
            return builtins.bool(_meta_item(self))
        return builtins.bool(self._ndarray.reshape(()))

    def __float__(self) -> float:
        if self.requires_grad:
            self._warn_scalar_of_grad_tensor()
        return builtins.float(self._scalar())

    def __int__(self) -> int:
        return builtins.int(self._scalar())

    def _scalar(self):
        if self._ndarray.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if self._ndarray.__class__ is MetaArray:
            return _meta_item(self)
        return self._ndarray.reshape(()).item()

    def __index__(self) -> int:
        if self._ndarray.dtype.kind not in "iub" or self._ndarray.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return builtins.int(self.item())

    def __complex__(self):
        if self.requires_grad:
            self._warn_scalar_of_grad_tensor()
        return complex(self._scalar())

    @staticmethod
    def _warn_scalar_of_grad_tensor() -> None:
        # torch warns once per process for float()/complex() (not int(), bool() or item())
        from .autograd._warn_once import warn_once
        warn_once("scalar_of_requires_grad", "Converting a tensor with requires_grad=True to a scalar may lead to "
                  "unexpected behavior.\nConsider using tensor.detach() first.", stacklevel=3)

    def __hash__(self):
        return id(self)

    def __reduce_ex__(self, protocol):
        from .utils.hooks import warn_if_has_hooks
        warn_if_has_hooks(self)
        return (_rebuild_tensor, (self._ndarray.copy(), self._requires_grad, type(self)))

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the "
                               "deepcopy protocol at the moment. If you were attempting to deepcopy a "
                               "module, this may be because of a torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        if id(self) in memo:
            return memo[id(self)]
        if self._ndarray.__class__ is MetaArray and "_wrapper_device" in self.__dict__:
            return self._deepcopy_wrapper(memo)
        out = type(self).__new__(type(self))
        _init(out, self._ndarray.copy())
        out._requires_grad = self._requires_grad
        if self._grad_value is not None:
            out._grad_value = self._grad_value.__deepcopy__(memo)
        if self.__dict__:
            import copy
            out.__dict__.update(copy.deepcopy(self.__dict__, memo))
        memo[id(self)] = out
        return out

    def _deepcopy_wrapper(self, memo):
        """A wrapper subclass instance's deep copy, as torch makes it: its ``clone()`` (which its
        ``__torch_dispatch__`` answers) with a deep copy of its attributes."""
        import copy
        out = self.clone()
        if type(out) is not type(self):
            raise RuntimeError("The default implementation of __deepcopy__() for wrapper subclasses only works for "
                               "subclass types that implement clone() and for which cloning returns another instance "
                               "of the same subclass. You should either properly implement clone() for your subclass "
                               "or override __deepcopy__() if it is intended behavior for clone() to return an "
                               "instance of a different type.")
        if self._requires_grad:
            out.requires_grad_()
        if self._grad_value is not None:
            out._grad_value = self._grad_value.__deepcopy__(memo)
        out.__dict__ = copy.deepcopy(self.__dict__, memo)
        memo[id(self)] = out
        return out

    def __repr__(self, *, tensor_contents=None) -> str:
        from ._format import format_tensor
        if _autograd.TRACKED_INPUTS:  # inside grad(f) and the like: torch's GradTrackingTensor text
            levels = _autograd.grad_tracking_levels(self)
            if levels:
                return _autograd.grad_tracking_text(format_tensor(self.detach()), levels)
        return format_tensor(self)

    __str__ = __repr__

    def __format__(self, spec):
        if self._ndarray.ndim == 0 and type(self) is Tensor:  # torch formats only plain 0-d tensors as numbers
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __contains__(self, element) -> bool:
        import numbers
        if isinstance(element, (Tensor, numbers.Number)):
            return builtins.bool((element == self).any().item())
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                           f"{type(element)}.")

    def __dir__(self):
        return sorted(set(object.__dir__(self)) - {"__dict__"})

    # -- a torch.Tensor attribute hookgrad lacks --------------------------------------------
    def __getattr__(self, name):
        # only called when normal lookup failed; an AttributeError keeps hasattr() working
        message = f"'{type(self).__name__}' object has no attribute '{name}'"
        if name[:1] != "_" and name in _torch_names_absent():   # a name torch has: point to the list
            from ._run import missing_message
            message = f"{missing_message(f'torch.Tensor.{name}')} ({message})"
        raise AttributeError(message, name=name, obj=self)

    # numpy must defer to our reflected operators (``ndarray * Tensor`` -> Tensor.__rmul__)
    __array_priority__ = 1000

    # -- the __torch_function__ protocol (hookgrad._C._torch_function) ---------------------
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        from ._C._torch_function import note_subclass
        note_subclass(cls)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Runs ``func`` with subclass overrides off and returns its tensor results as ``cls``
        instances (a subclass that overrides this usually ends with ``super().__torch_function__``)."""
        from ._C._torch_function import subclass_preserving
        return subclass_preserving(cls, func, types, args, kwargs)


def _meta_item(t):
    """``item()`` of a tensor whose array is a MetaArray: torch's error for a meta tensor; for a wrapper
    subclass instance, the value its ``__torch_dispatch__`` gives."""
    if "_wrapper_device" in t.__dict__ and getattr(type(t), "__torch_dispatch__", None) is not None:
        from .utils._python_dispatch import dispatched_item
        return dispatched_item(t)
    raise RuntimeError("Tensor.item() cannot be called on meta tensors")


# torch's legacy constructor's signatures, as its argument parser lists them
_LEGACY_SIGNATURES = ("(*, torch.device device = None)", "(torch.Storage storage)", "(Tensor other)",
                      "(tuple of ints size, *, torch.device device = None)", "(object data, *, torch.device device = None)")


def _parser_type_name(value) -> str:
    if isinstance(value, Tensor):
        return "Tensor"
    if isinstance(value, (_dtype.dtype, _device_cls)):
        return f"torch.{type(value).__name__}"
    return type(value).__name__


def _legacy_constructor_message(args, kwargs) -> str:
    """torch's TypeError for ``torch.Tensor(..., dtype=...)``: each signature, with the reason under the
    ones its parser tried for these positional arguments."""
    got = ", ".join([_parser_type_name(a) for a in args] + [f"{k}={_parser_type_name(v)}" for k, v in kwargs.items()])
    if not args:
        got, tried = got + ", ", (1, 2)
    elif all(isinstance(a, (builtins.int, np.integer)) for a in args):
        tried = (3, 4)
    else:
        tried = (0,)
    lines = [f"new() received an invalid combination of arguments - got ({got}), but expected one of:"]
    for i, signature in enumerate(_LEGACY_SIGNATURES):
        lines.append(f" * {signature}")
        if i in tried:
            lines.append(f"      didn't match because some of the keywords were incorrect: {', '.join(kwargs)}")
    return "\n".join(lines) + "\n"


def _torch_names_absent() -> frozenset:
    from ._torch_tensor_absent import TORCH_TENSOR_NAMES_ABSENT
    return TORCH_TENSOR_NAMES_ABSENT


_warn_nonleaf_grad = [True]


def _init(t: Tensor, data: np.ndarray) -> None:
    """Give ``t`` (made by ``object.__new__``: a subclass instance, a copy, an unpickled tensor) the
    state ``wrap`` gives a new tensor around ``data``."""
    fresh = wrap(data)
    for field in _STATE_FIELDS:
        setattr(t, field, getattr(fresh, field))


# the per-tensor state wrap sets (not __weakref__ and __dict__, which every instance has from the start)
_STATE_FIELDS = tuple(name for name in Tensor.__slots__ if not name.startswith("__"))


def _refusing_deletion(slot, message: str) -> property:
    """The slot ``slot`` read and written as before (C-level accessors), with torch's RuntimeError on ``del``:
    a deleted hook registry would leave the tensor's hooks unreadable."""
    def refuse(self):
        raise RuntimeError(message)
    return property(slot.__get__, slot.__set__, refuse)


def _clear_grad(self) -> None:
    self._grad_value = None


# torch's ``_grad``: ``.grad`` without the non-leaf warning; ``del`` clears it, as torch's does
_grad_slot = Tensor.__dict__["_grad_value"]
Tensor._grad = property(_grad_slot.__get__, _grad_slot.__set__, _clear_grad)
def _set_grad_fn_to_none(self, value) -> None:
    if value is not None:
        raise RuntimeError("_grad_fn can be only set to None")
    _detach_in_place(self)  # what torch does: the tensor becomes a leaf that does not require grad


def _refuse_grad_fn_deletion(self) -> None:
    raise RuntimeError("Deletion of _grad_fn not allowed. Detach tensor instead!")


# torch's ``_grad_fn``: ``grad_fn`` that may be set to None (detaching in place) and not deleted; the
# library reads and writes the slot ``_grad_fn_value``
_detach_in_place = Tensor.detach_
Tensor._grad_fn = property(Tensor._current_grad_fn, _set_grad_fn_to_none, _refuse_grad_fn_deletion)
# torch's names of the two hook registries; the library reads the slots ``_tensor_hooks`` and
# ``_post_accumulate_hooks`` themselves (no property on the path of every op and every leaf)
Tensor._backward_hooks = _refusing_deletion(Tensor.__dict__["_tensor_hooks"],
                                            "Deletion of _backwards_hooks not allowed!")
Tensor._post_accumulate_grad_hooks = _refusing_deletion(Tensor.__dict__["_post_accumulate_hooks"],
                                                        "Deletion of _post_accumulate_grad_hooks not allowed!")


_NDARRAY = np.ndarray
_new_object = object.__new__
_autograd_module = [None]  # hookgrad.autograd, once Tensor.backward has imported it


def wrap(data: np.ndarray, requires_grad: bool = False) -> Tensor:
    """A Tensor around ``data`` (no copy). The one fast constructor every op uses."""
    if data.__class__ is not _NDARRAY and not isinstance(data, _NDARRAY):
        # NumPy's ufuncs return scalars for 0-d operands; a Tensor holds an array (in-place ops write to it)
        data = np.asarray(data)
    # written out, no loop over fields: this runs for every tensor an op makes
    t = _new_object(Tensor)
    t._ndarray = data
    t._requires_grad = requires_grad
    t._grad_fn_value = None
    t._grad_value = None
    t._output_nr = 0
    t._version_counter = [0] if not _GRAD.inference else _InferenceCounter()
    t._base_value = None
    t._view_version = 0
    t._tensor_hooks = None
    t._post_accumulate_hooks = None
    t._accumulator = None
    t._retains_grad = False
    return t


def _rebuild_tensor(data, requires_grad, cls=Tensor):
    t = object.__new__(cls)
    _init(t, data)
    t._requires_grad = requires_grad
    return t


def _wrap_dim(dim, ndim: int) -> int:
    n = builtins.max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n if ndim else 0


_UNDELETABLE = {"data": "Deleting tensor data is not allowed. Delete tensor instead!",
                "requires_grad": "requires_grad must be a bool"}

# the attributes torch's TensorBase reads without a setter: assigning or deleting one raises its
# AttributeError (a class constant here would take an instance attribute; a property would say "has no setter")
_READ_ONLY = ("H", "T", "mH", "mT", "_version", "_base", "device", "dtype", "grad_fn", "is_leaf", "output_nr", "retains_grad",
              "shape", "ndim", "name", "layout", "itemsize", "nbytes", "is_cpu", "is_cuda", "is_ipu", "is_maia",
              "is_meta", "is_mkldnn", "is_mps", "is_mtia", "is_nested", "is_quantized", "is_sparse", "is_sparse_csr",
              "is_vulkan", "is_xla", "is_xpu")


def _refusal(name: str):
    def refuse(self, value=None):
        raise AttributeError(f"attribute '{name}' of 'torch._C.TensorBase' objects is not writable")
    refuse.__hookgrad_refuses__ = True  # not handed to __torch_function__ (torch's C setter is absent)
    return refuse


def _constant(value):
    return lambda self: value


def refuse_writes_to_read_only_attributes(cls) -> None:
    """Give each of ``_READ_ONLY`` (once every module has added its properties to ``cls``) a setter and a
    deleter that raise torch's AttributeError."""
    for name in _READ_ONLY:
        value = cls.__dict__[name]
        getter = value.fget if isinstance(value, property) else _constant(value)
        refuse = _refusal(name)
        setattr(cls, name, property(getter, refuse, refuse, getattr(value, "__doc__", None)
                                    if isinstance(value, property) else None))


# what torch says when a factory or Parameter is asked for an integer tensor that requires grad

FACTORY_REFUSES_GRAD = "Only Tensors of floating point and complex dtype can require gradients"


def _to_array(obj):
    """Nested sequences that may contain tensors -> ndarray (dtype decided by the caller)."""
    if isinstance(obj, Tensor):
        return obj._ndarray
    if isinstance(obj, (list, tuple)):
        if obj and any(isinstance(x, Tensor) for x in obj):
            return np.array([_to_array(x) for x in obj])
    return obj


_LEGACY_TYPE_NAMES = {
    "float32": "torch.FloatTensor", "float64": "torch.DoubleTensor", "float16": "torch.HalfTensor",
    "int64": "torch.LongTensor", "int32": "torch.IntTensor", "int16": "torch.ShortTensor",
    "int8": "torch.CharTensor", "uint8": "torch.ByteTensor", "bool": "torch.BoolTensor",
    "complex64": "torch.ComplexFloatTensor", "complex128": "torch.ComplexDoubleTensor",
    "bfloat16": "torch.BFloat16Tensor",
}


def _view_requires_grad_by_base(view) -> bool:
    """Whether a view made before its base was made to require grad requires grad now: torch asks the
    base (the view stays a leaf without grad_fn, and in-place changes of it are refused)."""
    base = view._base_value
    return base._requires_grad and view._grad_fn_value is None and view._ndarray.dtype == base._ndarray.dtype
