"""``torch.distributed.autograd``: hookgrad has no distributed autograd (it goes with RPC, which it
lacks too). As in a torch built without it, ``is_available()`` answers False; entering a ``context``
raises RuntimeError."""
from __future__ import annotations

__all__ = ["context", "is_available"]


def is_available() -> bool:
    return False


class context:  # noqa: N801 - torch's name
    """A distributed autograd context: unavailable in hookgrad."""

    def __enter__(self) -> int:
        raise RuntimeError("torch.distributed.autograd is not available: hookgrad has no RPC framework")

    def __exit__(self, *exc_info) -> None:
        return None
