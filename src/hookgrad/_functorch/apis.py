"""``torch._functorch.apis``: vmap, grad and grad_and_value (hookgrad.func's)."""
from ..func import grad, grad_and_value, vmap

__all__ = ["vmap", "grad", "grad_and_value"]
