"""Opacus per-sample gradients (GradSampleModule) and one DP-SGD step with the noise off."""
import torch
from torch import nn
from opacus import GradSampleModule
from opacus.optimizers import DPOptimizer

from _common import data, emit, fill


def per_sample(model, x, y, loss_fn):
    gsm = GradSampleModule(fill(model.double()))
    loss_fn(gsm(x), y).backward()
    return {name: p.grad_sample for name, p in gsm.named_parameters()}


linear = nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 3))
conv = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 25, 2))
results = {
    "linear": per_sample(linear, data(6, 5), torch.tensor([0, 2, 1, 1, 0, 2]), nn.CrossEntropyLoss()),
    "conv": per_sample(conv, data(4, 2, 5, 5), data(4, 2, seed=4), nn.MSELoss(reduction="sum")),
}

model = GradSampleModule(fill(nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 2)).double(), seed=7))
optimizer = DPOptimizer(torch.optim.SGD(model.parameters(), lr=0.5), noise_multiplier=0.0, max_grad_norm=0.3,
                        expected_batch_size=6)
optimizer.zero_grad()
nn.functional.mse_loss(model(data(6, 5, seed=8)), data(6, 2, seed=9)).backward()
optimizer.step()
results["dp_step"] = {name: p for name, p in model.named_parameters()}
emit(results)
