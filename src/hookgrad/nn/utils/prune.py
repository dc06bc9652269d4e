"""``torch.nn.utils.prune``: zero out part of a parameter through a mask, kept up to date by a
forward pre-hook.

Pruning ``module.<name>`` moves the parameter to ``<name>_orig``, stores the mask as the buffer
``<name>_mask`` and makes ``<name>`` a plain attribute holding ``<name>_orig * <name>_mask``. The
pruning method itself is registered as a forward pre-hook (an object in
``module._forward_pre_hooks``, as in torch) that recomputes ``<name>`` before every forward, so
gradients reach ``<name>_orig`` through the mask. Pruning the same tensor again combines the
methods in a ``PruningContainer``, whose new mask only prunes what is still unpruned.
``remove`` makes the pruning permanent: ``<name>`` becomes a parameter again, holding the masked
values.
"""
from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import hookgrad

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """A way of computing a pruning mask; ``apply`` prunes a module's tensor with it."""

    _tensor_name: str

    def __call__(self, module, inputs):
        # the forward pre-hook: refresh the pruned tensor from the current original and mask
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The new mask for ``t``, given the mask already in place (``default_mask``)."""

    def apply_mask(self, module):
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with a new ``cls(*args, **kwargs)`` (combined with the pruning
        already there, if any); returns the method now hooked on the module."""
        method = _combined_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        importance_scores = _importance_scores(importance_scores, orig, f"parameter {name} of {module}")
        first_pruning = not isinstance(method, PruningContainer)
        if first_pruning:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = hookgrad.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first_pruning:  # leave the module as it was: the parameter back under its name
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times the mask this method computes for it (no module involved)."""
        importance_scores = _importance_scores(importance_scores, t, "tensor t")
        default_mask = default_mask if default_mask is not None else hookgrad.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module) -> None:
        """Make the pruning permanent: ``<name>`` becomes the parameter, holding the masked values."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _importance_scores(scores, like, what: str):
    """The scores that rank the entries of ``like``: ``scores`` when given (of ``like``'s shape), else ``like``."""
    if scores is None:
        return like
    if scores.shape != like.shape:
        raise AssertionError(f"importance_scores should have the same shape as {what}, got {scores.shape} vs "
                             f"{like.shape}")
    return scores


def _combined_method(cls, module, name, *args, **kwargs):
    """The new method, or the container holding the tensor's earlier pruning and the new one; the
    earlier pruning's hook is taken off the module (the returned method is hooked instead)."""
    earlier = [(key, hook) for key, hook in module._forward_pre_hooks.items()
               if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]
    if len(earlier) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                             "Use a PruningContainer.")
    for key, _ in earlier:
        del module._forward_pre_hooks[key]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if earlier:
        old = earlier[0][1]
        if isinstance(old, PruningContainer):
            old.add_pruning_method(method)
            method = old
        else:
            container = PruningContainer(old)
            container.add_pruning_method(method)
            method = container
    return method


class PruningContainer(BasePruningMethod):
    """Pruning methods applied one after the other to the same tensor: each new method computes its
    mask on the entries (or channels) that are still unpruned."""

    def __init__(self, *args) -> None:
        self._pruning_methods: tuple = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method) -> None:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            region = default_mask == 1  # the entries still unpruned
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute '
                                     "`dim` defined.")
            n_dims = t.dim()
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            # the channels along dim with some entry still unpruned
            alive = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            region = tuple(alive if d == dim else slice(None) for d in range(n_dims))
        elif kind == "global":
            region = tuple(slice(None) for _ in range(len(t.shape)))
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        with hookgrad.no_grad():
            partial = method.compute_mask(t[region], default_mask=default_mask[region])
            new_mask[region] = partial.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


def _entry_mask(default_mask, flat_indices):
    """``default_mask`` with the entries at ``flat_indices`` (of its flattened form) set to zero."""
    mask = default_mask.clone()
    if flat_indices.numel():
        with hookgrad.no_grad():
            mask.view(-1)[flat_indices] = 0
    return mask


class _UnstructuredByRank(BasePruningMethod):
    """Prunes the ``amount`` entries (a count, or a fraction of the tensor) that rank first by
    ``_scores(t)``: the largest when ``_largest``, else the smallest."""

    PRUNING_TYPE = "unstructured"
    _largest = True

    def __init__(self, amount) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        size = t.nelement()
        count = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(count, size)
        if count == 0:
            return default_mask.clone()
        scores = self._scores(t.detach()).reshape(-1)
        return _entry_mask(default_mask, hookgrad.topk(scores, k=count, largest=self._largest).indices)


class RandomUnstructured(_UnstructuredByRank):
    """Prunes ``amount`` entries (a count, or a fraction of the tensor) chosen at random."""

    @staticmethod
    def _scores(t):
        return hookgrad.rand_like(t)

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_UnstructuredByRank):
    """Prunes the ``amount`` entries of smallest absolute value (of the importance scores)."""

    _largest = False

    @staticmethod
    def _scores(t):
        return t.abs()

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _channel_mask(t, dim, kept):
    """A mask of ``t``'s shape: ones in the channels ``kept`` (indices or a bool mask) along ``dim``."""
    mask = hookgrad.zeros_like(t.detach())
    region = tuple(kept if d == dim % t.dim() else slice(None) for d in range(t.dim()))
    with hookgrad.no_grad():
        mask[region] = 1
    return mask


def _channels_to_prune(t, amount, dim) -> tuple:
    """A structured method's channel count along ``dim`` and how many of them ``amount`` prunes."""
    _validate_structured_pruning(t)
    _validate_pruning_dim(t, dim)
    channels = t.shape[dim]
    count = _compute_nparams_toprune(amount, channels)
    _validate_pruning_amount(count, channels)
    return channels, count


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` whole channels along ``dim``, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        channels, count = _channels_to_prune(t, self.amount, self.dim)
        if count == 0:
            return default_mask
        draws = hookgrad.rand(channels)
        threshold = hookgrad.kthvalue(draws, k=count).values
        mask = _channel_mask(t, self.dim, draws > threshold)
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels along ``dim`` of smallest L``n`` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1) -> None:
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        channels, count = _channels_to_prune(t, self.amount, self.dim)
        norm = _compute_norm(t.detach(), self.n, self.dim)
        kept = hookgrad.topk(norm, k=channels - count, largest=True).indices
        if count == 0:
            return default_mask
        mask = _channel_mask(t, self.dim, kept)
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is zero."""

    PRUNING_TYPE = "global"

    def __init__(self, mask) -> None:
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask shape "
                                 f"{self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Prune the ``(module, name)`` pairs together, as if their tensors were one vector: e.g. the
    smallest 20% of all weights of the model rather than 20% of each."""
    from .convert_parameters import parameters_to_vector
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    parameters = list(parameters)
    scores = parameters_to_vector([importance_scores.get((module, name), getattr(module, name))
                                   for module, name in parameters])
    default_mask = parameters_to_vector([getattr(module, name + "_mask", hookgrad.ones_like(getattr(module, name)))
                                         for module, name in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        count = param.numel()
        custom_from_mask(module, name, mask=final_mask[start:start + count].view_as(param))
        start += count


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent and take its hook off the module."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module) -> bool:
    """Whether ``module`` or any of its submodules carries a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, submodule in module.named_modules() for hook in submodule._forward_pre_hooks.values())


def _validate_pruning_amount_init(amount) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_pruning_amount(amount, tensor_size) -> None:
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _validate_structured_pruning(t) -> None:
    shape = t.shape
    if len(shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                         f"shape {shape} with {len(shape)} dims")


def _compute_nparams_toprune(amount, tensor_size):
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _validate_pruning_dim(t, dim) -> None:
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t, n, dim):
    dims = list(range(t.dim()))
    dims.remove(dims[dim])
    return hookgrad.norm(t, p=n, dim=dims)
