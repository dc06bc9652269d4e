"""BackPACK's first- and second-order extensions over the layers other cases leave out: Conv1d/Conv3d,
ConvTranspose1d, average, adaptive-average and max pooling in 1d and 2d, dropout (seeded masks),
LeakyReLU, SELU, LogSigmoid, Identity, batch norm in evaluation mode, an embedding front end; every
extension on each model (what BackPACK does not support raises the same error class on either
framework); the per-sample diagonal Hessian."""
import warnings

import torch
from backpack import backpack, extend
from backpack.extensions import (KFAC, KFLR, KFRA, BatchDiagGGNExact, BatchDiagHessian, BatchGrad,
                                 BatchL2Grad, DiagGGNExact, DiagGGNMC, DiagHessian, SumGradSquared, Variance)
from torch import nn

from _common import data, emit, fill

warnings.simplefilter("ignore")
torch.set_default_dtype(torch.float64)


def models():
    yield "conv1d", nn.Sequential(nn.Conv1d(2, 3, 3, padding=1), nn.LeakyReLU(0.1), nn.MaxPool1d(2),
                                  nn.Conv1d(3, 2, 2, stride=2), nn.SELU(), nn.AvgPool1d(1), nn.Flatten(),
                                  nn.Linear(4, 3)), data(4, 2, 8, seed=2)
    yield "conv2d_pools", nn.Sequential(nn.Conv2d(2, 3, 3), nn.LogSigmoid(), nn.AvgPool2d(2), nn.Identity(),
                                        nn.Conv2d(3, 4, 2, padding=1), nn.ELU(), nn.AdaptiveAvgPool2d(2),
                                        nn.Flatten(), nn.Linear(16, 3)), data(3, 2, 7, 7, seed=3)
    yield "conv2d_second_order", nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.LeakyReLU(0.2), nn.AvgPool2d(2),
                                               nn.Conv2d(3, 2, 2), nn.Sigmoid(), nn.MaxPool2d(2), nn.Flatten(),
                                               nn.Linear(2, 3)), data(3, 2, 6, 6, seed=7)
    yield "dropout", nn.Sequential(nn.Linear(5, 6), nn.Tanh(), nn.Dropout(0.3), nn.Linear(6, 4), nn.Sigmoid(),
                                   nn.Linear(4, 3)), data(5, 5, seed=4)
    yield "conv3d_transpose", nn.Sequential(nn.Conv3d(1, 2, 2), nn.ReLU(), nn.Flatten(start_dim=2),
                                            nn.ConvTranspose1d(2, 2, 3), nn.Flatten(), nn.Linear(20, 3)), \
        data(3, 1, 3, 3, 3, seed=5)
    yield "batchnorm_eval", nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 3)), \
        data(6, 5, seed=6)


EXTENSIONS = {"BatchGrad": (BatchGrad, "grad_batch"), "BatchL2Grad": (BatchL2Grad, "batch_l2"),
              "SumGradSquared": (SumGradSquared, "sum_grad_squared"), "Variance": (Variance, "variance"),
              "DiagGGNExact": (DiagGGNExact, "diag_ggn_exact"),
              "BatchDiagGGNExact": (BatchDiagGGNExact, "diag_ggn_exact_batch"),
              "DiagGGNMC": (lambda: DiagGGNMC(mc_samples=2), "diag_ggn_mc"),
              "DiagHessian": (DiagHessian, "diag_h"), "BatchDiagHessian": (BatchDiagHessian, "diag_h_batch"),
              "KFAC": (lambda: KFAC(mc_samples=2), "kfac"), "KFLR": (KFLR, "kflr"), "KFRA": (KFRA, "kfra")}

results = {}
for name, model, x in models():
    fill(model.double(), seed=len(name), scale=0.5)
    model = extend(model)
    lossfunc = extend(nn.CrossEntropyLoss())
    labels = torch.arange(x.shape[0]) % 3
    if name == "batchnorm_eval":
        with torch.no_grad():
            model(x * 1.5 + 0.2)  # running statistics, then evaluation mode
        model.eval()
    per_model = {}
    for ext_name, (make, attribute) in EXTENSIONS.items():
        torch.manual_seed(7)
        model.zero_grad()
        try:
            loss = lossfunc(model(x), labels)
            with backpack(make()):
                loss.backward()
            per_model[ext_name] = {"loss": loss, "grads": [p.grad for p in model.parameters()],
                                   "quantity": [getattr(p, attribute) for p in model.parameters()]}
        except Exception as error:  # BackPACK's refusals: compared by class
            per_model[ext_name] = type(error).__name__
        for p in model.parameters():
            if hasattr(p, attribute):
                delattr(p, attribute)
    results[name] = per_model
emit(results)
