"""torchview's graphs (node labels and edges) of a CNN, an MLP and a residual model with functional calls:
torchview records the forward pass through a Tensor subclass with ``__torch_function__``."""

from torch import nn
import torch
from torchview import draw_graph

from _common import dot_labels_and_edges, emit, fill


def graph(model, size):
    """Node labels and edges as label pairs (torchview names nodes by id(), which differ)."""
    dot = draw_graph(model, input_size=size, device="cpu", save_graph=False, expand_nested=True).visual_graph
    labels, edges = dot_labels_and_edges(dot)
    return {"labels": labels, "edges": edges}


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        h = torch.relu(self.a(x))
        return self.b(h) + x * 2


conv = fill(nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8, 3)))
mlp = fill(nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2), nn.Softmax(dim=1)))
emit({"conv": graph(conv, (2, 1, 4, 4)), "mlp": graph(mlp, (3, 4)), "residual": graph(fill(Residual()), (2, 4))})
