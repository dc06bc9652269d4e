"""Two small hook-based model counters: flopco-pytorch (forward hooks on chosen layer types recording
shapes, FLOPs, MACs and parameters) and modelsummary (Keras-style tables from forward pre-hooks or forward
hooks on every module, the hierarchical summary)."""
import contextlib
import io

import torch
from flopco import FlopCo
from modelsummary import summary
from torch import nn

from _common import emit, fill


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(6, 8, 3, groups=2), nn.ReLU(), nn.AvgPool2d(2))
        self.classifier = nn.Sequential(nn.Linear(32, 10), nn.ReLU(), nn.Linear(10, 4), nn.Softmax(dim=1))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(12, 5)
        self.lstm = nn.LSTM(5, 6, batch_first=True)
        self.fc = nn.Linear(6, 2)

    def forward(self, tokens):
        out, (h, c) = self.lstm(self.embed(tokens))
        return self.fc(out[:, -1])


def plain(value):
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, torch.Size)):
        return [plain(v) for v in value]
    if isinstance(value, type):
        return value.__name__
    return value


def flopco_figures(counted):
    return {key: plain(getattr(counted, key)) for key in ("input_shapes", "output_shapes", "flops", "macs", "params",
                                                          "total_flops", "total_macs", "total_params",
                                                          "relative_flops", "ltypes")}


def printed(function, *args, **kwargs):
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        function(*args, **kwargs)
    return text.getvalue().splitlines()


results = {}
net = fill(Net())
results["flopco_default"] = flopco_figures(FlopCo(net, img_size=(1, 3, 12, 12)))
every = [nn.Conv2d, nn.Linear, nn.BatchNorm2d, nn.ReLU, nn.MaxPool2d, nn.AvgPool2d, nn.Softmax]
results["flopco_every"] = flopco_figures(FlopCo(net, img_size=(2, 3, 12, 12), instances=every))
results["flopco_tensor"] = flopco_figures(FlopCo(net, custom_tensor=[torch.ones(1, 3, 12, 12)], instances=every))
results["hooks_after_flopco"] = [len(m._forward_hooks) for m in net.modules()]
x = torch.zeros(1, 3, 12, 12)
results["summary_inputs"] = printed(summary, net, x)
results["summary_outputs"] = printed(summary, net, x, show_input=False, batch_size=4)
results["summary_hierarchical"] = printed(summary, net, x, show_hierarchical=True)
tokens = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
recurrent = fill(Recurrent(), seed=2)
results["summary_recurrent"] = printed(summary, recurrent, tokens, show_input=False)
results["summary_recurrent_inputs"] = printed(summary, recurrent, tokens)
results["hooks_after_summary"] = [(len(m._forward_hooks), len(m._forward_pre_hooks)) for m in net.modules()]
emit(results)
