"""RemovableHandle, the object every ``register_*`` call returns, and its relatives.

A handle remembers which registry (a dict keyed by hook id) it was put in, by weak reference,
so that holding a handle never keeps a module or tensor alive. Ids come from one counter shared
by every kind of hook, which makes them usable as a global registration order.

This is the bottom layer: it imports nothing of hookgrad. ``BackwardHook`` (the module
backward-hook machinery) lives beside its only user, in ``hookgrad.nn.modules._backward_hook``;
it is also reachable here, where torch has it, and loads on first access.
"""
from __future__ import annotations

import os
import sys
import warnings
import weakref
from collections import OrderedDict
from typing import Any

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks", "BackwardHook"]


class RemovableHandle:
    """Removes one hook from its registry (and from any companion registries) on ``remove()``.

    ``extra_dict`` is a dict or a list of dicts that are keyed by the same id and must forget it
    together with ``hooks_dict`` (for example the set of hooks registered with ``with_kwargs``).
    Also a context manager: the hook is removed when the ``with`` block ends.
    """

    id: int
    next_id: int = 0

    def __init__(self, hooks_dict: Any, *, extra_dict: Any = None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if extra_dict is None:  # the usual case
            self.extra_dict_ref: tuple = ()
        elif isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)
        else:
            self.extra_dict_ref = ()

    def remove(self) -> None:
        """Unregister the hook. Calling it again, or after the owner is gone, does nothing."""
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            registry = ref()
            if registry is not None:
                registry.pop(self.id, None)

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref))

    def __setstate__(self, state) -> None:
        # A dead registry is replaced by a fresh empty one so that remove() stays harmless.
        self.hooks_dict_ref = weakref.ref(state[0] if state[0] is not None else OrderedDict())
        self.id = state[1]
        # Ids must stay unique after unpickling a handle made in another process.
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        extras = state[2] if len(state) > 2 and state[2] is not None else ()
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras if d is not None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.remove()

    def __repr__(self) -> str:
        alive = self.hooks_dict_ref() is not None and self.id in self.hooks_dict_ref()
        return f"<RemovableHandle id={self.id} {'active' if alive else 'removed'}>"


# Where each hook was registered, for ``hookgrad.hooks.inventory``: handle id -> (a weak reference
# to the registry, the code object and line of the site (None, 0 when unknown), prepend). Handle ids are unique, so one flat
# dict serves every registry; the weak reference tells a live registry from a dead one, or from
# another registry that reuses the id (an unpickled handle). Only the public ``register_*`` calls
# note a site; hooks the machinery registers per call do not.
_registration_sites: dict = {}
# entries of dead registries and removed hooks are swept out when the dict outgrows this size
_SWEEP_AT_LEAST = 1024
_sweep_at = [_SWEEP_AT_LEAST]


# hookgrad's own programs register hooks as a user's script does: their lines are the sites
_PROGRAMS = frozenset(("hookgrad.demo", "hookgrad._bench", "hookgrad._bench_ddp"))


def _in_hookgrad(module_name: str) -> bool:
    return module_name.startswith("hookgrad") and (len(module_name) == 8 or module_name[8] == ".") \
        and module_name not in _PROGRAMS


# the code objects of hookgrad's own functions met in the frame walk (a module's name is looked at once)
_hookgrad_code: set = set()
# and of the callers' functions outside it: a caller met before is found without a walk
_outside_code: set = set()


# explain() (hookgrad.hooks) watches registrations while it runs: fn(registry, handle_id, holder)
_registration_watchers: list = []


def _caller_outside(frame):
    """The first frame from ``frame`` up that is not hookgrad's own code (None past the top)."""
    while frame is not None:
        code = frame.f_code
        if code not in _hookgrad_code:
            if code in _outside_code or not _in_hookgrad(frame.f_globals.get("__name__") or ""):
                if len(_outside_code) < 4096:  # a bounded cache of the callers' code objects
                    _outside_code.add(code)
                return frame
            _hookgrad_code.add(code)
        frame = frame.f_back
    return None


def _sweep_sites() -> None:
    """Forget the sites of hooks that were removed or whose registry is gone."""
    for handle_id, entry in list(_registration_sites.items()):
        registry = entry[0]()
        if registry is None or handle_id not in registry:
            del _registration_sites[handle_id]
    _sweep_at[0] = max(_SWEEP_AT_LEAST, 2 * len(_registration_sites))


def note_registration(registry: Any, handle_id: int, prepend: bool = False, holder: Any = None) -> None:
    """Remember where the hook ``registry[handle_id]`` was registered: the first frame outside
    hookgrad above the ``register_*`` call (kept as (code object, line), formatted when read), and
    whether with ``prepend``. ``holder``: the tensor or node whose registry it is (told to the
    registration watchers)."""
    if _registration_watchers:
        for watcher in tuple(_registration_watchers):
            watcher(registry, handle_id, holder)
    # the usual case, a user's function that registered hooks before: no walk
    frame = sys._getframe(2)
    if frame.f_code not in _outside_code:
        frame = _caller_outside(frame)
    if frame is None:
        _registration_sites[handle_id] = (weakref.ref(registry), None, 0, prepend)
    else:
        _registration_sites[handle_id] = (weakref.ref(registry), frame.f_code, frame.f_lineno, prepend)
    if len(_registration_sites) > _sweep_at[0]:
        _sweep_sites()


def registration_of(registry: Any, handle_id: int) -> "tuple[str | None, bool]":
    """(site, prepend) noted for ``registry[handle_id]``; (None, False) when none was noted."""
    entry = _registration_sites.get(handle_id)
    if entry is None or entry[0]() is not registry:
        return None, False
    _ref, code, line, prepend = entry
    return (None if code is None else f"{os.path.basename(code.co_filename)}:{line}"), prepend


def unserializable_hook(fn):
    """Mark ``fn`` as a hook that is knowingly lost on serialization (silences the warning)."""
    fn.__torch_unserializable__ = True
    return fn


def warn_if_has_hooks(tensor) -> None:
    """Warn for each tensor hook that serialization will drop."""
    hooks = getattr(tensor, "_backward_hooks", None)
    for hook in (hooks or {}).values():
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(
                f"backward hook {hook!r} on tensor will not be serialized. If this is expected, "
                "decorate the function with @hookgrad.utils.hooks.unserializable_hook to "
                "suppress this warning",
                stacklevel=2,
            )


def __getattr__(name: str):
    # BackwardHook belongs to a layer far above this one: it loads only when asked for.
    if name == "BackwardHook":
        from ..nn.modules._backward_hook import BackwardHook
        return BackwardHook
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
