"""``hookgrad.hooks``: hook powers PyTorch does not have, all opt-in.

With none of this used, every hook behaves exactly as PyTorch's. What is here:

- the backward pass's lifecycle: :func:`register_backward_start_hook`,
  :func:`register_backward_end_hook` and :func:`call_at_backward_end` (the public form of the
  engine callback that data-parallel training relies on).
"""
from __future__ import annotations

from ._lifecycle import (BackwardPassInfo, call_at_backward_end, register_backward_end_hook,
                         register_backward_start_hook)

__all__ = ["BackwardPassInfo", "register_backward_start_hook", "register_backward_end_hook",
           "call_at_backward_end"]

from ._inventory import inventory, remove
from ._records import HookRecord

__all__ += ["HookRecord", "inventory", "remove"]

from ._explain import ExplainReport, explain

__all__ += ["ExplainReport", "explain"]

from ._context import HookContext, context  # noqa: E402 - module post-backward hooks, context, op hooks
from ._ops import OpName, register_op_hook  # noqa: E402
from ._post_backward import register_module_post_backward_hook  # noqa: E402

__all__ += ["register_module_post_backward_hook", "HookContext", "context", "OpName", "register_op_hook"]
