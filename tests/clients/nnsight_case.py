"""nnsight on plain torch modules (NNsight wrapper, no transformers model): a trace saves module
outputs and inputs, intervenes by writing into an output and by replacing it, patches activations from
one trace into another, reads gradients of a saved activation after a backward call inside the
trace, and leaves the model's own forward unchanged afterwards."""
import warnings

import torch
from nnsight import NNsight
from torch import nn

from _common import data, emit, fill

warnings.simplefilter("ignore")
torch.set_default_dtype(torch.float64)
net = fill(nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 2)), scale=0.5)
model = NNsight(net)
x, other = data(3, 4), data(3, 4, seed=5)
results = {"plain": net(x)}

with model.trace(x):
    hidden = model[1].output.save()
    layer_input = model[2].input.save()
    out = model.output.save()
results["saved"] = [hidden, layer_input, out]

with model.trace(x):
    model[1].output[:, 0] = 0.0
    zeroed = model.output.save()
results["zeroed"] = zeroed

with model.trace(x):
    model[3].output = model[3].output * 0.5 + 0.1
    replaced = model.output.save()
results["replaced"] = replaced

with model.trace(other):  # (plain NNsight models run one invocation per trace: two traces patch)
    donor = model[1].output.save()
with model.trace(x):
    model[1].output[:] = donor
    patched = model.output.save()
results["patched"] = [donor, patched]

with model.trace(x):
    activation = model[3].output.save()
    grad = model[3].output.grad.save()
    model.output.sum().backward()
results["gradient"] = [activation, grad]
results["after"] = net(x)
results["hooks"] = [len(m._forward_hooks) + len(m._forward_pre_hooks) for m in net.modules()]
emit(results)
