"""torchsummary and pytorch_model_summary: the tables they print or return for a CNN with a residual
block, a model with two inputs, and a recurrent model (shapes, parameter counts, hierarchy)."""
import contextlib
import io

import torch
from torch import nn
import pytorch_model_summary
import torchsummary

from _common import data, emit, fill


class Residual(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(x + self.conv2(self.act(self.bn1(self.conv1(x)))))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.block = Residual(6)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(24, 10), nn.Dropout(0.2),
                                  nn.Linear(10, 4))
        self.head[2].weight.requires_grad_(False)  # frozen weights count as non-trainable

    def forward(self, x):
        return self.head(self.block(self.stem(x)))


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.left = nn.Linear(5, 3)
        self.right = nn.Sequential(nn.Linear(7, 3), nn.Tanh())
        self.embed = nn.Embedding(11, 3)

    def forward(self, a, b):
        return self.left(a) * self.right(b)


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 6, num_layers=2, batch_first=True)
        self.out = nn.Linear(6, 2)

    def forward(self, x):
        hidden, _ = self.gru(x)
        return self.out(hidden[:, -1])


def printed(fn, *args, **kwargs):
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        returned = fn(*args, **kwargs)
    return buffer.getvalue(), returned


torch.manual_seed(0)
net, two, recurrent = fill(Net()), fill(TwoInputs()), fill(Recurrent())
results = {
    # torchsummary draws float32 inputs itself
    "torchsummary_cnn": printed(torchsummary.summary, net.float(), (3, 8, 8), device="cpu")[0],
    "torchsummary_batch": printed(torchsummary.summary, net.float(), (3, 8, 8), batch_size=5, device="cpu")[0],
    "torchsummary_two_inputs": printed(torchsummary.summary, two.float(), [(5,), (7,)], device="cpu")[0],
}
net, two = net.double(), two.double()
image = data(2, 3, 8, 8)
for name, kwargs in {"plain": {}, "input": {"show_input": True},
                     "hierarchical": {"show_hierarchical": True, "max_depth": 2},
                     "parents": {"show_parent_layers": True, "max_depth": None}}.items():
    results[f"pms_cnn_{name}"] = pytorch_model_summary.summary(net, image, **kwargs)
results["pms_two_inputs"] = pytorch_model_summary.summary(two, data(3, 5), data(3, 7, seed=2), show_input=True)
results["pms_recurrent"] = pytorch_model_summary.summary(recurrent.double(), data(2, 5, 4), batch_size=2)
text, returned = printed(pytorch_model_summary.summary, net, image, print_summary=True)
results["pms_printed"] = [text, returned]
emit(results)
