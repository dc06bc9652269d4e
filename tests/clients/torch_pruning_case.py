"""Torch-Pruning: dependency graph tracing, MetaPruner steps (magnitude, Taylor and BN-scale
importance) on a residual CNN and on a transformer-like block, and count_ops_and_params before and
after; the pruned models' outputs and gradients are compared too."""

import torch
import torch_pruning as tp
from torch import nn

from _common import data, emit, fill


class Block(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        return torch.relu(x + self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))))


class ResNetLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.blocks = nn.Sequential(Block(8), Block(8))
        self.down = nn.Conv2d(8, 12, 3, stride=2, padding=1)
        self.head = nn.Linear(12, 5)

    def forward(self, x):
        x = self.down(self.blocks(self.stem(x)))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class TransformerLike(nn.Module):
    def __init__(self, dim=8, hidden=16):
        super().__init__()
        self.embed = nn.Linear(6, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)
        self.head = nn.Linear(dim, 3)

    def forward(self, x):
        x = self.embed(x)
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        attention = torch.softmax(q @ k.transpose(-2, -1) / 8 ** 0.5, dim=-1)
        x = x + self.proj(attention @ v)
        x = x + self.fc2(self.act(self.fc1(self.norm2(x))))
        return self.head(x.mean(1))


def shapes(model):
    return {name: list(p.shape) for name, p in model.named_parameters()}


def prune(model, inputs, importance, ignored, steps=1, ratio=0.5, loss_for_taylor=False, **kwargs):
    model = fill(model.double(), seed=5)
    before = tp.utils.count_ops_and_params(model, inputs)
    pruner = tp.pruner.MetaPruner(model, inputs, importance=importance, pruning_ratio=ratio,
                                  iterative_steps=steps, ignored_layers=ignored(model), **kwargs)
    record = {"groups": []}
    for _ in range(steps):
        if loss_for_taylor:
            model.zero_grad()
            model(inputs).pow(2).sum().backward()
        for group in pruner.step(interactive=True):
            record["groups"].append([[dep.target.name, dep.handler.__name__, sorted(int(i) for i in idxs)]
                                     for dep, idxs in group])
            group.prune()
    after = tp.utils.count_ops_and_params(model, inputs)
    model.zero_grad()
    out = model(inputs)
    out.pow(2).sum().backward()
    record.update(before=[float(v) for v in before], after=[float(v) for v in after], shapes=shapes(model),
                  out=out, grads={name: p.grad for name, p in model.named_parameters()})
    return record


def dependency_summary(model, inputs):
    graph = tp.DependencyGraph().build_dependency(model, example_inputs=inputs)
    groups = graph.get_all_groups(root_module_types=[nn.Conv2d, nn.Linear])
    return [[str(dep) for dep, _ in group] for group in groups]


image = data(2, 3, 8, 8)
tokens = data(2, 4, 6, seed=2)
torch.manual_seed(0)
results = {
    "resnet_groups": dependency_summary(fill(ResNetLike().double()), image),
    "resnet_magnitude": prune(ResNetLike(), image, tp.importance.MagnitudeImportance(p=2),
                              lambda m: [m.head]),
    "resnet_bn_scale_two_steps": prune(ResNetLike(), image, tp.importance.BNScaleImportance(),
                                       lambda m: [m.head], steps=2, ratio=0.5),
    "resnet_taylor": prune(ResNetLike(), image, tp.importance.TaylorImportance(), lambda m: [m.head],
                           loss_for_taylor=True),
    "transformer_magnitude": prune(TransformerLike(), tokens, tp.importance.MagnitudeImportance(p=1),
                                   lambda m: [m.head, m.qkv, m.embed], ratio=0.25),
    "transformer_global": prune(TransformerLike(), tokens, tp.importance.MagnitudeImportance(p=2),
                                lambda m: [m.head, m.qkv], ratio=0.5, global_pruning=True),
}
emit(results)
