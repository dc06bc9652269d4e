"""SparseAdam: Adam for sparse gradients (embedding tables).

hookgrad has no sparse tensors, so every gradient it produces is dense, and PyTorch's SparseAdam
refuses dense gradients with a RuntimeError at ``step``; this class does the same. It exists so
that code constructing a SparseAdam (for instance over parameters that never receive a gradient)
runs, and so that the error is PyTorch's rather than an AttributeError.
"""
from __future__ import annotations

from .optimizer import Optimizer, _no_grad_step, _tensor_cls

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """SparseAdam with PyTorch's options and defaults (``lr=1e-3, betas=(0.9, 0.999), eps=1e-8``)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, _tensor_cls()) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)
        complex_params = [[gi, pi] for gi, group in enumerate(self.param_groups)
                          for pi, p in enumerate(group["params"]) if p.dtype.is_complex]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support "
                             "complex parameters")

    @_no_grad_step
    def step(self, closure=None):
        """Raise for any dense gradient, as PyTorch does; parameters without a gradient are skipped."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider "
                                       "Adam instead")
