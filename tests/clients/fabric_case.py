"""Lightning Fabric: setup of a float64 model, optimizer and dataloader, backward, clip_gradients
(norm and value), gradient accumulation with no_backward_sync, save/load of a state dict with a
Python object beside the tensors, and load_raw."""
import os
import tempfile
import warnings

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from lightning.fabric import Fabric

from _common import data, emit, fill

warnings.filterwarnings("ignore")

# "64-true" hands a model's outputs back in the default dtype: float64 keeps the loss in float64 (with float32
# outputs the gradients would be rounded through float32 on the way back)
torch.set_default_dtype(torch.float64)
results = {}
fabric = Fabric(accelerator="cpu", devices=1, precision="64-true")
fabric.seed_everything(7)
model = fill(nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 1)).double(), seed=4)
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
model, optimizer = fabric.setup(model, optimizer)
x = data(32, 5, seed=5)
y = x.sum(-1, keepdim=True).sin()
train = fabric.setup_dataloaders(DataLoader(TensorDataset(x, y), batch_size=8))
results["wrapped"] = [type(model).__name__, type(optimizer).__name__, type(model.module).__name__]
results["device"] = str(fabric.device)

norms, losses = [], []
for epoch in range(3):
    for i, (xb, yb) in enumerate(train):
        last = i % 2 == 1
        with fabric.no_backward_sync(model, enabled=not last):
            loss = nn.functional.mse_loss(model(xb), yb)
            fabric.backward(loss / 2)
        if last:
            if epoch == 1:
                fabric.clip_gradients(model, optimizer, clip_val=0.01)
            else:
                norms.append(fabric.clip_gradients(model, optimizer, max_norm=0.5))
            optimizer.step()
            optimizer.zero_grad()
        losses.append(loss.detach())
results["losses"] = losses
results["norms"] = norms
results["params"] = [p.detach().clone() for p in model.parameters()]

root = tempfile.mkdtemp()
path = os.path.join(root, "state.ckpt")
fabric.save(path, {"model": model, "optimizer": optimizer, "epoch": 3, "note": "fabric"})
fresh = fill(nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 1)).double(), seed=11)
fresh_opt = torch.optim.Adam(fresh.parameters(), lr=0.05)
fresh, fresh_opt = fabric.setup(fresh, fresh_opt)
state = {"model": fresh, "optimizer": fresh_opt}
remainder = fabric.load(path, state)
results["remainder"] = remainder
results["loaded_params"] = [p.detach().clone() for p in fresh.parameters()]
results["loaded_adam_step"] = [float(s["step"]) for s in fresh_opt.state_dict()["state"].values()]
results["loaded_exp_avg"] = [s["exp_avg"] for s in fresh_opt.state_dict()["state"].values()]
raw = fill(nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 1)).double(), seed=12)
fabric.save(os.path.join(root, "raw.pt"), model.state_dict())
fabric.load_raw(os.path.join(root, "raw.pt"), raw)
results["load_raw"] = [p.detach().clone() for p in raw.parameters()]
results["predictions"] = fresh(x[:4])
emit(results)
