"""``torch.nn.utils.parametrize``: make a parameter or buffer the output of a small module.

``register_parametrization(m, "weight", P)`` moves ``m.weight`` to
``m.parametrizations.weight.original`` (or ``original0``, ``original1``, ... when ``P.right_inverse``
returns several tensors), swaps ``m``'s class for a subclass named ``Parametrized<Class>`` and
installs a property ``weight`` on it that computes ``P(original)`` on every read (once per
``cached()`` block) and calls ``right_inverse`` on assignment.
"""
from __future__ import annotations

import collections.abc
import contextlib
import copy
import copyreg

import hookgrad
from ..._tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations", "transfer_parametrizations_and_params"]

_cache_depth = 0
_cache: dict = {}


@contextlib.contextmanager
def cached():
    """Inside this block each parametrized tensor is computed once, on its first read."""
    global _cache_depth, _cache
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache = {}


def _register_parameter_or_buffer(module, name, value) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_in_place(dest: Tensor, src: Tensor) -> None:
    # like Tensor.set_: dest keeps its identity (optimizers holding it still see it)
    dest.data = src.detach() if isinstance(src, Tensor) else src


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the unparametrized ``original``."""

    def __init__(self, modules, original, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with hookgrad.no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, Tensor) and not isinstance(new, collections.abc.Sequence):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            with hookgrad.no_grad():
                if new is not original:
                    _set_in_place(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, piece in enumerate(new):
                if not isinstance(piece, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                     f"Got element {i} of the sequence with type {type(piece).__name__}.")
                if isinstance(original, Parameter):
                    piece = Parameter(piece, original.requires_grad)
                piece.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", piece)
        if not self.unsafe:
            value = self()
            if not isinstance(value, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
            if value.dtype != original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized dtype: {original_dtype}\n"
                                 f"parametrized dtype: {value.dtype}")
            if value.shape != original_shape:
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized shape: {original_shape}\n"
                                 f"parametrized shape: {value.shape}")

    def right_inverse(self, value: Tensor) -> None:
        """Set the originals so that the parametrized tensor becomes ``value``."""
        with hookgrad.no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                _set_in_place(self.original, value)
                return
            if not isinstance(value, collections.abc.Sequence):
                raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                                 f"Got a sequence of length {len(value)}.")
            for i, tensor in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(tensor, Tensor):
                    raise ValueError("'right_inverse' must return a sequence of tensors or reference-type opaques. "
                                     f"Got element {i} of type {type(tensor).__name__}.")
                if original_i.dtype != tensor.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} while "
                                     f"`original{i}` has dtype {original_i.dtype}")
                _set_in_place(original_i, tensor)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _parametrized_getstate(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See:\n"
                       "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
                       "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _plain_deepcopy(self, memo):
    # __getstate__ refuses pickling, so deepcopy copies the instance dict directly
    if id(self) in memo:
        return memo[id(self)]
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    for slot in copyreg._slotnames(self.__class__):
        if hasattr(self, slot):
            setattr(replica, slot, copy.deepcopy(getattr(self, slot), memo))
    return replica


def _inject_new_class(module: Module) -> None:
    cls = module.__class__
    namespace = {"__getstate__": _parametrized_getstate}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _plain_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _inject_property(module: Module, tensor_name: str) -> None:
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")
    key = (id(module), tensor_name)

    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_depth:
            return parametrization()
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def _check_same_dtype_and_shape(current, other, message):
    """Raises ValueError(message(attribute, current's, other's)) for the first of dtype and shape that
    ``other`` does not share with ``current``."""
    for attribute in ("dtype", "shape"):
        was, now = getattr(current, attribute), getattr(other, attribute)
        if now != was:
            raise ValueError(message(attribute, was, now))


def _check_added(module, tensor_name, parametrization):
    current = getattr(module, tensor_name)
    new = parametrization(current)
    if not isinstance(new, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(new).__name__}.")
    _check_same_dtype_and_shape(current, new, lambda attribute, was, now: (
        f"Registering a parametrization may not change the {attribute} of the tensor, unless the `unsafe` flag is "
        f"enabled.\nmodule.{tensor_name}.{attribute}: {was}\nparametrization(module.{tensor_name}).{attribute}: {now}"))
    if hasattr(parametrization, "right_inverse"):
        try:
            back = parametrization.right_inverse(new)
        except NotImplementedError:
            return
        if not isinstance(back, Tensor):
            raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(back).__name__}")
        _check_same_dtype_and_shape(current, back, lambda attribute, was, returned: (
            f"The tensor returned by parametrization.right_inverse must have the same {attribute} as "
            f"module.{tensor_name}, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.{attribute}: {was}\n"
            f"returned {attribute}: {returned}"))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` computed as ``parametrization(original)`` (appended after any
    parametrizations already on that tensor)."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_added(module, tensor_name, parametrization)
        _check_parametrizations_dict(module)
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        _check_parametrizations_dict(module)  # (a module registration hook may have replaced it)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    return module


def _check_parametrizations_dict(module: Module) -> None:
    if not isinstance(module.parametrizations, ModuleDict):
        raise AssertionError(f"Expected module.parametrizations to be a ModuleDict, got "
                             f"{type(module.parametrizations).__name__}")


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has any parametrization (on ``tensor_name``, if given)."""
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Undo the parametrizations on ``tensor_name``: it becomes a plain parameter/buffer again, holding
    the parametrized value (``leave_parametrized=True``) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with hookgrad.no_grad():
                _set_in_place(original, getattr(module, tensor_name))
    elif leave_parametrized:
        value = getattr(module, tensor_name)
        original = Parameter(value) if value.requires_grad else value
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in "
                         "terms of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The class ``module`` had before its first parametrization."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Register ``from_module``'s parametrizations (all, or those on ``tensor_name``) on ``to_module``,
    sharing the original tensors."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for parametrization in from_module.parametrizations[name]:
            register_parametrization(to_module, name, parametrization)
        source = from_module.parametrizations[name]
        if hasattr(source, "original"):
            to_module.parametrizations[name].original = source.original
        else:
            i = 0
            while hasattr(source, f"original{i}"):
                setattr(to_module.parametrizations[name], f"original{i}", getattr(source, f"original{i}"))
                i += 1
    return to_module
