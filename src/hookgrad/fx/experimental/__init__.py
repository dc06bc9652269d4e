"""``torch.fx.experimental``: the piece libraries import (``proxy_tensor.get_proxy_mode``)."""
