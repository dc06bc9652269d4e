"""``torch._functorch.python_key``: make_fx, as torch.fx.experimental.proxy_tensor has it."""
from ..fx.experimental.proxy_tensor import make_fx

__all__ = ["make_fx"]
