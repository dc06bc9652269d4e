"""pytorch-grad-cam (grad-cam): class activation maps from forward hooks (activations) and tensor hooks
(gradients) on a hand-built CNN's target layer: GradCAM, HiResCAM, GradCAM++, XGradCAM, LayerCAM,
GradCAMElementWise, EigenCAM, EigenGradCAM, ScoreCAM, AblationCAM, FullGrad (bias gradients of every
layer), with class and soft-max targets, eigen smoothing, guided backpropagation, and the hooks removed."""
import sys
import types

import numpy as np
import torch
from torch import nn

from _common import data, emit, fill


def _without_torchvision():
    """grad-cam imports torchvision's transforms and box_iou for image preprocessing and detection
    targets, which this case does not use; the torchvision beside torch here does not import, so
    stand-ins that are never called take their place while grad-cam imports."""
    def unused(*args, **kwargs):
        raise RuntimeError("the torchvision stand-in is not for use")

    transforms = types.ModuleType("torchvision.transforms")
    transforms.Compose = transforms.Normalize = transforms.ToTensor = unused
    functional = types.ModuleType("torchvision.transforms.functional")
    functional.resize = unused
    transforms.functional = functional
    ops = types.ModuleType("torchvision.ops")
    ops.box_iou = unused
    package = types.ModuleType("torchvision")
    package.transforms, package.ops = transforms, ops
    sys.modules.update({"torchvision": package, "torchvision.transforms": transforms,
                        "torchvision.transforms.functional": functional, "torchvision.ops": ops})


_without_torchvision()
from pytorch_grad_cam import (AblationCAM, EigenCAM, EigenGradCAM, FullGrad, GradCAM, GradCAMElementWise,  # noqa: E402
                              GradCAMPlusPlus, GuidedBackpropReLUModel, HiResCAM, LayerCAM, ScoreCAM, XGradCAM)
from pytorch_grad_cam.utils.model_targets import ClassifierOutputSoftmaxTarget, ClassifierOutputTarget  # noqa: E402

for name in ("torchvision", "torchvision.transforms", "torchvision.transforms.functional", "torchvision.ops"):
    del sys.modules[name]

torch.set_default_dtype(torch.float64)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 5, 3, padding=1),
                                      nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(5, 3)

    def forward(self, x):
        return self.head(torch.flatten(self.pool(self.features(x)), 1))


model = fill(Net(), scale=0.5).eval()
images = data(2, 3, 8, 8)
target_layers = [model.features[2]]
results = {}
targets = [ClassifierOutputTarget(1), ClassifierOutputTarget(2)]
for cam_class in (GradCAM, HiResCAM, GradCAMPlusPlus, XGradCAM, LayerCAM, GradCAMElementWise, EigenCAM,
                  EigenGradCAM, ScoreCAM, AblationCAM):
    with cam_class(model=model, target_layers=target_layers) as cam:
        if cam_class in (ScoreCAM, AblationCAM):
            cam.batch_size = 4
        maps = cam(input_tensor=images, targets=targets)
        results[cam_class.__name__] = [np.asarray(maps, dtype=np.float64).tolist(),
                                       [[len(m._forward_hooks) for m in model.modules()]]]
with GradCAM(model=model, target_layers=target_layers) as cam:
    results["softmax_target_eigen_smooth"] = np.asarray(
        cam(input_tensor=images, targets=[ClassifierOutputSoftmaxTarget(0)] * 2, eigen_smooth=True),
        dtype=np.float64).tolist()
    results["no_targets"] = np.asarray(cam(input_tensor=images, targets=None), dtype=np.float64).tolist()
with FullGrad(model=model, target_layers=[]) as cam:
    results["FullGrad"] = np.asarray(cam(input_tensor=images, targets=targets), dtype=np.float64).tolist()
guided = GuidedBackpropReLUModel(model=model, device="cpu")
results["guided_backprop"] = np.asarray(guided(images[:1], target_category=2), dtype=np.float64).tolist()
results["hooks_after"] = [len(m._forward_hooks) + len(m._backward_hooks) for m in model.modules()]
emit(results)
