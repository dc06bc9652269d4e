"""PyTorch Geometric's pure-Python layers on a small float64 graph: GCN, GraphSAGE, GAT (attention weights
returned), GIN and edge-conditioned convolutions by scatter message passing, global pooling over a batch of
graphs, a two-layer GCN trained a few steps; MessagePassing's own propagate/message hooks and torch forward
hooks recording what flows; utilities (self loops, degrees, to_dense_adj, subgraph, dropout_edge seeded);
GNNExplainer's learned edge and feature masks (set on the layers, applied inside message passing)."""
import warnings

import torch
from torch import nn
from torch_geometric.data import Batch, Data
from torch_geometric.explain import Explainer, GNNExplainer
from torch_geometric.nn import (GATConv, GCNConv, GINConv, NNConv, SAGEConv, global_add_pool, global_max_pool,
                                global_mean_pool)
from torch_geometric.utils import add_self_loops, degree, dropout_edge, subgraph, to_dense_adj, to_undirected

from _common import data, emit, fill

warnings.simplefilter("ignore")
torch.set_default_dtype(torch.float64)
edge_index = to_undirected(torch.tensor([[0, 1, 2, 3, 4, 0, 2], [1, 2, 3, 4, 5, 3, 5]]))
x, edge_attr = data(6, 3), data(edge_index.shape[1], 2, seed=2)
results = {"edge_index": edge_index.tolist()}

layers = {
    "gcn": lambda: GCNConv(3, 4),
    "gcn_plain": lambda: GCNConv(3, 4, add_self_loops=False, normalize=False),
    "sage": lambda: SAGEConv(3, 4),
    "sage_max": lambda: SAGEConv(3, 4, aggr="max"),
    "gat": lambda: GATConv(3, 2, heads=2),
    "gin": lambda: GINConv(nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 4)), train_eps=True),
    "nnconv": lambda: NNConv(3, 4, nn.Sequential(nn.Linear(2, 12)), aggr="mean"),
}
for name, make in layers.items():
    layer = fill(make(), scale=0.4)
    events = []
    layer.register_propagate_forward_pre_hook(lambda m, inputs: events.append(("propagate_pre", sorted(inputs[2]))))
    layer.register_message_forward_hook(lambda m, inputs, out: events.append(("message", tuple(out.shape))))
    layer.register_forward_hook(lambda m, inputs, out: events.append(("forward", type(out).__name__)))
    inputs = x.clone().requires_grad_()
    if name == "gat":
        out, (edges, attention) = layer(inputs, edge_index, return_attention_weights=True)
        extra = {"attention": attention, "attention_edges": edges.tolist()}
    else:
        out = layer(inputs, edge_index, edge_attr) if name == "nnconv" else layer(inputs, edge_index)
        extra = {}
    out.pow(2).sum().backward()
    results[name] = {"out": out, "input_grad": inputs.grad, "events": events,
                     "grads": [p.grad for p in layer.parameters()], **extra}

# a batch of graphs pooled; a GCN classifier trained
graphs = [Data(x=data(4, 3, seed=s), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]])) for s in (3, 4, 5)]
batch = Batch.from_data_list(graphs)
results["pooled"] = {"mean": global_mean_pool(batch.x, batch.batch), "add": global_add_pool(batch.x, batch.batch),
                     "max": global_max_pool(batch.x, batch.batch), "ptr": batch.ptr.tolist()}


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = GCNConv(3, 8), GCNConv(8, 2)

    def forward(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


labels = torch.tensor([0, 1, 0, 1, 1, 0])
model = fill(GCN(), scale=0.4)
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
losses = []
for _ in range(5):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x, edge_index), labels)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
results["training"] = {"losses": losses, "weights": [p.detach() for p in model.parameters()]}

# utilities
torch.manual_seed(0)
kept, mask = dropout_edge(edge_index, p=0.4)
results["utils"] = {"self_loops": add_self_loops(edge_index)[0].tolist(),
                    "degree": degree(edge_index[0], 6), "dense": to_dense_adj(edge_index),
                    "subgraph": subgraph(torch.tensor([0, 2, 3]), edge_index, relabel_nodes=True)[0].tolist(),
                    "dropout_edge": kept.tolist(), "dropout_mask": mask.tolist()}

# GNNExplainer: edge and feature masks learned through the layers' explain hooks
torch.manual_seed(0)
explainer = Explainer(model=model, algorithm=GNNExplainer(epochs=20, lr=0.05), explanation_type="model",
                      node_mask_type="attributes", edge_mask_type="object",
                      model_config=dict(mode="multiclass_classification", task_level="node", return_type="raw"))
explanation = explainer(x, edge_index, index=2)
results["explanation"] = {"node_mask": explanation.node_mask, "edge_mask": explanation.edge_mask}
emit(results)
