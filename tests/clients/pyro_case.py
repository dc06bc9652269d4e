"""Pyro: stochastic variational inference (Trace_ELBO, TraceMeanField_ELBO) on a Bayesian linear
regression with AutoNormal, AutoDiagonalNormal and a hand-written guide, pyro.optim's Adam and
ClippedAdam wrappers, the parameter store, Predictive, poutine traces with log-probabilities, plates with
subsampling, an enumerated discrete mixture (TraceEnum_ELBO) and a Gaussian-process regression."""
import warnings

import numpy as np
import pyro
import pyro.distributions as dist
import torch
from pyro import poutine
from pyro.infer import SVI, Predictive, Trace_ELBO, TraceEnum_ELBO, TraceMeanField_ELBO, config_enumerate
from pyro.infer.autoguide import AutoDiagonalNormal, AutoNormal
from pyro.optim import Adam, ClippedAdam

from _common import data, emit

warnings.simplefilter("ignore")
torch.set_default_dtype(torch.float64)
x = data(40, 2)
y = x @ torch.tensor([1.5, -0.7]) + 0.3 + 0.1 * data(40, seed=2)
results = {}


def model(x, y=None):
    weight = pyro.sample("weight", dist.Normal(torch.zeros(2), torch.ones(2)).to_event(1))
    bias = pyro.sample("bias", dist.Normal(0.0, 1.0))
    noise = pyro.sample("noise", dist.HalfNormal(1.0))
    with pyro.plate("data", x.shape[0]):
        return pyro.sample("obs", dist.Normal(x @ weight + bias, noise), obs=y)


def manual_guide(x, y=None):
    loc = pyro.param("w_loc", torch.zeros(2))
    scale = pyro.param("w_scale", torch.ones(2), constraint=dist.constraints.positive)
    pyro.sample("weight", dist.Normal(loc, scale).to_event(1))
    b_loc = pyro.param("b_loc", torch.tensor(0.0))
    pyro.sample("bias", dist.Normal(b_loc, 0.5))
    n_loc = pyro.param("n_loc", torch.tensor(-1.0))
    pyro.sample("noise", dist.LogNormal(n_loc, 0.3))


def run(name, guide_fn, loss, optim, steps=30):
    pyro.clear_param_store()
    pyro.set_rng_seed(0)
    guide = guide_fn()
    svi = SVI(model, guide, optim, loss=loss)
    losses = [svi.step(x, y) for _ in range(steps)]
    store = pyro.get_param_store()
    results[name] = {"losses": losses, "params": {k: store[k].detach() for k in sorted(store.keys())}}
    return guide


run("manual", lambda: manual_guide, Trace_ELBO(), Adam({"lr": 0.05}))
guide = run("auto_normal", lambda: AutoNormal(model), Trace_ELBO(num_particles=2), Adam({"lr": 0.05}))
pyro.set_rng_seed(1)
predictive = Predictive(model, guide=guide, num_samples=5, return_sites=["weight", "obs"])
samples = predictive(x[:4])
results["predictive"] = {k: v for k, v in sorted(samples.items())}
results["quantiles"] = {k: v for k, v in sorted(guide.quantiles([0.25, 0.75]).items())}
run("auto_diagonal", lambda: AutoDiagonalNormal(model), TraceMeanField_ELBO(),
    ClippedAdam({"lr": 0.05, "clip_norm": 1.0, "lrd": 0.99}))

# a trace with its log-probabilities, and a conditioned model
pyro.set_rng_seed(2)
trace = poutine.trace(poutine.condition(model, data={"bias": torch.tensor(0.2)})).get_trace(x, y)
trace.compute_log_prob()
results["trace"] = {name: [site["value"], site["log_prob_sum"]] for name, site in trace.nodes.items()
                    if site["type"] == "sample"}


# subsampled plate: the scaled log-likelihood
def subsampled(x, y):
    weight = pyro.sample("weight", dist.Normal(torch.zeros(2), 1.0).to_event(1))
    with pyro.plate("data", x.shape[0], subsample_size=10) as index:
        pyro.sample("obs", dist.Normal(x[index] @ weight, 1.0), obs=y[index])


pyro.set_rng_seed(3)
trace = poutine.trace(subsampled).get_trace(x, y)
results["subsample"] = [trace.log_prob_sum(), trace.nodes["data"]["value"]]

# a two-component mixture with the assignment enumerated out
mix_data = torch.cat([data(15, seed=5) - 2.0, data(15, seed=6) + 2.0])


@config_enumerate
def mixture(values):
    weights = pyro.param("mix_weights", torch.tensor([0.5, 0.5]), constraint=dist.constraints.simplex)
    locs = pyro.param("mix_locs", torch.tensor([-1.0, 1.0]))
    with pyro.plate("points", len(values)):
        assignment = pyro.sample("assignment", dist.Categorical(weights))
        pyro.sample("obs", dist.Normal(locs[assignment], 1.0), obs=values)


def empty_guide(values):
    pass


pyro.clear_param_store()
svi = SVI(mixture, empty_guide, Adam({"lr": 0.1}), loss=TraceEnum_ELBO(max_plate_nesting=1))
results["mixture"] = [[svi.step(mix_data) for _ in range(20)], pyro.param("mix_locs").detach(),
                      pyro.param("mix_weights").detach()]

# Gaussian-process regression: marginal likelihood optimised over the kernel's hyper-parameters
import pyro.contrib.gp as gp  # noqa: E402

pyro.clear_param_store()
gx = torch.linspace(-2, 2, 12)
gy = torch.sin(2 * gx) + 0.05 * data(12, seed=7)
kernel = gp.kernels.RBF(input_dim=1, variance=torch.tensor(1.0), lengthscale=torch.tensor(0.7))
regression = gp.models.GPRegression(gx, gy, kernel, noise=torch.tensor(0.1))
optimizer = torch.optim.Adam(regression.parameters(), lr=0.05)
gp_losses = gp.util.train(regression, optimizer, num_steps=15)
mean, var = regression(torch.linspace(-2, 2, 5), full_cov=False)
results["gp"] = [gp_losses, mean.detach(), var.detach(), kernel.lengthscale.detach(), kernel.variance.detach()]
results["numpy_seed_state"] = int(np.random.randint(1000))
emit(results)
