"""Captum attributions that differentiate several outputs at once (integrated gradients, conductance)."""
import torch
from torch import nn
from captum.attr import IntegratedGradients, LayerConductance

from _common import data, emit, fill

model = fill(nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3)).double()).eval()
x = data(3, 5)
ig, delta = IntegratedGradients(model).attribute(x, target=1, n_steps=8, return_convergence_delta=True)
emit({
    "integrated_gradients": ig, "delta": delta,
    "integrated_gradients_gl": IntegratedGradients(model).attribute(x, target=0, n_steps=6, method="gausslegendre"),
    "layer_conductance": LayerConductance(model, model[1]).attribute(x, target=2, n_steps=8),
})
