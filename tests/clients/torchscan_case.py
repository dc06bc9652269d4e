"""torchscan's summary (printed text and report) of a CNN and an MLP: module-formula FLOPs, MACs
and DMAs, and the operator FLOPs it measures with torch.utils.flop_counter.FlopCounterMode and a
TorchDispatchMode that records every ATen operator."""
import contextlib
import io

from torch import nn
from torchscan import summary

from _common import emit, fill

cnn = fill(nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 4, 3, stride=2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 5)))
mlp = fill(nn.Sequential(nn.Linear(10, 20), nn.LeakyReLU(), nn.Dropout(0.2), nn.Linear(20, 3)))

results = {}
for name, model, shape in (("cnn", cnn, (3, 16, 16)), ("mlp", mlp, (10,))):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        report = summary(model.float(), shape)
    flops = report["operator_flops"]
    results[name] = {
        "printed": printed.getvalue().splitlines(),
        "by_operator": flops["by_operator"],
        "by_module": flops["by_module"],
        "ignored_operators": flops["ignored_operators"],
        "diagnostics": [d["message"] for d in report["diagnostics"]],
        "totals": {k: v.get("value", v.get("known_value")) for k, v in report["totals"].items()},
    }
emit(results)
