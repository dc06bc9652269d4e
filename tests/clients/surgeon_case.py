"""Surgeon (surgeon-pytorch): Inspect records layer outputs through forward hooks removed after each call;
Extract re-wires a torch.fx graph to new inputs and outputs (node names from its renaming tracer); values
and gradients through the extracted graph."""
import torch
from torch import nn
from surgeon_pytorch import Extract, Inspect, get_layers, get_nodes

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.norm = nn.BatchNorm2d(3)

    def forward(self, x):
        return torch.relu(self.norm(self.conv(x))) + x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(2, 3, 3)
        self.block = Block()
        self.pool = nn.AdaptiveAvgPool2d(2)
        self.head = nn.Linear(12, 4)

    def forward(self, x):
        h = self.block(torch.tanh(self.stem(x)))
        return self.head(torch.flatten(self.pool(h), 1)).softmax(dim=-1)


model = fill(Net(), scale=0.4).eval()
x = data(2, 2, 7, 7)
results = {"layers": get_layers(model), "nodes": get_nodes(model)}

inspected = Inspect(model, layer="block.conv")
out, conv_out = inspected(x)
results["inspect_single"] = [out, conv_out]
out, outs = Inspect(model, layer=["stem", "block.norm", "head"])(x)
results["inspect_list"] = [out, outs]
outs = Inspect(model, layer={"block": "feature", "pool": "pooled"}, keep_output=False)(x)
results["inspect_dict"] = outs
results["hooks_after"] = [len(m._forward_hooks) for m in model.modules()]

extracted = Extract(model, node_out="block.add")
results["extract_out"] = extracted(x)
both = Extract(model, node_out=("block.relu", "head"))
results["extract_two"] = list(both(x))
middle = Extract(model, node_in="tanh", node_out="head")
feature = data(2, 3, 5, 5, seed=3).requires_grad_()
y = middle(feature)
y.sum().backward()
results["extract_in_out"] = [y, feature.grad]
# the graphs after dead-code elimination (unused modules and functions erased, the new placeholder renamed)
results["graphs"] = [[[node.op, node.name, node.target if isinstance(node.target, str) else node.target.__name__]
                      for node in module.graph.nodes] for module in (extracted, both, middle)]
results["summary"] = {k: str(v) for k, v in extracted.summary.items()} if hasattr(extracted, "summary") else None

emit(results)
