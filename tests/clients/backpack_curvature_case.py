"""BackPACK's curvature extensions on convolutional nets (conv, transpose conv, max pooling, padding, smooth
activations): exact and Monte-Carlo diagonal GGN, per-sample diagonals, diagonal Hessian, KFAC/KFLR/KFRA
factors, the GGN square root, block curvature-matrix products; Hessian-free products; per-sample
gradients of recurrent and permuting layers."""
import torch
from torch import nn
from backpack import backpack, extend, extensions
from backpack.hessianfree.ggnvp import ggn_vector_product_from_plist
from backpack.hessianfree.hvp import hessian_vector_product
from backpack.custom_module.permute import Permute
from backpack.custom_module.reduce_tuple import ReduceTuple

from _common import data, emit, fill


def conv_net():
    return nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.Tanh(), nn.MaxPool2d(2), nn.ZeroPad2d(1),
                         nn.ConvTranspose2d(3, 2, 2, stride=1), nn.ELU(), nn.Conv2d(2, 2, 2, stride=2), nn.Flatten(),
                         nn.Linear(2 * 9, 3))


def quantities_of(model, loss_fn, x, y, extension_list, names):
    model.zero_grad()
    with backpack(*extension_list):
        loss_fn(model(x), y).backward()
    return {param: {name: getattr(p, name) for name in names} for param, p in model.named_parameters()}


x = data(3, 2, 6, 6)
labels = torch.tensor([2, 0, 1])
model = extend(fill(conv_net().double(), scale=0.7))
loss_fn = extend(nn.CrossEntropyLoss())
results = {
    "diag_exact": quantities_of(model, loss_fn, x, labels,
                                [extensions.DiagGGNExact(), extensions.BatchDiagGGNExact(), extensions.SqrtGGNExact()],
                                ["diag_ggn_exact", "diag_ggn_exact_batch", "sqrt_ggn_exact"]),
}
torch.manual_seed(0)
results["mc"] = quantities_of(model, loss_fn, x, labels,
                              [extensions.DiagGGNMC(mc_samples=2), extensions.BatchDiagGGNMC(mc_samples=2),
                               extensions.SqrtGGNMC(mc_samples=2)],
                              ["diag_ggn_mc", "diag_ggn_mc_batch", "sqrt_ggn_mc"])
# Kronecker factors (BackPACK's KFAC/KFLR/KFRA know convolutions, ReLU/Sigmoid/Tanh and flattening)
factored = extend(fill(nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU(), nn.Conv2d(3, 2, 2, stride=2), nn.Sigmoid(),
                                     nn.Flatten(), nn.Linear(8, 3)).double(), seed=1))
torch.manual_seed(1)
results["kron"] = quantities_of(factored, loss_fn, x, labels,
                                [extensions.KFAC(mc_samples=3), extensions.KFLR()],
                                ["kfac", "kflr"])

dense = extend(fill(nn.Sequential(nn.Linear(4, 5), nn.Sigmoid(), nn.Linear(5, 3), nn.Tanh(), nn.Linear(3, 2)).double(),
                    seed=2))
mse = extend(nn.MSELoss(reduction="sum"))
v, targets = data(5, 4, seed=3), data(5, 2, seed=4)
results["dense"] = quantities_of(dense, mse, v, targets,
                                 [extensions.DiagHessian(), extensions.BatchDiagHessian(), extensions.KFLR()],
                                 ["diag_h", "diag_h_batch", "kflr"])
# KFRA builds its batch-averaged factors in the default dtype
torch.set_default_dtype(torch.float64)
results["kfra"] = quantities_of(dense, mse, v, targets, [extensions.KFRA()], ["kfra"])
torch.set_default_dtype(torch.float32)

# block curvature-matrix products, applied to a fixed matrix of directions per parameter
dense.zero_grad()
with backpack(extensions.HMP(), extensions.GGNMP(), extensions.PCHMP(modify="abs")):
    mse(dense(v), targets).backward()
products = {}
for name, p in dense.named_parameters():
    directions = data(3, *p.shape, seed=5)
    products[name] = {"hmp": p.hmp(directions), "ggnmp": p.ggnmp(directions), "pchmp": p.pchmp(directions)}
results["products"] = products

# Hessian-free: GGN- and Hessian-vector products through double backward
params = list(dense.parameters())
output = dense(v)
vector = [data(*p.shape, seed=6 + i) for i, p in enumerate(params)]
results["ggnvp"] = list(ggn_vector_product_from_plist(mse(output, targets), output, params, vector))
results["hvp"] = list(hessian_vector_product(mse(dense(v), targets), params, vector))

# first-order extensions through recurrent and custom layers
recurrent = extend(fill(nn.Sequential(nn.RNN(3, 4, batch_first=True), ReduceTuple(index=0), Permute(0, 2, 1),
                                      nn.Flatten(), nn.Linear(4 * 5, 2)).double(), seed=7))
results["rnn"] = quantities_of(recurrent, extend(nn.CrossEntropyLoss()), data(3, 5, 3, seed=8),
                               torch.tensor([1, 0, 1]),
                               [extensions.BatchGrad(), extensions.BatchL2Grad(), extensions.SumGradSquared(),
                                extensions.Variance()],
                               ["grad_batch", "batch_l2", "sum_grad_squared", "variance"])
emit(results)
