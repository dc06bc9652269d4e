"""Captum attributions of a small float64 CNN (conv, ReLU, max pooling, linear)."""
import torch
from torch import nn
from captum.attr import (DeepLift, DeepLiftShap, IntegratedGradients, LayerConductance, LayerGradCam,
                         Saliency)

from _common import data, emit, fill


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 3, 3)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.flat = nn.Flatten()
        self.fc = nn.Linear(27, 4)
        self.relu2 = nn.ReLU()
        self.out = nn.Linear(4, 3)

    def forward(self, x):
        return self.out(self.relu2(self.fc(self.flat(self.pool(self.relu(self.conv(x)))))))


model = fill(Net().double()).eval()
x = data(2, 1, 8, 8)
baseline = torch.zeros_like(x)
background = data(3, 1, 8, 8, seed=5) * 0.1
results = {
    "saliency": Saliency(model).attribute(x, target=1),
    "saliency_abs_false": Saliency(model).attribute(x, target=2, abs=False),
    "deeplift": DeepLift(model).attribute(x, baselines=baseline, target=1),
    "deeplift_delta": DeepLift(model).attribute(x, baselines=baseline, target=0, return_convergence_delta=True),
    "deepliftshap": DeepLiftShap(model).attribute(x, baselines=background, target=2),
    "layer_gradcam": LayerGradCam(model, model.conv).attribute(x, target=2),
    "layer_gradcam_relu": LayerGradCam(model, model.conv).attribute(x, target=0, relu_attributions=True),
}
emit(results)
