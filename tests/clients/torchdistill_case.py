"""torchdistill's forward-hook extractors and distillation losses on a hand-built teacher and student
CNN: ForwardHookManager hooks on nested module paths (inputs, outputs, both; accumulated and stacked over
several passes), popped I/O dicts, hooks cleared; KD, FSP, attention-transfer (code and paper forms),
PKT, RKD and SPKD losses on the captured features, with gradients into the student."""
import sys
import types
import warnings


def _without_torchvision():
    """torchdistill's package import registers torchvision's models and datasets by name; this case uses
    none of them, and the torchvision beside torch here does not import, so stand-ins that are never
    called take its place (under either framework alike)."""
    def unusable(name):
        def refuse(*args, **kwargs):
            raise RuntimeError("the torchvision stand-in is not for use")
        return type(name, (), {"__init__": refuse})

    package = types.ModuleType("torchvision")
    package.__path__ = []
    models = types.ModuleType("torchvision.models")
    models.__path__ = []
    densenet = types.ModuleType("torchvision.models.densenet")
    densenet._DenseBlock, densenet._Transition = unusable("_DenseBlock"), unusable("_Transition")
    resnet = types.ModuleType("torchvision.models.resnet")
    resnet.BasicBlock, resnet.conv1x1 = unusable("BasicBlock"), unusable("conv1x1")
    datasets = types.ModuleType("torchvision.datasets")
    package.models, package.datasets, models.densenet, models.resnet = models, datasets, densenet, resnet
    sys.modules.update({"torchvision": package, "torchvision.models": models, "torchvision.models.densenet": densenet,
                        "torchvision.models.resnet": resnet, "torchvision.datasets": datasets})


_without_torchvision()
import torch
from torch import nn
from torchdistill.core.forward_hook import ForwardHookManager
from torchdistill.losses.mid_level import ATLoss, FSPLoss, KDLoss, PKTLoss, RKDLoss, SPKDLoss

from _common import data, emit, fill

for name in ("torchvision", "torchvision.models", "torchvision.models.densenet", "torchvision.models.resnet",
             "torchvision.datasets"):
    del sys.modules[name]  # (the stand-ins are gone before anything runs)
warnings.simplefilter("ignore")


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.ReLU())
        self.layer1 = nn.Sequential(nn.Conv2d(width, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU())
        self.layer2 = nn.Sequential(nn.Conv2d(width, width, 3, stride=2, padding=1), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(width, 4)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(self.pool(x).flatten(1))


teacher = fill(Net(6).double(), seed=1, scale=0.4).eval()
student = fill(Net(6).double(), seed=2, scale=0.4).train()
x, targets = data(4, 3, 8, 8, seed=3), torch.tensor([0, 3, 1, 2])
results = {}

teacher_hooks, student_hooks = ForwardHookManager("cpu"), ForwardHookManager(torch.device("cpu"))
for manager, model in ((teacher_hooks, teacher), (student_hooks, student)):
    manager.add_hook(model, "layer1", requires_input=True, requires_output=True)
    manager.add_hook(model, "layer2", requires_input=False, requires_output=True)
    manager.add_hook(model, "layer1.1", requires_input=True, requires_output=False)
    manager.add_hook(model, "fc", requires_input=True, requires_output=True)
with torch.no_grad():
    teacher_out = teacher(x)
student_out = student(x)
teacher_io, student_io = teacher_hooks.pop_io_dict(), student_hooks.pop_io_dict()
results["io_keys"] = {path: sorted(io) for path, io in student_io.items()}
results["teacher_io"] = teacher_io
results["popped_again"] = {path: sorted(io) for path, io in student_hooks.pop_io_dict().items()}

losses = {
    "kd": KDLoss("fc", "output", "fc", "output", temperature=4.0, alpha=0.5),
    "fsp": FSPLoss({"pair": {"student_first": {"io": "input", "path": "layer1"},
                             "student_second": {"io": "output", "path": "layer2"},
                             "teacher_first": {"io": "input", "path": "layer1"},
                             "teacher_second": {"io": "output", "path": "layer2"}, "weight": 1.0}}),
    "at_code": ATLoss({"pair": {"student": {"io": "output", "path": "layer1"},
                                "teacher": {"io": "output", "path": "layer1"}, "weight": 1.0}}, mode="code"),
    "at_paper": ATLoss({"pair": {"student": {"io": "output", "path": "layer2"},
                                 "teacher": {"io": "output", "path": "layer2"}, "weight": 2.0}}, mode="paper"),
    "pkt": PKTLoss("fc", "input", "fc", "input"),
    "rkd": RKDLoss("fc", "fc", dist_factor=1.0, angle_factor=2.0, reduction="mean"),
    "spkd": SPKDLoss("layer2", "layer2", reduction="batchmean"),
}
# (RKD and SPKD read the paths' outputs under the io name "output")
values = {}
for name, loss in losses.items():
    values[name] = loss(student_io, teacher_io, targets)
results["losses"] = values
total = sum(values.values())
total.backward()
results["student_grads"] = {name: p.grad for name, p in student.named_parameters()}

# accumulated and stacked captures over three passes, then hooks cleared
student.zero_grad()
collector = ForwardHookManager("cpu")
collector.add_hook(student, "layer2", requires_input=False, accumulates=True, stacks_accumulated=True)
collector.add_hook(student, "fc", requires_output=False, accumulates=True)
with torch.no_grad():
    for scale in (1.0, 0.5, -0.25):
        student(x * scale)
accumulated = collector.pop_io_dict()
results["accumulated"] = {"layer2": accumulated["layer2"]["output"], "fc": accumulated["fc"]["input"]}
results["refused"] = None
try:
    collector.add_hook(student, "fc", stacks_accumulated=True)
except ValueError as error:
    results["refused"] = str(error)
collector.clear()
with torch.no_grad():
    student(x)
results["after_clear"] = collector.pop_io_dict()
results["hooks_left"] = [len(m._forward_hooks) for m in student.modules()]
emit(results)
