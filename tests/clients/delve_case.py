"""Delve layer saturation: forward hooks on every Linear and Conv2d layer accumulate the covariance of
the layer outputs over a float64 training loop; saturation, intrinsic dimension, trace and determinant
statistics per epoch, written to its CSV writer."""
import os
import tempfile

import torch
from torch import nn
from delve import SaturationTracker

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)
model = fill(nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 16, 6), nn.Tanh(),
                           nn.Linear(6, 2)), scale=0.4)
x, y = data(16, 2, 6, 6), data(16, 2, seed=2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
results = {}


def number(text):
    try:
        return float(text)
    except ValueError:
        return text


with tempfile.TemporaryDirectory() as folder:
    tracker = SaturationTracker(os.path.join(folder, "run"), save_to="csv", modules=model, device="cpu",
                                stats=["lsat", "idim", "trc", "dtrc", "det"], include_conv=True, verbose=False)
    for epoch in range(3):
        model.train()
        for batch in range(4):
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x[batch * 4:(batch + 1) * 4]), y[batch * 4:(batch + 1) * 4])
            loss.backward()
            optimizer.step()
        tracker.add_scalar("train-loss", loss.item())
        tracker.add_saturations()
    tracker.close()
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and name.endswith(".csv"):
            with open(path) as f:
                results[name] = [[number(field) for field in line.strip().split(";")] for line in f]
results["hooks"] = [len(m._forward_hooks) for m in model.modules()]
emit(results)
