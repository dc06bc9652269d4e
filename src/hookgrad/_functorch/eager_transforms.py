"""``torch._functorch.eager_transforms``: the autograd-based transforms (hookgrad.func's)."""
from ..func import functionalize, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp

__all__ = ["vjp", "jvp", "jacrev", "jacfwd", "hessian", "grad", "grad_and_value", "functionalize", "linearize"]
