"""Moving channels into space and back: PixelShuffle and PixelUnshuffle."""
from __future__ import annotations

from ._one_option import _OneOptionLayer

__all__ = ["PixelShuffle", "PixelUnshuffle"]


class PixelShuffle(_OneOptionLayer):
    __constants__ = ["upscale_factor"]
    _function = "pixel_shuffle"

    def __init__(self, upscale_factor: int) -> None:
        super().__init__(upscale_factor)


class PixelUnshuffle(_OneOptionLayer):
    __constants__ = ["downscale_factor"]
    _function = "pixel_unshuffle"

    def __init__(self, downscale_factor: int) -> None:
        super().__init__(downscale_factor)
