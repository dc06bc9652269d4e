"""curvlinops: curvature matrices of a small float64 network as linear operators: Hessian, GGN,
empirical Fisher, Monte-Carlo Fisher, Jacobians (matrix-free, through double backward and
torch.func), KFAC and EKFAC (Kronecker factors from forward pre-hooks and tensor hooks on layer
outputs, with a convolution), their inverses, and the randomized trace/diagonal estimators."""
import torch
from torch import nn

import curvlinops as cl

from _common import data, emit, fill


def mlp():
    return fill(nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)).double(), seed=31)


def cnn():
    return fill(nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 2 * 2, 3)).double(), seed=32)


inputs = data(8, 4, seed=33)
targets = torch.tensor([0, 1, 2, 1, 0, 2, 2, 1])
batches = [(inputs[:5], targets[:5]), (inputs[5:], targets[5:])]
model, loss = mlp(), nn.CrossEntropyLoss()
params = [p for p in model.parameters() if p.requires_grad]
size = sum(p.numel() for p in params)
vector = data(size, seed=34)
matrix = data(size, 3, seed=35)
results = {}

operators = {
    "hessian": cl.HessianLinearOperator(model, loss, params, batches),
    "ggn": cl.GGNLinearOperator(model, loss, params, batches),
    "empirical_fisher": cl.EFLinearOperator(model, loss, params, batches),
    "fisher_mc": cl.FisherMCLinearOperator(model, loss, params, batches, seed=3, mc_samples=2),
}
for name, operator in operators.items():
    results[name] = [operator @ vector, operator @ matrix, operator.shape if hasattr(operator, "shape") else None]
results["ggn_plus_hessian"] = (operators["ggn"] + 0.5 * operators["hessian"]) @ vector
results["gradient_and_loss"] = list(operators["hessian"].gradient_and_loss())

jacobian = cl.JacobianLinearOperator(model, params, [(inputs[:3], targets[:3])])
transposed = cl.TransposedJacobianLinearOperator(model, params, [(inputs[:3], targets[:3])])
results["jacobian"] = [jacobian @ vector, transposed @ data(9, seed=36)]

for fisher_type in ("mc", "type-2", "empirical"):
    kfac = cl.KFACLinearOperator(model, loss, params, batches, fisher_type=fisher_type, seed=5)
    results[f"kfac_{fisher_type}"] = [kfac @ vector,
                                      {name: [factor for factor in pair] for name, pair in
                                       {k: (kfac._input_covariances.get(k), kfac._gradient_covariances.get(k))
                                        for k in sorted(kfac._gradient_covariances)}.items()}]
    inverse = cl.KFACInverseLinearOperator(kfac, damping=1e-2)
    results[f"kfac_{fisher_type}_inverse"] = inverse @ vector

conv_model = cnn()
conv_params = list(conv_model.parameters())
images = data(6, 2, 4, 4, seed=37)
conv_batches = [(images, torch.tensor([0, 2, 1, 1, 0, 2]))]
conv_vector = data(sum(p.numel() for p in conv_params), seed=38)
for approx in ("expand", "reduce"):
    kfac = cl.KFACLinearOperator(conv_model, loss, conv_params, conv_batches, fisher_type="type-2", kfac_approx=approx)
    results[f"conv_kfac_{approx}"] = kfac @ conv_vector
ekfac = cl.EKFACLinearOperator(conv_model, loss, conv_params, conv_batches, fisher_type="type-2")
results["conv_ekfac"] = ekfac @ conv_vector

ggn = operators["ggn"]
results["cg_inverse"] = cl.CGInverseLinearOperator(operators["empirical_fisher"] + 0.5 * operators["ggn"],
                                                    max_iter=4, max_tridiag_iter=4) @ vector
results["neumann_inverse"] = cl.NeumannInverseLinearOperator(operators["ggn"], num_terms=20, scale=0.2) @ vector

torch.manual_seed(7)
results["hutchinson_trace"] = cl.hutchinson_trace(ggn, 6)
results["hutchpp_trace"] = cl.hutchpp_trace(ggn, 9)
results["xtrace"] = cl.xtrace(ggn, 8)
results["hutchinson_diag"] = cl.hutchinson_diag(ggn, 5)
results["xdiag"] = cl.xdiag(ggn, 8)
results["squared_frobenius"] = cl.hutchinson_squared_fro(ggn, 4)
emit(results)
