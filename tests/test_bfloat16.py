"""bfloat16 (through the optional ml_dtypes package) against torch: dtype rules, conversions, printing,
ops and their gradients (bit for bit, or within the bf16 ulps torch's own fused kernels differ by),
NumPy interop, and every checkpoint format. Without ml_dtypes the dtype still exists and making a
bfloat16 tensor fails with an error naming the extra."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hookgrad
import torch
from difftest import catch, differential

ml_dtypes = pytest.importorskip("ml_dtypes")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BF16 = np.dtype(ml_dtypes.bfloat16)


def _bits(t) -> np.ndarray:
    """The bf16 bit patterns of a bf16 tensor (torch or hookgrad) as signed ints ordered like the values."""
    values = np.asarray(t.detach().float().tolist(), dtype=np.float32).astype(BF16)
    raw = values.view(np.int16).astype(np.int32)
    return np.where(raw < 0, -32768 - raw, raw)  # sign-magnitude -> a monotonic integer line


def ulp_distance(got, want) -> int:
    """The largest distance in bf16 ulps between two bf16 tensors (NaN where both are NaN counts 0)."""
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] == "bfloat16", (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    g, w = got.detach().float().tolist(), want.detach().float().tolist()
    gn, wn = np.isnan(np.asarray(g, dtype=np.float32)), np.isnan(np.asarray(w, dtype=np.float32))
    assert (gn == wn).all(), "NaNs differ"
    d = np.atleast_1d(np.abs(_bits(got) - _bits(want)))
    d[np.atleast_1d(gn)] = 0
    return int(d.max()) if d.size else 0


def scaled_ulps(got, want) -> float:
    """The largest difference between two bf16 tensors in ulps of the largest magnitude in ``want``:
    the measure for results that pass through cancellation (gradients), where a per-element ulp count
    of a value near zero says little."""
    g = np.asarray(got.detach().float().tolist(), dtype=np.float64)
    w = np.asarray(want.detach().float().tolist(), dtype=np.float64)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] == "bfloat16" and g.shape == w.shape
    top = np.abs(w).max()
    if top == 0:
        return float(np.abs(g).max())
    return float(np.abs(g - w).max() / (2.0 ** np.floor(np.log2(top)) * 2.0 ** -7))


def _inputs(T, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((4, 6)).astype(np.float32) * 2
    b = rng.standard_normal((4, 6)).astype(np.float32)
    m = rng.standard_normal((6, 5)).astype(np.float32)
    img = rng.standard_normal((2, 3, 7, 7)).astype(np.float32)
    ker = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    mk = lambda x: T.tensor(x.tolist(), dtype=T.bfloat16)  # noqa: E731
    return dict(a=mk(a), b=mk(b), pos=mk(np.abs(a) + 0.1), m=mk(m), img=mk(img), ker=mk(ker),
                bias=mk(rng.standard_normal(5).astype(np.float32)), cbias=mk(rng.standard_normal(4).astype(np.float32)),
                big=mk(rng.standard_normal((64, 300)).astype(np.float32) * 10))


# op name -> (scenario, max ulps from torch). Elementary ops are exact (float32 math, one rounding).
# Reductions, products and composite kernels (float32 inside, like torch's) allow 1 ulp: summation order.
OPS = {
    "add": (lambda T, i: i["a"] + i["b"], 0),
    "add_scalar": (lambda T, i: i["a"] + 1.3, 0),
    "sub_alpha": (lambda T, i: T.sub(i["a"], i["b"], alpha=3), 0),
    "mul": (lambda T, i: i["a"] * i["b"], 0),
    "mul_scalar": (lambda T, i: i["a"] * 0.1, 0),
    # torch rounds a Python number to bf16 for add/sub/pow/remainder, not for mul/div
    "add_scalar_inexact": (lambda T, i: i["a"] - 1.3, 0),
    "div_scalar": (lambda T, i: i["a"] / 1.3, 0),
    "rdiv_inexact": (lambda T, i: 1.3 / i["a"], 0),
    "floordiv_scalar": (lambda T, i: i["a"] // 0.3, 0),
    "remainder_scalar": (lambda T, i: i["a"] % 1.3, 0),
    "pow_scalar": (lambda T, i: i["pos"] ** 1.3, 0),
    "div": (lambda T, i: i["a"] / i["b"], 0),
    "rdiv_scalar": (lambda T, i: 3.0 / i["a"], 0),
    "neg": (lambda T, i: -i["a"], 0),
    "abs": (lambda T, i: i["a"].abs(), 0),
    "pow2": (lambda T, i: i["a"] ** 2, 0),
    "pow_frac": (lambda T, i: i["pos"] ** 0.7, 0),
    "exp": (lambda T, i: i["a"].exp(), 0),
    "log": (lambda T, i: i["pos"].log(), 0),
    "sqrt": (lambda T, i: i["pos"].sqrt(), 0),
    "rsqrt": (lambda T, i: i["pos"].rsqrt(), 1),  # torch's vectorized kernel: 1 ulp on a few inputs
    "sin": (lambda T, i: i["a"].sin(), 0),
    "cos": (lambda T, i: i["a"].cos(), 0),
    "tanh": (lambda T, i: i["a"].tanh(), 0),
    "sigmoid": (lambda T, i: i["a"].sigmoid(), 0),
    "relu": (lambda T, i: T.relu(i["a"]), 0),
    "clamp": (lambda T, i: i["a"].clamp(-0.5, 0.7), 0),
    "maximum": (lambda T, i: T.maximum(i["a"], i["b"]), 0),
    "where": (lambda T, i: T.where(i["a"] > 0, i["a"], i["b"]), 0),
    "reciprocal": (lambda T, i: i["pos"].reciprocal(), 0),
    "sum": (lambda T, i: i["big"].sum(), 1),
    "sum_dim": (lambda T, i: i["big"].sum(1), 1),
    "mean": (lambda T, i: i["big"].mean(), 1),
    "mean_dim": (lambda T, i: i["a"].mean(0, keepdim=True), 1),
    "max": (lambda T, i: i["a"].max(), 0),
    "amax_dim": (lambda T, i: i["a"].amax(1), 0),
    "softmax": (lambda T, i: i["a"].softmax(-1), 1),
    "log_softmax": (lambda T, i: i["a"].log_softmax(-1), 1),
    "matmul": (lambda T, i: i["a"] @ i["m"], 1),
    "matmul_big": (lambda T, i: i["big"] @ i["big"].t(), 1),
    "linear": (lambda T, i: T.nn.functional.linear(i["a"], i["m"].t(), i["bias"]), 1),
    "bmm": (lambda T, i: T.bmm(i["a"].reshape(2, 2, 6), i["m"].expand(2, 6, 5)), 1),
    "conv2d": (lambda T, i: T.nn.functional.conv2d(i["img"], i["ker"], i["cbias"], padding=1), 1),
    "gelu": (lambda T, i: T.nn.functional.gelu(i["a"]), 1),
    "silu": (lambda T, i: T.nn.functional.silu(i["a"]), 1),
    "layer_norm": (lambda T, i: T.nn.functional.layer_norm(i["a"], (6,)), 1),
    "mse_loss": (lambda T, i: T.nn.functional.mse_loss(i["a"], i["b"]), 1),
    "cross_entropy": (lambda T, i: T.nn.functional.cross_entropy(i["a"], T.tensor([0, 1, 2, 5])), 1),
    "cat": (lambda T, i: T.cat([i["a"], i["b"]]), 0),
    "transpose_contig": (lambda T, i: i["a"].t().contiguous(), 0),
    "index": (lambda T, i: i["a"][1:, ::2], 0),
    "cumsum": (lambda T, i: i["a"].cumsum(1), 1),
    "prod": (lambda T, i: i["b"].prod(1), 1),
    "var": (lambda T, i: i["big"].var(1), 1),
    "std_all": (lambda T, i: i["a"].std(), 1),
    "norm": (lambda T, i: i["big"].norm(), 1),
    "logsumexp": (lambda T, i: i["a"].logsumexp(1), 1),
    "min_dim": (lambda T, i: i["a"].min(1).values, 0),
    "sign": (lambda T, i: i["a"].sign(), 0),
    "floor": (lambda T, i: (i["a"] * 3).floor(), 0),
    "round": (lambda T, i: (i["a"] * 3).round(), 0),
    "log1p": (lambda T, i: i["pos"].log1p(), 0),
    "expm1": (lambda T, i: i["a"].expm1(), 0),
    "square": (lambda T, i: i["a"].square(), 0),
    "lerp": (lambda T, i: T.lerp(i["a"], i["b"], 0.3), 1),
    "addcmul": (lambda T, i: T.addcmul(i["a"], i["a"], i["b"], value=0.5), 1),
    "einsum": (lambda T, i: T.einsum("ij,jk->ik", i["a"], i["m"]), 1),
    "masked_fill": (lambda T, i: i["a"].masked_fill(i["b"] > 0, -1.5), 0),
    "gather": (lambda T, i: i["a"].gather(1, T.tensor([[0, 5], [1, 1], [2, 3], [4, 0]])), 0),
    "index_select": (lambda T, i: i["a"].index_select(1, T.tensor([5, 0, 2])), 0),
    "tril": (lambda T, i: i["a"].tril(), 0),
    "stack": (lambda T, i: T.stack([i["a"], i["b"]], 1), 0),
    "mean_dims": (lambda T, i: i["img"].mean((2, 3)), 1),
    "leaky_relu": (lambda T, i: T.nn.functional.leaky_relu(i["a"], 0.1), 0),
    "elu": (lambda T, i: T.nn.functional.elu(i["a"]), 1),
    "softplus": (lambda T, i: T.nn.functional.softplus(i["a"]), 1),
    "hardtanh": (lambda T, i: T.nn.functional.hardtanh(i["a"]), 0),
    "gelu_tanh": (lambda T, i: T.nn.functional.gelu(i["a"], approximate="tanh"), 1),
    "group_norm": (lambda T, i: T.nn.functional.group_norm(i["img"], 3), 1),
    "batch_norm_train": (lambda T, i: T.nn.functional.batch_norm(i["img"], None, None, training=True), 1),
    "max_pool2d": (lambda T, i: T.nn.functional.max_pool2d(i["img"], 2), 0),
    "avg_pool2d": (lambda T, i: T.nn.functional.avg_pool2d(i["img"], 2), 1),
    "adaptive_avg_pool2d": (lambda T, i: T.nn.functional.adaptive_avg_pool2d(i["img"], 1), 1),
    "conv1d": (lambda T, i: T.nn.functional.conv1d(i["img"][:, :, 0], i["ker"][:, :, 0], stride=2), 1),
    "conv_transpose2d": (lambda T, i: T.nn.functional.conv_transpose2d(i["img"][:, :, :4, :4], i["ker"][:3]), 1),
    "embedding": (lambda T, i: T.nn.functional.embedding(T.tensor([[0, 3], [2, 2]]), i["a"]), 0),
    "dropout_eval": (lambda T, i: T.nn.functional.dropout(i["a"], 0.5, training=False), 0),
    "l1_loss": (lambda T, i: T.nn.functional.l1_loss(i["a"], i["b"]), 1),
    "nll_loss": (lambda T, i: T.nn.functional.nll_loss(i["a"].log_softmax(1), T.tensor([0, 1, 2, 5])), 1),
    "bce_logits": (lambda T, i: T.nn.functional.binary_cross_entropy_with_logits(i["a"], (i["b"] > 0).to(T.bfloat16)), 1),
    # built from several bf16 ops here, one fused float32 kernel in torch (see the README)
    "cosine_similarity": (lambda T, i: T.nn.functional.cosine_similarity(i["a"], i["b"]), 8),
    "normalize": (lambda T, i: T.nn.functional.normalize(i["a"], dim=1), 1),
    "max_pool2d_padded": (lambda T, i: T.nn.functional.max_pool2d(i["img"], 3, 2, padding=1), 0),
    "maximum_nan": (lambda T, i: T.maximum(i["a"], i["b"] / (i["b"] * 0)), 0),
    "nan_to_num": (lambda T, i: T.nan_to_num(i["a"] / (i["b"] * 0), posinf=2.0, neginf=-3.0), 0),
    "sdpa": (lambda T, i: T.nn.functional.scaled_dot_product_attention(i["a"][None], i["b"][None], i["a"][None]), 10),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_matches_torch(name):
    fn, max_ulps = OPS[name]
    want = fn(torch, _inputs(torch))
    got = fn(hookgrad, _inputs(hookgrad))
    assert ulp_distance(got, want) <= max_ulps


# op name -> (scenario on leaves x (4, 6) and w (6, 5), max difference of the gradients from torch's in
# ulps of their largest entry). Backward formulas made of several ops round after each one in bf16
# where torch's fused kernels round once: hence 1-2 ulps for tanh/sigmoid/softmax/gelu/layer_norm.
GRAD_OPS = {
    "mul_add": (lambda T, x, w: (x * 0.3 + x * x).sum(), 0),
    "exp_mean": (lambda T, x, w: x.exp().mean(), 1),
    "tanh": (lambda T, x, w: x.tanh().sum(), 1),
    "sigmoid": (lambda T, x, w: x.sigmoid().sum(), 1),
    "matmul": (lambda T, x, w: (x @ w).sum(), 1),
    "linear_relu": (lambda T, x, w: T.relu(T.nn.functional.linear(x, w.t())).sum(), 1),
    "softmax": (lambda T, x, w: (x.softmax(-1) * T.arange(6.0).to(T.bfloat16)).sum(), 2),
    "gelu": (lambda T, x, w: T.nn.functional.gelu(x).sum(), 1),
    "layer_norm": (lambda T, x, w: (T.nn.functional.layer_norm(x, (6,)) * T.arange(6.0).to(T.bfloat16)).sum(), 2),
    "cross_entropy": (lambda T, x, w: T.nn.functional.cross_entropy(x @ w, T.tensor([0, 1, 2, 4])), 1),
    "conv2d": (lambda T, x, w: T.nn.functional.conv2d(x.reshape(1, 1, 4, 6), w[:3, :3].reshape(1, 1, 3, 3),
                                                      padding=1).square().sum(), 1),
    "avg_pool_var": (lambda T, x, w: T.nn.functional.avg_pool2d(x[None], 2).var() + w.var(0).sum(), 1),
    "lerp_sum": (lambda T, x, w: (T.lerp(x, x.flip(0), 0.25) * x).sum(1).mean() + w.sum(), 1),
}


@pytest.mark.parametrize("name", sorted(GRAD_OPS))
def test_gradients_are_bfloat16_and_match_torch(name):
    fn, max_ulps = GRAD_OPS[name]
    grads = {}
    for T in (torch, hookgrad):
        i = _inputs(T)
        x, w = i["a"].requires_grad_(), i["m"].requires_grad_()
        out = fn(T, x, w)
        assert str(out.dtype).endswith("bfloat16")
        out.backward()
        grads[T.__name__] = (x.grad, w.grad)
    for got, want in zip(grads["hookgrad"], grads["torch"]):
        if want is None:
            assert got is None
            continue
        assert scaled_ulps(got, want) <= max_ulps


@differential
def test_promotion_and_dtype_facts(T):
    bf = T.bfloat16
    x = T.ones(2, dtype=bf)
    return [T.promote_types(bf, d) for d in (T.float16, T.float32, T.float64, T.int64, T.bool, T.uint8)] + [
        (x + T.ones(2, dtype=T.float16)).dtype, (x + T.ones(2)).dtype, (x + T.ones((), dtype=T.float64)).dtype,
        (x + 2.5).dtype, (x * 3).dtype, (x + T.arange(2)).dtype, (T.arange(2) * x).dtype,
        x.is_floating_point(), bf.is_floating_point, bf.is_signed, bf.itemsize, x.element_size(), x.type(),
        T.finfo(bf).eps, T.finfo(bf).max, T.finfo(bf).min, T.finfo(bf).tiny, T.finfo(bf).resolution,
        T.finfo(bf).bits, bf == T.bfloat16, str(bf).split(".")[-1],
        T.tensor([1, 2]).to(bf).dtype, T.tensor([1.5], dtype=T.float64).bfloat16().dtype, x.float().dtype,
        x.to(T.int64).dtype, x.new_zeros(3).dtype, T.zeros_like(x).dtype, T.randn(3, dtype=bf).dtype,
    ]


@differential
def test_values_round_like_torch(T):
    vals = [0.1, 1.0 / 3, 1e-40, 3.3e38, 1e39, -2.5, 65504.0, 257.0, float("inf"), float("nan")]
    x = T.tensor(vals, dtype=T.bfloat16)
    y = T.tensor(vals).to(T.bfloat16)
    return x.tolist(), y.float(), x[1].item(), x.double(), T.tensor(0.1, dtype=T.bfloat16).item()


@differential
def test_repr_and_str(T):
    x = T.tensor([[1.5, -2.25, 0.125], [3.0, 0.1, 7.0]], dtype=T.bfloat16)
    w = T.tensor([0.5, 2.0], dtype=T.bfloat16, requires_grad=True)
    return [r.replace("hookgrad", "torch") for r in (repr(x), str(x[0]), repr(w), repr(w * 2), repr(x.sum()),
                                                      repr(T.bfloat16))]


@differential
def test_nan_and_order_queries(T):
    x = T.tensor([1.0, float("nan"), -float("inf"), 3.0, float("inf"), -2.0], dtype=T.bfloat16)
    return (x.isnan(), x.isinf(), x.isfinite(), x.argmax(), x.argmin(), x.max(), T.sort(x).values,
            T.sort(x, descending=True).indices, T.argsort(x), x.nan_to_num(), (x > 0), x.eq(3.0),
            x.floor(), x.ceil(), x.trunc(), x.round(), x.clamp(-1, 1))


@differential
def test_numpy_is_refused_like_torch(T):
    x = T.ones(2, dtype=T.bfloat16)
    return catch(x.numpy), catch(np.asarray, x), catch(lambda: x.float().numpy().tolist())


@differential
def test_module_bfloat16_and_inplace_ops(T):
    T.manual_seed(0)
    lin = T.nn.Linear(3, 2)
    lin.weight.data = T.tensor([[0.5, -1.0, 0.25], [2.0, 0.1, -0.3]])
    lin.bias.data = T.tensor([0.1, -0.2])
    lin.bfloat16()
    x = T.tensor([[1.0, 2.0, 3.0]], dtype=T.bfloat16)
    out = lin(x)
    out.sum().backward()
    y = T.ones(3, dtype=T.bfloat16)
    y.mul_(0.3).add_(1.3)
    return lin.weight.dtype, out, lin.weight.grad, lin.bias.grad, y


def test_bfloat16_training_steps_track_torch():
    def steps(T):
        rng = np.random.default_rng(0)
        net = T.nn.Sequential(T.nn.Conv2d(1, 2, 3), T.nn.ReLU(), T.nn.Flatten(), T.nn.Linear(2 * 4 * 4, 3),
                              T.nn.LayerNorm(3))
        net.load_state_dict({k: T.tensor(rng.standard_normal(tuple(v.shape)).astype(np.float32) * 0.3)
                             for k, v in net.state_dict().items()})
        net = net.to(T.bfloat16)
        x = T.tensor(rng.standard_normal((4, 1, 6, 6)).astype(np.float32)).to(T.bfloat16)
        opt = T.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = T.nn.functional.cross_entropy(net(x), T.tensor([0, 1, 2, 1]))
            loss.backward()
            T.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            losses.append(loss)
        return losses, [p for p in net.parameters()]
    (want_losses, want_params), (got_losses, got_params) = steps(torch), steps(hookgrad)
    for got, want in zip(got_losses, want_losses):
        assert ulp_distance(got, want) <= 1
    for got, want in zip(got_params, want_params):
        assert got.dtype is hookgrad.bfloat16 and scaled_ulps(got, want) <= 2


def test_torch_checkpoint_round_trips_with_torch(tmp_path):
    sd = {"w": torch.randn(3, 4).bfloat16(), "b": torch.randn(4), "t": torch.randn(4, 3).bfloat16().t()}
    torch.save(sd, tmp_path / "t.pt")
    ours = hookgrad.load(tmp_path / "t.pt")
    assert ours["w"].dtype is hookgrad.bfloat16 and ours["b"].dtype is hookgrad.float32
    for k in sd:
        assert ours[k].float().tolist() == sd[k].float().tolist()
    hookgrad.save(ours, tmp_path / "h.pt", format="torch")
    back = torch.load(tmp_path / "h.pt", weights_only=True)
    for k in sd:
        assert back[k].dtype == sd[k].dtype and torch.equal(back[k], sd[k])
    hookgrad.save(ours, tmp_path / "h.hg")
    again = hookgrad.load(tmp_path / "h.hg")
    for k in sd:
        assert again[k].dtype is ours[k].dtype and hookgrad.equal(again[k], ours[k])


def test_safetensors_bf16_both_ways(tmp_path):
    st = pytest.importorskip("safetensors.torch")
    sd = {"w": torch.randn(3, 4).bfloat16(), "b": torch.randn(2)}
    st.save_file(sd, tmp_path / "t.safetensors")
    ours = hookgrad.load_safetensors(tmp_path / "t.safetensors")
    assert ours["w"].dtype is hookgrad.bfloat16 and ours["w"].float().tolist() == sd["w"].float().tolist()
    hookgrad.save_safetensors(ours, tmp_path / "h.safetensors")
    back = st.load_file(tmp_path / "h.safetensors")
    assert back["w"].dtype == torch.bfloat16 and torch.equal(back["w"], sd["w"])


def _run_script(tmp_path, body, *args, module_args=("run",)):
    script = tmp_path / "s.py"
    script.write_text(textwrap.dedent(body))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.path.join(ROOT, "src"),
                                                                  os.environ.get("PYTHONPATH")) if p))
    cmd = [sys.executable, "-m", "hookgrad", *module_args, str(script), *map(str, args)] if module_args else \
        [sys.executable, str(script), *map(str, args)]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def test_safetensors_torch_under_hookgrad_run(tmp_path):
    pytest.importorskip("safetensors")
    path = tmp_path / "w.safetensors"
    proc = _run_script(tmp_path, """
        import sys
        import torch
        from safetensors.torch import load_file, save_file
        w = torch.tensor([[1.5, -0.1], [3.0, 1e-3]], dtype=torch.bfloat16)
        save_file({"w": w}, sys.argv[1])
        back = load_file(sys.argv[1])["w"]
        assert back.dtype == torch.bfloat16 and torch.equal(back, w), back
        print("ok", repr(back))
    """, path)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]
    assert "dtype=torch.bfloat16" in proc.stdout
    import safetensors.torch as st
    assert torch.equal(st.load_file(path)["w"], torch.tensor([[1.5, -0.1], [3.0, 1e-3]], dtype=torch.bfloat16))


def test_without_ml_dtypes_the_dtype_exists_and_errors_name_the_extra(tmp_path):
    proc = _run_script(tmp_path, """
        import sys
        sys.modules["ml_dtypes"] = None  # as if it were not installed
        import hookgrad as torch
        assert repr(torch.bfloat16) == "hookgrad.bfloat16" and torch.bfloat16 != torch.float16
        assert torch.bfloat16.is_floating_point and torch.finfo(torch.bfloat16).eps == 2 ** -7
        assert torch.promote_types(torch.bfloat16, torch.float16) is torch.float32
        x = torch.ones(2)
        assert (x + 1).tolist() == [2.0, 2.0]  # everything else unaffected
        for make in (lambda: torch.tensor([1.0], dtype=torch.bfloat16), lambda: x.bfloat16(),
                     lambda: x.to(torch.bfloat16), lambda: torch.zeros(2, dtype=torch.bfloat16)):
            try:
                make()
            except ModuleNotFoundError as exc:
                assert "pip install hookgrad[bfloat16]" in str(exc) and "ml_dtypes" in str(exc), exc
            else:
                raise AssertionError("no error")
        # checkpoints holding bfloat16 still load, widened exactly to float32
        import torch as real_torch
        from safetensors.torch import save_file
        w = real_torch.tensor([1.5, -0.1], dtype=real_torch.bfloat16)
        real_torch.save({"w": w}, sys.argv[1] + ".pt")
        save_file({"w": w}, sys.argv[1] + ".st")
        for back in (torch.load(sys.argv[1] + ".pt")["w"], torch.load_safetensors(sys.argv[1] + ".st")["w"]):
            assert back.dtype is torch.float32 and back.tolist() == w.float().tolist(), back
        print("ok")
    """, tmp_path / "ckpt", module_args=())
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]
