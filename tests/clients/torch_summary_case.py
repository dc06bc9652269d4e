"""torch-summary 1.4.5 (the torchsummary package that later became torchinfo): summary tables from forward
pre-hooks and forward hooks on every module, with all columns, depths, verbose weight rows, branching off,
shapes or tensors as input, several inputs with dtypes, keyword arguments, a recurrent model."""
import torch
from torch import nn
from torchsummary import summary

from _common import data, emit, fill


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(4, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1, bias=False)

    def forward(self, x):
        return torch.relu(x + self.conv2(torch.relu(self.bn(self.conv1(x)))))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU())
        self.blocks = nn.ModuleList([Residual(), Residual()])
        self.pool = nn.AdaptiveAvgPool2d(2)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(16, 6), nn.Dropout(0.1), nn.Linear(6, 3))

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.head(self.pool(x))


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 4)
        self.fc = nn.Linear(5, 4)
        self.out = nn.Bilinear(4, 4, 2)

    def forward(self, tokens, features, scale=1.0):
        return self.out(self.embed(tokens).mean(1), self.fc(features)) * scale


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 5, num_layers=2, batch_first=True)
        self.gru = nn.GRU(5, 4, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        x, _ = self.lstm(x)
        x, _ = self.gru(x)
        return self.fc(x[:, -1])


def table(*args, **kwargs):
    return str(summary(*args, verbose=0, **kwargs)).splitlines()


results = {}
net = fill(Net())
every_column = ("input_size", "output_size", "num_params", "kernel_size", "mult_adds")
results["net_default"] = table(net, (2, 8, 8))
results["net_all_columns"] = table(net, data(3, 2, 8, 8).float(), col_names=every_column, depth=4, col_width=16)
results["net_flat"] = table(net, (2, 8, 8), branching=False, depth=1)
results["net_no_input"] = table(net)
stats = summary(net, (2, 8, 8), verbose=0, col_names=every_column)
results["net_totals"] = [stats.total_params, stats.trainable_params, stats.total_output, stats.total_mult_adds,
                         stats.total_input]
net.blocks[1].requires_grad_(False)
results["net_frozen"] = table(net, (2, 8, 8), depth=2)
results["verbose_rows"] = str(summary(fill(Residual()), (4, 5, 5), verbose=0, col_names=every_column)).splitlines()
two = fill(TwoInputs(), seed=2)
results["two_inputs"] = table(two, [(6,), (5,)], dtypes=[torch.long, torch.float], col_names=every_column)
results["two_tensors"] = table(two, torch.tensor([[1, 2, 3], [4, 5, 6]]), data(2, 5).float(), scale=2.0,
                               col_names=("input_size", "output_size", "num_params"))
results["recurrent"] = table(fill(Recurrent(), seed=3), (7, 3), col_names=every_column, depth=2)
results["batch_dim_none"] = table(net, [(1, 2, 8, 8)], batch_dim=None)
results["hooks_left"] = [(len(m._forward_hooks), len(m._forward_pre_hooks)) for m in net.modules()]
emit(results)
