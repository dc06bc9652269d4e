"""ASDL (asdl, second-order optimisation): gradient makers that precondition the gradient with curvature
gathered by module hooks: K-FAC (exact, MC and empirical Fisher) and EK-FAC, full and diagonal natural
gradient, Shampoo, Kronecker PSGD, SENG, on a small MLP and a CNN, several training steps each; Fisher
matrices in Kronecker and diagonal form. (Its layer-wise natural gradient fails on torch too.) The loss is
nn.CrossEntropyLoss: ASDL looks for F.cross_entropy's "reduction" in its __code__.co_varnames, which
hookgrad's checking wrappers (def wrapper(*args, **kwargs)) do not show."""
import warnings

import asdl
import torch
from torch import nn

from _common import data, emit, fill

warnings.simplefilter("ignore")
torch.set_default_dtype(torch.float64)
x = data(12, 6)
labels = torch.tensor([i % 3 for i in range(12)])
images = data(6, 2, 5, 5, seed=3)
image_labels = torch.tensor([0, 1, 2, 0, 1, 2])
results = {}


def mlp():
    return fill(nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3)), scale=0.4)


def cnn():
    return fill(nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(27, 3)), scale=0.3)


def train(name, make_model, make_maker, inputs, targets, steps=3):
    torch.manual_seed(0)
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    maker = make_maker(model)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        dummy_y = maker.setup_model_call(model, inputs)
        maker.setup_loss_call(nn.CrossEntropyLoss(), dummy_y, targets)
        _, loss = maker.forward_and_backward()
        optimizer.step()
        losses.append(loss.item())
    results[name] = {"losses": losses, "params": [p.detach() for p in model.parameters()]}


def config(**kwargs):
    return asdl.PreconditioningConfig(data_size=12, damping=1e-2, **kwargs)


makers = {
    "kfac_mc": lambda m: asdl.KfacGradientMaker(m, config(), fisher_type=asdl.FISHER_MC),
    "kfac_emp": lambda m: asdl.KfacGradientMaker(m, config(), fisher_type=asdl.FISHER_EMP),
    "kfac_exact": lambda m: asdl.KfacGradientMaker(m, config(), fisher_type=asdl.FISHER_EXACT),
    "ekfac": lambda m: asdl.EkfacGradientMaker(m, config(), fisher_type=asdl.FISHER_EMP),
    "diagonal": lambda m: asdl.DiagNaturalGradientMaker(m, config()),
    "full": lambda m: asdl.FullNaturalGradientMaker(m, config()),
    "shampoo": lambda m: asdl.ShampooGradientMaker(m, config()),
    "psgd": lambda m: asdl.KronPsgdGradientMaker(m, config()),
    "seng": lambda m: asdl.SengGradientMaker(m, config()),
}
for name, make in makers.items():
    train(name, mlp, make, x, labels)
for name in ("kfac_emp", "ekfac", "diagonal", "shampoo"):
    train(f"cnn_{name}", cnn, makers[name], images, image_labels, steps=2)

# curvature matrices directly
model = mlp()
maker = asdl.get_fisher_maker(model, asdl.FisherConfig(fisher_type=asdl.FISHER_EXACT, loss_type=asdl.LOSS_CROSS_ENTROPY,
                                                       fisher_shapes=[asdl.SHAPE_KRON, asdl.SHAPE_DIAG], data_size=12))
dummy_y = maker.setup_model_call(model, x)
maker.setup_loss_call(nn.CrossEntropyLoss(), dummy_y, labels)
maker.forward_and_backward()
results["fisher_kron"] = [[m.fisher.kron.A, m.fisher.kron.B] for m in model if isinstance(m, nn.Linear)]
results["fisher_diag"] = [[m.fisher.diag.weight, m.fisher.diag.bias] for m in model if isinstance(m, nn.Linear)]
emit(results)
