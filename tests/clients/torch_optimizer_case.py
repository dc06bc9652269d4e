"""torch-optimizer's optimizers training a small float64
model a few steps each: parameters, state dicts after the steps, a reload into a fresh optimizer, the
Lookahead wrapper, and AdaHessian's Hutchinson curvature (backward with create_graph)."""
import torch
from torch import nn
import torch_optimizer as optim

from _common import data, emit, fill, state_summary

# NovoGrad keeps a 0-d state made as torch.zeros([]) (the default dtype); in float32 it would take
# torch's sqrt, which (MKL's vector math) is not always correctly rounded, into the float64 steps
torch.set_default_dtype(torch.float64)

x, y = data(8, 4), data(8, 2, seed=2)


def make_model():
    return fill(nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2)).double())


def loss_of(model):
    return nn.functional.mse_loss(model(x), y)


SETTINGS = {
    "A2GradExp": {}, "A2GradInc": {}, "A2GradUni": {}, "AccSGD": {"lr": 0.01}, "AdaBelief": {"lr": 0.01},
    "AdaBound": {"lr": 0.01}, "AdaMod": {"lr": 0.01}, "Adafactor": {"lr": 0.01}, "AdamP": {"lr": 0.01},
    "AggMo": {"lr": 0.01}, "Apollo": {"lr": 0.01}, "DiffGrad": {"lr": 0.01}, "Lamb": {"lr": 0.01},
    "LARS": {"lr": 0.01}, "MADGRAD": {"lr": 0.01}, "NovoGrad": {"lr": 0.01}, "PID": {"lr": 0.01},
    "QHAdam": {"lr": 0.01}, "QHM": {"lr": 0.01}, "SGDP": {"lr": 0.01},
    "SGDW": {"lr": 0.01, "momentum": 0.9}, "SWATS": {"lr": 0.01}, "Shampoo": {"lr": 0.01}, "Yogi": {"lr": 0.01},
}
# (RAdam and pytorch-ranger's Ranger, RangerQH, RangerVA step in float32 whatever the parameters' dtype:
# their values carry torch's float32 sqrt, which MKL's vector math does not always round correctly)

results = {}
for name, settings in SETTINGS.items():
    model = make_model()
    optimizer = getattr(optim, name)(model.parameters(), **settings)
    losses = []
    for _ in range(4):
        optimizer.zero_grad()
        loss = loss_of(model)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    reloaded = getattr(optim, name)(make_model().parameters(), **settings)
    reloaded.load_state_dict(optimizer.state_dict())
    results[name] = {"losses": losses, "params": list(model.parameters()), "state": state_summary(optimizer),
                     "reloaded": state_summary(reloaded)}

# optimizers that take a closure, and the by-name lookup
model = make_model()
optimizer = optim.get("yogi")(model.parameters(), lr=0.05)
closure_losses = []
for _ in range(3):
    def closure():
        optimizer.zero_grad()
        loss = loss_of(model)
        loss.backward()
        return loss
    closure_losses.append(optimizer.step(closure).item())
results["closure"] = {"losses": closure_losses, "params": list(model.parameters())}

model = make_model()
optimizer = optim.Lookahead(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5), k=3, alpha=0.5)
for _ in range(7):
    optimizer.zero_grad()
    loss_of(model).backward()
    optimizer.step()
results["lookahead"] = {"params": list(model.parameters())}  # (its state_dict fails on torch 2.13)

torch.manual_seed(0)  # AdaHessian draws Rademacher vectors
model = make_model()
optimizer = optim.Adahessian(model.parameters(), lr=0.1, hessian_power=0.5)
for _ in range(3):
    optimizer.zero_grad()
    loss_of(model).backward(create_graph=True)
    optimizer.step()
results["adahessian"] = {"params": list(model.parameters()), "state": state_summary(optimizer)}
emit(results)
