"""torch.backends.mkldnn: oneDNN, which hookgrad does not use. ``enabled`` is a settable flag
(without effect here), as scripts toggle it."""
from __future__ import annotations

from . import _flag_module, _temporarily

__all__ = ["is_available", "flags"]


def is_available() -> bool:
    return False


def flags(enabled=False, deterministic=False):
    """Context manager setting ``enabled``/``deterministic`` for a block."""
    return _temporarily(_this(), enabled=enabled, deterministic=deterministic)


def _this():
    import sys
    return sys.modules[__name__]


_flag_module(__name__, {"enabled": (True, "set_enabled_mkldnn"),
                        "deterministic": (False, "set_deterministic_mkldnn")})
