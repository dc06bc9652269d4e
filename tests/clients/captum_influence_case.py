"""Captum's influence functions: TracInCP (per-example gradients over saved checkpoints, through module hooks or one backward per example) and TracInCPFast
(last-layer gradients from a forward hook), self-influence and top-k proponents."""
import os
import tempfile

import torch
from torch import nn
from torch.utils.data import TensorDataset
from captum.influence import TracInCP, TracInCPFast, TracInCPFastRandProj

from _common import data, emit, fill

model = fill(nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)).double(), scale=0.6)
train = TensorDataset(data(8, 4), torch.tensor([0, 1, 2, 0, 1, 2, 1, 0]))
test_x, test_y = data(3, 4, seed=2), torch.tensor([2, 0, 1])
folder = tempfile.mkdtemp()
checkpoints = []
optimizer = torch.optim.SGD(model.parameters(), lr=0.3)
for step in range(3):
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(train.tensors[0]), train.tensors[1]).backward()
    optimizer.step()
    path = os.path.join(folder, f"checkpoint{step}.pt")
    torch.save(model.state_dict(), path)
    checkpoints.append(path)


def load(model, path):
    model.load_state_dict(torch.load(path))
    return 0.3


loss = nn.CrossEntropyLoss(reduction="sum")
tracin = TracInCP(model, train, checkpoints, checkpoints_load_func=load, loss_fn=loss, batch_size=3,
                  sample_wise_grads_per_batch=True)
plain = TracInCP(model, train, checkpoints, checkpoints_load_func=load, loss_fn=nn.CrossEntropyLoss(reduction="none"),
                 batch_size=4)
fast = TracInCPFast(model, model[2], train, checkpoints, checkpoints_load_func=load, loss_fn=loss, batch_size=3)
results = {
    "influence": tracin.influence((test_x, test_y)),
    "self_influence": tracin.self_influence(),
    "per_example_loop": plain.influence((test_x, test_y)),
    "top_k": list(tracin.influence((test_x, test_y), k=3, proponents=True)),
    "fast_influence": fast.influence((test_x, test_y)),
    "fast_self": fast.self_influence(),
    "fast_opponents": list(fast.influence((test_x, test_y), k=2, proponents=False)),
}
for path in checkpoints:
    os.remove(path)
os.rmdir(folder)
emit(results)
