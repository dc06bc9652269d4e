"""Small data sets bundled with hookgrad (see ``README.md`` in this folder for sources and licences).

Loaders return NumPy arrays, so they are usable with any framework and cost no import beyond NumPy.
"""
from __future__ import annotations

import gzip
import os

import numpy as np

__all__ = ["load_digits", "DIGITS_PATH"]

DIGITS_PATH = os.path.join(os.path.dirname(__file__), "digits.csv.gz")


def load_digits():
    """The UCI ML hand-written digits (test set): 1,797 images of 8x8 pixels with values 0..16.

    Returns ``(images, labels)``: ``images`` is a float32 array of shape (1797, 8, 8) holding the raw
    counts 0..16, ``labels`` an int64 array of shape (1797,) with the digit 0..9 of each image.
    """
    with gzip.open(DIGITS_PATH, "rt", encoding="ascii") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float32)
    if table.ndim != 2 or table.shape[1] != 65:
        raise ValueError(f"{DIGITS_PATH}: expected 65 comma-separated columns, found shape {table.shape}")
    images = table[:, :64].reshape(-1, 8, 8)
    labels = table[:, 64].astype(np.int64)
    return images, labels
