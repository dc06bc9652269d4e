"""TorchOpt: functional optimizers (optax-style init/update/apply_updates over parameter pytrees, with
functorch's make_functional), chained transforms and schedules, the torch.optim-like wrappers, the
differentiable MetaSGD/MetaAdam inner loops with gradients through them to the meta-parameters, state
extraction and recovery, FuncOptimizer, and implicit differentiation (custom_root with a CG solve)."""
import warnings

import functorch
import torch
import torchopt
from torch import nn

from _common import data, emit, fill

warnings.simplefilter("ignore")
torch.set_default_dtype(torch.float64)
x, y = data(8, 4), data(8, 2, seed=2)
results = {}


def net():
    return fill(nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 2)), scale=0.4)


# functional optimizers on functorch's functional model
model = net()
fmodel, params = functorch.make_functional(model)
results["param_shapes"] = [list(p.shape) for p in params]
for name, optimizer in [("adam", torchopt.adam(1e-2)), ("sgd", torchopt.sgd(0.1, momentum=0.9, nesterov=True)),
                        ("adamw", torchopt.adamw(1e-2, weight_decay=0.1)), ("rmsprop", torchopt.rmsprop(1e-2)),
                        ("chain", torchopt.chain(torchopt.clip.clip_grad_norm(0.5), torchopt.adam(1e-2))),
                        ("schedule", torchopt.adam(torchopt.schedule.linear_schedule(1e-2, 1e-3, 3, 1)))]:
    state = optimizer.init(params)
    current = tuple(p.detach().clone().requires_grad_() for p in params)
    losses = []
    for _ in range(4):
        loss = nn.functional.mse_loss(fmodel(current, x), y)
        grads = torch.autograd.grad(loss, current)
        updates, state = optimizer.update(grads, state, params=current, inplace=False)
        current = torchopt.apply_updates(current, updates, inplace=False)
        losses.append(loss.item())
    results[f"functional_{name}"] = [losses, [p.detach() for p in current]]

# the torch.optim-like wrapper
model = net()
optimizer = torchopt.Adam(model.parameters(), lr=1e-2)
losses = []
for _ in range(4):
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
results["torch_like"] = [losses, [p.detach() for p in model.parameters()]]

# differentiable inner loops: the meta-parameter is a learnable input scale
for name, make in [("meta_sgd", lambda m: torchopt.MetaSGD(m, lr=0.1)),
                   ("meta_adam", lambda m: torchopt.MetaAdam(m, lr=0.05))]:
    model = net()
    scale = torch.tensor(1.5, requires_grad=True)
    inner = make(model)
    snapshot = torchopt.extract_state_dict(model, by="reference")
    optimizer_snapshot = torchopt.extract_state_dict(inner, by="reference")
    for _ in range(3):
        inner_loss = nn.functional.mse_loss(model(x * scale), y)
        inner.step(inner_loss)
    outer = nn.functional.mse_loss(model(x), y)
    outer.backward()
    results[name] = [inner_loss.item(), outer.item(), scale.grad, [p.detach() for p in model.parameters()]]
    torchopt.recover_state_dict(model, snapshot)
    torchopt.recover_state_dict(inner, optimizer_snapshot)
    torchopt.stop_gradient(model)
    torchopt.stop_gradient(inner)
    results[name + "_recovered"] = [nn.functional.mse_loss(model(x), y).item(),
                                    [p.requires_grad for p in model.parameters()]]

# FuncOptimizer: a loss-driven functional optimizer over a parameter tuple
fmodel, params = functorch.make_functional(net())
func_optimizer = torchopt.FuncOptimizer(torchopt.adam(1e-2))
for _ in range(3):
    loss = nn.functional.mse_loss(fmodel(params, x), y)
    params = func_optimizer.step(loss, params)
results["func_optimizer"] = [loss.item(), [p.detach() for p in params]]

# implicit differentiation: ridge regression solved in closed form, its gradient through the optimality
# condition with respect to the regularisation weight
features, targets = data(10, 3, seed=4), data(10, seed=5)


def ridge_objective(w, lam):
    return 0.5 * ((features @ w - targets) ** 2).mean() + 0.5 * lam * (w ** 2).sum()


def optimality(w, lam):
    return functorch.grad(ridge_objective, argnums=0)(w, lam)


@torchopt.diff.implicit.custom_root(optimality, argnums=1, solve=torchopt.linear_solve.solve_cg(ridge=0.0,
                                                                                                 maxiter=50))
def ridge_solution(init_w, lam):
    n = features.shape[0]
    a = features.T @ features / n + lam * torch.eye(3)
    return torch.linalg.solve(a, features.T @ targets / n)


lam = torch.tensor(0.3, requires_grad=True)
w = ridge_solution(torch.zeros(3), lam)
(w ** 2).sum().backward()
results["implicit"] = [w.detach(), lam.grad]
emit(results)
