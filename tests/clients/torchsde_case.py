"""torchsde stochastic differential equations of a small float64 neural SDE: Euler, Milstein, SRK and
reversible Heun solvers over a seeded Brownian interval, diagonal and general noise, gradients by
backpropagating through the solver and by the adjoint SDE (vector-Jacobian products at every step)."""
import torch
from torch import nn
import torchsde

from _common import emit, fill

torch.set_default_dtype(torch.float64)


class SDE(nn.Module):
    def __init__(self, noise_type, sde_type="ito"):
        super().__init__()
        self.noise_type, self.sde_type = noise_type, sde_type
        self.drift = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 3))
        self.diffusion = nn.Linear(3, 3 if noise_type == "diagonal" else 6)

    def f(self, t, y):
        return self.drift(y)

    def g(self, t, y):
        out = torch.sigmoid(self.diffusion(y)) * 0.3
        return out if self.noise_type == "diagonal" else out.view(-1, 3, 2)


y0 = torch.tensor([[0.1, -0.2, 0.3], [0.5, 0.0, -0.4]])
ts = torch.linspace(0, 1, 4)
results = {}
for name, noise, sde_type, method, brownian_size in (
        ("euler", "diagonal", "ito", "euler", 3), ("milstein", "diagonal", "ito", "milstein", 3),
        ("srk", "diagonal", "ito", "srk", 3), ("general", "general", "ito", "euler", 2),
        ("heun", "diagonal", "stratonovich", "reversible_heun", 3),
        ("midpoint", "diagonal", "stratonovich", "midpoint", 3)):
    sde = fill(SDE(noise, sde_type), scale=0.4)
    brownian = torchsde.BrownianInterval(t0=0.0, t1=1.0, size=(2, brownian_size), entropy=7, dtype=torch.float64,
                                         levy_area_approximation="space-time" if method == "srk" else "none")
    ys = torchsde.sdeint(sde, y0, ts, bm=brownian, method=method, dt=0.05)
    (ys[-1] ** 2).sum().backward()
    results[name] = {"ys": ys, "grads": [p.grad for p in sde.parameters()]}

sde = fill(SDE("diagonal", "stratonovich"), scale=0.4)
brownian = torchsde.BrownianInterval(t0=0.0, t1=1.0, size=(2, 3), entropy=11, dtype=torch.float64)
start = y0.clone().requires_grad_()
ys = torchsde.sdeint_adjoint(sde, start, ts, bm=brownian, method="reversible_heun", dt=0.05,
                             adjoint_method="adjoint_reversible_heun")
(ys[-1] ** 2).sum().backward()
results["adjoint"] = {"ys": ys, "grads": [p.grad for p in sde.parameters()], "y0": start.grad}
emit(results)
