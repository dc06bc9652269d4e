"""Ordering, searching and counting ops against torch: values and index dtypes, NaN order, ties,
empty and 0-d inputs, named results, gradients where they exist, and torch's errors."""
import re

import numpy as np
import pytest

import hookgrad
import torch
from difftest import catch, differential

NAN = float("nan")
# ties among NaN only: torch's topk and kthvalue break ties between equal numbers by their selection
# algorithm (see test_ties_pick_torchs_index_and_gradient for the ops whose tie order is defined)
ROWS = [[1.0, 3.0, NAN, 2.0, NAN, 1.5], [0.0, -1.0, 5.0, 4.5, 2.0, -1.5]]
CUBE = np.random.default_rng(3).standard_normal((3, 4, 5))


def _with_grad(T, op, data, dtype=None, composite=False):
    """``op``'s outputs and, when the first is differentiable, the input's gradient under a ramp."""
    x = T.tensor(data, dtype=dtype or T.float64, requires_grad=True)
    out = op(T, x)
    first = out[0] if isinstance(out, tuple) else out
    grad = None
    if first.requires_grad and first.numel():
        weight = T.linspace(-1, 1, first.numel(), dtype=first.dtype).reshape(first.shape)
        (first * weight).sum().backward()
        grad = x.grad
    # composite ops (quantile) end in whichever node torch's implementation happens to use last
    name = type(first.grad_fn).__name__ if first.grad_fn is not None and not composite else None
    return out, grad, name


SELECTING = {
    "sort": lambda T, x: x.sort(1),
    "sort_desc_nan": lambda T, x: T.sort(x, 1, descending=True),
    "sort_dim0_desc_stable": lambda T, x: x.sort(dim=0, descending=True, stable=True),
    "argsort": lambda T, x: x.argsort(-1),
    "argsort_desc": lambda T, x: T.argsort(x, dim=1, descending=True, stable=True),
    "msort": lambda T, x: T.msort(x),
    "topk": lambda T, x: x.topk(2, 0),
    "topk_smallest_nan": lambda T, x: x.topk(3, largest=False),
    "topk_nan_largest": lambda T, x: x.topk(1),
    "kthvalue": lambda T, x: x.kthvalue(4, 1), "kthvalue_nan": lambda T, x: x.kthvalue(6, 1),
    "median_all": lambda T, x: x.median(),
    "median_dim_nan": lambda T, x: x.median(1),
    "median_keepdim": lambda T, x: x.median(-1, keepdim=True),
    "nanmedian_all": lambda T, x: T.nanmedian(x),
    "nanmedian_dim": lambda T, x: x.nanmedian(1),
    # a full max or min that is NaN: its gradient is shared among the NaNs, as a median's is
    "max_all": lambda T, x: x.max(), "min_all": lambda T, x: T.min(x),
    "cummax": lambda T, x: x.cummax(1),
    "cummin": lambda T, x: T.cummin(x, -1),
    "cummax_dim0": lambda T, x: x.cummax(0),
    "quantile_nan_slice": lambda T, x: x.quantile(0.4, dim=1),
    "nanquantile": lambda T, x: x.nanquantile(T.tensor([0.2, 0.9], dtype=x.dtype), dim=1),
    "unfold": lambda T, x: x.unfold(1, 3, 2),
    "diff": lambda T, x: x.diff(dim=0),
}


@pytest.mark.parametrize("name", sorted(SELECTING))
@differential
def test_nan_rows_match_torch(T, name):
    return _with_grad(T, SELECTING[name], ROWS, composite="quantile" in name)


TIES = [[1.0, 2.0, 2.0, 0.5], [3.0, 3.0, 3.0, 3.0], [2.0, 1.0, 2.0, 1.0]]
TIE_OPS = {
    "sort": lambda T, x: x.sort(1), "sort_desc": lambda T, x: x.sort(1, descending=True),
    "median_all": lambda T, x: x.median(), "median_dim": lambda T, x: x.median(1),
    "max_all": lambda T, x: x.max(), "min_all": lambda T, x: T.min(x),
    "mode": lambda T, x: x.mode(1), "mode_dim0": lambda T, x: x.mode(0, keepdim=True),
    "kthvalue": lambda T, x: x.kthvalue(2, 1), "kthvalue_dim0": lambda T, x: x.kthvalue(2, 0, keepdim=True),
    "topk": lambda T, x: x.topk(2, 1), "topk_smallest": lambda T, x: x.topk(3, 1, largest=False),
    "topk_unsorted": lambda T, x: x.topk(3, 1, sorted=False),
    "cummax": lambda T, x: x.cummax(1), "cummin": lambda T, x: x.cummin(1),
}


@pytest.mark.parametrize("name", sorted(TIE_OPS))
@differential
def test_ties_pick_torchs_index_and_gradient(T, name):
    return _with_grad(T, TIE_OPS[name], TIES)


SHAPES = {
    "sort_0d": (lambda T, x: x.sort(), 2.5), "sort_empty": (lambda T, x: x.sort(0), np.zeros((0, 3))),
    "argsort_0d": (lambda T, x: x.argsort(), 2.5), "topk_0d": (lambda T, x: x.topk(1), 2.5),
    "topk_empty": (lambda T, x: x.topk(2), np.zeros((0, 3))), "topk_k0": (lambda T, x: x.topk(0), np.ones(3)),
    "kthvalue_0d": (lambda T, x: x.kthvalue(1), 2.5), "median_0d": (lambda T, x: x.median(0), 2.5),
    "median_empty_rows": (lambda T, x: x.median(1), np.zeros((0, 3))), "median_empty": (lambda T, x: x.median(), []),
    "nanmedian_empty": (lambda T, x: x.nanmedian(), []), "mode_0d": (lambda T, x: x.mode(), 2.5),
    "cummax_0d": (lambda T, x: x.cummax(0), 2.5), "cummin_empty": (lambda T, x: x.cummin(0), np.zeros((0, 3))),
    "logcumsumexp_0d": (lambda T, x: x.logcumsumexp(0), 2.5), "unfold_0d": (lambda T, x: x.unfold(0, 1, 1), 2.5),
    "logcumsumexp_large": (lambda T, x: x.logcumsumexp(-1), CUBE * 400),
    "logcumsumexp_inf": (lambda T, x: x.logcumsumexp(0), [-float("inf"), 1.0, float("inf")]),
    "quantile_0d": (lambda T, x: x.quantile(0.5), 2.5),
    "quantile_full_keepdim": (lambda T, x: T.quantile(x, T.tensor([0.25, 0.5], dtype=x.dtype), keepdim=True), CUBE),
    "quantile_dim_neg": (lambda T, x: x.quantile(0.9, dim=-2, interpolation="higher"), CUBE),
    "diff_empty_n": (lambda T, x: x.diff(n=5), np.ones((2, 3))),
    "diff_n0": (lambda T, x: x.diff(n=0), np.ones((2, 3))),
    "diff_prepend": (lambda T, x: x.diff(prepend=T.tensor([1.0], dtype=x.dtype)), np.arange(4.0)),
    "unfold_neg_dim": (lambda T, x: x.unfold(-3, 2, 1), CUBE),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
@differential
def test_edge_shapes_match_torch(T, name):
    op, data = SHAPES[name]
    return _with_grad(T, op, data, composite="quantile" in name or name == "diff_n0")  # n=0: a copy


def test_kthvalue_ties_follow_torchs_selection():
    rng = np.random.default_rng(7)
    for trial in range(200):
        data = rng.integers(0, 4, (3, int(rng.integers(1, 30)))).astype(np.float64)
        if trial % 3 == 0:
            data[rng.random(data.shape) < 0.2] = NAN
        k = int(rng.integers(1, data.shape[1] + 1))
        got = hookgrad.tensor(data).kthvalue(k, 1)
        want = torch.tensor(data).kthvalue(k, 1)
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())


def test_unstable_sort_ties_follow_torch():
    rng = np.random.default_rng(10)
    for trial in range(120):
        data = rng.integers(0, int(rng.integers(1, 6)), (2, int(rng.integers(1, 120)))).astype(
            [np.float32, np.int64, np.float64][trial % 3])
        if trial % 3 == 2:
            data[rng.random(data.shape) < 0.2] = NAN
        dim, descending = trial % 2, bool(trial // 2 % 2)
        got, want = hookgrad.tensor(data).sort(dim, descending), torch.tensor(data).sort(dim, descending)
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(hookgrad.tensor(data).argsort(dim, descending).numpy(),
                                      torch.tensor(data).argsort(dim, descending).numpy())
        stable = hookgrad.tensor(data).sort(dim=dim, descending=descending, stable=True).indices.numpy()
        np.testing.assert_array_equal(stable, torch.tensor(data).sort(
            dim=dim, descending=descending, stable=True).indices.numpy())


def test_mode_value_and_index_follow_torch():
    rng = np.random.default_rng(9)
    for trial in range(150):
        data = rng.integers(0, int(rng.integers(1, 6)), (3, int(rng.integers(1, 60)))).astype(np.float64)
        dim = trial % 2
        got, want = hookgrad.tensor(data).mode(dim), torch.tensor(data).mode(dim)
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())


def test_topk_ties_and_unsorted_order_follow_torch():
    rng = np.random.default_rng(8)
    for trial in range(200):
        shape = (2, int(rng.integers(1, 150 if trial % 4 == 0 else 30)))
        data = rng.integers(0, int(rng.integers(1, 6)), shape).astype(np.float32)
        if trial % 3 == 0:
            data[rng.random(shape) < 0.2] = NAN
        k, largest, sorted_ = int(rng.integers(0, shape[1] + 1)), bool(trial % 2), bool(trial // 2 % 2)
        got = hookgrad.tensor(data).topk(k, 1, largest, sorted_)
        want = torch.tensor(data).topk(k, 1, largest, sorted_)
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool", "float32"])
@differential
def test_sorting_other_dtypes(T, dtype):
    data = np.array([[3, 1, 2, 3, 0, 1], [1, 1, 0, 0, 2, 2]])
    x = T.tensor(data).to(getattr(T, dtype))
    return [x.sort(1), x.sort(0, descending=True), x.argsort(1, descending=True), catch(x.topk, 2),
            catch(lambda: x.median(1)), catch(lambda: x.mode(1)), catch(lambda: x.cummax(1)),
            catch(lambda: x.kthvalue(2, 1)), catch(lambda: T.msort(x)), catch(lambda: x.diff()),
            catch(lambda: x.unique(return_counts=True)), catch(lambda: x.logcumsumexp(0))]


def test_named_results_are_torch_return_types():
    x = hookgrad.tensor([[2.0, 1.0], [0.0, 3.0]])
    for name, args in [("sort", ()), ("topk", (1,)), ("kthvalue", (1,)), ("median", (0,)), ("nanmedian", (0,)),
                       ("mode", ()), ("cummax", (0,)), ("cummin", (0,))]:
        result = getattr(hookgrad, name)(x, *args)
        want = getattr(torch, name)(torch.tensor(x.tolist()), *args)
        assert type(result).__name__ == name and type(result).__module__ == "torch.return_types"
        assert result._fields == ("values", "indices") and want.values is want[0]
        values, indices = result
        assert values is result.values and indices is result.indices
        assert repr(result).startswith(f"torch.return_types.{name}(\nvalues=tensor(")
    hist = hookgrad.histogram(hookgrad.tensor([1.0, 2.0]), 2)
    assert hist._fields == ("hist", "bin_edges") and type(hist).__name__ == "histogram"


@differential
def test_unique_and_unique_consecutive(T):
    x = T.tensor([[3.0, NAN, 1.0], [3.0, NAN, 1.0], [0.0, 1.0, 1.0]])
    ints = T.tensor([[1, 2, 1], [1, 2, 1], [0, 5, 0], [1, 2, 1]])
    return [T.unique(x), x.unique(return_inverse=True, return_counts=True), T.unique(x, sorted=False),
            T.unique(ints, dim=0, return_inverse=True, return_counts=True), ints.unique(dim=1, return_inverse=True),
            ints.unique(dim=-1), T.unique(T.tensor([], dtype=T.int64), return_counts=True),
            T.unique_consecutive(T.tensor([1, 1, 2, 2, 3, 1, 1]), return_inverse=True, return_counts=True),
            ints.unique_consecutive(dim=0, return_counts=True), ints.unique_consecutive(return_inverse=True),
            T.unique(T.tensor(4)), catch(T.unique, ints, dim=3)]


@differential
def test_bincount_histc_histogram(T):
    idx = T.tensor([0, 2, 2, 4])
    data = T.tensor([1.0, 2.0, 1.0, 3.0, 2.5])
    return [T.bincount(idx), idx.bincount(minlength=8), T.bincount(idx, T.tensor([1.0, 2.0, 3.0, 4.0])),
            T.bincount(idx, T.tensor([1, 2, 3, 4])), T.bincount(idx, T.tensor([0.5, 2.0, 3.0, 4.0], dtype=T.float64)),
            T.bincount(T.tensor([], dtype=T.int64)), T.histc(data, bins=4), data.histc(5, 0, 2),
            T.histc(T.tensor([2.0, 2.0]), bins=2), T.histc(data.double(), 3, min=-1, max=1),
            T.histogram(data, 4), T.histogram(data, T.tensor([0.0, 1.5, 4.0]), density=True),
            T.histogram(data, 3, range=(0.0, 4.0), weight=T.tensor([0.5, 1.0, 2.0, 1.0, 1.0])),
            data.histogram(2, density=True), T.histogram(T.tensor([2.0, 2.0]), 2), T.histogram(T.tensor([]), 3)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histogram_bins_and_edges_match_torch_at_bin_boundaries(dtype):
    """Values on (or a rounding away from) bin edges land in torch's bin; edges equal torch's bit for bit."""
    rng = np.random.default_rng(11)
    for trial in range(120):
        data = (rng.integers(0, 50, int(rng.integers(1, 80))) / float(rng.integers(1, 8))).astype(dtype)
        bins = int(rng.integers(1, 12))
        lo, hi = (0, 0) if trial % 3 == 0 else (float(data.min()) - 0.5 * (trial % 5), float(data.max()))
        for fn, args in [("histc", (bins, lo, hi)), ("histogram", (bins,))]:
            got = getattr(hookgrad, fn)(hookgrad.tensor(data), *args)
            want = getattr(torch, fn)(torch.tensor(data), *args)
            for g, w in zip(got if fn == "histogram" else (got,), want if fn == "histogram" else (want,)):
                np.testing.assert_array_equal(g.numpy(), w.numpy())
        got = hookgrad.histogram(hookgrad.tensor(data), bins, range=(1.0, 5.0), density=True)
        want = torch.histogram(torch.tensor(data), bins, range=(1.0, 5.0), density=True)
        np.testing.assert_allclose(got.hist.numpy(), want.hist.numpy(), rtol=1e-6)
        np.testing.assert_array_equal(got.bin_edges.numpy(), want.bin_edges.numpy())


@differential
def test_searchsorted_bucketize_isin_unravel(T):
    seq = T.tensor([1, 3, 5, 7])
    rows = T.tensor([[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]])
    return [T.searchsorted(seq, T.tensor([3, 6, 9, 0])), T.searchsorted(seq, 3, right=True),
            T.searchsorted(seq, T.tensor([[3, 6], [7, 1]]), side="right"),
            T.searchsorted(rows, T.tensor([[3.0, 6.5], [4.0, 0.0]]), out_int32=True),
            T.searchsorted(T.tensor([5, 1, 3]), T.tensor([2, 6]), sorter=T.tensor([1, 2, 0])),
            T.bucketize(T.tensor([[3, 6], [9, 1]]), seq), T.bucketize(T.tensor([3, 5]), seq, right=True),
            T.bucketize(3.0, T.tensor([1.0, 3.0]), out_int32=True),
            T.isin(T.tensor([1, 2, 3]), T.tensor([2, 5])), T.isin(T.tensor([1, 2, 3]), 2, invert=True),
            T.isin(2, T.tensor([1, 2])), T.isin(T.tensor([1.0, NAN]), T.tensor([NAN, 1.0])),
            T.unravel_index(T.tensor([4, 7, 11]), (3, 4)), T.unravel_index(T.tensor(5), (2, 3)),
            T.unravel_index(T.tensor([[3], [5]]), T.Size([2, 3])),
            T.nonzero(T.tensor(5.0)), T.nonzero(T.tensor(0.0), as_tuple=True), T.argwhere(T.tensor(1.0)),
            T.nonzero(T.tensor([[0, 1], [2, 0]]), as_tuple=True), T.count_nonzero(T.tensor([[0, 1], [2, 0]]), 0),
            T.column_stack([T.tensor([1, 2]), T.tensor([[3, 4], [5, 6]]), T.tensor([7, 8])])]


ERRORS = {
    "topk_k_too_large": (lambda T: T.ones(3).topk(4), "selected index k out of range"),
    "topk_k_negative": (lambda T: T.ones(3).topk(-1), "selected index k out of range"),
    "topk_0d": (lambda T: T.tensor(1.0).topk(2), "selected index k out of range"),
    "kthvalue_k": (lambda T: T.ones(2, 3).kthvalue(4), r"kthvalue\(\): selected number k out of range for dimension 1"),
    "kthvalue_k0": (lambda T: T.ones(2, 3).kthvalue(0, 0), r"kthvalue\(\): selected number k out of range for dimension 0"),
    "sort_dim": (lambda T: T.ones(2, 3).sort(2), r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    "median_empty_dim": (lambda T: T.zeros(2, 0).median(1), r"median\(\): Expected reduction dim 1 to have non-zero size"),
    "mode_empty_dim": (lambda T: T.zeros(0).mode(), r"mode\(\): Expected reduction dim 0 to have non-zero size"),
    "quantile_q": (lambda T: T.ones(3).quantile(1.5), r"quantile\(\) q must be in the range \[0, 1\] but got 1.5"),
    "quantile_q_tensor": (lambda T: T.ones(3).quantile(T.tensor([0.5, 2.0])), r"quantile\(\) q values must be in the range \[0, 1\]"),
    "quantile_int": (lambda T: T.ones(3, dtype=T.int64).quantile(0.5), r"quantile\(\) input tensor must be either float or double dtype"),
    "quantile_q_dtype": (lambda T: T.ones(3).quantile(T.tensor([0.5], dtype=T.float64)), r"quantile\(\) q tensor must be same dtype as the input tensor"),
    "quantile_mode": (lambda T: T.ones(3).quantile(0.5, interpolation="foo"), r"quantile\(\) interpolation must be one of linear, lower, higher, midpoint or nearest, but got foo"),
    "quantile_empty": (lambda T: T.ones(0).quantile(0.5), r"quantile\(\) input tensor must be non-empty"),
    "quantile_q_2d": (lambda T: T.ones(3).quantile(T.ones(2, 2) * 0.5), r"quantile\(\) q must be a scalar or 1D tensor"),
    "bincount_negative": (lambda T: T.bincount(T.tensor([-1, 2])), "bincount only supports 1-d non-negative integral inputs."),
    "bincount_2d": (lambda T: T.bincount(T.tensor([[1]])), "bincount only supports 1-d non-negative integral inputs."),
    "bincount_float": (lambda T: T.bincount(T.tensor([1.0])), "\"bincount_cpu\" not implemented for 'Float'"),
    "bincount_weights": (lambda T: T.bincount(T.tensor([1, 2]), T.tensor([1.0])), "weights should be 1-d and have the same length as input"),
    "bincount_minlength": (lambda T: T.bincount(T.tensor([1]), minlength=-1), "minlength should be >= 0"),
    "histc_int": (lambda T: T.histc(T.tensor([1, 2])), "\"histogram_cpu\" not implemented for 'Long'"),
    "histc_bins": (lambda T: T.histc(T.ones(2), bins=0), r"torch.histogram\(\): bins must be > 0, but got 0 for dimension 0"),
    "histc_range": (lambda T: T.histc(T.ones(2), min=2, max=1), "torch.histc: max must be larger than min"),
    "histc_inf": (lambda T: T.histc(T.tensor([1.0, float("inf")])), r"torch.histc: range of \[1, inf\] is not finite"),
    "histogram_inf": (lambda T: T.histogram(T.tensor([1.0, float("inf")]), 3), r"torch.histogramdd: dimension 0's range \[1, inf\] is not finite"),
    "histogram_range": (lambda T: T.histogram(T.ones(2), 2, range=(3.0, 1.0)), "torch.histogramdd: min should not exceed max, but got min 3 max 1 for dimension 0"),
    "histogram_bins_2d": (lambda T: T.histogram(T.ones(2), T.ones(1, 2)), "torch.histogramdd: bins tensor should have one dimension"),
    "diff_0d": (lambda T: T.tensor(1.0).diff(), "diff expects input to be at least one-dimensional"),
    "diff_order": (lambda T: T.ones(3).diff(n=-1), "order must be non-negative but got -1"),
    "diff_prepend_dims": (lambda T: T.ones(3).diff(prepend=T.tensor(1.0)),
                          "diff expects prepend or append to be the same dimension as input"),
    "searchsorted_side": (lambda T: T.searchsorted(T.tensor([1, 3]), T.tensor([1]), side="bad"), r"torch.searchsorted\(\): side can only be 'left' or 'right' but got bad"),
    "searchsorted_opposite": (lambda T: T.searchsorted(T.tensor([1, 3]), T.tensor([1]), side="left", right=True), r"torch.searchsorted\(\): side and right can't be set to opposites, got side of left while right was True"),
    "searchsorted_scalar_nd": (lambda T: T.searchsorted(T.ones(2, 2), 3), r"torch.searchsorted\(\): input value can be a scalar only when boundaries tensor dimension is 1"),
    "searchsorted_shapes": (lambda T: T.searchsorted(T.ones(2, 2), T.ones(1, 3)), r"torch.searchsorted\(\): boundaries tensor should be 1 dimension or the first N-1 dimensions"),
    "bucketize_2d": (lambda T: T.bucketize(T.tensor([1]), T.ones(1, 2)), r"boundaries tensor must be 1 dimension, but got dim\(2\)"),
    "unfold_size": (lambda T: T.ones(3, 4).unfold(1, 5, 1), "maximum size for tensor at dimension 1 is 4 but size is 5"),
    "unfold_step": (lambda T: T.ones(3, 4).unfold(1, 2, 0), "step is 0 but must be > 0"),
    "unravel_float": (lambda T: T.unravel_index(T.tensor([1.0]), (3, 4)), "expected 'indices' to be integer dtype, but got torch.float32"),
    "logcumsumexp_int": (lambda T: T.tensor([1, 2]).logcumsumexp(0), "\"logcumsumexp_out_cpu\" not implemented for 'Long'"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_match_torchs_class_and_wording(name):
    fn, pattern = ERRORS[name]
    with pytest.raises(Exception) as want:
        fn(torch)
    with pytest.raises(type(want.value), match=pattern) as got:
        fn(hookgrad)
    assert re.search(pattern, str(want.value)), f"torch's own message moved on: {want.value}"
    assert type(got.value) is type(want.value)


# ---- second derivatives in float64 -------------------------------------------------------------------
GRADGRAD = {
    "sort": lambda x: (x.sort(1, descending=True).values * x).sum(),
    "topk": lambda x: x.topk(2, 0).values.pow(3).sum(),
    "kthvalue": lambda x: x.kthvalue(2, 1, keepdim=True).values.pow(2).sum(),
    "median": lambda x: x.median() * x.median(0).values.pow(2).sum(),
    "nanmedian": lambda x: x.nanmedian() ** 3 + x.nanmedian(1).values.pow(2).sum(),
    "mode": lambda x: x.mode(1).values.pow(2).sum(),
    "cummax": lambda x: x.cummax(1).values.pow(2).sum(),
    "cummin": lambda x: (x.cummin(0)[0] * x).sum(),
    "logcumsumexp": lambda x: (x.logcumsumexp(1) * x).sum(),
    "quantile": lambda x: x.quantile(hookgrad.tensor([0.3, 0.7], dtype=x.dtype), dim=1).pow(2).sum(),
    "nanquantile": lambda x: x.nanquantile(0.4, interpolation="midpoint") ** 2,
    "diff": lambda x: x.diff(n=2, dim=1, append=x[:, :1] ** 2).pow(2).sum(),
    "unfold": lambda x: (x.unfold(1, 3, 1) ** 2).sum(),
}


@pytest.mark.parametrize("name", sorted(GRADGRAD))
def test_gradcheck_and_gradgradcheck(name):
    x = hookgrad.tensor(np.random.default_rng(5).standard_normal((3, 4)), dtype=hookgrad.float64, requires_grad=True)
    assert hookgrad.autograd.gradcheck(GRADGRAD[name], (x,))
    assert hookgrad.autograd.gradgradcheck(GRADGRAD[name], (x,))


@differential
def test_unfold_is_a_view_and_writes_through(T):
    base = T.arange(6.0).reshape(2, 3)
    windows = base.unfold(1, 2, 1)
    windows[0, 0, 1] = 10.0
    leaf = T.arange(4.0, requires_grad=True)
    view = (leaf * 1).unfold(0, 2, 1)
    return [base, windows._base is base, windows.is_contiguous(), windows.stride(), type(view.grad_fn).__name__]
