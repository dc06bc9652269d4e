"""hessian-eigenthings: Hessian (double backward, micro-batched, finite differences), GGN (torch.func jvp/vjp)
and empirical Fisher (vmap of grad) operators; power iteration with deflation, Lanczos, Hutchinson and
Hutch++ traces and the spectral density, on a small float64 network."""
import torch
from torch import nn

import hessian_eigenthings as he

from _common import data, emit, fill


def model():
    return fill(nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 5), nn.Softplus(), nn.Linear(5, 3)).double(),
                seed=11)


inputs = data(12, 4, seed=12)
targets = torch.tensor([0, 1, 2, 1, 0, 2, 2, 1, 0, 0, 1, 2])
criterion = nn.CrossEntropyLoss()
results = {}

network = model()
batches = [(inputs[:6], targets[:6]), (inputs[6:], targets[6:])]
operators = {
    "hessian": he.HessianOperator(network, batches, he.supervised_loss(criterion)),
    "hessian_microbatched": he.HessianOperator(network, batches, he.supervised_loss(criterion), microbatch_size=3,
                                               microbatch_unsafe=True),
    "hessian_finite_difference": he.HessianOperator(network, batches, he.supervised_loss(criterion),
                                                    method="finite_difference"),
    "hessian_last_layer": he.HessianOperator(network, batches, he.supervised_loss(criterion),
                                             param_filter=he.match_names("4.*")),
    "ggn": he.GGNOperator(network, batches, he.supervised_forward, he.supervised_loss_of_output(criterion)),
    "fisher": he.EmpiricalFisherOperator(network, batches, he.supervised_per_sample_loss(criterion)),
}
probe = data(operators["hessian"].size, seed=13).reshape(-1)
for name, operator in operators.items():
    results[f"{name}_size"] = operator.size
    results[f"{name}_matvec"] = operator @ probe[:operator.size]

hessian = operators["hessian"]
top = he.deflated_power_iteration(hessian, k=2, max_iter=60, tol=1e-9, seed=1)
results["power_iteration"] = [top.eigenvalues, top.iterations, top.converged]
ritz = he.lanczos(hessian, k=3, max_iter=12, seed=2)
results["lanczos"] = [ritz.eigenvalues, ritz.residuals]
results["lanczos_smallest"] = he.lanczos(operators["ggn"], k=2, max_iter=10, which="SA", seed=3).eigenvalues
results["hutchinson"] = he.hutchinson(hessian, num_samples=5, seed=4).estimate
results["hutch_plus_plus"] = he.trace(operators["fisher"], num_matvecs=9, seed=5).estimate
density = he.spectral_density(hessian, num_runs=2, lanczos_steps=8, num_grid_points=40, seed=6)
results["density"] = [density.grid, density.density]
emit(results)
