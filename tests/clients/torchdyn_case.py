"""torchdyn neural differential equations on float64 data: NeuralODE with fixed-step (Euler, midpoint, RK4)
and adaptive (Dormand-Prince, Tsitouras) solvers, gradients by backpropagation through the solver, by the
adjoint and the interpolated adjoint (its own autograd Functions over torch.autograd.grad), trajectories,
second-order and augmented systems with depth concatenation, odeint, a continuous normalizing flow with
exact and Hutchinson traces, a multiple-shooting layer; forward hooks on the vector field count calls."""
import warnings

import torch
from torch import nn
from torchdyn.core import MultipleShootingLayer, NeuralODE
from torchdyn.models import CNF, autograd_trace, hutch_trace
from torchdyn.nn import Augmenter, DepthCat
from torchdyn.numerics import odeint

from _common import data, emit, fill

warnings.simplefilter("ignore")
torch.set_default_dtype(torch.float64)
x, target = data(6, 2), data(6, 2, seed=2)
t_span = torch.linspace(0, 1, 5)
results = {}


def field(inputs=2, outputs=2):
    return fill(nn.Sequential(nn.Linear(inputs, 8), nn.Tanh(), nn.Linear(8, outputs)), scale=0.4)


for solver in ("euler", "midpoint", "rk4", "dopri5", "tsit5"):
    for sensitivity in ("autograd", "adjoint", "interpolated_adjoint"):
        if sensitivity == "interpolated_adjoint" and solver not in ("dopri5", "tsit5"):
            continue
        vector_field = field()
        calls = []
        vector_field.register_forward_hook(lambda m, i, o: calls.append(tuple(o.shape)))
        model = NeuralODE(vector_field, solver=solver, sensitivity=sensitivity, atol=1e-6, rtol=1e-6,
                          atol_adjoint=1e-6, rtol_adjoint=1e-6)
        t_eval, trajectory = model(x, t_span)
        loss = ((trajectory[-1] - target) ** 2).mean()
        loss.backward()
        results[f"{solver}_{sensitivity}"] = {"t_eval": t_eval, "trajectory": trajectory, "loss": loss,
                                              "grads": [p.grad for p in vector_field.parameters()],
                                              "calls": len(calls), "nfe": model.vf.nfe}

# trajectory without the returned times; a second-order system; an augmented, depth-aware field
model = NeuralODE(field(), solver="rk4", return_t_eval=False)
results["trajectory"] = model.trajectory(x, torch.linspace(0, 2, 7))
second_order = NeuralODE(field(4, 2), order=2, solver="rk4")
_, trajectory = second_order(torch.cat([x, data(6, 2, seed=3)], 1), t_span)
results["second_order"] = trajectory
augmented = nn.Sequential(Augmenter(augment_idx=1, augment_dims=2),
                          NeuralODE(nn.Sequential(DepthCat(1), fill(nn.Linear(5, 4), scale=0.3), nn.Tanh()),
                                    solver="dopri5", return_t_eval=False, atol=1e-7, rtol=1e-7))
trajectory = augmented(x)
trajectory[-1].sum().backward()
results["augmented"] = {"trajectory": trajectory, "grads": [p.grad for p in augmented.parameters()]}

# odeint on a plain function with its time argument, and a stiff-ish linear system with an adaptive solver
results["odeint"] = odeint(lambda t, z: -z * torch.cos(t), x, t_span, solver="tsit5", atol=1e-8, rtol=1e-8)
matrix = torch.tensor([[-2.0, 1.0], [0.5, -3.0]])
results["linear"] = odeint(lambda t, z: z @ matrix.T, x, torch.linspace(0, 3, 4), solver="dopri5",
                           atol=1e-9, rtol=1e-9)

# continuous normalizing flows: the exact trace by autograd, Hutchinson's estimate with seeded noise
for name, estimator in (("exact", autograd_trace), ("hutchinson", hutch_trace)):
    torch.manual_seed(0)
    noise = torch.distributions.Normal(torch.zeros(2), torch.ones(2))
    cnf = CNF(field(), trace_estimator=estimator, noise_dist=noise if name == "hutchinson" else None)
    flow = NeuralODE(cnf, solver="rk4", sensitivity="autograd", return_t_eval=False)
    if name == "hutchinson":
        cnf.noise = noise.sample(torch.Size([6]))
    states = flow(torch.cat([torch.zeros(6, 1), x], 1), torch.linspace(0, 1, 3))
    log_density = states[-1, :, 0]
    log_density.sum().backward()
    results[f"cnf_{name}"] = {"states": states, "grads": [p.grad for p in cnf.parameters()]}

# multiple shooting: parallel-in-time solves refined by root finding
for solver in ("zero", "ieuler"):
    shooting = MultipleShootingLayer(field(), solver=solver, maxiter=3, fine_steps=4)
    _, trajectory = shooting(x, torch.linspace(0, 1, 6))
    trajectory[-1].pow(2).sum().backward()
    results[f"shooting_{solver}"] = {"trajectory": trajectory, "grads": [p.grad for p in shooting.parameters()]}
emit(results)
