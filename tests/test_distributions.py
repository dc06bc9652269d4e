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
from difftest import catch, differential, warns

rng = np.random.default_rng(1234)


def _pos(*shape, low=0.5, high=2.0):
    return rng.uniform(low, high, shape)


def _unit(*shape):
    return rng.uniform(0.1, 0.9, shape)


def _spd(n, batch=(), gen=None):
    a = (gen or rng).normal(size=batch + (n, n))
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
    "TransformedDistribution_reshape": (lambda D, loc, scale: D.TransformedDistribution(
        D.Normal(loc, scale), [D.transforms.ReshapeTransform((6,), (2, 3)), D.transforms.ExpTransform()]),
        {"loc": rng.normal(size=(2, 6)), "scale": _pos(6)}, _pos(4, 2, 2, 3)),
    "TransformedDistribution_corr_cholesky": (lambda D, loc: D.TransformedDistribution(
        D.Normal(loc, 1.0), D.transforms.CorrCholeskyTransform()), {"loc": rng.normal(size=(2, 3))},
        _corr_cholesky(3, (2,))),
    "TransformedDistribution_affine_event": (lambda D, loc, scale: D.TransformedDistribution(
        D.MultivariateNormal(loc, scale_tril=D.transforms.LowerCholeskyTransform()(scale)),
        [D.transforms.AffineTransform(1.0, 2.0, event_dim=1), D.transforms.StickBreakingTransform()]),
        {"loc": rng.normal(size=3), "scale": rng.normal(size=(3, 3))}, _simplex(2, 4)),
    "TransformedDistribution_flip": (lambda D, loc, scale: D.TransformedDistribution(
        D.Normal(loc, scale), [D.transforms.AffineTransform(0.0, -1.0), D.transforms.ExpTransform()]),
        {"loc": rng.normal(size=3), "scale": _pos(3)}, _pos(2, 3)),
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


# ---- KL divergences ------------------------------------------------------------------------------------
def _kl_zoo(T, seed, names=None):
    """One instance of each family in torch's KL registry (all, or those in ``names``), batch shape
    (3,), float64 leaves; parameters are drawn in name order, so both frameworks get the same ones."""
    r = np.random.default_rng(seed)
    leaves = []

    def t(array):
        leaf = T.tensor(np.asarray(array, dtype=np.float64), dtype=T.float64, requires_grad=True)
        leaves.append(leaf)
        return leaf

    D = T.distributions
    pos = lambda *s: r.uniform(0.5, 2.5, s)  # noqa: E731
    makers = {
        "Bernoulli": lambda: D.Bernoulli(probs=t(r.uniform(0.1, 0.9, 3))),
        "Beta": lambda: D.Beta(t(pos(3)), t(pos(3))),
        "Binomial": lambda: D.Binomial(T.tensor([4.0, 4.0, 4.0], dtype=T.float64),
                                       probs=t(r.uniform(0.1, 0.9, 3))),
        "Categorical": lambda: D.Categorical(probs=t(r.uniform(0.2, 1, (3, 4)))),
        "Cauchy": lambda: D.Cauchy(t(r.normal(size=3)), t(pos(3))),
        "ContinuousBernoulli": lambda: D.ContinuousBernoulli(probs=t(r.uniform(0.1, 0.9, 3))),
        "Dirichlet": lambda: D.Dirichlet(t(pos(3, 4))),
        "Exponential": lambda: D.Exponential(t(pos(3))),
        "Gamma": lambda: D.Gamma(t(pos(3)), t(pos(3))),
        "Geometric": lambda: D.Geometric(probs=t(r.uniform(0.1, 0.9, 3))),
        "Gumbel": lambda: D.Gumbel(t(r.normal(size=3)), t(pos(3))),
        "HalfNormal": lambda: D.HalfNormal(t(pos(3))),
        "Independent": lambda: D.Independent(D.Normal(t(r.normal(size=(3, 2))), t(pos(3, 2))), 1),
        "Laplace": lambda: D.Laplace(t(r.normal(size=3)), t(pos(3))),
        "LowRankMultivariateNormal": lambda: D.LowRankMultivariateNormal(
            t(r.normal(size=(3, 2))), t(r.normal(size=(3, 2, 1))), t(pos(3, 2))),
        "MultivariateNormal": lambda: D.MultivariateNormal(t(r.normal(size=(3, 2))),
                                                           covariance_matrix=t(_spd(2, (3,), r))),
        "Normal": lambda: D.Normal(t(r.normal(size=3)), t(pos(3))),
        "OneHotCategorical": lambda: D.OneHotCategorical(logits=t(r.normal(size=(3, 4)))),
        "Pareto": lambda: D.Pareto(t(pos(3)), t(r.uniform(0.5, 4.0, 3))),
        "Poisson": lambda: D.Poisson(t(pos(3))),
        "TransformedDistribution": lambda: D.TransformedDistribution(D.Normal(t(r.normal(size=3)), t(pos(3))),
                                                                     [D.transforms.ExpTransform()]),
        "Uniform": lambda: D.Uniform(t(r.uniform(-0.5, 0.3, 3)), t(r.uniform(0.6, 1.5, 3))),
        "Wishart": lambda: D.Wishart(t(np.array([3.0, 4.0, 5.5])),
                                     covariance_matrix=t(_spd(2, (3,), r))),
    }
    zoo = {name: makers[name]() for name in sorted(makers) if names is None or name in names}
    return zoo, leaves


_KL_NAMES = sorted(_kl_zoo(hookgrad, 0)[0])


@pytest.mark.parametrize("p_name", _KL_NAMES)
@differential(rtol=1e-7, atol=1e-9)
def test_kl_divergence_matches_torch(T, p_name):
    """KL(p || q) for p of one family against q of every family: values, infinities, gradients, and
    torch's NotImplementedError/ValueError for pairs it does not cover."""
    zoo_p, leaves_p = _kl_zoo(T, 1)
    zoo_q, leaves_q = _kl_zoo(T, 2)
    record = {}
    for q_name in _KL_NAMES:
        p, q = zoo_p[p_name], zoo_q[q_name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kl = catch(T.distributions.kl_divergence, p, q)
        if isinstance(kl, T.Tensor) and kl.requires_grad and bool(kl.isfinite().all()):
            grads = catch(lambda: [g for g in T.autograd.grad(kl.sum(), leaves_p + leaves_q, allow_unused=True,
                                                              retain_graph=True)])
            record[q_name] = (kl, grads)
        else:
            record[q_name] = kl
    return record


@differential
def test_kl_registry_and_dispatch(T):
    D = T.distributions
    registry = sorted((p.__name__, q.__name__) for p, q in D.kl._KL_REGISTRY)

    class MyNormal(D.Normal):
        pass

    class Unrelated(D.Distribution):
        arg_constraints = {}

    calls = []

    @D.register_kl(MyNormal, D.Normal)
    def _kl_mine(p, q):
        calls.append("mine")
        return p.loc * 0

    p = MyNormal(T.tensor([0.0]), T.tensor([1.0]))
    q = D.Normal(T.tensor([1.0]), T.tensor([2.0]))
    mine = D.kl_divergence(p, q)
    inherited = D.kl_divergence(q, MyNormal(T.tensor([0.0]), T.tensor([1.0])))  # falls back to Normal/Normal
    del D.kl._KL_REGISTRY[MyNormal, D.Normal]
    D.kl._KL_MEMOIZE.clear()
    return (registry, mine, inherited, calls, catch(D.register_kl, 3, D.Normal),
            catch(D.kl_divergence, q, Unrelated(validate_args=False)))


# ---- transforms ----------------------------------------------------------------------------------------
def _transforms(T):
    D = T.distributions
    tr = D.transforms
    loc = T.tensor([0.5, -1.0, 2.0], dtype=T.float64, requires_grad=True)
    scale = T.tensor([2.0, -0.5, 1.5], dtype=T.float64, requires_grad=True)
    exponent = T.tensor([0.5, 2.0, 3.0], dtype=T.float64, requires_grad=True)
    return [
        ("Exp", tr.ExpTransform(), (2, 3)),
        ("Affine", tr.AffineTransform(loc, scale), (2, 3)),
        ("Affine_scalar", tr.AffineTransform(1.0, -3.0), (2, 3)),
        ("Affine_event", tr.AffineTransform(loc, scale, event_dim=1), (2, 3)),
        ("Sigmoid", tr.SigmoidTransform(), (2, 3)),
        ("Tanh", tr.TanhTransform(), (2, 3)),
        ("Softplus", tr.SoftplusTransform(), (2, 3)),
        ("Power", tr.PowerTransform(exponent), (2, 3)),
        ("Abs", tr.AbsTransform(), (2, 3)),
        ("Softmax", tr.SoftmaxTransform(), (2, 3)),
        ("StickBreaking", tr.StickBreakingTransform(), (2, 3)),
        ("LowerCholesky", tr.LowerCholeskyTransform(), (2, 3, 3)),
        ("PositiveDefinite", tr.PositiveDefiniteTransform(), (2, 3, 3)),
        ("CorrCholesky", tr.CorrCholeskyTransform(), (2, 3)),
        ("Compose", tr.ComposeTransform([tr.AffineTransform(loc, scale), tr.ExpTransform(),
                                          tr.PowerTransform(exponent)]), (2, 3)),
        ("Compose_event", tr.ComposeTransform([tr.ExpTransform(), tr.StickBreakingTransform(),
                                                tr.AffineTransform(0.0, 2.0, event_dim=1)]), (2, 3)),
        ("Independent", tr.IndependentTransform(tr.SigmoidTransform(), 1), (2, 3)),
        ("Reshape", tr.ReshapeTransform((2, 3), (3, 2)), (4, 2, 3)),
        ("Cat", tr.CatTransform([tr.ExpTransform(), tr.AffineTransform(1.0, 2.0), tr.SigmoidTransform()],
                                dim=-1, lengths=[1, 1, 1]), (2, 3)),
        ("Cat_event", tr.CatTransform([tr.IndependentTransform(tr.ExpTransform(), 1),
                                       tr.StickBreakingTransform()], dim=-1, lengths=[2, 2]), (2, 4)),
        ("Stack", tr.StackTransform([tr.ExpTransform(), tr.TanhTransform()], dim=0), (2, 3)),
        ("Inverse_Sigmoid", tr.SigmoidTransform().inv, (2, 3)),
        ("identity", tr.identity_transform, (2, 3)),
        ("CumulativeDistribution", tr.CumulativeDistributionTransform(
            D.Normal(loc, T.tensor([1.0, 2.0, 0.5], dtype=T.float64))), (2, 3)),
    ]


_TRANSFORM_NAMES = [name for name, _, _ in _transforms(hookgrad)]


@pytest.mark.parametrize("name", _TRANSFORM_NAMES)
@differential(rtol=1e-7, atol=1e-9)
def test_transform_matches_torch(T, name):
    transform, shape = next((t, s) for n, t, s in _transforms(T) if n == name)
    r = np.random.default_rng(len(name))
    x = T.tensor(r.normal(size=shape), dtype=T.float64, requires_grad=True)
    if name in ("Power", "Inverse_Sigmoid"):
        x = T.tensor(r.uniform(0.1, 0.9, shape), dtype=T.float64, requires_grad=True)
    record = {"repr": repr(transform).replace("torch.", "").replace("hookgrad.", ""),
              "bijective": transform.bijective, "sign": catch(lambda: transform.sign),
              "event_dim": catch(lambda: transform.event_dim),
              "domain": repr(transform.domain), "codomain": repr(transform.codomain),
              "domain_event_dim": transform.domain.event_dim, "codomain_event_dim": transform.codomain.event_dim,
              "forward_shape": catch(transform.forward_shape, T.Size(shape)),
              "equal_self": transform == transform,
              "equal_other": transform == T.distributions.transforms.ExpTransform()}
    y = transform(x)
    record["y"] = y
    record["in_codomain"] = catch(lambda: transform.codomain.check(y))
    record["inverse_shape"] = catch(transform.inverse_shape, y.shape)
    x_back = catch(lambda: transform.inv(y))
    record["x_back"] = x_back
    ladj = catch(transform.log_abs_det_jacobian, x, y)
    record["log_abs_det_jacobian"] = ladj
    outputs = [y] + ([ladj] if isinstance(ladj, T.Tensor) else [])
    leaves = [x]
    record["grads"] = [catch(lambda: T.autograd.grad(o.sum(), leaves, allow_unused=True, retain_graph=True))
                       for o in outputs]
    cached = transform.with_cache(1)
    y_cached = cached(x)
    record["cache_returns_input"] = cached.inv(y_cached) is x
    record["inv_inv_is_self"] = transform.inv.inv is transform
    return record


@differential
def test_transform_errors_match_torch(T):
    tr = T.distributions.transforms
    return (catch(tr.ExpTransform, cache_size=2), catch(tr.ReshapeTransform, (2, 3), (5,)),
            catch(tr.ReshapeTransform((2, 3), (6,)).forward_shape, (4, 3)),
            catch(tr.StickBreakingTransform().forward_shape, ()),
            catch(tr.CorrCholeskyTransform().forward_shape, (4,)),
            catch(tr.CorrCholeskyTransform().inverse_shape, (3, 4)),
            catch(lambda: tr.ComposeTransform([tr.ExpTransform(), tr.SoftmaxTransform()]).event_dim),
            catch(lambda: tr.Transform().sign), catch(lambda: tr.AbsTransform().inv(T.ones(2))),
            catch(lambda: tr.AffineTransform(0.0, 1.0).with_cache(1)._cache_size),
            catch(lambda: tr.CatTransform([tr.ExpTransform()], lengths=[1, 2])),
            catch(lambda: tr.IndependentTransform(tr.ExpTransform(), 2)(T.ones(3))))


# ---- constraints and the biject_to / transform_to registries ------------------------------------------
def _constraints(T):
    c = T.distributions.constraints
    return [("real", c.real), ("positive", c.positive), ("nonnegative", c.nonnegative),
            ("unit_interval", c.unit_interval), ("boolean", c.boolean), ("nonnegative_integer", c.nonnegative_integer),
            ("positive_integer", c.positive_integer), ("integer_interval", c.integer_interval(0, 3)),
            ("interval", c.interval(-1.0, 2.0)), ("half_open_interval", c.half_open_interval(-1.0, 2.0)),
            ("greater_than", c.greater_than(1.0)), ("greater_than_eq", c.greater_than_eq(1.0)),
            ("less_than", c.less_than(0.5)), ("real_vector", c.real_vector), ("simplex", c.simplex),
            ("one_hot", c.one_hot), ("multinomial", c.multinomial(4)), ("lower_triangular", c.lower_triangular),
            ("lower_cholesky", c.lower_cholesky), ("corr_cholesky", c.corr_cholesky), ("square", c.square),
            ("symmetric", c.symmetric), ("positive_definite", c.positive_definite),
            ("positive_semidefinite", c.positive_semidefinite),
            ("independent", c.independent(c.positive, 1)),
            ("cat", c.cat([c.positive, c.real, c.unit_interval], dim=-1, lengths=[1, 2, 1])),
            ("stack", c.stack([c.positive, c.unit_interval], dim=0)),
            ("mixture", c.MixtureSameFamilyConstraint(c.positive)),
            ("dependent", c.dependent)]


@pytest.mark.parametrize("name", [n for n, _ in _constraints(hookgrad)])
@differential(rtol=1e-7, atol=1e-9)
def test_constraint_matches_torch(T, name):
    constraint = dict(_constraints(T))[name]
    samples = [np.array([[0.0, 1.0, 1.0, 0.0], [0.3, 0.2, 0.5, 0.0]]), np.array([[2.0, -1.0, 0.5, 3.0]]),
               np.eye(4)[[0, 3]], np.array([[[1.0, 0.0], [0.5, 2.0]], [[1.0, 0.3], [0.3, 1.0]]]),
               np.array([[[0.6, 0.0], [0.8, 0.6]], [[1.0, 0.0], [0.0, 1.0]]]), np.array([[1.0, 2.0, 1.0, 0.0]]),
               np.array([[[2.0, -1.0], [-1.0, 0.4]]]), np.array([[[1.0, 1.0], [1.0, 1.0]]]), np.array([[0.5, math.nan,
                                                                                                    1.5, -0.2]])]
    record = {"repr": repr(constraint).replace("torch.", "").replace("hookgrad.", ""),
              "is_discrete": catch(lambda: constraint.is_discrete), "event_dim": catch(lambda: constraint.event_dim),
              "is_dependent": T.distributions.constraints.is_dependent(constraint)}
    record["checks"] = [catch(constraint.check, T.tensor(s, dtype=T.float64)) for s in samples]
    for registry in ("biject_to", "transform_to"):
        transform = catch(getattr(T.distributions, registry), constraint)
        if isinstance(transform, T.distributions.transforms.Transform):
            shape = {"lower_cholesky": (2, 3, 3), "positive_definite": (2, 3, 3),
                     "positive_semidefinite": (2, 3, 3), "corr_cholesky": (2, 3), "cat": (2, 4), "stack": (2, 3)}
            x = T.tensor(np.random.default_rng(3).normal(size=shape.get(name, (2, 3))), dtype=T.float64)
            y = transform(x)
            record[registry] = (repr(transform).replace("torch.", "").replace("hookgrad.", ""), y,
                                bool(constraint.check(y).all()))
        else:
            record[registry] = transform
    return record


@differential
def test_constraint_registry_errors(T):
    D = T.distributions
    registry = D.constraint_registry.ConstraintRegistry()

    @registry.register(D.constraints.positive)
    def _positive(constraint):
        return D.transforms.ExpTransform()

    return (type(registry(D.constraints.greater_than(3.0))).__name__, catch(registry, D.constraints.real),
            catch(registry.register, 3, _positive), catch(D.biject_to, D.constraints.lower_cholesky),
            catch(D.constraints.dependent.check, T.ones(2)),
            catch(lambda: D.constraints.dependent.event_dim),
            D.constraints.dependent(event_dim=2).event_dim,
            catch(D.constraints.independent(D.constraints.real, 2).check, T.ones(3)))


# ---- argument validation -------------------------------------------------------------------------------
def _message(exc_record):
    text = exc_record.message if hasattr(exc_record, "message") else str(exc_record)
    return text.replace("torch.", "").replace("hookgrad.", "")


@differential
def test_invalid_arguments_raise_torch_errors(T):
    D = T.distributions
    x = T.tensor([1.0, -1.0])
    attempts = [
        lambda: D.Normal(T.zeros(2), x), lambda: D.Gamma(x, T.ones(2)), lambda: D.Beta(T.ones(2), -x),
        lambda: D.Bernoulli(probs=T.tensor([0.5, 1.5])), lambda: D.Bernoulli(),
        lambda: D.Bernoulli(probs=T.tensor(0.5), logits=T.tensor(0.0)),
        lambda: D.Categorical(probs=T.tensor([0.5, -0.1])), lambda: D.Categorical(probs=T.tensor(1.0)),
        lambda: D.Uniform(T.ones(2), T.zeros(2)), lambda: D.Exponential(T.tensor([0.0])),
        lambda: D.Poisson(T.tensor([-1.0])), lambda: D.Binomial(T.tensor([2.5]), probs=T.tensor([0.3])),
        lambda: D.Geometric(probs=T.tensor([0.0])), lambda: D.Dirichlet(T.tensor(1.0)),
        lambda: D.MultivariateNormal(T.zeros(2), covariance_matrix=T.tensor([[1.0, 2.0], [2.0, 1.0]])),
        lambda: D.MultivariateNormal(T.zeros(2)), lambda: D.MultivariateNormal(T.tensor(0.0), T.eye(1)),
        lambda: D.MultivariateNormal(T.zeros(2), scale_tril=T.tensor([[1.0, 1.0], [0.0, 1.0]])),
        lambda: D.LowRankMultivariateNormal(T.zeros(2), T.ones(3, 1), T.ones(2)),
        lambda: D.LKJCholesky(1), lambda: D.Wishart(T.tensor(0.5), covariance_matrix=T.eye(2)),
        lambda: D.Multinomial(T.tensor(3), probs=T.ones(2)), lambda: D.StudentT(T.tensor([-1.0])),
        lambda: D.Independent(D.Normal(T.zeros(2), T.ones(2)), 2),
        lambda: D.MixtureSameFamily(D.Categorical(logits=T.zeros(3)), D.Normal(T.zeros(2), T.ones(2))),
        lambda: D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(T.zeros(2), T.ones(2))),
        lambda: D.TransformedDistribution(D.Normal(0.0, 1.0), "exp"),
        lambda: D.ContinuousBernoulli(probs=T.tensor([1.5]), validate_args=True),
        lambda: D.VonMises(T.zeros(1), T.tensor([-1.0])), lambda: D.Pareto(T.ones(1), T.tensor([-2.0])),
    ]
    records = [catch(a) for a in attempts]
    return [(getattr(r, "cls", None), _message(r)) if hasattr(r, "cls") else type(r).__name__ for r in records]


@differential
def test_invalid_values_raise_torch_errors(T):
    D = T.distributions
    normal = D.Normal(T.zeros(2), T.ones(2))
    values = [lambda: D.Exponential(T.ones(2)).log_prob(T.tensor([-1.0, 1.0])),
              lambda: D.Bernoulli(probs=T.tensor([0.3])).log_prob(T.tensor([0.5])),
              lambda: D.Categorical(probs=T.ones(3)).log_prob(T.tensor([3])),
              lambda: normal.log_prob(T.zeros(3)), lambda: normal.log_prob([0.0, 1.0]),
              lambda: D.Dirichlet(T.ones(3)).log_prob(T.zeros(2)),
              lambda: D.Dirichlet(T.ones(3)).log_prob(T.tensor([0.5, 0.6, 0.1])),
              lambda: D.Beta(2.0, 3.0).cdf(T.tensor(0.5)), lambda: normal.entropy().shape,
              lambda: D.Binomial(T.tensor([2.0, 3.0]), probs=T.tensor([0.3, 0.4])).entropy(),
              lambda: D.Independent(normal, 1).enumerate_support(), lambda: normal.sample_n(3).shape]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        records = [catch(v) for v in values]
    return [(r.cls, _message(r)) if hasattr(r, "cls") else r for r in records]


@differential
def test_validation_switches(T):
    D = T.distributions
    bad = T.tensor([-1.0])
    quiet = D.Normal(T.zeros(1), bad, validate_args=False)
    outside = quiet.log_prob(T.zeros(1))
    D.Distribution.set_default_validate_args(False)
    try:
        unchecked = D.Normal(T.zeros(1), bad).scale
        unchecked_value = D.Exponential(T.ones(1)).log_prob(T.tensor([-1.0]))
    finally:
        D.Distribution.set_default_validate_args(True)
    return (outside, unchecked, unchecked_value, catch(D.Normal, T.zeros(1), bad),
            catch(D.Distribution.set_default_validate_args, 2), D.Distribution._validate_args)


# ---- sampling: statistics with fixed seeds ------------------------------------------------------------
def _h(array):
    return hookgrad.tensor(np.asarray(array, dtype=np.float64))


_SAMPLED = {
    # name -> (distribution, scipy frozen law for a KS test or None)
    "Normal": (lambda D: D.Normal(_h([0.5]), _h([2.0])), stats.norm(0.5, 2.0)),
    "Exponential": (lambda D: D.Exponential(_h([1.5])), stats.expon(scale=1 / 1.5)),
    "Laplace": (lambda D: D.Laplace(_h([0.2]), _h([0.7])), stats.laplace(0.2, 0.7)),
    "Uniform": (lambda D: D.Uniform(_h([-1.0]), _h([3.0])), stats.uniform(-1.0, 4.0)),
    "Cauchy": (lambda D: D.Cauchy(_h([0.0]), _h([1.5])), stats.cauchy(0.0, 1.5)),
    "Gamma": (lambda D: D.Gamma(_h([0.6]), _h([2.0])), stats.gamma(0.6, scale=0.5)),
    "Gamma_large": (lambda D: D.Gamma(_h([7.5]), _h([0.5])), stats.gamma(7.5, scale=2.0)),
    "Beta": (lambda D: D.Beta(_h([0.7]), _h([2.5])), stats.beta(0.7, 2.5)),
    "Chi2": (lambda D: D.Chi2(_h([3.0])), stats.chi2(3.0)),
    "StudentT": (lambda D: D.StudentT(_h([4.0]), _h([1.0]), _h([2.0])), stats.t(4.0, 1.0, 2.0)),
    "LogNormal": (lambda D: D.LogNormal(_h([0.3]), _h([0.5])), stats.lognorm(0.5, scale=math.exp(0.3))),
    "Gumbel": (lambda D: D.Gumbel(_h([1.0]), _h([2.0])), stats.gumbel_r(1.0, 2.0)),
    "HalfNormal": (lambda D: D.HalfNormal(_h([1.5])), stats.halfnorm(scale=1.5)),
    "HalfCauchy": (lambda D: D.HalfCauchy(_h([1.5])), stats.halfcauchy(scale=1.5)),
    "Pareto": (lambda D: D.Pareto(_h([1.0]), _h([3.0])), stats.pareto(3.0)),
    "Weibull": (lambda D: D.Weibull(_h([2.0]), _h([1.5])), stats.weibull_min(1.5, scale=2.0)),
    "FisherSnedecor": (lambda D: D.FisherSnedecor(_h([5.0]), _h([8.0])), stats.f(5.0, 8.0)),
    "InverseGamma": (lambda D: D.InverseGamma(_h([6.0]), _h([2.0])), stats.invgamma(6.0, scale=2.0)),
    "VonMises": (lambda D: D.VonMises(_h([0.5]), _h([2.0])), stats.vonmises(2.0, loc=0.5)),
    "Kumaraswamy": (lambda D: D.Kumaraswamy(_h([2.0]), _h([3.0])), None),
    "ContinuousBernoulli": (lambda D: D.ContinuousBernoulli(_h([0.2])), None),
    "GeneralizedPareto": (lambda D: D.GeneralizedPareto(_h([0.0]), _h([1.0]), _h([0.2])),
                          stats.genpareto(0.2)),
    "Poisson": (lambda D: D.Poisson(_h([3.5])), None),
    "Binomial": (lambda D: D.Binomial(_h([10.0]), probs=_h([0.3])), None),
    "Geometric": (lambda D: D.Geometric(probs=_h([0.3])), None),
    "NegativeBinomial": (lambda D: D.NegativeBinomial(_h([4.0]), probs=_h([0.4])), None),
    "Bernoulli": (lambda D: D.Bernoulli(probs=_h([0.3])), None),
}


@pytest.mark.parametrize("name", sorted(_SAMPLED))
def test_samples_follow_the_distribution(name):
    hookgrad.manual_seed(7)
    build, law = _SAMPLED[name]
    dist = build(hookgrad.distributions)
    draws = dist.sample((20000,))
    assert draws.shape == (20000, 1) and draws.dtype == hookgrad.float64
    x = draws.numpy().ravel()
    assert bool(dist.support.check(draws).all())
    if law is not None:
        assert stats.kstest(x, law.cdf).pvalue > 1e-3, name
    if name not in ("Cauchy", "HalfCauchy", "Pareto", "VonMises"):  # no moments, or circular ones
        mean, var = float(dist.mean), float(dist.variance)
        assert abs(x.mean() - mean) < 5 * math.sqrt(var / x.size), (name, x.mean(), mean)
        assert abs(x.var() - var) < 0.1 * var, (name, x.var(), var)


def test_multivariate_samples_follow_the_distribution():
    hookgrad.manual_seed(3)
    D = hookgrad.distributions
    cov = _h([[2.0, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 0.5]])
    loc = _h([1.0, -1.0, 0.5])
    for dist in (D.MultivariateNormal(loc, covariance_matrix=cov),
                 D.MultivariateNormal(loc, precision_matrix=cov.inverse()),
                 D.LowRankMultivariateNormal(loc, _h([[1.0], [0.5], [-0.2]]), _h([0.5, 0.7, 0.3]))):
        x = dist.sample((40000,)).numpy()
        np.testing.assert_allclose(x.mean(0), dist.mean.numpy(), atol=0.03)
        np.testing.assert_allclose(np.cov(x.T), dist.covariance_matrix.numpy(), atol=0.05)
    dirichlet = D.Dirichlet(_h([0.5, 2.0, 3.5]))
    x = dirichlet.sample((40000,)).numpy()
    np.testing.assert_allclose(x.mean(0), dirichlet.mean.numpy(), atol=0.01)
    np.testing.assert_allclose(x.var(0), dirichlet.variance.numpy(), rtol=0.05)
    multinomial = D.Multinomial(7, probs=_h([0.2, 0.5, 0.3]))
    counts = multinomial.sample((20000,)).numpy()
    assert (counts.sum(-1) == 7).all()
    np.testing.assert_allclose(counts.mean(0), multinomial.mean.numpy(), atol=0.05)
    categorical = D.OneHotCategorical(probs=_h([0.2, 0.5, 0.3]))
    np.testing.assert_allclose(categorical.sample((20000,)).numpy().mean(0), [0.2, 0.5, 0.3], atol=0.015)
    wishart = D.Wishart(_h(6.0), covariance_matrix=cov)
    w = wishart.sample((20000,)).numpy()
    np.testing.assert_allclose(w.mean(0), wishart.mean.numpy(), rtol=0.05, atol=0.05)
    lkj = D.LKJCholesky(3, _h(2.0))
    factors = lkj.sample((5000,))
    assert bool(D.constraints.corr_cholesky.check(factors).all())
    corr = (factors @ factors.mT).numpy()
    # the LKJ(eta) marginal of an off-diagonal entry is Beta(eta - 1 + d/2, same) on [-1, 1]
    marginal = stats.beta(2.0 - 1 + 1.5, 2.0 - 1 + 1.5, loc=-1, scale=2)
    assert stats.kstest(corr[:, 1, 0], marginal.cdf).pvalue > 1e-3
    mixture = D.MixtureSameFamily(D.Categorical(probs=_h([0.3, 0.7])), D.Normal(_h([-2.0, 3.0]), _h([0.5, 1.0])))
    m = mixture.sample((20000,)).numpy()
    assert abs(m.mean() - float(mixture.mean)) < 0.05 and abs(m.var() - float(mixture.variance)) < 0.1
    relaxed = D.RelaxedOneHotCategorical(_h(0.5), probs=_h([0.2, 0.8]))
    r = relaxed.sample((20000,))
    assert bool(D.constraints.simplex.check(r).all())
    assert abs(float((r[:, 1] > 0.5).double().mean()) - 0.8) < 0.02  # Gumbel-max limit
    bern = D.RelaxedBernoulli(_h(0.1), probs=_h([0.3]))
    assert abs(float((bern.sample((20000,)) > 0.5).double().mean()) - 0.3) < 0.02


def test_rsample_gradients_are_reparameterized():
    """d E[f(x)] / d theta from rsample matches the derivative of the closed-form moment."""
    hookgrad.manual_seed(11)
    D = hookgrad.distributions
    cases = [
        (lambda a, b: D.Normal(a, b), [1.0, 2.0], lambda d: d.rsample((40000,)).pow(2).mean(),
         lambda a, b: a ** 2 + b ** 2),
        (lambda a, b: D.Gamma(a, b), [2.5, 1.5], lambda d: d.rsample((40000,)).mean(), lambda a, b: a / b),
        (lambda a, b: D.Gamma(a, b), [0.4, 1.0], lambda d: d.rsample((40000,)).pow(2).mean(),
         lambda a, b: a * (a + 1) / b ** 2),
        (lambda a, b: D.Beta(a, b), [1.5, 2.5], lambda d: d.rsample((40000,)).mean(), lambda a, b: a / (a + b)),
        (lambda a, b: D.Dirichlet(hookgrad.stack([a, b])), [0.8, 1.7], lambda d: d.rsample((40000,))[:, 0].mean(),
         lambda a, b: a / (a + b)),
        (lambda a, b: D.Laplace(a, b), [0.5, 1.5], lambda d: d.rsample((40000,)).abs().mean(), None),
        (lambda a, b: D.StudentT(a + 3, 0.0, b), [2.0, 1.0], lambda d: d.rsample((40000,)).pow(2).mean(),
         lambda a, b: b ** 2 * (a + 3) / (a + 1)),
        (lambda a, b: D.Kumaraswamy(a, b), [2.0, 3.0], lambda d: d.rsample((40000,)).mean(), None),
    ]
    for build, values, estimate, exact in cases:
        a, b = (hookgrad.tensor(v, dtype=hookgrad.float64, requires_grad=True) for v in values)
        estimate(build(a, b)).backward()
        if exact is None:  # compare with the gradient of the mean computed by the density
            continue
        ta, tb = (hookgrad.tensor(v, dtype=hookgrad.float64, requires_grad=True) for v in values)
        exact(ta, tb).backward()
        np.testing.assert_allclose([a.grad.item(), b.grad.item()], [ta.grad.item(), tb.grad.item()], rtol=0.06,
                                   atol=0.02, err_msg=str(values))
    assert not D.Poisson(hookgrad.tensor([1.0])).has_rsample
    try:
        D.Poisson(hookgrad.tensor([1.0])).rsample()
    except NotImplementedError:
        pass
    else:
        raise AssertionError("Poisson.rsample should raise NotImplementedError")


# ---- edge values, broadcasting and Python-number parameters -------------------------------------------
@differential(rtol=1e-6, atol=1e-8)
def test_edge_values_match_torch(T):
    D = T.distributions
    f64 = dict(dtype=T.float64)
    probs01 = T.tensor([0.0, 1.0, 0.5], **f64)
    bits = T.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]], **f64)
    records = {
        "bernoulli": D.Bernoulli(probs=probs01).log_prob(bits),
        "bernoulli_entropy": D.Bernoulli(probs=probs01).entropy(),
        "bernoulli_mode": D.Bernoulli(probs=probs01).mode,
        "categorical_zero": D.Categorical(probs=T.tensor([0.0, 0.3, 0.7], **f64)).log_prob(T.tensor([0, 1, 2])),
        "categorical_zero_entropy": D.Categorical(probs=T.tensor([0.0, 0.3, 0.7], **f64)).entropy(),
        "binomial_edges": D.Binomial(4, probs=probs01).log_prob(T.tensor([0.0, 4.0, 2.0], **f64)),
        "poisson_zero_rate": D.Poisson(T.tensor([0.0, 2.0], **f64)).log_prob(T.tensor([0.0, 0.0], **f64)),
        "geometric_one": D.Geometric(probs=T.tensor([1.0, 0.5], **f64)).log_prob(T.tensor([0.0, 0.0], **f64)),
        "gamma_at_zero": D.Gamma(T.tensor([1.0, 2.0, 0.5], **f64), T.ones(3, **f64)).log_prob(T.zeros(3, **f64)),
        "beta_at_bounds": D.Beta(T.tensor([1.0, 2.0], **f64), T.tensor([1.0, 3.0], **f64)).log_prob(
            T.tensor([0.0, 1.0], **f64)),
        "uniform_bounds": D.Uniform(T.zeros(2, **f64), T.ones(2, **f64), validate_args=False).log_prob(
            T.tensor([0.0, 1.0], **f64)),
        "uniform_cdf_clamped": D.Uniform(0.0, 2.0, validate_args=False).cdf(T.tensor([-1.0, 1.0, 3.0])),
        "exponential_cdf_icdf": D.Exponential(T.tensor([2.0], **f64)).icdf(T.tensor([0.0, 0.5, 1.0], **f64)),
        "normal_icdf_ends": D.Normal(0.0, 1.0).icdf(T.tensor([0.0, 1.0])),
        "laplace_cdf": D.Laplace(0.0, 1.0).cdf(T.tensor([-50.0, 0.0, 50.0])),
        "dirichlet_vertex": D.Dirichlet(T.tensor([1.0, 2.0, 1.0], **f64)).log_prob(T.tensor([0.0, 1.0, 0.0], **f64)),
        "multinomial_zero_prob": D.Multinomial(3, probs=T.tensor([0.0, 0.5, 0.5], **f64)).log_prob(
            T.tensor([0.0, 1.0, 2.0], **f64)),
        "halfnormal_negative": D.HalfNormal(1.0, validate_args=False).log_prob(T.tensor([-1.0, 0.0, 1.0])),
        "studentT_moments": (D.StudentT(T.tensor([0.5, 1.5, 2.0, 3.0])).mean,
                             D.StudentT(T.tensor([0.5, 1.5, 2.0, 3.0])).variance),
        "pareto_moments": (D.Pareto(1.0, T.tensor([0.5, 1.5, 3.0])).mean,
                           D.Pareto(1.0, T.tensor([0.5, 1.5, 3.0])).variance),
        "dirichlet_mode": D.Dirichlet(T.tensor([[0.5, 0.8, 0.3], [2.0, 3.0, 1.5]], **f64)).mode,
        "wishart_mode": D.Wishart(T.tensor([2.5, 6.0], **f64), covariance_matrix=T.eye(2, **f64)).mode,
        "scalar_params": (D.Normal(0.0, 1.0).log_prob(T.tensor(0.5)), D.Normal(0.0, 1.0).batch_shape,
                          D.Gamma(2.0, 3.0).entropy(), D.Beta(2.0, 3.0).mean, D.Exponential(2.0).batch_shape,
                          D.Bernoulli(0.3).entropy(), D.Uniform(0.0, 1.0).mode),
        "broadcast_value": D.Normal(T.zeros(3, 1, **f64), T.ones(4, **f64)).log_prob(T.ones(2, 1, 1, 4, **f64)).shape,
        "mvn_broadcast": D.MultivariateNormal(T.zeros(2, 1, 3, **f64), scale_tril=T.eye(3, **f64).expand(4, 3, 3)
                                              ).log_prob(T.ones(5, 1, 1, 3, **f64)).shape,
        "mvn_lazy": D.MultivariateNormal(T.zeros(3, **f64), precision_matrix=2 * T.eye(3, **f64)).covariance_matrix,
        "lowrank_lazy": (D.LowRankMultivariateNormal(T.zeros(3, **f64), T.ones(3, 1, **f64), T.ones(3, **f64)
                                                     ).precision_matrix,
                         D.LowRankMultivariateNormal(T.zeros(3, **f64), T.ones(3, 1, **f64), T.ones(3, **f64)
                                                     ).scale_tril),
        "logits_of_probs": (D.Categorical(probs=T.tensor([0.2, 0.8], **f64)).logits,
                            D.Bernoulli(logits=T.tensor([0.3], **f64)).probs,
                            D.Binomial(3, logits=T.tensor([0.3], **f64)).probs),
        "param_shapes": (D.Categorical(logits=T.zeros(2, 3)).param_shape, D.Bernoulli(logits=T.zeros(2)).param_shape,
                         D.Multinomial(2, logits=T.zeros(2, 3)).param_shape),
        "dtypes": (D.Normal(0.0, 1.0).sample().dtype, D.Categorical(logits=T.zeros(3)).sample().dtype,
                   D.Poisson(T.tensor([2.0])).sample().dtype, D.Bernoulli(0.5).sample().dtype,
                   D.OneHotCategorical(logits=T.zeros(3)).sample().dtype,
                   D.Categorical(logits=T.zeros(3)).enumerate_support().dtype),
    }
    return records


@differential(rtol=1e-7, atol=1e-9)
def test_value_gradients_match_torch(T):
    """d log_prob / d value, as used by score-based models and Langevin steps."""
    D = T.distributions
    f64 = dict(dtype=T.float64)
    value = T.tensor([0.3, 0.7, 1.5], requires_grad=True, **f64)
    dists = [D.Normal(T.zeros(3, **f64), T.ones(3, **f64)), D.Gamma(2.0 * T.ones(3, **f64), T.ones(3, **f64)),
             D.StudentT(3.0 * T.ones(3, **f64)), D.LogNormal(T.zeros(3, **f64), T.ones(3, **f64)),
             D.Laplace(T.zeros(3, **f64), T.ones(3, **f64)), D.Cauchy(T.zeros(3, **f64), T.ones(3, **f64)),
             D.Gumbel(T.zeros(3, **f64), T.ones(3, **f64)), D.Weibull(T.ones(3, **f64), 2.0 * T.ones(3, **f64))]
    return [T.autograd.grad(d.log_prob(value).sum(), value)[0] for d in dists]


@differential(rtol=1e-7, atol=1e-9)
def test_double_backward_through_log_prob(T):
    D = T.distributions
    loc = T.tensor([0.2, -0.4], dtype=T.float64, requires_grad=True)
    conc = T.tensor([1.5, 3.0], dtype=T.float64, requires_grad=True)
    value = T.tensor([0.5, 1.2], dtype=T.float64)
    total = D.Normal(loc, conc).log_prob(value).sum() + D.Gamma(conc, 2.0).log_prob(value).sum() \
        + D.Beta(conc, conc + 1).entropy().sum()
    (g_loc, g_conc) = T.autograd.grad(total, (loc, conc), create_graph=True)
    return g_loc, g_conc, T.autograd.grad((g_loc.sum() + g_conc.pow(2).sum()), (loc, conc))


@differential
def test_submodules_and_names(T):
    D = T.distributions
    return (sorted(D.__all__), sorted(D.constraints.__all__), sorted(D.transforms.__all__),
            D.normal.Normal is D.Normal, D.relaxed_bernoulli.LogitRelaxedBernoulli.__name__,
            D.kl.kl_divergence is D.kl_divergence, D.utils.euler_constant,
            sorted(k for k in vars(D.utils) if not k.startswith("_") and k in D.utils.__all__),
            D.utils.probs_to_logits(T.tensor([0.25, 0.5]), is_binary=True),
            D.utils.logits_to_probs(T.tensor([[0.0, 1.0]])), D.utils.clamp_probs(T.tensor([0.0, 1.0])),
            D.utils.vec_to_tril_matrix(T.arange(6.0)), D.utils.tril_matrix_to_vec(T.arange(9.0).reshape(3, 3), -1),
            D.utils.vec_to_tril_matrix(T.arange(3.0), -1), catch(D.utils.vec_to_tril_matrix, T.arange(4.0)),
            D.utils.broadcast_all(T.ones(2, 1), 3.0)[1].shape, catch(D.utils.broadcast_all, "a"),
            isinstance(D.Normal.__dict__.get("support"), D.constraints.Constraint),
            D.Uniform.support.event_dim, D.Categorical.support.is_discrete,
            isinstance(D.Bernoulli.logits, D.utils.lazy_property))


@differential(rtol=1e-6, atol=1e-8)
def test_training_objectives_match_torch(T):
    """A policy-gradient loss and a Gaussian ELBO (with fixed noise) through nn layers: the
    parameter gradients torch computes."""
    T.manual_seed(0)
    D = T.distributions
    x = T.tensor(np.linspace(-1, 1, 12).reshape(4, 3), dtype=T.float32)
    policy = T.nn.Linear(3, 5)
    with T.no_grad():
        policy.weight.copy_(T.tensor(np.linspace(-0.5, 0.5, 15).reshape(5, 3), dtype=T.float32))
        policy.bias.fill_(0.1)
    actions = T.tensor([0, 4, 2, 2])
    advantages = T.tensor([1.0, -0.5, 2.0, 0.3])
    dist = D.Categorical(logits=policy(x))
    loss = -(dist.log_prob(actions) * advantages).mean() - 0.01 * dist.entropy().mean()
    loss.backward()
    encoder = T.nn.Linear(3, 4)
    with T.no_grad():
        encoder.weight.copy_(T.tensor(np.linspace(-0.3, 0.4, 12).reshape(4, 3), dtype=T.float32))
        encoder.bias.zero_()
    stats_ = encoder(x)
    posterior = D.Normal(stats_[:, :2], T.nn.functional.softplus(stats_[:, 2:]) + 1e-3)
    prior = D.Normal(T.zeros(2), T.ones(2))
    eps = T.tensor(np.linspace(-1, 1, 8).reshape(4, 2), dtype=T.float32)
    z = posterior.loc + posterior.scale * eps
    elbo = D.Independent(D.Normal(z, T.ones(2)), 1).log_prob(x[:, :2]) - D.kl_divergence(
        D.Independent(posterior, 1), D.Independent(prior, 1))
    (-elbo.mean()).backward()
    return loss, policy.weight.grad, policy.bias.grad, elbo, encoder.weight.grad


def test_gamma_draw_gradient_matches_torch_implicit_gradient():
    """The gradient of a Gamma(alpha, 1) draw w.r.t. alpha at a fixed draw: torch's rational
    approximation (accurate to about 1e-4) against the implicit derivative of the CDF."""
    import torch
    from hookgrad.distributions._sampling import _gamma_draw_grad
    alpha = np.array([0.05, 0.3, 1.0, 2.5, 10.0, 100.0, 0.5, 3.0])
    x = np.array([1e-8, 0.2, 1.0, 2.0, 9.0, 110.0, 5.0, 0.01])
    want = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy()
    np.testing.assert_allclose(_gamma_draw_grad(alpha, x), want, rtol=1e-3)


def test_sampling_is_reproducible_under_manual_seed():
    D = hookgrad.distributions
    builds = [lambda: D.Normal(_h([0.0]), _h([1.0])), lambda: D.Gamma(_h([0.7]), _h([1.0])),
              lambda: D.Poisson(_h([3.0])), lambda: D.Binomial(_h([5.0]), probs=_h([0.4])),
              lambda: D.Dirichlet(_h([1.0, 2.0])), lambda: D.VonMises(_h([0.0]), _h([1.0])),
              lambda: D.Categorical(probs=_h([0.2, 0.8])), lambda: D.Wishart(_h(3.0), covariance_matrix=_h(np.eye(2)))]
    for build in builds:
        hookgrad.manual_seed(5)
        first = build().sample((50,))
        hookgrad.manual_seed(5)
        again = build().sample((50,))
        assert first.tolist() == again.tolist()
        assert first.tolist() != build().sample((50,)).tolist()


@differential
def test_subclass_expand_contract(T):
    D = T.distributions

    class Shifted(D.Normal):
        def __init__(self, loc, validate_args=None):
            super().__init__(loc + 1, T.ones_like(loc), validate_args=validate_args)

    class Plain(D.Normal):
        pass

    plain = Plain(T.zeros(2), T.ones(2)).expand((3, 2))
    return (catch(lambda: Shifted(T.zeros(2)).expand((3, 2))), type(plain).__name__, plain.batch_shape,
            plain.log_prob(T.zeros(3, 2)).shape, warns(lambda: D.Distribution().expand((2,))),
            catch(lambda: D.Distribution(validate_args=False).mean),
            catch(lambda: D.Distribution(validate_args=False).mode))


@differential(rtol=1e-7, atol=1e-9)
def test_pickled_distributions_and_transforms(T):
    import pickle
    D = T.distributions
    normal = pickle.loads(pickle.dumps(D.Normal(T.tensor([0.5]), T.tensor([2.0]))))
    chain = pickle.loads(pickle.dumps(D.transforms.ComposeTransform([D.transforms.ExpTransform(),
                                                                     D.transforms.AffineTransform(1.0, 2.0)])))
    lognormal = pickle.loads(pickle.dumps(D.LogNormal(T.tensor([0.0]), T.tensor([1.0]))))
    return (normal.log_prob(T.tensor([1.0])), chain(T.tensor([3.0, 5.0])), lognormal.log_prob(T.tensor([2.0])),
            repr(chain).replace("torch.", "").replace("hookgrad.", ""))


@differential
def test_unpickled_inverse_transform_fails_like_torch(T):
    import pickle
    inverse = pickle.loads(pickle.dumps(T.distributions.transforms.ExpTransform().inv))
    return catch(inverse, T.ones(2)), catch(lambda: inverse.domain), repr(inverse)


# parameters far from 1: tiny and huge shapes, near-degenerate probabilities
EXTREME_CASES = {
    "Gamma": (lambda D, c, r: D.Gamma(c, r), {"c": np.array([1e-3, 0.05, 40.0, 1e3]), "r": np.array([1e-2, 1.0, 3.0,
                                                                                                    1e3])},
              np.array([1e-6, 0.3, 12.0, 1.0])),
    "Beta": (lambda D, a, b: D.Beta(a, b), {"a": np.array([0.01, 50.0, 0.5]), "b": np.array([0.02, 80.0, 300.0])},
             np.array([0.001, 0.4, 0.002])),
    "Dirichlet": (lambda D, c: D.Dirichlet(c), {"c": np.array([[0.01, 0.02, 0.5], [100.0, 200.0, 50.0]])},
                  np.array([[0.001, 0.9, 0.099], [0.3, 0.55, 0.15]])),
    "StudentT": (lambda D, df: D.StudentT(df), {"df": np.array([0.05, 2.5, 1e4])}, np.array([30.0, -2.0, 0.3])),
    "VonMises": (lambda D, k: D.VonMises(0.0, k), {"k": np.array([1e-6, 3.74, 3.76, 80.0])},
                 np.array([3.0, -1.0, 0.1, 0.05])),
    "ContinuousBernoulli": (lambda D, p: D.ContinuousBernoulli(probs=p), {"p": np.array([1e-9, 0.499, 0.501, 1.0])},
                            np.array([0.9, 0.1, 0.5, 0.2])),
    "Bernoulli_logits": (lambda D, l: D.Bernoulli(logits=l), {"l": np.array([-60.0, 40.0, 0.0])},
                         np.array([1.0, 0.0, 1.0])),
    "Binomial": (lambda D, p: D.Binomial(1000, probs=p), {"p": np.array([1e-6, 0.5, 0.999])},
                 np.array([0.0, 480.0, 1000.0])),
    "Poisson": (lambda D, r: D.Poisson(r), {"r": np.array([1e-8, 1e4])}, np.array([0.0, 9950.0])),
    "NegativeBinomial": (lambda D, n, l: D.NegativeBinomial(n, logits=l), {"n": np.array([0.01, 500.0]),
                                                                         "l": np.array([-20.0, 3.0])},
                         np.array([0.0, 8000.0])),
    "Normal": (lambda D, loc, s: D.Normal(loc, s), {"loc": np.array([1e6, 0.0]), "s": np.array([1e-8, 1e8])},
               np.array([1e6 + 1e-8, 5e8])),
    "Kumaraswamy": (lambda D, a, b: D.Kumaraswamy(a, b), {"a": np.array([0.05, 30.0]), "b": np.array([40.0, 0.1])},
                    np.array([1e-4, 0.999])),
    "LKJCholesky": (lambda D, c: D.LKJCholesky(4, c), {"c": np.array(50.0)}, _corr_cholesky(4)),
}


@pytest.mark.parametrize("name", sorted(EXTREME_CASES))
@differential(rtol=1e-6, atol=1e-8)
def test_extreme_parameters_match_torch(T, name):
    build, arrays, value_array = EXTREME_CASES[name]
    params = _tensors(T, arrays)
    dist = build(T.distributions, **params)
    value = T.tensor(value_array, dtype=T.float64)
    record = {"log_prob": _with_grads(T, lambda: dist.log_prob(value), params),
              "entropy": _with_grads(T, dist.entropy, params)}
    for stat in _STATS:
        record[stat] = _with_grads(T, lambda: getattr(dist, stat), params)
    record["cdf"] = _with_grads(T, lambda: dist.cdf(value), params)
    return record


@differential(rtol=1e-7, atol=1e-9)
def test_infinite_moments_have_zero_gradient(T):
    """Where a moment is infinite (or undefined) torch's masking leaves a zero gradient."""
    D = T.distributions
    a = T.tensor([0.8, 1.5, 3.0], dtype=T.float64, requires_grad=True)
    pareto = D.Pareto(T.ones(3, dtype=T.float64), a)
    t = D.StudentT(a)
    f = D.FisherSnedecor(a, a + 1.6)
    ig = D.InverseGamma(a, T.ones(3, dtype=T.float64))
    return [(m, catch(T.autograd.grad, m[m.isfinite()].sum(), a, allow_unused=True)) for m in
            (pareto.mean, pareto.variance, t.mean, t.variance, f.mean, f.variance, f.mode, ig.mean, ig.variance)]


@differential(rtol=1e-7, atol=1e-9)
def test_boundary_gradients_match_torch(T):
    """Gradients at the edges of the support and of the parameter space (0 * log 0 terms)."""
    D = T.distributions
    f64 = dict(dtype=T.float64, requires_grad=True)

    def grads(make, value, *params):
        leaves = [T.tensor(p, **f64) for p in params]
        out = make(*leaves).log_prob(T.tensor(value, dtype=T.float64))
        return out, catch(T.autograd.grad, out.sum(), leaves, allow_unused=True)

    return [
        grads(lambda c: D.Gamma(c, T.ones(3, dtype=T.float64)), [0.0, 0.0, 0.0], [1.0, 2.0, 0.5]),
        grads(lambda c: D.Dirichlet(c), [0.0, 1.0, 0.0], [1.0, 2.0, 1.0]),
        grads(lambda r: D.Poisson(r), [0.0, 0.0], [0.0, 2.0]),
        grads(lambda p: D.Binomial(4, probs=p), [0.0, 4.0, 2.0], [0.0, 1.0, 0.5]),
        grads(lambda p: D.Bernoulli(probs=p), [0.0, 1.0, 1.0], [0.0, 1.0, 0.5]),
        grads(lambda p: D.Categorical(probs=p), [1, 2], [0.0, 0.3, 0.7]),
        grads(lambda p: D.Geometric(probs=p), [0.0, 0.0], [1.0, 0.5]),
        grads(lambda p: D.Multinomial(3, probs=p), [0.0, 1.0, 2.0], [0.0, 0.5, 0.5]),
        grads(lambda a, b: D.Beta(a, b), [0.0, 1.0], [1.0, 2.0], [1.0, 3.0]),
        grads(lambda lo, hi: D.Uniform(lo, hi), [0.0, 0.5], [0.0, -1.0], [1.0, 1.0]),
    ]


@pytest.mark.parametrize("name", sorted(CASES))
@differential(rtol=1e-6, atol=1e-8)
def test_log_prob_double_backward_matches_torch(T, name):
    build, arrays, value_array = CASES[name]
    params = _tensors(T, arrays)
    dist = build(T.distributions, **params)
    log_prob = dist.log_prob(T.tensor(value_array, dtype=T.float64))
    if not bool(log_prob.isfinite().all()):
        return "non-finite"
    leaves = list(params.values())
    first = T.autograd.grad(log_prob.sum(), leaves, create_graph=True, allow_unused=True)
    used = [g for g in first if g is not None and g.requires_grad]
    if not used:
        return first
    second = catch(T.autograd.grad, sum((g * g).sum() for g in used), leaves, allow_unused=True)
    return first, second


def _second_derivatives(T, out, leaves):
    if not isinstance(out, T.Tensor) or not out.requires_grad or not bool(out.isfinite().all()):
        return "no graph or non-finite"
    first = T.autograd.grad(out.sum(), leaves, create_graph=True, allow_unused=True)
    used = [g for g in first if g is not None and g.requires_grad]
    if not used:
        return first
    return first, catch(T.autograd.grad, sum((g * g).sum() for g in used), leaves, allow_unused=True)


@pytest.mark.parametrize("name", sorted(CASES))
@differential(rtol=1e-6, atol=1e-8)
def test_entropy_double_backward_matches_torch(T, name):
    build, arrays, _ = CASES[name]
    params = _tensors(T, arrays)
    entropy = catch(build(T.distributions, **params).entropy)
    return _second_derivatives(T, entropy, list(params.values())) if isinstance(entropy, T.Tensor) else entropy


@pytest.mark.parametrize("p_name", _KL_NAMES)
@differential(rtol=1e-6, atol=1e-8)
def test_kl_double_backward_matches_torch(T, p_name):
    record = {}
    for q_name in (p_name, "Normal", "Gamma"):
        # fresh graphs for each pair: lazily derived parameters cache theirs
        zoo_p, leaves_p = _kl_zoo(T, 3, {p_name})
        zoo_q, leaves_q = _kl_zoo(T, 4, {q_name})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kl = catch(T.distributions.kl_divergence, zoo_p[p_name], zoo_q[q_name])
        record[q_name] = _second_derivatives(T, kl, leaves_p + leaves_q) if isinstance(kl, T.Tensor) else kl
    return record
