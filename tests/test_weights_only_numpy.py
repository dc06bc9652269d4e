"""``torch.load(weights_only=True)`` refuses NumPy arrays and scalars until the user allows what torch's
unpickler meets for them, one refusal at a time in torch's order (``_reconstruct`` or ``scalar``,
``ndarray``, ``dtype``, the dtype's class), in a checkpoint written by torch and in one written by
hookgrad alike."""
from __future__ import annotations

import pickle
import re

import numpy as np
import pytest

from difftest import differential

STEPS = [np._core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype("float64")),
         np._core.multiarray.scalar, type(np.dtype("float32"))]


def _refusals(T, path):
    """What each load says as the allowlist grows one global at a time."""
    said = []
    for n in range(len(STEPS) + 1):
        try:
            with T.serialization.safe_globals(STEPS[:n]):
                loaded = T.load(path)
            said.append(("loaded", sorted(loaded), loaded["a"].tolist(), float(loaded["s"])))
        except pickle.UnpicklingError as error:
            message = str(error)
            named = re.search(r"GLOBAL (\S+) was not|but got (<class '[^']+'>)", message)
            said.append(("refused", named.group(1) or named.group(2)))
    return said


@pytest.mark.parametrize("writer", ["torch", "T"])
@differential
def test_numpy_inside_needs_allowlisting(T, writer, tmp_path):
    import torch
    path = str(tmp_path / "np.pt")
    (torch if writer == "torch" else T).save({"a": np.ones(2), "s": np.float32(3)}, path)
    return _refusals(T, path), sorted(T.serialization.get_unsafe_globals_in_checkpoint(path))


@differential
def test_weights_only_false_loads_numpy(T, tmp_path):
    path = str(tmp_path / "np.pt")
    T.save({"a": np.arange(3.0)}, path)
    return T.load(path, weights_only=False)["a"]
