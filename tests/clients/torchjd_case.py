"""TorchJD Jacobian descent: autojac's backward/mtl_backward (Jacobians by batched vector-Jacobian products,
vmap over the identity), jac_to_grad with many aggregators, and autogram's Engine (Gramians of the
per-sample Jacobians gathered by module hooks) with weightings, on small float64 models."""
import torch
from torch import nn
from torchjd import aggregation as agg
from torchjd.autogram import Engine
from torchjd.autojac import backward, jac, jac_to_grad, mtl_backward

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)
results = {}
x, y = data(8, 5), data(8, 2, seed=2)


def make_model():
    return fill(nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 2)))


# (UPGrad, DualProj and CAGrad need quadprog or cvxpy solvers, compiled extras)
AGGREGATORS = {"Mean": agg.Mean(), "Sum": agg.Sum(), "MGDA": agg.MGDA(), "PCGrad": agg.PCGrad(), "IMTLG": agg.IMTLG(),
               "AlignedMTL": agg.AlignedMTL(),
               "Constant": agg.Constant(torch.tensor([0.3, 0.7])),
               "GradVac": agg.GradVac(), "ConFIG": agg.ConFIG()}
for name, aggregator in AGGREGATORS.items():
    model = make_model()
    out = model(x)
    losses = [((out[:, 0] - y[:, 0]) ** 2).mean(), ((out[:, 1] - y[:, 1]) ** 2).mean()]
    backward(losses)
    jacobians = [p.jac.clone() for p in model.parameters()]
    weights = jac_to_grad(model.parameters(), aggregator)
    results[name] = {"jacobians": jacobians, "grads": [p.grad for p in model.parameters()], "weights": weights}

# multi-task: a shared trunk and two heads
trunk = fill(nn.Sequential(nn.Linear(5, 6), nn.Tanh()), seed=3)
heads = [fill(nn.Linear(6, 1), seed=4), fill(nn.Linear(6, 1), seed=5)]
features = trunk(x)
task_losses = [nn.functional.mse_loss(head(features).squeeze(1), y[:, i]) for i, head in enumerate(heads)]
mtl_backward(task_losses, features)
results["mtl"] = {"trunk_jac": [p.jac for p in trunk.parameters()],
                  "heads": [p.grad for head in heads for p in head.parameters()]}
results["mtl_aggregated"] = jac_to_grad(trunk.parameters(), agg.MGDA())
results["mtl_trunk_grads"] = [p.grad for p in trunk.parameters()]

point = torch.tensor([1.0, 2.0, -0.5], requires_grad=True)
results["jac"] = jac([point.sin() * 2, (point ** 2).sum()], [point])

# autogram: Gramian of the per-sample Jacobians through hooks, then a weighted backward
model = make_model()
engine = Engine(model, batch_dim=0)
losses = nn.functional.mse_loss(model(x), y, reduction="none").sum(1)
gramian = engine.compute_gramian(losses)
weights = agg.IMTLGWeighting()(gramian)
losses.backward(weights)
results["autogram"] = {"gramian": gramian, "weights": weights, "grads": [p.grad for p in model.parameters()],
                       "hooks": [len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules()]}
# (an Engine with batch_dim=None is left out: it vmaps a backward whose module hooks count the calls;
# torch's vmap runs that backward once for the batch, hookgrad's once per slice)
emit(results)
