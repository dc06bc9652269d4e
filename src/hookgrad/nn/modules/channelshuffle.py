"""ChannelShuffle: interleave the channels of ``groups`` groups."""
from __future__ import annotations

from ._one_option import _OneOptionLayer

__all__ = ["ChannelShuffle"]


class ChannelShuffle(_OneOptionLayer):
    __constants__ = ["groups"]
    _function = "channel_shuffle"

    def __init__(self, groups: int) -> None:
        super().__init__(groups)
