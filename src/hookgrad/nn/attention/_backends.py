"""Which scaled-dot-product-attention kernels are enabled (``torch.nn.attention.sdpa_kernel`` sets
them). hookgrad computes attention one way, but the selection still decides, as on torch's CPU
build, whether a call is allowed: the math kernel takes every input; the CPU flash kernel takes
4-D inputs without dropout whose query, key and value share their head size; the other kernels
exist only on GPUs."""
from __future__ import annotations

# SDPBackend values: MATH=0, FLASH_ATTENTION=1, EFFICIENT_ATTENTION=2, CUDNN_ATTENTION=3, OVERRIDEABLE=4
MATH, FLASH = 0, 1
DEFAULT_PRIORITY = (3, 1, 2, 0, 4)  # torch's default order (cuDNN, flash, efficient, math, overrideable)

enabled: set = set(DEFAULT_PRIORITY)
priority: list = list(DEFAULT_PRIORITY)


def require_cpu_kernel(query, key, value, dropout_p: float) -> None:
    """Raise torch's RuntimeError when no enabled kernel can run this call on the CPU."""
    if MATH in enabled:
        return
    if FLASH not in enabled:
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is likely due to "
                           "turning off both the math kernel and the fused kernels.")
    shapes = [tuple(t.shape) for t in (query, key, value)]
    if any(len(s) != 4 for s in shapes) or dropout_p > 0.0 or len({s[-1] for s in shapes}) != 1:
        raise RuntimeError("No available kernel.  Aborting execution.")
