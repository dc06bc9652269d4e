"""laplace-torch's Laplace approximations of float64 networks: full, diagonal, Kronecker-factored and
low-rank-free structures over all weights or the last layer, with its BackPACK, curvlinops and ASDL
curvature back ends (module hooks, torch.func Jacobians); the log marginal likelihood and its gradient
to the prior precision and noise, the prior tuned by marginal likelihood, GLM predictives (regression
variance, probit and Laplace-bridge link approximations), seeded NN-sampling predictives, and
posterior samples."""
import warnings

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from laplace import Laplace
from laplace.curvature import AsdlEF, AsdlGGN, BackPackEF, BackPackGGN, CurvlinopsEF, CurvlinopsGGN

from _common import data, emit, fill

warnings.filterwarnings("ignore")
torch.set_default_dtype(torch.float64)
x_train, x_test = data(16, 3), data(5, 3, seed=7)
y_regression = torch.sin(x_train.sum(1, keepdim=True)) + 0.1 * data(16, 1, seed=3)
y_classes = (x_train[:, 0] > 0).long() + (x_train[:, 1] > 0.5).long()


def regression_model():
    return fill(nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 1)), scale=0.5)


def classification_model():
    return fill(nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 3)), scale=0.5)


def loader(y):
    return DataLoader(TensorDataset(x_train, y), batch_size=8)


def summary(la):
    found = {"loss": la.loss, "log_marginal_likelihood": la.log_marginal_likelihood(),
             "log_det_posterior_precision": la.log_det_posterior_precision,
             "scatter": la.scatter}
    if hasattr(la, "posterior_variance"):
        try:
            found["posterior_variance"] = la.posterior_variance
        except (AttributeError, ValueError):
            pass
    return found


results = {}
CASES = [
    ("regression", "all", "full", BackPackGGN), ("regression", "all", "diag", BackPackEF),
    ("regression", "all", "kron", CurvlinopsGGN), ("regression", "all", "diag", CurvlinopsEF),
    ("regression", "last_layer", "full", AsdlGGN), ("regression", "all", "kron", AsdlEF),
    ("classification", "all", "full", CurvlinopsGGN), ("classification", "all", "diag", BackPackGGN),
    ("classification", "last_layer", "kron", AsdlGGN), ("classification", "all", "kron", BackPackGGN),
]
for likelihood, subset, structure, backend in CASES:
    regression = likelihood == "regression"
    model = regression_model() if regression else classification_model()
    la = Laplace(model, likelihood, subset_of_weights=subset, hessian_structure=structure, backend=backend,
                 sigma_noise=0.3 if regression else 1.0, prior_precision=0.5)
    la.fit(loader(y_regression if regression else y_classes))
    record = summary(la)
    # the marginal likelihood differentiated to the (log) hyperparameters
    log_prior = torch.tensor(0.2, requires_grad=True)
    log_sigma = torch.tensor(-1.0, requires_grad=True)
    value = la.log_marginal_likelihood(log_prior.exp(), log_sigma.exp() if regression else None)
    value.backward()
    record["marglik_grads"] = [log_prior.grad, log_sigma.grad if regression else None]
    if regression:
        mean, variance = la(x_test, pred_type="glm")
        record["glm"] = [mean, variance]
    else:
        record["probit"] = la(x_test, pred_type="glm", link_approx="probit")
        record["bridge"] = la(x_test, pred_type="glm", link_approx="bridge")
    generator = torch.Generator().manual_seed(5)
    record["nn_samples"] = la.predictive_samples(x_test, pred_type="nn", n_samples=3, generator=generator)
    torch.manual_seed(6)
    record["posterior_samples"] = la.sample(2)
    results[f"{likelihood}/{subset}/{structure}/{backend.__name__}"] = record

# the prior precision tuned by marginal likelihood (a scalar and a per-layer prior) and by a grid on
# validation data
model = regression_model()
la = Laplace(model, "regression", subset_of_weights="all", hessian_structure="kron", sigma_noise=0.3)
la.fit(loader(y_regression))
la.optimize_prior_precision(method="marglik", n_steps=20, lr=0.1)
results["tuned_scalar"] = {"prior_precision": la.prior_precision, "lml": la.log_marginal_likelihood()}
la.optimize_prior_precision(method="marglik", n_steps=20, lr=0.1, prior_structure="layerwise")
results["tuned_layerwise"] = {"prior_precision": la.prior_precision, "lml": la.log_marginal_likelihood()}
la.optimize_prior_precision(method="gridsearch", val_loader=DataLoader(TensorDataset(x_train[:8], y_regression[:8]),
                                                                       batch_size=8),
                            grid_size=5, pred_type="glm")
results["tuned_grid"] = {"prior_precision": la.prior_precision}
emit(results)
