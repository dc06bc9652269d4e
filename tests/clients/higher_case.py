"""higher: monkeypatched functional copies of modules (fmodel(x, params=...)) and differentiable
optimizers (SGD with momentum, Adam) unrolled over inner steps, the meta-gradient taken through the
whole loop back to a learnable input scale and the initial weights; copy_initial_weights, track_higher_grads
off, override of per-group learning rates, an RNN and batch-norm inside the patched model."""
import warnings

import higher
import torch
from torch import nn

from _common import data, emit, fill

warnings.simplefilter("ignore")
torch.set_default_dtype(torch.float64)
x, y = data(8, 4), data(8, 2, seed=2)
results = {}


def net():
    return fill(nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Tanh(), nn.Linear(6, 2)), scale=0.4)


for name, make, kwargs in [("sgd", lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), {}),
                           ("adam", lambda p: torch.optim.Adam(p, lr=0.05), {}),
                           ("sgd_no_copy", lambda p: torch.optim.SGD(p, lr=0.1), {"copy_initial_weights": False}),
                           ("override", lambda p: torch.optim.SGD(p, lr=0.1), {"override": {"lr": [0.3]}})]:
    model = net()
    scale = torch.tensor(1.2, requires_grad=True)
    inner_optimizer = make(model.parameters())
    override = kwargs.pop("override", None)
    with higher.innerloop_ctx(model, inner_optimizer, **kwargs) as (fmodel, diffopt):
        losses = []
        for step in range(3):
            loss = nn.functional.mse_loss(fmodel(x * scale), y)
            diffopt.step(loss, override=override) if override else diffopt.step(loss)
            losses.append(loss.item())
        outer = nn.functional.mse_loss(fmodel(x), y)
        outer.backward()
        results[name] = [losses, outer.item(), scale.grad, [p.grad for p in model.parameters()],
                         [p.detach() for p in fmodel.parameters()], len(list(fmodel.parameters(time=0))),
                         model[1].running_mean]

# explicit params: the patched model called with a given parameter list
model = net()
fmodel = higher.monkeypatch(model, copy_initial_weights=True, track_higher_grads=True)
params = [p.detach().clone().mul(0.5).requires_grad_() for p in model.parameters()]
out = fmodel(x, params=params)
out.pow(2).sum().backward()
results["explicit_params"] = [out, [p.grad for p in params]]

# no higher-order tracking: the inner steps are first order
model = net()
with higher.innerloop_ctx(model, torch.optim.SGD(model.parameters(), lr=0.1),
                          track_higher_grads=False) as (fmodel, diffopt):
    for _ in range(2):
        diffopt.step(nn.functional.mse_loss(fmodel(x), y))
    results["first_order"] = [p.detach() for p in fmodel.parameters()]


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(3, 4, batch_first=True)
        self.head = nn.Linear(4, 1)

    def forward(self, seq):
        out, _ = self.rnn(seq)
        return self.head(out[:, -1])


model = fill(Recurrent(), scale=0.3)
seq, target = data(5, 6, 3, seed=3), data(5, 1, seed=4)
with higher.innerloop_ctx(model, torch.optim.SGD(model.parameters(), lr=0.2)) as (fmodel, diffopt):
    for _ in range(2):
        diffopt.step(nn.functional.mse_loss(fmodel(seq), target))
    meta = nn.functional.mse_loss(fmodel(seq), target)
    meta.backward()
results["gru"] = [meta.item(), [p.grad for p in model.parameters()]]
emit(results)
