"""entmax's sparse probability mappings (custom autograd Functions with classmethod forward/backward and
values kept on ctx): sparsemax, 1.5-entmax (sort-based, top-k), bisection entmax with a learned alpha,
normmax and budget bisection, their Fenchel-Young losses with ignored targets, module forms in a hooked
model, and torch.autograd.gradcheck of each."""
import torch
from torch import nn
import entmax

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)
X = data(4, 6) * 2
target = torch.tensor([0, 3, 5, 1])
results = {}


def value_and_grad(fn, *inputs):
    inputs = [t.detach().clone().requires_grad_(True) for t in inputs]
    out = fn(*inputs)
    weights = torch.linspace(-1.0, 2.0, out.numel()).reshape(out.shape)
    (out * weights).sum().backward()
    return {"out": out, "grads": [t.grad for t in inputs]}


MAPPINGS = {
    "sparsemax": lambda x: entmax.sparsemax(x, dim=-1),
    "sparsemax_dim0": lambda x: entmax.sparsemax(x, dim=0),
    "sparsemax_topk": lambda x: entmax.sparsemax(x, dim=-1, k=2),
    "entmax15": lambda x: entmax.entmax15(x, dim=-1),
    "entmax15_dim0_topk": lambda x: entmax.entmax15(x, dim=0, k=3),
    "entmax_bisect": lambda x: entmax.entmax_bisect(x, alpha=1.3, n_iter=40),
    "sparsemax_bisect": lambda x: entmax.sparsemax_bisect(x, n_iter=40),
    "normmax_bisect": lambda x: entmax.normmax_bisect(x, alpha=2, n_iter=40),
    "budget_bisect": lambda x: entmax.budget_bisect(x, budget=2, n_iter=40),
}
for name, fn in MAPPINGS.items():
    results[name] = value_and_grad(fn, X)
    results[name]["support"] = (results[name]["out"] > 0).sum(-1).tolist()

# alpha learned per row: the Function's backward returns a gradient for the alpha tensor too
alpha = torch.tensor([[1.2], [1.5], [1.8], [2.5]])
results["entmax_bisect_alpha"] = value_and_grad(lambda x, a: entmax.entmax_bisect(x, alpha=a, n_iter=40), X, alpha)

LOSSES = {
    "sparsemax_loss": entmax.SparsemaxLoss(reduction="sum"),
    "sparsemax_loss_topk": entmax.SparsemaxLoss(k=2, ignore_index=3),
    "entmax15_loss": entmax.Entmax15Loss(reduction="elementwise_mean"),
    "entmax15_loss_none": entmax.Entmax15Loss(ignore_index=5, reduction="none"),
    "sparsemax_bisect_loss": entmax.SparsemaxBisectLoss(n_iter=40),
    "entmax_bisect_loss": entmax.EntmaxBisectLoss(alpha=1.7, n_iter=40),
    "normmax_bisect_loss": entmax.NormmaxBisectLoss(alpha=3, n_iter=40),
}
for name, loss in LOSSES.items():
    results[name] = value_and_grad(lambda x: loss(x, target), X)

# the module forms as attention-like layers in a model; a forward hook records each one's support
model = fill(nn.Sequential(nn.Linear(6, 6), entmax.Entmax15(dim=-1), nn.Linear(6, 6), entmax.Sparsemax(dim=-1),
                           nn.Linear(6, 6), entmax.EntmaxBisect(alpha=1.6, n_iter=30), nn.Linear(6, 6)))
supports = []
handles = [m.register_forward_hook(lambda m, i, o: supports.append([type(m).__name__, (o > 0).sum().item()]))
           for m in model if not isinstance(m, nn.Linear)]
loss = entmax.Entmax15Loss()(model(X), target)
loss.backward()
results["model"] = {"loss": loss, "grads": [p.grad for p in model.parameters()], "supports": supports}
for handle in handles:
    handle.remove()

# the backward formulas against finite differences (torch's gradcheck runs the Functions both ways)
small = data(2, 5, seed=3)
results["gradcheck"] = {name: torch.autograd.gradcheck(fn, (small.clone().requires_grad_(True),), atol=1e-5)
                        for name, fn in (("sparsemax", entmax.sparsemax), ("entmax15", entmax.entmax15),
                                         ("entmax_bisect", lambda x: entmax.entmax_bisect(x, 1.4, n_iter=60)))}
emit(results)
