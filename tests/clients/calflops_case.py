"""calflops: FLOPs, MACs and parameters of a CNN and a small attention model, counted by replacing
torch.nn.functional functions and torch/Tensor methods (matmul, addmm, mul, add, einsum, baddbmm) with
counting wrappers while forward pre-hooks and forward hooks on every module attribute the counts; the
detailed per-module profile text, backward-pass factors, ignored modules, originals restored."""
import contextlib
import io
import sys
import types

import torch
import torch.nn.functional as F
from torch import nn

from _common import emit, fill


def _without_hugging_face():
    """calflops' Hugging Face entry points (calculate_flops_hf, create_empty_model) import transformers,
    huggingface_hub and accelerate at import time; this case calls neither, so never-called stand-ins take
    their modules' places (accelerate needs torch.distributed.algorithms.join, which hookgrad lacks)."""
    def never_called(*args, **kwargs):
        raise AssertionError("a Hugging Face entry point of calflops was called")

    for name, function in (("calflops.flops_counter_hf", "calculate_flops_hf"),
                           ("calflops.estimate", "create_empty_model")):
        module = types.ModuleType(name)
        setattr(module, function, never_called)
        sys.modules[name] = module


_without_hugging_face()
from calflops import calculate_flops  # noqa: E402


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.Conv2d(6, 8, 3, groups=2), nn.LeakyReLU(0.1),
                                      nn.AdaptiveAvgPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32, 10), nn.GELU(), nn.Linear(10, 4))

    def forward(self, x):
        return self.classifier(self.features(x))


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.qkv = nn.Linear(8, 24)
        self.norm = nn.LayerNorm(8)
        self.mlp = nn.Sequential(nn.Linear(8, 16), nn.SiLU(), nn.Linear(16, 8))
        self.mha = nn.MultiheadAttention(8, 2, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, tokens, mask_scale=1.0):
        x = self.embed(tokens)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = torch.matmul(q, k.transpose(-1, -2)) * (8 ** -0.5)
        x = x + torch.einsum("bij,bjd->bid", F.softmax(scores, dim=-1), v)
        x = self.norm(torch.add(x, self.mlp(x)))
        x = x + self.mha(x, x, x, need_weights=False)[0]
        return self.head(torch.mul(x.mean(1), mask_scale))


def profiled(model, **kwargs):
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        counts = calculate_flops(model=model, **kwargs)
    return {"counts": list(counts), "text": text.getvalue().splitlines()}


originals = [F.linear, F.conv2d, F.relu, torch.matmul, torch.Tensor.matmul, torch.add, torch.Tensor.add,
             torch.einsum, F.softmax]
results = {}
cnn = fill(ConvNet()).double()
results["cnn"] = profiled(cnn, input_shape=(2, 3, 8, 8), output_precision=4)
results["cnn_numbers"] = profiled(cnn, input_shape=(1, 3, 8, 8), output_as_string=False, print_results=False)
results["cnn_backward"] = profiled(cnn, input_shape=(1, 3, 8, 8), include_backPropagation=True,
                                   compute_bp_factor=2.5, print_detailed=False, output_unit="K")
results["cnn_ignored"] = profiled(cnn, input_shape=(1, 3, 8, 8), ignore_modules=[nn.Conv2d, nn.BatchNorm2d],
                                  print_detailed=False, output_as_string=False)
attention = fill(Attention(), seed=2).double()
tokens = torch.tensor([[1, 4, 7, 2, 9], [3, 3, 0, 19, 5]])
results["attention"] = profiled(attention, args=[tokens], output_precision=3)
results["attention_kwargs"] = profiled(attention, kwargs={"tokens": tokens, "mask_scale": torch.tensor(0.5)},
                                       output_as_string=False, print_detailed=False)
results["restored"] = [a is b for a, b in zip(originals, [F.linear, F.conv2d, F.relu, torch.matmul,
                                                           torch.Tensor.matmul, torch.add, torch.Tensor.add,
                                                           torch.einsum, F.softmax])]
results["hooks_left"] = [(len(m._forward_hooks), len(m._forward_pre_hooks)) for m in attention.modules()]
results["output"] = attention(tokens).tolist()
emit(results)
