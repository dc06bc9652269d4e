"""torchfunc's hook recorders and registrators on a float64 CNN: forward-pre, forward input/output and
the deprecated module backward hooks (register_backward_hook: grad_input/grad_output of a module's last
operation) chosen by type, by index, over children or all modules, with conditions and reductions;
subrecorders removed; the module utilities (freeze/unfreeze, weight/bias parameters, Snapshot, sizeof)
and the performance report's depthwise, in-place and tensor-core findings."""
import torch
from torch import nn
import torchfunc
from torchfunc.hooks import recorders, registrators

from _common import data, emit, fill


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.depthwise = nn.Conv2d(4, 4, 3, groups=4)
        self.act = nn.ReLU(inplace=True)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3))

    def forward(self, x):
        return self.head(self.pool(self.act(self.depthwise(self.conv(x)))))


def run(model, batches):
    losses = []
    for i, x in enumerate(batches):
        model.zero_grad()
        loss = model(x).pow(2).sum() * (i + 1)
        loss.backward()
        losses.append(loss)
    return losses


model = fill(Net().double(), scale=0.4)
batches = [data(2, 2, 5, 5, seed=s) for s in (1, 2, 3)]
label = {"value": 0}
recorded = {
    "forward_pre_linear": recorders.ForwardPre(),
    "forward_input_sum": recorders.ForwardInput(reduction=lambda x, y: x + y),
    "forward_output": recorders.ForwardOutput(condition=lambda: label["value"] % 2 == 0),
    "backward_input": recorders.BackwardInput(),
    "backward_input_sum": recorders.BackwardInput(reduction=lambda x, y: x + y),
    "backward_output": recorders.BackwardOutput(),
}
recorded["forward_pre_linear"].modules(model, types=(nn.Linear,))
recorded["forward_input_sum"].children(model, indices=(0, 1))
recorded["forward_output"].modules(model.head, indices=(1, 3))
recorded["backward_input"].modules(model, types=(nn.Linear, nn.Tanh))
# (a subrecorder appends its first entry at the end of the shared list: with a reduction, the backward
# order, last module first, would mismatch entries; one module keeps it straight)
recorded["backward_input_sum"].modules(model.head, indices=(4,))
recorded["backward_output"].children(model.head, indices=(1, 2, 3))

calls = []
registered = {
    "forward_pre": registrators.ForwardPre(lambda m, i: calls.append(["pre", type(m).__name__, list(i[0].shape)])),
    "forward": registrators.Forward(lambda m, i, o: calls.append(["forward", type(m).__name__, o.sum()])),
    "backward": registrators.Backward(lambda m, gi, go: calls.append(
        ["backward", type(m).__name__, [g is None for g in gi], [g.sum() for g in gi if g is not None],
         [g.sum() for g in go]])),
}
registered["forward_pre"].children(model, types=(nn.Conv2d,))
registered["forward"].modules(model, indices=(2, 4))
registered["backward"].modules(model.head, types=(nn.Linear,))

losses = []
for x in batches:
    losses += run(model, [x])
    label["value"] += 1
results = {"losses": losses, "calls": calls}
for name, recorder in recorded.items():
    results[name] = {"data": list(recorder), "samples": list(recorder.iter_samples()), "count": len(recorder)}
recorded["backward_output"].remove(0)
recorded["forward_pre_linear"].apply(lambda d: d)
results["after_remove"] = {"count": len(recorded["backward_output"]),
                           "hooks": [len(m._backward_hooks) for m in model.head]}
for registrator in registered.values():
    registrator.remove(0)
results["registrators_left"] = [len(r) for r in registered.values()]
calls.clear()
results["losses_after_remove"] = run(model, batches[:1])
results["calls_after_remove"] = calls

# module utilities
torchfunc.module.freeze(model.head, bias=False)
results["frozen"] = [p.requires_grad for p in model.parameters()]
torchfunc.module.unfreeze(model.head, weight=False)
results["unfrozen_bias"] = [p.requires_grad for p in model.parameters()]
torchfunc.module.unfreeze(model)
results["weight_parameters"] = [p.shape for p in torchfunc.module.weight_parameters(model)]
results["bias_parameters"] = [p.shape for p in torchfunc.module.bias_parameters(model)]
snapshot = torchfunc.module.Snapshot()
snapshot += model.head
results["snapshot"] = [len(snapshot), [p.sum() for p in snapshot[0].parameters()]]
results["sizeof"] = [torchfunc.sizeof(torch.zeros(3, 4, dtype=torch.float64)), torchfunc.sizeof(model.head)]
results["report"] = {k: v if isinstance(v, bool) else list(v) if k != "tensorcores" else v
                     for k, v in torchfunc.performance.report(model).items()}
results["depthwise"] = list(torchfunc.performance.layers.Depthwise().children(model))
results["inplace"] = list(torchfunc.performance.layers.Inplace().modules(model))
results["tips"] = torchfunc.performance.tips(model)
emit(results)
