"""PyHessian: Hessian eigenvalues by power iteration and the Hutchinson trace, through double backward
(Hessian-vector products with create_graph) on a small float64 network; its probe vectors come from
torch's seeded generator."""
import torch
from torch import nn

from pyhessian import hessian as pyhessian_hessian

from _common import data, emit, fill


def model():
    return fill(nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 5), nn.Softplus(), nn.Linear(5, 3)).double(),
                seed=11)


inputs = data(12, 4, seed=12)
targets = torch.tensor([0, 1, 2, 1, 0, 2, 2, 1, 0, 0, 1, 2])
criterion = nn.CrossEntropyLoss()
results = {}

# PyHessian draws its probe vectors from torch's global generator
network = model()
torch.manual_seed(0)
engine = pyhessian_hessian(network, criterion, data=(inputs, targets), cuda=False)
eigenvalues, eigenvectors = engine.eigenvalues(maxIter=200, tol=1e-13, top_n=2)
results["pyhessian_eigenvalues"] = eigenvalues
results["pyhessian_top_vector"] = eigenvectors[0]
results["pyhessian_trace"] = engine.trace(maxIter=6, tol=1e-12)

emit(results)
