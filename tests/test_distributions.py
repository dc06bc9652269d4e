"""torch.distributions against torch: every deterministic quantity (log_prob, entropy, cdf, icdf,
moments, shapes, supports, expand, KL divergences, transforms and their log-Jacobians, constraint
checks, argument validation) and its gradient w.r.t. the parameters, on the same float64 parameters;
sampling is checked statistically (moments, Kolmogorov-Smirnov) because the random streams differ."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

import hookgrad
from difftest import catch, differential

rng = np.random.default_rng(1234)


def _pos(*shape, low=0.5, high=2.0):
    return rng.uniform(low, high, shape)


def _unit(*shape):
    return rng.uniform(0.1, 0.9, shape)


def _spd(n, batch=()):
    a = rng.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _simplex(*shape):
    x = rng.uniform(0.2, 1.0, shape)
    return x / x.sum(-1, keepdims=True)


def _corr_cholesky(n, batch=()):
    cov = _spd(n, batch)
    d = np.sqrt(np.diagonal(cov, axis1=-2, axis2=-1))
    corr = cov / d[..., :, None] / d[..., None, :]
    return np.linalg.cholesky(corr)


# name -> (constructor(D, **params), {param: array}, value array, names of params that get gradients)
CASES = {
    "Normal": (lambda D, loc, scale: D.Normal(loc, scale), {"loc": rng.normal(size=(2, 3)), "scale": _pos(3)},
               rng.normal(size=(4, 2, 3))),
    "Bernoulli_probs": (lambda D, probs: D.Bernoulli(probs=probs), {"probs": _unit(3)},
                        np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]])),
    "Bernoulli_logits": (lambda D, logits: D.Bernoulli(logits=logits), {"logits": rng.normal(size=(2, 3))},
                         np.array([0.0, 1.0, 1.0])),
    "Categorical_probs": (lambda D, probs: D.Categorical(probs=probs), {"probs": _pos(2, 4)}, np.array([[0, 3], [2, 1],
                                                                                                        [1, 1.0]])),
    "Categorical_logits": (lambda D, logits: D.Categorical(logits=logits), {"logits": rng.normal(size=(3, 5))},
                           np.array([4.0, 0.0, 2.0])),
    "OneHotCategorical": (lambda D, probs: D.OneHotCategorical(probs=probs), {"probs": _simplex(2, 3)},
                          np.eye(3)[[0, 2]]),
    "OneHotCategoricalStraightThrough": (lambda D, logits: D.OneHotCategoricalStraightThrough(logits=logits),
                                         {"logits": rng.normal(size=(2, 3))}, np.eye(3)[[1, 2]]),
    "Beta": (lambda D, a, b: D.Beta(a, b), {"a": _pos(2, 3), "b": _pos(3)}, _unit(2, 3)),
    "Gamma": (lambda D, c, r: D.Gamma(c, r), {"c": _pos(2, 3), "r": _pos(2, 1)}, _pos(2, 3, low=0.1, high=3.0)),
    "Dirichlet": (lambda D, c: D.Dirichlet(c), {"c": _pos(2, 4)}, _simplex(3, 2, 4)),
    "Exponential": (lambda D, rate: D.Exponential(rate), {"rate": _pos(3)}, _pos(2, 3, low=0.0, high=3.0)),
    "Laplace": (lambda D, loc, scale: D.Laplace(loc, scale), {"loc": rng.normal(size=3), "scale": _pos(2, 3)},
                rng.normal(size=(2, 3))),
    "Uniform": (lambda D, low, high: D.Uniform(low, high), {"low": rng.normal(size=3) - 2, "high": _pos(3)},
                rng.uniform(-1.4, 0.4, (2, 3))),
    "Poisson": (lambda D, rate: D.Poisson(rate), {"rate": _pos(3, low=0.5, high=4.0)},
                np.array([[0.0, 3.0, 7.0], [1.0, 2.0, 0.0]])),
    "Binomial_probs": (lambda D, probs: D.Binomial(6, probs=probs), {"probs": _unit(2, 3)},
                       np.array([0.0, 3.0, 6.0])),
    "Binomial_logits": (lambda D, n, logits: D.Binomial(n, logits=logits),
                        {"n": np.array([2.0, 5.0, 9.0]), "logits": rng.normal(size=3)}, np.array([1.0, 5.0, 3.0])),
    "Multinomial": (lambda D, probs: D.Multinomial(5, probs=probs), {"probs": _pos(2, 3)},
                    np.array([[2.0, 3.0, 0.0], [1.0, 1.0, 3.0]])),
    "MultivariateNormal_cov": (lambda D, loc, cov: D.MultivariateNormal(loc, covariance_matrix=cov),
                               {"loc": rng.normal(size=(2, 3)), "cov": _spd(3)}, rng.normal(size=(4, 2, 3))),
    "MultivariateNormal_prec": (lambda D, loc, prec: D.MultivariateNormal(loc, precision_matrix=prec),
                                {"loc": rng.normal(size=3), "prec": _spd(3, (2,))}, rng.normal(size=(2, 3))),
    "MultivariateNormal_tril": (lambda D, loc, tril: D.MultivariateNormal(loc, scale_tril=tril),
                                {"loc": rng.normal(size=3), "tril": np.linalg.cholesky(_spd(3))},
                                rng.normal(size=(5, 3))),
    "LowRankMultivariateNormal": (lambda D, loc, w, d: D.LowRankMultivariateNormal(loc, w, d),
                                  {"loc": rng.normal(size=(2, 3)), "w": rng.normal(size=(3, 2)), "d": _pos(3)},
                                  rng.normal(size=(4, 2, 3))),
    "LogNormal": (lambda D, loc, scale: D.LogNormal(loc, scale), {"loc": rng.normal(size=3), "scale": _pos(3)},
                  _pos(2, 3, low=0.1, high=4.0)),
    "StudentT": (lambda D, df, loc, scale: D.StudentT(df, loc, scale),
                 {"df": np.array([0.7, 1.5, 4.0]), "loc": rng.normal(size=3), "scale": _pos(3)},
                 rng.normal(size=(2, 3))),
    "Cauchy": (lambda D, loc, scale: D.Cauchy(loc, scale), {"loc": rng.normal(size=3), "scale": _pos(3)},
               rng.normal(size=(2, 3)) * 3),
    "Chi2": (lambda D, df: D.Chi2(df), {"df": _pos(3, low=0.5, high=5.0)}, _pos(2, 3, low=0.1, high=5.0)),
    "Geometric_probs": (lambda D, probs: D.Geometric(probs=probs), {"probs": _unit(3)},
                        np.array([[0.0, 2.0, 5.0]])),
    "Geometric_logits": (lambda D, logits: D.Geometric(logits=logits), {"logits": rng.normal(size=3)},
                         np.array([1.0, 0.0, 3.0])),
    "Gumbel": (lambda D, loc, scale: D.Gumbel(loc, scale), {"loc": rng.normal(size=3), "scale": _pos(3)},
               rng.normal(size=(2, 3))),
    "HalfNormal": (lambda D, scale: D.HalfNormal(scale), {"scale": _pos(3)}, _pos(2, 3, low=0.0, high=3.0)),
    "HalfCauchy": (lambda D, scale: D.HalfCauchy(scale), {"scale": _pos(3)}, _pos(2, 3, low=0.0, high=3.0)),
    "ContinuousBernoulli_probs": (lambda D, probs: D.ContinuousBernoulli(probs=probs),
                                  {"probs": np.array([0.1, 0.4995, 0.5002, 0.8])}, _unit(2, 4)),
    "ContinuousBernoulli_logits": (lambda D, logits: D.ContinuousBernoulli(logits=logits),
                                   {"logits": rng.normal(size=3)}, _unit(3)),
    "FisherSnedecor": (lambda D, df1, df2: D.FisherSnedecor(df1, df2),
                       {"df1": np.array([1.5, 3.0, 6.0, 9.0]), "df2": np.array([1.0, 3.0, 4.5, 12.0])},
                       _pos(2, 4, low=0.1, high=3.0)),
    "Kumaraswamy": (lambda D, a, b: D.Kumaraswamy(a, b), {"a": np.array([0.7, 1.5, 3.0]),
                                                          "b": np.array([2.0, 0.8, 1.5])}, _unit(2, 3)),
    "NegativeBinomial_probs": (lambda D, n, probs: D.NegativeBinomial(n, probs=probs),
                               {"n": np.array([1.0, 2.5, 7.0]), "probs": _unit(3)}, np.array([0.0, 3.0, 5.0])),
    "NegativeBinomial_logits": (lambda D, n, logits: D.NegativeBinomial(n, logits=logits),
                                {"n": np.array([1.0, 2.5, 7.0]), "logits": rng.normal(size=3)},
                                np.array([[1.0, 0.0, 8.0]])),
    "Pareto": (lambda D, scale, alpha: D.Pareto(scale, alpha), {"scale": _pos(3), "alpha": np.array([0.8, 1.5, 3.0])},
               _pos(2, 3, low=2.0, high=5.0)),
    "Weibull": (lambda D, scale, c: D.Weibull(scale, c), {"scale": _pos(3), "c": np.array([0.8, 1.5, 3.0])},
                _pos(2, 3, low=0.1, high=3.0)),
    "VonMises": (lambda D, loc, k: D.VonMises(loc, k), {"loc": rng.normal(size=3), "k": np.array([0.5, 3.0, 8.0])},
                 rng.uniform(-3, 3, (2, 3))),
    "InverseGamma": (lambda D, c, r: D.InverseGamma(c, r), {"c": np.array([0.8, 1.5, 3.0]), "r": _pos(3)},
                     _pos(2, 3, low=0.1, high=3.0)),
    "RelaxedBernoulli": (lambda D, t, probs: D.RelaxedBernoulli(t, probs=probs),
                         {"t": np.array(0.7), "probs": _unit(3)}, _unit(2, 3)),
    "RelaxedOneHotCategorical": (lambda D, t, logits: D.RelaxedOneHotCategorical(t, logits=logits),
                                 {"t": np.array(0.5), "logits": rng.normal(size=(2, 3))}, _simplex(2, 3)),
    "ExpRelaxedCategorical": (lambda D, t, probs: D.relaxed_categorical.ExpRelaxedCategorical(t, probs=probs),
                              {"t": np.array(1.3), "probs": _simplex(3)}, np.log(_simplex(2, 3))),
    "LogitRelaxedBernoulli": (lambda D, t, logits: D.relaxed_bernoulli.LogitRelaxedBernoulli(t, logits=logits),
                              {"t": np.array(0.4), "logits": rng.normal(size=3)}, rng.normal(size=(2, 3))),
    "LogisticNormal": (lambda D, loc, scale: D.LogisticNormal(loc, scale), {"loc": rng.normal(size=(2, 3)),
                                                                            "scale": _pos(3)}, _simplex(2, 4)),
    "LKJCholesky": (lambda D, c: D.LKJCholesky(3, c), {"c": np.array([0.5, 1.0, 2.5])}, _corr_cholesky(3, (3,))),
    "Wishart_cov": (lambda D, df, cov: D.Wishart(df, covariance_matrix=cov), {"df": np.array([4.0, 6.5]),
                                                                             "cov": _spd(3)}, _spd(3, (2,))),
    # scale_tril enters through its lower triangle: hookgrad's cholesky_solve gives the strictly upper
    # entries of the factor a zero gradient, torch's a nonzero one, so the factor is built with tril here
    "Wishart_tril": (lambda D, df, a: D.Wishart(df, scale_tril=a.tril()), {"df": np.array(5.0),
                                                                          "a": np.linalg.cholesky(_spd(2, (2,)))},
                     _spd(2, (2,))),
    "Independent": (lambda D, loc, scale: D.Independent(D.Normal(loc, scale), 1),
                    {"loc": rng.normal(size=(2, 3)), "scale": _pos(2, 3)}, rng.normal(size=(4, 2, 3))),
    "MixtureSameFamily": (lambda D, logits, loc, scale: D.MixtureSameFamily(D.Categorical(logits=logits),
                                                                           D.Normal(loc, scale)),
                          {"logits": rng.normal(size=(2, 3)), "loc": rng.normal(size=(2, 3)), "scale": _pos(2, 3)},
                          rng.normal(size=(4, 2))),
    "MixtureSameFamily_mvn": (lambda D, logits, loc, scale: D.MixtureSameFamily(
        D.Categorical(logits=logits), D.Independent(D.Normal(loc, scale), 1)),
        {"logits": rng.normal(size=3), "loc": rng.normal(size=(3, 2)), "scale": _pos(3, 2)}, rng.normal(size=(4, 2))),
    "TransformedDistribution": (lambda D, loc, scale: D.TransformedDistribution(
        D.Normal(loc, scale), [D.transforms.AffineTransform(1.5, 2.0), D.transforms.SigmoidTransform()]),
        {"loc": rng.normal(size=3), "scale": _pos(3)}, _unit(2, 3)),
}

_STATS = ("mean", "mode", "variance", "stddev")


# torch's GeneralizedPareto compares its shape with a float32 zero, so it only runs in float32
FLOAT32_CASES = {
    "GeneralizedPareto": (lambda D, loc, scale, c: D.GeneralizedPareto(loc, scale, c),
                          {"loc": np.zeros(4), "scale": _pos(4), "c": np.array([-0.2, 0.0, 0.3, 0.7])},
                          _pos(2, 4, low=0.1, high=1.5)),
    "Normal": CASES["Normal"],
    "Gamma": CASES["Gamma"],
    "Beta": CASES["Beta"],
}


def _tensors(T, arrays, dtype=None):
    return {k: T.tensor(v, dtype=dtype or T.float64, requires_grad=True) for k, v in arrays.items()}


def _grads(T, out, params):
    """Gradients of ``out`` w.r.t. the parameters (None for ones it does not depend on)."""
    if not isinstance(out, T.Tensor) or not out.requires_grad:
        return "no graph"
    leaves = list(params.values())
    return list(T.autograd.grad(out.sum(), leaves, allow_unused=True, retain_graph=True))


def _with_grads(T, fn, params):
    result = catch(fn)
    if isinstance(result, T.Tensor):
        finite = result.detach().isfinite().all().item()
        return result, (catch(_grads, T, result, params) if finite else "non-finite")
    return result


@pytest.mark.parametrize("name", sorted(CASES))
@differential(rtol=1e-7, atol=1e-9)
def test_distribution_matches_torch(T, name):
    return _describe(T, name, *CASES[name], T.float64)


@pytest.mark.parametrize("name", sorted(FLOAT32_CASES))
@differential(rtol=2e-5, atol=1e-5)
def test_distribution_matches_torch_float32(T, name):
    return _describe(T, name, *FLOAT32_CASES[name], T.float32)


def _describe(T, name, build, arrays, value_array, dtype):
    D = T.distributions
    params = _tensors(T, arrays, dtype)
    dist = build(D, **params)
    value = T.tensor(value_array, dtype=dtype)
    record = {"type": type(dist).__name__, "batch_shape": dist.batch_shape, "event_shape": dist.event_shape,
              "has_rsample": dist.has_rsample, "has_enumerate_support": dist.has_enumerate_support,
              "support": repr(catch(lambda: dist.support)) if not name.startswith(("Uniform", "Pareto", "Binomial",
                                                                                      "GeneralizedPareto"))
              else "dependent"}
    record["log_prob"] = _with_grads(T, lambda: dist.log_prob(value), params)
    record["support_check"] = catch(lambda: dist.support.check(value))
    for stat in _STATS:
        record[stat] = _with_grads(T, lambda: getattr(dist, stat), params)
    record["entropy"] = _with_grads(T, dist.entropy, params)
    record["cdf"] = _with_grads(T, lambda: dist.cdf(value), params)
    probs = T.tensor(np.linspace(0.05, 0.95, int(np.prod(dist.batch_shape)) or 1).reshape(tuple(dist.batch_shape)),
                     dtype=dtype)
    record["icdf"] = _with_grads(T, lambda: dist.icdf(probs), params)
    record["enumerate_support"] = catch(lambda: dist.enumerate_support())
    record["enumerate_support_unexpanded"] = catch(lambda: dist.enumerate_support(expand=False))
    record["perplexity"] = catch(dist.perplexity)
    expanded = dist.expand(T.Size((2,)) + dist.batch_shape)
    record["expanded"] = (type(expanded).__name__, expanded.batch_shape, expanded.event_shape,
                          catch(lambda: expanded.log_prob(value.unsqueeze(-len(dist.event_shape) - 1)
                                                          if value.dim() > len(dist.event_shape) else value)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Wishart's low-df and singular-sample warnings
        if name not in ("VonMises",):
            record["sample_shape"] = dist.sample((4, 1)).shape
            record["sample_in_support"] = bool(dist.support.check(dist.sample((3,))).all()) \
                if not name.startswith(("Uniform", "Pareto", "GeneralizedPareto", "Binomial")) else True
        record["rsample_shape"] = catch(lambda: dist.rsample((2,)).shape)
    record["repr"] = repr(dist).replace("torch.", "").replace("hookgrad.", "")
    return record
