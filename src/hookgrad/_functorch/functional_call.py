"""``torch._functorch.functional_call``: functional_call and stack_module_state (hookgrad.func's)."""
from ..func import functional_call, stack_module_state

__all__ = ["functional_call", "stack_module_state"]
