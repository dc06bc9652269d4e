"""BackPACK first- and second-order quantities on a linear and a convolutional float64 model."""
import sys

import torch
from torch import nn
from backpack import backpack, extend
from backpack.extensions import BatchGrad, BatchL2Grad, DiagGGNExact, SumGradSquared, Variance

from _common import data, emit, fill


def quantities(model, loss_fn, x, y):
    model = extend(fill(model.double()))
    loss_fn = extend(loss_fn)
    results = {}
    model.zero_grad()
    with backpack(BatchGrad(), BatchL2Grad(), SumGradSquared(), Variance()):
        loss_fn(model(x), y).backward()
    for name, p in model.named_parameters():
        results[name] = {"grad": p.grad, "grad_batch": p.grad_batch, "batch_l2": p.batch_l2,
                         "sum_grad_squared": p.sum_grad_squared, "variance": p.variance}
    model.zero_grad()
    with backpack(DiagGGNExact()):
        loss_fn(model(x), y).backward()
    for name, p in model.named_parameters():
        results[name]["diag_ggn_exact"] = p.diag_ggn_exact
    return results


linear = nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 3))
conv = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1, stride=2), nn.Sigmoid(), nn.Flatten(), nn.Linear(27, 2))
if sys.argv[1:] == ["cross-entropy"]:
    emit({"linear_ce": quantities(linear, nn.CrossEntropyLoss(), data(6, 5), torch.tensor([0, 2, 1, 1, 0, 2])),
          "conv_ce": quantities(conv, nn.CrossEntropyLoss(reduction="sum"), data(4, 2, 6, 6),
                                torch.tensor([1, 0, 0, 1]))})
else:
    emit({"linear_mse": quantities(linear, nn.MSELoss(), data(6, 5), data(6, 3, seed=2)),
          "conv_mse": quantities(conv, nn.MSELoss(reduction="sum"), data(4, 2, 6, 6), data(4, 2, seed=3))})
