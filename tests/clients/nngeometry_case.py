"""NNGeometry Fisher matrices (dense, diagonal, block-diagonal, KFAC, EKFAC, quasi-diagonal, implicit,
low-rank) built from per-example Jacobians its backend gathers with module and tensor hooks; their
products, traces, solves and eigendecompositions; Monte-Carlo Fisher, Gram matrix, Jacobian map and the
torch.func Hessian, on conv, batch-norm and layer-norm layers."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from nngeometry.hessian import Hessian
from nngeometry.gram import GramMatrix
from nngeometry.jacobian import Jacobian
from nngeometry.layercollection import LayerCollection
from nngeometry.metrics import FIM, FIM_MonteCarlo
from nngeometry.object import (PMatBlockDiag, PMatDense, PMatDiag, PMatEKFAC, PMatImplicit, PMatKFAC,
                               PMatLowRank, PMatQuasiDiag, PVector)

from _common import data, emit, fill

torch.set_default_dtype(torch.float64)  # NNGeometry makes its helper tensors in the default dtype


def attempt(fn):
    """The value, or the name of the exception (NNGeometry leaves some products out for some layers)."""
    try:
        return fn()
    except (NotImplementedError, AttributeError) as exc:
        return type(exc).__name__


def matrix_summary(matrix, vector):
    return {"trace": attempt(matrix.trace), "mv": attempt(lambda: matrix.mv(vector).to_torch()),
            "vTMv": attempt(lambda: matrix.vTMv(vector)), "dense": attempt(matrix.to_torch),
            "frobenius": attempt(matrix.frobenius_norm)}


conv = fill(nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.Tanh(), nn.Flatten(), nn.Linear(3 * 16, 4)),
            scale=0.4).eval()
mlp = fill(nn.Sequential(nn.Linear(5, 6), nn.LayerNorm(6), nn.Sigmoid(), nn.Linear(6, 3)), seed=1)
image_loader = DataLoader(TensorDataset(data(6, 2, 6, 6), torch.tensor([0, 1, 2, 3, 1, 0])), batch_size=4)
vector_loader = DataLoader(TensorDataset(data(7, 5, seed=2), data(7, 3, seed=3)), batch_size=3)

results = {}
conv_vector = PVector.from_model(conv).clone()
conv_vector = 0.5 * conv_vector + PVector(LayerCollection.from_model(conv), vector_repr=data(*conv_vector.size(),
                                                                                            seed=4))
for representation in (PMatDense, PMatDiag, PMatBlockDiag, PMatImplicit):
    fim = FIM(conv, image_loader, representation, variant="classif_logits")
    results[f"conv_{representation.__name__}"] = matrix_summary(fim, conv_vector)

linear_only = fill(nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 16, 4)), seed=5)
kron_vector = PVector(LayerCollection.from_model(linear_only),
                      vector_repr=data(*PVector.from_model(linear_only).size(), seed=6))
kfac = FIM(linear_only, image_loader, PMatKFAC, variant="classif_logits")
ekfac = FIM(linear_only, image_loader, PMatEKFAC, variant="classif_logits")
ekfac.update_diag(image_loader)
results["quasi_diag"] = matrix_summary(FIM(linear_only, image_loader, PMatQuasiDiag), kron_vector)
results["kfac"] = {"trace": kfac.trace(), "mv": kfac.mv(kron_vector).to_torch(), "vTMv": kfac.vTMv(kron_vector),
                   "dense": kfac.to_torch(), "solve": kfac.solve(kron_vector, regul=0.1).to_torch(),
                   "frobenius": kfac.frobenius_norm()}
results["ekfac"] = {"mv": ekfac.mv(kron_vector).to_torch(), "vTMv": ekfac.vTMv(kron_vector),
                    "dense": ekfac.to_torch(), "solve": ekfac.solve(kron_vector, regul=0.1).to_torch()}

dense = FIM(mlp, vector_loader, PMatDense, variant="regression")
mlp_vector = PVector(LayerCollection.from_model(mlp), vector_repr=data(*PVector.from_model(mlp).size(), seed=7))
dense.compute_eigendecomposition()
eigenvalues, _ = dense.get_eigendecomposition()
results["regression"] = {"dense": dense.to_torch(), "eigenvalues": eigenvalues,
                         "solve": dense.solve(mlp_vector, regul=0.5).to_torch(),
                         "low_rank": FIM(mlp, vector_loader, PMatLowRank, variant="regression").to_torch()}
torch.manual_seed(0)
results["monte_carlo"] = FIM_MonteCarlo(mlp, vector_loader, PMatDense, variant="classif_logits",
                                        trials=2).to_torch()
results["gram"] = GramMatrix(mlp, vector_loader).to_torch()
results["jacobian"] = Jacobian(mlp, vector_loader).to_torch()
loss_loader = DataLoader(TensorDataset(data(4, 5, seed=8), data(4, 3, seed=9)), batch_size=2)
# (no LayerNorm here: torch 2.13's torch.func.hessian gives a wrong block for a layer norm's weight against
# the layers before it, which finite differences and torch's own double backward disagree with)
smooth = fill(nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3)), seed=10)
results["hessian"] = Hessian(smooth, loss_loader, PMatDense,
                             function=lambda prediction, y: nn.functional.mse_loss(prediction, y, reduction="sum")).to_torch()
emit(results)
