"""Every registered hook, listed and removed in bulk: :func:`inventory` and :func:`remove`.

Hooks are read from the registries where the framework keeps them (a module's ``_forward_hooks``,
a tensor's ``_backward_hooks``, ...). Those registries have the same names in torch, so torch
modules, optimizers and tensors are accepted as well; only where each hook was registered
(``registered_at``) and the ``prepend`` flag are hookgrad's own notes, unknown for torch objects.
"""
from __future__ import annotations

import types
from typing import Any, Callable, Iterable, Optional

from ..autograd import engine as _engine
from ..autograd import graph as _graph
from ..autograd.graph import Node
from ..nn.modules import module as _module
from ..nn.modules._live_backward_hook import live_hook_ids
from ..optim import optimizer as _optimizer
from ..utils.hooks import registration_of
from ._records import HookRecord

__all__ = ["inventory", "remove", "KINDS"]

# registry attribute -> kind, for modules and optimizers (the backward hooks of a module are
# full or legacy by the module's ``_is_full_backward_hook``)
_MODULE_REGISTRIES = (
    ("_forward_pre_hooks", "forward_pre_hook"),
    ("_forward_hooks", "forward_hook"),
    ("_backward_pre_hooks", "full_backward_pre_hook"),
    ("_backward_hooks", None),
    ("_state_dict_pre_hooks", "state_dict_pre_hook"),
    ("_state_dict_hooks", "state_dict_hook"),
    ("_load_state_dict_pre_hooks", "load_state_dict_pre_hook"),
    ("_load_state_dict_post_hooks", "load_state_dict_post_hook"),
)
_OPTIMIZER_REGISTRIES = (
    ("_optimizer_step_pre_hooks", "optimizer_step_pre_hook"),
    ("_optimizer_step_post_hooks", "optimizer_step_post_hook"),
    ("_optimizer_state_dict_pre_hooks", "optimizer_state_dict_pre_hook"),
    ("_optimizer_state_dict_post_hooks", "optimizer_state_dict_post_hook"),
    ("_optimizer_load_state_dict_pre_hooks", "optimizer_load_state_dict_pre_hook"),
    ("_optimizer_load_state_dict_post_hooks", "optimizer_load_state_dict_post_hook"),
)
# global registries of a framework's module file -> kind
_GLOBAL_MODULE_REGISTRIES = (
    ("_global_forward_pre_hooks", "forward_pre_hook"),
    ("_global_forward_hooks", "forward_hook"),
    ("_global_backward_pre_hooks", "full_backward_pre_hook"),
    ("_global_backward_hooks", None),
    ("_global_parameter_registration_hooks", "parameter_registration_hook"),
    ("_global_buffer_registration_hooks", "buffer_registration_hook"),
    ("_global_module_registration_hooks", "module_registration_hook"),
)
_GLOBAL_OPTIMIZER_REGISTRIES = (
    ("_global_optimizer_pre_hooks", "optimizer_step_pre_hook"),
    ("_global_optimizer_post_hooks", "optimizer_step_post_hook"),
)

KINDS = frozenset({kind for _, kind in (*_MODULE_REGISTRIES, *_OPTIMIZER_REGISTRIES, *_GLOBAL_MODULE_REGISTRIES,
                                        *_GLOBAL_OPTIMIZER_REGISTRIES) if kind is not None}
                  | {"full_backward_hook", "backward_hook", "tensor_hook", "post_accumulate_grad_hook",
                     "node_hook", "node_pre_hook", "backward_start_hook", "backward_end_hook",
                     "op_forward_hook", "op_backward_hook"})


def _unwrapped(hook):
    # load_state_dict pre-hooks are kept wrapped (with the module) in both frameworks
    if type(hook).__name__ == "_WrappedHook" and hasattr(hook, "hook"):
        return hook.hook
    return hook


class _Collector:
    """Builds the records, each registry entry once."""

    def __init__(self) -> None:
        self.records: list = []
        self._seen: set = set()

    def add_registry(self, registry, kind, scope, owner, holder, with_kwargs=(), always_called=(),
                     op_registry=False) -> None:
        if not registry:
            return
        for handle_id, hook in list(registry.items()):
            if op_registry:
                # an op hook is kept with the op names it is limited to; hookgrad's own users of
                # op hooks (forward AD, FLOP counting, dispatch modes) are not the program's hooks
                hook, names = hook
                if getattr(hook, "__module__", None) and hook.__module__.partition(".")[0] == "hookgrad":
                    continue
                owner = None if names is None else ",".join(sorted(names))
            key = (id(registry), handle_id)
            if key in self._seen or getattr(hook, "_explain_own", False):
                continue  # explain()'s own watchers are not the user's hooks
            self._seen.add(key)
            site, prepend = registration_of(registry, handle_id)
            flags = set()
            if prepend:
                flags.add("prepend")
            if with_kwargs and handle_id in with_kwargs:
                flags.add("with_kwargs")
            if always_called and handle_id in always_called:
                flags.add("always_call")
            if (kind in ("full_backward_hook", "full_backward_pre_hook") and handle_id in live_hook_ids
                    and _is_hookgrad(holder)):  # torch's handle ids are counted apart
                flags.add("live")
            self.records.append(HookRecord(kind=kind, scope=scope, owner=owner, fn=_unwrapped(hook),
                                           handle_id=handle_id, flags=frozenset(flags), registered_at=site,
                                           registry=registry, holder=holder))

    # -- per kind of object ------------------------------------------------------------------------
    def module_tree(self, root) -> None:
        for name, mod in root.named_modules():
            self.module(mod, name)
        for name, param in root.named_parameters():
            self.tensor(param, name, with_node=False)
        for name, buf in root.named_buffers():
            self.tensor(buf, name, with_node=False)

    def module(self, mod, name) -> None:
        d = mod.__dict__
        for attr, kind in _MODULE_REGISTRIES:
            registry = d.get(attr)
            if kind is None:
                kind = "backward_hook" if d.get("_is_full_backward_hook") is False else "full_backward_hook"
            extras = {}
            if attr == "_forward_pre_hooks":
                extras["with_kwargs"] = d.get("_forward_pre_hooks_with_kwargs", ())
            elif attr == "_forward_hooks":
                extras["with_kwargs"] = d.get("_forward_hooks_with_kwargs", ())
                extras["always_called"] = d.get("_forward_hooks_always_called", ())
            self.add_registry(registry, kind, "module", name, mod, **extras)

    def optimizer(self, opt) -> None:
        d = opt.__dict__
        for attr, kind in _OPTIMIZER_REGISTRIES:
            self.add_registry(d.get(attr), kind, "optimizer", type(opt).__name__, opt)

    def tensor(self, t, name, with_node=True) -> None:
        self.add_registry(getattr(t, "_backward_hooks", None), "tensor_hook", "tensor", name, t)
        self.add_registry(getattr(t, "_post_accumulate_grad_hooks", None), "post_accumulate_grad_hook",
                          "tensor", name, t)
        if with_node:
            fn = t.grad_fn
            if isinstance(fn, Node):  # torch's nodes keep their hooks out of Python's reach
                self.node(fn)

    def node(self, node) -> None:
        owner = node.name()
        self.add_registry(node._pre_hooks, "node_pre_hook", "node", owner, node)
        self.add_registry(node._post_hooks, "node_hook", "node", owner, node)

    def framework_globals(self, module_file, optimizer_file, engine=None) -> None:
        g = module_file.__dict__
        for attr, kind in _GLOBAL_MODULE_REGISTRIES:
            if kind is None:
                kind = "backward_hook" if g.get("_global_is_full_backward_hook") is False else "full_backward_hook"
            extras = {}
            if attr == "_global_forward_hooks":
                extras = {"with_kwargs": g.get("_global_forward_hooks_with_kwargs", ()),
                          "always_called": g.get("_global_forward_hooks_always_called", ())}
            self.add_registry(g.get(attr), kind, "global", None, module_file, **extras)
        for attr, kind in _GLOBAL_OPTIMIZER_REGISTRIES:
            self.add_registry(optimizer_file.__dict__.get(attr), kind, "global", None, optimizer_file)
        if engine is not None:
            self.add_registry(engine._backward_start_hooks, "backward_start_hook", "global", None, engine)
            self.add_registry(engine._backward_end_hooks, "backward_end_hook", "global", None, engine)
            self.add_registry(_graph._op_forward_hooks, "op_forward_hook", "global", None, _graph,
                              op_registry=True)
            self.add_registry(_graph._op_backward_hooks, "op_backward_hook", "global", None, _graph,
                              op_registry=True)


def _is_hookgrad(holder) -> bool:
    return isinstance(holder, _module.Module) or holder is _module


def _is_module(obj) -> bool:
    return hasattr(obj, "named_modules") and "_forward_hooks" in getattr(obj, "__dict__", {})


def _is_optimizer(obj) -> bool:
    return "_optimizer_step_pre_hooks" in getattr(obj, "__dict__", {})


def _is_tensor(obj) -> bool:
    if type(obj).__module__.partition(".")[0] in ("hookgrad", "torch"):
        return hasattr(obj, "register_hook") and hasattr(obj, "grad_fn") and hasattr(obj, "_backward_hooks")
    return False


def _collect(objs) -> list:
    collector = _Collector()
    if not objs:
        collector.framework_globals(_module, _optimizer, _engine)
        return collector.records
    for obj in objs:
        if _is_module(obj):
            collector.module_tree(obj)
        elif _is_optimizer(obj):
            collector.optimizer(obj)
        elif isinstance(obj, Node):
            collector.node(obj)
        elif _is_tensor(obj):
            collector.tensor(obj, None)
        elif isinstance(obj, types.ModuleType) and obj.__name__ == "hookgrad":
            collector.framework_globals(_module, _optimizer, _engine)
        elif isinstance(obj, types.ModuleType) and obj.__name__ == "torch":
            import torch.nn.modules.module as torch_module
            import torch.optim.optimizer as torch_optimizer
            collector.framework_globals(torch_module, torch_optimizer)
        else:
            raise TypeError("hookgrad.hooks.inventory() expects modules, optimizers, tensors, autograd nodes or "
                            f"a framework package (hookgrad or torch), but got {type(obj).__name__} ({obj!r:.80})")
    return collector.records


def inventory(*objs: Any) -> list:
    """The hooks registered on ``objs``, as :class:`HookRecord` s in registration order per registry.

    A module gives its hooks, its submodules' (``owner`` is the qualified name, ``""`` for the
    module itself) and the tensor and post-accumulate-grad hooks of its parameters and buffers
    (``owner`` is the parameter's name); an optimizer its step and state-dict hooks; a tensor
    its hooks and its ``grad_fn``'s node hooks; an autograd node its hooks. With no argument (or
    the ``hookgrad`` package): the global hooks (module, optimizer, backward start/end, op hooks); with the
    ``torch`` package: torch's global module and optimizer hooks. torch modules, optimizers and
    tensors work too (their ``registered_at`` is None).
    """
    return _collect(objs)


def _kind_filter(kind) -> Optional[frozenset]:
    if kind is None:
        return None
    kinds = frozenset((kind,)) if isinstance(kind, str) else frozenset(kind)
    unknown = sorted(k for k in kinds if k not in KINDS)
    if unknown:
        raise ValueError(f"hookgrad.hooks.remove(): unknown hook kind(s) {unknown}; the kinds are "
                         f"{sorted(KINDS)}")
    return kinds


def _companions(record: HookRecord) -> Iterable:
    """The id-keyed dicts that must forget a hook together with its registry."""
    holder = record.holder
    d = getattr(holder, "__dict__", {})
    if record.kind == "forward_pre_hook":
        yield d.get("_forward_pre_hooks_with_kwargs")
    elif record.kind == "forward_hook":
        if record.scope == "global":
            yield d.get("_global_forward_hooks_with_kwargs")
            yield d.get("_global_forward_hooks_always_called")
        else:
            yield d.get("_forward_hooks_with_kwargs")
            yield d.get("_forward_hooks_always_called")
    if "live" in record.flags:
        yield live_hook_ids


def remove(*objs: Any, kind=None, where: Optional[Callable[[HookRecord], bool]] = None) -> int:
    """Remove the hooks :func:`inventory` lists for ``objs``, or only those of ``kind`` (a kind
    name or several) and/or those for which ``where(record)`` is true; returns how many."""
    kinds = _kind_filter(kind)
    if where is not None and not callable(where):
        raise TypeError(f"hookgrad.hooks.remove(): where must be a callable taking a HookRecord, but got "
                        f"{type(where).__name__}")
    chosen = [r for r in _collect(objs) if (kinds is None or r.kind in kinds) and (where is None or where(r))]
    removed = 0
    for record in chosen:
        if record.registry.pop(record.handle_id, None) is not None:
            removed += 1
        for companion in _companions(record):
            if companion is not None:
                companion.pop(record.handle_id, None)
        if record.kind == "op_forward_hook":
            from ._ops import _forward_hooks_changed  # op functions run their own code again
            _forward_hooks_changed()
    return removed
