"""torchextractor: intermediate feature maps captured by forward hooks, chosen by module names or by a
filter function, with a custom capture function, gradients through the captured maps, and its hooks
removed when the extractor is deleted."""
import gc

import torch
import torchextractor as tx
from torch import nn

from _common import data, emit, fill


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(),
                                      nn.Sequential(nn.Conv2d(4, 4, 3), nn.Tanh()), nn.MaxPool2d(2))
        self.lstm = nn.LSTM(4, 3, batch_first=True)
        self.head = nn.Linear(3, 2)

    def forward(self, x):
        x = self.features(x).flatten(2).transpose(1, 2)
        out, (h, c) = self.lstm(x)
        return self.head(out[:, -1])


model = fill(Net().double(), seed=21)
x = data(2, 2, 6, 6, seed=22).requires_grad_()
results = {"names": tx.list_module_names(model),
           "found": sorted(tx.find_modules_by_names(model, ["features.2.0", "head"]))}

extractor = tx.Extractor(model, ["features.0", "features.2.1", "lstm", "head"])
out, features = extractor(x)
results["repr"] = repr(extractor)
results["out"] = out
results["features"] = {name: value for name, value in features.items()}
(features["features.2.1"].sum() + features["lstm"][0].pow(2).sum() + out.sum()).backward()
results["x_grad"] = x.grad
results["hooks"] = {name: len(module._forward_hooks) for name, module in model.named_modules()}


def keep_mean_and_shape(module, input, output, module_name, feature_maps):
    value = output[0] if isinstance(output, tuple) else output
    feature_maps[module_name] = [type(module).__name__, list(value.shape), value.mean()]


convs = tx.Extractor(model, module_filter_fn=lambda module, name: isinstance(module, (nn.Conv2d, nn.LSTM)),
                     capture_fn=keep_mean_and_shape)
convs(x)
results["custom_capture"] = dict(convs.collect())
convs.clear_placeholder()
results["cleared"] = dict(convs.collect())
del extractor, convs
gc.collect()
results["hooks_after_delete"] = sum(len(module._forward_hooks) for module in model.modules())
emit(results)
