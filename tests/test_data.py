"""utils.data against torch: datasets, samplers, DataLoader batching and argument checks, and the
default collation of tensors, NumPy values, numbers, strings and containers. Shuffling draws
different random numbers in the two frameworks, so for it only RNG-independent properties are
compared. Worker processes have their own tests in test_data_workers.py."""
import collections

import numpy as np
import pytest

from difftest import catch, differential, warns

X = np.arange(40, dtype=np.float32).reshape(10, 4) / 10
Y = np.arange(10, dtype=np.int64) % 3

Point = collections.namedtuple("Point", ["x", "y"])


def data_mod(T):
    import importlib
    return importlib.import_module(T.__name__ + ".utils.data")


def batches(loader):
    return [b for b in loader]


@differential
def test_tensor_dataset(T):
    D = data_mod(T)
    ds = D.TensorDataset(T.tensor(X), T.tensor(Y))
    return len(ds), ds[3], ds[-1], catch(D.TensorDataset, T.tensor(X), T.tensor(Y[:5]))


@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (3, False), (3, True), (4, False), (10, True),
                                                  (16, False), (16, True)])
@differential
def test_loader_batches(T, batch_size, drop_last):
    D = data_mod(T)
    loader = D.DataLoader(D.TensorDataset(T.tensor(X), T.tensor(Y)), batch_size=batch_size,
                          drop_last=drop_last)
    return len(loader), batches(loader), batches(loader)


@differential
def test_loader_without_batching(T):
    D = data_mod(T)
    loader = D.DataLoader(D.TensorDataset(T.tensor(X), T.tensor(Y)), batch_size=None)
    plain = D.DataLoader([np.float32(1.5), np.arange(3), {"a": (np.int32(2), "s")}], batch_size=None)
    return len(loader), batches(loader)[:3], batches(plain)


class DictDataset:
    """A map-style dataset that is not a Dataset subclass: any object with __getitem__/__len__."""

    def __len__(self):
        return 7

    def __getitem__(self, i):
        return {"x": X[i], "label": int(Y[i]), "weight": float(i) / 2, "name": f"item{i}",
                "flag": bool(i % 2), "pair": (i, [i, -i]), "p": Point(np.float32(i), np.int16(i))}


@differential
def test_default_collate_structures(T):
    D = data_mod(T)
    out = batches(D.DataLoader(DictDataset(), batch_size=3))
    first = out[0]
    return out, type(first["p"]).__name__, type(first["pair"]).__name__


@differential
def test_default_collate_direct(T):
    D = data_mod(T)
    c = D.default_collate
    od = collections.OrderedDict([("b", 1), ("a", 2.5)])
    return [
        c([T.tensor([1.0, 2.0]), T.tensor([3.0, 4.0])]),
        c([np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)]),
        c([np.float64(1.0), np.float64(2.0)]), c([np.int8(1), np.int8(2)]), c([np.bool_(True), np.bool_(False)]),
        c([1, 2, 3]), c([1.0, 2.0]), c([True, False]), c(["a", "b"]), c([b"x", b"y"]),
        c([(1, "a"), (2, "b")]), c([[1, 2.0], [3, 4.0]]), c([od, od]), type(c([od, od])).__name__,
        list(c([od, od])),
        catch(c, [[1, 2], [3]]), catch(c, [object(), object()]), catch(c, [np.array(["a"]), np.array(["b"])]),
        catch(c, [{"a": 1}, {"b": 2}]),
    ]


@differential
def test_default_convert(T):
    D = data_mod(T)
    conv = D.default_convert
    return [conv(np.arange(3, dtype=np.float32)), conv(np.int64(4)), conv(5), conv("s"),
            conv((np.ones(2), 2.0)), conv([np.zeros(1), "x"]), conv({"k": np.ones(1)}),
            conv(Point(np.ones(1), 1)), conv(np.array(["a"]))]


@differential
def test_collate_requires_grad_tensors(T):
    D = data_mod(T)
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    batch = D.default_collate([a * 2, b])
    batch.sum().backward()
    return batch, batch.requires_grad, a.grad, b.grad


@differential
def test_custom_collate_and_samplers(T):
    D = data_mod(T)
    ds = D.TensorDataset(T.tensor(X))
    first = D.DataLoader(ds, batch_size=4, collate_fn=lambda items: len(items))
    by_sampler = D.DataLoader(ds, batch_size=3, sampler=[9, 0, 5, 5, 2])
    by_batches = D.DataLoader(ds, batch_sampler=[[1, 2], [7], [0, 3, 4]])
    seq = D.SequentialSampler(range(5))
    bs = D.BatchSampler(seq, 2, drop_last=False)
    bs_drop = D.BatchSampler(range(7), 3, drop_last=True)
    return (batches(first), batches(by_sampler), batches(by_batches), list(seq), len(seq),
            list(bs), len(bs), list(bs_drop), len(bs_drop), len(by_batches))


@differential
def test_sampler_errors(T):
    D = data_mod(T)
    return [catch(D.BatchSampler, range(3), 0, False), catch(D.BatchSampler, range(3), True, False),
            catch(D.BatchSampler, range(3), 2.0, False), catch(D.BatchSampler, range(3), 2, "no"),
            catch(D.RandomSampler, range(3), replacement="yes"),
            catch(D.RandomSampler, range(3), num_samples=0),
            catch(D.RandomSampler, range(3), num_samples=2.5)]


@differential
def test_shuffle_properties(T):
    D = data_mod(T)
    n = 53
    ds = D.TensorDataset(T.arange(n))
    gen = T.Generator()
    gen.manual_seed(123)
    loader = D.DataLoader(ds, batch_size=8, shuffle=True, generator=gen)
    epoch1 = [b[0].tolist() for b in loader]
    epoch2 = [b[0].tolist() for b in loader]
    gen.manual_seed(123)
    again = [b[0].tolist() for b in loader]
    flat1 = [i for b in epoch1 for i in b]
    flat2 = [i for b in epoch2 for i in b]
    unseeded = [b[0].tolist() for b in D.DataLoader(ds, batch_size=10, shuffle=True, drop_last=True)]
    return ([len(b) for b in epoch1], sorted(flat1) == list(range(n)), sorted(flat2) == list(range(n)),
            flat1 != flat2, again == epoch1, flat1 != list(range(n)), [len(b) for b in unseeded],
            len({i for b in unseeded for i in b}))


@differential
def test_random_sampler_properties(T):
    D = data_mod(T)
    gen = T.Generator()
    gen.manual_seed(5)
    with_repl = list(D.RandomSampler(range(10), replacement=True, num_samples=70, generator=gen))
    more = list(D.RandomSampler(range(10), num_samples=25, generator=gen))
    subset = list(D.SubsetRandomSampler([3, 5, 8], generator=gen))
    return (len(with_repl), all(0 <= i < 10 for i in with_repl), all(isinstance(i, int) for i in with_repl),
            len(more), sorted(more[:20]) == sorted(list(range(10)) * 2), len(set(more[20:])),
            sorted(subset), len(D.RandomSampler(range(10), num_samples=25)))


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.3, 0.4], [0.5, 0.5], [1.0], [0.05, 0.95]])
@differential
def test_random_split(T, lengths):
    D = data_mod(T)
    gen = T.Generator()
    gen.manual_seed(0)
    ds = D.TensorDataset(T.arange(10))
    (parts, kinds) = warns(D.random_split, ds, lengths, generator=gen)
    sizes = [len(p) for p in parts]
    everything = sorted(int(p[i][0]) for p in parts for i in range(len(p)))
    return sizes, everything, kinds, type(parts[0]).__name__


@differential
def test_random_split_errors(T):
    D = data_mod(T)
    ds = list(range(10))
    return [catch(D.random_split, ds, [3, 3]), catch(D.random_split, ds, [0.5, 0.6]),
            catch(D.random_split, ds, [1.5, -0.5])]


@differential
def test_subset_and_concat(T):
    D = data_mod(T)
    ds = D.TensorDataset(T.tensor(X), T.tensor(Y))
    sub = D.Subset(ds, [8, 1, 4])
    both = sub + D.Subset(ds, [0])
    nested = D.Subset(sub, [2, 0])
    return (len(sub), sub[0], sub[-1], len(both), both[3], both[-1], batches(D.DataLoader(both, batch_size=2)),
            catch(lambda: both[-5]), batches(D.DataLoader(sub, batch_size=2)),
            batches(D.DataLoader(nested, batch_size=5)), catch(batches, D.DataLoader(sub, batch_sampler=[[], [1]])))


@pytest.mark.parametrize("batch_size,drop_last", [(3, False), (3, True), (7, False), (None, False)])
@differential
def test_iterable_dataset(T, batch_size, drop_last):
    D = data_mod(T)

    class S(D.IterableDataset):
        def __iter__(self):
            for i in range(7):
                yield T.tensor([float(i), -float(i)])

    class Sized(S):
        def __len__(self):
            return 7

    loader = D.DataLoader(S(), batch_size=batch_size, drop_last=drop_last)
    sized = D.DataLoader(Sized(), batch_size=batch_size, drop_last=drop_last)
    return batches(loader), catch(len, loader), len(sized)


@differential
def test_loader_argument_errors(T):
    D = data_mod(T)
    ds = D.TensorDataset(T.tensor(X))

    class S(D.IterableDataset):
        def __iter__(self):
            return iter([])

    loader = D.DataLoader(ds, batch_size=2)

    def set_batch_size():
        loader.batch_size = 3

    return [catch(D.DataLoader, ds, shuffle=True, sampler=[0, 1]),
            catch(D.DataLoader, ds, batch_size=3, batch_sampler=[[0]]),
            catch(D.DataLoader, ds, shuffle=True, batch_sampler=[[0]]),
            catch(D.DataLoader, ds, drop_last=True, batch_sampler=[[0]]),
            catch(D.DataLoader, ds, batch_size=None, drop_last=True),
            catch(D.DataLoader, S(), shuffle=True),
            catch(D.DataLoader, S(), sampler=[0]),
            catch(D.DataLoader, S(), batch_sampler=[[0]]),
            catch(D.DataLoader, ds, num_workers=-1),
            catch(D.DataLoader, ds, timeout=-1),
            catch(D.DataLoader, ds, prefetch_factor=2),
            catch(D.DataLoader, ds, persistent_workers=True),
            catch(set_batch_size),
            catch(D.DataLoader, ds, batch_size=0),
            catch(lambda: D.Dataset()[0]),
            catch(lambda: iter(D.IterableDataset()).__next__())]


@differential
def test_loader_attributes(T):
    D = data_mod(T)
    ds = D.TensorDataset(T.tensor(X))
    plain = D.DataLoader(ds, batch_size=4)
    shuffled = D.DataLoader(ds, batch_size=4, shuffle=True, drop_last=True)
    unbatched = D.DataLoader(ds, batch_size=None)
    return [(type(l.sampler).__name__, type(l.batch_sampler).__name__, l.batch_size, l.drop_last,
             l.collate_fn.__name__, len(l)) for l in (plain, shuffled, unbatched)]


def test_worker_batches_match_single_process():
    """num_workers > 0 gives the batches, in order, of a single-process loader."""
    import hookgrad
    from hookgrad.utils.data import DataLoader, TensorDataset, get_worker_info
    ds = TensorDataset(hookgrad.tensor(X), hookgrad.tensor(Y))
    ref = [(b[0].tolist(), b[1].tolist()) for b in DataLoader(ds, batch_size=3)]
    got = [(b[0].tolist(), b[1].tolist()) for b in DataLoader(ds, batch_size=3, num_workers=2,
                                                             prefetch_factor=4, persistent_workers=True)]
    assert got == ref
    assert get_worker_info() is None


def test_collate_keeps_dtypes_and_is_fast_for_arrays():
    import hookgrad
    from hookgrad.utils.data import default_collate
    batch = default_collate([np.ones((2, 2), dtype=np.float32)] * 4)
    assert isinstance(batch, hookgrad.Tensor) and batch.dtype == hookgrad.float32 and tuple(batch.shape) == (4, 2, 2)
    batch = default_collate([hookgrad.tensor([1, 2], dtype=hookgrad.int32)] * 3)
    assert batch.dtype == hookgrad.int32 and not batch.requires_grad


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 30), batch_size=st.integers(1, 12), drop_last=st.booleans(), shuffle=st.booleans())
def test_batch_shapes_match_torch(n, batch_size, drop_last, shuffle):
    import hookgrad
    import torch
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    shapes = []
    for T in (torch, hookgrad):
        D = data_mod(T)

        def run():
            loader = D.DataLoader(D.TensorDataset(T.tensor(x)), batch_size=batch_size, drop_last=drop_last,
                                  shuffle=shuffle)
            return len(loader), [tuple(b[0].shape) for b in loader]

        outcome = catch(run)
        shapes.append(getattr(outcome, "cls", outcome))  # an error is compared by its class
    assert shapes[0] == shapes[1]


@differential
def test_iterator_protocol(T):
    D = data_mod(T)
    loader = D.DataLoader(D.TensorDataset(T.tensor(X)), batch_size=4)
    it = iter(loader)
    first = next(it)
    rest = list(it)
    return len(iter(loader)), first, len(rest), catch(next, it)


@differential
def test_chain_dataset_and_weighted_sampler(T):
    D = data_mod(T)

    class Count(D.IterableDataset):
        def __init__(self, start, n):
            self.start, self.n = start, n

        def __iter__(self):
            return iter(range(self.start, self.start + self.n))

        def __len__(self):
            return self.n

    chained = Count(0, 3) + Count(10, 2)
    gen = T.Generator()
    gen.manual_seed(1)
    weighted = list(D.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 50, generator=gen))
    no_repl = sorted(D.WeightedRandomSampler([1.0, 1.0, 0.0, 3.0], 3, replacement=False, generator=gen))
    return (type(chained).__name__, list(chained), len(chained), batches(D.DataLoader(chained, batch_size=2)),
            len(weighted), sorted(set(weighted)), no_repl,
            catch(D.WeightedRandomSampler, [1.0], 0), catch(D.WeightedRandomSampler, [1.0], 2, replacement=1),
            catch(D.WeightedRandomSampler, [[1.0]], 2))
