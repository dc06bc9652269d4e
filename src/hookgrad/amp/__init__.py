"""torch.amp for hookgrad: ``autocast`` (see autocast_mode for what runs and what refuses) and
``GradScaler`` (loss scaling with inf/NaN step skipping, fully working on the CPU)."""
from .autocast_mode import autocast, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "is_autocast_available"]
from .autocast_mode import custom_bwd, custom_fwd  # noqa: E402
__all__ += ["custom_bwd", "custom_fwd"]
