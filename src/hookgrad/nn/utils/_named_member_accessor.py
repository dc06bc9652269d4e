"""``torch.nn.utils._named_member_accessor``: read, set, swap and delete a module's tensors and
submodules by dotted path (``"block.conv.weight"``); functorch's ``make_functional`` and stateless
calls are built on it. Setting a registered parameter's slot to a plain tensor keeps it in
``_parameters`` (as torch does: the module then holds a non-Parameter there until it is swapped back)."""
from __future__ import annotations

from collections.abc import Iterable

from ... import _tensor

_MISSING = object()  # swap_tensor's "no such attribute" marker


def _is_tensor(value) -> bool:
    return isinstance(value, _tensor.Tensor)


def _check_leaf_name(name: str, what: str = "tensor") -> None:
    if "." in name:
        raise KeyError(f'{what} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{what} name can\'t be empty string ""')


def _check_module(module) -> None:
    from ..modules.module import Module
    if not isinstance(module, Module):
        raise TypeError(f"{module} is not an instance of torch.nn.Module")


def set_tensor(module, name: str, tensor) -> None:
    """Put ``tensor`` (or None) at the attribute ``name`` of ``module``, in its parameter or buffer slot
    when ``name`` is one."""
    _check_module(module)
    if not _is_tensor(tensor) and tensor is not None:
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    _check_leaf_name(name)
    if name in module._parameters:
        module._parameters[name] = tensor
    elif name in module._buffers:
        module._buffers[name] = tensor
    else:
        setattr(module, name, tensor)


def swap_tensor(module, name: str, tensor, allow_missing: bool = False):
    """``set_tensor`` returning what was there; ``_MISSING`` as the new value deletes the attribute."""
    _check_module(module)
    if tensor is not _MISSING and not _is_tensor(tensor) and tensor is not None:
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    _check_leaf_name(name)
    for store in (module._parameters, module._buffers):
        if name in store:
            previous = store[name]
            if tensor is _MISSING:
                del store[name]
            else:
                store[name] = tensor
            return previous
    if hasattr(module, name):
        previous = getattr(module, name)
    elif allow_missing:
        previous = _MISSING
    else:
        raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
    if previous is not _MISSING and not _is_tensor(previous) and previous is not None:
        raise TypeError(f"attribute `{name}`: {previous} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return previous


def swap_submodule(module, name: str, submodule):
    """Replace the registered child ``name`` of ``module``; returns the one it held."""
    from ..modules.module import Module
    _check_module(module)
    if not isinstance(submodule, Module):
        raise TypeError(f"{submodule} is not an instance of torch.nn.Module")
    _check_leaf_name(name, "submodule")
    if name not in module._modules:
        raise KeyError(f"submodule {name} does not exist")
    previous = module._modules[name]
    if not isinstance(previous, Module):
        raise TypeError(f"{name} attribute is not an instance of torch.nn.Module")
    module._modules[name] = submodule
    return previous


def _same_length(names, values):
    names = names if isinstance(names, (list, tuple)) else list(names)
    values = values if isinstance(values, (list, tuple)) else list(values)
    if len(names) != len(values):
        raise AssertionError(f"names and values must have the same length, got {len(names)} names and "
                             f"{len(values)} values")
    return names, values


class NamedMemberAccessor:
    """Access to the tensors and submodules of ``module`` by dotted path; submodule look-ups are
    remembered (a path's module is found once)."""

    def __init__(self, module) -> None:
        self.module = module
        self.memo: dict = {}

    def get_submodule(self, name: str):
        from ..modules.module import Module
        if not name:
            return self.module
        if name not in self.memo:
            prefix, _, attr = name.rpartition(".")
            owner = self.get_submodule(prefix)
            try:
                found = getattr(owner, attr)
            except AttributeError as exc:
                raise AttributeError(f"{owner._get_name()} has no attribute `{attr}`") from exc
            if not isinstance(found, Module):
                raise TypeError(f"submodule `{name}`: {found} is not an instance of torch.nn.Module")
            self.memo[name] = found
        return self.memo[name]

    def _owner(self, path: str):
        prefix, _, attr = path.rpartition(".")
        return self.get_submodule(prefix), attr

    def swap_submodule(self, path: str, value):
        owner, attr = self._owner(path)
        return swap_submodule(owner, attr, value)

    def get_tensor(self, name: str):
        owner, attr = self._owner(name)
        try:
            found = getattr(owner, attr)
        except AttributeError as exc:
            raise AttributeError(f"{owner._get_name()} has no attribute `{name}`") from exc
        if not _is_tensor(found) and found is not None:
            raise TypeError(f"{found} is not an instance of torch.Tensor")
        return found

    def set_tensor(self, name: str, value) -> None:
        owner, attr = self._owner(name)
        set_tensor(owner, attr, value)

    def del_tensor(self, name: str) -> None:
        owner, attr = self._owner(name)
        try:
            delattr(owner, attr)
        except AttributeError as exc:
            raise AttributeError(f"{owner._get_name()} has no attribute `{name}`") from exc

    def swap_tensor(self, name: str, value, allow_missing: bool = False):
        owner, attr = self._owner(name)
        return swap_tensor(owner, attr, value, allow_missing=allow_missing)

    def get_tensors(self, names: Iterable[str]) -> list:
        return [self.get_tensor(name) for name in names]

    def set_tensors(self, names: Iterable[str], values: Iterable) -> None:
        for name, value in zip(*_same_length(names, values)):
            self.set_tensor(name, value)

    def set_tensors_dict(self, named_tensors: dict) -> None:
        for name, value in named_tensors.items():
            self.set_tensor(name, value)

    def del_tensors(self, names: Iterable[str]) -> None:
        for name in names:
            self.del_tensor(name)

    def swap_tensors(self, names: Iterable[str], values: Iterable, allow_missing: bool = False) -> list:
        return [self.swap_tensor(name, value, allow_missing=allow_missing)
                for name, value in zip(*_same_length(names, values))]

    def swap_tensors_dict(self, named_tensors: dict, allow_missing: bool = False):
        """Swap in every entry; returns (the previous tensors by name, the names not found)."""
        previous, missing = {}, []
        try:
            for name, value in named_tensors.items():
                found = self.swap_tensor(name, value, allow_missing=True)
                if found is _MISSING:
                    missing.append(name)
                previous[name] = found
        except Exception:
            for name, value in previous.items():  # put back what was swapped before the failure
                self.swap_tensor(name, value, allow_missing=True)
            raise
        if missing and not allow_missing:
            for name, value in previous.items():
                self.swap_tensor(name, value, allow_missing=True)
            raise RuntimeError(f"Missing key(s): {', '.join(map(repr, missing))}.")
        return previous, missing

    def check_keys(self, keys: Iterable[str]):
        """(missing, unexpected) names compared with the module's parameters and buffers, each sorted."""
        keys = set(keys)
        valid = {name for name, _ in self.named_tensors(remove_duplicate=False)}
        return sorted(valid - keys), sorted(keys - valid)

    def named_parameters(self, remove_duplicate: bool = True):
        yield from self.module.named_parameters(remove_duplicate=remove_duplicate)

    def named_buffers(self, remove_duplicate: bool = True):
        yield from self.module.named_buffers(remove_duplicate=remove_duplicate)

    def named_tensors(self, remove_duplicate: bool = True):
        yield from self.module.named_parameters(remove_duplicate=remove_duplicate)
        yield from self.module.named_buffers(remove_duplicate=remove_duplicate)

    def named_modules(self, remove_duplicate: bool = True):
        yield from self.module.named_modules(remove_duplicate=remove_duplicate)
