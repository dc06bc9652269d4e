"""Captum on an embedding + LSTM text classifier and the methods other cases leave out: layer integrated
gradients on the embedding, an interpretable embedding layer swapped in and out, layer activations of
the LSTM's tuple output, gradient SHAP and DeepLift-SHAP at layers and neurons, LRP with per-layer rules
(epsilon, gamma, alpha-beta, identity), feature permutation and ablation at layers and neurons, exact
Shapley values, KernelShap and Lime (scikit-learn and torch-trained interpretable models), and captum.metrics'
infidelity and sensitivity_max."""
import warnings

import numpy as np
import torch
from captum._utils.models.linear_model import SGDLinearRegression
from captum.attr import (LRP, DeepLift, FeaturePermutation, InputXGradient, IntegratedGradients, KernelShap,
                         LayerActivation, LayerDeepLiftShap, LayerFeatureAblation,
                         LayerGradientShap, LayerIntegratedGradients, Lime, NeuronDeepLift, NeuronDeepLiftShap,
                         NeuronFeatureAblation, NeuronGradientShap, Saliency, ShapleyValues,
                         configure_interpretable_embedding_layer, remove_interpretable_embedding_layer)
from captum.attr._utils.lrp_rules import Alpha1_Beta0_Rule, EpsilonRule, GammaRule, IdentityRule
from captum.metrics import infidelity, sensitivity_max
from torch import nn

from _common import data, emit, fill

warnings.simplefilter("ignore")


class TextNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8, padding_idx=0)
        self.lstm = nn.LSTM(8, 6, batch_first=True)
        self.fc = nn.Linear(6, 3)

    def forward(self, tokens):
        hidden, _ = self.lstm(self.emb(tokens))
        return self.fc(hidden[:, -1])


class Dense(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 5)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(5, 4)
        self.relu2 = nn.ReLU()
        self.fc3 = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc3(self.relu2(self.fc2(self.relu1(self.fc1(x)))))


text = fill(TextNet().double(), seed=2, scale=0.6).eval()
tokens = torch.tensor([[3, 7, 1, 12, 5, 9], [4, 4, 18, 2, 11, 6]])
pad = torch.zeros_like(tokens)
results = {}
lig = LayerIntegratedGradients(text, text.emb)
attr, delta = lig.attribute(tokens, baselines=pad, target=1, n_steps=16, return_convergence_delta=True)
results["text_lig"] = [attr, attr.sum(-1), delta]
results["text_lig_internal_batch"] = lig.attribute(tokens, baselines=pad, target=2, n_steps=10,
                                                   internal_batch_size=7)
results["text_layer_activation"] = LayerActivation(text, [text.emb, text.fc]).attribute(tokens)
interpretable = configure_interpretable_embedding_layer(text, "emb")
embedded = interpretable.indices_to_embeddings(tokens)
base_embedded = interpretable.indices_to_embeddings(pad)
results["text_ig_embeddings"] = IntegratedGradients(text).attribute(embedded, baselines=base_embedded, target=0,
                                                                    n_steps=12)
results["text_saliency"] = Saliency(text).attribute(embedded, target=2, abs=False)
results["text_input_x_gradient"] = InputXGradient(text).attribute(embedded, target=1)
remove_interpretable_embedding_layer(text, interpretable)
results["text_restored"] = text(tokens)

dense = fill(Dense().double(), seed=3).eval()
v = data(4, 6, seed=4)
refs = data(5, 6, seed=7) * 0.3
torch.manual_seed(0)
np.random.seed(0)  # GradientShap draws its baselines with NumPy
results["layer_gradient_shap"] = LayerGradientShap(dense, dense.fc2).attribute(v, baselines=refs, target=1,
                                                                               n_samples=6, stdevs=0.1)
torch.manual_seed(1)
np.random.seed(1)
results["neuron_gradient_shap"] = NeuronGradientShap(dense, dense.fc2).attribute(v, neuron_selector=2,
                                                                                 baselines=refs, n_samples=5)
results["layer_deeplift_shap"] = LayerDeepLiftShap(dense, dense.relu1).attribute(v, baselines=refs, target=0)
results["neuron_deeplift"] = NeuronDeepLift(dense, dense.relu2).attribute(v, neuron_selector=1, baselines=v * 0.1)
results["neuron_deeplift_shap"] = NeuronDeepLiftShap(dense, dense.relu2).attribute(v, neuron_selector=3,
                                                                                   baselines=refs)
results["deeplift_no_multiply"] = DeepLift(dense, multiply_by_inputs=False).attribute(v, baselines=v * 0.2,
                                                                                      target=2)

ruled = fill(Dense().double(), seed=8).eval()
ruled.fc1.rule = EpsilonRule(epsilon=1e-3)
ruled.fc2.rule = GammaRule(gamma=0.3)
ruled.fc3.rule = Alpha1_Beta0_Rule()
ruled.relu1.rule = IdentityRule()
lrp_attr, lrp_delta = LRP(ruled).attribute(v, target=1, return_convergence_delta=True)
results["lrp_rules"] = [lrp_attr, lrp_delta]

torch.manual_seed(2)
results["feature_permutation"] = FeaturePermutation(dense).attribute(v, target=0)
results["layer_feature_ablation"] = LayerFeatureAblation(dense, dense.fc2).attribute(v, target=1)
results["neuron_feature_ablation"] = NeuronFeatureAblation(dense, dense.fc2).attribute(
    v, neuron_selector=0, feature_mask=torch.tensor([[0, 0, 1, 1, 2, 2]]))
results["shapley_values"] = ShapleyValues(dense).attribute(v, target=2,
                                                           feature_mask=torch.tensor([[0, 0, 1, 2, 2, 3]]))

torch.manual_seed(3)
results["kernel_shap"] = KernelShap(dense).attribute(v[:1], target=1, n_samples=40,
                                                     feature_mask=torch.tensor([[0, 0, 1, 1, 2, 3]]))
torch.manual_seed(4)
lime = Lime(dense, interpretable_model=SGDLinearRegression())
# (captum trains this interpretable model in float32, whose sums differ from torch's in the last bits)
results["lime"] = [round(value, 5) for value in lime.attribute(v[1:2], target=0, n_samples=30).reshape(-1).tolist()]
torch.manual_seed(5)
results["lime_lasso"] = Lime(dense).attribute(  # (its default interpretable model: scikit-learn's Lasso)
    v[2:3], target=2, n_samples=25, feature_mask=torch.tensor([[0, 1, 1, 2, 2, 3]]))


def perturb(inputs):
    noise = torch.tensor(np.random.default_rng(11).standard_normal(tuple(inputs.shape))) * 0.05
    return noise, inputs - noise


saliency = Saliency(dense)
ig = IntegratedGradients(dense)
results["infidelity"] = infidelity(dense, perturb, v, ig.attribute(v, target=1, n_steps=10), target=1,
                                   n_perturb_samples=4)
torch.manual_seed(6)
results["sensitivity_max"] = [
    sensitivity_max(saliency.attribute, v, target=0, n_perturb_samples=3, perturb_radius=0.05),
    sensitivity_max(ig.attribute, v, target=0, n_steps=8, n_perturb_samples=3, perturb_radius=0.05)]
emit(results)
