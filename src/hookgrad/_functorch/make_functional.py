"""``torch._functorch.make_functional``: functorch's ``make_functional`` family. A functional model is a
copy of the module whose parameters (and buffers) were taken out; calling it with a tuple of tensors
puts those in their places for the one call. The tensors taken out (the copy's own parameters, so
unrelated to the original module's) are returned beside it."""
from __future__ import annotations

import copy

from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from ..nn.utils._named_member_accessor import NamedMemberAccessor

__all__ = ["FunctionalModule", "FunctionalModuleWithBuffers", "make_functional", "make_functional_with_buffers",
           "combine_state_for_ensemble", "extract_weights", "extract_buffers", "load_weights", "load_buffers",
           "load_state", "transpose_stack"]


def _placeholder_like(t):
    # torch leaves a meta-device tensor in the emptied slot; where hookgrad has no meta device, an
    # uninitialised CPU tensor of the same shape and dtype holds the place (it is never read)
    from .. import empty_like
    try:
        return empty_like(t, device="meta")
    except RuntimeError:
        return empty_like(t)


def _names_map(unique: tuple, every: tuple) -> dict:
    """First name of each distinct tensor -> all the names it is reachable under (tied weights)."""
    names_of = {id(t): (name, []) for name, t in unique}
    for name, t in every:
        if id(t) not in names_of:
            raise AssertionError(f"tensor for key '{name}' not found in tensor_to_mapping")
        names_of[id(t)][1].append(name)
    return dict(names_of.values())


def _extract(module, named_members, wrap):
    every = tuple(named_members(remove_duplicate=False))
    unique = tuple(named_members(remove_duplicate=True))
    names_map = _names_map(unique, every)
    accessor = NamedMemberAccessor(module)
    replacements = {}
    for name, t in every:
        if id(t) not in replacements:
            replacements[id(t)] = wrap(_placeholder_like(t))
        accessor.set_tensor(name, replacements[id(t)])
    names = tuple(name for name, _ in unique)
    tensors = tuple(t for _, t in unique)
    return tensors, names, names_map


def extract_weights(mod):
    """Take every parameter out of ``mod`` (in place): (the parameters, their names, names map)."""
    return _extract(mod, mod.named_parameters, Parameter)


def extract_buffers(mod):
    return _extract(mod, mod.named_buffers, lambda t: t)


def load_weights(mod, names, params, as_params: bool = False) -> None:
    """Put ``params`` back at ``names`` (as plain tensors unless ``as_params``)."""
    if as_params:
        params = [Parameter(p) for p in params]
    NamedMemberAccessor(mod).set_tensors(names, params)


def load_buffers(mod, names, buffers, as_params: bool = False) -> None:
    NamedMemberAccessor(mod).set_tensors(names, buffers)


def load_state(model, weights, weight_names, buffers=(), buffer_names=()):
    if len(weight_names) != len(weights):
        raise AssertionError(f"len(weight_names)={len(weight_names)} != len(weights)={len(weights)}")
    load_weights(model, weight_names, weights)
    if len(buffers) > 0:
        if len(buffer_names) != len(buffers):
            raise AssertionError(f"len(buffer_names)={len(buffer_names)} != len(buffers)={len(buffers)}")
        load_buffers(model, buffer_names, buffers)
    return model


def _swap_state(module, names_map: dict, tensors) -> list:
    """Put ``tensors`` (one per entry of ``names_map``, under all its names); returns what was there."""
    accessor = NamedMemberAccessor(module)
    previous = []
    for (_, names), t in zip(names_map.items(), tensors):
        for i, name in enumerate(names):
            if i == 0:
                previous.append(accessor.swap_tensor(name, t))
            else:
                accessor.set_tensor(name, t)
    return previous


class FunctionalModuleWithBuffers(Module):
    """What ``make_functional_with_buffers`` returns: called as ``fmodel(params, buffers, *args)``."""

    def __init__(self, stateless_model, param_names, buffer_names, param_names_map, buffer_names_map):
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = param_names
        self.buffer_names = buffer_names
        self.all_names_map = dict(param_names_map)
        self.all_names_map.update(buffer_names_map)

    @staticmethod
    def _create_from(model, disable_autograd_tracking: bool = False):
        model_copy = copy.deepcopy(model)
        params, param_names, param_names_map = extract_weights(model_copy)
        buffers, buffer_names, buffer_names_map = extract_buffers(model_copy)
        if disable_autograd_tracking:
            for param in params:
                param.requires_grad_(False)
        return (FunctionalModuleWithBuffers(model_copy, param_names, buffer_names, param_names_map,
                                            buffer_names_map), params, buffers)

    def forward(self, params, buffers, *args, **kwargs):
        previous = _swap_state(self.stateless_model, self.all_names_map, tuple(params) + tuple(buffers))
        try:
            return self.stateless_model(*args, **kwargs)
        finally:
            _swap_state(self.stateless_model, self.all_names_map, previous)


class FunctionalModule(Module):
    """What ``make_functional`` returns: called as ``fmodel(params, *args)``."""

    def __init__(self, stateless_model, param_names, names_map):
        super().__init__()
        self.stateless_model = stateless_model
        self.param_names = param_names
        self.names_map = names_map

    @staticmethod
    def _create_from(model, disable_autograd_tracking: bool = False):
        model_copy = copy.deepcopy(model)
        params, param_names, names_map = extract_weights(model_copy)
        if disable_autograd_tracking:
            for param in params:
                param.requires_grad_(False)
        return FunctionalModule(model_copy, param_names, names_map), params

    def forward(self, params, *args, **kwargs):
        previous = _swap_state(self.stateless_model, self.names_map, params)
        try:
            return self.stateless_model(*args, **kwargs)
        finally:
            _swap_state(self.stateless_model, self.names_map, previous)


def make_functional(model, disable_autograd_tracking: bool = False):
    """(func, params): ``func(params, *args)`` runs a parameter-free copy of ``model`` with ``params``."""
    if len(list(model.buffers())) > 0:
        raise RuntimeError("make_functional(model): `model` has buffers. Please use "
                           "make_functional_with_buffers(model) instead.")
    return FunctionalModule._create_from(model, disable_autograd_tracking=disable_autograd_tracking)


def make_functional_with_buffers(model, disable_autograd_tracking: bool = False):
    """(func, params, buffers): ``func(params, buffers, *args)``."""
    return FunctionalModuleWithBuffers._create_from(model, disable_autograd_tracking=disable_autograd_tracking)


def transpose_stack(tuple_of_tuple_of_tensors):
    """The i-th tensors of every tuple stacked (and detached): one tensor per position."""
    from .. import stack
    return tuple(stack(shards).detach() for shards in zip(*tuple_of_tuple_of_tensors))


def combine_state_for_ensemble(models):
    """(func, stacked params, stacked buffers) of models of one class, for vmap over the first dimension."""
    if len(models) == 0:
        raise RuntimeError("combine_state_for_ensemble: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to have the same training/eval mode.")
    if not all(type(m) is type(models[0]) for m in models):
        raise RuntimeError("combine_state_for_ensemble: Expected all models to be of the same class.")
    funcs, params, buffers = zip(*[make_functional_with_buffers(model) for model in models])
    return funcs[0], transpose_stack(params), transpose_stack(buffers)


