"""GPyTorch: exact GP regression (RBF and Matern kernels with ScaleKernel, Gaussian likelihood) trained
on the exact marginal log-likelihood with Adam, predictions with variances and confidence regions; a
multitask GP, an approximate (variational) GP with inducing points and the ELBO, and the linear
operators behind them (Cholesky solves, log-determinants, root decompositions)."""
import warnings

import gpytorch
import torch

from _common import data, emit

warnings.simplefilter("ignore")
torch.set_default_dtype(torch.float64)
train_x = torch.linspace(0, 1, 15)
train_y = torch.sin(train_x * 6.0) + 0.1 * data(15, seed=3)
test_x = torch.linspace(0, 1, 7)
results = {}


class ExactModel(gpytorch.models.ExactGP):
    def __init__(self, x, y, likelihood, kernel):
        super().__init__(x, y, likelihood)
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(kernel)

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


for name, kernel in [("rbf", gpytorch.kernels.RBFKernel()), ("matern", gpytorch.kernels.MaternKernel(nu=2.5)),
                     ("periodic", gpytorch.kernels.PeriodicKernel())]:
    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    model = ExactModel(train_x, train_y, likelihood, kernel)
    model.train()
    likelihood.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    losses = []
    for _ in range(12):
        optimizer.zero_grad()
        loss = -mll(model(train_x), train_y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    likelihood.eval()
    with torch.no_grad():
        predictive = likelihood(model(test_x))
        lower, upper = predictive.confidence_region()
    results[name] = {"losses": losses, "mean": predictive.mean, "variance": predictive.variance,
                     "lower": lower, "upper": upper,
                     "params": {n: p.detach() for n, p in model.named_parameters()}}


class MultitaskModel(gpytorch.models.ExactGP):
    def __init__(self, x, y, likelihood):
        super().__init__(x, y, likelihood)
        self.mean_module = gpytorch.means.MultitaskMean(gpytorch.means.ConstantMean(), num_tasks=2)
        self.covar_module = gpytorch.kernels.MultitaskKernel(gpytorch.kernels.RBFKernel(), num_tasks=2, rank=1)

    def forward(self, x):
        return gpytorch.distributions.MultitaskMultivariateNormal(self.mean_module(x), self.covar_module(x))


torch.manual_seed(0)  # the task covariance factor starts random
multi_y = torch.stack([train_y, torch.cos(train_x * 4.0)], -1)
likelihood = gpytorch.likelihoods.MultitaskGaussianLikelihood(num_tasks=2)
model = MultitaskModel(train_x, multi_y, likelihood)
model.train()
likelihood.train()
optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
losses = []
for _ in range(8):
    optimizer.zero_grad()
    loss = -mll(model(train_x), multi_y)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
model.eval()
with torch.no_grad():
    predictive = likelihood(model(test_x))
results["multitask"] = [losses, predictive.mean, predictive.variance]


class VariationalModel(gpytorch.models.ApproximateGP):
    def __init__(self, inducing):
        distribution = gpytorch.variational.CholeskyVariationalDistribution(inducing.size(0))
        strategy = gpytorch.variational.VariationalStrategy(self, inducing, distribution,
                                                            learn_inducing_locations=True)
        super().__init__(strategy)
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


model = VariationalModel(torch.linspace(0, 1, 5))
likelihood = gpytorch.likelihoods.GaussianLikelihood()
optimizer = torch.optim.Adam(list(model.parameters()) + list(likelihood.parameters()), lr=0.05)
elbo = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=train_y.numel())
model.train()
likelihood.train()
losses = []
for _ in range(10):
    optimizer.zero_grad()
    loss = -elbo(model(train_x), train_y)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
model.eval()
with torch.no_grad():
    out = likelihood(model(test_x))
results["variational"] = [losses, out.mean, out.variance]

# linear operators directly
from linear_operator.operators import DiagLinearOperator, LowRankRootLinearOperator  # noqa: E402

factor = data(6, 2, seed=8)
operator = LowRankRootLinearOperator(factor) + DiagLinearOperator(torch.full((6,), 0.5))
rhs = data(6, 2, seed=9)
with gpytorch.settings.max_cholesky_size(100):
    results["operators"] = [operator.solve(rhs), operator.logdet(), operator.to_dense(),
                            operator.root_decomposition().root.to_dense().matmul(
                                operator.root_decomposition().root.to_dense().mT)]
emit(results)
