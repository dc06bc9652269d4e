"""Shared by the client scripts: deterministic float64 weights and JSON output of results.

Each script runs unchanged under real torch (``python script.py``) and under hookgrad
(``python -m hookgrad run script.py``) and prints one JSON object; tests/test_clients.py compares them.
"""
import json
import re
import sys
import types

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


def state_summary(optimizer):
    """An optimizer's state dict as its tensors, its plain scalars and its groups' plain settings."""
    state = optimizer.state_dict()
    tensors = {f"{i}.{k}": v for i, s in state["state"].items() for k, v in sorted(s.items())
               if isinstance(v, torch.Tensor)}
    scalars = {f"{i}.{k}": v for i, s in state["state"].items() for k, v in sorted(s.items())
               if isinstance(v, (int, float, bool))}
    groups = [{k: v for k, v in g.items() if isinstance(v, (int, float, bool, str, list, tuple)) or v is None}
              for g in state["param_groups"]]
    return {"tensors": tensors, "scalars": scalars, "groups": groups}


def emit(results: dict) -> None:
    # the torchvision beside torch 2.13 does not import: no client run may depend on it
    # (a None entry is a script's own "not installed" marker, not an import)
    results = dict(results, torchvision_imported=sys.modules.get("torchvision") is not None)
    sys.stdout.write("\n")  # some clients print without a final newline; the results get a line of their own
    json.dump(plain(results), sys.stdout)
    sys.stdout.write("\n")


def dot_labels_and_edges(dot, node_pattern=r"^(\S+) \[label=(.*)\]$", tidy=lambda label: re.sub(r"\s+", " ", label)):
    """A graphviz graph's node labels and its edges as label pairs, both sorted (torchviz and torchview name
    nodes by id(), which differ between runs and frameworks). ``node_pattern`` finds a node's name and label
    in a line of the graph's body; ``tidy`` cleans the label."""
    labels, edges = {}, []
    for line in dot.body:
        line = line.strip()
        edge = re.match(r"^(\S+) -> (\S+)", line)
        if edge:
            edges.append(edge.groups())
            continue
        node = re.match(node_pattern, line, re.S)
        if node:
            labels[node.group(1)] = tidy(node.group(2))
    return sorted(labels.values()), sorted(f"{labels.get(a, a)} -> {labels.get(b, b)}" for a, b in edges)


_RESNET_STAND_IN = ("torchvision", "torchvision.models", "torchvision.models.resnet")


def stand_in_resnet_blocks():
    """zennit (also under quantus) imports torchvision's ResNet blocks only for its torchvision canonizers,
    which the cases do not use; the torchvision beside torch here does not import, so two plain classes
    stand in while the library imports (``drop_resnet_stand_in`` takes them away after)."""
    resnet = types.ModuleType("torchvision.models.resnet")
    resnet.Bottleneck = type("Bottleneck", (torch.nn.Module,), {})
    resnet.BasicBlock = type("BasicBlock", (torch.nn.Module,), {})
    models = types.ModuleType("torchvision.models")
    models.resnet = resnet
    package = types.ModuleType("torchvision")
    package.models = models
    sys.modules.update(zip(_RESNET_STAND_IN, (package, models, resnet)))


def drop_resnet_stand_in():
    for name in _RESNET_STAND_IN:
        del sys.modules[name]
