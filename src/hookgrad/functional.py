"""``torch.functional``: the module where torch defines a few of its top-level functions; they are the
same functions as ``torch.X`` here."""
from __future__ import annotations

import importlib

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
           "cartesian_prod", "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu", "norm", "meshgrid",
           "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot", "unique", "unique_consecutive",
           "unravel_index"]


def __getattr__(name):
    # looked up on the package at first use, so that a function hookgrad lacks (stft needs complex
    # tensors) raises the same "hookgrad has no torch.X" error as torch.X does
    if name in __all__:
        return getattr(importlib.import_module("hookgrad"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
