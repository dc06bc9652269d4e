"""Complex tensors against torch: dtypes and promotion, printing, the parts as views, conjugation,
errors for what torch does not define on complex numbers, gradients in torch's convention (the
conjugate Wirtinger derivative), complex gradcheck, torch.fft's conventions and the rotary-embedding
pattern with hooks on the complex intermediate. The ops' values and gradients are also rows of the
op-test registry (tests/op_cases.py, block "complex tensors and torch.fft")."""
import warnings

import numpy as np
import pytest

import hookgrad
from difftest import catch, differential, warns

RNG = np.random.default_rng(7)
Z = RNG.standard_normal(4) + 1j * RNG.standard_normal(4)
W = RNG.standard_normal(4) + 1j * RNG.standard_normal(4)
R = RNG.standard_normal(4)
A = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3)) + 3 * np.eye(3)


def _name(dtype):
    return str(dtype).split(".")[-1]


@differential
def test_dtypes_aliases_and_promotion(T):
    c, d = T.cfloat, T.cdouble
    out = [c, d, T.complex64, T.complex128, T.chalf, T.complex32, c.is_complex, c.is_floating_point, c.itemsize]
    out += [T.promote_types(a, b) for a, b in [(T.float64, T.complex64), (T.float16, T.complex64), (T.int64, d),
                                                (T.bool, c), (T.bfloat16, c), (c, d), (T.float16, T.complex32)]]
    f32, f64, i64 = T.ones(2), T.ones(2, dtype=T.float64), T.ones(2, dtype=T.int64)
    out += [(f32 + 1j).dtype, (f64 + 1j).dtype, (i64 * 1j).dtype, (f32 * T.tensor(1j, dtype=d)).dtype,
            (f64 * T.tensor(1j, dtype=c)).dtype, (i64 * T.tensor(1j, dtype=d)).dtype,
            (T.tensor(2.0, dtype=T.float64) * T.ones(2, dtype=c)).dtype, (T.ones(2, dtype=c) + T.ones(2, dtype=d)).dtype,
            T.tensor(1j).dtype, T.tensor([1, 2j]).dtype, T.tensor(np.array([1j])).dtype, T.as_tensor(np.array([1j])).dtype,
            T.randn(2, dtype=c).dtype, T.rand(2, dtype=d).dtype, T.zeros(2, dtype=c), T.ones(2, 2, dtype=d),
            T.full((2,), 1 + 2j).dtype, T.is_complex(T.ones(1, dtype=c)), T.ones(1, dtype=c).is_floating_point(),
            T.result_type(T.ones(1), 1j)]
    return out


def test_default_dtype_float64_gives_complex128():
    import torch
    for T in (torch, hookgrad):
        T.set_default_dtype(T.float64)
        try:
            got = [_name(T.tensor(1j).dtype), _name((T.ones(2, dtype=T.int64) + 1j).dtype),
                   _name((T.ones(2, dtype=T.float32) + 1j).dtype)]
        finally:
            T.set_default_dtype(T.float32)
        assert got == ["complex128", "complex128", "complex64"], T


@differential
def test_printing(T):
    values = [T.tensor([1 + 2j, 3 - 1j, -0.5 + 0.25j]), T.tensor([1 + 2j, 3 - 1j], dtype=T.cdouble),
              T.tensor(1 + 2j), T.tensor([[1e10 + 2j, 3 - 1j]]), T.tensor([1.5 + 2j, 3 - 1j]), T.zeros(2, dtype=T.cfloat),
              T.tensor([float("nan") + 1j, 2 - 1j * float("inf")]), T.ones(2, 3, dtype=T.cfloat) * (1 + 1j),
              T.tensor([1 + 2j], requires_grad=True), T.tensor([0.001 + 100j, -3j])]
    return [repr(v).replace("torch.", "").replace("hookgrad.", "") for v in values]


@differential
def test_parts_are_views_that_share_memory(T):
    z = T.zeros(3, dtype=T.cfloat)
    r = z.real
    r[0] = 5.0
    z.imag[1] = 2.0
    z.real = T.tensor([1.0, 2.0, 3.0])
    v = T.view_as_real(z)
    v[2, 1] = 9.0
    pairs = T.arange(6.0).reshape(3, 2)
    c = T.view_as_complex(pairs)
    c[1] = 7 - 1j
    real_view = T.ones(2).real
    return [z, r, v, v.shape, v.stride(), c, pairs, c.dtype, z.real.stride(), z.imag.stride(),
            z.real._base is z, v._base is z, c._base is pairs, z.real.dtype, z.cdouble().imag.dtype,
            T.view_as_complex(T.zeros(3, 3, 2, dtype=T.float64)[:, :2]).shape, real_view]


@differential
def test_view_errors(T):
    return [catch(T.view_as_complex, T.ones(3, 4)), catch(T.view_as_complex, T.ones(3, 2).t().contiguous().t()),
            catch(T.view_as_complex, T.ones(5)[1:].reshape(2, 2)), catch(T.view_as_complex, T.ones(4, 2).long()),
            catch(T.view_as_real, T.ones(3)), catch(lambda: T.ones(3).imag),
            catch(T.complex, T.ones(2), T.ones(2, dtype=T.float64)), catch(T.complex, T.ones(2).long(), T.ones(2).long()),
            catch(T.polar, T.ones(2), T.ones(2, dtype=T.float64)), T.view_as_complex(T.tensor([1.0, 2.0]))]


@differential
def test_conjugation_and_elementwise(T):
    z = T.tensor(Z)
    w = T.tensor(W)
    out = [z.conj(), z.conj_physical(), z.resolve_conj(), z.resolve_neg(), T.conj(z), z.angle(), z.abs(), z.sgn(),
           T.ones(2).conj(), T.tensor([-1.0, 2.0]).angle(), T.complex(T.tensor(R), T.tensor(R) * 2), T.polar(T.tensor(R).abs(), T.tensor(R)),
           z * w, z / w, z + 1, 1j * z, z - w, z ** 2, z ** 0.5, 2 ** z, z.exp(), z.log(), z.sqrt(), z.sigmoid(), z.tanh(),
           z.sin(), z.reciprocal(), z.square(), z.rsqrt(), z.sum(), z.mean(), z.prod(), z.cumsum(0), z.cumprod(0),
           z.var(), z.std(), z.norm(), T.linalg.vector_norm(z, 1), z.reshape(2, 2) @ w.reshape(2, 2),
           T.einsum("i,i->", z, w), T.vdot(z, w), T.dot(z, w), T.cat([z, w]), T.stack([z, w]), z[[0, 2]], z.flip(0),
           T.where(z.real > 0, z, w), z == w, z != z, T.isclose(z, z), z.isfinite(), T.isreal(T.tensor([1 + 0j, 1j])),
           z.reshape(2, 2).H, z.reshape(2, 2).mH, z.reshape(2, 2).adjoint(), z.cfloat(), z.cdouble().dtype,
           T.ones(2).cfloat(), T.ones(2).to(T.cdouble)]
    z2 = z.clone()
    z2.conj_physical_()
    return out + [z2]


@differential
def test_conversion_to_real_warns_and_keeps_the_real_part(T):
    z = T.tensor(Z)
    T.set_warn_always(True)  # torch warns once per process otherwise
    try:
        return [warns(lambda: z.float()), warns(lambda: z.to(T.float64)), warns(lambda: z.long())]
    finally:
        T.set_warn_always(False)


OPS_TORCH_REFUSES = {
    "lt": lambda T, z: z < z, "le": lambda T, z: z <= 1, "gt": lambda T, z: z > z, "ge": lambda T, z: z >= z,
    "max": lambda T, z: z.max(), "min": lambda T, z: z.min(), "max_dim": lambda T, z: z.max(0), "amax": lambda T, z: z.amax(),
    "amin": lambda T, z: z.amin(), "argmax": lambda T, z: z.argmax(), "argmin": lambda T, z: z.argmin(),
    "maximum": lambda T, z: T.maximum(z, z), "minimum": lambda T, z: T.minimum(z, z), "fmax": lambda T, z: T.fmax(z, z),
    "clamp": lambda T, z: z.clamp(0, 1), "clamp_min": lambda T, z: z.clamp(min=0), "relu": lambda T, z: T.relu(z),
    "sort": lambda T, z: z.sort(), "argsort": lambda T, z: z.argsort(), "topk": lambda T, z: z.topk(1),
    "cummax": lambda T, z: z.cummax(0), "median": lambda T, z: z.median(), "unique": lambda T, z: z.unique(),
    "remainder": lambda T, z: z % 2, "floor_divide": lambda T, z: z // 2, "atan2": lambda T, z: T.atan2(z, z),
    "sign": lambda T, z: z.sign(), "floor": lambda T, z: z.floor(), "ceil": lambda T, z: z.ceil(),
    "round": lambda T, z: z.round(), "trunc": lambda T, z: z.trunc(), "frac": lambda T, z: z.frac(),
    "heaviside": lambda T, z: T.heaviside(z, z), "erf": lambda T, z: z.erf(), "logit": lambda T, z: z.logit(),
    "deg2rad": lambda T, z: z.deg2rad(), "H_1d": lambda T, z: z.H, "solve_mixed": lambda T, z: T.linalg.solve(
        T.eye(2, dtype=T.cdouble), z[:2, None]),
}


@pytest.mark.parametrize("name", sorted(OPS_TORCH_REFUSES))
@differential
def test_ops_torch_refuses_on_complex_raise_its_error(T, name):
    return catch(OPS_TORCH_REFUSES[name], T, T.tensor(Z.astype(np.complex64)))


def test_refused_op_names_the_type():
    with pytest.raises(NotImplementedError, match="\"lt_cpu\" not implemented for 'ComplexDouble'"):
        hookgrad.tensor(Z) < hookgrad.tensor(Z)


def test_complex32_holds_tensors_in_torchs_layout():
    """complex32 tensors exist (tests/test_complex32.py compares them with torch): two float16 parts
    per element, four bytes, viewable as float16."""
    assert hookgrad.complex32.is_complex and hookgrad.promote_types(hookgrad.half, hookgrad.chalf) is hookgrad.chalf
    z = hookgrad.zeros(2, dtype=hookgrad.chalf)
    assert z.dtype is hookgrad.chalf and z.element_size() == 4 and z.view(hookgrad.float16).shape == (4,)


# ---- gradients: torch's convention ------------------------------------------------------------------
LOSSES = {
    "mul": lambda T, z, w, r: (z * w).abs().sum(),
    "mul_real": lambda T, z, w, r: (z * r).abs().sum() + (r * 1j).imag.sum(),
    "div": lambda T, z, w, r: (z / w).real.sum() + (w / z).imag.sum() + (r / z).abs().sum(),
    "exp_log": lambda T, z, w, r: z.exp().real.sum() + z.log().imag.sum() + z.sqrt().abs().sum(),
    "sigmoid_tanh": lambda T, z, w, r: (z.sigmoid() * w.tanh()).abs().sum(),
    "angle_abs_sgn": lambda T, z, w, r: z.angle().sum() + (z.abs() ** 2).sum() + (z.sgn() * w).real.sum(),
    "conj": lambda T, z, w, r: (z.conj() * w).imag.sum() + z.conj_physical().real.sum(),
    "pow": lambda T, z, w, r: (z ** 3).real.sum() + (z ** w).abs().sum() + (2 ** z).angle().sum(),
    "matmul": lambda T, z, w, r: (z.reshape(2, 2) @ w.reshape(2, 2)).abs().sum() + T.vdot(z, w).real,
    "einsum_bmm": lambda T, z, w, r: T.einsum("ij,jk->ik", z.reshape(2, 2), w.reshape(2, 2)).angle().sum()
    + T.bmm(z.reshape(1, 2, 2), w.reshape(1, 2, 2)).imag.sum(),
    "complex_polar": lambda T, z, w, r: (T.complex(r, r * 2) * z).abs().sum() + (T.polar(r.abs(), r) * z).real.sum(),
    "views": lambda T, z, w, r: T.view_as_real(z * w).pow(2).sum()
    + T.view_as_complex(T.stack([r, r * r], -1)).mul(z).abs().sum() + z.real.sum() * z.imag.sum(),
    "reductions": lambda T, z, w, r: z.prod().abs() + z.mean().abs() + z.sum().angle() + z.cumprod(0).abs().sum()
    + z.var() + z.std() + z.norm(),
    "to_complex": lambda T, z, w, r: (r.to(T.cdouble) * z).abs().sum() + (r.cdouble() + z).abs().sum(),
    "linalg": lambda T, z, w, r: T.linalg.det(z.reshape(2, 2)).abs() + T.linalg.inv(z.reshape(2, 2) + 3).abs().sum()
    + T.linalg.solve(z.reshape(2, 2) + 3, w.reshape(2, 2)).abs().sum() + T.linalg.slogdet(z.reshape(2, 2)).logabsdet,
}


@pytest.mark.parametrize("name", sorted(LOSSES))
@differential(rtol=1e-7, atol=1e-9)
def test_gradients_of_a_real_loss_match_torch(T, name):
    z, w = T.tensor(Z, requires_grad=True), T.tensor(W, requires_grad=True)
    r = T.tensor(R, requires_grad=True)
    loss = LOSSES[name](T, z, w, r)
    loss.backward()
    return [loss, z.grad, w.grad, r.grad]


@differential(rtol=1e-7, atol=1e-9)
def test_complex_upstream_gradient_and_double_backward(T):
    z = T.tensor(Z, requires_grad=True)
    out = (z * z).exp() * z.conj()
    (g,) = T.autograd.grad(out, z, T.tensor(W), create_graph=True)
    (gg,) = T.autograd.grad(g.abs().sum(), z)
    return [g, gg]


@differential(rtol=1e-7, atol=1e-9)
def test_inplace_through_the_parts_keeps_the_graph(T):
    leaf = T.tensor(Z, requires_grad=True)
    z = leaf * 1
    z.real.mul_(2)
    T.view_as_real(z)[1, 1] = 3.0
    im = z.imag
    z.mul_(1j)
    (z * z).abs().sum().backward()
    x = T.tensor(R, requires_grad=True) * 1
    c = T.view_as_complex(x.view(2, 2))
    c.mul_(1j)
    (gx,) = T.autograd.grad((c * (1 + 2j)).real.sum(), x)
    return [leaf.grad, z, im, c, x, gx]


GRADCHECKS = {
    "mul": lambda T: (lambda z, w: z * w, 2), "exp_div": lambda T: (lambda z: z.exp() / (z + 3), 1),
    "abs": lambda T: (lambda z: z.abs(), 1), "angle": lambda T: (lambda z: z.angle(), 1), "sgn": lambda T: (lambda z: z.sgn(), 1),
    "view_as_real_conj": lambda T: (lambda z: T.view_as_real(z.conj().resolve_conj()), 1),
    "fft": lambda T: (lambda z: T.fft.fft(z, n=5), 1), "irfft": lambda T: (lambda z: T.fft.irfft(z, n=5), 1),
    "hfft": lambda T: (lambda z: T.fft.hfft(z), 1), "not_holomorphic": lambda T: (lambda z: z.conj() * z.abs(), 1),
    "eig": lambda T: (lambda z: T.linalg.eigvals(z.reshape(2, 2)), 1),
}


@pytest.mark.parametrize("name", sorted(GRADCHECKS))
@differential
def test_gradcheck_takes_complex_inputs(T, name):
    fn, n = GRADCHECKS[name](T)
    inputs = [T.tensor(Z, requires_grad=True), T.tensor(W, requires_grad=True)][:n]
    return [T.autograd.gradcheck(fn, inputs), T.autograd.gradgradcheck(fn, inputs)]


@differential
def test_gradcheck_catches_a_missing_conjugate(T):
    class Square(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x  # torch's convention wants g * conj(2 x)

    z = T.tensor(Z, requires_grad=True)
    return [T.autograd.gradcheck(Square.apply, (z,), raise_exception=False),
            T.autograd.gradcheck(lambda x: x * x, (z,), raise_exception=False)]


# ---- torch.fft's conventions ------------------------------------------------------------------------
@differential
def test_fft_dtypes_freqs_and_errors(T):
    x32, x64 = T.ones(4), T.ones(4, dtype=T.float64)
    out = [T.fft.fft(x32).dtype, T.fft.fft(x64).dtype, T.fft.fft(T.arange(4)).dtype, T.fft.rfft(T.arange(4)).dtype,
           T.fft.irfft(T.ones(3, dtype=T.cfloat)).dtype, T.fft.hfft(T.ones(3, dtype=T.cdouble)).shape,
           T.fft.ihfft(x64).dtype, T.fft.fftfreq(5), T.fft.rfftfreq(6, 0.5), T.fft.fftfreq(4, dtype=T.float64),
           T.fft.fftshift(T.arange(6).reshape(2, 3)), T.fft.ifftshift(T.arange(5)), T.fft.fft2(T.ones(2, 3)).shape,
           T.fft.rfftn(T.ones(2, 3, 4), s=(3, 6)).shape, T.fft.irfftn(T.ones(2, 3, dtype=T.cfloat)).shape,
           T.fft.fftn(T.ones(2, 3), s=(4,)).shape, T.fft.fft(T.tensor(Z), norm="ortho"),
           T.fft.ifft(T.tensor(Z), n=6, norm="forward"), T.fft.irfft(T.tensor(Z), n=5, norm="backward")]
    errors = [catch(T.fft.rfft, T.ones(3, dtype=T.cfloat)), catch(T.fft.fft, T.ones(3), n=0),
              catch(T.fft.fft, T.ones(3), norm="bad"), catch(T.fft.irfft, T.ones(1)),
              catch(T.fft.fftn, T.ones(3, 3), dim=(0, 0)), catch(T.fft.fftn, T.ones(3, 3), s=(2,), dim=(0, 1)),
              catch(T.fft.ihfft, T.ones(3, dtype=T.cfloat))]
    return out + errors


def test_fft_namespace_is_complete():
    import torch
    public = sorted(n for n in dir(torch.fft) if not n.startswith("_") and callable(getattr(torch.fft, n))
                    and n != "Tensor")
    assert [n for n in public if not hasattr(hookgrad.fft, n)] == []


# ---- the rotary-embedding pattern, with hooks on the complex intermediate --------------------------------
def _rotary(T, log, replace):
    rng = np.random.default_rng(3)
    xq = T.tensor(rng.standard_normal((2, 5, 2, 8)), dtype=T.float32, requires_grad=True)
    theta = 1.0 / (10000 ** (T.arange(0, 8, 2)[:4].float() / 8))
    freqs = T.outer(T.arange(5).float(), theta)
    freqs_cis = T.polar(T.ones_like(freqs), freqs)
    xq_ = T.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xq_.register_hook(lambda g: log.append(("tensor_hook", g.dtype, g.clone())) or (g * replace if replace else None))
    xq_.grad_fn.register_prehook(lambda gout: log.append(("pre", [g.dtype for g in gout])))
    xq_.grad_fn.register_hook(lambda gin, gout: log.append(("node", [g.dtype for g in gin], [g.dtype for g in gout])))
    rotated = xq_ * freqs_cis.view(1, 5, 1, 4)
    rotated.retain_grad()
    out = T.view_as_real(rotated).flatten(3).type_as(xq)
    weight = T.tensor(rng.standard_normal(tuple(out.shape)), dtype=T.float32)
    (out * weight).sum().backward()
    return [out, xq.grad, rotated.grad, log, type(out.grad_fn).__name__ if False else out.grad_fn.name()]


@pytest.mark.parametrize("replace", [None, 2.0, 1j])
@differential(rtol=1e-5, atol=1e-6)
def test_rotary_embedding_with_hooks_on_the_complex_intermediate(T, replace):
    return _rotary(T, [], replace)


@differential
def test_creation_and_inplace_rules(T):
    z = T.tensor(Z)
    return [T.linspace(0, 1j, 3), T.linspace(1 + 1j, 2, 4, dtype=T.cdouble), catch(T.arange, 3, dtype=T.cfloat),
            catch(lambda: z.clone().abs_()), T.tensor([-1.0, 2.0]).abs_(), T.full((2,), 2 + 1j), T.eye(2, dtype=T.cfloat)]


@pytest.mark.parametrize("options", [dict(n_fft=8), dict(n_fft=8, hop_length=3, win_length=6, window="hann"),
                                     dict(n_fft=16, center=False, normalized=True), dict(n_fft=8, onesided=False),
                                     dict(n_fft=10, hop_length=5, win_length=10, window="hamming", pad_mode="constant")])
@differential(rtol=1e-7, atol=1e-9)
def test_stft_and_istft(T, options):
    options = dict(options)
    windows = {"hann": T.hann_window, "hamming": T.hamming_window}
    if "window" in options:
        options["window"] = windows[options["window"]](options["win_length"], dtype=T.float64)
    rng = np.random.default_rng(5)
    x = T.tensor(rng.standard_normal((2, 40)), requires_grad=True)
    spec = T.stft(x, return_complex=True, **options)
    upstream = rng.standard_normal(tuple(spec.shape)) + 1j * rng.standard_normal(tuple(spec.shape))
    (spec * T.tensor(upstream)).real.sum().backward()
    inverse_options = {k: v for k, v in options.items() if k != "pad_mode"}
    again = spec.detach().requires_grad_()
    y = T.istft(again, length=40, **inverse_options)
    (y * T.arange(40.0, dtype=T.float64)).sum().backward()
    x1 = T.tensor(rng.standard_normal(40))
    return [spec, x.grad, y, again.grad, T.stft(x1, 8, return_complex=False, window=T.ones(8)).shape,
            x1.stft(8, window=T.ones(8), return_complex=True).shape, catch(T.stft, x1, 8),
            catch(T.stft, x1, 80, return_complex=True, center=False), catch(T.istft, T.ones(5, 3), 8),
            catch(T.istft, T.ones(4, 3, dtype=T.cfloat), 8)]


MIXED = {
    "where": lambda T, z, r: T.where(r > 0, r, z), "cat": lambda T, z, r: T.cat([r, z]),
    "stack": lambda T, z, r: T.stack([r, z]), "addcmul": lambda T, z, r: T.addcmul(z, r, z),
    "add_alpha": lambda T, z, r: T.add(r, z, alpha=2), "rsub": lambda T, z, r: 1j - r,
    "real_pow": lambda T, z, r: r.abs() ** z, "broadcast": lambda T, z, r: r.reshape(3, 1) * z.reshape(1, 3),
    "matmul": lambda T, z, r: T.matmul(r.to(T.cdouble), z), "copy_": lambda T, z, r: T.zeros(3, dtype=T.cdouble).copy_(r) * z,
    "setitem": lambda T, z, r: (lambda y: (y.__setitem__(0, r[1]), y)[1])(z * 1),
}


@pytest.mark.parametrize("name", sorted(MIXED))
@differential(rtol=1e-7, atol=1e-9)
def test_real_inputs_of_complex_results_get_real_gradients(T, name):
    z = T.tensor(Z[:3], requires_grad=True)
    r = T.tensor(R[:3], requires_grad=True)

    def run():
        out = MIXED[name](T, z, r)
        upstream = np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)) * (1 + 0.5j)
        out.backward(T.tensor(upstream, dtype=out.dtype))
        return [out, z.grad, r.grad]
    return catch(run)


@differential
def test_copy_forms_of_the_part_views(T):
    z = T.tensor(Z[:2], requires_grad=True)
    pairs = T.tensor([[1.0, 2.0], [3.0, 4.0]])
    copy = T.view_as_real_copy(z)
    copy.sum().backward()
    complex_copy = T.view_as_complex_copy(pairs)
    complex_copy[0] = 9j
    return [copy, copy._base is None, copy.is_contiguous(), z.grad, complex_copy, pairs,
            catch(T.view_as_complex_copy, T.ones(3, 2, requires_grad=True))]


def test_optimizers_refuse_complex_parameters_they_would_update_wrongly():
    """Adam-like rules on a complex gradient must work on its real view (torch's); until hookgrad
    does that they refuse loudly, leaving the parameter and the optimizer's state untouched."""
    import pytest

    import hookgrad
    for cls in (hookgrad.optim.Adam, hookgrad.optim.AdamW, hookgrad.optim.RMSprop, hookgrad.optim.Adagrad):
        p = hookgrad.nn.Parameter(hookgrad.tensor([1 + 2j, -0.5 + 1j]))
        opt = cls([p], lr=0.1)
        (p.abs() ** 2).sum().backward()
        with pytest.raises(NotImplementedError, match="complex parameters"):
            opt.step()
        assert p.detach().tolist() == [1 + 2j, -0.5 + 1j]
        assert "step" not in opt.state[p] or float(opt.state[p]["step"]) == 0  # Adagrad makes its state early
    p = hookgrad.nn.Parameter(hookgrad.tensor([1 + 2j]))
    opt = hookgrad.optim.SGD([p], lr=0.1)
    (p.abs() ** 2).sum().backward()
    opt.step()
    assert abs(p.detach().tolist()[0] - (0.8 + 1.6j)) < 1e-6
