"""Pieces the iterable-style and map-style pipes share: batching options and shuffle settings."""
from __future__ import annotations

import random

from .datapipe import DataChunk


class _BatchOptions:
    """``batch``'s arguments, checked as torch checks them."""

    def __init__(self, datapipe, batch_size, drop_last=False, wrapper_class=DataChunk):
        if batch_size <= 0:
            raise AssertionError("Batch size is required to be larger than 0!")
        self.datapipe, self.batch_size, self.drop_last = datapipe, batch_size, drop_last
        self.wrapper_class = wrapper_class


class _ShuffleSettings:
    """``set_shuffle`` and ``set_seed`` of a shuffler: a seed set is used by the next ``reset`` only."""

    def _init_shuffle_settings(self) -> None:
        self._enabled = True
        self._seed = None
        self._rng = random.Random()

    def set_shuffle(self, shuffle=True):
        self._enabled = shuffle
        return self

    def set_seed(self, seed: int):
        self._seed = seed
        return self
