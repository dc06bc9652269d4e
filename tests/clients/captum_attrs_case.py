"""Captum's other attribution families on a small float64 CNN: gradient rules through backward hooks
(GuidedBackprop, Deconvolution, GuidedGradCam, LRP), neuron and layer methods, sampling methods with a
seeded generator (GradientShap, NoiseTunnel) and perturbation methods (Occlusion, FeatureAblation)."""
import numpy as np
import torch
from torch import nn
from captum.attr import (LRP, DeepLift, DeepLiftShap, InternalInfluence, LayerConductance, NeuronIntegratedGradients, Deconvolution, FeatureAblation, GradientShap, GuidedBackprop, GuidedGradCam,
                         InputXGradient, IntegratedGradients, LayerActivation, LayerDeepLift,
                         LayerGradientXActivation, LayerIntegratedGradients, LayerLRP, NeuronConductance,
                         NeuronDeconvolution, NeuronGradient, NeuronGuidedBackprop, NoiseTunnel, Occlusion,
                         Saliency, ShapleyValueSampling)

from _common import data, emit, fill


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(3, 4, 2)
        self.relu2 = nn.ReLU()
        self.flat = nn.Flatten()
        self.fc = nn.Linear(4, 5)
        self.relu3 = nn.ReLU()
        self.out = nn.Linear(5, 3)

    def forward(self, x):
        x = self.pool(self.relu(self.conv(x)))
        x = self.flat(self.relu2(self.conv2(x)))
        return self.out(self.relu3(self.fc(x)))


class Dense(nn.Module):
    """Linear and ReLU layers only (LRP's default rules cover these)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 5)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(5, 4)
        self.relu2 = nn.ReLU()
        self.fc3 = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc3(self.relu2(self.fc2(self.relu1(self.fc1(x)))))


model = fill(Net().double(), scale=0.6).eval()
x = data(2, 2, 6, 6)
dense = fill(Dense().double(), seed=3).eval()
v = data(3, 6, seed=4)
# DeepLift's rescale rule on sigmoid, tanh, ELU and softmax nonlinearities
smooth = fill(nn.Sequential(nn.Linear(6, 5), nn.Sigmoid(), nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 4), nn.ELU(),
                            nn.Linear(4, 3), nn.Softmax(dim=1)).double(), seed=5).eval()
results = {
    "guided_backprop": GuidedBackprop(model).attribute(x, target=1),
    "deconvolution": Deconvolution(model).attribute(x, target=2),
    "guided_gradcam": GuidedGradCam(model, model.conv2).attribute(x, target=0),
    "input_x_gradient": InputXGradient(model).attribute(x, target=1),
    "neuron_gradient": NeuronGradient(model, model.fc).attribute(x, neuron_selector=2),
    "neuron_guided_backprop": NeuronGuidedBackprop(model, model.conv2).attribute(x, neuron_selector=(1, 0, 0)),
    "neuron_deconvolution": NeuronDeconvolution(model, model.fc).attribute(x, neuron_selector=3),
    "neuron_conductance": NeuronConductance(model, model.fc).attribute(x, neuron_selector=1, target=2, n_steps=5),
    "layer_activation": LayerActivation(model, [model.conv, model.fc]).attribute(x),
    "layer_grad_x_act": LayerGradientXActivation(model, model.conv2).attribute(x, target=2),
    "layer_integrated": LayerIntegratedGradients(model, model.conv).attribute(x, target=1, n_steps=6),
    "layer_deeplift": LayerDeepLift(model, model.conv2).attribute(x, target=0, return_convergence_delta=True),
    "lrp": LRP(dense).attribute(v, target=1, return_convergence_delta=True),
    "layer_lrp": LayerLRP(dense, dense.fc2).attribute(v, target=2),
    "occlusion": Occlusion(model).attribute(x, target=1, sliding_window_shapes=(1, 3, 3), strides=(1, 2, 2)),
    "feature_ablation": FeatureAblation(model).attribute(
        x, target=2, feature_mask=torch.arange(4).repeat_interleave(18).reshape(1, 2, 6, 6) % 4),
    "internal_influence": InternalInfluence(model, model.conv2).attribute(x, target=1, n_steps=5),
    "layer_conductance_conv": LayerConductance(model, model.conv).attribute(x, target=0, n_steps=5),
    "neuron_integrated": NeuronIntegratedGradients(model, model.conv).attribute(x, neuron_selector=(2, 1, 1),
                                                                                n_steps=5),
    "deeplift_smooth": DeepLift(smooth).attribute(v, baselines=v * 0.1, target=1, return_convergence_delta=True),
    "deepliftshap_smooth": DeepLiftShap(smooth).attribute(v, baselines=data(4, 6, seed=8) * 0.2, target=0),
}
torch.manual_seed(0)
results["shapley_sampling"] = ShapleyValueSampling(dense).attribute(
    v, target=0, feature_mask=torch.tensor([[0, 0, 1, 1, 2, 2]]), n_samples=3)
torch.manual_seed(1)
np.random.seed(1)  # GradientShap draws baselines and scales with NumPy
results["gradient_shap"] = GradientShap(model).attribute(x, baselines=data(3, 2, 6, 6, seed=6) * 0.1, target=1,
                                                         n_samples=4, stdevs=0.1, return_convergence_delta=True)
torch.manual_seed(2)
results["smoothgrad"] = NoiseTunnel(Saliency(model)).attribute(x, nt_type="smoothgrad", nt_samples=4, stdevs=0.2,
                                                               target=0)
torch.manual_seed(3)
results["smoothgrad_sq_ig"] = NoiseTunnel(IntegratedGradients(dense)).attribute(
    v, nt_type="smoothgrad_sq", nt_samples=3, stdevs=0.1, target=2, n_steps=4)
torch.manual_seed(4)
results["vargrad"] = NoiseTunnel(Saliency(dense)).attribute(v, nt_type="vargrad", nt_samples=3, target=1)
emit(results)
