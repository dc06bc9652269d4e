"""What ``hookgrad.hooks`` reports about one registered hook: a :class:`HookRecord`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

__all__ = ["HookRecord"]


@dataclass(frozen=True)
class HookRecord:
    """One registered hook.

    ``kind``: torch's name for the hook kind (``forward_hook``, ``full_backward_pre_hook``,
    ``tensor_hook``, ``node_pre_hook``, ``optimizer_step_post_hook``, ...); ``scope``: ``module``,
    ``global``, ``tensor``, ``node`` or ``optimizer``; ``owner``: the qualified name of the module
    (``encoder.0.fc1``) or parameter it hangs on, None for global hooks (for an op hook limited
    to some ops, their names, comma-separated); ``fn``: the hook;
    ``handle_id``: the id of the handle its ``register_*`` call returned; ``flags``: which of
    ``prepend``, ``with_kwargs``, ``always_call`` it was registered with; ``registered_at``:
    ``"file.py:LINE"`` of the user's ``register_*`` call, when known; ``reason``: why it did not
    fire (only in ``explain()``'s ``skipped`` list).
    """

    kind: str
    scope: str
    owner: Optional[str]
    fn: Callable
    handle_id: Optional[int]
    flags: frozenset = frozenset()
    registered_at: Optional[str] = None
    reason: Optional[str] = None
    # where the hook is kept (the registry dict and the object holding it), for removal
    registry: Any = field(default=None, repr=False, compare=False)
    holder: Any = field(default=None, repr=False, compare=False)
