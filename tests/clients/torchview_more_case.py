"""torchview's graphs of recurrent models (LSTM with packed and plain inputs, a GRU cell loop), nested
containers (ModuleList, ModuleDict, Sequential in Sequential) at several depths with and without nested
expansion, dict inputs and dict outputs, shared modules, hidden inner tensors and roll-up of recursion."""

import torch
from torch import nn
from torchview import draw_graph

from _common import data, dot_labels_and_edges, emit, fill


def graph(model, **kwargs):
    """Node labels and edges as label pairs (torchview names nodes by id(), which differ)."""
    dot = draw_graph(model, device="cpu", save_graph=False, **kwargs).visual_graph
    labels, edges = dot_labels_and_edges(dot)
    return {"labels": labels, "edges": edges}


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.lstm = nn.LSTM(4, 5, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(10, 2)

    def forward(self, tokens):
        out, (h, c) = self.lstm(self.emb(tokens))
        return self.head(out[:, -1]) + h.sum()


class CellLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(3, 4)
        self.out = nn.Linear(4, 1)

    def forward(self, x):
        h = torch.zeros(x.shape[0], 4)
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
        return self.out(h)


class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(4, 4), nn.ReLU()) for _ in range(2)])
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Sequential(nn.Linear(4, 3), nn.Sequential(
            nn.Tanh(), nn.Linear(3, 2)))})
        self.shared = nn.Linear(4, 4)

    def forward(self, batch):
        x = batch["x"] + batch["y"]
        for block in self.blocks:
            x = self.shared(block(x))
        x = self.shared(x)
        return {"a": self.heads["a"](x), "b": self.heads["b"](x), "sum": x.sum(dim=1)}


torch.manual_seed(0)
recurrent = fill(Recurrent())
tokens = torch.tensor([[1, 4, 2], [3, 3, 9]])
nested = fill(Nested(), seed=2)
batch = {"x": data(2, 4).float(), "y": data(2, 4, seed=3).float()}
results = {
    "lstm": graph(recurrent, input_data=[tokens], expand_nested=True),
    "lstm_depth1": graph(recurrent, input_data=[tokens], depth=1),
    "cell_loop": graph(fill(CellLoop(), seed=4), input_size=(2, 3, 3), expand_nested=True),
    "nested_rolled": graph(nested, input_data=[batch], roll=True, expand_nested=True),
    "nested_dict": graph(nested, input_data=[batch], expand_nested=True),
    "nested_depth2": graph(nested, input_data=[batch], depth=2, hide_inner_tensors=False),
    "nested_module_only": graph(nested, input_data=[batch], depth=3, hide_module_functions=False,
                                expand_nested=True),
}
emit(results)
