"""``Parameter`` (a tensor that a Module registers as a parameter) and ``Buffer`` (a tensor
marker that a Module registers as a buffer)."""
from __future__ import annotations

from typing import Any

import hookgrad
from hookgrad._C._torch_function import _disabled_torch_function_impl
from hookgrad._tensor import FACTORY_REFUSES_GRAD, Tensor, wrap


def _detached(data: Tensor) -> Tensor:
    """``data.detach()`` without consulting overrides (torch's ``_make_subclass`` consults none)."""
    out = wrap(data._ndarray)
    out._version_counter = data._version_counter
    return out

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]


def _alias(cls, data: Tensor) -> Tensor:
    """A new leaf of class ``cls`` sharing ``data``'s memory and version counter."""
    out = object.__new__(cls)
    src = _detached(data)
    for slot in ("_ndarray", "_requires_grad", "_grad_fn_value", "_grad_value", "_output_nr", "_version_counter",
                 "_base_value", "_view_version", "_tensor_hooks", "_post_accumulate_hooks",
                 "_accumulator", "_retains_grad"):
        setattr(out, slot, getattr(src, slot))
    return out


class _ParameterMeta(type):
    """``isinstance(t, Parameter)`` also holds for a Tensor subclass instance made a parameter by
    ``Parameter(t)`` (which keeps its class, as in torch)."""

    def __instancecheck__(cls, instance) -> bool:
        if cls is Parameter and getattr(instance, "_is_param", False) and isinstance(instance, Tensor):
            return True
        return super().__instancecheck__(instance)


class Parameter(Tensor, metaclass=_ParameterMeta):
    """A tensor that is a module parameter: assigning one to a Module attribute registers it.

    ``Parameter(data, requires_grad=True)`` shares ``data``'s memory and is always a leaf.
    Its repr is ``Parameter containing:`` followed by the tensor's.
    """

    __slots__ = ()
    __torch_function__ = _disabled_torch_function_impl  # results of ops on a Parameter are plain tensors

    def __new__(cls, data: Any = None, requires_grad: bool = True):
        if data is None:
            data = hookgrad.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not {type(data).__name__}")
        if getattr(type(data), "__torch_function__", None) is not _disabled_torch_function_impl and \
                type(data) is not Tensor:
            # a subclass that overrides __torch_function__ stays itself, marked as a parameter
            out = data.detach().requires_grad_(requires_grad)
            if type(out) is not type(data):
                raise RuntimeError(f"Creating a Parameter from an instance of type {type(data).__name__} requires "
                                   f"that detach() returns an instance of the same type, but return type "
                                   f"{type(out).__name__} was found instead. To use the type as a Parameter, please "
                                   f"correct the detach() semantics defined by its __torch_dispatch__() "
                                   f"implementation.")
            out._is_param = True
            return out
        out = _alias(cls, data)
        out._set_requires_grad(requires_grad, FACTORY_REFUSES_GRAD)
        return out

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Everything happened in __new__; Tensor.__init__ would reinitialise the data.
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        # As in PyTorch: a fresh parameter with cloned data; grad and Python attributes are not kept.
        result = type(self)(self.data.clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __repr__(self) -> str:
        text = super().__repr__()
        # The core's formatter may already add the header (it does for this class).
        return text if text.startswith("Parameter containing:") else "Parameter containing:\n" + text

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        # Like PyTorch, a pickled parameter keeps its data, requires_grad and Python attributes,
        # not its hooks.
        return (_rebuild_parameter, (self._ndarray.copy(), self._requires_grad, dict(self.__dict__), type(self)))


def _rebuild_parameter(data, requires_grad, state=None, cls=Parameter):
    from hookgrad._tensor import wrap

    out = cls(wrap(data), requires_grad)
    if state:
        out.__dict__.update(state)
    return out


class _BufferMeta(type):
    """``isinstance(t, Buffer)`` holds for any tensor made by ``Buffer(...)`` (a plain Tensor)."""

    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer and isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False):
            return True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """Marks a tensor as a buffer: ``module.name = Buffer(t)`` calls ``register_buffer`` with
    ``persistent``. Like PyTorch, ``Buffer(t)`` returns a plain (detached) Tensor, not a Buffer
    instance; ``isinstance(x, Buffer)`` recognises it."""

    __slots__ = ()
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data: Any = None, *, persistent: bool = True):
        if data is None:
            data = hookgrad.empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


class UninitializedTensorMixin:
    """A parameter or buffer whose shape is not known yet (lazy modules infer it on the first call).

    It holds no values: its shape cannot be read, and ``materialize`` gives it storage of the given
    shape and turns it into its ``cls_to_become``.
    """

    cls_to_become = None
    __torch_function__ = _disabled_torch_function_impl

    def materialize(self, shape, device=None, dtype=None) -> None:
        if dtype is None:
            dtype = self.dtype
        self.data = hookgrad.empty(tuple(shape) if not isinstance(shape, int) else (shape,), dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def size(self, dim=None):
        return self.shape

    def numel(self) -> int:
        return self.shape

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
                           "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<class '{type(self).__module__}.{type(self).__name__}'>"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (type(self), (self.requires_grad,))


def _stays_uninitialized(name):
    """Conversions (``.double()``, ``.to(...)``) keep an uninitialized tensor uninitialized."""
    def convert(self, *args, **kwargs):
        converted = getattr(Tensor, name)(self, *args, **kwargs)
        if converted is self:
            return self
        out = _alias(type(self), converted)
        out.requires_grad_(self.requires_grad)
        return out
    convert.__name__ = name
    return convert


for _name in ("to", "double", "float", "half", "bfloat16", "cpu", "cuda", "int", "long", "short", "char"):
    if hasattr(Tensor, _name):
        setattr(UninitializedTensorMixin, _name, _stays_uninitialized(_name))


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        data = hookgrad.empty(0, dtype=dtype)
        out = _alias(cls, data)
        out._set_requires_grad(requires_grad, FACTORY_REFUSES_GRAD)
        return out

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, None, self.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True):
        out = _alias(cls, hookgrad.empty(0, dtype=dtype))
        out._set_requires_grad(requires_grad, FACTORY_REFUSES_GRAD)
        return out

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


def is_lazy(param: Any) -> bool:
    """True for a parameter or buffer that a lazy module has not initialized yet."""
    return isinstance(param, UninitializedTensorMixin)
