"""torchviz's graph of a small model's backward pass: node labels and edges, with attributes and saved tensors."""
import sys

import torch
from torch import nn
from torchviz import make_dot

from _common import data, dot_labels_and_edges, emit, fill

model = fill(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double())
x = data(5, 3).requires_grad_()
y = (model(x) ** 2).sum()


def graph(dot):
    """Nodes as their labels and edges as label pairs (torchviz names nodes by id(), which differ)."""
    return dot_labels_and_edges(dot, r'^(\S+) \[label=(.*?)\s*(fillcolor=\S+)?\]$', str.strip)


conv = fill(nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(3, 1)).double())
z = conv(data(2, 2, 4, 4)).sigmoid().mean()

if sys.argv[1:] == ["attrs"]:
    # parameter names on the leaves, grad_fn attributes and saved tensors, and a CNN's graph
    results = {}
    for key, out, net in (("mlp", y, model), ("cnn", z, conv)):
        labels, edges = graph(make_dot(out, params=dict(net.named_parameters()), show_attrs=True, show_saved=True))
        results[key] = {"labels": labels, "edges": edges, "plain": graph(make_dot(out))}
    emit(results)
else:
    labels, edges = graph(make_dot(y))
    emit({"mlp": {"labels": labels, "edges": edges}})
