"""Clients built on torch.fx: BackPACK's module converter (use_converter=True, which traces, rewrites
the graph and rebuilds GraphModules) on a residual model, and thop's fx_profile."""
import torch
from torch import nn
from backpack import backpack, extend
from backpack.extensions import BatchGrad, DiagGGNExact
from thop.fx_profile import fx_profile

from _common import data, emit, fill


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4, 4)
        self.act = nn.ReLU()
        self.l2 = nn.Linear(4, 3)

    def forward(self, x):
        return self.l2(self.act(self.l1(x)) + x)


model = extend(fill(Residual().double()), use_converter=True)
loss_fn = extend(nn.MSELoss())
with backpack(BatchGrad(), DiagGGNExact()):
    loss_fn(model(data(5, 4)), data(5, 3, seed=2)).backward()
emit({"converted": {name: {"grad_batch": p.grad_batch, "diag_ggn_exact": p.diag_ggn_exact}
                    for name, p in model.named_parameters()},
      "fx_profile_flops": float(fx_profile(fill(Residual().double()), data(2, 4), verbose=False))})
