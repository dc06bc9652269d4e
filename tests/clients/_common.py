"""Shared by the client scripts: deterministic float64 weights and JSON output of results.

Each script runs unchanged under real torch (``python script.py``) and under hookgrad
(``python -m hookgrad run script.py``) and prints one JSON object; tests/test_clients.py compares them.
"""
import json
import sys

import numpy as np
import torch


def fill(model, seed=0, scale=0.5):
    """Give every parameter the same NumPy-drawn values on either framework."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.standard_normal(tuple(p.shape)) * scale, dtype=torch.float64))
    return model


def data(*shape, seed=1):
    return torch.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=torch.float64)


def plain(value):
    """Tensors to nested lists, recursively; everything else must already be JSON."""
    if isinstance(value, torch.Tensor):
        return {"shape": list(value.shape), "values": value.detach().double().tolist()}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return value


def emit(results: dict) -> None:
    # the torchvision beside torch 2.13 does not import: no client run may depend on it
    # (a None entry is a script's own "not installed" marker, not an import)
    results = dict(results, torchvision_imported=sys.modules.get("torchvision") is not None)
    sys.stdout.write("\n")  # some clients print without a final newline; the results get a line of their own
    json.dump(plain(results), sys.stdout)
    sys.stdout.write("\n")
