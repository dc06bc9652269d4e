"""vmap's batching rules against a plain loop over the batch, op by op: one argument batched at dim 0
or 1, nested vmaps, and two arguments batched or not in every combination."""
import pytest

import hookgrad as T

T.manual_seed(0)
x = T.randn(3, 4, 5, dtype=T.float64)
w = T.randn(5, 6, dtype=T.float64)
F = T.nn.functional
OPS = {
 "sum_kd": lambda a: a.sum((0, 1), keepdim=True), "mean_neg": lambda a: a.mean(-2), "var_unb": lambda a: a.var(1, unbiased=False),
 "std_corr": lambda a: a.std(dim=0, correction=0), "norm_p1": lambda a: a.norm(p=1, dim=1), "norm_full": lambda a: T.norm(a),
 "max_kd": lambda a: a.max(dim=1, keepdim=True)[0], "min_idx": lambda a: a.min(0)[1], "median": lambda a: a.median(1).values,
 "amax_tuple": lambda a: a.amax((0, 1)), "prod_full": lambda a: a.prod(), "logsumexp": lambda a: a.logsumexp(-1),
 "argmax_kd": lambda a: a.argmax(1, keepdim=True), "all": lambda a: (a > 0).all(), "any_dim": lambda a: (a > 0).any(1),
 "cumsum": lambda a: a.cumsum(-1), "softmax_F": lambda a: F.softmax(a, dim=0), "logsm": lambda a: a.log_softmax(1),
 "sort": lambda a: a.sort(1).values, "argsort": lambda a: a.argsort(-1), "topk": lambda a: a.topk(2, dim=1).values,
 "normalize": lambda a: F.normalize(a), "normalize_d": lambda a: F.normalize(a, dim=-1),
 "view_m1": lambda a: a.view(-1), "reshape_t": lambda a: a.reshape((5, 4)), "flatten_1": lambda a: a.flatten(1),
 "unflatten": lambda a: a.unflatten(1, (5, 1)), "permute_neg": lambda a: a.permute(-1, 0), "transpose_neg": lambda a: a.transpose(-1, -2),
 "swapaxes": lambda a: a.swapaxes(0, 1), "unsqueeze_neg": lambda a: a.unsqueeze(-1), "squeeze_dim": lambda a: a.unsqueeze(1).squeeze(1),
 "squeeze_tuple": lambda a: a.reshape(4, 1, 5, 1).squeeze((1, 3)), "expand_m1": lambda a: a.expand(2, -1, -1), "expand_as": lambda a: a[:1].expand_as(a),
 "broadcast_to": lambda a: a[0].broadcast_to((4, 5)), "select_neg": lambda a: a.select(-1, -1), "getitem_ell": lambda a: a[..., 1:3],
 "getitem_none": lambda a: a[None, :, None], "getitem_neg": lambda a: a[-1], "getitem_step": lambda a: a[::2, 1::2],
 "getitem_tensor": lambda a: a[:, T.tensor([0, 2, 4])], "getitem_bool": lambda a: a[T.tensor([True, False, True, False])],
 "getitem_2tensor": lambda a: a[T.tensor([0, 1]), T.tensor([2, 3])], "getitem_int_tensor": lambda a: a[0, T.tensor([1, 2])],
 "chunk": lambda a: T.cat(a.chunk(2, dim=-1), 1), "split": lambda a: a.split([2, 3], 1)[1], "split_int": lambda a: a.split(2)[0],
 "unbind": lambda a: a.unbind(1)[0], "narrow": lambda a: a.narrow(-1, 1, 3), "movedim": lambda a: a.movedim(-1, 0),
 "t_1d": lambda a: a[0].t(), "T": lambda a: a.T, "mT": lambda a: a.mT, "cat_neg": lambda a: T.cat([a, a], -1),
 "stack_neg": lambda a: T.stack([a, a], -1), "cat_mixed": lambda a: T.cat([a, T.zeros(4, 2, dtype=T.float64)], 1),
 "matmul_2d": lambda a: a @ w, "matmul_1d": lambda a: a[0] @ w, "matmul_rev": lambda a: w.t() @ a.t(), "einsum": lambda a: T.einsum("ij,jk->ik", a, w),
 "linear_nob": lambda a: F.linear(a, w.t()), "bmm": lambda a: T.bmm(a.unsqueeze(0), w.unsqueeze(0)), "outer": lambda a: T.outer(a[0], a[1]),
 "where_scalar": lambda a: T.where(a > 0, a, 0.0), "clamp_t": lambda a: a.clamp(min=T.zeros(5, dtype=T.float64)), "pow_t": lambda a: a.abs() ** a,
 "masked_fill_t": lambda a: a.masked_fill(a > 0, T.tensor(2.0, dtype=T.float64)), "lerp": lambda a: T.lerp(a, a * 2, 0.3),
 "addcmul": lambda a: T.addcmul(a, a, a, value=0.5), "type_as": lambda a: a.type_as(T.ones(1)), "to_dtype": lambda a: a.to(T.float32),
 "float": lambda a: a.float(), "zeros_like": lambda a: T.zeros_like(a) + 1, "full_like": lambda a: T.full_like(a, 3.0),
 "flip": lambda a: a.flip(0), "roll": lambda a: a.roll(1, 1), "diag": lambda a: a[:, :4].diagonal(), "tril": lambda a: a.tril(),
 "gather": lambda a: a.gather(1, T.zeros(4, 2, dtype=T.long)), "index_select": lambda a: a.index_select(1, T.tensor([0, 3])),
 "repeat": lambda a: a.repeat(2, 1), "mse_none": lambda a: F.mse_loss(a, a * 0.5), "mse_sum": lambda a: F.mse_loss(a, T.zeros(4, 5, dtype=T.float64), reduction="sum"),
 "smoothl1": lambda a: F.smooth_l1_loss(a, a.flip(0)), "bce_logits": lambda a: F.binary_cross_entropy_with_logits(a, (a > 0).double()),
 "ce_probs": lambda a: F.cross_entropy(a, a.softmax(-1)), "ce_ignore": lambda a: F.cross_entropy(a, T.tensor([1, -100, 2, 0])),
 "ce_smooth": lambda a: F.cross_entropy(a, T.tensor([1, 3, 2, 0]), label_smoothing=0.1),
 "nll": lambda a: F.nll_loss(a.log_softmax(-1), T.tensor([1, 3, 2, 0])), "layer_norm": lambda a: F.layer_norm(a, (5,)),
 "dropout_eval": lambda a: F.dropout(a, 0.5, training=False), "relu_": lambda a: a.clone().relu_(), "clone_inplace_idx": lambda a: a.clone().index_fill_(1, T.tensor([0]), 0.0),
 "setitem_t": lambda a: (lambda b: (b.__setitem__((slice(None), 0), T.ones(4, dtype=T.float64)), b)[1])(a.clone()),
 "conv1d": lambda a: F.conv1d(a.unsqueeze(0), T.ones(2, 4, 3, dtype=T.float64)), "maxpool": lambda a: F.max_pool1d(a.unsqueeze(0), 2),
 "embedding_idx": lambda a: F.embedding(T.tensor([0, 2]), a), "size_math": lambda a: a.reshape(a.size(0) * a.shape[1]),
 "numel": lambda a: a * a.numel(), "contig": lambda a: a.t().contiguous(), "detach": lambda a: a.detach() * 2, "sgn": lambda a: a.sign(),
 "maximum_unb": lambda a: T.maximum(a, T.zeros(5, dtype=T.float64)), "cdist": lambda a: T.cdist(a, a), "mm_T": lambda a: T.mm(a, a.T),
 "dot": lambda a: T.dot(a[0], a[1]), "mv": lambda a: T.mv(a, a[0]), "addmm": lambda a: T.addmm(T.ones(4, 6, dtype=T.float64), a, w),
 "std_mean": lambda a: T.std_mean(a, 1)[0], "var_bool": lambda a: a.var(False), "amin": lambda a: a.amin(), "count_nonzero": lambda a: (a > 0).count_nonzero(1),
 "sum_dtype": lambda a: a.sum(dtype=T.float32), "mean_kw": lambda a: T.mean(a, dim=(-1,), keepdim=True),
}

a = T.randn(3, 4, 5, dtype=T.float64)
b = T.randn(3, 4, 5, dtype=T.float64)
m = T.randn(3, 5, 2, dtype=T.float64)
v = T.randn(3, 5, dtype=T.float64)
t = T.randint(0, 5, (3, 4))
PAIRS = {
 "add": (lambda p, q: p + q, a, b), "cat": (lambda p, q: T.cat([p, q], 1), a, b), "stack": (lambda p, q: T.stack([p, q]), a, b),
 "matmul": (lambda p, q: p @ q, a, m), "mv": (lambda p, q: p @ q, a, v), "vm": (lambda p, q: q @ p, m, v), "dot": (lambda p, q: T.dot(p, q), v, v),
 "linear_bw": (lambda p, q: F.linear(p, q.t()), a, m), "linear_bwb": (lambda p, q: F.linear(p, q.t(), q[0]), a, m),
 "where": (lambda p, q: T.where(p > q, p, q), a, b), "mse": (lambda p, q: F.mse_loss(p, q), a, b), "ce": (lambda p, q: F.cross_entropy(p, q), a, t),
 "ce_none": (lambda p, q: F.cross_entropy(p, q, reduction="none"), a, t), "inplace": (lambda p, q: p.clone().add_(q), a, b),
 "expand_as": (lambda p, q: p[:1].expand_as(q), a, b), "bce": (lambda p, q: F.binary_cross_entropy_with_logits(p, q.sigmoid()), a, b),
 "conv_bw": (lambda p, q: F.conv1d(p.unsqueeze(0), q.reshape(1, 4, 5)[:, :, :3]), a, b), "gather": (lambda p, q: p.gather(1, q.unsqueeze(1) % 5), a, t),
 "index_bt": (lambda p, q: p[q[:2] % 4], a, t), "maximum": (lambda p, q: T.maximum(p, q), a, b), "setitem": (lambda p, q: (lambda c: (c.__setitem__(0, q[0]), c)[1])(p.clone()), a, b),
 "copy_": (lambda p, q: p.clone().copy_(q), a, b), "addmm": (lambda p, q: T.addmm(q[:, :2], p, T.ones(5, 2, dtype=T.float64)), a, b),
}


def _same(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    assert T.allclose(got.double(), want.double(), atol=1e-8, equal_nan=True)


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("in_dim", [0, 1])
def test_one_batched_argument(name, in_dim):
    op = OPS[name]
    batched = x if in_dim == 0 else x.movedim(0, 1).contiguous()
    _same(T.func.vmap(op, in_dims=in_dim)(batched), T.stack([op(x[i]) for i in range(3)]))


@pytest.mark.parametrize("name", sorted(OPS))
def test_nested(name):
    op = OPS[name]
    outer = x.unsqueeze(1) * T.tensor([1.0, 2.0], dtype=T.float64).reshape(1, 2, 1, 1)
    got = T.func.vmap(T.func.vmap(op), in_dims=1)(outer)
    want = T.stack([T.stack([op(outer[i, j]) for i in range(3)]) for j in range(2)])
    _same(got, want)


@pytest.mark.parametrize("name", sorted(PAIRS))
@pytest.mark.parametrize("dims", [(0, 0), (0, None), (None, 0)])
def test_two_arguments(name, dims):
    op, p, q = PAIRS[name]
    pp = p if dims[0] == 0 else p[0]
    qq = q if dims[1] == 0 else q[0]
    if dims == (None, 0) and name in ("inplace", "setitem", "copy_"):
        with pytest.raises(RuntimeError, match="vmap: inplace arithmetic"):
            T.func.vmap(op, in_dims=dims)(pp, qq)
        return
    want = T.stack([op(pp[i] if dims[0] == 0 else pp, qq[i] if dims[1] == 0 else qq) for i in range(3)])
    _same(T.func.vmap(op, in_dims=dims)(pp, qq), want)


FOLDED = {
    "max_pool2d": lambda a: F.max_pool2d(a, 2), "max_pool2d_idx": lambda a: F.max_pool2d(a, 2, return_indices=True)[1],
    "avg_pool1d": lambda a: F.avg_pool1d(a[0], 2), "adaptive_avg": lambda a: F.adaptive_avg_pool2d(a, 1),
    "adaptive_max": lambda a: F.adaptive_max_pool2d(a, (2, 1)), "interpolate": lambda a: F.interpolate(a, scale_factor=2),
    "bilinear": lambda a: F.interpolate(a, size=(3, 5), mode="bilinear", align_corners=False),
    "conv_transpose2d": lambda a: F.conv_transpose2d(a, T.ones(2, 3, 2, 2, dtype=T.float64)),
    "conv2d_unbatched_form": lambda a: F.conv2d(a[0], T.ones(3, 2, 2, 2, dtype=T.float64), padding=1),
    "group_norm": lambda a: F.group_norm(a, 1), "instance_norm": lambda a: F.instance_norm(a),
    "batch_norm_eval": lambda a: F.batch_norm(a, T.zeros(2, dtype=T.float64), T.ones(2, dtype=T.float64)),
    "pixel_shuffle": lambda a: F.pixel_shuffle(a.repeat(1, 2, 1, 1), 2),
    "layer_norm": lambda a: F.layer_norm(a, (4,), T.ones(4, dtype=T.float64)),
    "embedding": lambda a: F.embedding((a.abs() * 3).long() % 5, T.arange(10.0, dtype=T.float64).reshape(5, 2)),
}
images = T.randn(3, 2, 2, 4, 4, dtype=T.float64)


@pytest.mark.parametrize("name", sorted(FOLDED))
def test_ops_folded_into_the_batch_dim(name):
    op = FOLDED[name]
    _same(T.func.vmap(op)(images), T.stack([op(images[i]) for i in range(3)]))
    _same(T.func.vmap(op, in_dims=1)(images.movedim(0, 1)), T.stack([op(images[i]) for i in range(3)]))


def test_dropout_different_draws_per_element_in_one_call():
    T.manual_seed(0)
    out = T.func.vmap(lambda a: F.dropout(a, 0.5), randomness="different")(T.ones(64, 16, dtype=T.float64))
    assert bool(((out == 0) | (out == 2)).all())
    assert len({tuple(row.tolist()) for row in out}) > 1
