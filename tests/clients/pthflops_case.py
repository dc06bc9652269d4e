"""pthflops in its torch.fx mode: a ProfilingInterpreter (a torch.fx.Interpreter) traces the model
symbolically and counts operations per node (modules, functions and methods), with ignored layers, custom
counters for chosen modules and its printed table."""
import contextlib
import io
import warnings

import torch
import torch.nn.functional as F
from torch import nn

warnings.filterwarnings("ignore")   # ops_jit imports distutils, deprecated
from pthflops import count_ops  # noqa: E402

from _common import data, emit, fill  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 8, 3, stride=2, groups=2)
        self.pool = nn.AdaptiveAvgPool2d(2)
        self.fc1 = nn.Linear(32, 12)
        self.fc2 = nn.Linear(12, 4)

    def forward(self, x):
        x = F.relu(self.bn(self.conv1(x)))
        x = F.max_pool2d(x, 2) + 0.5 * F.avg_pool2d(x, 2)
        x = self.pool(torch.sigmoid(self.conv2(x)))
        x = x.flatten(1)
        x = F.gelu(self.fc1(x)).mul(2.0)
        return F.softmax(self.fc2(x), dim=-1)


def counted(*args, **kwargs):
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        total, per_node = count_ops(*args, **kwargs)
    return {"total": total, "nodes": [list(entry) for entry in per_node], "text": text.getvalue().splitlines()}


results = {}
net = fill(Net()).double()
x = data(2, 3, 10, 10)
results["default"] = counted(net, x)
results["ignored"] = counted(net, x, ignore_layers=["conv1", "fc2"], print_readable=False, verbose=False)
results["custom"] = counted(net, x, custom_ops={net.fc1: lambda module, output, args, kwargs: 1000,
                                                net.pool: lambda module, output, args, kwargs: output.numel() * 3})
results["training_mode_kept"] = net.training
emit(results)
