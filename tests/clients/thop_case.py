"""thop's operation and parameter counts of a CNN and an MLP."""
import torch
from torch import nn
from thop import clever_format, profile

from _common import data, emit

cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AvgPool2d(2),
                    nn.Conv2d(8, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 5), nn.Softmax(-1))
mlp = nn.Sequential(nn.Linear(10, 20), nn.LeakyReLU(), nn.Dropout(0.2), nn.Linear(20, 3))
macs_cnn, params_cnn = profile(cnn.double(), inputs=(data(2, 3, 16, 16),), verbose=False)
macs_mlp, params_mlp = profile(mlp.double(), inputs=(data(4, 10),), verbose=False)
emit({"cnn": [float(macs_cnn), float(params_cnn)], "mlp": [float(macs_mlp), float(params_mlp)],
      "formatted": list(clever_format([macs_cnn, params_cnn], "%.3f"))})
