"""``torch.version``: the torch API level hookgrad implements, and the builds it does not have."""
from .torch_version import TorchVersion

__all__ = ["__version__", "hookgrad_version", "debug", "cuda", "git_version", "hip", "rocm", "xpu"]

hookgrad_version = "0.1.0"
__version__ = TorchVersion(f"2.13.0+hookgrad.{hookgrad_version}")
debug = False
cuda = None
hip = None
rocm = None
xpu = None
git_version = "Unknown"
