"""Quantus XAI metrics over Captum attributions of a small float64 CNN: faithfulness, robustness,
localisation, complexity, randomisation (layers re-initialised under a seed) and axiomatic metrics,
each re-explaining perturbed inputs through quantus.explain (Captum's hooks and gradients)."""
import warnings

import numpy as np
import torch
from torch import nn

from _common import data, drop_resnet_stand_in, emit, fill, stand_in_resnet_blocks

warnings.filterwarnings("ignore")
torch.set_default_dtype(torch.float64)   # quantus builds its model inputs with torch.Tensor(array)


stand_in_resnet_blocks()
import quantus  # noqa: E402
from captum.attr import IntegratedGradients, Saliency  # noqa: E402

drop_resnet_stand_in()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 3, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(3, 4, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(64, 3)

    def forward(self, x):
        return self.fc(self.flatten(self.relu2(self.conv2(self.pool(self.relu1(self.conv1(x)))))))


def scores(values):
    if isinstance(values, dict):
        return {str(k): scores(v) for k, v in values.items()}
    if isinstance(values, (list, tuple)):
        return [scores(v) for v in values]
    if isinstance(values, np.ndarray):
        return values.tolist()
    if isinstance(values, (np.floating, np.integer, np.bool_)):
        return values.item()
    return values


model = fill(Net(), seed=2).eval()
inputs = data(4, 1, 8, 8, seed=3)
x_batch = inputs.numpy()
y_batch = model(inputs).argmax(1).numpy()
a_batch = Saliency(model).attribute(inputs, target=torch.tensor(y_batch), abs=True).sum(1).numpy()
a_ig = IntegratedGradients(model).attribute(inputs, target=torch.tensor(y_batch), n_steps=8).sum(1).detach().numpy()
s_batch = np.zeros((4, 1, 8, 8))
s_batch[:, :, 2:6, 1:5] = 1
common = dict(model=model, x_batch=x_batch, y_batch=y_batch, device="cpu")
saliency = dict(explain_func=quantus.explain, explain_func_kwargs={"method": "Saliency"})
results = {"a_batch": a_batch.tolist(), "a_ig": a_ig.tolist()}


def run(name, metric, attributions=a_batch, **kwargs):
    np.random.seed(0)
    torch.manual_seed(0)
    results[name] = scores(metric(**common, a_batch=attributions, **kwargs))


run("faithfulness_correlation", quantus.FaithfulnessCorrelation(nr_runs=5, subset_size=8, perturb_baseline="black",
                                                                 similarity_func=quantus.similarity_func.correlation_pearson,
                                                                 abs=False, return_aggregate=False, disable_warnings=True))
run("pixel_flipping", quantus.PixelFlipping(features_in_step=8, perturb_baseline="uniform", disable_warnings=True))
run("monotonicity", quantus.Monotonicity(features_in_step=16, perturb_baseline="mean", disable_warnings=True))
run("region_perturbation", quantus.RegionPerturbation(patch_size=2, regions_evaluation=4, disable_warnings=True),
    attributions=a_ig)
run("max_sensitivity", quantus.MaxSensitivity(nr_samples=3, lower_bound=0.2, norm_numerator=quantus.norm_func.fro_norm,
                                              norm_denominator=quantus.norm_func.fro_norm,
                                              similarity_func=quantus.similarity_func.difference, abs=True,
                                              normalise=True, disable_warnings=True), **saliency)
run("avg_sensitivity", quantus.AvgSensitivity(nr_samples=3, lower_bound=0.1, disable_warnings=True),
    explain_func=quantus.explain, explain_func_kwargs={"method": "IntegratedGradients", "n_steps": 4})
run("local_lipschitz", quantus.LocalLipschitzEstimate(nr_samples=3, disable_warnings=True), **saliency)
run("relative_input_stability", quantus.RelativeInputStability(nr_samples=3, disable_warnings=True), **saliency)
run("pointing_game", quantus.PointingGame(disable_warnings=True), s_batch=s_batch)
run("attribution_localisation", quantus.AttributionLocalisation(disable_warnings=True), s_batch=s_batch)
run("relevance_rank", quantus.RelevanceRankAccuracy(disable_warnings=True), s_batch=s_batch)
run("top_k", quantus.TopKIntersection(k=10, disable_warnings=True), s_batch=s_batch)
run("sparseness", quantus.Sparseness(disable_warnings=True))
run("complexity", quantus.Complexity(disable_warnings=True))
run("mprt", quantus.MPRT(layer_order="bottom_up", similarity_func=quantus.similarity_func.correlation_spearman,
                         return_average_correlation=False, disable_warnings=True), **saliency)
run("random_logit", quantus.RandomLogit(num_classes=3, seed=1, disable_warnings=True), **saliency)
run("completeness", quantus.Completeness(disable_warnings=True), attributions=a_ig)
run("non_sensitivity", quantus.NonSensitivity(features_in_step=1, disable_warnings=True))
results["weights_untouched"] = [p.tolist() for p in model.parameters()] == [p.tolist() for p in fill(Net(), seed=2).parameters()]
emit(results)
