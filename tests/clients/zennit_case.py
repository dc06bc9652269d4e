"""Zennit's layer-wise relevance propagation: rules applied through forward hooks that hang gradient
hooks on autograd nodes (grad_fn.register_hook), composites with a batch-norm canonizer, and its
attributors (Gradient, SmoothGrad, IntegratedGradients, Occlusion) on a small CNN and an MLP."""

import torch
from torch import nn

from _common import data, drop_resnet_stand_in, emit, fill, stand_in_resnet_blocks


stand_in_resnet_blocks()
import zennit.torchvision  # noqa: E402  (imported here, with the stand-in, and then the stand-in goes)
from zennit.attribution import Gradient, IntegratedGradients, Occlusion, SmoothGrad  # noqa: E402
from zennit.canonizers import SequentialMergeBatchNorm  # noqa: E402
from zennit.composites import (EpsilonAlpha2Beta1, EpsilonGammaBox, EpsilonPlusFlat, ExcitationBackprop,  # noqa: E402
                               GuidedBackprop, NameMapComposite)
from zennit.core import Composite  # noqa: E402
from zennit.rules import Epsilon, Flat, Gamma, Norm, Pass, WSquare, ZPlus  # noqa: E402

drop_resnet_stand_in()


def cnn():
    model = nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 8, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2),
        nn.Flatten(), nn.Linear(8 * 2 * 2, 16), nn.ReLU(), nn.Linear(16, 4))
    model = fill(model.double(), seed=7)
    model[1].running_mean.copy_(torch.linspace(-0.2, 0.3, 6, dtype=torch.float64))
    model[1].running_var.copy_(torch.linspace(0.5, 1.5, 6, dtype=torch.float64))
    return model.eval()


def mlp():
    return fill(nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 6), nn.ReLU(), nn.Linear(6, 3)).double(),
                seed=8).eval()


images = data(2, 3, 8, 8, seed=3)
target = torch.eye(4, dtype=torch.float64)[[1, 3]]
canonizers = [SequentialMergeBatchNorm()]
results = {}

composites = {
    "epsilon_plus_flat": EpsilonPlusFlat(canonizers=canonizers),
    "epsilon_gamma_box": EpsilonGammaBox(low=-3.0, high=3.0, canonizers=canonizers),
    "epsilon_alpha2_beta1": EpsilonAlpha2Beta1(canonizers=canonizers),
    "guided_backprop": GuidedBackprop(),
    "excitation_backprop": ExcitationBackprop(),
    "none": None,
}
for name, composite in composites.items():
    model = cnn()
    reference = model(images)
    with Gradient(model=model, composite=composite) as attributor:
        out, relevance = attributor(images.clone(), target)
    # the canonizer merges batch norm into the convolution only while attributing
    after = model(images)
    results[name] = {"out": out, "relevance": relevance, "restored": bool(torch.equal(reference, after)),
                     "hooks_left": sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())}

model = cnn()
named = NameMapComposite([(["0"], ZPlus()), (["4"], Gamma(gamma=0.5)), (["8"], Epsilon(epsilon=0.1)),
                          (["10"], Epsilon()), (["3"], Norm()), (["6"], Norm())], canonizers=canonizers)
with Gradient(model=model, composite=named) as attributor:
    results["name_map"] = attributor(images, target)

# a hand-made composite: rules chosen per module by a function of (context, name, module)
rule_for = {nn.Linear: lambda: Flat(), nn.Conv2d: lambda: WSquare(), nn.Tanh: lambda: Pass()}
custom = Composite(module_map=lambda ctx, name, module: rule_for.get(type(module), lambda: None)())
network = mlp()
inputs = data(4, 5, seed=9).requires_grad_()
with custom.context(network) as modified:
    out = modified(inputs)
    relevance, = torch.autograd.grad(out, inputs, torch.ones_like(out))
results["custom_composite"] = [out, relevance]

model = cnn()
epsilon_plus = EpsilonPlusFlat(canonizers=canonizers)
with SmoothGrad(model=model, composite=epsilon_plus, noise_level=0.1, n_iter=4) as attributor:
    torch.manual_seed(0)
    results["smoothgrad"] = attributor(images, target)  # the noise: torch's generator, seeded
with IntegratedGradients(model=model, composite=None, n_iter=5) as attributor:
    results["integrated_gradients"] = attributor(images, target)
with Occlusion(model=model, composite=None, window=(3, 4, 4), stride=(3, 4, 4)) as attributor:
    results["occlusion"] = attributor(images, lambda out: out[:, :1])

emit(results)
