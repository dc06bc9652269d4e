"""TorchCAM class activation maps of a small float64 CNN: CAM, Grad-CAM family (hooks on activations and
gradients), Score-CAM family (masked forwards), several target layers fused, automatic layer location,
per-sample classes, output targets, and its classification and deletion/insertion metrics."""
from functools import partial

import torch
from torch import nn
from torchcam.methods import (CAM, ISCAM, SSCAM, GradCAM, GradCAMpp, LayerCAM, ScoreCAM, SmoothGradCAMpp,
                              XGradCAM)
from torchcam.metrics import ClassificationMetric, DeletionInsertionMetric

from _common import data, emit, fill


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 6, 3, padding=1),
                                      nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 5, 3, padding=1),
                                      nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flat = nn.Flatten()
        self.fc = nn.Linear(5, 4)

    def forward(self, x):
        return self.fc(self.flat(self.pool(self.features(x))))


model = fill(Net().double(), scale=0.6).eval()
x = data(2, 3, 8, 8)
results = {}


def cams_of(method, name, class_idx, *args, **kwargs):
    with method(model, *args, **kwargs) as extractor:
        scores = model(x)
        maps = extractor(class_idx, scores)
        results[name] = maps
        if len(maps) > 1:
            results[name + "_fused"] = extractor.fuse_cams(maps)
    return maps


cams_of(CAM, "cam", 1, target_layer="features.7", fc_layer="fc")
cams_of(GradCAM, "gradcam", 2, target_layer=model.features[7])
cams_of(GradCAM, "gradcam_layers", [0, 3], target_layer=["features.4", model.features[7]])
cams_of(GradCAMpp, "gradcampp", 0, target_layer="features.7")
cams_of(XGradCAM, "xgradcam", 3, target_layer="features.4")
cams_of(LayerCAM, "layercam", 1, target_layer=["features.1", "features.7"])
cams_of(ScoreCAM, "scorecam", 2, target_layer="features.7", batch_size=4)
torch.manual_seed(0)
cams_of(SmoothGradCAMpp, "smoothgradcampp", 1, target_layer="features.7", num_samples=3, std=0.2)
torch.manual_seed(1)
cams_of(SSCAM, "sscam", 0, target_layer="features.7", num_samples=2, std=0.5, batch_size=3)
cams_of(ISCAM, "iscam", 3, target_layer="features.7", num_samples=3, batch_size=5)
torch.set_default_dtype(torch.float64)  # torchcam probes the model with a default-dtype input
cams_of(GradCAM, "gradcam_located", 0, input_shape=(3, 8, 8))  # the layer torchcam finds by itself
torch.set_default_dtype(torch.float32)

with GradCAM(model, "features.7") as extractor:
    model(x)
    results["unnormalized"] = extractor(1, model(x), normalized=False)
    results["hooks_left"] = [len(m._forward_hooks) + len(m._backward_hooks) + len(getattr(m, "_forward_pre_hooks"))
                             for m in model.modules()]

with LayerCAM(model, "features.4") as extractor:
    metric = ClassificationMetric(extractor, partial(torch.softmax, dim=-1))
    metric.update(x, class_idx=[2, 1])
    metric.update(data(3, 3, 8, 8, seed=2))
    results["classification_metric"] = metric.summary()
with GradCAMpp(model, "features.7") as extractor:
    metric = DeletionInsertionMetric(extractor, partial(torch.softmax, dim=-1), steps=4, batch_size=3)
    metric.update(x, class_idx=1)
    results["deletion_insertion"] = metric.summary()
results["hooks_after"] = sum(len(m._forward_hooks) + len(m._backward_hooks) for m in model.modules())
emit(results)
