"""SHAP's PyTorch explainers on small float64 models: DeepExplainer (DeepLIFT multipliers written into
gradients by full backward hooks on every leaf module, interim values saved by forward hooks) and
GradientExplainer (expected gradients along seeded interpolation paths), on whole inputs, on an interim
layer's input, with several inputs and ranked outputs."""
import numpy as np
import shap
import torch
from torch import nn

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)  # GradientExplainer makes its sample buffers in the default dtype


class Convolutional(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.Conv2d(4, 3, 3, padding=1), nn.ELU(), nn.AvgPool2d(1))
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.3), nn.Linear(27, 6), nn.Softplus(),
                                  nn.Linear(6, 3), nn.Sigmoid())

    def forward(self, x):
        return self.head(self.features(x))


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.left = nn.Sequential(nn.Linear(4, 5), nn.Tanh())
        self.right = nn.Sequential(nn.Linear(3, 5), nn.LeakyReLU(0.2))
        self.out = nn.Sequential(nn.Linear(10, 4), nn.GELU(), nn.Linear(4, 2))

    def forward(self, a, b):
        return self.out(torch.cat([self.left(a), self.right(b)], dim=1))


class Sequence1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv1d(2, 4, 3, padding=1), nn.BatchNorm1d(4), nn.SELU(), nn.MaxPool1d(2),
                                  nn.ConvTranspose1d(4, 3, 2, stride=2), nn.Softplus(), nn.AdaptiveAvgPool1d(4),
                                  nn.Flatten(), nn.Linear(12, 5), nn.Softmax(dim=1))

    def forward(self, x):
        return self.body(x)


class FunctionalRelu(nn.Module):
    """torch.relu called in forward, not as a module: DeepExplainer hooks see no ReLU to rewrite."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 6)
        self.b = nn.Linear(6, 2)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def conv_model():
    model = fill(Convolutional(), seed=3)
    with torch.no_grad():   # batch-norm statistics that are not the identity
        model.features[1].running_mean.copy_(data(4, seed=5) * 0.1)
        model.features[1].running_var.copy_(data(4, seed=6).abs() + 0.5)
    return model.eval()


def arrays(values):
    if isinstance(values, tuple):
        return [arrays(v) for v in values]
    if isinstance(values, list):
        return [arrays(v) for v in values]
    if isinstance(values, torch.Tensor):
        return values.tolist()
    return np.asarray(values).tolist()


def hooks(model):
    return [(len(m._forward_hooks), len(m._backward_hooks)) for m in model.modules()]


results = {}
model = conv_model()
background, explained = data(6, 2, 6, 6, seed=2), data(3, 2, 6, 6, seed=4)
deep = shap.DeepExplainer(model, background)
results["deep_expected"] = arrays(deep.expected_value)
results["deep"] = arrays(deep.shap_values(explained))
values, ranks = deep.shap_values(explained, ranked_outputs=2, output_rank_order="max_abs",
                                   check_additivity=False)  # shap checks ranked outputs against the wrong columns
results["deep_ranked"] = [arrays(values), arrays(ranks)]
results["deep_hooks_left"] = hooks(model)
results["deep_parameters"] = [name for name, _ in model.named_parameters()]

interim = shap.DeepExplainer((model, model.head[2]), background)
results["deep_interim"] = arrays(interim.shap_values(explained[:2]))

two = fill(TwoInputs(), seed=7).eval()
pair_background = [data(5, 4, seed=8), data(5, 3, seed=9)]
pair = [data(2, 4, seed=10), data(2, 3, seed=11)]
deep_two = shap.DeepExplainer(two, pair_background)
results["deep_two_inputs"] = arrays(deep_two.shap_values(pair))
results["deep_two_expected"] = arrays(deep_two.expected_value)

gradient = shap.GradientExplainer(model, background, batch_size=7)
results["gradient"] = arrays(gradient.shap_values(explained[:2], nsamples=12, rseed=5))
values, variances = gradient.shap_values(explained[:1], nsamples=9, rseed=2, return_variances=True)
results["gradient_variances"] = [arrays(values), arrays(variances)]
values, ranks = gradient.shap_values(explained[:2], nsamples=8, ranked_outputs=1, rseed=3)
results["gradient_ranked"] = [arrays(values), arrays(ranks)]

layer_gradient = shap.GradientExplainer((model, model.features[4]), background)
results["gradient_interim"] = arrays(layer_gradient.shap_values(explained[:2], nsamples=6, rseed=1))
gradient_two = shap.GradientExplainer(two, pair_background, batch_size=4)
results["gradient_two_inputs"] = arrays(gradient_two.shap_values(pair, nsamples=10, rseed=8))

sequence = fill(Sequence1d(), seed=12).eval()
sequence_background, sequence_explained = data(5, 2, 8, seed=13), data(3, 2, 8, seed=14)
results["deep_1d"] = arrays(shap.DeepExplainer(sequence, sequence_background).shap_values(sequence_explained,
                                                                                           check_additivity=False))
results["deep_1d_interim"] = arrays(shap.DeepExplainer((sequence, sequence.body[4]), sequence_background)
                                    .shap_values(sequence_explained[:2], check_additivity=False))
smoothed = shap.GradientExplainer(sequence, sequence_background, local_smoothing=0.1)
torch.manual_seed(0)   # the smoothing noise comes from torch's generator
results["gradient_smoothed"] = arrays(smoothed.shap_values(sequence_explained[:2], nsamples=6, rseed=4))
try:   # the additivity check fails: the functional ReLU keeps its plain gradient
    shap.DeepExplainer(fill(FunctionalRelu(), seed=15), data(4, 4, seed=16)).shap_values(data(2, 4, seed=17))
except AssertionError as error:
    results["functional_relu"] = [float(part.split(": ")[1]) for part in str(error).split(" - ")[-2:]]
results["hooks_left"] = hooks(model) + hooks(two) + hooks(sequence)
emit(results)
