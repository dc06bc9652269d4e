"""The Tensor API people use daily, differentially against torch: metadata, conversions, creation,
dtype promotion, printing, operators, indexing and views."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import hookgrad
from difftest import assert_same, catch, differential, normalize, warns

import torch


@differential
def test_metadata(T):
    a = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    return (a.shape, a.size(), a.size(1), a.size(-1), a.dtype, a.ndim, a.dim(), a.numel(), len(a),
            a.is_leaf, a.requires_grad, a.grad, a.grad_fn, str(a.device), a.is_floating_point(),
            a.element_size(), a.stride(), a.t().stride(), a.is_contiguous(), a.t().is_contiguous(),
            a.t().contiguous().is_contiguous(), a.type())


@differential
def test_conversions(T):
    a = T.tensor([[1.5, -2.5], [3.0, 4.0]])
    return (a.item() if a.numel() == 1 else None, a[0, 0].item(), a.tolist(), a.long(), a.int(), a.bool(),
            a.double(), a.float().dtype, a.half().dtype, a.to(T.int64), a.to(T.float64).dtype,
            a.type_as(T.tensor([1], dtype=T.int32)), float(a[1, 1]), int(a[1, 0]), catch(lambda: a.item()),
            catch(lambda: float(a)), a.to(dtype=T.float16).dtype, a.to("cpu").dtype)


@differential
def test_bool_rules(T):
    return (bool(T.tensor([1.0])), bool(T.tensor(0.0)), catch(lambda: bool(T.tensor([1.0, 2.0]))),
            catch(lambda: bool(T.tensor([]))))


@differential
def test_iteration_and_len(T):
    a = T.tensor([[1, 2], [3, 4], [5, 6]])
    return [r for r in a], len(a), catch(lambda: len(T.tensor(3.0))), catch(lambda: iter(T.tensor(3.0)))


def test_numpy_shares_memory_and_refuses_requires_grad():
    a = hookgrad.zeros(3)
    n = a.numpy()
    n[0] = 5
    assert a[0].item() == 5
    arr = np.arange(4.0)
    t = hookgrad.from_numpy(arr)
    arr[1] = 10
    assert t[1].item() == 10
    t.add_(1)
    assert arr[1] == 11
    with pytest.raises(RuntimeError, match="requires grad"):
        hookgrad.ones(2, requires_grad=True).numpy()
    assert np.asarray(hookgrad.ones(2)).tolist() == [1.0, 1.0]


@differential
def test_creation(T):
    return (T.zeros(2, 3), T.ones((2,)), T.full((2, 2), 3.5), T.full((2,), 3), T.full((1,), True),
            T.zeros_like(T.ones(2, dtype=T.int32)), T.ones_like(T.zeros(3)), T.full_like(T.zeros(2), 7),
            T.empty(2, 3).shape, T.arange(5), T.arange(1, 4, 0.5), T.arange(0, 1, 0.25, dtype=T.float64),
            T.linspace(0, 1, 5), T.eye(3), T.eye(2, 3), T.tensor(3), T.tensor(2.5), T.tensor(True),
            T.tensor([1, 2]), T.tensor([[1.0], [2.0]], dtype=T.float64), T.tensor([]),
            T.as_tensor([1, 2, 3], dtype=T.float32), T.zeros(0, 3).shape, T.tensor(np.arange(3, dtype=np.int32)).dtype,
            T.tensor(np.ones(2)).dtype, T.tensor([1, 2.5]).dtype)


@differential
def test_creation_errors(T):
    return (catch(lambda: T.zeros(-1)), catch(lambda: T.tensor([[1, 2], [3]])), catch(lambda: T.arange(0, 5, 0)))


@differential
def test_random_shapes_and_dtypes(T):
    T.manual_seed(0)
    r = T.rand(2, 3)
    n = T.randn(4, dtype=T.float64)
    i = T.randint(0, 5, (3, 2))
    p = T.randperm(6)
    return (r.shape, r.dtype, bool(((r >= 0) & (r < 1)).all()), n.dtype, i.dtype, i.shape,
            bool(((i >= 0) & (i < 5)).all()), sorted(p.tolist()), T.rand_like(r).shape, T.randn_like(n).dtype,
            T.randint(3, (2,)).shape)


def test_manual_seed_reproducible_and_generator():
    hookgrad.manual_seed(3)
    a = hookgrad.randn(5)
    hookgrad.manual_seed(3)
    b = hookgrad.randn(5)
    assert hookgrad.equal(a, b)
    g = hookgrad.Generator().manual_seed(1)
    x = hookgrad.rand(3, generator=g)
    g.manual_seed(1)
    assert hookgrad.equal(x, hookgrad.rand(3, generator=g))
    state = hookgrad.get_rng_state()
    c = hookgrad.rand(2)
    hookgrad.set_rng_state(state)
    assert hookgrad.equal(c, hookgrad.rand(2))
    assert g.initial_seed() == 1


@differential
def test_default_dtype(T):
    before = T.get_default_dtype()
    T.set_default_dtype(T.float64)
    try:
        out = (T.tensor([1.5]).dtype, T.zeros(1).dtype, (T.tensor([1, 2]) * 1.5).dtype, T.arange(0.0, 1.0).dtype,
               catch(lambda: T.set_default_dtype(T.int32)))
    finally:
        T.set_default_dtype(before)
    return before, out


@differential
def test_type_promotion(T):
    f32 = T.ones(2)
    f64 = T.ones(2, dtype=T.float64)
    i64 = T.ones(2, dtype=T.int64)
    i32 = T.ones(2, dtype=T.int32)
    u8 = T.ones(2, dtype=T.uint8)
    i8 = T.ones(2, dtype=T.int8)
    b = T.ones(2, dtype=T.bool)
    z64 = T.tensor(2.0, dtype=T.float64)
    zi = T.tensor(3)
    return [(x).dtype for x in (
        f32 * 2.5, f32 * 2, f32 + f64, i64 * 2.5, i64 + i32, u8 + i8, b + b, b + 1, b * 1.5, i32 * 2,
        f32 * z64, i64 * z64, i32 * zi, u8 + 3, f32 + i64, i64 / 2, i64 / i64,
        f32 // 2, i64 // 2, f32 ** 2, i64 ** 2, (f32 > 0), f32.sum(), i32.sum(), b.sum(), i64.mean(dtype=T.float32),
        T.where(b, i64, 2.5), T.cat([i32, f32]), T.stack([i64, i32]), -i32, abs(i8), f32.exp(), i64.exp(), i32.sqrt(),
    )]


@differential
def test_repr(T):
    return [repr(x).replace("torch.", "hookgrad.").replace("hookgrad.", "") for x in (
        T.tensor([1.0, 2.0]), T.tensor([[1.5, -2.25], [3.0, 4.0]]), T.tensor([1, 2, 3]), T.tensor([True, False]),
        T.tensor(3.5), T.zeros(2, dtype=T.float64), T.tensor([1.0, 2.0], requires_grad=True),
        T.tensor([0.12345678, 1234.5]), T.tensor([1e-8, 1.0]), T.tensor([float("nan"), float("inf"), 1.0]),
        T.tensor([1, 2], dtype=T.int32), T.zeros(0), T.zeros(2, 0),
        T.tensor([1.0, 2.0], requires_grad=True) * 2)]


@differential
def test_operators(T):
    a = T.tensor([[1.0, -2.0], [3.0, 4.0]])
    b = T.tensor([0.5, 2.0])
    i = T.tensor([[1, 2], [3, 4]])
    return (a + b, a - b, a * b, a / b, a // b, a % b, a ** 2, 2 ** b, 1 - a, 2 / b, -a, +a, abs(a), a @ a, a @ b,
            a == b, a != b, a < b, a <= b, a > b, a >= b, a == 3.0, i & 1, i | 4, i ^ 1, ~i, ~(i > 2),
            (a > 0) & (a < 4), (a > 0) | (a < -1), i * 2, 3 % b, a.max(), a.min())


@differential
def test_inplace_operators(T):
    a = T.tensor([1.0, 2.0, 3.0])
    a += 1
    a *= T.tensor([2.0, 1.0, 0.5])
    a -= 0.5
    a /= 2
    b = T.tensor([5, 6])
    b += 1
    return a, b, catch(lambda: b.add_(1.5)), a._version


@differential
def test_indexing(T):
    a = T.arange(24.0).reshape(2, 3, 4)
    return (a[1], a[:, 1], a[..., 2], a[0, 1:3], a[None].shape, a[:, None, 1].shape, a[-1, -1, -1], a[a > 20],
            a[[0, 1], [1, 2]], a[:, [0, 2]], a[T.tensor([1, 0])], a[1, ..., ::2], a[0][T.tensor([True, False, True])],
            catch(lambda: a[2]), catch(lambda: a[0, 0, 0, 0]), a[:, 1:1].shape)


@differential
def test_index_assignment(T):
    a = T.zeros(3, 4)
    a[0] = 1.0
    a[:, 1] = T.tensor([5.0, 6.0, 7.0])
    a[a > 6] = -1.0
    a[[2, 2], [0, 3]] = T.tensor([8.0, 9.0])
    a[1, 2:] = 3
    return a, a._version


@differential
def test_views_share_memory(T):
    a = T.zeros(2, 3)
    v = a.view(3, 2)
    t = a.t()
    s = a[1]
    v[0, 0] = 1.0
    t[2, 0] = 2.0
    s.fill_(3.0)
    e = a.unsqueeze(0)
    e[0, 0, 1] = 4.0
    return a, v._base is a, t._base is a, s._base is a, a.clone()._base is None, a.reshape(6)._base is a


@differential
def test_shape_errors(T):
    a = T.zeros(2, 3)
    return (catch(lambda: a.view(4)), catch(lambda: a.t().view(6)), a.t().reshape(6).shape,
            catch(lambda: a.expand(3, 3)), catch(lambda: a + T.zeros(3, 2)), catch(lambda: a @ a),
            catch(lambda: T.cat([a, T.zeros(3, 2)], 0)), catch(lambda: a.permute(0)), catch(lambda: a.sum(2)),
            catch(lambda: T.stack([a, T.zeros(3)])))


@differential
def test_shape_ops(T):
    a = T.arange(12.0).reshape(3, 4)
    return (a.split([1, 3], 1), a.chunk(3, 1), a.unbind(1), a.flatten(), a.unflatten(1, (2, 2)).shape,
            a.squeeze(), a.unsqueeze(-1).shape, a.movedim(1, 0).shape, a.narrow(0, 1, 2), a.flip(1), a.roll(-1, 0),
            a.tril(-1), a.triu(), a.repeat(1, 2).shape, a.expand(2, 3, 4).shape, a.diagonal(), T.cat([a, a], 1).shape,
            T.stack([a, a], -1).shape, a.T.shape, a.mT.shape, T.broadcast_tensors(a, T.ones(4))[1].shape,
            a.argmax(), a.argmax(1), a.argmin(0, keepdim=True), a.max(1).indices,
            a.cumsum(0), a.all(), (a > 3).any(1), a.nonzero().shape, T.where(a > 5)[0], a.var(0), a.std(),
            a.norm(dim=1), a.logsumexp(0), a.prod(0), a.mean((0, 1)), a.sum(dtype=T.float64).dtype)


@differential
def test_no_grad_results_and_detach(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    d = a.detach()
    d.add_(1)
    with T.no_grad():
        b = a * 2
    return a, d, b.requires_grad, a._version


@differential
def test_einsum_and_linalg(T):
    a = T.tensor([[2.0, 1.0], [1.0, 3.0]])
    v = T.tensor([1.0, 2.0])
    return (T.einsum("ij,j->i", a, v), T.einsum("ii", a), T.einsum("ij->ji", a), T.einsum("...j,j", a, v),
            T.linalg.inv(a), T.linalg.det(a), T.linalg.slogdet(a), T.linalg.solve(a, v), T.linalg.norm(a),
            T.linalg.vector_norm(v, float("inf")), T.outer(v, v), T.dot(v, v), catch(lambda: T.linalg.inv(T.zeros(2, 3))))


# ---- property tests: broadcasting binary ops against torch --------------------------------------
dims = st.integers(min_value=1, max_value=3)


@st.composite
def broadcastable_pair(draw):
    shape = draw(st.lists(dims, min_size=0, max_size=3))
    other = [draw(st.sampled_from([s, 1])) for s in shape]
    drop = draw(st.integers(min_value=0, max_value=len(other)))
    return tuple(shape), tuple(other[drop:])


@settings(max_examples=40, deadline=None)
@given(broadcastable_pair(), st.sampled_from(["add", "sub", "mul", "div", "maximum", "pow", "atan2"]),
       st.booleans())
def test_broadcasting_binary_ops_property(shapes, op, swap):
    sa, sb = shapes if not swap else shapes[::-1]
    rng = np.random.default_rng(abs(hash((sa, sb, op))) % 2**32)
    xa = rng.uniform(0.5, 2.0, size=sa)
    xb = rng.uniform(0.5, 2.0, size=sb)

    def run(T):
        a = T.tensor(xa, requires_grad=True)
        b = T.tensor(xb, requires_grad=True)
        fn = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "div": lambda: a / b,
              "maximum": lambda: T.maximum(a, b), "pow": lambda: a ** b, "atan2": lambda: T.atan2(a, b)}[op]
        out = fn()
        out.sum().backward()
        return out, a.grad, b.grad

    assert_same(normalize(run(hookgrad)), normalize(run(torch)), rtol=1e-6, atol=1e-8)


@differential
def test_cuda_queries_answer_cpu_only(T):
    return T.cuda.is_available(), T.cuda.device_count(), hasattr(T, "no_such_function_anywhere")


def test_nonfinite_arithmetic_is_silent_like_torch():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = hookgrad.tensor([float("inf"), 1.0])
        (a * 0, a - a, a / 0, hookgrad.tensor([[float("inf")]]) @ hookgrad.tensor([[0.0]]), a.log(), (-a).sqrt())


def test_inf_nan_arithmetic_is_silent_and_leaves_numpy_error_state_alone():
    import warnings
    import hookgrad as hg
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = hg.tensor([0.0, 1.0, -1.0, 1e38], dtype=hg.float32, requires_grad=True)
        y = (x / 0).exp() + (x * 1e10) @ x + x.log()
        y.sum().backward()
    assert np.geterr() == before
    with pytest.warns(RuntimeWarning):  # NumPy's own reporting is untouched outside hookgrad's ops
        np.array([1.0]) / 0


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_relu_special_values_match_torch(dtype):
    import torch
    import hookgrad as hg
    v = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, -1, 1, 1e-45, -1e-45]) if dtype != "int64" \
        else np.array([-3, 0, 2])
    v = v.astype(dtype)
    got = hg.relu(hg.tensor(v)).numpy()
    want = torch.relu(torch.tensor(v)).numpy()
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want)).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_relu_backward_of_non_finite_gradients_matches_torch(dtype):
    # dropped positions get exactly +0.0 even where the incoming gradient is inf, -inf, NaN or negative
    import torch
    import hookgrad as hg
    x = np.array([-1.0, 0.0, 2.0, -3.0, 4.0, -0.5, 1.5, -2.0]).astype(dtype)
    up = np.array([np.inf, -np.inf, np.nan, np.nan, -np.inf, -1.0, 2.0, -5.0]).astype(dtype)
    out = []
    for T in (hg, torch):
        t = T.tensor(x, requires_grad=True)
        T.relu(t).backward(T.tensor(up))
        out.append(t.grad.numpy())
    np.testing.assert_array_equal(out[0], out[1])
    assert (np.signbit(out[0]) == np.signbit(out[1])).all()
