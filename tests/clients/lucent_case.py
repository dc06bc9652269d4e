"""Lucent (torch-lucent) feature visualisation: render_vis optimises an image parameterisation (pixel,
FFT, CPPN) through a model whose every layer is hooked to record its features, with
Lucent's objectives (channel, neuron, direction, diversity, combined and scaled), its pad, jitter and
random-scale transforms (NumPy draws seeded), and the hooks removed afterwards. (Its random rotation
calls a kornia function that kornia 0.9 no longer has, on torch as well, so it is left out.)"""
import sys
import types

import numpy as np
import torch
from torch import nn

from _common import emit, fill


def _without_torchvision():
    """Lucent imports torchvision's Normalize only for its ImageNet preprocessing, which this case turns
    off (preprocess=False); the torchvision beside torch here does not import, so a stand-in that is
    never called takes its place while Lucent imports."""
    transforms = types.ModuleType("torchvision.transforms")

    class Normalize:
        def __init__(self, *args, **kwargs):
            raise RuntimeError("the torchvision stand-in is not for use")

    transforms.Normalize = Normalize
    package = types.ModuleType("torchvision")
    package.transforms = transforms
    sys.modules.update({"torchvision": package, "torchvision.transforms": transforms})


_without_torchvision()
from lucent.optvis import objectives, param, render, transform  # noqa: E402

for name in ("torchvision", "torchvision.transforms"):
    del sys.modules[name]

# float64 throughout, so the two frameworks agree to the last digits; Lucent's colour decorrelation
# multiplies by a float32 NumPy matrix (a dtype error beside float64 images on torch too), so it is off
torch.set_default_dtype(torch.float64)




class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(4, 6, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        h = self.relu2(self.conv2(self.relu1(self.conv1(x))))
        return self.fc(torch.flatten(self.pool(h), 1))


model = fill(Net(), scale=0.4).eval()
results = {}
runs = {
    "channel_fft": (lambda: param.image(12, decorrelate=False), "conv2:1", None),
    "neuron_pixel": (lambda: param.image(12, fft=False, decorrelate=False), objectives.neuron("relu2", 2), None),
    "combined": (lambda: param.image(12, batch=2, decorrelate=False),
                 objectives.channel("relu1", 0) - 0.5 * objectives.diversity("conv2"), None),
    "direction": (lambda: param.image(12, decorrelate=False),
                  objectives.direction("conv2", torch.tensor([1.0, -1, 0.5, 0, 0, 2])),
                  [transform.pad(2), transform.jitter(2), transform.random_scale([0.9, 1.0, 1.1])]),
    "cppn": (lambda: param.cppn(12), "fc:0", []),
}
for name, (param_f, objective, transforms) in runs.items():
    torch.manual_seed(0)
    np.random.seed(0)
    images = render.render_vis(model, objective, param_f=param_f, transforms=transforms if transforms is not None
                               else [transform.jitter(2)], thresholds=(3, 6), preprocess=False, progress=False,
                               show_image=False, fixed_image_size=12 if transforms else None)
    results[name] = [np.asarray(image, dtype=np.float64).tolist() for image in images]
results["hooks_left"] = [len(m._forward_hooks) for m in model.modules()]
emit(results)
