"""Which scaled-dot-product-attention kernels are enabled (``torch.nn.attention.sdpa_kernel`` sets
them). As on torch's CPU build, the fused CPU kernel runs where its gates pass and it is enabled,
else the math composition where that is enabled (``nn/_functional/attention.py``); the other
kernels exist only on GPUs."""
from __future__ import annotations

# SDPBackend values: MATH=0, FLASH_ATTENTION=1, EFFICIENT_ATTENTION=2, CUDNN_ATTENTION=3, OVERRIDEABLE=4
MATH, FLASH = 0, 1
DEFAULT_PRIORITY = (3, 1, 2, 0, 4)  # torch's default order (cuDNN, flash, efficient, math, overrideable)

enabled: set = set(DEFAULT_PRIORITY)
priority: list = list(DEFAULT_PRIORITY)

