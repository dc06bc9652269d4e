"""Cockpit (cockpit-for-pytorch) tracking a few SGD steps of a float64 classifier with its "full"
configuration: BackPACK per-sample gradients and curvature through module hooks (gradient norms and
histograms, the norm, inner-product and orthogonality tests, TIC, the Hessian trace), Hessian-vector
products through a double backward (its largest Hessian eigenvalue), the alpha and distance quantities."""
import warnings

import numpy as np
import torch
from backpack import extend
from cockpit import Cockpit, quantities
from cockpit.utils import schedules
from cockpit.utils.configuration import configuration
from torch import nn

from _common import data, emit, fill

warnings.filterwarnings("ignore")
torch.set_default_dtype(torch.float64)


def plain(value):
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return value.item()
    if isinstance(value, torch.Tensor):
        return value.tolist()
    return value


def train(model, tracked, steps, batch=8, seed=0):
    model = extend(model)
    loss_fn = extend(nn.CrossEntropyLoss(reduction="mean"))
    individual_loss_fn = nn.CrossEntropyLoss(reduction="none")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    cockpit = Cockpit(model.parameters(), quantities=tracked)
    torch.manual_seed(seed)   # the power iteration of HessMaxEV starts from torch.rand_like
    inputs = data(steps * batch, *model.input_shape, seed=seed + 1)
    labels = torch.tensor(np.random.default_rng(seed + 2).integers(0, 3, steps * batch))
    for step in range(steps):
        x, y = inputs[step * batch:(step + 1) * batch], labels[step * batch:(step + 1) * batch]
        optimizer.zero_grad()
        outputs = model(x)
        loss = loss_fn(outputs, y)
        losses = individual_loss_fn(outputs, y)
        with cockpit(step, info={"batch_size": batch, "individual_losses": losses, "loss": loss,
                                 "optimizer": optimizer}):
            loss.backward(create_graph=cockpit.create_graph(step))
        optimizer.step()
    return plain(cockpit.get_output()), [p.tolist() for p in model.parameters()]


def mlp():
    model = fill(nn.Sequential(nn.Linear(4, 6), nn.Sigmoid(), nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3)), seed=4)
    model.input_shape = (4,)
    return model


def cnn():
    model = fill(nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                               nn.Linear(8, 3)), seed=5)
    model.input_shape = (1, 4, 4)
    return model


results = {}
results["full_mlp"] = train(mlp(), configuration("full"), steps=3)
every_other = schedules.linear(interval=2, offset=1)
results["cnn_chosen"] = train(cnn(), [quantities.GradNorm(every_other), quantities.TICTrace(every_other),
                                      quantities.HessTrace(every_other), quantities.MeanGSNR(every_other),
                                      quantities.Parameters(every_other), quantities.GradHist1d(every_other),
                                      quantities.CABS(every_other), quantities.EarlyStopping(every_other)],
                              steps=4, seed=7)
emit(results)
