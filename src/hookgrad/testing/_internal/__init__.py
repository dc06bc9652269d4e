"""hookgrad's own versions of the helpers in ``torch.testing._internal`` that PyTorch's test files
import (``common_utils``, ``common_nn``, ``common_device_type``, ``common_cuda``, ``common_dtype``),
so that those files run unmodified under ``hookgrad run``. They describe a CPU-only build
without TorchDynamo."""
