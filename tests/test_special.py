"""torch.special (and torch.erf/lgamma/... and their Tensor forms) against torch: values on edge
values in float32/float64/integer inputs, gradients, gradcheck and gradgradcheck, torch's errors."""
import math

import numpy as np
import pytest

import hookgrad
from difftest import Raised, assert_same, catch, differential, normalize

import torch

EDGES = [0.0, -0.0, math.inf, -math.inf, math.nan, -1.0, -2.5, -0.7, 1e-30, 1e-3, 0.25, 0.5, 0.999, 1.0, 1.5,
         3.3, 7.0, 30.0, 50.0, 1e5, -30.0]

UNARY = ["erf", "erfc", "erfcx", "erfinv", "expit", "exp2", "expm1", "log1p", "gammaln", "digamma", "psi", "i0",
         "i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr", "sinc", "entr", "logit", "round", "bessel_j0",
         "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
         "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
         "airy_ai"]
# torch's own kernels for these are less accurate than SciPy's (Cephes-style approximations evaluated
# in a different order): compared at a looser tolerance
# (torch's float32 Bessel functions are off by up to 1e-5 absolute for large arguments)
LOOSE = {"airy_ai": 1e-5, "bessel_j0": 1e-5, "bessel_j1": 1e-5, "bessel_y0": 1e-5, "bessel_y1": 1e-5}


def _values(T, name, dtype):
    x = T.tensor(EDGES, dtype=getattr(T, dtype))
    return getattr(T.special, name)(x)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", UNARY)
def test_unary_values_on_edge_values(name, dtype):
    want = _values(torch, name, dtype)
    got = _values(hookgrad, name, dtype)
    if name in LOOSE:
        assert_same(normalize(got), normalize(want), rtol=LOOSE[name], atol=1e-8 if dtype == "float64" else 1e-5)
    else:
        assert_same(normalize(got), normalize(want), rtol=1e-12 if dtype == "float64" else 2e-6, atol=0)


@pytest.mark.parametrize("name", [n for n in UNARY if n != "round"])  # torch rounds no integers
def test_unary_integer_inputs_promote_to_the_default_float_dtype(name):
    def run(T):
        x = T.tensor([0, 1, 2, -3, 5])
        out = getattr(T.special, name)(x)
        b = getattr(T.special, name)(T.tensor([True, False]))
        return out, b
    assert_same(normalize(run(hookgrad)), normalize(run(torch)), rtol=LOOSE.get(name, 2e-6),
                atol=1e-30 if name not in LOOSE else 1e-5)


BINARY = ["xlogy", "xlog1py", "zeta", "gammainc", "gammaincc"]
GRID_A = [0.0, -0.0, 1.0, 2.5, -1.0, -1.5, 0.5, math.inf, -math.inf, math.nan, 1e-3, 30.0]
GRID_B = [0.0, 1.0, 2.0, -1.0, -2.0, -0.5, 0.5, math.inf, -math.inf, math.nan, 1e-3, 30.0, -1.5]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", BINARY)
def test_binary_values_on_a_grid_of_edge_values(name, dtype):
    def run(T):
        a = T.tensor(GRID_A, dtype=getattr(T, dtype)).reshape(-1, 1)
        b = T.tensor(GRID_B, dtype=getattr(T, dtype))
        return getattr(T.special, name)(a, b)
    # torch evaluates igamma near a ~ x by its own asymptotic series (agreement to 1e-9 there), and in
    # float32 arithmetic for float32 (SciPy: in double, rounded once): probabilities agree to 1e-7
    igamma = name in ("gammainc", "gammaincc")
    rtol = (1e-8 if igamma else 1e-12) if dtype == "float64" else 2e-6
    atol = 1e-300 if dtype == "float64" else (1e-7 if igamma else 1e-40)  # float32 subnormals round differently
    assert_same(normalize(run(hookgrad)), normalize(run(torch)), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", ["xlogy", "xlog1py", "zeta"])
def test_binary_with_a_number_operand_and_integer_tensors(name):
    def run(T):
        f = getattr(T.special, name)
        ints = T.tensor([0, 1, 3, 4])
        halves = T.tensor([0.5, 2.0, 3.0], dtype=T.float32)
        return f(ints, ints), f(halves, 2.0), f(3.0, halves), f(ints, 2.5).dtype, f(2, ints).dtype
    assert_same(normalize(run(hookgrad)), normalize(run(torch)), rtol=1e-6)


POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
               "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
               "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"]
POLY_X = [0.0, 1.0, -1.0, 0.5, -0.5, 0.3, 0.9, 0.999, 2.0, -3.0, 1e-3, math.inf, -math.inf, 0.75, 0.1]
POLY_N = [-1.0, 0.0, 1.0, 2.0, 3.0, 5.0, 6.0, 7.0, 9.0, 10.0, 20.0, 2.7, math.nan, 130.0, 600.0]
# float32 recurrences run hundreds of steps at high degree, each rounding as the compiled loop does
# (fused multiply-adds or not): float32 is compared up to degree 20, float64 up to 600
POLY_N32 = POLY_N[:-2]
# a NaN x with a degree the recurrence would run for: torch returns an uninitialised value there
# (its loop stops at once on a NaN), so NaN x is compared for low degrees only
NAN_X_N = [-1.0, 0.0, 1.0, 5.0]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_orthogonal_polynomials_follow_torchs_recurrence(name, dtype):
    def run(T):
        x = T.tensor(POLY_X, dtype=getattr(T, dtype)).reshape(-1, 1)
        n = T.tensor(POLY_N if dtype == "float64" else POLY_N32, dtype=getattr(T, dtype))
        f = getattr(T.special, name)
        same_dtype = (f(x, n), f(x, 3), f(0.5, n), f(x, n.nan_to_num().long()),
                      f(math.nan, T.tensor(NAN_X_N, dtype=x.dtype)))
        ints = T.tensor(POLY_N32).nan_to_num().to(T.int64)
        return same_dtype, f(x.to(T.int64), ints)  # in float32
    got, want = run(hookgrad), run(torch)
    # values near a root differ by a few ulps of the polynomial's scale (libm's sin/cos against
    # NumPy's; torch's compiled loops may fuse a multiply-add): compared to a few ulps
    assert_same(normalize(got[0]), normalize(want[0]), rtol=1e-11 if dtype == "float64" else 2e-6,
                atol=1e-13 if dtype == "float64" else 1e-5)
    assert_same(normalize(got[1]), normalize(want[1]), rtol=2e-6, atol=1e-5)


# ---- gradients --------------------------------------------------------------------------------
# name -> (fn(T, x), low, high): inputs drawn in (low, high), where the function is smooth
DIFFERENTIABLE = {
    "erf": (lambda T, x: T.special.erf(x), -2, 2), "erfc": (lambda T, x: T.erfc(x), -2, 2),
    "erfinv": (lambda T, x: x.erfinv(), -0.9, 0.9), "erfcx": (lambda T, x: T.special.erfcx(x), -2, 3),
    "expit": (lambda T, x: T.special.expit(x), -3, 3), "logit": (lambda T, x: T.special.logit(x), 0.05, 0.95),
    "logit_eps": (lambda T, x: T.logit(x, eps=0.2), 0.0, 1.0),
    "gammaln": (lambda T, x: T.special.gammaln(x), 0.2, 5), "lgamma": (lambda T, x: x.lgamma(), -2.8, -2.2),
    "digamma": (lambda T, x: T.special.digamma(x), 0.3, 5), "digamma_neg": (lambda T, x: x.digamma(), -1.8, -1.2),
    "polygamma1": (lambda T, x: T.special.polygamma(1, x), 0.3, 4),
    "polygamma1_neg": (lambda T, x: x.polygamma(1), -0.8, -0.2),
    "polygamma3": (lambda T, x: T.polygamma(3, x), 0.3, 4),
    "multigammaln": (lambda T, x: T.special.multigammaln(x, 3), 1.2, 4),
    "mvlgamma": (lambda T, x: x.mvlgamma(2), 0.7, 4),
    "i0": (lambda T, x: T.special.i0(x), -3, 3), "i0e": (lambda T, x: T.special.i0e(x), -3, 3),
    "i1": (lambda T, x: T.special.i1(x), -3, 3), "i1e": (lambda T, x: T.special.i1e(x), -3, 3),
    "ndtr": (lambda T, x: T.special.ndtr(x), -3, 3), "ndtri": (lambda T, x: T.special.ndtri(x), 0.05, 0.95),
    "log_ndtr": (lambda T, x: T.special.log_ndtr(x), -5, 3), "sinc": (lambda T, x: T.special.sinc(x), -2, 2),
    "entr": (lambda T, x: T.special.entr(x), 0.1, 2),
    "xlogy": (lambda T, x: T.special.xlogy(x[0], x[1].abs() + 0.1), -2, 2),
    "xlogy_scalar_self": (lambda T, x: T.xlogy(2.5, x.abs() + 0.1), -2, 2),
    "xlogy_scalar_other": (lambda T, x: x.xlogy(3.0), -2, 2),
    "xlog1py": (lambda T, x: T.special.xlog1py(x[0], x[1].abs()), -2, 2),
    "xlog1py_scalar_self": (lambda T, x: T.special.xlog1py(-1.5, x.abs()), -2, 2),
    "xlog1py_scalar_other": (lambda T, x: T.special.xlog1py(x, 0.5), -2, 2),
    "zeta_q": (lambda T, x: T.special.zeta(x.detach() * 0 + 3.0, x.abs() + 0.5), -2, 2),
    "zeta_scalar_s": (lambda T, x: T.special.zeta(2.5, x.abs() + 0.5), -2, 2),
    "gammainc_x": (lambda T, x: T.special.gammainc(T.ones_like(x) * 1.7, x.abs() + 0.1), -2, 2),
    "gammaincc_x": (lambda T, x: T.special.gammaincc(T.ones_like(x) * 0.6, x.abs() + 0.1), -2, 2),
}
# their gradient is a constant of the input (torch's too): nothing to differentiate twice
NO_DOUBLE_BACKWARD = {"xlogy_scalar_other", "xlog1py_scalar_other"}


def _inputs(low, high, seed=0):
    return np.random.default_rng(seed).uniform(low, high, size=(2, 3, 4))


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_values_gradients_and_node_names_match_torch(name):
    fn, low, high = DIFFERENTIABLE[name]
    data = _inputs(low, high)

    def run(T):
        x = T.tensor(data, requires_grad=True)
        y = fn(T, x)
        (g,) = T.autograd.grad(y, x, T.tensor(np.linspace(-1, 1, y.numel()).reshape(tuple(y.shape))),
                               create_graph=True)
        gg = catch(lambda: T.autograd.grad((g * g).sum(), x)[0])
        return y, g, gg, type(y.grad_fn).__name__ if name != "ndtr" else None
    assert_same(normalize(run(hookgrad)), normalize(run(torch)), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_gradcheck_and_gradgradcheck(name):
    fn, low, high = DIFFERENTIABLE[name]
    x = hookgrad.tensor(_inputs(low, high, seed=1)[:, :2, :3], requires_grad=True)
    assert hookgrad.autograd.gradcheck(lambda t: fn(hookgrad, t), (x,), eps=1e-6, atol=1e-5, rtol=1e-4)
    if name not in NO_DOUBLE_BACKWARD:
        assert hookgrad.autograd.gradgradcheck(lambda t: fn(hookgrad, t), (x,), eps=1e-6, atol=1e-5, rtol=1e-4)


def test_float32_gradients_keep_the_input_dtype():
    def run(T):
        out = []
        for f in (T.special.erf, T.special.erfinv, T.special.i1e, T.special.log_ndtr, T.special.ndtri):
            x = T.tensor([0.1, 0.4, 0.7], requires_grad=True)
            f(x).sum().backward()
            out.append(x.grad)
        a = T.tensor([0.5, 1.0], requires_grad=True)
        b = T.tensor([2.0, 3.0], dtype=T.float64, requires_grad=True)
        T.special.xlogy(a, b).sum().backward()
        return out, a.grad, b.grad
    assert_same(normalize(run(hookgrad)), normalize(run(torch)), rtol=2e-6)


@differential(rtol=1e-9, atol=1e-12)
def test_gradients_at_edge_values(T):
    out = []
    for name in ("erf", "erfc", "erfinv", "erfcx", "expit", "logit", "gammaln", "digamma", "i0", "i0e", "i1",
                 "i1e", "ndtri", "log_ndtr", "sinc", "entr"):
        x = T.tensor([0.0, 1.0, -1.0, 2.0, math.inf, -math.inf], dtype=T.float64, requires_grad=True)
        getattr(T.special, name)(x).sum().backward()
        out.append((name, x.grad))
    x = T.tensor([0.0, 0.0, 1.0, 2.0], dtype=T.float64, requires_grad=True)
    y = T.tensor([0.0, -1.0, 0.0, math.nan], dtype=T.float64, requires_grad=True)
    T.xlogy(x, y).sum().backward()
    out.append((x.grad, y.grad))
    x = T.tensor([-0.5, 0.0, 0.05, 0.5, 0.95, 1.0, 1.5], dtype=T.float64, requires_grad=True)
    T.logit(x, 0.1).sum().backward()
    out.append(x.grad)
    return out


@differential
def test_derivatives_torch_does_not_implement_raise_not_implemented(T):
    s = T.tensor([2.0, 3.0], dtype=T.float64, requires_grad=True)
    q = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    records = []
    for f in (T.special.zeta, T.special.gammainc, T.special.gammaincc):
        y = f(s, q).sum()
        records.append(catch(lambda: T.autograd.grad(y, s, retain_graph=True)))
        records.append(T.autograd.grad(y, q)[0])
    return records


def test_not_implemented_messages_are_torchs():
    s = hookgrad.tensor([2.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not implemented"):
        hookgrad.special.zeta(s, hookgrad.tensor([1.0])).sum().backward()
    with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is not implemented"):
        hookgrad.igamma(s, hookgrad.tensor([1.0])).sum().backward()


@differential(rtol=1e-6)
def test_functions_without_gradient_give_results_that_do_not_require_grad(T):
    x = T.tensor([0.5, 1.5], requires_grad=True)
    out = []
    for name in ("bessel_j0", "modified_bessel_k1", "airy_ai", "spherical_bessel_j0"):
        y = getattr(T.special, name)(x)
        out.append((y.requires_grad, y.grad_fn is None))
    y = T.special.chebyshev_polynomial_t(x, 3)
    out.append((y.requires_grad, y))
    return out


# ---- torch.* functions and Tensor methods ------------------------------------------------------
@differential(rtol=1e-12)
def test_torch_functions_and_tensor_methods_with_in_place_forms(T):
    base = T.tensor([0.1, 0.4, 0.8, 1.7], dtype=T.float64)
    out = [T.erf(base), T.erfc(base), T.erfinv(base * 0.5), T.lgamma(base), T.digamma(base), T.polygamma(2, base),
           T.mvlgamma(base + 2, 3), T.i0(base), T.sinc(base), T.logit(base * 0.5), T.logit(base, 0.2),
           T.xlogy(base, base), T.igamma(base, base + 1), T.igammac(base, base + 1), base.erf(), base.erfc(),
           base.erfinv(), base.lgamma(), base.digamma(), base.polygamma(1), base.mvlgamma(p=1), base.i0(),
           base.sinc(), base.logit(), base.xlogy(2.0), base.igamma(base), base.igammac(base)]
    for name, args in (("erf_", ()), ("erfc_", ()), ("erfinv_", ()), ("lgamma_", ()), ("digamma_", ()),
                       ("polygamma_", (1,)), ("mvlgamma_", (1,)), ("i0_", ()), ("sinc_", ()), ("logit_", (0.25,)),
                       ("xlogy_", (3.0,)), ("igamma_", (base,)), ("igammac_", (base,))):
        y = base.clone() * 0.5
        r = getattr(y, name)(*args)
        out.append((name, y, r is y))
    return out


@differential(rtol=1e-12)
def test_in_place_forms_record_the_gradient(T):
    x = T.tensor([0.2, 0.3, 0.6], dtype=T.float64, requires_grad=True)
    y = x * 1
    y.erfinv_()
    y.lgamma_()
    y.polygamma_(1)
    y.sum().backward()
    return x.grad, type(y.grad_fn).__name__


@differential
def test_bad_input_raises_torchs_exception_classes(T):
    x = T.tensor([0.2, 1.0, 3.0])
    return [T.mvlgamma(x, 2), catch(lambda: T.mvlgamma(x + 5, 0)), catch(lambda: T.polygamma(-1, x)),
            catch(lambda: T.special.xlogy(T.ones(2), T.ones(3))), catch(lambda: T.special.erf("a")),
            catch(lambda: T.igamma(x, 2.0)),
            catch(lambda: T.special.chebyshev_polynomial_t(T.ones(2), T.ones(3)))]


@differential(rtol=1e-12)
def test_reexported_functions_of_torch_special(T):
    x = T.tensor([[0.1, -2.0, 3.5], [1.0, 0.0, -0.4]], dtype=T.float64)
    S = T.special
    return [S.exp2(x), S.expm1(x), S.log1p(x.abs()), S.round(x * 3), S.softmax(x, 1), S.log_softmax(x, 0),
            S.logsumexp(x, 1), S.logsumexp(x, 0, keepdim=True), S.softmax(x, 0, dtype=T.float32), S.psi(x),
            S.multigammaln(x.abs() + 2, 2), S.expit(x)]


def test_special_namespace_covers_torch_special():
    public = {n for n in dir(torch.special) if not n.startswith("_") and callable(getattr(torch.special, n))
              and getattr(torch.special, n).__module__ in (None, "torch._C._special", "torch.special")}
    public -= {"Tensor"}
    missing = sorted(n for n in public if not hasattr(hookgrad.special, n))
    assert not missing, missing


def test_scripts_import_torch_special_under_hookgrad_run(tmp_path):
    import subprocess
    import sys
    script = tmp_path / "s.py"
    script.write_text("import torch\nimport torch.special\nfrom torch.special import erf, gammaln\n"
                      "x = torch.tensor([0.5, 2.0], requires_grad=True)\n"
                      "(erf(x) + gammaln(x) + torch.special.i0e(x)).sum().backward()\n"
                      "print(type(torch.special).__name__, x.grad.tolist())\n")
    out = subprocess.run([sys.executable, "-m", "hookgrad", "run", str(script)], capture_output=True, text=True,
                         check=True).stdout
    x = torch.tensor([0.5, 2.0], requires_grad=True)
    (torch.special.erf(x) + torch.special.gammaln(x) + torch.special.i0e(x)).sum().backward()
    name, grads = out.split(" ", 1)
    assert name == "module"
    np.testing.assert_allclose(eval(grads), x.grad.tolist(), rtol=1e-6)


@differential
def test_a_missing_derivative_raises_even_when_no_gradient_reaches_the_node(T):
    class DropSecond(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a.clone()

        @staticmethod
        def backward(ctx, g):
            return g, None

    x = T.tensor([0.5, 1.5], dtype=T.float64, requires_grad=True)
    records = []
    for make in (lambda: T.special.zeta(x + 1.5, 2.0), lambda: T.special.zeta(x + 1.5, x),
                 lambda: T.igamma(x, x + 1), lambda: T.special.zeta(2.0, x + 1), lambda: T.xlogy(x, x)):
        y = DropSecond.apply(x * 1, make())
        records.append((type(make().grad_fn).__name__, catch(lambda: T.autograd.grad(y.sum(), x)[0])))
    return records


@differential(rtol=1e-12)
def test_normal_distribution_cdf_and_icdf_with_gradients(T):
    loc = T.tensor([0.0, 1.0, -2.0], dtype=T.float64, requires_grad=True)
    scale = T.tensor([1.0, 0.5, 3.0], dtype=T.float64, requires_grad=True)
    normal = T.distributions.Normal(loc, scale)
    value = T.tensor([0.3, 1.2, -7.0], dtype=T.float64)
    q = T.tensor([0.1, 0.5, 0.975], dtype=T.float64)
    c, i = normal.cdf(value), normal.icdf(q)
    (c.sum() + i.sum()).backward()
    return c, i, loc.grad, scale.grad, normal.icdf(normal.cdf(value))


@differential
def test_incomplete_gamma_has_no_integer_kernel(T):
    i, f = T.tensor([1, 2]), T.tensor([1.0, 2.0])
    flags = T.tensor([True])
    return [catch(T.igamma, i, i), catch(T.special.gammaincc, i, i), catch(T.igamma, flags, flags),
            T.igamma(i, f), T.special.gammaincc(f, i)]


def test_incomplete_gamma_integer_message_is_torchs():
    with pytest.raises(NotImplementedError, match="\"igamma_cpu\" not implemented for 'Long'"):
        hookgrad.igamma(hookgrad.tensor([1]), hookgrad.tensor([2]))
