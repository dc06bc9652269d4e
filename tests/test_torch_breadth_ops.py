"""hash_tensor, segment_reduce, histogramdd, from_file, svd_lowrank, pca_lowrank and lobpcg against torch."""
import numpy as np
import pytest

from difftest import catch, differential


@differential
def test_hash_tensor(T):
    x = T.tensor([[1.5, -2.0, 0.0], [3.25, 7.0, -0.0]])
    return [T.hash_tensor(x), T.hash_tensor(x, 1), T.hash_tensor(x, 0, keepdim=True), x.hash_tensor(dim=(0, 1)),
            T.hash_tensor(T.tensor([[1, 2], [3, 4]]), dim=1), T.hash_tensor(T.tensor([True, False, True])),
            T.hash_tensor(T.tensor([1.5], dtype=T.float16)), T.hash_tensor(T.tensor([-3], dtype=T.int8)),
            T.hash_tensor(T.tensor([200], dtype=T.uint8))]


SEGMENTS = [("sum", None), ("mean", None), ("max", None), ("min", None), ("prod", None), ("amax", 0.5),
            ("mean", 2.0), ("prod", 2.0), ("min", 0.5), ("sum", 0.5)]


@pytest.mark.parametrize("reduce,initial", SEGMENTS)
@differential
def test_segment_reduce_values_and_gradients(T, reduce, initial):
    x = T.tensor([[1.0, 5.0], [5.0, 4.0], [2.0, -6.0], [7.0, 8.0], [7.0, 1.5]], dtype=T.float64, requires_grad=True)
    out = T.segment_reduce(x, reduce, lengths=T.tensor([2, 0, 3]), initial=initial)
    by_offsets = T.segment_reduce(x, reduce, offsets=T.tensor([0, 2, 2, 5]), initial=initial)
    finite = T.where(out.isfinite(), out, T.zeros_like(out))
    (finite * T.arange(1.0, 7.0, dtype=T.float64).reshape(3, 2)).sum().backward()
    return out.detach(), by_offsets.detach(), type(out.grad_fn).__name__, x.grad


@differential
def test_segment_reduce_axis_and_errors(T):
    x = T.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    along_rows = T.segment_reduce(x, "sum", lengths=T.tensor([[1, 3], [2, 2]]), axis=1)
    errors = [catch(T.segment_reduce, x, "sum", lengths=T.tensor([1, 2])),
              catch(T.segment_reduce, x, "sum", lengths=T.tensor([3, -1])),
              catch(T.segment_reduce, x, "sum"),
              catch(T.segment_reduce, x, "median", lengths=T.tensor([1, 1])),
              catch(T.segment_reduce, x, "sum", lengths=T.tensor([1, 3]), axis=1),
              catch(T.segment_reduce, T.tensor([1, 2, 3]), "sum", lengths=T.tensor([1, 2]))]
    return along_rows, errors


@differential
def test_segment_reduce_gradcheck(T):
    x = T.tensor(np.random.default_rng(0).normal(size=(5, 3)), requires_grad=True)
    lengths = T.tensor([2, 0, 3])
    return [T.autograd.gradcheck(lambda t: T.segment_reduce(t, r, lengths=lengths, initial=1.0), (x,))
            for r in ("sum", "mean", "prod", "max")]


@differential
def test_histogramdd(T):
    x = T.tensor([[0.0, 1.0], [1.0, 1.0], [2.0, 3.0], [0.5, 0.2], [1.5, 2.5]])
    plain = T.histogramdd(x, bins=[2, 3])
    ranged = T.histogramdd(x, bins=2, range=[0.0, 2.0, 0.0, 3.0], weight=T.tensor([1.0, 2.0, 3.0, 4.0, 0.5]),
                           density=True)
    edges = T.histogramdd(x, bins=[T.tensor([0.0, 1.0, 2.0]), T.tensor([0.0, 2.0, 4.0])])
    three_d = T.histogramdd(T.tensor(np.random.default_rng(1).uniform(size=(20, 3))), bins=(2, 3, 2))
    return (type(plain).__name__, plain.hist, list(plain.bin_edges), ranged.hist, list(ranged.bin_edges),
            edges.hist, three_d.hist, list(three_d.bin_edges), catch(T.histogramdd, x.long(), bins=2))


@differential
def test_from_file(T, tmp_path):
    path = str(tmp_path / f"values-{T.__name__}.bin")
    np.arange(6, dtype=np.float32).tofile(path)
    private = T.from_file(path, False, 4, dtype=T.float32)
    private[0] = 100.0
    unchanged = np.fromfile(path, dtype=np.float32).tolist()
    shared = T.from_file(path, True, 6, dtype=T.float32)
    shared[1] = -1.0
    del shared
    changed = np.fromfile(path, dtype=np.float32).tolist()
    grown_path = str(tmp_path / f"grown-{T.__name__}.bin")
    grown = T.from_file(grown_path, True, 3, dtype=T.int64)
    return (private, unchanged, changed, grown, len(open(grown_path, "rb").read()),
            catch(T.from_file, path, False, 100, dtype=T.float64))


def _low_rank(T, rows, cols, rank, seed):
    rng = np.random.default_rng(seed)
    return T.tensor(rng.normal(size=(rows, rank)) @ rng.normal(size=(rank, cols)))


@pytest.mark.parametrize("rows,cols", [(9, 6), (5, 8)])
@differential(rtol=1e-6, atol=1e-8)
def test_svd_lowrank_recovers_a_low_rank_matrix(T, rows, cols):
    T.manual_seed(0)
    a = _low_rank(T, rows, cols, 3, 2)
    u, s, v = T.svd_lowrank(a, q=4, niter=2)
    shift = T.ones(rows, cols, dtype=T.float64)
    u2, s2, v2 = T.svd_lowrank(a + shift, q=4, M=shift)
    return (u.shape, s.shape, v.shape, s[:3], (u @ T.diag(s) @ v.mT - a).abs().max() < 1e-9,
            (u.mT @ u - T.eye(4, dtype=T.float64)).abs().max() < 1e-9, s2[:3],
            (u2 @ T.diag(s2) @ v2.mT - a).abs().max() < 1e-9)


@differential(rtol=1e-6, atol=1e-8)
def test_pca_lowrank(T):
    T.manual_seed(0)
    a = _low_rank(T, 10, 5, 2, 3) + 4.0
    u, s, v = T.pca_lowrank(a, q=3)
    centered = a - a.mean(0, keepdim=True)
    return (s[:2], (u @ T.diag(s) @ v.mT - centered).abs().max() < 1e-9, T.pca_lowrank(a, center=False)[1][:2],
            catch(T.pca_lowrank, a, q=9), catch(T.pca_lowrank, a, niter=-1))


@pytest.mark.parametrize("largest", [True, False])
@differential(rtol=1e-6, atol=1e-8)
def test_lobpcg_eigenpairs_and_gradients(T, largest):
    T.manual_seed(0)
    rng = np.random.default_rng(4)
    m = rng.normal(size=(12, 12))
    a = T.tensor(m @ m.T + 12 * np.eye(12), requires_grad=True)
    b = T.tensor(np.eye(12) + 0.1 * np.diag(rng.uniform(size=12)), requires_grad=True)
    values, vectors = T.lobpcg(a, k=2, B=b, largest=largest, tol=1e-12, niter=200)
    residual = (a @ vectors - (b @ vectors) * values).abs().max() < 1e-6
    generalized_backward = catch(values.sum().backward)
    plain, plain_vectors = T.lobpcg(a, k=3, largest=largest, tol=1e-12, niter=200)
    plain.sum().backward()
    return (values.detach(), residual, generalized_backward, plain.detach(), a.grad,
            catch(T.lobpcg, a.detach()[:4, :4], k=2))


@differential
def test_slice_inverse(T):
    base = T.arange(8.0)
    piece = base[2:6]
    whole = T.slice_inverse(piece, base, 0, 2, 6, 1)
    grid = T.arange(12.0).reshape(3, 4)
    columns = grid[:, 1:4:2]
    back = columns.slice_inverse(grid, 1, 1, 4, 2)
    back[0, 0] = -1.0  # a view: the base sees the write
    leaf = T.arange(8.0, requires_grad=True)
    y = leaf * 1
    inverse = T.slice_inverse(y[2:6], y, 0, 2, 6, 1)
    (inverse * T.arange(8.0)).sum().backward()
    return (whole, back, grid, type(inverse.grad_fn).__name__, leaf.grad,
            catch(T.slice_inverse, T.arange(3.0), T.zeros(6), 0, 1, 4, 1))
