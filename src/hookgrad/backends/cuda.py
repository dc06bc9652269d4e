"""torch.backends.cuda: not built here; ``matmul`` carries the precision flags scripts set."""
from __future__ import annotations

__all__ = ["is_built", "matmul"]


def is_built() -> bool:
    return False


class _MatmulFlags:
    """``torch.backends.cuda.matmul``: reduced-precision switches for CUDA matmuls (no effect
    on CPU; kept so that setting them works)."""

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    def __setattr__(self, name, value):
        if name not in ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                        "allow_bf16_reduced_precision_reduction"):
            raise AttributeError("Unknown attribute " + name)
        object.__setattr__(self, name, value)


matmul = _MatmulFlags()
